//! `GET /debug/kuorum/raft`: this node's view of replication (its data format included),
//! for operators and tests.

use axum::routing::get;
use axum::{Json, Router};
use kuorum_raft::state_machine::StateMachine;
use kuorum_raft::types::Raft;
use kuorum_raft::Cluster;
use kuorum_store::ObjectEngine;
use openraft::async_runtime::WatchReceiver;
use serde_json::json;

pub fn router<O: ObjectEngine>(raft: Raft<StateMachine<O>>, cluster: Cluster) -> Router {
    Router::new().route(
        "/debug/kuorum/raft",
        get(move || {
            let (raft, cluster) = (raft.clone(), cluster.clone());
            async move {
                let (data_format, reads) = cluster.data_format();
                let m = raft.metrics().borrow_watched().clone();
                let voters: Vec<u64> = m.membership_config.membership().voter_ids().collect();
                Json(json!({
                    "id": m.id,
                    "leader": m.current_leader,
                    "term": m.current_term,
                    "state": format!("{:?}", m.state),
                    "last_log_index": m.last_log_index,
                    "last_applied": m.last_applied.map(|l| l.index),
                    "snapshot": m.snapshot.map(|l| l.index),
                    // The last entry removed from this node's log (behind its snapshot).
                    "purged": m.purged.map(|l| l.index),
                    "voters": voters,
                    // The cluster's data format as applied here, and the newest this
                    // node reads (kuorum_raft::format).
                    "data_format": data_format,
                    "max_data_format": reads,
                }))
            }
        }),
    )
}
