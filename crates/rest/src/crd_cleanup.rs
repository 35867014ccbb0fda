//! Owns the cleanup of deleted CustomResourceDefinitions, which kube-apiserver's
//! apiextensions finalizer controller does. kuorum runs it on the leader: kuorum-node calls
//! [`finalize_deleted_crds`] on a timer, as it runs the namespace lifecycle.
//!
//! A deleted CRD is only marked (`delete.rs` gives it the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer first). One pass over it:
//!
//! 1. sets its `Terminating` condition (`InstanceDeletionInProgress`), so clients see why
//!    it stays; its resource refuses creates from then on;
//! 2. deletes every object of its resource, in every namespace, one log entry each (an
//!    object held by finalizers of its own is waited for);
//! 3. once none is left, drops the finalizer, at which point apply removes the CRD and
//!    every node stops serving its resource.

use std::time::Duration;

use bytes::Bytes;
use kuorum_api::crd::{self, CustomResourceDefinition};
use kuorum_api::seams::Clock;
use kuorum_raft::Cluster;
use kuorum_store::keys::collection_prefix;
use kuorum_store::{Command, Precondition, WriteResult};
use serde_json::{json, Value};

/// One pass over every CRD marked for deletion that still holds the cleanup finalizer.
/// Answers how many such CRDs it found (0 when there is nothing to do).
pub async fn finalize_deleted_crds(cluster: &Cluster, clock: &dyn Clock, deadline: Duration) -> Result<usize, String> {
    let crds =
        cluster.scan(&collection_prefix(crd::GROUP, crd::PLURAL, None), None, usize::MAX).map_err(|e| e.to_string())?;
    let mut found = 0;
    for (key, bytes) in crds {
        let Ok(obj) = serde_json::from_slice::<Value>(&bytes) else { continue };
        let held = obj
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|x| x == crd::CLEANUP_FINALIZER));
        if obj.pointer("/metadata/deletionTimestamp").is_none() || !held {
            continue;
        }
        found += 1;
        if let Err(e) = finalize(cluster, clock, deadline, &key, obj).await {
            tracing::debug!("deleting {key}: {e}");
        }
    }
    Ok(found)
}

fn rv_of(obj: &Value) -> Option<u64> {
    obj.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|s| s.parse().ok())
}

/// Writes `obj` back to `key` on condition it is still the version read.
async fn update(cluster: &Cluster, deadline: Duration, key: &str, obj: &Value) -> Result<WriteResult, String> {
    let cmd = Command::Update {
        key: key.to_string(),
        object: Bytes::from(serde_json::to_vec(obj).map_err(|e| e.to_string())?),
        precondition: Precondition { resource_version: rv_of(obj), uid: None },
        // CRDs and custom resources are held by their metadata finalizers only.
        finalizing: Default::default(),
    };
    cluster.write(cmd, deadline).await.map_err(|e| e.to_string())
}

/// Sets one status condition of `obj`.
fn set_condition(obj: &mut Value, cond: Value) {
    let status = &mut obj["status"];
    if !status.is_object() {
        *status = json!({});
    }
    let mut conditions: Vec<Value> = status["conditions"].as_array().cloned().unwrap_or_default();
    crd::set_condition(&mut conditions, cond);
    status["conditions"] = Value::Array(conditions);
}

async fn finalize(
    cluster: &Cluster,
    clock: &dyn Clock,
    deadline: Duration,
    key: &str,
    mut obj: Value,
) -> Result<(), String> {
    let now = clock.now_rfc3339();

    // 1. Terminating.
    let terminating = obj["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Terminating" && c["status"] == "True"));
    if !terminating {
        set_condition(&mut obj, crd::terminating_condition(&now));
        let stored = update(cluster, deadline, key, &obj).await?.map_err(|e| e.to_string())?;
        obj = serde_json::from_slice(&stored).map_err(|e| e.to_string())?;
    }

    // 2. Its objects.
    let Some(spec) = CustomResourceDefinition::parse(&obj) else {
        return Err("not a valid CRD".into());
    };
    let prefix = collection_prefix(&spec.group, &spec.names.plural, None);
    let objects = cluster.scan(&prefix, None, usize::MAX).map_err(|e| e.to_string())?;
    let remaining = objects.len();
    for (okey, o) in objects {
        let marked =
            serde_json::from_slice::<Value>(&o).is_ok_and(|o| o.pointer("/metadata/deletionTimestamp").is_some());
        if marked {
            // Held by its own finalizers; whoever owns them releases it.
            continue;
        }
        let cmd = Command::Delete {
            key: okey,
            precondition: Precondition::default(),
            deletion_timestamp: Some(now.clone()),
            finalizing: Default::default(),
        };
        cluster.write(cmd, deadline).await.map_err(|e| e.to_string())?.ok();
    }
    if remaining > 0 {
        // Look again next pass: deleted objects are gone then, held ones may be.
        return Ok(());
    }

    // 3. Release it.
    set_condition(
        &mut obj,
        json!({"type": "Terminating", "status": "False", "lastTransitionTime": now,
               "reason": "InstanceDeletionCompleted", "message": "removed all instances"}),
    );
    if let Some(Value::Array(finalizers)) = obj.pointer_mut("/metadata/finalizers") {
        finalizers.retain(|f| f != crd::CLEANUP_FINALIZER);
    }
    update(cluster, deadline, key, &obj).await?.map_err(|e| e.to_string())?;
    Ok(())
}
