//! What every Kubernetes cluster has from the start: the system namespaces (with
//! `kube-node-lease`, where kubelets keep their heartbeats), the two system
//! PriorityClasses, and the roles and bindings of kube-apiserver's bootstrap policy
//! ([`policy`]). Whichever node leads creates them; a create that meets an existing
//! object is done too, so every node may try. At every start the roles and bindings are
//! reconciled as kube-apiserver does: one that was deleted is made again, and what a
//! stored one lacks of the policy is added back (what it has more is kept; one annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` is left alone). So is the
//! default API Priority and Fairness configuration ([`flowcontrol`]): a mandatory object's
//! spec is put back, a suggested one's while it is annotated for auto-update, and an
//! annotated one kube no longer ships is deleted. A namespace or PriorityClass an
//! administrator changed is left as it is.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuorum_api::bootstrap_flowcontrol as flowcontrol;
use kuorum_api::bootstrap_policy as policy;
use kuorum_api::registry::RBAC_GROUP;
use kuorum_api::seams::{new_uid, Clock, Entropy};
use kuorum_raft::Cluster;
use kuorum_store::keys::{collection_prefix, namespace_key, ObjectKey};
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::{json, Value};

pub const SYSTEM_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// kube's system PriorityClasses: (name, value, description).
const SYSTEM_PRIORITY_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The start hook `/readyz` waits for until [`ensure_bootstrap_objects`] is done on this
/// node (kube's `poststarthook/rbac/bootstrap-roles`).
pub const ROLES_HOOK: &str = "rbac/bootstrap-roles";

/// Creates the system namespaces, then the bootstrap roles and bindings, then the default
/// priority levels and flow schemas.
pub async fn ensure_bootstrap_objects(cluster: Cluster, clock: Arc<dyn Clock>, entropy: Arc<dyn Entropy>) {
    for name in SYSTEM_NAMESPACES {
        let object = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        });
        ensure(&cluster, clock.as_ref(), entropy.as_ref(), namespace_key(name), object).await;
    }
    for (name, value, description) in SYSTEM_PRIORITY_CLASSES {
        let object = json!({
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": description,
            "preemptionPolicy": "PreemptLowerPriority",
        });
        let key = ObjectKey { group: "scheduling.k8s.io", resource: "priorityclasses", namespace: None, name }.encode();
        ensure(&cluster, clock.as_ref(), entropy.as_ref(), key, object).await;
    }
    // `admin`, `edit` and `view` are made with their rules already aggregated, so they
    // grant from the start; the aggregation controller keeps them current after.
    let aggregated: std::collections::BTreeMap<String, Value> = policy::cluster_roles_aggregated()
        .into_iter()
        .map(|(_, r)| (r["metadata"]["name"].as_str().unwrap_or_default().to_string(), r))
        .collect();
    for b in policy::policy() {
        let name = b.object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let namespace = b.namespace.as_deref();
        let key = ObjectKey { group: RBAC_GROUP, resource: b.resource, namespace, name: &name }.encode();
        let made = match (b.resource, aggregated.get(&name)) {
            ("clusterroles", Some(role)) => role.clone(),
            _ => b.object.clone(),
        };
        ensure_in(&cluster, clock.as_ref(), entropy.as_ref(), key.clone(), namespace, made).await;
        reconcile(&cluster, &key, |stored| policy::reconcile(stored, &b.object)).await;
    }
    for b in flowcontrol::configuration() {
        let name = b.object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let key = ObjectKey { group: flowcontrol::GROUP, resource: b.resource, namespace: None, name: &name }.encode();
        ensure(&cluster, clock.as_ref(), entropy.as_ref(), key.clone(), b.object.clone()).await;
        reconcile(&cluster, &key, |stored| flowcontrol::reconcile(stored, &b.object, b.mandatory)).await;
    }
    for resource in ["flowschemas", "prioritylevelconfigurations"] {
        remove_unwanted(&cluster, clock.as_ref(), resource).await;
    }
}

/// kube's cluster authentication trust controller: the ConfigMap
/// `kube-system/extension-apiserver-authentication` holds `data` (the client CA, the
/// front-proxy CA and its header names), where extension API servers (metrics-server)
/// read whom to trust. As kube merges what each API server publishes, the leader adds its
/// values to the stored ones: certificates and list items it lacks are appended.
pub async fn ensure_authentication_info(
    cluster: Cluster,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    data: std::collections::BTreeMap<String, String>,
) {
    const NAME: &str = "extension-apiserver-authentication";
    let key = ObjectKey { group: "", resource: "configmaps", namespace: Some("kube-system"), name: NAME }.encode();
    let object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": "kube-system"},
        "data": data,
    });
    ensure_in(&cluster, clock.as_ref(), entropy.as_ref(), key.clone(), Some("kube-system"), object).await;
    reconcile(&cluster, &key, |stored| {
        let mut merged = stored.clone();
        for (k, v) in &data {
            let old = stored.pointer(&format!("/data/{k}")).and_then(Value::as_str).unwrap_or("");
            merged["data"][k] = json!(merge_authentication_value(k, old, v));
        }
        (&merged != stored).then_some(merged)
    })
    .await;
}

/// `ours` added to the `stored` value of key `k`: PEM bundles by certificate, JSON lists
/// by item, anything else replaced.
fn merge_authentication_value(k: &str, stored: &str, ours: &str) -> String {
    if k.ends_with("-ca-file") {
        let blocks = |s: &str| -> Vec<String> {
            s.split_inclusive("-----END CERTIFICATE-----")
                .map(str::trim)
                .filter(|b| b.contains("-----BEGIN CERTIFICATE-----"))
                .map(str::to_string)
                .collect()
        };
        let mut all = blocks(stored);
        for b in blocks(ours) {
            if !all.contains(&b) {
                all.push(b);
            }
        }
        return all.iter().map(|b| format!("{b}\n")).collect();
    }
    match (serde_json::from_str::<Vec<String>>(stored), serde_json::from_str::<Vec<String>>(ours)) {
        (Ok(mut all), Ok(ours)) => {
            for v in ours {
                if !all.contains(&v) {
                    all.push(v);
                }
            }
            serde_json::to_string(&all).unwrap_or_default()
        }
        _ => ours.to_string(),
    }
}

/// Deletes the flow-control objects of `resource` kube no longer ships that are annotated
/// for auto-update (on the leader).
async fn remove_unwanted(cluster: &Cluster, clock: &dyn Clock, resource: &str) {
    if cluster.leader() != Some(cluster.node_id()) {
        return;
    }
    let Ok(stored) = cluster.scan(&collection_prefix(flowcontrol::GROUP, resource, None), None, usize::MAX) else {
        return;
    };
    for (key, bytes) in stored {
        let Ok(obj) = serde_json::from_slice::<Value>(&bytes) else { continue };
        if !flowcontrol::unwanted(&obj, resource) {
            continue;
        }
        let uid = obj.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_string);
        let cmd = Command::Delete {
            key: key.clone(),
            precondition: Precondition { resource_version: None, uid },
            deletion_timestamp: Some(clock.now_rfc3339()),
            finalizing: Default::default(),
        };
        match cluster.write(cmd, Duration::from_secs(5)).await {
            Ok(Ok(_)) => tracing::info!("removed {key}, no longer in the default flow-control configuration"),
            Ok(Err(e)) => tracing::debug!("removing {key}: {e}"),
            Err(e) => tracing::debug!("removing {key}: {e}"),
        }
    }
}

/// kube's start-up reconciliation of one bootstrap object (on the leader): `reconciled`
/// gives what to write in place of the stored object, if anything.
async fn reconcile(cluster: &Cluster, key: &str, reconciled: impl Fn(&Value) -> Option<Value>) {
    for _ in 0..5 {
        if cluster.leader() != Some(cluster.node_id()) {
            return;
        }
        let Ok(Some(bytes)) = cluster.get(key) else { return };
        let Ok(stored) = serde_json::from_slice::<Value>(&bytes) else { return };
        let Some(updated) = reconciled(&stored) else { return };
        let rv = stored.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
        let cmd = Command::Update {
            key: key.to_string(),
            object: Bytes::from(serde_json::to_vec(&updated).expect("json")),
            precondition: Precondition { resource_version: rv, uid: None },
            finalizing: Default::default(),
        };
        match cluster.write(cmd, Duration::from_secs(5)).await {
            Ok(Ok(_)) => {
                tracing::info!("reconciled the bootstrap {key}");
                return;
            }
            Ok(Err(WriteError::Conflict)) => continue,
            Ok(Err(e)) => return tracing::warn!("reconciling {key}: {e}"),
            Err(e) => return tracing::debug!("reconciling {key}: {e}"),
        }
    }
}

/// Creates the cluster-scoped `object` at `key` unless it exists, retrying until it does.
async fn ensure(cluster: &Cluster, clock: &dyn Clock, entropy: &dyn Entropy, key: String, object: Value) {
    ensure_in(cluster, clock, entropy, key, None, object).await
}

/// How many times (200 ms apart) a follower looks for a bootstrap object before it
/// creates it itself.
const FOLLOWER_WAITS: u32 = 25;

/// Creates `object` at `key` (in `namespace`) unless it exists, retrying until it does.
async fn ensure_in(
    cluster: &Cluster,
    clock: &dyn Clock,
    entropy: &dyn Entropy,
    key: String,
    namespace: Option<&str>,
    mut object: Value,
) {
    // Followers first wait for the leader's create to arrive by replication; one still
    // missing after that (deleted since the leader started) they create themselves, or
    // this node would never be ready.
    let mut follower_waits = 0;
    loop {
        if matches!(cluster.get(&key), Ok(Some(_))) {
            return;
        }
        if cluster.leader() != Some(cluster.node_id()) && follower_waits < FOLLOWER_WAITS {
            follower_waits += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        object["metadata"]["uid"] = json!(new_uid(entropy));
        object["metadata"]["creationTimestamp"] = json!(clock.now_rfc3339());
        let cmd = Command::Create {
            key: key.clone(),
            namespace: namespace.map(str::to_string),
            object: Bytes::from(serde_json::to_vec(&object).expect("json")),
        };
        match cluster.write(cmd, Duration::from_secs(5)).await {
            Ok(Ok(_)) | Ok(Err(WriteError::AlreadyExists)) => return,
            Ok(Err(e)) => tracing::warn!("creating {key}: {e}"),
            Err(e) => tracing::debug!("creating {key}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authentication_info_merges_certificates_and_lists() {
        let a = "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n";
        let b = "-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n";
        assert_eq!(merge_authentication_value("client-ca-file", "", a), a);
        assert_eq!(merge_authentication_value("client-ca-file", a, a), a, "a certificate once");
        assert_eq!(merge_authentication_value("requestheader-client-ca-file", a, b), format!("{a}{b}"));
        let names =
            merge_authentication_value("requestheader-allowed-names", r#"["front-proxy-client"]"#, r#"["kuorum"]"#);
        assert_eq!(names, r#"["front-proxy-client","kuorum"]"#);
        let headers = merge_authentication_value("requestheader-username-headers", "", r#"["X-Remote-User"]"#);
        assert_eq!(headers, r#"["X-Remote-User"]"#);
    }
}
