//! Owns freeing pool values nobody holds, as kube's IPAddress repair loop does: a claim
//! (an `IPAddress` kuorum's allocator made, or a node-port entry) whose parent object is
//! gone or no longer holds the value has leaked (its write's outcome was unknown, its
//! request was dropped, its owner left through a namespace deletion or the removal of
//! its last finalizer). The leader looks every [`EVERY`]; a claim it has seen leaked for
//! [`GRACE`] on its own clock (a claim is made just before its owner is written) is
//! deleted on condition of its uid.

use std::collections::BTreeMap;
use std::time::Duration;

use kuorum_api::kinds::{self, Object};
use kuorum_raft::Cluster;
use kuorum_store::keys::ObjectKey;
use kuorum_store::{Command, Precondition};
use serde_json::Value;
use tokio::time::Instant;

pub const EVERY: Duration = Duration::from_secs(30);
/// kube's repair grace for an IPAddress without its Service.
pub const GRACE: Duration = Duration::from_secs(60);

/// Where claims live, and which of them are the allocator's.
const CLAIMS: &[(&str, Option<(&str, &str)>)] = &[
    ("/registry/networking.k8s.io/ipaddresses/", Some(("ipaddress.kubernetes.io~1managed-by", "ipallocator.k8s.io"))),
    ("/registry/ranges/servicenodeports/", None),
];

pub async fn run(cluster: Cluster) {
    // Claims seen leaked, by key: (uid, since when).
    let mut leaked: BTreeMap<String, (String, Instant)> = BTreeMap::new();
    loop {
        tokio::time::sleep(EVERY).await;
        if cluster.leader() != Some(cluster.node_id()) {
            leaked.clear();
            continue;
        }
        let now = Instant::now();
        let mut still = BTreeMap::new();
        for (key, uid) in leaked_claims(&cluster) {
            let since = match leaked.get(&key) {
                Some((u, at)) if *u == uid => *at,
                _ => now,
            };
            if now.duration_since(since) >= GRACE {
                let precondition = Precondition { uid: Some(uid), ..Precondition::default() };
                let cmd = Command::Delete {
                    key: key.clone(),
                    precondition,
                    deletion_timestamp: None,
                    finalizing: Default::default(),
                };
                match cluster.write(cmd, Duration::from_secs(5)).await {
                    Ok(_) => tracing::info!(key, "freed a pool value no object holds"),
                    Err(e) => tracing::debug!(key, "freeing a leaked pool value: {e}"),
                }
            } else {
                still.insert(key, (uid, since));
            }
        }
        leaked = still;
    }
}

/// The claims whose parent does not hold their value now: (key, uid).
fn leaked_claims(cluster: &Cluster) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (prefix, managed) in CLAIMS {
        let Ok(claims) = cluster.scan(prefix, None, usize::MAX) else { continue };
        for (key, bytes) in claims {
            let Ok(claim) = serde_json::from_slice::<Value>(&bytes) else { continue };
            if let Some((label, value)) = managed {
                if claim.pointer(&format!("/metadata/labels/{label}")).and_then(Value::as_str) != Some(value) {
                    continue;
                }
            }
            let value = key.strip_prefix(prefix).unwrap_or("");
            if !held_by_parent(cluster, &claim, value) {
                let uid = claim.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_string();
                out.push((key, uid));
            }
        }
    }
    out
}

/// Whether the object the claim names exists and holds `value`.
fn held_by_parent(cluster: &Cluster, claim: &Value, value: &str) -> bool {
    let at = |p: &str| claim.pointer(&format!("/spec/parentRef/{p}")).and_then(Value::as_str);
    let (group, resource, name) = (at("group").unwrap_or(""), at("resource").unwrap_or(""), at("name").unwrap_or(""));
    let Some(strategy) = kinds::all().iter().copied().find(|s| {
        s.def().group == group && s.def().plural == resource && s.stored_as().is_none() && s.allocating().is_some()
    }) else {
        // Not an object kuorum allocates for: someone else's claim.
        return true;
    };
    let key = ObjectKey { group, resource, namespace: at("namespace"), name }.encode();
    let Ok(Some(bytes)) = cluster.get(&key) else { return false };
    let Ok(parent) = serde_json::from_slice::<Object>(&bytes) else { return false };
    strategy.allocating().is_some_and(|a| a.held(&parent).iter().any(|h| h.value == value))
}
