//! MutatingAdmissionPolicy (admissionregistration.k8s.io/v1): cluster-scoped, tracks
//! generation; needs match constraints with resource rules, a reinvocation policy and
//! mutations, each an apply configuration or a JSON patch with an expression (compiled
//! when written and enforced by kuorum-rest's `admission_policy`); failure policy defaults to Fail; printed with its mutation count and
//! param kind.

use serde_json::{json, Value};

use super::admission::{enum_field, match_resources_defaults, REINVOCATION_POLICIES};
use super::validatingadmissionpolicy::{expression, param_kind_cell, validate_policy_spec};
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "MutatingAdmissionPolicy",
    plural: "mutatingadmissionpolicies",
    singular: "mutatingadmissionpolicy",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &["api-extensions"],
    subresources: &[],
    list_kind: "MutatingAdmissionPolicyList",
    tracks_generation: true,
};

const PATCH_TYPES: &[&str] = &["ApplyConfiguration", "JSONPatch"];

const POLICY_COLUMNS: &[Column] = &[
    NAME,
    col("Mutations", "integer", "Mutation indicates the number of mutations rules defined in this configuration"),
    col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
    AGE,
];

pub struct MutatingAdmissionPolicy;

impl Strategy for MutatingAdmissionPolicy {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = child(obj, "spec") {
            set_default(spec, "failurePolicy", json!("Fail"));
        }
        match_resources_defaults(obj, "matchConstraints");
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        validate_policy_spec(&spec, &mut errs);
        match spec.get("reinvocationPolicy").and_then(Value::as_str) {
            None => errs.push(FieldError::required("spec.reinvocationPolicy", "")),
            Some(_) => enum_field(&spec, "reinvocationPolicy", "spec", REINVOCATION_POLICIES, &mut errs),
        }
        let mutations = spec.get("mutations").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        if mutations.is_empty() {
            errs.push(FieldError::required("spec.mutations", "mutations must contain at least one item"));
        }
        for (i, m) in mutations.iter().enumerate() {
            let p = format!("spec.mutations[{i}]");
            match m.get("patchType").and_then(Value::as_str) {
                None => errs.push(FieldError::required(&format!("{p}.patchType"), "")),
                Some("ApplyConfiguration") => {
                    let ac = m.get("applyConfiguration").cloned().unwrap_or(Value::Null);
                    expression(&ac, "expression", &format!("{p}.applyConfiguration"), &mut errs);
                }
                Some("JSONPatch") => {
                    let jp = m.get("jsonPatch").cloned().unwrap_or(Value::Null);
                    expression(&jp, "expression", &format!("{p}.jsonPatch"), &mut errs);
                }
                Some(_) => enum_field(m, "patchType", &p, PATCH_TYPES, &mut errs),
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        POLICY_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![
            name(obj).into(),
            (arr_at(obj, "/spec/mutations").len() as i64).into(),
            param_kind_cell(obj).into(),
            age(obj, now).into(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_need_a_patch_type_and_its_expression() {
        let mut obj = json!({"spec": {"reinvocationPolicy": "Never",
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["pods"]}]},
            "mutations": [{"patchType": "JSONPatch", "jsonPatch": {}}, {"patchType": "Merge"}]}})
        .as_object()
        .unwrap()
        .clone();
        MutatingAdmissionPolicy.defaults(&mut obj);
        let shown: Vec<String> = MutatingAdmissionPolicy.validate(&obj, None).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "spec.mutations[0].jsonPatch.expression: Required value: expression is not specified",
                "spec.mutations[1].patchType: Unsupported value: \"Merge\": supported values: \"ApplyConfiguration\", \"JSONPatch\"",
            ]
        );
        assert_eq!(MutatingAdmissionPolicy.row(&Value::Object(obj), 0).cells[1..3], [json!(2), json!("<unset>")]);
    }
}
