//! Owns a follower's check that it is still a member. A follower removed while it was
//! cut off, or just before the leader's next append, never applies its removal (the
//! leader stops replicating to it first), so nothing it holds says it was removed: only
//! the leader can tell it, when asked for a read index. Consistent reads ask; this asks
//! too, every few seconds, so a node that serves only `resourceVersion=0` reads and
//! watches finds out as well and stops serving what has become stale.

use std::time::Duration;

use kuorum_raft::Cluster;

/// How often a follower asks. One read-index round per follower per period, batched
/// with the reads in flight ([`kuorum_raft`]'s read rounds).
pub const PROBE_EVERY: Duration = Duration::from_secs(5);

pub async fn run(cluster: Cluster) {
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        if cluster.is_member() && cluster.leader() != Some(cluster.node_id()) {
            // The answer is not needed: a "not a member" is remembered by the cluster handle.
            let _ = cluster.read_barrier(PROBE_EVERY).await;
        }
    }
}
