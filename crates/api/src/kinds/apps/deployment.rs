//! Deployment (apps/v1): tracks generation; status and scale subresources; defaults for
//! replicas, strategy and its pod template; non-negative counts; printed with its
//! replica counts, containers and selector.

use serde_json::{json, Value};

use crate::kinds::core::pod::{container_ports, pod_spec_defaults};
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, ScaleOf, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, SCALE, STATUS};
use crate::validation::{BadValue, FieldError, NON_NEGATIVE};

pub static DEF: ResourceDef = ResourceDef {
    group: "apps",
    version: "v1",
    kind: "Deployment",
    plural: "deployments",
    singular: "deployment",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &["deploy"],
    categories: &["all"],
    subresources: &[SCALE, STATUS],
    list_kind: "DeploymentList",
    tracks_generation: true,
};

const DEPLOYMENT_COLUMNS: &[Column] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    col(
        "Up-to-date",
        "string",
        "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
    ),
    col(
        "Available",
        "string",
        "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this \
         deployment.",
    ),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide(
        "Selector",
        "string",
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by \
         this deployment.",
    ),
];

pub struct Deployment;

impl Strategy for Deployment {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "replicas", json!(1));
        set_default(spec, "revisionHistoryLimit", json!(10));
        set_default(spec, "progressDeadlineSeconds", json!(600));
        set_default(spec, "strategy", json!({}));
        if let Some(strategy) = child(spec, "strategy") {
            set_default(strategy, "type", json!("RollingUpdate"));
            if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                set_default(strategy, "rollingUpdate", json!({}));
                if let Some(ru) = child(strategy, "rollingUpdate") {
                    set_default(ru, "maxUnavailable", json!("25%"));
                    set_default(ru, "maxSurge", json!("25%"));
                }
            }
        }
        if let Some(pod) = child(spec, "template").and_then(|t| child(t, "spec")) {
            pod_spec_defaults(pod);
        }
    }

    /// Negative `replicas`, `minReadySeconds` or `revisionHistoryLimit`; the template's
    /// container ports.
    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let Some(spec) = obj.get("spec").and_then(Value::as_object) else { return errs };
        for field in ["replicas", "minReadySeconds", "revisionHistoryLimit"] {
            if let Some(n) = spec.get(field).and_then(Value::as_i64).filter(|n| *n < 0) {
                errs.push(FieldError::invalid_value(
                    &format!("spec.{field}"),
                    BadValue::Raw(n.to_string()),
                    NON_NEGATIVE,
                ));
            }
        }
        if let Some(pod) = spec.get("template").and_then(|t| t.get("spec")).and_then(Value::as_object) {
            container_ports(pod, "spec.template.spec", &mut errs);
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        DEPLOYMENT_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(deployment_cells(obj, now))
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

fn deployment_cells(d: &Value, now: i64) -> Vec<Value> {
    // kube-apiserver defaults spec.replicas to 1.
    let desired = d.pointer("/spec/replicas").filter(|r| !r.is_null()).map_or(1, |r| int_of(Some(r)));
    let (containers, images) = container_cells(arr_at(d, "/spec/template/spec/containers"));
    vec![
        name(d).into(),
        format!("{}/{desired}", int_at(d, "/status/readyReplicas")).into(),
        int_at(d, "/status/updatedReplicas").into(),
        int_at(d, "/status/availableReplicas").into(),
        age(d, now).into(),
        containers.into(),
        images.into(),
        label_selector_string(d.pointer("/spec/selector")).into(),
    ]
}
