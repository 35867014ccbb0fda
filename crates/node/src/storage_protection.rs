//! Owns the protection finalizers' release, as kube-controller-manager's pvc-protection
//! and pv-protection controllers: on the leader, every [`EVERY`],
//!
//! - a PersistentVolumeClaim being deleted loses `kubernetes.io/pvc-protection` once no
//!   pod that is bound to a node and has not finished mounts it (by name, or as a pod's
//!   ephemeral volume `<pod>-<volume>`);
//! - a PersistentVolume being deleted loses `kubernetes.io/pv-protection` once it is not
//!   `Bound`.
//!
//! The admission plugin `StorageObjectInUseProtection` adds the finalizers. Each write is
//! on condition of the object's version; one that moved on is looked at again next pass.

use std::time::Duration;

use kuorum_raft::Cluster;
use kuorum_rest::admission::storage_object_in_use_protection::{CLAIM_FINALIZER, VOLUME_FINALIZER};
use kuorum_store::keys::collection_prefix;
use kuorum_store::{Command, Precondition};
use serde_json::Value;

pub const EVERY: Duration = Duration::from_secs(1);

pub async fn run(cluster: Cluster) {
    loop {
        tokio::time::sleep(EVERY).await;
        if cluster.leader() != Some(cluster.node_id()) {
            continue;
        }
        for (key, claim) in held(&cluster, "persistentvolumeclaims", CLAIM_FINALIZER) {
            let namespace = claim.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
            let name = claim.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            let Ok(pods) = cluster.scan(&collection_prefix("", "pods", Some(namespace)), None, usize::MAX) else {
                continue;
            };
            let in_use =
                pods.iter().filter_map(|(_, b)| serde_json::from_slice::<Value>(b).ok()).any(|pod| mounts(&pod, name));
            if !in_use {
                release(&cluster, &key, claim, CLAIM_FINALIZER).await;
            }
        }
        for (key, volume) in held(&cluster, "persistentvolumes", VOLUME_FINALIZER) {
            if volume.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
                release(&cluster, &key, volume, VOLUME_FINALIZER).await;
            }
        }
    }
}

/// The objects of a core resource being deleted that `finalizer` still holds.
fn held(cluster: &Cluster, plural: &str, finalizer: &str) -> Vec<(String, Value)> {
    let Ok(stored) = cluster.scan(&collection_prefix("", plural, None), None, usize::MAX) else { return Vec::new() };
    stored
        .into_iter()
        .filter_map(|(k, b)| serde_json::from_slice::<Value>(&b).ok().map(|v| (k, v)))
        .filter(|(_, o)| o.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()))
        .filter(|(_, o)| {
            let list = o.pointer("/metadata/finalizers").and_then(Value::as_array);
            list.is_some_and(|l| l.iter().any(|f| f == finalizer))
        })
        .collect()
}

/// Whether `pod` keeps the claim `name` in use: bound to a node, not finished, mounting
/// it.
fn mounts(pod: &Value, name: &str) -> bool {
    let bound = pod.pointer("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    let finished = matches!(pod.pointer("/status/phase").and_then(Value::as_str), Some("Succeeded" | "Failed"));
    if !bound || finished {
        return false;
    }
    let pod_name = pod.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    pod.pointer("/spec/volumes").and_then(Value::as_array).into_iter().flatten().any(|v| {
        let claim = v.pointer("/persistentVolumeClaim/claimName").and_then(Value::as_str);
        let volume = v.get("name").and_then(Value::as_str).unwrap_or("");
        claim == Some(name) || (v.get("ephemeral").is_some() && format!("{pod_name}-{volume}") == name)
    })
}

/// Writes `obj` without `finalizer`, on condition of its version; the store removes it
/// when no finalizer is left.
async fn release(cluster: &Cluster, key: &str, mut obj: Value, finalizer: &str) {
    let rv = obj.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
    if let Some(list) = obj.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) {
        list.retain(|f| f != finalizer);
    }
    let cmd = Command::Update {
        key: key.to_string(),
        object: serde_json::to_vec(&obj).unwrap_or_default().into(),
        precondition: Precondition { resource_version: rv, uid: None },
        finalizing: Default::default(),
    };
    match cluster.write(cmd, Duration::from_secs(5)).await {
        Ok(Ok(_)) => tracing::debug!(key, "released {finalizer}"),
        Ok(Err(e)) => tracing::debug!(key, "releasing {finalizer}: {e}"),
        Err(e) => tracing::debug!(key, "releasing {finalizer}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claim_is_in_use_by_running_bound_pods_that_mount_it() {
        let pod = |node: &str, phase: &str, volumes: Value| {
            json!({"metadata": {"name": "web"}, "spec": {"nodeName": node, "volumes": volumes},
                   "status": {"phase": phase}})
        };
        let by_name = json!([{"name": "data", "persistentVolumeClaim": {"claimName": "db"}}]);
        assert!(mounts(&pod("n1", "Running", by_name.clone()), "db"));
        assert!(!mounts(&pod("n1", "Running", by_name.clone()), "other"));
        assert!(!mounts(&pod("", "Pending", by_name.clone()), "db"), "not scheduled");
        assert!(!mounts(&pod("n1", "Succeeded", by_name), "db"), "finished");
        let ephemeral = json!([{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]);
        assert!(mounts(&pod("n1", "Running", ephemeral), "web-scratch"));
    }
}
