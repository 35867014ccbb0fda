//! The namespace lifecycle, which kube-controller-manager runs beside kube-apiserver and
//! kuorum runs inside the leader: a namespace marked for deletion (Terminating) has every
//! object in it deleted (of the built-in kinds and of every namespaced custom resource),
//! one log entry each, and then its `kubernetes` finalizer removed, at which point apply
//! removes the namespace itself.

use std::time::Duration;

use bytes::Bytes;
use kuorum_api::crd::{self, CustomResourceDefinition};
use kuorum_api::registry::resources;
use kuorum_api::seams::Clock;
use kuorum_raft::Cluster;
use kuorum_store::keys::collection_prefix;
use kuorum_store::{Command, Finalizing, Precondition};
use serde_json::Value;
use std::sync::Arc;

const PERIOD: Duration = Duration::from_millis(500);
const WRITE_DEADLINE: Duration = Duration::from_secs(10);

pub async fn run(cluster: Cluster, clock: Arc<dyn Clock>) {
    loop {
        tokio::time::sleep(PERIOD).await;
        if cluster.leader() != Some(cluster.node_id()) {
            continue;
        }
        let Ok(namespaces) = cluster.scan(&collection_prefix("", "namespaces", None), None, usize::MAX) else {
            continue;
        };
        for (key, bytes) in namespaces {
            let Ok(ns) = serde_json::from_slice::<Value>(&bytes) else { continue };
            if ns["metadata"].get("deletionTimestamp").is_none() {
                continue;
            }
            let Some(name) = ns["metadata"]["name"].as_str() else { continue };
            if let Err(e) = finalize(&cluster, clock.as_ref(), &key, name, ns.clone()).await {
                tracing::debug!("namespace {name}: {e}");
            }
        }
    }
}

/// The (group, resource) of every namespaced collection: the built-in ones and those of
/// the CustomResourceDefinitions this node has.
fn namespaced_collections(cluster: &Cluster) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> =
        resources().iter().filter(|d| d.namespaced()).map(|d| (d.group.to_string(), d.plural.to_string())).collect();
    let crds =
        cluster.scan(&collection_prefix(crd::GROUP, crd::PLURAL, None), None, usize::MAX).map_err(|e| e.to_string())?;
    for (_, bytes) in crds {
        let Some(c) = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| CustomResourceDefinition::parse(&v))
        else {
            continue;
        };
        if c.scope == kuorum_api::Scope::Namespaced {
            out.push((c.group, c.names.plural));
        }
    }
    Ok(out)
}

/// What holds back the deletion of `obj`, as its kind's strategy says (the store applies
/// it without knowing kinds).
fn finalizing_of(obj: &Value) -> Finalizing {
    let text = |k: &str| obj[k].as_str().unwrap_or_default();
    kuorum_api::registry::lookup_kind(text("apiVersion"), text("kind"))
        .and_then(kuorum_api::kinds::of)
        .map(|s| s.finalizing())
        .unwrap_or_default()
}

/// One pass over a terminating namespace: delete what is in it; once it is empty, drop
/// its `kubernetes` finalizer.
async fn finalize(cluster: &Cluster, clock: &dyn Clock, key: &str, name: &str, mut ns: Value) -> Result<(), String> {
    let mut remaining = 0;
    for (group, plural) in namespaced_collections(cluster)? {
        let prefix = collection_prefix(&group, &plural, Some(name));
        let objects = cluster.scan(&prefix, None, usize::MAX).map_err(|e| e.to_string())?;
        for (okey, obj) in objects {
            remaining += 1;
            let obj = serde_json::from_slice::<Value>(&obj).unwrap_or(Value::Null);
            if obj["metadata"].get("deletionTimestamp").is_some() {
                // Held by its own finalizers; whoever owns them will release it.
                continue;
            }
            let cmd = Command::Delete {
                key: okey,
                precondition: Precondition::default(),
                deletion_timestamp: Some(clock.now_rfc3339()),
                finalizing: finalizing_of(&obj),
            };
            cluster.write(cmd, WRITE_DEADLINE).await.map_err(|e| e.to_string())?.ok();
        }
    }
    if remaining > 0 {
        return Ok(());
    }
    let Some(finalizers) = ns.get_mut("spec").and_then(|s| s.get_mut("finalizers")).and_then(Value::as_array_mut)
    else {
        return Ok(());
    };
    finalizers.retain(|f| f != "kubernetes");
    let rv = ns["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok());
    let cmd = Command::Update {
        key: key.to_string(),
        object: Bytes::from(serde_json::to_vec(&ns).map_err(|e| e.to_string())?),
        precondition: Precondition { resource_version: rv, uid: None },
        finalizing: finalizing_of(&ns),
    };
    cluster.write(cmd, WRITE_DEADLINE).await.map_err(|e| e.to_string())?.ok();
    Ok(())
}
