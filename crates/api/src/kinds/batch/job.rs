//! Job (batch/v1): tracks generation; status subresource; created with an empty status
//! and, unless `manualSelector`, a generated selector: the template is labelled with the
//! job's name and uid (`batch.kubernetes.io/job-name`, `.../controller-uid` and their
//! legacy unprefixed forms) and selected by the uid; defaults for parallelism,
//! completions, backoff and completion mode; pods that restart `OnFailure` or `Never`;
//! the template fixed while the job runs; printed with its status, completions and
//! duration.

use serde_json::{json, Map, Value};

use crate::kinds::apps::workload::selector_cell;
use crate::kinds::common::{self, at, immutable, label_selector, non_negative, one_of, pod_spec, selector_matches};
use crate::kinds::core::pod::pod_spec_defaults;
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::time::unix_seconds;
use crate::validation::{is_dns1123_label, BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "batch",
    version: "v1",
    kind: "Job",
    plural: "jobs",
    singular: "job",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &["all"],
    subresources: &[STATUS],
    list_kind: "JobList",
    tracks_generation: true,
};

/// The labels kube puts on a job's pods, with what each holds.
const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const LEGACY_JOB_NAME: &str = "job-name";

/// The most pods an Indexed job may run at once.
const MAX_INDEXED_PARALLELISM: i64 = 100_000;

pub(super) const JOB_SELECTOR_DOC: &str = "A label query over pods that should match the pod count. Normally, the \
     system sets this field for you. More info: \
     https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

const JOB_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "Status of the job."),
    col(
        "Completions",
        "string",
        "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. \
         However, it may decrease in reaction to scale down of elastic indexed jobs.",
    ),
    col("Duration", "string", "Time required to complete the job."),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide("Selector", "string", JOB_SELECTOR_DOC),
];

pub struct Job;

impl Strategy for Job {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// kube's `SetDefaults_Job`: one pod to completion unless told otherwise, six
    /// retries, the template's labels for a job that has none.
    fn defaults(&self, obj: &mut Object) {
        labels_from_template(obj);
        let Some(spec) = child(obj, "spec") else { return };
        let unset = |spec: &Object, key| spec.get(key).is_none_or(Value::is_null);
        if unset(spec, "completions") && unset(spec, "parallelism") {
            spec.insert("completions".into(), json!(1));
        }
        set_default(spec, "parallelism", json!(1));
        let backoff = if unset(spec, "backoffLimitPerIndex") { 6 } else { i64::from(i32::MAX) };
        set_default(spec, "backoffLimit", json!(backoff));
        set_default(spec, "completionMode", json!("NonIndexed"));
        set_default(spec, "suspend", json!(false));
        let replacement = if unset(spec, "podFailurePolicy") { "TerminatingOrFailed" } else { "Failed" };
        set_default(spec, "podReplacementPolicy", json!(replacement));
        set_default(spec, "manualSelector", json!(false));
        if let Some(policy) = child(spec, "podFailurePolicy") {
            for rule in crate::kinds::each(policy, "rules") {
                for pattern in crate::kinds::each(rule, "onPodConditions") {
                    set_default(pattern, "status", json!("True"));
                }
            }
        }
        if let Some(pod) = child(spec, "template").and_then(|t| child(t, "spec")) {
            pod_spec_defaults(pod);
        }
    }

    /// An empty status, and the generated selector: the REST layer has set
    /// `metadata.uid` (and the name) before this runs.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({}));
        if at(obj, "spec.manualSelector").and_then(Value::as_bool) != Some(true) {
            generate_selector(obj);
            // kube stores the job as it is here but defaults it again whenever it reads
            // it back, so a job without labels shows its template's generated ones.
            labels_from_template(obj);
        }
    }

    /// kube's `ValidateJob` (the generated labels on create) and `ValidateJobSpecUpdate`.
    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if old.is_none() {
            generated_selector(obj, &mut errs);
        }
        job_spec(obj, "spec", &mut errs);
        selector(obj, &mut errs);
        if let Some(old) = old {
            spec_update(obj, old, &mut errs);
        } else if common::str_at(obj, "spec.completionMode") == "Indexed" {
            // Indexed pods are named `<job>-<index>`: the last one must still be a label.
            if let Some(n) = at(obj, "spec.completions").and_then(Value::as_i64).filter(|n| *n > 0) {
                let name = common::str_at(obj, "metadata.name");
                let last = format!("{name}-{}", n - 1);
                if !is_dns1123_label(&last).is_empty() {
                    errs.push(FieldError::invalid(
                        "metadata.name",
                        name,
                        format!("will not able to create pod with invalid DNS label: {last}"),
                    ));
                }
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        JOB_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let succeeded = int_at(obj, "/status/succeeded");
        let completions = match obj.pointer("/spec/completions").filter(|c| !c.is_null()) {
            Some(c) => format!("{succeeded}/{}", int_of(Some(c))),
            None => match int_at(obj, "/spec/parallelism") {
                p if p > 1 => format!("{succeeded}/1 of {p}"),
                _ => format!("{succeeded}/1"),
            },
        };
        let start = unix_seconds(str_at(obj, "/status/startTime"));
        let end = unix_seconds(str_at(obj, "/status/completionTime"));
        let duration = match (start, end) {
            (None, _) => String::new(),
            (Some(start), None) => human_duration(now - start),
            (Some(start), Some(end)) => human_duration(end - start),
        };
        let (containers, images) = container_cells(arr_at(obj, "/spec/template/spec/containers"));
        Row::plain(vec![
            name(obj).into(),
            status(obj).into(),
            completions.into(),
            duration.into(),
            age(obj, now).into(),
            containers.into(),
            images.into(),
            selector_cell(obj.pointer("/spec/selector")).into(),
        ])
    }
}

/// A required, valid selector that matches the template (an empty one, which selects
/// everything, is allowed: unlike the apps workloads, kube does not refuse it for jobs).
fn selector(obj: &Object, errs: &mut Vec<FieldError>) {
    let Some(selector) = at(obj, "spec.selector") else {
        errs.push(FieldError::required("spec.selector", ""));
        return;
    };
    label_selector(selector, "spec.selector", errs);
    let labels = at(obj, "spec.template.metadata.labels");
    if !selector_matches(selector, labels) {
        errs.push(FieldError::invalid_value(
            "spec.template.metadata.labels",
            BadValue::of_json(labels.unwrap_or(&Value::Null)),
            "`selector` does not match template `labels`",
        ));
    }
}

/// The Status cell: the first of its terminal or notable conditions that holds.
fn status(obj: &Value) -> &'static str {
    // Only a condition type's first entry counts, as kube's hasJobCondition reads them.
    let holds = |ty: &str| {
        arr_at(obj, "/status/conditions")
            .iter()
            .find(|c| str_at(c, "/type") == ty)
            .is_some_and(|c| str_at(c, "/status") == "True")
    };
    if holds("Complete") {
        "Complete"
    } else if holds("Failed") {
        "Failed"
    } else if obj.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null()) {
        "Terminating"
    } else if holds("Suspended") {
        "Suspended"
    } else if holds("FailureTarget") {
        "FailureTarget"
    } else if holds("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

/// The template's labels as the job's when it has none (part of `SetDefaults_Job`).
fn labels_from_template(obj: &mut Object) {
    let Some(labels) = at(obj, "spec.template.metadata.labels").filter(|l| l.is_object()).cloned() else { return };
    let meta = obj.entry("metadata").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        if meta.get("labels").and_then(Value::as_object).is_none_or(Map::is_empty) {
            meta.insert("labels".into(), labels);
        }
    }
}

/// kube's `generateSelector`: the job's name and uid on its template (a label the client
/// set is kept; a conflicting one fails validation) and a selector on the uid.
fn generate_selector(obj: &mut Object) {
    let name = common::str_at(obj, "metadata.name").to_string();
    let uid = common::str_at(obj, "metadata.uid").to_string();
    let spec = obj.entry("spec").or_insert_with(|| json!({}));
    let Some(spec) = spec.as_object_mut() else { return };
    let labels = spec
        .entry("template")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .map(|t| t.entry("metadata").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
        .map(|m| m.entry("labels").or_insert_with(|| json!({})));
    if let Some(labels) = labels {
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            for (key, value) in
                [(LEGACY_JOB_NAME, &name), (JOB_NAME, &name), (LEGACY_CONTROLLER_UID, &uid), (CONTROLLER_UID, &uid)]
            {
                labels.entry(key).or_insert_with(|| json!(value));
            }
        }
    }
    let selector = spec.entry("selector").or_insert_with(|| json!({}));
    if !selector.is_object() {
        *selector = json!({});
    }
    if let Some(selector) = selector.as_object_mut() {
        let match_labels = selector.entry("matchLabels").or_insert_with(|| json!({}));
        if !match_labels.is_object() {
            *match_labels = json!({});
        }
        if let Some(m) = match_labels.as_object_mut() {
            m.entry(CONTROLLER_UID).or_insert_with(|| json!(uid));
        }
    }
}

/// kube's `validateGeneratedSelector`: unless the selector is manual, the template carries
/// the generated labels and the selector picks them.
fn generated_selector(obj: &Object, errs: &mut Vec<FieldError>) {
    if at(obj, "spec.manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let Some(selector) = at(obj, "spec.selector") else { return };
    let (name, uid) = (common::str_at(obj, "metadata.name"), common::str_at(obj, "metadata.uid"));
    let labels = at(obj, "spec.template.metadata.labels").and_then(Value::as_object);
    let expected = [(LEGACY_CONTROLLER_UID, uid), (LEGACY_JOB_NAME, name), (CONTROLLER_UID, uid), (JOB_NAME, name)];
    for (key, want) in expected {
        let path = format!("spec.template.metadata.labels[{key}]");
        match labels.and_then(|l| l.get(key)) {
            None => errs.push(FieldError::required(&path, want)),
            Some(v) if v.as_str() != Some(want) => {
                errs.push(FieldError::invalid_value(&path, go_string_map(labels), want))
            }
            Some(_) => {}
        }
    }
    let expected_labels: Map<String, Value> = expected.iter().map(|(k, v)| ((*k).to_string(), json!(v))).collect();
    if !selector_matches(selector, Some(&Value::Object(expected_labels))) {
        errs.push(FieldError::invalid_value(
            "spec.selector",
            BadValue::of_json(selector),
            "`selector` not auto-generated",
        ));
    }
}

/// A label map as Go's `%#v` prints a `map[string]string`.
fn go_string_map(labels: Option<&Map<String, Value>>) -> BadValue {
    let mut pairs: Vec<String> =
        labels.into_iter().flatten().map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or(""))).collect();
    pairs.sort();
    BadValue::Raw(format!("map[string]string{{{}}}", pairs.join(", ")))
}

/// kube's `validateJobSpec` for the spec at `spec` (a Job's `spec`, a CronJob's
/// `spec.jobTemplate.spec`): counts, completion modes, replacement policy, the pod
/// template and a restart policy of `OnFailure` or `Never`. Not the selector.
pub(super) fn job_spec(obj: &Object, spec: &str, errs: &mut Vec<FieldError>) {
    let p = |field: &str| format!("{spec}.{field}");
    let int = |field: &str| at(obj, &p(field)).and_then(Value::as_i64);
    for field in ["parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"] {
        non_negative(obj, &p(field), errs);
    }
    non_negative(obj, &p("backoffLimitPerIndex"), errs);
    non_negative(obj, &p("maxFailedIndexes"), errs);
    if int("maxFailedIndexes").is_some() && int("backoffLimitPerIndex").is_none() {
        errs.push(FieldError::required(&p("backoffLimitPerIndex"), "when maxFailedIndexes is specified"));
    }
    one_of(obj, &p("completionMode"), &["NonIndexed", "Indexed"], errs);
    let indexed = common::str_at(obj, &p("completionMode")) == "Indexed";
    if indexed {
        if int("completions").is_none() {
            errs.push(FieldError::required(&p("completions"), "when completion mode is Indexed"));
        }
        if let Some(n) = int("parallelism").filter(|n| *n > MAX_INDEXED_PARALLELISM) {
            errs.push(FieldError::invalid_value(
                &p("parallelism"),
                BadValue::Raw(n.to_string()),
                format!("must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed"),
            ));
        }
        if let (Some(max_failed), Some(completions)) = (int("maxFailedIndexes"), int("completions")) {
            if max_failed > completions {
                errs.push(FieldError::invalid_value(
                    &p("maxFailedIndexes"),
                    BadValue::Raw(max_failed.to_string()),
                    "must be less than or equal to completions",
                ));
            }
        }
    } else {
        for field in ["backoffLimitPerIndex", "maxFailedIndexes"] {
            if let Some(n) = int(field) {
                errs.push(FieldError::invalid_value(
                    &p(field),
                    BadValue::Raw(n.to_string()),
                    "requires indexed completion mode",
                ));
            }
        }
    }
    let failure_policy = at(obj, &p("podFailurePolicy")).is_some();
    if !indexed {
        if let Some(policy) = at(obj, &p("successPolicy")) {
            errs.push(FieldError::invalid_value(
                &p("successPolicy"),
                BadValue::of_json(policy),
                "requires indexed completion mode",
            ));
        }
    }
    let replacement: &[&str] = if failure_policy { &["Failed"] } else { &["Failed", "TerminatingOrFailed"] };
    one_of(obj, &p("podReplacementPolicy"), replacement, errs);
    pod_spec(obj, &p("template.spec"), errs);
    // pod_spec_defaults turns an absent policy into `Always`, as kube's defaulting does.
    let restart = p("template.spec.restartPolicy");
    match common::str_at(obj, &restart) {
        "" | "Always" => errs.push(FieldError::required(&restart, "valid values: \"OnFailure\", \"Never\"")),
        "OnFailure" if failure_policy => errs.push(FieldError::invalid(
            &restart,
            "OnFailure",
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        "OnFailure" | "Never" => {}
        other => errs.push(FieldError::not_supported(&restart, other, &["OnFailure", "Never"])),
    }
}

/// What may not change in a job's spec (kube's `ValidateJobSpecUpdate`).
fn spec_update(obj: &Object, old: &Object, errs: &mut Vec<FieldError>) {
    if common::str_at(obj, "spec.completionMode") == "Indexed" {
        // An Indexed job scales by changing completions and parallelism together.
        let completions = at(obj, "spec.completions");
        if completions != at(old, "spec.completions") {
            if let Some(c) = completions {
                if Some(c) != at(obj, "spec.parallelism") {
                    errs.push(FieldError::invalid_value(
                        "spec.completions",
                        BadValue::of_json(c),
                        "can only be modified in tandem with spec.parallelism",
                    ));
                }
            }
        }
    } else {
        immutable(obj, Some(old), "spec.completions", errs);
    }
    immutable(obj, Some(old), "spec.selector", errs);
    template_update(obj, old, errs);
    for field in ["completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"] {
        immutable(obj, Some(old), &format!("spec.{field}"), errs);
    }
}

/// A running job's template is fixed; a suspended one's may change where its pods will
/// be scheduled (node affinity, node selector, tolerations, scheduling gates) and its
/// labels and annotations.
fn template_update(obj: &Object, old: &Object, errs: &mut Vec<FieldError>) {
    let template = at(obj, "spec.template").cloned().unwrap_or(Value::Null);
    let mut old_template = at(old, "spec.template").cloned().unwrap_or(Value::Null);
    if at(old, "spec.suspend").and_then(Value::as_bool) == Some(true) {
        if let Some(meta) = old_template.get_mut("metadata").and_then(Value::as_object_mut) {
            for key in ["labels", "annotations"] {
                copy_field(meta, template.get("metadata"), key);
            }
        }
        if let Some(spec) = old_template.get_mut("spec").and_then(Value::as_object_mut) {
            for key in ["nodeSelector", "tolerations", "schedulingGates"] {
                copy_field(spec, template.get("spec"), key);
            }
            // Node affinity follows the new template; other affinity must not change.
            let affinity = spec.entry("affinity").or_insert_with(|| json!({}));
            if let Some(a) = affinity.as_object_mut() {
                copy_field(a, template.pointer("/spec/affinity"), "nodeAffinity");
                if a.is_empty() && template.pointer("/spec/affinity").is_none() {
                    spec.remove("affinity");
                }
            }
        }
    }
    if template != old_template {
        errs.push(FieldError::invalid_value("spec.template", BadValue::of_json(&template), "field is immutable"));
    }
}

/// `to[key]` as `from[key]` (removed when `from` has none).
fn copy_field(to: &mut Object, from: Option<&Value>, key: &str) {
    match from.and_then(|f| f.get(key)) {
        Some(v) => to.insert(key.into(), v.clone()),
        None => to.remove(key),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(v: Value) -> Object {
        let mut job = v.as_object().unwrap().clone();
        job["metadata"]["uid"] = json!("0b3f");
        Job.defaults(&mut job);
        Job.prepare_for_create(&mut job, "");
        job
    }

    fn pi() -> Object {
        created(json!({"metadata": {"name": "pi"}, "spec": {"template": {"spec": {
            "containers": [{"name": "pi", "image": "perl"}], "restartPolicy": "Never"}}}}))
    }

    #[test]
    fn defaults_and_the_generated_selector() {
        let job = pi();
        let spec = &job["spec"];
        assert_eq!(
            (&spec["completions"], &spec["parallelism"], &spec["backoffLimit"]),
            (&json!(1), &json!(1), &json!(6))
        );
        assert_eq!(spec["completionMode"], "NonIndexed");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["manualSelector"], false);
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(spec["selector"], json!({"matchLabels": {CONTROLLER_UID: "0b3f"}}));
        assert_eq!(
            spec["template"]["metadata"]["labels"],
            json!({CONTROLLER_UID: "0b3f", JOB_NAME: "pi", LEGACY_CONTROLLER_UID: "0b3f", LEGACY_JOB_NAME: "pi"})
        );
        assert_eq!(job["metadata"]["labels"], spec["template"]["metadata"]["labels"]);
        assert_eq!(job["status"], json!({}));
        assert!(Job.validate(&job, None).is_empty(), "{:?}", Job.validate(&job, None));
        // Parallel jobs without a completion count run until one succeeds.
        let work_queue = created(json!({"metadata": {"name": "q"}, "spec": {"parallelism": 3, "template": {"spec": {
            "containers": [{"name": "w", "image": "w"}], "restartPolicy": "OnFailure"}}}}));
        assert!(work_queue["spec"].get("completions").is_none());
    }

    #[test]
    fn pods_must_not_restart_always() {
        let job = created(json!({"metadata": {"name": "pi"}, "spec": {"template": {"spec": {
            "containers": [{"name": "pi", "image": "perl"}]}}}}));
        let shown: Vec<String> = Job.validate(&job, None).iter().map(|e| e.to_string()).collect();
        assert_eq!(shown, ["spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]);
    }

    #[test]
    fn a_conflicting_label_fails_the_generated_selector() {
        let job = created(json!({"metadata": {"name": "pi"}, "spec": {"template": {
            "metadata": {"labels": {"job-name": "other"}},
            "spec": {"containers": [{"name": "pi", "image": "perl"}], "restartPolicy": "Never"}}}}));
        let shown: Vec<String> = Job.validate(&job, None).iter().map(|e| e.to_string()).collect();
        assert_eq!(
            shown,
            [concat!(
                "spec.template.metadata.labels[job-name]: Invalid value: map[string]string{",
                "\"batch.kubernetes.io/controller-uid\":\"0b3f\", \"batch.kubernetes.io/job-name\":\"pi\", ",
                "\"controller-uid\":\"0b3f\", \"job-name\":\"other\"}: pi"
            )]
        );
        // A selector of the client's own needs manualSelector.
        let job = created(
            json!({"metadata": {"name": "pi"}, "spec": {"selector": {"matchLabels": {"app": "pi"}}, "template": {
            "metadata": {"labels": {"app": "pi"}},
            "spec": {"containers": [{"name": "pi", "image": "perl"}], "restartPolicy": "Never"}}}}),
        );
        let errs = Job.validate(&job, None);
        assert_eq!(
            (errs[0].field.as_str(), errs[0].detail.as_str()),
            ("spec.selector", "`selector` not auto-generated")
        );
    }

    #[test]
    fn a_running_jobs_template_is_fixed() {
        let old = pi();
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        new["spec"]["completions"] = json!(2);
        let fields: Vec<String> = Job.validate(&new, Some(&old)).iter().map(|e| e.field.clone()).collect();
        assert_eq!(fields, ["spec.completions", "spec.template"]);
        let mut suspended = old.clone();
        suspended["spec"]["suspend"] = json!(true);
        let mut moved = suspended.clone();
        moved["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        assert!(Job.validate(&moved, Some(&suspended)).is_empty());
        moved["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:5");
        assert_eq!(Job.validate(&moved, Some(&suspended))[0].field, "spec.template");
    }

    #[test]
    fn rows_show_status_completions_and_duration() {
        let mut job = Value::Object(pi());
        job["status"] = json!({"succeeded": 1, "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:00:42Z",
            "conditions": [{"type": "Complete", "status": "True"}]});
        let cells = Job.row(&job, 0).cells;
        assert_eq!(cells[1..4], [json!("Complete"), json!("1/1"), json!("42s")]);
        assert_eq!(cells[7], "batch.kubernetes.io/controller-uid=0b3f");
        let queue =
            json!({"spec": {"parallelism": 3}, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
        assert_eq!(Job.row(&queue, 0).cells[1..3], [json!("Suspended"), json!("0/1 of 3")]);
    }
}
