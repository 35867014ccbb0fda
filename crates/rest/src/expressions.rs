//! Owns the checks of the CEL expressions stored admission objects carry (webhook
//! `matchConditions`; admission policies' validations, messages, audit annotations,
//! variables, match conditions and mutations), made when the object is written: an expression that is not CEL is
//! refused there (422 at its path, kube's `compilation failed: ...`), not found out on
//! the first write it would have judged.

use kuorum_api::validation::FieldError;
use serde_json::Value;

use crate::object::Object;
use crate::target::Target;

const GROUP: &str = "admissionregistration.k8s.io";

/// The errors of the expressions in `obj`, written through `t`.
pub(crate) fn errors(t: &Target, obj: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if t.def.group != GROUP {
        return errs;
    }
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut check =
        |path: String, expr: Option<&str>, compile: &dyn Fn(&str) -> Result<(), kuorum_cel::CompileError>| {
            let Some(expr) = expr.filter(|e| !e.is_empty()) else { return };
            if let Err(e) = compile(expr) {
                errs.push(FieldError::invalid(&path, expr, format!("compilation failed: {}", e.detail())));
            }
        };
    let policy = |e: &str| crate::admission_policy::compile(e).map(drop);
    let list = |field: &str| spec.get(field).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let str_at = |v: &'_ Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
    if matches!(t.def.plural, "validatingadmissionpolicies" | "mutatingadmissionpolicies") {
        let mut fields: Vec<(String, Option<String>)> = Vec::new();
        for (i, v) in list("validations").iter().enumerate() {
            fields.push((format!("spec.validations[{i}].expression"), str_at(v, "/expression")));
            fields.push((format!("spec.validations[{i}].messageExpression"), str_at(v, "/messageExpression")));
        }
        for (i, v) in list("auditAnnotations").iter().enumerate() {
            fields.push((format!("spec.auditAnnotations[{i}].valueExpression"), str_at(v, "/valueExpression")));
        }
        for (i, v) in list("matchConditions").iter().enumerate() {
            fields.push((format!("spec.matchConditions[{i}].expression"), str_at(v, "/expression")));
        }
        for (i, v) in list("variables").iter().enumerate() {
            fields.push((format!("spec.variables[{i}].expression"), str_at(v, "/expression")));
        }
        for (i, v) in list("mutations").iter().enumerate() {
            for f in ["applyConfiguration", "jsonPatch"] {
                fields.push((format!("spec.mutations[{i}].{f}.expression"), str_at(v, &format!("/{f}/expression"))));
            }
        }
        for (path, expr) in fields {
            check(path, expr.as_deref(), &policy);
        }
    }
    if matches!(t.def.plural, "mutatingwebhookconfigurations" | "validatingwebhookconfigurations") {
        let webhooks = obj.get("webhooks").and_then(Value::as_array);
        for (i, w) in webhooks.into_iter().flatten().enumerate() {
            let conditions = w.get("matchConditions").and_then(Value::as_array);
            for (j, c) in conditions.into_iter().flatten().enumerate() {
                let path = format!("webhooks[{i}].matchConditions[{j}].expression");
                let expr = c.get("expression").and_then(Value::as_str);
                check(path, expr, &|e| crate::webhook::compile_condition(e).map(drop));
            }
        }
    }
    errs
}
