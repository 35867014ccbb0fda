//! Real single-node replication over the in-memory engines, for tests of the layers above
//! (the REST router's `oneshot` tests). It is a whole openraft node, not a stand-in: one
//! voter is its own quorum.

use std::collections::BTreeMap;
use std::sync::Arc;

use kuorum_store::memory::{MemoryLogEngine, MemoryObjectEngine};
use kuorum_store::ApplyObserver;

use crate::cluster::Cluster;
use crate::network::TcpDialer;
use crate::node::{start_raft, RaftNodeConfig, RaftTiming};

/// Starts a one-node cluster on in-memory engines and waits until it leads.
pub async fn single_node() -> Cluster {
    single_node_observed(None).await
}

/// As [`single_node`], reporting what it applies to `observer` (a watch cache).
pub async fn single_node_observed(observer: Option<Arc<dyn ApplyObserver>>) -> Cluster {
    // A single voter never dials a peer, so the address is never used.
    let cfg = RaftNodeConfig::new(1, BTreeMap::from([(1, "127.0.0.1:1".to_string())]), RaftTiming::default(), 0);
    let started = start_raft(
        cfg,
        Arc::new(MemoryLogEngine::new()),
        Arc::new(MemoryObjectEngine::new()),
        Arc::new(TcpDialer),
        observer,
    )
    .await
    .expect("single node starts");
    started
        .raft
        .wait(Some(std::time::Duration::from_secs(10)))
        .current_leader(1, "single node leads")
        .await
        .expect("single node elects itself");
    // Keep the raft running for the life of the test process.
    std::mem::forget(started.raft);
    started.cluster
}
