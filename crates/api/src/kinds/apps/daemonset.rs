//! DaemonSet (apps/v1): tracks generation; status subresource; created with a zero status
//! and template generation 1 (the `deprecated.daemonset.template.generation` annotation
//! apps/v1 keeps it in); a rolling update of one pod at a time by default; a required,
//! immutable selector matching its template of always-running pods; printed with its
//! scheduling counts and node selector.

use serde_json::{json, Value};

use super::workload::{
    always_running_template, int_or_percent, int_or_percent_value, int_or_string_value, selector_cell,
};
use crate::kinds::common::{at, immutable, non_negative, selector_and_template, str_at};
use crate::kinds::core::pod::pod_spec_defaults;
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "apps",
    version: "v1",
    kind: "DaemonSet",
    plural: "daemonsets",
    singular: "daemonset",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &["ds"],
    categories: &["all"],
    subresources: &[STATUS],
    list_kind: "DaemonSetList",
    tracks_generation: true,
};

/// Where apps/v1 keeps the internal `spec.templateGeneration`.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

// kube describes these columns with the extensions/v1beta1 DaemonSet docs.
const DAEMONSET_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "The total number of nodes that should be running the daemon pod (including nodes correctly running the \
         daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
    ),
    col(
        "Current",
        "integer",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More \
         info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
    ),
    col(
        "Ready",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running \
         and ready.",
    ),
    col("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod"),
    col(
        "Available",
        "integer",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running \
         and available (ready for at least spec.minReadySeconds)",
    ),
    col(
        "Node Selector",
        "string",
        "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a \
         node's labels for the pod to be scheduled on that node. More info: \
         https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
    ),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide(
        "Selector",
        "string",
        "A label query over pods that are managed by the daemon set. Must match in order to be controlled. If empty, \
         defaulted to labels on Pod template. More info: \
         https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
    ),
];

pub struct DaemonSet;

impl Strategy for DaemonSet {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "updateStrategy", json!({}));
        if let Some(strategy) = child(spec, "updateStrategy") {
            set_default(strategy, "type", json!("RollingUpdate"));
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                set_default(strategy, "rollingUpdate", json!({}));
                if let Some(ru) = child(strategy, "rollingUpdate") {
                    set_default(ru, "maxUnavailable", json!(1));
                    set_default(ru, "maxSurge", json!(0));
                }
            }
        }
        set_default(spec, "revisionHistoryLimit", json!(10));
        if let Some(pod) = child(spec, "template").and_then(|t| child(t, "spec")) {
            pod_spec_defaults(pod);
        }
    }

    /// A zero status, and template generation 1 unless the client gave a later one.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert(
            "status".into(),
            json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0}),
        );
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        let Some(meta) = meta.as_object_mut() else { return };
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if !annotations.is_object() {
            *annotations = json!({});
        }
        if let Some(a) = annotations.as_object_mut() {
            let given = a.get(TEMPLATE_GENERATION).and_then(Value::as_str).and_then(|g| g.parse::<i64>().ok());
            if given.is_none_or(|g| g < 1) {
                a.insert(TEMPLATE_GENERATION.into(), json!("1"));
            }
        }
    }

    /// The selector against the template (immutable on update); the template's pods;
    /// non-negative counts; the update strategy.
    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        immutable(obj, old, "spec.selector", &mut errs);
        selector_and_template(obj, "spec", "daemonset", &mut errs);
        always_running_template(obj, "DaemonSet", &mut errs);
        non_negative(obj, "spec.minReadySeconds", &mut errs);
        update_strategy(obj, &mut errs);
        non_negative(obj, "spec.revisionHistoryLimit", &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        DAEMONSET_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let (containers, images) = container_cells(arr_at(obj, "/spec/template/spec/containers"));
        Row::plain(vec![
            name(obj).into(),
            int_at(obj, "/status/desiredNumberScheduled").into(),
            int_at(obj, "/status/currentNumberScheduled").into(),
            int_at(obj, "/status/numberReady").into(),
            int_at(obj, "/status/updatedNumberScheduled").into(),
            int_at(obj, "/status/numberAvailable").into(),
            format_labels(obj.pointer("/spec/template/spec/nodeSelector")).into(),
            age(obj, now).into(),
            containers.into(),
            images.into(),
            selector_cell(obj.pointer("/spec/selector")).into(),
        ])
    }
}

/// `RollingUpdate` (with exactly one of maxUnavailable and maxSurge non-zero) or
/// `OnDelete` (kube's `ValidateDaemonSetUpdateStrategy`).
fn update_strategy(obj: &Object, errs: &mut Vec<FieldError>) {
    const PATH: &str = "spec.updateStrategy";
    match str_at(obj, "spec.updateStrategy.type") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let Some(ru) = at(obj, "spec.updateStrategy.rollingUpdate") else {
                errs.push(FieldError::required(&format!("{PATH}.rollingUpdate"), ""));
                return;
            };
            for field in ["maxUnavailable", "maxSurge"] {
                int_or_percent(obj, &format!("{PATH}.rollingUpdate.{field}"), errs);
            }
            let value = |field| ru.get(field).filter(|v| !v.is_null());
            let non_zero = |field| value(field).is_some_and(|v| int_or_percent_value(v) != 0);
            match (non_zero("maxUnavailable"), non_zero("maxSurge")) {
                (true, true) => errs.push(FieldError::invalid_value(
                    &format!("{PATH}.rollingUpdate.maxSurge"),
                    int_or_string_value(value("maxSurge").unwrap_or(&Value::Null)),
                    "may not be set when maxUnavailable is non-zero",
                )),
                (false, false) => errs.push(FieldError::required(
                    &format!("{PATH}.rollingUpdate.maxUnavailable"),
                    "cannot be 0 when maxSurge is 0",
                )),
                _ => {}
            }
        }
        _ => errs.push(FieldError::not_supported_value(
            PATH,
            BadValue::of_json(at(obj, PATH).unwrap_or(&Value::Null)),
            &["RollingUpdate", "OnDelete"],
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> Object {
        let mut ds = json!({"metadata": {"name": "agent"}, "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "c", "image": "a:1"}]}}}})
        .as_object()
        .unwrap()
        .clone();
        DaemonSet.defaults(&mut ds);
        DaemonSet.prepare_for_create(&mut ds, "");
        ds
    }

    #[test]
    fn defaults_roll_one_pod_at_a_time() {
        let ds = valid();
        assert_eq!(
            ds["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(ds["metadata"]["annotations"][TEMPLATE_GENERATION], "1");
        assert_eq!(ds["status"]["numberReady"], 0);
        assert!(DaemonSet.validate(&ds, None).is_empty());
    }

    #[test]
    fn exactly_one_of_surge_and_unavailable() {
        let mut ds = valid();
        ds["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": "0%"});
        let errs = DaemonSet.validate(&ds, None);
        assert_eq!(
            errs[0].to_string(),
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"
        );
        ds["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": 1, "maxSurge": "10%"});
        let errs = DaemonSet.validate(&ds, None);
        assert_eq!(errs[0].field, "spec.updateStrategy.rollingUpdate.maxSurge");
        assert!(errs[0].detail.starts_with("may not be set"));
        ds["spec"]["updateStrategy"] = json!({"type": "Recreate"});
        assert_eq!(DaemonSet.validate(&ds, None)[0].field, "spec.updateStrategy");
    }

    #[test]
    fn rows_show_the_node_selector() {
        let mut ds = valid();
        ds["spec"]["template"]["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
        ds["status"] = json!({"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3, "numberAvailable": 2});
        let cells = DaemonSet.row(&Value::Object(ds), 0).cells;
        assert_eq!(cells[1..7], [json!(3), json!(3), json!(2), json!(3), json!(2), json!("kubernetes.io/os=linux")]);
        assert_eq!(cells[10], "app=agent");
    }
}
