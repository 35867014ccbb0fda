//! RuntimeClass (node.k8s.io/v1): cluster-scoped, no spec; its handler is a DNS label
//! and fixed once created; its scheduling node selector holds valid labels; printed with
//! its handler.

use serde_json::Value;

use crate::kinds::common::immutable;
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{grouped, ResourceDef, Scope};
use crate::validation::{is_dns1123_label, validate_labels, FieldError};

pub static DEF: ResourceDef =
    grouped("node.k8s.io", "RuntimeClass", "runtimeclasses", "runtimeclass", Scope::Cluster, "RuntimeClassList");

// kube describes the handler column with ObjectMeta's (missing) `handler` doc: empty.
const RUNTIME_CLASS_COLUMNS: &[Column] = &[NAME, col("Handler", "string", ""), AGE];

pub struct RuntimeClass;

impl Strategy for RuntimeClass {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let handler = obj.get("handler").and_then(Value::as_str).unwrap_or("");
        for msg in is_dns1123_label(handler) {
            errs.push(FieldError::invalid("handler", handler, msg));
        }
        let node_selector = obj.get("scheduling").and_then(|s| s.get("nodeSelector")).and_then(Value::as_object);
        if let Some(labels) = node_selector {
            errs.extend(validate_labels(labels, "scheduling.nodeSelector"));
        }
        immutable(obj, old, "handler", &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        RUNTIME_CLASS_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), str_at(obj, "/handler").into(), age(obj, now).into()])
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_handler_is_a_fixed_dns_label() {
        assert!(RuntimeClass.validate(&obj(json!({"handler": "runsc"})), None).is_empty());
        let errs = RuntimeClass.validate(&obj(json!({"handler": "gVisor"})), None);
        assert_eq!((errs.len(), errs[0].field.as_str()), (1, "handler"));
        assert_eq!(
            shown(&RuntimeClass.validate(&obj(json!({"handler": "kata"})), Some(&obj(json!({"handler": "runsc"}))))),
            [r#"handler: Invalid value: "kata": field is immutable"#]
        );
        let row = RuntimeClass.row(&json!({"metadata": {"name": "gvisor"}, "handler": "runsc"}), 0);
        assert_eq!(row.cells[1], "runsc");
    }
}
