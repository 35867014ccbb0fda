//! IPAddress (networking.k8s.io/v1): cluster-scoped; named by the IP address it allocates,
//! in canonical form (so IPv6 names hold `:`); its parent reference is required and
//! immutable; printed with that parent.

use serde_json::Value;

use super::addr::strict_ip_errors;
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::{is_dns1123_subdomain, is_valid_path_segment_name, BadValue, FieldError, NameRule};

pub static DEF: ResourceDef = ResourceDef {
    group: "networking.k8s.io",
    version: "v1",
    kind: "IPAddress",
    plural: "ipaddresses",
    singular: "ipaddress",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &["ip"],
    categories: &[],
    subresources: &[],
    list_kind: "IPAddressList",
    tracks_generation: false,
};

// kube-apiserver's printer has no Age column for IP addresses.
const IP_ADDRESS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "ParentRef",
        "string",
        "parentRef references the resource that an IPAddress is attached to. An IPAddress must reference a \
         parent object.",
    ),
];

pub struct IPAddress;

impl Strategy for IPAddress {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// No name rule fits an IP address (IPv6 has `:`): the name only has to be a path
    /// segment here, and [`Strategy::validate`] checks it is an IP in canonical form.
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
        if !name.is_empty() {
            for msg in strict_ip_errors(name) {
                errs.push(FieldError::invalid("metadata.name", name, msg));
            }
        }
        let parent = obj.get("spec").and_then(|s| s.get("parentRef")).filter(|p| p.is_object());
        match parent {
            None => errs.push(FieldError::required("spec.parentRef", "")),
            Some(p) => parent_ref(p, &mut errs),
        }
        if let Some(old) = old {
            let old_parent = old.get("spec").and_then(|s| s.get("parentRef")).filter(|p| p.is_object());
            if parent.map(go_parent_ref) != old_parent.map(go_parent_ref) {
                // Go prints the pointer's struct, or "null" for none.
                let shown = parent.map_or(BadValue::Str("null".into()), |p| BadValue::Raw(go_parent_ref(p)));
                errs.push(FieldError::invalid_value("spec.parentRef", shown, "field is immutable"));
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        IP_ADDRESS_COLUMNS
    }

    fn row(&self, obj: &Value, _now: i64) -> Row {
        let parent = match obj.pointer("/spec/parentRef").filter(|p| p.is_object()) {
            None => "<none>".to_string(),
            Some(p) => {
                let (group, resource) = (str_at(p, "/group"), str_at(p, "/resource"));
                let mut s = if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") };
                s = s.to_lowercase();
                if let Some(ns) = non_empty(str_at(p, "/namespace")) {
                    s = format!("{s}/{ns}");
                }
                format!("{s}/{}", str_at(p, "/name"))
            }
        };
        Row::plain(vec![name(obj).into(), parent.into()])
    }
}

/// The parent: its group (empty for the core group) a DNS subdomain; resource and name
/// required; each a path segment.
fn parent_ref(p: &Value, errs: &mut Vec<FieldError>) {
    let group = str_at(p, "/group");
    for msg in if group.is_empty() { Vec::new() } else { is_dns1123_subdomain(group) } {
        errs.push(FieldError::invalid("spec.parentRef.group", group, msg));
    }
    for (field, required) in [("resource", true), ("name", true), ("namespace", false)] {
        let v = str_at(p, &format!("/{field}"));
        let path = format!("spec.parentRef.{field}");
        if v.is_empty() {
            if required {
                errs.push(FieldError::required(&path, ""));
            }
            continue;
        }
        for msg in is_valid_path_segment_name(v) {
            errs.push(FieldError::invalid(&path, v, msg));
        }
    }
}

/// The parent reference as Go prints the struct (`%#v`).
fn go_parent_ref(p: &Value) -> String {
    format!(
        "networking.ParentReference{{Group:{:?}, Resource:{:?}, Namespace:{:?}, Name:{:?}}}",
        str_at(p, "/group"),
        str_at(p, "/resource"),
        str_at(p, "/namespace"),
        str_at(p, "/name")
    )
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
    fn names_are_canonical_ips() {
        let parent = json!({"resource": "services", "namespace": "default", "name": "kubernetes"});
        for ok in ["10.96.0.1", "2001:db8::1"] {
            let ip = obj(json!({"metadata": {"name": ok}, "spec": {"parentRef": parent}}));
            assert!(IPAddress.validate(&ip, None).is_empty(), "{ok}");
            assert!(IPAddress.name_rule().check(ok, false).is_empty());
        }
        let ip = obj(json!({"metadata": {"name": "2001:db8:0::1"}, "spec": {"parentRef": parent}}));
        assert_eq!(
            shown(&IPAddress.validate(&ip, None)),
            [r#"metadata.name: Invalid value: "2001:db8:0::1": must be in canonical form ("2001:db8::1")"#]
        );
        let ip = obj(json!({"metadata": {"name": "web"}, "spec": {}}));
        assert_eq!(
            shown(&IPAddress.validate(&ip, None)),
            [
                r#"metadata.name: Invalid value: "web": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#,
                "spec.parentRef: Required value",
            ]
        );
    }

    #[test]
    fn the_parent_is_immutable_and_printed() {
        let old = obj(
            json!({"metadata": {"name": "10.0.0.1"}, "spec": {"parentRef": {"resource": "services", "namespace": "a", "name": "x"}}}),
        );
        let new = obj(
            json!({"metadata": {"name": "10.0.0.1"}, "spec": {"parentRef": {"resource": "services", "namespace": "a", "name": "y"}}}),
        );
        assert_eq!(
            shown(&IPAddress.validate(&new, Some(&old))),
            [
                r#"spec.parentRef: Invalid value: networking.ParentReference{Group:"", Resource:"services", Namespace:"a", Name:"y"}: field is immutable"#
            ]
        );
        let row = IPAddress.row(&Value::Object(old), 0);
        assert_eq!(row.cells, [json!("10.0.0.1"), json!("services/a/x")]);
        let gateway = json!({"metadata": {"name": "10.0.0.2"}, "spec": {"parentRef": {"group": "Gateway.Networking.k8s.io", "resource": "Gateways", "name": "g"}}});
        assert_eq!(IPAddress.row(&gateway, 0).cells[1], "gateways.gateway.networking.k8s.io/g");
    }
}
