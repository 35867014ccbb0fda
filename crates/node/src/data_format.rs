//! Owns the raise of the cluster's data format after an upgrade: on the leader, every few
//! seconds until the cluster is at the newest format this node reads, asks every member
//! which format it reads and raises the cluster's once all read it
//! (`kuorum_raft::format`). Ends once the format is raised, here or by another leader.

use std::time::Duration;

use kuorum_raft::format::Raise;
use kuorum_raft::Cluster;

/// How often the leader asks while a member still reads an older format.
pub const RAISE_EVERY: Duration = Duration::from_secs(2);

pub async fn run(cluster: Cluster) {
    let mut waiting_for = None;
    loop {
        let (current, newest) = cluster.data_format();
        if current >= newest {
            return;
        }
        tokio::time::sleep(RAISE_EVERY).await;
        match cluster.raise_data_format(RAISE_EVERY).await {
            Ok(Raise::Raised(f)) => tracing::info!(format = f, "raised the cluster's data format"),
            Ok(Raise::Waiting { node, why }) => {
                // Said once per node waited for, not every round of a long upgrade.
                if waiting_for != Some(node) {
                    tracing::info!(
                        node,
                        "the cluster's data format stays at {current} until node {node} reads {newest}: {why}"
                    );
                    waiting_for = Some(node);
                }
            }
            Ok(Raise::NotLeader | Raise::Done(_)) => {}
            Err(e) => tracing::debug!("raising the data format: {e}"),
        }
    }
}
