//! DeviceTaintRule (resource.k8s.io/v1): cluster-scoped, tracks generation, status
//! subresource; one taint (a label-name key, a label value, effect None, NoSchedule or
//! NoExecute) for the selected devices; the taint's `timeAdded` is set on create;
//! created without status.

use serde_json::{json, Value};

use super::devices::dns_subdomain;
use crate::kinds::common::{at, str_at as field_str};
use crate::kinds::{child, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{is_qualified_name, is_valid_label_value, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "resource.k8s.io",
    version: "v1",
    kind: "DeviceTaintRule",
    plural: "devicetaintrules",
    singular: "devicetaintrule",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "DeviceTaintRuleList",
    tracks_generation: true,
};

const EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "None"];

pub struct DeviceTaintRule;

impl Strategy for DeviceTaintRule {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// The status is the taint controller's; the taint is stamped with the create time.
    fn prepare_for_create(&self, obj: &mut Object, now: &str) {
        obj.insert("status".into(), json!({}));
        if let Some(taint) = child(obj, "spec").and_then(|s| child(s, "taint")) {
            if taint.get("timeAdded").is_none_or(Value::is_null) {
                taint.insert("timeAdded".into(), json!(now));
            }
        }
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if at(obj, "spec.taint").is_none() {
            errs.push(FieldError::required("spec.taint", ""));
            return errs;
        }
        let key = field_str(obj, "spec.taint.key");
        if key.is_empty() {
            errs.push(FieldError::required("spec.taint.key", ""));
        }
        for msg in is_qualified_name(key).into_iter().filter(|_| !key.is_empty()) {
            errs.push(FieldError::invalid("spec.taint.key", key, msg));
        }
        let value = field_str(obj, "spec.taint.value");
        for msg in is_valid_label_value(value) {
            errs.push(FieldError::invalid("spec.taint.value", value, msg));
        }
        match field_str(obj, "spec.taint.effect") {
            "" => errs.push(FieldError::required("spec.taint.effect", "")),
            e if !EFFECTS.contains(&e) => errs.push(FieldError::not_supported("spec.taint.effect", e, EFFECTS)),
            _ => {}
        }
        let driver = field_str(obj, "spec.deviceSelector.driver");
        if !driver.is_empty() {
            dns_subdomain(driver, "spec.deviceSelector.driver", &mut errs);
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taints_need_a_key_and_a_known_effect() {
        let mut obj = json!({"spec": {"taint": {"key": "example.com/unhealthy", "effect": "NoSchedule"}}})
            .as_object()
            .unwrap()
            .clone();
        DeviceTaintRule.prepare_for_create(&mut obj, "2024-01-01T00:00:00Z");
        assert_eq!(obj["spec"]["taint"]["timeAdded"], "2024-01-01T00:00:00Z");
        assert!(DeviceTaintRule.validate(&obj, None).is_empty());
        obj["spec"]["taint"]["effect"] = json!("PreferNoSchedule");
        assert_eq!(
            DeviceTaintRule.validate(&obj, None)[0].to_string(),
            "spec.taint.effect: Unsupported value: \"PreferNoSchedule\": supported values: \"NoExecute\", \
             \"NoSchedule\", \"None\""
        );
    }
}
