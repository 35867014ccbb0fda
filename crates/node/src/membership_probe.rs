//! Owns a follower's check that it is still a member. A follower removed while it was
//! cut off, or just before the leader's next append, never applies its removal (the
//! leader stops replicating to it first), so nothing it holds says it was removed: only
//! the leader can tell it, when asked for a read index. Consistent reads ask; this asks
//! too, every few seconds, so a node that serves only `resourceVersion=0` reads and
//! watches finds out as well and stops serving what has become stale.
//!
//! It also records, once, that this node has served as a member
//! ([`kuorum_store::keys::member_started_key`]): a node that later starts with an empty
//! data directory and without `--join` is then refused by its peers (it lost its data;
//! `kuorum_raft`'s `lost_data`).

use std::time::Duration;

use bytes::Bytes;
use kuorum_raft::Cluster;
use kuorum_store::keys::member_started_key;
use kuorum_store::{Command, WriteError};

/// How often a follower asks. One read-index round per follower per period, batched
/// with the reads in flight ([`kuorum_raft`]'s read rounds).
pub const PROBE_EVERY: Duration = Duration::from_secs(5);

pub async fn run(cluster: Cluster) {
    let mut recorded = false;
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        if !recorded && cluster.is_member() && cluster.leader().is_some() {
            recorded = record_started(&cluster).await;
        }
        if cluster.is_member() && cluster.leader() != Some(cluster.node_id()) {
            // The answer is not needed: a "not a member" is remembered by the cluster handle.
            let _ = cluster.read_barrier(PROBE_EVERY).await;
        }
    }
}

/// Writes this node's started key unless its state already holds it; whether it is there.
async fn record_started(cluster: &Cluster) -> bool {
    let key = member_started_key(cluster.node_id());
    if matches!(cluster.get(&key), Ok(Some(_))) {
        return true;
    }
    let object = Bytes::from(format!(r#"{{"node":{}}}"#, cluster.node_id()));
    let create = Command::Create { key, namespace: None, object };
    matches!(cluster.write(create, PROBE_EVERY).await, Ok(Ok(_) | Err(WriteError::AlreadyExists)))
}
