//! What one node's replication reports to operators: [`RaftStatus`], a copy of openraft's
//! metrics at one moment, and [`RaftCounters`], what openraft does not count itself
//! (leader changes seen, log fsync durations). The REST layer turns both into `/metrics`.

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

use crate::state_machine::StateMachine;
use crate::types::Raft;

/// One node's view of the cluster, as openraft last published it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftStatus {
    pub id: u64,
    pub term: u64,
    /// `Leader`, `Follower`, `Candidate`, `Learner` or `Shutdown`.
    pub state: &'static str,
    pub leader: Option<u64>,
    /// The newest entry in this node's log (0: none).
    pub last_log_index: u64,
    /// The newest entry the cluster has committed, as the leader last told this node.
    pub committed: u64,
    /// The newest entry applied to this node's state (its resourceVersion).
    pub applied: u64,
    /// The last entry covered by this node's latest snapshot (0: none).
    pub snapshot: u64,
    pub voters: Vec<u64>,
    pub learners: Vec<u64>,
}

impl RaftStatus {
    /// Committed entries not yet applied here.
    pub fn apply_lag(&self) -> u64 {
        self.committed.saturating_sub(self.applied)
    }
}

/// Counters kept beside openraft's metrics. Cloning shares them (each is an `Arc`).
#[derive(Debug, Clone)]
pub struct RaftCounters {
    /// Times this node saw the leader change (to another node or to none), as etcd's
    /// `etcd_server_leader_changes_seen_total`.
    pub leader_changes: Counter,
    /// Seconds per fsync of the Raft log (one per group commit), as etcd's
    /// `etcd_disk_wal_fsync_duration_seconds`.
    pub log_fsync_seconds: Histogram,
}

impl Default for RaftCounters {
    fn default() -> Self {
        RaftCounters {
            leader_changes: Counter::default(),
            // 0.1 ms .. ~3.3 s, doubling (etcd's buckets start at 1 ms; local SSDs and
            // tmpfs sync faster than that).
            log_fsync_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
        }
    }
}

fn state_name(s: ServerState) -> &'static str {
    match s {
        ServerState::Leader => "Leader",
        ServerState::Follower => "Follower",
        ServerState::Candidate => "Candidate",
        ServerState::Learner => "Learner",
        ServerState::Shutdown => "Shutdown",
    }
}

/// Reads the status out of openraft's latest metrics.
pub(crate) fn read_status<E: kuorum_store::ObjectEngine>(raft: &Raft<StateMachine<E>>) -> RaftStatus {
    let m = raft.metrics();
    let m = m.borrow_watched();
    let index = |l: &Option<crate::types::LogId>| l.as_ref().map_or(0, |l| l.index);
    let membership = m.membership_config.membership();
    let voters: Vec<u64> = membership.voter_ids().collect();
    let learners: Vec<u64> = membership.learner_ids().collect();
    RaftStatus {
        id: m.id,
        term: m.current_term,
        state: state_name(m.state),
        leader: m.current_leader,
        last_log_index: m.last_log_index.unwrap_or(0),
        committed: index(&m.cluster_committed),
        applied: index(&m.last_applied),
        snapshot: index(&m.snapshot),
        voters,
        learners,
    }
}

/// Counts leader changes for as long as `raft` runs. It follows the server metrics,
/// which change with the leader, the state and the membership only: the full metrics
/// change with every append and apply, and a task woken for each cost 1% of a node's
/// CPU under creates.
pub(crate) fn count_leader_changes<E: kuorum_store::ObjectEngine>(raft: Raft<StateMachine<E>>, counter: Counter) {
    tokio::spawn(async move {
        let mut rx = raft.server_metrics();
        let mut leader = rx.borrow_watched().current_leader;
        while rx.changed().await.is_ok() {
            let now = rx.borrow_watched().current_leader;
            if now != leader {
                counter.inc();
                leader = now;
            }
        }
    });
}
