//! ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1): cluster-scoped, tracks
//! generation, status subresource; needs match constraints with resource rules and
//! validations or audit annotations, each with an expression (compiled when written and
//! enforced by kuorum-rest's `admission_policy`, which this pure crate does not see); failure policy defaults to Fail; printed with its
//! validation count and param kind.

use serde_json::{json, Value};

use super::admission::{
    enum_field, match_resources_defaults, validate_match_conditions, validate_match_resources, validate_param_kind,
    FAILURE_POLICIES,
};
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "admissionregistration.k8s.io",
    version: "v1",
    kind: "ValidatingAdmissionPolicy",
    plural: "validatingadmissionpolicies",
    singular: "validatingadmissionpolicy",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &["api-extensions"],
    subresources: &[STATUS],
    list_kind: "ValidatingAdmissionPolicyList",
    tracks_generation: true,
};

const REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"];

const POLICY_COLUMNS: &[Column] = &[
    NAME,
    col("Validations", "integer", "Validations indicates the number of validation rules defined in this configuration"),
    col("ParamKind", "string", "ParamKind specifies the kind of resources used to parameterize this policy"),
    AGE,
];

pub struct ValidatingAdmissionPolicy;

impl Strategy for ValidatingAdmissionPolicy {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = child(obj, "spec") {
            set_default(spec, "failurePolicy", json!("Fail"));
        }
        match_resources_defaults(obj, "matchConstraints");
    }

    /// The type checker owns the status.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({}));
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        validate_policy_spec(&spec, &mut errs);
        let list = |key: &str| spec.get(key).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let (validations, audits) = (list("validations"), list("auditAnnotations"));
        if validations.is_empty() && audits.is_empty() {
            errs.push(FieldError::required(
                "spec.validations",
                "validations or auditAnnotations must contain at least one item",
            ));
        }
        for (i, v) in validations.iter().enumerate() {
            let p = format!("spec.validations[{i}]");
            expression(v, "expression", &p, &mut errs);
            enum_field(v, "reason", &p, REASONS, &mut errs);
            if v.get("message").and_then(Value::as_str).is_some_and(|m| m.contains('\n')) {
                errs.push(FieldError::invalid(
                    &format!("{p}.message"),
                    v["message"].as_str().unwrap_or(""),
                    "message must not contain line breaks",
                ));
            }
        }
        if audits.len() > MAX_AUDIT_ANNOTATIONS {
            errs.push(FieldError::too_many("spec.auditAnnotations", audits.len() as i64, MAX_AUDIT_ANNOTATIONS as i64));
        }
        let policy = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
        let mut keys = std::collections::HashSet::new();
        for (i, a) in audits.iter().enumerate() {
            let p = format!("spec.auditAnnotations[{i}]");
            let key = a.get("key").and_then(Value::as_str).unwrap_or("");
            if key.is_empty() {
                errs.push(FieldError::required(&format!("{p}.key"), ""));
            } else if !keys.insert(key) {
                errs.push(FieldError::duplicate(&format!("{p}.key"), crate::validation::BadValue::Str(key.into())));
            } else if policy.is_empty() {
                errs.push(FieldError::invalid(&format!("{p}.key"), key, "requires metadata.name be non-empty"));
            } else {
                // The key is written to the audit event as `<policy>/<key>`.
                let wrong = crate::validation::is_qualified_name(&format!("{policy}/{key}"));
                if !wrong.is_empty() {
                    errs.push(FieldError::invalid(&format!("{p}.key"), key, wrong.join(", ")));
                }
            }
            expression(a, "valueExpression", &p, &mut errs);
            let value = a.get("valueExpression").and_then(Value::as_str).unwrap_or("").trim();
            if value.len() > MAX_AUDIT_VALUE_EXPRESSION_BYTES {
                errs.push(FieldError::required(
                    &format!("{p}.valueExpression"),
                    format!("must not exceed {MAX_AUDIT_VALUE_EXPRESSION_BYTES} bytes in length"),
                ));
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
            (arr_at(obj, "/spec/validations").len() as i64).into(),
            param_kind_cell(obj).into(),
            age(obj, now).into(),
        ])
    }
}

/// What both kinds of policy require of their spec: a known failure policy, a complete
/// param kind, match constraints with resource rules, match conditions and variables.
pub(crate) fn validate_policy_spec(spec: &Value, errs: &mut Vec<FieldError>) {
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => errs.push(FieldError::required("spec.failurePolicy", "")),
        Some(_) => enum_field(spec, "failurePolicy", "spec", FAILURE_POLICIES, errs),
    }
    validate_param_kind(spec, errs);
    match spec.get("matchConstraints").filter(|m| m.is_object()) {
        None => errs.push(FieldError::required("spec.matchConstraints", "")),
        Some(m) => {
            validate_match_resources(m, "spec.matchConstraints", errs);
            // The resource rules give the policy's expressions their types.
            if m.get("resourceRules").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                errs.push(FieldError::required("spec.matchConstraints.resourceRules", ""));
            }
        }
    }
    validate_match_conditions(spec, "spec", errs);
    for (i, v) in spec.get("variables").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let p = format!("spec.variables[{i}]");
        if v.get("name").and_then(Value::as_str).unwrap_or("").is_empty() {
            errs.push(FieldError::required(&format!("{p}.name"), ""));
        }
        expression(v, "expression", &p, errs);
    }
}

/// An expression field that must not be empty.
/// kube's bounds on a policy's `auditAnnotations`: how many, and each value expression's
/// length.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
const MAX_AUDIT_VALUE_EXPRESSION_BYTES: usize = 5 * 1024;

pub(crate) fn expression(v: &Value, key: &str, path: &str, errs: &mut Vec<FieldError>) {
    if v.get(key).and_then(Value::as_str).unwrap_or("").trim().is_empty() {
        errs.push(FieldError::required(&format!("{path}.{key}"), format!("{key} is not specified")));
    }
}

/// `apiVersion/kind` of the param kind, or `<unset>`.
pub(crate) fn param_kind_cell(obj: &Value) -> String {
    match obj.pointer("/spec/paramKind").filter(|p| p.is_object()) {
        Some(pk) => format!("{}/{}", str_at(pk, "/apiVersion"), str_at(pk, "/kind")),
        None => "<unset>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(spec: Value) -> Vec<String> {
        let mut obj = json!({"spec": spec}).as_object().unwrap().clone();
        ValidatingAdmissionPolicy.defaults(&mut obj);
        ValidatingAdmissionPolicy.validate(&obj, None).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn policies_need_rules_and_validations() {
        let rules = json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
            "resources": ["deployments"]}]});
        assert!(shown(
            json!({"matchConstraints": rules, "validations": [{"expression": "object.spec.replicas <= 5"}]})
        )
        .is_empty());
        assert_eq!(
            shown(json!({"matchConstraints": {}, "validations": [{"expression": " ", "reason": "Teapot"}]})),
            [
                "spec.matchConstraints.resourceRules: Required value",
                "spec.validations[0].expression: Required value: expression is not specified",
                "spec.validations[0].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \
                 \"RequestEntityTooLarge\", \"Unauthorized\"",
            ]
        );
        assert_eq!(
            shown(json!({"matchConstraints": rules})),
            ["spec.validations: Required value: validations or auditAnnotations must contain at least one item"]
        );
    }

    #[test]
    fn audit_annotations_are_bounded_and_named_within_the_policy() {
        let rules = json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["pods"]}]});
        let shown_named = |audits: Value| {
            let mut obj =
                json!({"metadata": {"name": "pol"}, "spec": {"matchConstraints": rules, "auditAnnotations": audits}})
                    .as_object()
                    .unwrap()
                    .clone();
            ValidatingAdmissionPolicy.defaults(&mut obj);
            ValidatingAdmissionPolicy.validate(&obj, None).iter().map(ToString::to_string).collect::<Vec<_>>()
        };
        assert!(shown_named(json!([{"key": "seen", "valueExpression": "'x'"}])).is_empty());
        let errs = shown_named(json!([
            {"key": "seen", "valueExpression": "'x'"},
            {"key": "seen", "valueExpression": "'y'"},
            {"key": "bad key", "valueExpression": "'z'"},
            {"key": "long", "valueExpression": format!("'{}'", "a".repeat(5200))},
        ]));
        assert_eq!(errs[0], "spec.auditAnnotations[1].key: Duplicate value: \"seen\"");
        assert!(
            errs[1].starts_with("spec.auditAnnotations[2].key: Invalid value: \"bad key\": name part must consist of"),
            "{errs:?}"
        );
        assert_eq!(
            errs[2],
            "spec.auditAnnotations[3].valueExpression: Required value: must not exceed 5120 bytes in length"
        );
        let many: Vec<Value> = (0..21).map(|i| json!({"key": format!("k{i}"), "valueExpression": "'v'"})).collect();
        assert_eq!(
            shown_named(Value::Array(many)),
            ["spec.auditAnnotations: Too many: 21: must have at most 20 items"]
        );
    }

    #[test]
    fn defaults_and_cells() {
        let mut obj = json!({"spec": {"matchConstraints": {"resourceRules": [{}]}, "paramKind":
            {"apiVersion": "v1", "kind": "ConfigMap"}}})
        .as_object()
        .unwrap()
        .clone();
        ValidatingAdmissionPolicy.defaults(&mut obj);
        assert_eq!(obj["spec"]["failurePolicy"], "Fail");
        assert_eq!(
            obj["spec"]["matchConstraints"],
            json!({"resourceRules": [{"scope": "*"}], "matchPolicy": "Equivalent", "namespaceSelector": {},
                "objectSelector": {}})
        );
        let row = ValidatingAdmissionPolicy.row(&Value::Object(obj), 0);
        assert_eq!(row.cells[1..3], [json!(0), json!("v1/ConfigMap")]);
    }
}
