//! The handle the REST layer holds: the one way into replication and the local state.
//!
//! - [`Cluster::write`] proposes a command: on the leader directly, from a follower by
//!   forwarding it to the leader over the peer RPC. A leader change mid-request is retried
//!   until the deadline; a command is proposed at most once per attempt and its outcome
//!   is what the log decided, so a retry never double-applies a precondition-checked write.
//! - [`Cluster::read_barrier`] makes the next local read linearizable: it obtains a read
//!   index from the leader and waits until this node has applied it.
//! - [`Cluster::get`] / [`Cluster::scan`] read this node's applied state as it is;
//!   [`Cluster::get_at`] / [`Cluster::scan_at`] read it as it was at a resourceVersion
//!   inside the history window (above [`Cluster::compacted`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuorum_store::{Command, WriteResult};

/// Why the cluster could not answer. Each maps to a Kubernetes Status in the REST layer
/// (Timeout → 504 Timeout, NoLeader/Shutdown → 503 ServiceUnavailable, Fatal → 500).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ClusterError {
    #[error("no leader is known; the cluster may be electing one or have lost quorum")]
    NoLeader,
    #[error("the request did not complete within its deadline")]
    Timeout,
    #[error("the node is shutting down")]
    Shutdown,
    #[error("{0}")]
    Fatal(String),
    /// This node is not a member of the cluster (it was removed, or has not been added
    /// yet): its state no longer follows the log.
    #[error("this node is not a member of the cluster (it was removed, or has not been added yet): ask another node")]
    NotMember,
}

/// Reads of the local applied state (object-safe, so the handle is not generic).
pub trait LocalReader: Send + Sync + 'static {
    fn get(&self, key: &str) -> Result<Option<Bytes>, ClusterError>;
    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: usize)
        -> Result<Vec<(String, Bytes)>, ClusterError>;
    /// The value `key` had at `rv` (MVCC history; meaningful for `rv >= compacted()`).
    fn get_at(&self, key: &str, rv: u64) -> Result<Option<Bytes>, ClusterError>;
    /// As `scan`, at `rv`.
    fn scan_at(
        &self,
        prefix: &str,
        rv: u64,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, ClusterError>;
    /// History below this rv is gone (the last replicated compaction applied here).
    fn compacted(&self) -> Result<u64, ClusterError>;
    /// The storage engine's memory by part (see `ObjectEngine::memory`).
    fn storage_memory(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// What a write does; implemented by the node's replication.
#[allow(async_fn_in_trait)]
pub(crate) trait Replicator: Send + Sync + 'static {
    fn node_id(&self) -> u64;
    fn write(
        &self,
        cmd: Command,
        deadline: Duration,
    ) -> futures::future::BoxFuture<'_, Result<WriteResult, ClusterError>>;
    fn read_barrier(&self, deadline: Duration) -> futures::future::BoxFuture<'_, Result<u64, ClusterError>>;
    fn applied_index(&self) -> u64;
    fn leader(&self) -> Option<u64>;
    fn status(&self) -> crate::status::RaftStatus;
    fn counters(&self) -> crate::status::RaftCounters;
    /// The ids of the voters this node currently knows.
    fn voters(&self) -> std::collections::BTreeSet<u64>;
    /// Whether this node is in the membership it knows (a voter or a learner).
    fn is_member(&self) -> bool;
    /// The cluster's data format as applied here ([`crate::format`]).
    fn data_format(&self) -> u32;
    /// The newest data format this node reads.
    fn max_data_format(&self) -> u32;
    /// On the leader, raises the cluster's data format once every member reads it.
    fn raise_data_format(
        &self,
        deadline: Duration,
    ) -> futures::future::BoxFuture<'_, Result<crate::format::Raise, ClusterError>>;
    /// Held across the format raise, and across a member add (see the replicator's field).
    fn format_lock(&self) -> Arc<tokio::sync::Mutex<()>>;
    /// The newest data format the node at peer address `addr` reads.
    fn ask_data_format(&self, addr: String, deadline: Duration) -> futures::future::BoxFuture<'_, Result<u32, String>>;
    /// Asks every other member for its state's hash at `rv` ([`crate::consistency`]).
    fn ask_state_hashes(
        &self,
        rv: u64,
        deadline: Duration,
    ) -> futures::future::BoxFuture<'_, Vec<(u64, crate::consistency::HashAnswer)>>;
}

/// A cheap, cloneable handle to one node's replication and state.
#[derive(Clone)]
pub struct Cluster {
    pub(crate) replicator: Arc<dyn Replicator>,
    pub(crate) reader: Arc<dyn LocalReader>,
    pub(crate) integrity: Arc<crate::consistency::Integrity>,
}

impl Cluster {
    pub fn node_id(&self) -> u64 {
        self.replicator.node_id()
    }

    /// Proposes `cmd` and answers what applying it decided.
    pub async fn write(&self, cmd: Command, deadline: Duration) -> Result<WriteResult, ClusterError> {
        self.replicator.write(cmd, deadline).await
    }

    /// Waits until a read of the local state is linearizable; answers the applied index
    /// the read will see (>= the leader's commit index when it was asked).
    pub async fn read_barrier(&self, deadline: Duration) -> Result<u64, ClusterError> {
        self.replicator.read_barrier(deadline).await
    }

    /// The last log index applied to this node's state.
    pub fn applied_index(&self) -> u64 {
        self.replicator.applied_index()
    }

    /// Whether this node's state passed its consistency checks ([`crate::consistency`]).
    pub fn integrity(&self) -> &crate::consistency::Integrity {
        &self.integrity
    }

    /// Whether this node is a member (voter or learner) of the membership it last applied:
    /// false once it applied its own removal, and before a joining node is added.
    pub fn is_member(&self) -> bool {
        self.replicator.is_member()
    }

    /// The cluster's data format as applied here, and the newest this node reads
    /// ([`crate::format`]).
    pub fn data_format(&self) -> (u32, u32) {
        (self.replicator.data_format(), self.replicator.max_data_format())
    }

    /// On the leader, raises the cluster's data format to the newest this node reads once
    /// every member reads it ([`crate::format`]).
    pub async fn raise_data_format(&self, deadline: Duration) -> Result<crate::format::Raise, ClusterError> {
        self.replicator.raise_data_format(deadline).await
    }

    /// Keeps the leader from raising the data format until dropped: a member add holds
    /// it from its check of the new node's format until the node is added.
    pub async fn hold_data_format(&self) -> tokio::sync::OwnedMutexGuard<()> {
        self.replicator.format_lock().lock_owned().await
    }

    /// The newest data format the node at peer address `addr` reads (1 for a release
    /// before formats were numbered).
    pub async fn peer_data_format(&self, addr: &str, deadline: Duration) -> Result<u32, String> {
        self.replicator.ask_data_format(addr.to_string(), deadline).await
    }

    /// The current leader as this node knows it.
    pub fn leader(&self) -> Option<u64> {
        self.replicator.leader()
    }

    /// This node's replication as openraft last reported it.
    pub fn status(&self) -> crate::status::RaftStatus {
        self.replicator.status()
    }

    /// Counters kept beside openraft's metrics (shared: they keep counting).
    pub fn counters(&self) -> crate::status::RaftCounters {
        self.replicator.counters()
    }

    pub fn get(&self, key: &str) -> Result<Option<Bytes>, ClusterError> {
        self.reader.get(key)
    }

    /// The storage engine's memory by part, in bytes (for the memory gauges).
    pub fn storage_memory(&self) -> Vec<(&'static str, u64)> {
        self.reader.storage_memory()
    }

    pub fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, ClusterError> {
        self.reader.scan(prefix, start_after, limit)
    }

    /// The value `key` had at `rv`; meaningful for `rv >= compacted()`.
    pub fn get_at(&self, key: &str, rv: u64) -> Result<Option<Bytes>, ClusterError> {
        self.reader.get_at(key, rv)
    }

    /// Objects under `prefix` as they were at `rv`; meaningful for `rv >= compacted()`.
    pub fn scan_at(
        &self,
        prefix: &str,
        rv: u64,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, ClusterError> {
        self.reader.scan_at(prefix, rv, start_after, limit)
    }

    /// History below this rv has been compacted away on this node.
    pub fn compacted(&self) -> Result<u64, ClusterError> {
        self.reader.compacted()
    }
}
