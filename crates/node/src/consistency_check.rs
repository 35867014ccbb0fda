//! The consistency check's schedule: every `every`, this node hashes its state at its
//! latest compaction point and compares it with its peers' ([`kuorum_raft::consistency`]).
//! Every node checks itself, so a node whose state differs finds out on its own and stops
//! serving, whichever node leads.

use std::time::Duration;

use kuorum_raft::Cluster;

/// How long a check waits for the peers' hashes: a peer may first catch up to the point,
/// then scan its whole state.
const PEER_DEADLINE: Duration = Duration::from_secs(60);

pub async fn run(cluster: Cluster, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        kuorum_raft::consistency::check(&cluster, PEER_DEADLINE).await;
    }
}
