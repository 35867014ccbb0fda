//! The namespaces every Kubernetes cluster has from the start. Whichever node leads
//! creates them; a create that meets an existing one is done too, so every node may try.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuorum_api::seams::{new_uid, Clock, Entropy};
use kuorum_raft::Cluster;
use kuorum_store::keys::namespace_key;
use kuorum_store::{Command, WriteError};
use serde_json::json;

pub const SYSTEM_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

pub async fn ensure_system_namespaces(cluster: Cluster, clock: Arc<dyn Clock>, entropy: Arc<dyn Entropy>) {
    for name in SYSTEM_NAMESPACES {
        loop {
            if matches!(cluster.get(&namespace_key(name)), Ok(Some(_))) {
                break;
            }
            if cluster.leader() != Some(cluster.node_id()) {
                // Followers wait: the leader creates them, and they arrive by replication.
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            let object = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": name,
                    "uid": new_uid(entropy.as_ref()),
                    "creationTimestamp": clock.now_rfc3339(),
                    "labels": {"kubernetes.io/metadata.name": name},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            });
            let cmd = Command::Create {
                key: namespace_key(name),
                namespace: None,
                object: Bytes::from(serde_json::to_vec(&object).expect("json")),
            };
            match cluster.write(cmd, Duration::from_secs(5)).await {
                Ok(Ok(_)) | Ok(Err(WriteError::AlreadyExists)) => break,
                Ok(Err(e)) => tracing::warn!("creating namespace {name}: {e}"),
                Err(e) => tracing::debug!("creating namespace {name}: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
