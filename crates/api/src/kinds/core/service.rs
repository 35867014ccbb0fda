//! Service (core/v1): named by a DNS-1035 label; defaults for its type, session affinity
//! and ports; ports in range; printed with its type, addresses and ports.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::kinds::allocation::{Allocating, Held, Pool};
use crate::kinds::printing::*;
use crate::kinds::{child, each, set_default, Object, Strategy};
use crate::registry::{core, core_subresource, ResourceDef, Scope, SubresourceDef, PROXY_VERBS, STATUS};
use crate::validation::{BadValue, FieldError, NameRule, PORT_RANGE};

pub static DEF: ResourceDef =
    core("Service", "services", "service", Scope::Namespaced, &["svc"], &["all"], SUBRESOURCES, "ServiceList");

const SUBRESOURCES: &[SubresourceDef] = &[core_subresource("proxy", "ServiceProxyOptions", PROXY_VERBS), STATUS];

const SERVICE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, \
         ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for \
         load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual \
         construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is \
         allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" \
         builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \
         \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current \
         cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the \
         specified externalName. Several other fields do not apply to ExternalName services. More info: \
         https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types",
    ),
    col(
        "Cluster-IP",
        "string",
        "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified \
         manually, is in-range (as per system configuration), and is not in use, it will be allocated to the \
         service; otherwise creation of the service will fail. This field may not be changed through updates unless \
         the type field is also being changed to ExternalName (which requires this field to be blank) or the type \
         field is being changed from ExternalName (in which case this field may optionally be specified, as describe \
         above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" \
         makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred \
         and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field \
         is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when \
         updating a Service to type ExternalName. More info: \
         https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
    ),
    col(
        "External-IP",
        "string",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this \
         service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic \
         arrives at a node with this IP.  A common example is external load-balancers that are not part of the \
         Kubernetes system.",
    ),
    col(
        "Port(s)",
        "string",
        "The list of ports that are exposed by this service. More info: \
         https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
    ),
    AGE,
    wide(
        "Selector",
        "string",
        "Route service traffic to pods with label keys and values matching this selector. If empty or not present, \
         the service is assumed to have an external process managing its endpoints, which Kubernetes will not \
         modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More \
         info: https://kubernetes.io/docs/concepts/services-networking/service/",
    ),
];

pub struct Service;

impl Strategy for Service {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Dns1035Label
    }

    /// A new service's status is empty (`loadBalancer: {}`): load balancer controllers
    /// write it.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({"loadBalancer": {}}));
    }

    fn defaults(&self, obj: &mut Object) {
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "type", json!("ClusterIP"));
        set_default(spec, "sessionAffinity", json!("None"));
        let ty = spec.get("type").and_then(Value::as_str).unwrap_or("").to_string();
        if ty != "ExternalName" {
            set_default(spec, "internalTrafficPolicy", json!("Cluster"));
            // kuorum's service range is IPv4 only: every service is single-stack IPv4.
            set_default(spec, "ipFamilies", json!(["IPv4"]));
            set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
            // One of clusterIP and clusterIPs given names the other (kube's
            // normalizeClusterIPs).
            let first = spec.get("clusterIPs").and_then(|v| v.get(0)).and_then(Value::as_str).map(str::to_string);
            match (spec.get("clusterIP").and_then(Value::as_str).filter(|ip| !ip.is_empty()), first) {
                (Some(ip), None) => {
                    let ip = ip.to_string();
                    spec.insert("clusterIPs".into(), json!([ip]));
                }
                (None, Some(first)) => {
                    spec.insert("clusterIP".into(), json!(first));
                }
                _ => {}
            }
        }
        if ty == "NodePort" || ty == "LoadBalancer" {
            set_default(spec, "externalTrafficPolicy", json!("Cluster"));
        }
        if ty == "LoadBalancer" {
            set_default(spec, "allocateLoadBalancerNodePorts", json!(true));
        }
        for port in each(spec, "ports") {
            set_default(port, "protocol", json!("TCP"));
            if let Some(p) = port.get("port").cloned() {
                set_default(port, "targetPort", p);
            }
        }
    }

    /// A port, target port or node port (not 0: allocated, or the port) out of range.
    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(old) = old {
            errs.extend(immutable_cluster_ip(old, obj));
        }
        if !allows_node_ports(obj) {
            let ports = obj.get("spec").and_then(|s| s.get("ports")).and_then(Value::as_array);
            for (i, port) in ports.into_iter().flatten().enumerate() {
                if port.get("nodePort").and_then(Value::as_i64).is_some_and(|n| n != 0) {
                    errs.push(FieldError::forbidden(
                        &format!("spec.ports[{i}].nodePort"),
                        format!("may not be used when `type` is '{}'", service_type(obj)),
                    ));
                }
            }
        }
        let ports = obj.get("spec").and_then(|s| s.get("ports")).and_then(Value::as_array);
        for (i, port) in ports.into_iter().flatten().enumerate() {
            for field in ["port", "targetPort", "nodePort"] {
                let Some(n) = port.get(field).and_then(Value::as_i64) else { continue };
                // A nodePort of 0 asks for one to be allocated; a targetPort of 0 defaults
                // to the port.
                if (field == "port" || n != 0) && !(1..=65535).contains(&n) {
                    errs.push(FieldError::invalid_value(
                        &format!("spec.ports[{i}].{field}"),
                        BadValue::Raw(n.to_string()),
                        PORT_RANGE,
                    ));
                }
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        SERVICE_COLUMNS
    }

    fn allocating(&self) -> Option<&dyn Allocating> {
        Some(self)
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(service_cells(obj, now))
    }
}

fn service_type(obj: &Object) -> &str {
    obj.get("spec").and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("ClusterIP")
}

fn cluster_ip(obj: &Object) -> &str {
    obj.get("spec").and_then(|s| s.get("clusterIP")).and_then(Value::as_str).unwrap_or("")
}

/// Whether the service has a virtual IP: every type but `ExternalName`, unless headless.
fn needs_cluster_ip(obj: &Object) -> bool {
    service_type(obj) != "ExternalName" && cluster_ip(obj) != "None"
}

/// Whether the service's ports take node ports: `NodePort`, and `LoadBalancer` unless
/// `allocateLoadBalancerNodePorts` is false.
fn needs_node_ports(obj: &Object) -> bool {
    match service_type(obj) {
        "NodePort" => true,
        "LoadBalancer" => {
            obj.get("spec").and_then(|s| s.get("allocateLoadBalancerNodePorts")).and_then(Value::as_bool) != Some(false)
        }
        _ => false,
    }
}

/// Whether the service's ports may hold node ports: `NodePort` and `LoadBalancer` (one
/// that does not allocate them keeps those asked for or held before, as kube does).
fn allows_node_ports(obj: &Object) -> bool {
    matches!(service_type(obj), "NodePort" | "LoadBalancer")
}

fn node_port(port: &Value) -> i64 {
    port.get("nodePort").and_then(Value::as_i64).unwrap_or(0)
}

/// A cluster IP (or `None`), once set, changes only with a change to or from
/// `ExternalName`.
fn immutable_cluster_ip(old: &Object, new: &Object) -> Option<FieldError> {
    let (was, is) = (cluster_ip(old), cluster_ip(new));
    let external = service_type(old) == "ExternalName" || service_type(new) == "ExternalName";
    (!external && !was.is_empty() && was != is)
        .then(|| FieldError::invalid("spec.clusterIPs[0]", is, "may not change once set"))
}

impl Allocating for Service {
    fn carry(&self, old: &Object, obj: &mut Object) {
        let old_ip = cluster_ip(old).to_string();
        let (was_external, is_external) = (service_type(old) == "ExternalName", service_type(obj) == "ExternalName");
        // A headless service's `None` is kept as an address is.
        let keep_ip = !was_external && !is_external && !old_ip.is_empty() && cluster_ip(obj).is_empty();
        let drop_ip = is_external && !was_external && cluster_ip(obj) == old_ip && !old_ip.is_empty();
        let old_ports: Vec<Value> =
            old.get("spec").and_then(|s| s.get("ports")).and_then(Value::as_array).cloned().unwrap_or_default();
        let (had_ports, has_ports) = (allows_node_ports(old), allows_node_ports(obj));
        let Some(spec) = child(obj, "spec") else { return };
        if keep_ip {
            spec.insert("clusterIP".into(), json!(old_ip));
            spec.insert("clusterIPs".into(), json!([old_ip]));
        } else if drop_ip {
            spec.remove("clusterIP");
            spec.remove("clusterIPs");
        }
        for port in each(spec, "ports") {
            let p = Value::Object(port.clone());
            // kube matches a port to its old self by name (unnamed when there is one).
            let same = old_ports.iter().find(|o| o.get("name") == p.get("name"));
            let was = same.map_or(0, node_port);
            if had_ports && has_ports && node_port(&p) == 0 && was != 0 {
                port.insert("nodePort".into(), json!(was));
            } else if had_ports && !has_ports && node_port(&p) == was {
                port.remove("nodePort");
            }
        }
    }

    fn held(&self, obj: &Object) -> Vec<Held> {
        let mut held = Vec::new();
        let ip = cluster_ip(obj);
        if needs_cluster_ip(obj) && !ip.is_empty() {
            held.push(Held { pool: Pool::ServiceIp, value: ip.to_string(), field: "spec.clusterIPs".into() });
        }
        let ports = obj.get("spec").and_then(|s| s.get("ports")).and_then(Value::as_array);
        for (i, port) in ports.into_iter().flatten().enumerate() {
            let n = node_port(port);
            if allows_node_ports(obj)
                && n != 0
                && !held.iter().any(|h| h.pool == Pool::NodePort && h.value == n.to_string())
            {
                held.push(Held {
                    pool: Pool::NodePort,
                    value: n.to_string(),
                    field: format!("spec.ports[{i}].nodePort"),
                });
            }
        }
        held
    }

    fn wanted(&self, obj: &Object) -> Vec<Pool> {
        let mut wanted = Vec::new();
        if needs_cluster_ip(obj) && cluster_ip(obj).is_empty() {
            wanted.push(Pool::ServiceIp);
        }
        if needs_node_ports(obj) {
            wanted.extend(ports_wanting_node_ports(obj).into_iter().map(|_| Pool::NodePort));
        }
        wanted
    }

    fn fill(&self, obj: &mut Object, values: &[String]) {
        let mut values = values.iter();
        let needs_ip = needs_cluster_ip(obj) && cluster_ip(obj).is_empty();
        let wanting = if needs_node_ports(obj) { ports_wanting_node_ports(obj) } else { Vec::new() };
        let Some(spec) = child(obj, "spec") else { return };
        if needs_ip {
            if let Some(ip) = values.next() {
                spec.insert("clusterIP".into(), json!(ip));
                spec.insert("clusterIPs".into(), json!([ip]));
            }
        }
        if wanting.is_empty() {
            return;
        }
        let mut given: Vec<(Value, i64)> = Vec::new();
        for (i, port) in each(spec, "ports").enumerate() {
            let number = port.get("port").cloned().unwrap_or(Value::Null);
            let mut n = port.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
            if wanting.contains(&i) {
                n = values.next().and_then(|v| v.parse::<i64>().ok()).unwrap_or(0);
            } else if n == 0 {
                // An earlier port of the same number has one: they share it.
                n = given.iter().find(|(m, _)| *m == number).map_or(0, |(_, p)| *p);
            }
            if n != 0 {
                port.insert("nodePort".into(), json!(n));
                given.push((number, n));
            }
        }
    }
}

/// The indexes of the ports that need a node port of their own: those without one, but
/// for a port whose number an earlier port has (53/TCP and 53/UDP share one, as kube
/// allocates them on create).
fn ports_wanting_node_ports(obj: &Object) -> Vec<usize> {
    let ports = obj.get("spec").and_then(|s| s.get("ports")).and_then(Value::as_array);
    let ports: Vec<&Value> = ports.into_iter().flatten().collect();
    (0..ports.len())
        .filter(|&i| node_port(ports[i]) == 0)
        .filter(|&i| !ports[..i].iter().any(|p| p.get("port") == ports[i].get("port")))
        .collect()
}

fn service_cells(svc: &Value, now: i64) -> Vec<Value> {
    // kube-apiserver defaults the type to ClusterIP and each port's protocol to TCP.
    let ty = non_empty(str_at(svc, "/spec/type")).unwrap_or("ClusterIP");
    let cluster_ip = arr_at(svc, "/spec/clusterIPs")
        .first()
        .and_then(Value::as_str)
        .or_else(|| non_empty(str_at(svc, "/spec/clusterIP")))
        .unwrap_or("");
    let external_ips: Vec<&str> = arr_at(svc, "/spec/externalIPs").iter().filter_map(Value::as_str).collect();
    let external = match ty {
        "ClusterIP" | "NodePort" if !external_ips.is_empty() => external_ips.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            // The server prints wide: the load balancer's addresses are not clipped.
            let lb: BTreeSet<&str> = arr_at(svc, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| non_empty(str_at(i, "/ip")).or_else(|| non_empty(str_at(i, "/hostname"))))
                .collect();
            let mut all: Vec<&str> = lb.into_iter().collect();
            all.extend(external_ips.iter().copied());
            if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => str_at(svc, "/spec/externalName").into(),
        _ => "<unknown>".into(),
    };
    let ports: Vec<String> = arr_at(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = non_empty(str_at(p, "/protocol")).unwrap_or("TCP");
            let (port, node_port) = (int_at(p, "/port"), int_at(p, "/nodePort"));
            if node_port > 0 {
                format!("{port}:{node_port}/{protocol}")
            } else {
                format!("{port}/{protocol}")
            }
        })
        .collect();
    vec![
        name(svc).into(),
        ty.into(),
        or_none(cluster_ip).into(),
        external.into(),
        or_none(&ports.join(",")).into(),
        age(svc, now).into(),
        format_labels(svc.pointer("/spec/selector")).into(),
    ]
}
