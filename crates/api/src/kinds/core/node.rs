//! Node (core/v1): cluster-scoped, with a status subresource; selectable by
//! `spec.unschedulable`; printed with its readiness, roles, version and addresses.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::kinds::printing::*;
use crate::kinds::Strategy;
use crate::registry::{core, core_subresource, ResourceDef, Scope, PROXY_VERBS, STATUS};

pub static DEF: ResourceDef = core(
    "Node",
    "nodes",
    "node",
    Scope::Cluster,
    &["no"],
    &[],
    &[core_subresource("proxy", "NodeProxyOptions", PROXY_VERBS), STATUS],
    "NodeList",
);

const NODE_ADDRESSES_DOC: &str = "List of addresses reachable to the node. Queried from cloud provider, if \
     available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is \
     declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is \
     merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. \
     Consumers should assume that addresses can change during the lifetime of a Node. However, there are some \
     exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or \
     consumers of the downward API (status.hostIP).";

const NODE_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    AGE,
    col("Version", "string", "Kubelet Version reported by the node."),
    wide("Internal-IP", "string", NODE_ADDRESSES_DOC),
    wide("External-IP", "string", NODE_ADDRESSES_DOC),
    wide(
        "OS-Image",
        "string",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    ),
    wide(
        "Kernel-Version",
        "string",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    ),
    wide(
        "Container-Runtime",
        "string",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    ),
];

pub struct Node;

impl Strategy for Node {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.unschedulable"]
    }

    fn columns(&self) -> &'static [Column] {
        NODE_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(node_cells(obj, now))
    }
}

fn node_cells(node: &Value, now: i64) -> Vec<Value> {
    let mut status: Vec<String> = Vec::new();
    // Only the Ready condition is shown; the last one of a type wins, as in a Go map.
    if let Some(c) = arr_at(node, "/status/conditions").iter().rev().find(|c| str_at(c, "/type") == "Ready") {
        status.push(if str_at(c, "/status") == "True" { "Ready" } else { "NotReady" }.into());
    }
    if status.is_empty() {
        status.push("Unknown".into());
    }
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".into());
    }
    let mut roles = BTreeSet::new();
    if let Some(labels) = node.pointer("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/").filter(|r| !r.is_empty()) {
                roles.insert(role.to_string());
            } else if k == "kubernetes.io/role" {
                if let Some(v) = v.as_str().filter(|v| !v.is_empty()) {
                    roles.insert(v.to_string());
                }
            }
        }
    }
    let roles = if roles.is_empty() { "<none>".to_string() } else { roles.into_iter().collect::<Vec<_>>().join(",") };
    let address = |ty: &str| {
        or_none(
            arr_at(node, "/status/addresses")
                .iter()
                .find(|a| str_at(a, "/type") == ty)
                .map_or("", |a| str_at(a, "/address")),
        )
    };
    let info =
        |field: &str| non_empty(str_at(node, &format!("/status/nodeInfo/{field}"))).unwrap_or("<unknown>").to_string();
    vec![
        name(node).into(),
        status.join(",").into(),
        roles.into(),
        age(node, now).into(),
        str_at(node, "/status/nodeInfo/kubeletVersion").into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        info("osImage").into(),
        info("kernelVersion").into(),
        info("containerRuntimeVersion").into(),
    ]
}
