//! NetworkPolicy (networking.k8s.io/v1): tracks generation; `policyTypes` defaults from
//! its rules (always `Ingress`, `Egress` when it has egress rules) and each port's protocol
//! to TCP; peers, ports and IP blocks checked as kube checks them; printed with its pod
//! selector.

use serde_json::{json, Value};

use super::addr::{go_strings, legacy_cidr_errors, parse_cidr_sloppy, port_name_errors};
use crate::kinds::common::label_selector;
use crate::kinds::printing::*;
use crate::kinds::{child, each, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::{BadValue, FieldError, PORT_RANGE};

pub static DEF: ResourceDef = ResourceDef {
    group: "networking.k8s.io",
    version: "v1",
    kind: "NetworkPolicy",
    plural: "networkpolicies",
    singular: "networkpolicy",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &["netpol"],
    categories: &[],
    subresources: &[],
    list_kind: "NetworkPolicyList",
    tracks_generation: true,
};

// kube-apiserver describes the column with the extensions/v1beta1 field's text.
const NETWORK_POLICY_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Pod-Selector",
        "string",
        "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules is applied to \
         any pods selected by this field. Multiple network policies can select the same set of pods.  In this \
         case, the ingress rules for each are combined additively. This field is NOT optional and follows \
         standard label selector semantics. An empty podSelector matches all pods in this namespace.",
    ),
    AGE,
];

const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];
const POLICY_TYPES: &[&str] = &["Ingress", "Egress"];

pub struct NetworkPolicy;

impl Strategy for NetworkPolicy {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// `SetDefaults_NetworkPolicy`: the spec always has a pod selector and policy types;
    /// ports are TCP unless they say otherwise.
    fn defaults(&self, obj: &mut Object) {
        set_default(obj, "spec", json!({}));
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "podSelector", json!({}));
        let no_types = spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty);
        if no_types {
            let has_egress = spec.get("egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty());
            let types = if has_egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
            spec.insert("policyTypes".into(), types);
        }
        for rules in ["ingress", "egress"] {
            for rule in each(spec, rules) {
                for port in each(rule, "ports") {
                    set_default(port, "protocol", json!("TCP"));
                }
            }
        }
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        if let Some(sel) = spec.get("podSelector").filter(|s| s.is_object()) {
            label_selector(sel, "spec.podSelector", &mut errs);
        }
        // CIDRs the policy was stored with stay acceptable on update.
        let old_cidrs: Vec<String> =
            old.map(|o| ip_block_cidrs(o.get("spec").unwrap_or(&Value::Null))).unwrap_or_default();
        for (rules, peers) in [("ingress", "from"), ("egress", "to")] {
            for (i, rule) in arr_at(spec, &format!("/{rules}")).iter().enumerate() {
                let rule_path = format!("spec.{rules}[{i}]");
                for (j, port) in arr_at(rule, "/ports").iter().enumerate() {
                    policy_port(port, &format!("{rule_path}.ports[{j}]"), &mut errs);
                }
                for (j, peer) in arr_at(rule, &format!("/{peers}")).iter().enumerate() {
                    policy_peer(peer, &format!("{rule_path}.{peers}[{j}]"), &old_cidrs, &mut errs);
                }
            }
        }
        let types: Vec<&str> = arr_at(spec, "/policyTypes").iter().map(|t| t.as_str().unwrap_or("")).collect();
        if types.len() > POLICY_TYPES.len() {
            errs.push(FieldError::invalid_value(
                "spec.policyTypes",
                BadValue::Raw(go_strings("networking.PolicyType", &types)),
                "may not specify more than two policyTypes",
            ));
            return errs;
        }
        for (i, t) in types.iter().enumerate() {
            if !POLICY_TYPES.contains(t) {
                errs.push(FieldError::not_supported(&format!("spec.policyTypes[{i}]"), t, POLICY_TYPES));
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        NETWORK_POLICY_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        // `metav1.FormatLabelSelector`: `<none>` for an empty selector, `<error>` for a bad one.
        let selector = match label_selector_string(Some(obj.pointer("/spec/podSelector").unwrap_or(&json!({})))) {
            s if s.is_empty() => "<none>".to_string(),
            s if s == "<invalid>" => "<error>".to_string(),
            s => s,
        };
        Row::plain(vec![name(obj).into(), selector.into(), age(obj, now).into()])
    }
}

/// A port: a known protocol, a port number in range or a port name, and an end port only
/// after a numeric port, not below it.
fn policy_port(port: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(protocol) = port.get("protocol").and_then(Value::as_str) {
        if !PROTOCOLS.contains(&protocol) {
            errs.push(FieldError::not_supported(&format!("{path}.protocol"), protocol, PROTOCOLS));
        }
    }
    let end_port = port.get("endPort").and_then(Value::as_i64);
    let end_path = format!("{path}.endPort");
    let raw = |n: i64| BadValue::Raw(n.to_string());
    match port.get("port").filter(|p| !p.is_null()) {
        Some(Value::String(name)) => {
            if let Some(end) = end_port {
                errs.push(FieldError::invalid_value(
                    &end_path,
                    raw(end),
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for msg in port_name_errors(name) {
                errs.push(FieldError::invalid(&format!("{path}.port"), name, msg));
            }
        }
        Some(number) => {
            let n = number.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errs.push(FieldError::invalid_value(&format!("{path}.port"), raw(n), PORT_RANGE));
            }
            if let Some(end) = end_port {
                if end < n {
                    errs.push(FieldError::invalid_value(
                        &end_path,
                        raw(end),
                        "must be greater than or equal to `port`",
                    ));
                }
                if !(1..=65535).contains(&end) {
                    errs.push(FieldError::invalid_value(&end_path, raw(end), PORT_RANGE));
                }
            }
        }
        None => {
            if let Some(end) = end_port {
                errs.push(FieldError::invalid_value(
                    &end_path,
                    raw(end),
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
}

/// A peer: at least one of its selectors or an IP block, and an IP block alone.
fn policy_peer(peer: &Value, path: &str, old_cidrs: &[String], errs: &mut Vec<FieldError>) {
    let mut peers = 0;
    for field in ["podSelector", "namespaceSelector"] {
        if let Some(sel) = peer.get(field).filter(|s| !s.is_null()) {
            peers += 1;
            label_selector(sel, &format!("{path}.{field}"), errs);
        }
    }
    let ip_block = peer.get("ipBlock").filter(|b| !b.is_null());
    if let Some(block) = ip_block {
        peers += 1;
        ip_block_errors(block, &format!("{path}.ipBlock"), old_cidrs, errs);
    }
    if peers == 0 {
        errs.push(FieldError::required(path, "must specify a peer"));
    } else if peers > 1 && ip_block.is_some() {
        errs.push(FieldError::forbidden(path, "may not specify both ipBlock and another peer"));
    }
}

/// An IP block: a CIDR, and exceptions strictly inside it.
fn ip_block_errors(block: &Value, path: &str, old_cidrs: &[String], errs: &mut Vec<FieldError>) {
    let cidr = str_at(block, "/cidr");
    let cidr_path = format!("{path}.cidr");
    if cidr.is_empty() {
        errs.push(FieldError::required(&cidr_path, ""));
        return;
    }
    let known = |v: &str| old_cidrs.iter().any(|o| o == v);
    if !known(cidr) {
        for msg in legacy_cidr_errors(cidr) {
            errs.push(FieldError::invalid(&cidr_path, cidr, msg));
        }
    }
    let Some(net) = parse_cidr_sloppy(cidr) else { return };
    for (i, except) in arr_at(block, "/except").iter().enumerate() {
        let except = except.as_str().unwrap_or("");
        let except_path = format!("{path}.except[{i}]");
        if !known(except) {
            for msg in legacy_cidr_errors(except) {
                errs.push(FieldError::invalid(&except_path, except, msg));
            }
        }
        let Some(inner) = parse_cidr_sloppy(except) else { continue };
        if !net.contains(inner.network()) || net.prefix >= inner.prefix {
            errs.push(FieldError::invalid(&except_path, except, "must be a strict subset of `cidr`"));
        }
    }
}

/// Every CIDR (and exception) of a spec's IP blocks.
fn ip_block_cidrs(spec: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (rules, peers) in [("ingress", "from"), ("egress", "to")] {
        for rule in arr_at(spec, &format!("/{rules}")) {
            for peer in arr_at(rule, &format!("/{peers}")) {
                if let Some(block) = peer.get("ipBlock").filter(|b| b.is_object()) {
                    out.push(str_at(block, "/cidr").to_string());
                    out.extend(arr_at(block, "/except").iter().filter_map(Value::as_str).map(str::to_string));
                }
            }
        }
    }
    out
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
    fn policy_types_default_from_the_rules() {
        let mut np = obj(json!({"spec": {"ingress": [{"ports": [{"port": 80}]}]}}));
        NetworkPolicy.defaults(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress"]));
        assert_eq!(np["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(np["spec"]["podSelector"], json!({}));
        let mut np = obj(json!({"spec": {"egress": [{}]}}));
        NetworkPolicy.defaults(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        let mut np = obj(json!({"spec": {"policyTypes": ["Egress"], "egress": [{}]}}));
        NetworkPolicy.defaults(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Egress"]));
    }

    #[test]
    fn peers_ports_and_blocks() {
        let np = obj(json!({"spec": {"ingress": [{
            "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16", "10.0.0.0/8"]}, "podSelector": {}}],
            "ports": [{"port": "http", "endPort": 90}, {"port": 100, "endPort": 90, "protocol": "ICMP"}]}],
            "policyTypes": ["Ingress", "Sideways"]}}));
        assert_eq!(
            shown(&NetworkPolicy.validate(&np, None)),
            [
                "spec.ingress[0].ports[0].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
                r#"spec.ingress[0].ports[1].protocol: Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP""#,
                "spec.ingress[0].ports[1].endPort: Invalid value: 90: must be greater than or equal to `port`",
                "spec.ingress[0].from[0]: Required value: must specify a peer",
                r#"spec.ingress[0].from[1].ipBlock.except[0]: Invalid value: "11.0.0.0/16": must be a strict subset of `cidr`"#,
                r#"spec.ingress[0].from[1].ipBlock.except[1]: Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`"#,
                "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
                r#"spec.policyTypes[1]: Unsupported value: "Sideways": supported values: "Ingress", "Egress""#,
            ]
        );
    }

    #[test]
    fn printed_with_its_pod_selector() {
        let np = json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {}}});
        assert_eq!(NetworkPolicy.row(&np, 0).cells[1], "<none>");
        let np = json!({"metadata": {"name": "web"}, "spec": {"podSelector": {"matchLabels": {"app": "web"}}}});
        assert_eq!(NetworkPolicy.row(&np, 0).cells[1], "app=web");
    }
}
