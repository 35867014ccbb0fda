//! Ingress (networking.k8s.io/v1): tracks generation; status subresource, reset on
//! create; rules, paths (each with a `pathType`), backends and TLS hosts checked as kube
//! checks them; printed with its class, hosts, load-balancer addresses and ports.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::addr::{legacy_ip_errors, parse_ip_sloppy, port_name_errors, wildcard_subdomain_errors};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{
    is_dns1035_label, is_dns1123_subdomain, is_valid_path_segment_name, BadValue, FieldError, PORT_RANGE,
};

pub static DEF: ResourceDef = ResourceDef {
    group: "networking.k8s.io",
    version: "v1",
    kind: "Ingress",
    plural: "ingresses",
    singular: "ingress",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &["ing"],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "IngressList",
    tracks_generation: true,
};

const INGRESS_COLUMNS: &[Column] = &[
    NAME,
    col("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
    col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
    col("Address", "string", "Address is a list containing ingress points for the load-balancer"),
    col("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];

/// The annotation older clients name the class with; it must agree with the field.
const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

const PATH_TYPES: &[&str] = &["Exact", "ImplementationSpecific", "Prefix"];

pub struct Ingress;

impl Strategy for Ingress {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// A new ingress has an empty load-balancer status: controllers fill it in.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({"loadBalancer": {}}));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let empty = Value::Object(Object::new());
        let spec = obj.get("spec").filter(|s| s.is_object()).unwrap_or(&empty);
        let rules = spec.get("rules").and_then(Value::as_array);
        let default_backend = spec.get("defaultBackend").filter(|b| !b.is_null());
        if rules.is_none_or(Vec::is_empty) && default_backend.is_none() {
            let shown = if rules.is_some() { "[]networking.IngressRule{}" } else { "[]networking.IngressRule(nil)" };
            errs.push(FieldError::invalid_value(
                "spec",
                BadValue::Raw(shown.into()),
                "either `defaultBackend` or `rules` must be specified",
            ));
        }
        if let Some(b) = default_backend {
            backend(b, "spec.defaultBackend", &mut errs);
        }
        for (i, rule) in rules.into_iter().flatten().enumerate() {
            ingress_rule(rule, &format!("spec.rules[{i}]"), &mut errs);
        }
        // Secret names an ingress was stored with stay acceptable on update.
        let lenient_secrets = old.is_some_and(|o| {
            arr_at(&Value::Object(o.clone()), "/spec/tls")
                .iter()
                .any(|t| !secret_name_errors(str_at(t, "/secretName")).is_empty())
        });
        for (i, tls) in arr_at(spec, "/tls").iter().enumerate() {
            for (j, host) in arr_at(tls, "/hosts").iter().enumerate() {
                let host = host.as_str().unwrap_or("");
                let msgs =
                    if host.contains('*') { wildcard_subdomain_errors(host) } else { is_dns1123_subdomain(host) };
                for msg in msgs {
                    errs.push(FieldError::invalid(&format!("spec.tls[{i}].hosts[{j}]"), host, msg));
                }
            }
            if !lenient_secrets {
                let secret = str_at(tls, "/secretName");
                for msg in secret_name_errors(secret) {
                    errs.push(FieldError::invalid(&format!("spec.tls[{i}].secretName"), secret, msg));
                }
            }
        }
        if let Some(class) = spec.get("ingressClassName").and_then(Value::as_str) {
            for msg in is_dns1123_subdomain(class) {
                errs.push(FieldError::invalid("spec.ingressClassName", class, msg));
            }
            // Only a new ingress is held to the annotation agreeing with the field.
            let annotation =
                obj.get("metadata").and_then(|m| m.pointer("/annotations")).and_then(|a| a.get(CLASS_ANNOTATION));
            if let Some(a) = annotation.and_then(Value::as_str).filter(|a| old.is_none() && *a != class) {
                errs.push(FieldError::invalid(
                    &format!("annotations.{CLASS_ANNOTATION}"),
                    a,
                    "must match `ingressClassName` when both are specified",
                ));
            }
        }
        load_balancer_status(obj, old, &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        INGRESS_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let class = obj.pointer("/spec/ingressClassName").and_then(Value::as_str).unwrap_or("<none>");
        let ports = if arr_at(obj, "/spec/tls").is_empty() { "80" } else { "80, 443" };
        Row::plain(vec![
            name(obj).into(),
            class.into(),
            format_hosts(arr_at(obj, "/spec/rules")).into(),
            load_balancer_addresses(obj).into(),
            ports.into(),
            age(obj, now).into(),
        ])
    }
}

/// A TLS secret name, when given, must be a Secret's name (a DNS subdomain).
fn secret_name_errors(name: &str) -> Vec<String> {
    if name.is_empty() {
        Vec::new()
    } else {
        is_dns1123_subdomain(name)
    }
}

fn ingress_rule(rule: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let host = str_at(rule, "/host");
    if !host.is_empty() {
        if parse_ip_sloppy(host).is_some() {
            errs.push(FieldError::invalid(&format!("{path}.host"), host, "must be a DNS name, not an IP address"));
        }
        let msgs = if host.contains('*') { wildcard_subdomain_errors(host) } else { is_dns1123_subdomain(host) };
        for msg in msgs {
            errs.push(FieldError::invalid(&format!("{path}.host"), host, msg));
        }
    }
    let Some(http) = rule.get("http").filter(|h| !h.is_null()) else { return };
    let paths = arr_at(http, "/paths");
    if paths.is_empty() {
        errs.push(FieldError::required(&format!("{path}.http.paths"), ""));
    }
    for (i, p) in paths.iter().enumerate() {
        http_path(p, &format!("{path}.http.paths[{i}]"), errs);
    }
}

fn http_path(p: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(path_type) = p.get("pathType").and_then(Value::as_str) else {
        errs.push(FieldError::required(&format!("{path}.pathType"), "pathType must be specified"));
        return;
    };
    let value = str_at(p, "/path");
    let field = format!("{path}.path");
    match path_type {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                errs.push(FieldError::invalid(&field, value, "must be an absolute path"));
            }
            for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                if value.contains(seq) {
                    errs.push(FieldError::invalid(&field, value, format!("must not contain '{seq}'")));
                }
            }
            for suffix in ["/..", "/."] {
                if value.ends_with(suffix) {
                    errs.push(FieldError::invalid(&field, value, format!("cannot end with '{suffix}'")));
                }
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                errs.push(FieldError::invalid(&field, value, "must be an absolute path"));
            }
        }
        other => errs.push(FieldError::not_supported(&format!("{path}.pathType"), other, PATH_TYPES)),
    }
    backend(p.get("backend").unwrap_or(&Value::Null), &format!("{path}.backend"), errs);
}

/// An `IngressBackend`: a service (named like a Service, with a port name or number) or
/// a typed resource reference, never both.
fn backend(b: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let resource = b.get("resource").filter(|r| !r.is_null());
    let service = b.get("service").filter(|s| !s.is_null());
    match (resource, service) {
        (Some(_), Some(_)) => {
            errs.push(FieldError::invalid(path, "", "cannot set both resource and service backends"));
        }
        (Some(r), None) => {
            let path = format!("{path}.resource");
            if let Some(group) = r.get("apiGroup").and_then(Value::as_str) {
                for msg in is_dns1123_subdomain(group) {
                    errs.push(FieldError::invalid(&format!("{path}.apiGroup"), group, msg));
                }
            }
            for field in ["kind", "name"] {
                let v = str_at(r, &format!("/{field}"));
                let p = format!("{path}.{field}");
                if v.is_empty() {
                    errs.push(FieldError::required(&p, ""));
                }
                for msg in if v.is_empty() { Vec::new() } else { is_valid_path_segment_name(v) } {
                    errs.push(FieldError::invalid(&p, v, msg));
                }
            }
        }
        (None, Some(s)) => {
            let name = str_at(s, "/name");
            if name.is_empty() {
                errs.push(FieldError::required(&format!("{path}.service.name"), ""));
            } else {
                for msg in is_dns1035_label(name) {
                    errs.push(FieldError::invalid(&format!("{path}.service.name"), name, msg));
                }
            }
            let port_name = str_at(s, "/port/name");
            let number = int_at(s, "/port/number");
            match (port_name.is_empty(), number == 0) {
                (false, false) => errs.push(FieldError::invalid(path, "", "cannot set both port name & port number")),
                (false, true) => {
                    for msg in port_name_errors(port_name) {
                        errs.push(FieldError::invalid(&format!("{path}.service.port.name"), port_name, msg));
                    }
                }
                (true, false) => {
                    if !(1..=65535).contains(&number) {
                        errs.push(FieldError::invalid_value(
                            &format!("{path}.service.port.number"),
                            BadValue::Raw(number.to_string()),
                            PORT_RANGE,
                        ));
                    }
                }
                (true, true) => errs.push(FieldError::required(path, "port name or number is required")),
            }
        }
        (None, None) => errs.push(FieldError::invalid(path, "", "resource or service backend is required")),
    }
}

/// The load balancer's points: IPs (those the ingress had already stay acceptable) and
/// DNS hostnames that are not IPs.
fn load_balancer_status(obj: &Object, old: Option<&Object>, errs: &mut Vec<FieldError>) {
    let status = Value::Object(obj.clone());
    let old_ips: Vec<String> = old
        .map(|o| Value::Object(o.clone()))
        .map(|o| arr_at(&o, "/status/loadBalancer/ingress").iter().map(|i| str_at(i, "/ip").to_string()).collect())
        .unwrap_or_default();
    for (i, point) in arr_at(&status, "/status/loadBalancer/ingress").iter().enumerate() {
        let path = format!("status.loadBalancer.ingress[{i}]");
        let ip = str_at(point, "/ip");
        if !ip.is_empty() && !old_ips.iter().any(|o| o == ip) {
            for msg in legacy_ip_errors(ip) {
                errs.push(FieldError::invalid(&format!("{path}.ip"), ip, msg));
            }
        }
        let hostname = str_at(point, "/hostname");
        if !hostname.is_empty() {
            for msg in is_dns1123_subdomain(hostname) {
                errs.push(FieldError::invalid(&format!("{path}.hostname"), hostname, msg));
            }
            if parse_ip_sloppy(hostname).is_some() {
                errs.push(FieldError::invalid(
                    &format!("{path}.hostname"),
                    hostname,
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
}

/// Up to three rule hosts, then how many rules more; `*` when no rule names a host.
fn format_hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == MAX {
            more = true;
        }
        let host = str_at(rule, "/host");
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    if hosts.is_empty() {
        return "*".into();
    }
    let list = hosts.join(",");
    if more {
        format!("{list} + {} more...", rules.len() - MAX)
    } else {
        list
    }
}

/// The load balancer's IPs, or hostnames where a point has no IP: sorted, unique, and not
/// clipped (the server prints wide).
fn load_balancer_addresses(obj: &Value) -> String {
    let points: BTreeSet<&str> = arr_at(obj, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| non_empty(str_at(i, "/ip")).or_else(|| non_empty(str_at(i, "/hostname"))))
        .collect();
    points.into_iter().collect::<Vec<_>>().join(",")
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

    fn rule(path: Value) -> Value {
        json!({"spec": {"rules": [{"host": "example.com", "http": {"paths": [path]}}]}})
    }

    #[test]
    fn a_valid_ingress_passes() {
        let ing = obj(rule(json!({"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}})));
        assert!(Ingress.validate(&ing, None).is_empty());
    }

    #[test]
    fn paths_need_a_path_type_and_an_absolute_path() {
        let ing = obj(rule(json!({"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}})));
        assert_eq!(
            shown(&Ingress.validate(&ing, None)),
            ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"]
        );
        let ing = obj(rule(json!({"path": "a/../b", "pathType": "Exact",
            "backend": {"service": {"name": "web", "port": {"name": "http"}}}})));
        assert_eq!(
            shown(&Ingress.validate(&ing, None)),
            [
                r#"spec.rules[0].http.paths[0].path: Invalid value: "a/../b": must be an absolute path"#,
                r#"spec.rules[0].http.paths[0].path: Invalid value: "a/../b": must not contain '/../'"#,
            ]
        );
    }

    #[test]
    fn backends_name_a_port_and_one_target() {
        let ing = obj(json!({"spec": {"defaultBackend": {"service": {"name": "web", "port": {}}}}}));
        assert_eq!(
            shown(&Ingress.validate(&ing, None)),
            ["spec.defaultBackend: Required value: port name or number is required"]
        );
        let ing = obj(json!({"spec": {}}));
        assert_eq!(
            shown(&Ingress.validate(&ing, None)),
            ["spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"]
        );
    }

    #[test]
    fn the_class_annotation_must_agree_on_create() {
        let mut ing = obj(json!({"metadata": {"annotations": {"kubernetes.io/ingress.class": "nginx"}},
            "spec": {"ingressClassName": "traefik", "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}));
        let errs = Ingress.validate(&ing, None);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "annotations.kubernetes.io/ingress.class");
        assert!(Ingress.validate(&ing.clone(), Some(&ing)).is_empty());
        Ingress.prepare_for_create(&mut ing, "");
        assert_eq!(ing["status"], json!({"loadBalancer": {}}));
    }

    #[test]
    fn printed_with_hosts_addresses_and_ports() {
        let ing = json!({"metadata": {"name": "web"}, "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.com"}, {"host": "b.com"}, {}, {"host": "c.com"}, {"host": "d.com"}],
            "tls": [{"hosts": ["a.com"]}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.2"}, {"hostname": "lb.example.com"}, {"ip": "10.0.0.1"}]}}});
        let row = Ingress.row(&ing, 0);
        assert_eq!(row.cells[1], "nginx");
        assert_eq!(row.cells[2], "a.com,b.com,c.com + 2 more...");
        assert_eq!(row.cells[3], "10.0.0.1,10.0.0.2,lb.example.com");
        assert_eq!(row.cells[4], "80, 443");
        let bare = Ingress.row(&json!({"metadata": {"name": "x"}}), 0);
        assert_eq!((&bare.cells[1], &bare.cells[2], &bare.cells[4]), (&json!("<none>"), &json!("*"), &json!("80")));
    }
}
