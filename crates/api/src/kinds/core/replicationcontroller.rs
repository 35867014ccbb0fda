//! ReplicationController (core/v1): the original replica controller. Tracks generation;
//! status and scale subresources (its selector a plain label map); `replicas` defaults to
//! 1 and an absent selector and labels to the template's labels; the selector must be
//! non-empty and match the template, whose pods always restart. Selectable by
//! `status.replicas`; printed with desired, current and ready replicas.

use serde_json::{json, Value};

use crate::kinds::common::pod_spec;
use crate::kinds::core::pod::pod_spec_defaults;
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, ScaleOf, Strategy};
use crate::registry::{core, ResourceDef, Scope, SCALE, STATUS};
use crate::validation::{validate_labels, BadValue, FieldError, NON_NEGATIVE};

pub static DEF: ResourceDef = ResourceDef {
    tracks_generation: true,
    ..core(
        "ReplicationController",
        "replicationcontrollers",
        "replicationcontroller",
        Scope::Namespaced,
        &["rc"],
        &["all"],
        &[SCALE, STATUS],
        "ReplicationControllerList",
    )
};

const RC_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and \
         unspecified. Defaults to 1. More info: \
         https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
    ),
    col(
        "Current",
        "integer",
        "Replicas is the most recently observed number of replicas. More info: \
         https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
    ),
    col("Ready", "integer", "The number of ready replicas for this replication controller."),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide(
        "Selector",
        "string",
        "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is \
         defaulted to the labels present on the Pod template. Label keys and values that must match in order to be \
         controlled by this replication controller, if empty defaulted to labels on Pod template. More info: \
         https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
    ),
];

pub struct ReplicationController;

impl Strategy for ReplicationController {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// `SetDefaults_ReplicationController`: the template's labels stand in for an empty
    /// selector and empty object labels; one replica; the template's pod defaults.
    fn defaults(&self, obj: &mut Object) {
        let template_labels =
            obj.get("spec").and_then(|s| s.pointer("/template/metadata/labels")).filter(|l| l.is_object()).cloned();
        let is_empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(|m| m.is_empty());
        if let Some(labels) = template_labels {
            if let Some(spec) = child(obj, "spec") {
                if is_empty(spec.get("selector")) {
                    spec.insert("selector".into(), labels.clone());
                }
            }
            let meta = obj.entry("metadata").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut().filter(|m| is_empty(m.get("labels"))) {
                meta.insert("labels".into(), labels);
            }
        }
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "replicas", json!(1));
        if let Some(pod) = child(spec, "template").and_then(|t| child(t, "spec")) {
            pod_spec_defaults(pod);
        }
    }

    /// A new controller has observed nothing yet.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({"replicas": 0}));
    }

    /// `ValidateReplicationControllerSpec` and the status counts.
    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let empty = Object::new();
        let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
        non_negative(spec, "spec", "minReadySeconds", &mut errs);
        let selector = spec.get("selector").and_then(Value::as_object).filter(|s| !s.is_empty());
        if selector.is_none() {
            errs.push(FieldError::required("spec.selector", ""));
        }
        non_negative(spec, "spec", "replicas", &mut errs);
        template(obj, selector, &mut errs);
        if let Some(status) = obj.get("status").and_then(Value::as_object) {
            for field in
                ["replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"]
            {
                non_negative(status, "status", field, &mut errs);
            }
        }
        errs
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.replicas"]
    }

    fn columns(&self) -> &'static [Column] {
        RC_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let (containers, images) = container_cells(arr_at(obj, "/spec/template/spec/containers"));
        // kube-apiserver defaults spec.replicas to 1.
        let desired = obj.pointer("/spec/replicas").filter(|r| !r.is_null()).map_or(1, |r| int_of(Some(r)));
        Row::plain(vec![
            name(obj).into(),
            desired.into(),
            int_at(obj, "/status/replicas").into(),
            int_at(obj, "/status/readyReplicas").into(),
            age(obj, now).into(),
            containers.into(),
            images.into(),
            format_labels(obj.pointer("/spec/selector")).into(),
        ])
    }

    fn scale(&self) -> Option<ScaleOf> {
        Some(ScaleOf {
            spec_replicas: ".spec.replicas",
            default_replicas: 1,
            status_replicas: ".status.replicas",
            selector: ".spec.selector",
            selector_is_map: true,
        })
    }
}

fn non_negative(m: &Object, path: &str, field: &str, errs: &mut Vec<FieldError>) {
    if let Some(n) = m.get(field).and_then(Value::as_i64).filter(|n| *n < 0) {
        errs.push(FieldError::invalid_value(&format!("{path}.{field}"), BadValue::Raw(n.to_string()), NON_NEGATIVE));
    }
}

/// `ValidatePodTemplateSpecForRC`: present, labelled to match the selector, a valid pod
/// spec whose pods always restart and run without a deadline.
fn template(obj: &Object, selector: Option<&Object>, errs: &mut Vec<FieldError>) {
    let Some(template) = obj.get("spec").and_then(|s| s.get("template")).filter(|t| t.is_object()) else {
        errs.push(FieldError::required("spec.template", ""));
        return;
    };
    let labels = template.pointer("/metadata/labels");
    if let Some(sel) = selector {
        let matches = sel.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v));
        if !matches {
            errs.push(FieldError::invalid_value(
                "spec.template.metadata.labels",
                BadValue::of_json(labels.unwrap_or(&Value::Null)),
                "`selector` does not match template `labels`",
            ));
        }
    }
    // kube checks a template's labels at `<template>.labels`.
    if let Some(labels) = labels.and_then(Value::as_object) {
        errs.extend(validate_labels(labels, "spec.template.labels"));
    }
    pod_spec(obj, "spec.template.spec", errs);
    let Some(pod) = template.get("spec").and_then(Value::as_object) else { return };
    let restart = pod.get("restartPolicy").and_then(Value::as_str).unwrap_or("");
    if restart != "Always" {
        errs.push(FieldError::not_supported("spec.template.spec.restartPolicy", restart, &["Always"]));
    }
    if pod.get("activeDeadlineSeconds").is_some_and(|d| !d.is_null()) {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicationController is not Supported",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn selector_and_labels_come_from_the_template() {
        let mut rc =
            obj(json!({"metadata": {"name": "web"}, "spec": {"template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}));
        ReplicationController.defaults(&mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(rc["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(rc["spec"]["replicas"], 1);
        assert!(ReplicationController.validate(&rc, None).is_empty());

        // What a client set stays.
        let mut rc = obj(json!({"metadata": {"labels": {"team": "a"}}, "spec": {"replicas": 0,
            "selector": {"app": "web", "tier": "x"}, "template": {"metadata": {"labels": {"app": "web"}}}}}));
        ReplicationController.defaults(&mut rc);
        assert_eq!(rc["metadata"]["labels"], json!({"team": "a"}));
        assert_eq!(rc["spec"]["replicas"], 0);
        let errs = ReplicationController.validate(&rc, None);
        assert_eq!(errs[0].field, "spec.template.metadata.labels");
    }

    #[test]
    fn pods_always_restart() {
        let rc = obj(json!({"spec": {"replicas": -1, "selector": {"app": "a"}, "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 5, "containers": [{"name": "c", "image": "i"}]}}}}));
        let shown: Vec<String> = ReplicationController.validate(&rc, None).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController \
                 is not Supported",
            ]
        );
        let none = obj(json!({"spec": {}}));
        let fields: Vec<String> = ReplicationController.validate(&none, None).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["spec.selector", "spec.template"]);
    }

    #[test]
    fn created_without_status() {
        let mut rc = obj(json!({"status": {"replicas": 3}}));
        ReplicationController.prepare_for_create(&mut rc, "2024-01-01T00:00:00Z");
        assert_eq!(rc["status"], json!({"replicas": 0}));
    }

    #[test]
    fn printed_with_its_map_selector() {
        let rc = json!({"metadata": {"name": "web"}, "spec": {"replicas": 3, "selector": {"app": "web"},
            "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"replicas": 2, "readyReplicas": 1}});
        let cells = ReplicationController.row(&rc, 0).cells;
        assert_eq!(cells[1..4], [json!(3), json!(2), json!(1)]);
        assert_eq!(cells[5..], [json!("c"), json!("nginx"), json!("app=web")]);
    }
}
