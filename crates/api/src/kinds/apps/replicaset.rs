//! ReplicaSet (apps/v1): tracks generation; status and scale subresources; created with an
//! empty status; one replica by default; a required selector that matches its template
//! (immutable once set) and a pod template of always-running pods; selectable by
//! `status.replicas`; printed with its desired, current and ready counts.

use serde_json::{json, Value};

use super::workload::{always_running_template, selector_cell};
use crate::kinds::common::{immutable, non_negative, selector_and_template};
use crate::kinds::core::pod::pod_spec_defaults;
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, ScaleOf, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, SCALE, STATUS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "apps",
    version: "v1",
    kind: "ReplicaSet",
    plural: "replicasets",
    singular: "replicaset",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &["rs"],
    categories: &["all"],
    subresources: &[SCALE, STATUS],
    list_kind: "ReplicaSetList",
    tracks_generation: true,
};

// kube describes these columns with the extensions/v1beta1 ReplicaSet docs.
const REPLICASET_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and \
         unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
    ),
    col(
        "Current",
        "integer",
        "Replicas is the most recently observed number of non-terminating pods. More info: \
         https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
    ),
    col("Ready", "integer", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition."),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the replica count. If the selector is empty, it is \
         defaulted to the labels present on the pod template. Label keys and values that must match in order to be \
         controlled by this replica set. More info: \
         https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
    ),
];

pub struct ReplicaSet;

impl Strategy for ReplicaSet {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "replicas", json!(1));
        if let Some(pod) = child(spec, "template").and_then(|t| child(t, "spec")) {
            pod_spec_defaults(pod);
        }
    }

    /// A new ReplicaSet's status is the controller's to fill: kube's zero status.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({"replicas": 0}));
    }

    /// Non-negative counts; the selector against the template; the template's pods;
    /// on update, the selector unchanged.
    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        non_negative(obj, "spec.replicas", &mut errs);
        non_negative(obj, "spec.minReadySeconds", &mut errs);
        // kube's message names deployments here too.
        selector_and_template(obj, "spec", "deployment", &mut errs);
        always_running_template(obj, "ReplicaSet", &mut errs);
        immutable(obj, old, "spec.selector", &mut errs);
        errs
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.replicas"]
    }

    fn columns(&self) -> &'static [Column] {
        REPLICASET_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        // kube-apiserver defaults spec.replicas to 1.
        let desired = obj.pointer("/spec/replicas").filter(|r| !r.is_null()).map_or(1, |r| int_of(Some(r)));
        let (containers, images) = container_cells(arr_at(obj, "/spec/template/spec/containers"));
        Row::plain(vec![
            name(obj).into(),
            desired.into(),
            int_at(obj, "/status/replicas").into(),
            int_at(obj, "/status/readyReplicas").into(),
            age(obj, now).into(),
            containers.into(),
            images.into(),
            selector_cell(obj.pointer("/spec/selector")).into(),
        ])
    }

    fn scale(&self) -> Option<ScaleOf> {
        Some(ScaleOf {
            spec_replicas: ".spec.replicas",
            default_replicas: 1,
            status_replicas: ".status.replicas",
            selector: ".spec.selector",
            selector_is_map: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn valid() -> Object {
        let mut rs = obj(json!({"metadata": {"name": "web"}, "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}));
        ReplicaSet.defaults(&mut rs);
        ReplicaSet.prepare_for_create(&mut rs, "");
        rs
    }

    #[test]
    fn defaults_and_create() {
        let rs = valid();
        assert_eq!(rs["spec"]["replicas"], 1);
        assert_eq!(rs["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(rs["status"], json!({"replicas": 0}));
        assert!(ReplicaSet.validate(&rs, None).is_empty());
    }

    #[test]
    fn pods_must_run_forever_under_an_unchanged_selector() {
        let mut rs = valid();
        rs["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        rs["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5);
        rs["spec"]["selector"] = json!({"matchLabels": {"app": "web", "tier": "x"}});
        let shown: Vec<String> = ReplicaSet.validate(&rs, Some(&valid())).iter().map(|e| e.to_string()).collect();
        assert_eq!(
            shown,
            [
                "spec.template.metadata.labels: Invalid value: map[string]interface {}{\"app\":\"web\"}: `selector` does not match template `labels`",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported",
                "spec.selector: Invalid value: map[string]interface {}{\"matchLabels\":map[string]interface {}{\"app\":\"web\", \"tier\":\"x\"}}: field is immutable",
            ]
        );
        let mut empty = valid();
        empty["spec"]["selector"] = json!({});
        assert!(ReplicaSet.validate(&empty, None)[0].detail.ends_with("invalid for deployment"));
    }

    #[test]
    fn rows_count_replicas() {
        let mut rs = valid();
        rs["status"] = json!({"replicas": 3, "readyReplicas": 2});
        rs["spec"]["replicas"] = json!(3);
        let cells = ReplicaSet.row(&Value::Object(rs), 0).cells;
        assert_eq!(cells[1..4], [json!(3), json!(3), json!(2)]);
        assert_eq!(cells[5..], [json!("c"), json!("nginx"), json!("app=web")]);
    }
}
