//! Replicated compaction: the leader proposes `Compact{rv}` for the applied index it saw
//! one window ago, so every node forgets history at the same point of the log and answers
//! 410 for the same resourceVersions.

use std::collections::VecDeque;
use std::time::Duration;

use kuorum_raft::Cluster;
use kuorum_store::Command;
use tokio::time::Instant;

pub async fn run(cluster: Cluster, window: Duration) {
    // Sample often enough that the compacted point trails the window by at most a fifth.
    let every = (window / 5).max(Duration::from_millis(200));
    let mut samples: VecDeque<(Instant, u64)> = VecDeque::new();
    let mut proposed = 0;
    loop {
        tokio::time::sleep(every).await;
        let now = Instant::now();
        samples.push_back((now, cluster.applied_index()));
        // The newest sample at least one window old is the compaction point.
        let mut point = None;
        while samples.front().is_some_and(|(t, _)| now.duration_since(*t) >= window) {
            point = samples.pop_front().map(|(_, rv)| rv);
        }
        let Some(rv) = point else { continue };
        if rv <= proposed || cluster.leader() != Some(cluster.node_id()) {
            continue;
        }
        match cluster.write(Command::Compact { rv }, Duration::from_secs(10)).await {
            Ok(_) => proposed = rv,
            Err(e) => tracing::debug!("compaction at {rv}: {e}"),
        }
    }
}
