//! Owns the checks of the CEL expressions stored admission objects carry (webhook
//! `matchConditions`), made when the object is written: an expression that is not CEL is
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
    if matches!(t.def.plural, "mutatingwebhookconfigurations" | "validatingwebhookconfigurations") {
        let webhooks = obj.get("webhooks").and_then(Value::as_array);
        for (i, w) in webhooks.into_iter().flatten().enumerate() {
            let conditions = w.get("matchConditions").and_then(Value::as_array);
            for (j, c) in conditions.into_iter().flatten().enumerate() {
                let Some(expr) = c.get("expression").and_then(Value::as_str).filter(|e| !e.is_empty()) else {
                    continue;
                };
                if let Err(e) = crate::webhook::compile_condition(expr) {
                    let path = format!("webhooks[{i}].matchConditions[{j}].expression");
                    errs.push(FieldError::invalid(&path, expr, format!("compilation failed: {}", e.detail())));
                }
            }
        }
    }
    errs
}
