//! Owns aggregated ClusterRoles, as kube-controller-manager's clusterrole-aggregation
//! controller: on the leader, every [`EVERY`], a ClusterRole with an `aggregationRule`
//! gets as its rules those of every other ClusterRole its `clusterRoleSelectors` match,
//! in order of their names, each rule once. So `admin`, `edit` and `view` grow with the
//! `aggregate-to-*` roles (kuorum's bootstrap ones, a CRD author's). Each write is on
//! condition of the role's version; one that moved on is counted again next pass.

use std::time::Duration;

use kuorum_api::rbac::aggregated;
use kuorum_api::registry::RBAC_GROUP;
use kuorum_raft::Cluster;
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
        let prefix = collection_prefix(RBAC_GROUP, "clusterroles", None);
        let Ok(stored) = cluster.scan(&prefix, None, usize::MAX) else { continue };
        let roles: Vec<(String, Value)> =
            stored.into_iter().filter_map(|(k, b)| serde_json::from_slice(&b).ok().map(|v| (k, v))).collect();
        for (key, role) in &roles {
            let Some(rules) = aggregated(role, &roles) else { continue };
            if role.get("rules").unwrap_or(&Value::Null) == &rules
                || (rules.as_array().is_some_and(Vec::is_empty) && role.get("rules").is_none_or(Value::is_null))
            {
                continue;
            }
            let mut updated = role.clone();
            updated["rules"] = rules;
            let rv = role.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
            let cmd = Command::Update {
                key: key.clone(),
                object: serde_json::to_vec(&updated).unwrap_or_default().into(),
                precondition: Precondition { resource_version: rv, uid: None },
                finalizing: Default::default(),
            };
            match cluster.write(cmd, Duration::from_secs(5)).await {
                Ok(Ok(_)) => tracing::debug!(key, "aggregated a ClusterRole"),
                Ok(Err(e)) => tracing::debug!(key, "aggregating a ClusterRole: {e}"),
                Err(e) => tracing::debug!(key, "aggregating a ClusterRole: {e}"),
            }
        }
    }
}
