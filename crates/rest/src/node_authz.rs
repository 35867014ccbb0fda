//! Owns kube's Node authorizer (`--authorization-mode=Node,RBAC`): what a kubelet's
//! credentials (`system:node:<name>` in `system:nodes`) may do, asked before RBAC.
//!
//! - Secrets and ConfigMaps may be read (get, list and watch by name) only when a pod
//!   bound to the node refers to them (volumes, projected sources, env, envFrom, image
//!   pull secrets); PersistentVolumeClaims got when such a pod mounts them, and
//!   PersistentVolumes when such a claim is bound to them; a ServiceAccount's token
//!   created for the account such a pod runs as; VolumeAttachments got for the node.
//!   Otherwise: no opinion, with kube's reason (`no relationship found between node 'n1'
//!   and this object`).
//! - Leases only in `kube-node-lease`, under the node's own name (create: any); CSINodes
//!   under the node's own name.
//! - Everything else as the `system:node` ClusterRole's rules (kube's `NodeRules`), fixed
//!   whatever that role says in the store.
//!
//! The relationships are looked up in the node's watch cache on each request (kube keeps
//! a graph): the cost is the pods of one namespace (of every namespace, for a
//! PersistentVolume).

use std::sync::LazyLock;

use kuorum_api::rbac::{Attributes, PolicyRule};
use kuorum_store::keys::ObjectKey;
use kuorum_watch::WatchCache;
use serde_json::Value;

use crate::auth::UserInfo;

const NODES_GROUP: &str = "system:nodes";
const NODE_PREFIX: &str = "system:node:";
const NODE_LEASES: &str = "kube-node-lease";

/// What the Node authorizer says of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Allow,
    /// Not the authorizer's to allow; why, when it has something to say.
    NoOpinion(String),
}

/// kube's `NodeRules`: the `system:node` ClusterRole of the bootstrap policy.
static NODE_RULES: LazyLock<Vec<PolicyRule>> = LazyLock::new(|| {
    kuorum_api::bootstrap_policy::cluster_roles()
        .into_iter()
        .find(|(_, r)| r["metadata"]["name"] == "system:node")
        .map(|(_, r)| PolicyRule::of_role(&r))
        .unwrap_or_default()
});

/// The node a user's credentials are, if they are a node's.
pub(crate) fn node_of(user: &UserInfo) -> Option<&str> {
    if !user.groups.iter().any(|g| g == NODES_GROUP) {
        return None;
    }
    user.name.strip_prefix(NODE_PREFIX)
}

pub(crate) fn decide(cache: &WatchCache, user: &UserInfo, attrs: &Attributes) -> Decision {
    let Some(node) = node_of(user) else { return Decision::NoOpinion(String::new()) };
    if node.is_empty() {
        return Decision::NoOpinion(format!("unknown node for user {:?}", user.name));
    }
    if attrs.resource_request {
        let sub = attrs.subresource.as_str();
        match (attrs.api_group.as_str(), attrs.resource.as_str()) {
            ("", "secrets") => return read_namespaced(cache, node, attrs, Ref::Secret),
            ("", "configmaps") => return read_namespaced(cache, node, attrs, Ref::ConfigMap),
            ("", "persistentvolumeclaims") if sub.is_empty() => return get(cache, node, attrs, Ref::Claim),
            ("", "persistentvolumes") => return get(cache, node, attrs, Ref::Volume),
            ("storage.k8s.io", "volumeattachments") => return get(cache, node, attrs, Ref::Attachment),
            ("", "serviceaccounts") => {
                if attrs.verb != "create" || attrs.name.is_empty() {
                    return no("can only create tokens for individual service accounts");
                }
                if sub != "token" {
                    return no("can only create token subresource of serviceaccount");
                }
                return related(cache, node, attrs, Ref::Account);
            }
            ("coordination.k8s.io", "leases") => {
                if !matches!(attrs.verb.as_str(), "get" | "create" | "update" | "patch" | "delete") {
                    return no("can only get, create, update, patch, or delete a node lease");
                }
                if attrs.namespace != NODE_LEASES {
                    return no(&format!("can only access leases in the {NODE_LEASES:?} system namespace"));
                }
                if attrs.verb != "create" && attrs.name != node {
                    return no("can only access node lease with the same name as the requesting node");
                }
                return Decision::Allow;
            }
            ("storage.k8s.io", "csinodes") => {
                if !matches!(attrs.verb.as_str(), "get" | "create" | "update" | "patch" | "delete") {
                    return no("can only get, create, update, patch, or delete a CSINode");
                }
                if attrs.verb != "create" && attrs.name != node {
                    return no("can only access CSINode with the same name as the requesting node");
                }
                return Decision::Allow;
            }
            _ => {}
        }
    }
    if NODE_RULES.iter().any(|r| r.allows(attrs)) {
        Decision::Allow
    } else {
        Decision::NoOpinion(String::new())
    }
}

fn no(why: &str) -> Decision {
    Decision::NoOpinion(why.to_string())
}

/// What a node may reach from its pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ref {
    Secret,
    ConfigMap,
    Claim,
    Volume,
    Account,
    Attachment,
}

/// kube's `authorizeReadNamespacedObject`.
fn read_namespaced(cache: &WatchCache, node: &str, attrs: &Attributes, kind: Ref) -> Decision {
    if !matches!(attrs.verb.as_str(), "get" | "list" | "watch") {
        return no("can only read resources of this type");
    }
    if !attrs.subresource.is_empty() {
        return no("cannot read subresource");
    }
    if attrs.namespace.is_empty() {
        return no("can only read namespaced object of this type");
    }
    related(cache, node, attrs, kind)
}

/// kube's `authorizeGet`.
fn get(cache: &WatchCache, node: &str, attrs: &Attributes, kind: Ref) -> Decision {
    if attrs.verb != "get" {
        return no("can only get individual resources of this type");
    }
    if !attrs.subresource.is_empty() {
        return no("cannot get subresource");
    }
    related(cache, node, attrs, kind)
}

/// kube's `authorize`: a path from the node to the named object.
fn related(cache: &WatchCache, node: &str, attrs: &Attributes, kind: Ref) -> Decision {
    if attrs.name.is_empty() {
        return no("No Object name found");
    }
    let found = match kind {
        Ref::Volume => {
            // A claim one of the node's pods mounts, bound to this volume.
            pods_on(cache, node, None).iter().any(|pod| {
                let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
                claims_of(pod).iter().any(|claim| {
                    let key =
                        ObjectKey { group: "", resource: "persistentvolumeclaims", namespace: Some(ns), name: claim }
                            .encode();
                    let bound = cache.get(&key).1.and_then(|o| o.value().cloned());
                    bound.and_then(|c| c.pointer("/spec/volumeName").and_then(Value::as_str).map(str::to_string))
                        == Some(attrs.name.clone())
                })
            })
        }
        Ref::Attachment => {
            let key = ObjectKey {
                group: "storage.k8s.io",
                resource: "volumeattachments",
                namespace: None,
                name: &attrs.name,
            }
            .encode();
            let va = cache.get(&key).1.and_then(|o| o.value().cloned());
            va.is_some_and(|v| v.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node))
        }
        _ => pods_on(cache, node, Some(&attrs.namespace)).iter().any(|pod| refers(pod, kind, &attrs.name)),
    };
    if found {
        Decision::Allow
    } else {
        Decision::NoOpinion(format!("no relationship found between node '{node}' and this object"))
    }
}

/// The pods bound to `node`, in `namespace` (every namespace when `None`).
fn pods_on(cache: &WatchCache, node: &str, namespace: Option<&str>) -> Vec<Value> {
    crate::admission::cached_list(cache, "", "pods", namespace)
        .into_iter()
        .map(Value::Object)
        .filter(|p| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node))
        .collect()
}

/// The claims a pod mounts: its `persistentVolumeClaim` volumes and the claims of its
/// ephemeral volumes (`<pod>-<volume>`).
fn claims_of(pod: &Value) -> Vec<String> {
    let name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    volumes(pod)
        .filter_map(|v| {
            if let Some(c) = v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str) {
                return Some(c.to_string());
            }
            let volume = v.get("name").and_then(Value::as_str).unwrap_or("");
            v.get("ephemeral").map(|_| format!("{name}-{volume}"))
        })
        .collect()
}

fn volumes(pod: &Value) -> impl Iterator<Item = &Value> {
    pod.pointer("/spec/volumes").and_then(Value::as_array).into_iter().flatten()
}

fn containers(pod: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .filter_map(|f| pod.get("spec").and_then(|s| s.get(f)).and_then(Value::as_array))
        .flatten()
}

/// Whether `pod` refers to the object `name` of `kind` (in its own namespace).
fn refers(pod: &Value, kind: Ref, name: &str) -> bool {
    refers_where(pod, kind, &|n| n == name)
}

/// Whether `pod` refers to any object of `kind` (NodeRestriction's mirror pods may not).
pub(crate) fn refers_to_any(pod: &Value, kind: Ref) -> bool {
    refers_where(pod, kind, &|_| true)
}

/// Whether `pod` refers to an object of `kind` whose name `wanted` accepts.
fn refers_where(pod: &Value, kind: Ref, wanted: &dyn Fn(&str) -> bool) -> bool {
    let is = |v: Option<&Value>| v.and_then(Value::as_str).is_some_and(wanted);
    match kind {
        Ref::Account => {
            let account = pod.pointer("/spec/serviceAccountName").and_then(Value::as_str).unwrap_or("default");
            wanted(account)
        }
        Ref::Claim => claims_of(pod).iter().any(|c| wanted(c)),
        Ref::Secret => {
            volumes(pod).any(|v| {
                is(v.pointer("/secret/secretName"))
                    || is(v.pointer("/csi/nodePublishSecretRef/name"))
                    || projected(v).any(|s| is(s.pointer("/secret/name")))
            }) || pod
                .pointer("/spec/imagePullSecrets")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|s| is(s.get("name")))
                || containers(pod).any(|c| env_refers(c, "secretRef", "secretKeyRef", wanted))
        }
        Ref::ConfigMap => {
            volumes(pod)
                .any(|v| is(v.pointer("/configMap/name")) || projected(v).any(|s| is(s.pointer("/configMap/name"))))
                || containers(pod).any(|c| env_refers(c, "configMapRef", "configMapKeyRef", wanted))
        }
        Ref::Volume | Ref::Attachment => false,
    }
}

fn projected(volume: &Value) -> impl Iterator<Item = &Value> {
    volume.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten()
}

/// A container's `envFrom[].<from>` or `env[].valueFrom.<key>` names an object `wanted`
/// accepts.
fn env_refers(c: &Value, from: &str, key: &str, wanted: &dyn Fn(&str) -> bool) -> bool {
    let list = |f: &str| c.get(f).and_then(Value::as_array).into_iter().flatten();
    list("envFrom").any(|e| e.get(from).and_then(|r| r.get("name")).and_then(Value::as_str).is_some_and(wanted))
        || list("env").any(|e| e.pointer(&format!("/valueFrom/{key}/name")).and_then(Value::as_str).is_some_and(wanted))
}
