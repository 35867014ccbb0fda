//! Endpoints (core/v1): the addresses behind a service, as the endpoints controller (or
//! whoever manages a selector-less service) writes them. Ports default to TCP; each
//! subset needs an address, each address a usable IP, a port of several a name; a node
//! an address was placed on cannot change. Printed with its first three `ip:port`s.

use std::collections::HashMap;
use std::net::IpAddr;

use serde_json::{json, Value};

use crate::kinds::printing::*;
use crate::kinds::{each, set_default, Object, Strategy};
use crate::registry::{core, ResourceDef, Scope};
use crate::validation::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name, BadValue, FieldError, PORT_RANGE};

pub static DEF: ResourceDef =
    core("Endpoints", "endpoints", "endpoints", Scope::Namespaced, &["ep"], &[], &[], "EndpointsList");

const ENDPOINTS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Endpoints",
        "string",
        "The set of all endpoints is the union of all subsets. Addresses are placed into subsets according to the IPs \
         they share. A single address with multiple ports, some of which are ready and some of which are not (because \
         they come from different containers) will result in the address being displayed in different subsets for the \
         different ports. No address will appear in both Addresses and NotReadyAddresses in the same subset. Sets of \
         addresses and ports that comprise a service.",
    ),
    AGE,
];

/// The protocols a port may carry (`supportedPortProtocols`, sorted).
pub(crate) const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

pub struct Endpoints;

impl Strategy for Endpoints {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        for subset in each(obj, "subsets") {
            for port in each(subset, "ports") {
                set_default(port, "protocol", json!("TCP"));
            }
        }
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        // The node each IP was placed on before this write.
        let mut old_nodes = HashMap::new();
        for subset in old.and_then(|o| o.get("subsets")).and_then(Value::as_array).into_iter().flatten() {
            for list in ["addresses", "notReadyAddresses"] {
                for a in subset.get(list).and_then(Value::as_array).into_iter().flatten() {
                    if let Some(node) = a.get("nodeName").and_then(Value::as_str) {
                        old_nodes.insert(str_at(a, "/ip").to_string(), node.to_string());
                    }
                }
            }
        }
        let subsets = obj.get("subsets").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        for (i, subset) in subsets.iter().enumerate() {
            let path = format!("subsets[{i}]");
            let count = |list: &str| subset.get(list).and_then(Value::as_array).map_or(0, Vec::len);
            if count("addresses") == 0 && count("notReadyAddresses") == 0 {
                errs.push(FieldError::required(&path, "must specify `addresses` or `notReadyAddresses`"));
            }
            for list in ["addresses", "notReadyAddresses"] {
                for (j, a) in subset.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
                    address(a, &format!("{path}.{list}[{j}]"), &old_nodes, &mut errs);
                }
            }
            let ports = subset.get("ports").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            for (j, p) in ports.iter().enumerate() {
                port(p, ports.len() > 1, &format!("{path}.ports[{j}]"), &mut errs);
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        ENDPOINTS_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), endpoints_cell(obj).into(), age(obj, now).into()])
    }
}

/// `validateEndpointAddress`: a valid IP, a DNS-label hostname, a node name that stays.
fn address(a: &Value, path: &str, old_nodes: &HashMap<String, String>, errs: &mut Vec<FieldError>) {
    let before = errs.len();
    let ip = str_at(a, "/ip");
    if ip.parse::<IpAddr>().is_err() {
        errs.push(FieldError::invalid(&format!("{path}.ip"), ip, IP_MSG));
    }
    let hostname = str_at(a, "/hostname");
    if !hostname.is_empty() {
        for msg in is_dns1123_label(hostname) {
            errs.push(FieldError::invalid(&format!("{path}.hostname"), hostname, msg));
        }
    }
    if let Some(node) = a.get("nodeName").and_then(Value::as_str) {
        for msg in is_dns1123_subdomain(node) {
            errs.push(FieldError::invalid(&format!("{path}.nodeName"), node, msg));
        }
        if old_nodes.get(ip).is_some_and(|old| old != node) {
            errs.push(FieldError::forbidden(
                &format!("{path}.nodeName"),
                format!("Cannot change NodeName for {ip} to {node}"),
            ));
        }
    }
    if errs.len() == before {
        endpoint_ip(ip, &format!("{path}.ip"), errs);
    }
}

/// `validation.IsValidIP`'s message.
pub(crate) const IP_MSG: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

/// `ValidateEndpointIP`: none of the addresses a service cannot route to.
pub(crate) fn endpoint_ip(ip: &str, path: &str, errs: &mut Vec<FieldError>) {
    let Ok(addr) = ip.parse::<IpAddr>() else {
        errs.push(FieldError::invalid(path, ip, "must be a valid IP address"));
        return;
    };
    // An IPv4-mapped IPv6 address is the IPv4 one to Go.
    let addr = match addr {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        v4 => v4,
    };
    let (unspecified, loopback, link_local, link_local_multicast) = match addr {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (v4.is_unspecified(), v4.is_loopback(), v4.is_link_local(), o[0] == 224 && o[1] == 0 && o[2] == 0)
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (v6.is_unspecified(), v6.is_loopback(), s[0] & 0xffc0 == 0xfe80, s[0] & 0xff0f == 0xff02)
        }
    };
    if unspecified {
        errs.push(FieldError::invalid(path, ip, format!("may not be unspecified ({ip})")));
    }
    if loopback {
        errs.push(FieldError::invalid(path, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"));
    }
    if link_local {
        errs.push(FieldError::invalid(path, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"));
    }
    if link_local_multicast {
        errs.push(FieldError::invalid(
            path,
            ip,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
}

/// `validateEndpointPort`: named when there are several, in range, a known protocol.
fn port(p: &Value, require_name: bool, path: &str, errs: &mut Vec<FieldError>) {
    let name = str_at(p, "/name");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(&format!("{path}.name"), ""));
    }
    for msg in if name.is_empty() { Vec::new() } else { is_dns1123_label(name) } {
        errs.push(FieldError::invalid(&format!("{path}.name"), name, msg));
    }
    let number = int_at(p, "/port");
    if !(1..=65535).contains(&number) {
        errs.push(FieldError::invalid_value(&format!("{path}.port"), BadValue::Raw(number.to_string()), PORT_RANGE));
    }
    match str_at(p, "/protocol") {
        "" => errs.push(FieldError::required(&format!("{path}.protocol"), "")),
        proto if !PROTOCOLS.contains(&proto) => {
            errs.push(FieldError::not_supported(&format!("{path}.protocol"), proto, PROTOCOLS))
        }
        _ => {}
    }
    if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
        for msg in is_qualified_name(app) {
            errs.push(FieldError::invalid(&format!("{path}.appProtocol"), app, msg));
        }
    }
}

/// `formatEndpoints`: the first three `ip:port`s (bare IPs for a subset without ports),
/// then `+ N more...`; `<none>` without subsets.
fn endpoints_cell(obj: &Value) -> String {
    const MAX: usize = 3;
    let subsets = arr_at(obj, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    let mut list: Vec<String> = Vec::new();
    let mut count = 0;
    for ss in subsets {
        let addresses = arr_at(ss, "/addresses");
        let ports = arr_at(ss, "/ports");
        let shown: Vec<String> = if ports.is_empty() {
            count += addresses.len();
            addresses.iter().map(|a| str_at(a, "/ip").to_string()).collect()
        } else {
            count += addresses.len() * ports.len();
            ports
                .iter()
                .flat_map(|p| addresses.iter().map(move |a| join_host_port(str_at(a, "/ip"), int_at(p, "/port"))))
                .collect()
        };
        list.extend(shown.into_iter().take(MAX.saturating_sub(list.len())));
    }
    let joined = list.join(",");
    if count > MAX {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

/// Go's `net.JoinHostPort`: IPv6 hosts in brackets.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn addresses_must_be_routable_and_ports_named() {
        let e = obj(json!({"subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "127.0.0.1"}, {"ip": "nope"}],
             "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"port": 70000, "protocol": "ICMP"}]},
            {"ports": [{"port": 53}]}]}));
        let shown: Vec<String> = Endpoints.validate(&e, None).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "subsets[0].addresses[1].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range \
                 (127.0.0.0/8, ::1/128)",
                "subsets[0].addresses[2].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or \
                 2001:db8::ffff)",
                "subsets[0].ports[1].name: Required value",
                "subsets[0].ports[1].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "subsets[0].ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \
                 \"UDP\"",
                "subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`",
                "subsets[1].ports[0].protocol: Required value",
            ]
        );
    }

    #[test]
    fn a_placed_address_keeps_its_node() {
        let old = obj(json!({"subsets": [{"addresses": [{"ip": "10.0.0.1", "nodeName": "a"}]}]}));
        let new = obj(json!({"subsets": [{"addresses": [{"ip": "10.0.0.1", "nodeName": "b"}]}]}));
        let errs = Endpoints.validate(&new, Some(&old));
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "subsets[0].addresses[0].nodeName: Forbidden: Cannot change NodeName for 10.0.0.1 to b"
        );
        assert!(Endpoints.validate(&new, None).is_empty());
    }

    #[test]
    fn ports_default_to_tcp() {
        let mut e = obj(json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}));
        Endpoints.defaults(&mut e);
        assert_eq!(e["subsets"][0]["ports"][0]["protocol"], "TCP");
    }

    #[test]
    fn the_cell_shows_three_endpoints() {
        let e = json!({"subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "ports": [{"port": 80}, {"port": 443}]}]});
        assert_eq!(endpoints_cell(&e), "10.0.0.1:80,[fd00::1]:80,10.0.0.1:443 + 1 more...");
        assert_eq!(endpoints_cell(&json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]})), "10.0.0.1");
        assert_eq!(endpoints_cell(&json!({})), "<none>");
    }
}
