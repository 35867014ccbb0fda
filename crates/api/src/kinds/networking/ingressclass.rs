//! IngressClass (networking.k8s.io/v1): cluster-scoped, tracks generation; its controller
//! is a domain-prefixed path and immutable; its parameters' scope defaults to `Cluster`;
//! printed with its controller and parameters.

use serde_json::{json, Value};

use crate::kinds::common::immutable;
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::{is_dns1123_label, is_dns1123_subdomain, is_valid_path_segment_name, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "networking.k8s.io",
    version: "v1",
    kind: "IngressClass",
    plural: "ingressclasses",
    singular: "ingressclass",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[],
    list_kind: "IngressClassList",
    tracks_generation: true,
};

const INGRESS_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col("Controller", "string", "Controller that is responsible for handling this class"),
    col("Parameters", "string", "A reference to a resource with additional parameters"),
    AGE,
];

/// The longest controller name.
const MAX_CONTROLLER_LEN: usize = 250;

pub struct IngressClass;

impl Strategy for IngressClass {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(params) = child(obj, "spec").and_then(|s| child(s, "parameters")) {
            set_default(params, "scope", json!("Cluster"));
        }
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let controller = str_at(spec, "/controller");
        if controller.is_empty() {
            errs.push(FieldError::required("spec.controller", ""));
        } else {
            if controller.len() > MAX_CONTROLLER_LEN {
                errs.push(FieldError::too_long("spec.controller", MAX_CONTROLLER_LEN as i64));
            }
            domain_prefixed_path(controller, "spec.controller", &mut errs);
        }
        if let Some(params) = spec.get("parameters").filter(|p| !p.is_null()) {
            parameters(params, "spec.parameters", &mut errs);
        }
        immutable(obj, old, "spec.controller", &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        INGRESS_CLASS_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let parameters = match obj.pointer("/spec/parameters").filter(|p| p.is_object()) {
            None => "<none>".to_string(),
            Some(p) => {
                let kind = match p.get("apiGroup").and_then(Value::as_str) {
                    Some(group) => format!("{}.{group}", str_at(p, "/kind")),
                    None => str_at(p, "/kind").to_string(),
                };
                format!("{kind}/{}", str_at(p, "/name"))
            }
        };
        Row::plain(vec![
            name(obj).into(),
            str_at(obj, "/spec/controller").into(),
            parameters.into(),
            age(obj, now).into(),
        ])
    }
}

/// `IsDomainPrefixedPath`: a DNS subdomain, `/`, then HTTP path characters.
fn domain_prefixed_path(value: &str, path: &str, errs: &mut Vec<FieldError>) {
    let Some((host, rest)) = value.split_once('/').filter(|(h, r)| !h.is_empty() && !r.is_empty()) else {
        errs.push(FieldError::invalid(path, value, "must be a domain-prefixed path (such as \"acme.io/foo\")"));
        return;
    };
    for msg in is_dns1123_subdomain(host) {
        errs.push(FieldError::invalid(path, host, msg));
    }
    let http_path_char = |c: char| c.is_ascii_alphanumeric() || "/-._~%!$&'()*+,;=:".contains(c);
    if !rest.chars().all(http_path_char) {
        errs.push(FieldError::invalid(
            path,
            rest,
            "Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        ));
    }
}

/// The parameters reference: kind and name required, a known scope, a namespace exactly
/// when the scope is `Namespace`.
fn parameters(p: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(group) = p.get("apiGroup").and_then(Value::as_str) {
        for msg in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(&format!("{path}.apiGroup"), group, msg));
        }
    }
    for field in ["kind", "name"] {
        let v = str_at(p, &format!("/{field}"));
        let field_path = format!("{path}.{field}");
        if v.is_empty() {
            errs.push(FieldError::required(&field_path, ""));
            continue;
        }
        for msg in is_valid_path_segment_name(v) {
            errs.push(FieldError::invalid(&field_path, v, msg));
        }
    }
    let Some(scope) = p.get("scope").and_then(Value::as_str) else {
        errs.push(FieldError::required(&format!("{path}.scope"), ""));
        return;
    };
    let namespace = p.get("namespace").and_then(Value::as_str);
    let ns_path = format!("{path}.namespace");
    match (scope, namespace) {
        ("Namespace", None) => errs.push(FieldError::required(&ns_path, "`parameters.scope` is set to 'Namespace'")),
        ("Namespace", Some(ns)) => {
            for msg in is_dns1123_label(ns) {
                errs.push(FieldError::invalid(&ns_path, ns, msg));
            }
        }
        ("Cluster", Some(_)) => errs.push(FieldError::forbidden(&ns_path, "`parameters.scope` is set to 'Cluster'")),
        ("Cluster", None) => {}
        (other, _) => errs.push(FieldError::not_supported(&format!("{path}.scope"), other, &["Cluster", "Namespace"])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn parameters_scope_defaults_to_cluster() {
        let mut ic = obj(json!({"spec": {"controller": "example.com/ingress",
            "parameters": {"kind": "Params", "name": "p", "apiGroup": "example.com"}}}));
        IngressClass.defaults(&mut ic);
        assert_eq!(ic["spec"]["parameters"]["scope"], "Cluster");
        assert!(IngressClass.validate(&ic, None).is_empty());
        assert_eq!(IngressClass.row(&Value::Object(ic), 0).cells[2], "Params.example.com/p");
    }

    #[test]
    fn the_controller_is_a_domain_prefixed_path_and_immutable() {
        let ic = obj(json!({"spec": {"controller": "nginx"}}));
        assert_eq!(
            shown(&IngressClass.validate(&ic, None)),
            [r#"spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")"#]
        );
        let old = obj(json!({"spec": {"controller": "a.io/x"}}));
        let new = obj(json!({"spec": {"controller": "b.io/x"}}));
        assert_eq!(
            shown(&IngressClass.validate(&new, Some(&old))),
            [r#"spec.controller: Invalid value: "b.io/x": field is immutable"#]
        );
    }

    #[test]
    fn a_namespaced_parameter_needs_its_namespace() {
        let ic = obj(
            json!({"spec": {"controller": "a.io/x", "parameters": {"kind": "K", "name": "n", "scope": "Namespace"}}}),
        );
        assert_eq!(
            shown(&IngressClass.validate(&ic, None)),
            ["spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"]
        );
    }
}
