//! ValidatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1): cluster-scoped, tracks
//! generation; names its policy and validation actions (Deny, Warn, Audit; not
//! both Deny and Warn); a param ref is a name or a selector and defaults to denying when
//! no parameter matches; printed with the policy and its param ref.

use serde_json::Value;

use super::admission::{match_resources_defaults, param_ref_cell, param_ref_defaults, validate_binding};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::{BadValue, FieldError};
use std::collections::HashSet;

pub static DEF: ResourceDef = ResourceDef {
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "ValidatingAdmissionPolicyBinding",
    plural: "validatingadmissionpolicybindings",
    singular: "validatingadmissionpolicybinding",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &["api-extensions"],
    subresources: &[],
    list_kind: "ValidatingAdmissionPolicyBindingList",
    tracks_generation: true,
};

const BINDING_COLUMNS: &[Column] = &[
    NAME,
    col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
    col("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
    AGE,
];

pub struct ValidatingAdmissionPolicyBinding;

impl Strategy for ValidatingAdmissionPolicyBinding {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        param_ref_defaults(obj);
        match_resources_defaults(obj, "matchResources");
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_binding(obj, &mut errs);
        validate_actions(obj, &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        BINDING_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![
            name(obj).into(),
            str_at(obj, "/spec/policyName").into(),
            param_ref_cell(obj).into(),
            age(obj, now).into(),
        ])
    }
}

const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];

/// At least one known action, none twice, not both Deny and Warn.
fn validate_actions(obj: &Object, errs: &mut Vec<FieldError>) {
    let actions = obj.get("spec").and_then(|s| s.get("validationActions")).and_then(Value::as_array);
    let actions = actions.map_or(&[][..], Vec::as_slice);
    if actions.is_empty() {
        errs.push(FieldError::required("spec.validationActions", "at least one validation action is required"));
    }
    let mut seen = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        let (a, p) = (a.as_str().unwrap_or(""), format!("spec.validationActions[{i}]"));
        if !ACTIONS.contains(&a) {
            errs.push(FieldError::not_supported(&p, a, ACTIONS));
        }
        if !seen.insert(a) {
            errs.push(FieldError::duplicate(&p, BadValue::Str(a.into())));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        let list: Vec<String> = actions.iter().map(|a| format!("{:?}", a.as_str().unwrap_or(""))).collect();
        errs.push(FieldError::invalid_value(
            "spec.validationActions",
            BadValue::Raw(format!("[]admissionregistration.ValidationAction{{{}}}", list.join(", "))),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API \
             response and headers serves no purpose)",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(spec: Value) -> Vec<String> {
        let mut obj = json!({"spec": spec}).as_object().unwrap().clone();
        ValidatingAdmissionPolicyBinding.defaults(&mut obj);
        ValidatingAdmissionPolicyBinding.validate(&obj, None).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn bindings_name_a_policy_and_actions() {
        assert!(shown(json!({"policyName": "p", "validationActions": ["Deny", "Audit"],
            "paramRef": {"name": "limits", "namespace": "default"}}))
        .is_empty());
        assert_eq!(
            shown(json!({"validationActions": []})),
            [
                "spec.policyName: Required value",
                "spec.validationActions: Required value: at least one validation action is required",
            ]
        );
        assert_eq!(shown(json!({"policyName": "p", "validationActions": ["Deny", "Warn"]})).len(), 1);
        assert_eq!(
            shown(json!({"policyName": "p", "validationActions": ["Deny"], "paramRef": {}})),
            ["spec.paramRef: Required value: one of name or selector must be specified"]
        );
    }
}
