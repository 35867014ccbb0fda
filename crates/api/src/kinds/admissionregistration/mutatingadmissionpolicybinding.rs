//! MutatingAdmissionPolicyBinding (admissionregistration.k8s.io/v1): cluster-scoped, tracks
//! generation; names its policy; a param ref is a name or a selector and defaults to denying when
//! no parameter matches; printed with the policy and its param ref.

use serde_json::Value;

use super::admission::{match_resources_defaults, param_ref_cell, param_ref_defaults, validate_binding};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "MutatingAdmissionPolicyBinding",
    plural: "mutatingadmissionpolicybindings",
    singular: "mutatingadmissionpolicybinding",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &["api-extensions"],
    subresources: &[],
    list_kind: "MutatingAdmissionPolicyBindingList",
    tracks_generation: true,
};

const BINDING_COLUMNS: &[Column] = &[
    NAME,
    col("PolicyName", "string", "PolicyName indicates the policy definition which the policy binding binded to"),
    col("ParamRef", "string", "ParamRef indicates the param resource which sets the configration param"),
    AGE,
];

pub struct MutatingAdmissionPolicyBinding;

impl Strategy for MutatingAdmissionPolicyBinding {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn param_ref_defaults_to_deny_and_prints() {
        let mut obj = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "paramRef": {"name": "x"}}})
            .as_object()
            .unwrap()
            .clone();
        MutatingAdmissionPolicyBinding.defaults(&mut obj);
        assert_eq!(obj["spec"]["paramRef"]["parameterNotFoundAction"], "Deny");
        assert!(MutatingAdmissionPolicyBinding.validate(&obj, None).is_empty());
        let row = MutatingAdmissionPolicyBinding.row(&Value::Object(obj), 0);
        assert_eq!(row.cells[1..3], [json!("p"), json!("*/x")]);
    }
}
