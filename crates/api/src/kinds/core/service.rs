//! Service (core/v1): named by a DNS-1035 label; defaults for its type, session affinity
//! and ports; ports in range; printed with its type, addresses and ports.

use std::collections::BTreeSet;

use serde_json::{json, Value};

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
        for port in each(spec, "ports") {
            set_default(port, "protocol", json!("TCP"));
            if let Some(p) = port.get("port").cloned() {
                set_default(port, "targetPort", p);
            }
        }
    }

    /// A port, target port or node port (not 0: allocated, or the port) out of range.
    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
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

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(service_cells(obj, now))
    }
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
