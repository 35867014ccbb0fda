//! Binding (core/v1): what a scheduler creates to place a pod on a node, through
//! `POST .../namespaces/{ns}/bindings` (the pod named by the binding's `metadata.name`) or
//! the pod's `binding` subresource. Created, answered, never stored: the pod is what
//! changes (the pod's strategy says how, [`super::pod`]'s `binding` subresource write).
//! What is special here is kube's `ValidatePodBinding`: a target name is required, and a
//! target kind, when given, is `Node`.

use serde_json::Value;

use crate::kinds::{Object, Strategy};
use crate::registry::{core, ResourceDef, Scope};
use crate::validation::FieldError;

/// A binding is only created (kube-apiserver lists no other verb for it).
pub static DEF: ResourceDef =
    ResourceDef { verbs: &["create"], ..core("Binding", "bindings", "binding", Scope::Namespaced, &[], &[], &[], "") };

pub struct Binding;

impl Strategy for Binding {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let target = |field: &str| obj.get("target").and_then(|t| t.get(field)).and_then(Value::as_str).unwrap_or("");
        let mut errs = Vec::new();
        let kind = target("kind");
        if !kind.is_empty() && kind != "Node" {
            errs.push(FieldError::not_supported("target.kind", kind, &["Node", "<empty>"]));
        }
        if target("name").is_empty() {
            errs.push(FieldError::required("target.name", ""));
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors(v: Value) -> Vec<String> {
        Binding.validate(v.as_object().unwrap(), None).iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn a_binding_targets_a_named_node() {
        assert!(errors(json!({"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}})).is_empty());
        assert!(errors(json!({"target": {"name": "n1"}})).is_empty(), "an empty kind is a node");
        assert_eq!(errors(json!({"target": {"kind": "Node"}})), ["target.name: Required value"]);
        assert_eq!(
            errors(json!({"target": {"kind": "Pod", "name": "x"}})),
            [r#"target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>""#]
        );
        assert_eq!(errors(json!({})).len(), 1);
    }

    #[test]
    fn only_created() {
        assert_eq!(DEF.verbs, ["create"]);
        assert!(DEF.namespaced());
    }
}
