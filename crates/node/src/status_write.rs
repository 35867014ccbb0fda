//! Owns how the leader's status controllers (FlowSchema conditions, APIService
//! availability, admission policies' type checking) write what they found: the whole
//! object, on condition of the resourceVersion they read it at, so a write that raced
//! another is dropped and found again on the next pass.

use std::time::Duration;

use kuorum_rest::RestState;
use kuorum_store::keys::ObjectKey;
use kuorum_store::{Command, Precondition};
use serde_json::Value;

/// Writes `updated` (a cluster-scoped object of `group`/`resource`, as read plus its new
/// status) on condition of its `metadata.resourceVersion`.
pub async fn write(st: &RestState, group: &'static str, resource: &'static str, updated: &Value, what: &str) {
    let name = updated.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let rv = updated.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
    let key = ObjectKey { group, resource, namespace: None, name }.encode();
    let cmd = Command::Update {
        key,
        object: serde_json::to_vec(updated).unwrap_or_default().into(),
        precondition: Precondition { resource_version: rv, uid: None },
        finalizing: Default::default(),
    };
    match st.cluster.write(cmd, Duration::from_secs(5)).await {
        Ok(Ok(_)) => tracing::debug!(name, "{what}"),
        Ok(Err(e)) => tracing::debug!(name, "{what}: moved on: {e}"),
        Err(e) => tracing::debug!(name, "{what}: {e}"),
    }
}
