//! What every Kubernetes cluster has from the start: the system namespaces (with
//! `kube-node-lease`, where kubelets keep their heartbeats), the two system
//! PriorityClasses, and the default roles and bindings of kube-apiserver's bootstrap
//! policy ([`policy`]). Whichever
//! node leads creates them; a create that meets an existing object is done too, so every
//! node may try. An object an administrator changed or deleted later is left as it is
//! once it existed (kube-apiserver reconciles its roles at each start; kuorum does not).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuorum_api::bootstrap_policy as policy;
use kuorum_api::registry::RBAC_GROUP;
use kuorum_api::seams::{new_uid, Clock, Entropy};
use kuorum_raft::Cluster;
use kuorum_store::keys::{namespace_key, ObjectKey};
use kuorum_store::{Command, WriteError};
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

/// Creates the system namespaces, then the bootstrap roles and bindings.
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
    for (resource, object) in policy::cluster_roles().into_iter().chain(policy::cluster_role_bindings()) {
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let key = ObjectKey { group: RBAC_GROUP, resource, namespace: None, name: &name }.encode();
        ensure(&cluster, clock.as_ref(), entropy.as_ref(), key, object).await;
    }
}

/// Creates the cluster-scoped `object` at `key` unless it exists, retrying until it does.
async fn ensure(cluster: &Cluster, clock: &dyn Clock, entropy: &dyn Entropy, key: String, mut object: Value) {
    loop {
        if matches!(cluster.get(&key), Ok(Some(_))) {
            return;
        }
        if cluster.leader() != Some(cluster.node_id()) {
            // Followers wait: the leader creates it, and it arrives by replication.
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        object["metadata"]["uid"] = json!(new_uid(entropy));
        object["metadata"]["creationTimestamp"] = json!(clock.now_rfc3339());
        let cmd = Command::Create {
            key: key.clone(),
            namespace: None,
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
