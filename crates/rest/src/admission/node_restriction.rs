//! `NodeRestriction`: what a kubelet's credentials (`system:node:<name>` in
//! `system:nodes`) may change, beyond what the Node authorizer lets them reach:
//!
//! - pods: create only mirror pods bound to the node, owned by its Node and referring to
//!   no account, secret, ConfigMap, claim or trust bundle; delete and evict only pods
//!   bound to it; update only the status of pods bound to it, without their labels or
//!   claim statuses; no other subresource;
//! - its own Node only: not created with a `configSource` or with labels outside what a
//!   kubelet may set (`kubernetes.io`/`k8s.io` labels besides the kubelet's own, any
//!   `node-restriction.kubernetes.io` label), not changing its taints or such labels;
//! - claims: only `status.capacity`, `status.conditions` and the allocation fields of a
//!   claim's status;
//! - service-account tokens only bound to a pod bound to the node, by its uid;
//! - Leases only its own in `kube-node-lease`; CSINodes only its own.
//!
//! Requests from anyone else pass. Pods and Nodes are read from this node's cache, as
//! kube's plugin reads its informers.

use kuorum_api::ApiError;
use serde_json::Value;

use super::{cached, Attributes};
use crate::auth::UserInfo;
use crate::node_authz::{self, Ref};
use crate::object::{self, Object};
use crate::target::Target;
use crate::RestState;

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const NODE_LEASES: &str = "kube-node-lease";
const RESTRICTED_LABELS: &str = "node-restriction.kubernetes.io";

/// The labels a kubelet sets on its own Node (kube's `kubeletapis.IsKubeletLabel`).
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
];
const KUBELET_LABEL_DOMAINS: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

/// Which node the request's credentials are, if they are a node's (403 when they are
/// in `system:nodes` but name no node).
fn node<'u>(user: Option<&'u UserInfo>, forbid: impl Fn(&str) -> ApiError) -> Result<Option<&'u str>, ApiError> {
    match user.and_then(node_authz::node_of) {
        None => Ok(None),
        Some("") => {
            let name = user.map_or("", |u| u.name.as_str());
            Err(forbid(&format!("could not determine node from user {name:?}")))
        }
        Some(n) => Ok(Some(n)),
    }
}

/// A create or update (of the resource or a subresource) through [`Attributes`].
pub(crate) fn admit(a: &Attributes, obj: &Object) -> Result<(), ApiError> {
    let forbid = |why: &str| a.forbidden(obj, why);
    let Some(node) = node(a.user, forbid)? else { return Ok(()) };
    let t = a.target;
    if t.custom.is_some() {
        return Ok(());
    }
    let sub = t.subresource.as_deref().unwrap_or("");
    let name = object::meta_str(obj, "name").unwrap_or("");
    match (t.def.group, t.def.plural) {
        ("", "pods") => match (sub, a.old) {
            ("", None) => admit_mirror_pod(a, node, obj),
            ("", Some(_)) => Err(forbid(&format!(
                "unexpected operation \"UPDATE\", node {node:?} can only create and delete mirror pods"
            ))),
            ("status", Some(old)) => {
                if spec_str(old, "nodeName") != node {
                    return Err(forbid(&format!(
                        "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
                    )));
                }
                if meta_field(old, "labels") != meta_field(obj, "labels") {
                    return Err(forbid(&format!("node {node:?} cannot update labels through pod status")));
                }
                let claims = |o: &Object| o.get("status").and_then(|s| s.get("resourceClaimStatuses")).cloned();
                if claims(old) != claims(obj) {
                    return Err(forbid(&format!("node {node:?} cannot update resource claim statues")));
                }
                Ok(())
            }
            _ => Err(forbid(&format!("unexpected pod subresource {sub:?}, only 'status' and 'eviction' are allowed"))),
        },
        ("", "nodes") => admit_node(a, node, obj),
        ("", "persistentvolumeclaims") => match (sub, a.old) {
            ("status", Some(old)) => {
                if without_claim_status(old) != without_claim_status(obj) {
                    return Err(forbid(&format!(
                        "node {node:?} is not allowed to update fields other than status.capacity and status.conditions"
                    )));
                }
                Ok(())
            }
            _ => Err(forbid("may only update PVC status")),
        },
        ("coordination.k8s.io", "leases") => own_lease(a.namespace(), name, node).map_err(|w| forbid(&w)),
        ("storage.k8s.io", "csinodes") if name != node => {
            Err(forbid("can only access CSINode with the same name as the requesting node"))
        }
        _ => Ok(()),
    }
}

/// Whether `user` is a node's credentials, whose writes this plugin restricts.
pub(crate) fn restricts(user: Option<&UserInfo>) -> bool {
    user.and_then(node_authz::node_of).is_some()
}

/// A delete of `existing` (of the resource `t` names) by `user`: a node deletes only pods
/// bound to it, its own Node, Lease and CSINode.
pub(crate) fn admit_delete(user: Option<&UserInfo>, t: &Target, existing: &Object) -> Result<(), ApiError> {
    let name = object::meta_str(existing, "name").unwrap_or("");
    let forbid = |why: &str| ApiError::forbidden(t.def.group_resource(), name, why);
    let Some(node) = node(user, forbid)? else { return Ok(()) };
    if t.custom.is_some() {
        return Ok(());
    }
    match (t.def.group, t.def.plural) {
        ("", "pods") if spec_str(existing, "nodeName") != node => {
            Err(forbid(&format!("node {node:?} can only delete pods with spec.nodeName set to itself")))
        }
        ("", "nodes") if name != node => Err(forbid(&format!("node {node:?} is not allowed to modify node {name:?}"))),
        ("", "persistentvolumeclaims") => Err(forbid("may only update PVC status")),
        ("coordination.k8s.io", "leases") => {
            own_lease(t.namespace.as_deref().unwrap_or(""), name, node).map_err(|w| forbid(&w))
        }
        ("storage.k8s.io", "csinodes") if name != node => {
            Err(forbid("can only access CSINode with the same name as the requesting node"))
        }
        _ => Ok(()),
    }
}

/// An eviction of the pod `t` names: a node evicts only pods bound to it (404 when the
/// pod is not in this node's cache).
pub(crate) fn admit_eviction(st: &RestState, user: Option<&UserInfo>, t: &Target) -> Result<(), ApiError> {
    let gr = t.def.group_resource();
    let forbid = |why: &str| ApiError::forbidden(gr, t.name(), why);
    let Some(node) = node(user, forbid)? else { return Ok(()) };
    let pod = cached(st, "", "pods", t.namespace.as_deref(), t.name())
        .ok_or_else(|| ApiError::not_found(kuorum_api::GroupResource { group: "", resource: "pods" }, t.name()))?;
    if spec_str(&pod, "nodeName") != node {
        return Err(forbid(&format!("node {node} can only evict pods with spec.nodeName set to itself")));
    }
    Ok(())
}

/// A TokenRequest (`spec`) for a service account in `namespace`: a node's must be bound
/// to a pod (by name and uid) bound to the node.
pub(crate) fn admit_token_request(
    st: &RestState,
    user: Option<&UserInfo>,
    t: &Target,
    spec: &serde_json::Map<String, Value>,
) -> Result<(), ApiError> {
    let gr = t.def.group_resource();
    let forbid = |why: &str| ApiError::forbidden(gr, t.name(), why);
    let Some(node) = node(user, forbid)? else { return Ok(()) };
    let field = |f: &str| spec.get("boundObjectRef").and_then(|r| r.get(f)).and_then(Value::as_str).unwrap_or("");
    if field("apiVersion") != "v1" || field("kind") != "Pod" || field("name").is_empty() {
        return Err(forbid("node requested token not bound to a pod"));
    }
    if field("uid").is_empty() {
        return Err(forbid("node requested token with a pod binding without a uid"));
    }
    let pod = cached(st, "", "pods", t.namespace.as_deref(), field("name"))
        .ok_or_else(|| ApiError::not_found(kuorum_api::GroupResource { group: "", resource: "pods" }, field("name")))?;
    let uid = object::meta_str(&pod, "uid").unwrap_or("");
    if field("uid") != uid {
        return Err(forbid(&format!("the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated", field("uid"))));
    }
    if spec_str(&pod, "nodeName") != node {
        return Err(forbid("node requested token bound to a pod scheduled on a different node"));
    }
    Ok(())
}

/// kube's `admitPodCreate`: a mirror pod of this node, owned by its Node, referring to
/// nothing the node could not reach otherwise.
fn admit_mirror_pod(a: &Attributes, node: &str, pod: &Object) -> Result<(), ApiError> {
    let forbid = |why: String| Err(a.forbidden(pod, &why));
    let annotations = meta_field(pod, "annotations");
    if annotations.and_then(|m| m.get(MIRROR_ANNOTATION)).is_none() {
        return forbid(format!(
            "pod does not have {MIRROR_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"
        ));
    }
    if spec_str(pod, "nodeName") != node {
        return forbid(format!("node {node:?} can only create pods with spec.nodeName set to itself"));
    }
    let owners = meta_field(pod, "ownerReferences").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    let owner = match owners {
        [] => return forbid(format!("node {node:?} can only create pods with an owner reference set to itself")),
        [o] => o,
        _ => return forbid(format!("node {node:?} can only create pods with a single owner reference set to itself")),
    };
    let owner_str = |f: &str| owner.get(f).and_then(Value::as_str).unwrap_or("");
    if owner_str("apiVersion") != "v1" || owner_str("kind") != "Node" || owner_str("name") != node {
        return forbid(format!("node {node:?} can only create pods with an owner reference set to itself"));
    }
    if owner.get("controller").and_then(Value::as_bool) != Some(true) {
        return forbid(format!("node {node:?} can only create pods with a controller owner reference set to itself"));
    }
    if owner.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
        return forbid(format!("node {node:?} must not set blockOwnerDeletion on an owner reference"));
    }
    let registered = cached(a.st, "", "nodes", None, node)
        .ok_or_else(|| ApiError::not_found(kuorum_api::GroupResource { group: "", resource: "nodes" }, node))?;
    let uid = object::meta_str(&registered, "uid").unwrap_or("");
    if owner_str("uid") != uid {
        return forbid(format!("node {node} UID mismatch: expected {} got {uid}", owner_str("uid")));
    }
    if !spec_str(pod, "serviceAccountName").is_empty() {
        return forbid(format!("node {node:?} can not create pods that reference a service account"));
    }
    let whole = Value::Object(pod.clone());
    if node_authz::refers_to_any(&whole, Ref::Secret) {
        return forbid(format!("node {node:?} can not create pods that reference secrets"));
    }
    if node_authz::refers_to_any(&whole, Ref::ConfigMap) {
        return forbid(format!("node {node:?} can not create pods that reference configmaps"));
    }
    let volumes = pod.get("spec").and_then(|s| s.get("volumes")).and_then(Value::as_array).into_iter().flatten();
    for v in volumes.clone() {
        let sources = v.pointer("/projected/sources").and_then(Value::as_array).into_iter().flatten();
        if sources.clone().any(|s| s.get("clusterTrustBundle").is_some()) {
            return forbid(format!("node {node:?} can not create pods that reference clustertrustbundles"));
        }
    }
    if volumes.clone().any(|v| v.get("persistentVolumeClaim").is_some()) {
        return forbid(format!("node {node:?} can not create pods that reference persistentvolumeclaims"));
    }
    Ok(())
}

/// kube's `admitNode`: only its own Node; no config source; only a kubelet's labels;
/// taints left alone.
fn admit_node(a: &Attributes, node: &str, obj: &Object) -> Result<(), ApiError> {
    let forbid = |why: String| Err(a.forbidden(obj, &why));
    let name = object::meta_str(obj, "name").unwrap_or("");
    if name != node {
        return forbid(format!("node {node:?} is not allowed to modify node {name:?}"));
    }
    let spec = |o: &Object, f: &str| o.get("spec").and_then(|s| s.get(f)).filter(|v| !v.is_null()).cloned();
    let labels = |o: Option<&Object>| {
        o.and_then(|o| meta_field(o, "labels")).and_then(Value::as_object).cloned().unwrap_or_default()
    };
    let forbidden = forbidden_labels(&labels(Some(obj)), &labels(a.old));
    match a.old {
        None => {
            if spec(obj, "configSource").is_some() {
                return forbid(format!("node {node:?} is not allowed to create pods with a non-nil configSource"));
            }
            if !forbidden.is_empty() {
                return forbid(format!(
                    "node {node:?} is not allowed to set the following labels: {}",
                    forbidden.join(", ")
                ));
            }
        }
        Some(old) => {
            let source = spec(obj, "configSource");
            if source.is_some() && source != spec(old, "configSource") {
                return forbid(format!(
                    "node {node:?} is not allowed to update configSource to a new non-nil configSource"
                ));
            }
            let taints = |o: &Object| spec(o, "taints").filter(|t| t.as_array().is_none_or(|l| !l.is_empty()));
            if taints(obj) != taints(old) {
                return forbid(format!("node {node:?} is not allowed to modify taints"));
            }
            if !forbidden.is_empty() {
                return forbid(format!("is not allowed to modify labels: {}", forbidden.join(", ")));
            }
        }
    }
    Ok(())
}

/// The labels changed between `new` and `old` that a kubelet may not set, sorted.
fn forbidden_labels(new: &serde_json::Map<String, Value>, old: &serde_json::Map<String, Value>) -> Vec<String> {
    let changed = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(v))
        .chain(old.iter().filter(|(k, v)| new.get(*k) != Some(v)))
        .map(|(k, _)| k.as_str());
    let mut out: Vec<String> = changed.filter(|k| !kubelet_may_set(k)).map(str::to_string).collect();
    out.sort();
    out.dedup();
    out
}

fn kubelet_may_set(label: &str) -> bool {
    let Some((domain, _)) = label.split_once('/') else { return true };
    let within = |d: &str, of: &str| d == of || d.ends_with(&format!(".{of}"));
    if within(domain, RESTRICTED_LABELS) {
        return false;
    }
    let kubernetes = within(domain, "kubernetes.io") || within(domain, "k8s.io");
    !kubernetes || KUBELET_LABELS.contains(&label) || KUBELET_LABEL_DOMAINS.iter().any(|d| within(domain, d))
}

fn own_lease(namespace: &str, name: &str, node: &str) -> Result<(), String> {
    if namespace != NODE_LEASES {
        return Err(format!("can only access leases in the {NODE_LEASES:?} system namespace"));
    }
    if name != node {
        return Err("can only access node lease with the same name as the requesting node".into());
    }
    Ok(())
}

/// A claim without what a node may change of it (kube's `admitPVCStatus` comparison).
fn without_claim_status(claim: &Object) -> Object {
    let mut c = claim.clone();
    let meta = object::meta_mut(&mut c);
    meta.remove("resourceVersion");
    meta.remove("managedFields");
    if let Some(status) = c.get_mut("status").and_then(Value::as_object_mut) {
        for f in ["capacity", "conditions", "allocatedResourceStatuses", "allocatedResources"] {
            status.remove(f);
        }
    }
    c
}

fn spec_str<'a>(obj: &'a Object, field: &str) -> &'a str {
    obj.get("spec").and_then(|s| s.get(field)).and_then(Value::as_str).unwrap_or("")
}

fn meta_field<'a>(obj: &'a Object, field: &str) -> Option<&'a Value> {
    object::meta(obj).and_then(|m| m.get(field)).filter(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_kubelet_sets_only_its_own_labels() {
        let old = labels(json!({"kubernetes.io/hostname": "n1", "team": "a"}));
        let new = labels(json!({
            "kubernetes.io/hostname": "n1", "team": "b", "topology.kubernetes.io/zone": "z",
            "node.kubernetes.io/exclude-from-external-load-balancers": "",
            "x.kubelet.kubernetes.io/y": "1",
            "node-role.kubernetes.io/control-plane": "",
            "node-restriction.kubernetes.io/pool": "gold",
            "a.node-restriction.kubernetes.io/b": "c",
            "example.k8s.io/x": "y"
        }));
        assert_eq!(
            forbidden_labels(&new, &old),
            [
                "a.node-restriction.kubernetes.io/b",
                "example.k8s.io/x",
                "node-restriction.kubernetes.io/pool",
                "node-role.kubernetes.io/control-plane"
            ]
        );
        // Removing a label is a change too.
        let gone = labels(json!({"kubernetes.io/hostname": "n1"}));
        let had = labels(json!({"kubernetes.io/hostname": "n1", "node-role.kubernetes.io/worker": ""}));
        assert_eq!(forbidden_labels(&gone, &had), ["node-role.kubernetes.io/worker"]);
        assert!(forbidden_labels(&had, &had).is_empty());
    }

    #[test]
    fn a_node_reaches_only_its_own_lease() {
        assert!(own_lease("kube-node-lease", "n1", "n1").is_ok());
        assert!(own_lease("default", "n1", "n1").unwrap_err().contains("kube-node-lease"));
        assert!(own_lease("kube-node-lease", "n2", "n1").unwrap_err().contains("same name"));
    }

    #[test]
    fn a_claim_status_may_change_only_in_capacity_and_conditions() {
        let old = json!({"metadata": {"name": "c", "resourceVersion": "1"}, "spec": {"volumeName": "v"},
                         "status": {"phase": "Bound"}});
        let grown = json!({"metadata": {"name": "c", "resourceVersion": "2"}, "spec": {"volumeName": "v"},
                           "status": {"phase": "Bound", "capacity": {"storage": "2Gi"}, "conditions": []}});
        let moved = json!({"metadata": {"name": "c"}, "spec": {"volumeName": "v"}, "status": {"phase": "Lost"}});
        let o = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(without_claim_status(&o(old.clone())), without_claim_status(&o(grown)));
        assert_ne!(without_claim_status(&o(old)), without_claim_status(&o(moved)));
    }
}
