//! Starting replication for one node: build the openraft instance over the given engines
//! and dialer, bootstrap a static membership on first start, and hand back the
//! [`Cluster`] handle and the peer service to serve.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuorum_store::{ApplyObserver, LogEngine, ObjectEngine};
use openraft::async_runtime::WatchReceiver;
use openraft::BasicNode;

use crate::cluster::{Cluster, ClusterError, LocalReader};
use crate::forward::ForwardPipes;
use crate::log_store::LogStore;
use crate::network::{Channels, Dialer, PeerNetwork};
use crate::replicator::RaftReplicator;
use crate::service::PeerService;
use crate::state_machine::StateMachine;
use crate::types::{NodeId, Raft};

/// Timing of one node's Raft. The defaults suit loopback and LAN clusters on small
/// machines: a follower stands for election 1–1.67 s after the leader's last heartbeat
/// (etcd's defaults: 1–2 s).
#[derive(Debug, Clone)]
pub struct RaftTiming {
    pub heartbeat: Duration,
    /// A follower starts an election once it has heard nothing from the leader for
    /// `election_max` (openraft's leader lease, during which it also refuses to vote for
    /// anyone else) plus a random draw from `election_min..election_max`. So the lease
    /// is what keeps a live leader in place, and the draw what staggers the candidates.
    pub election_min: Duration,
    pub election_max: Duration,
    /// Build a snapshot (and allow purging the log) after this many applied entries.
    pub snapshot_every: u64,
    /// Log entries kept behind the latest snapshot, so a briefly lagging follower catches
    /// up from the log instead of a whole snapshot.
    pub logs_to_keep: u64,
    /// HTTP/2 ping interval on peer channels: a dead peer's half-open connection is
    /// dropped after two of these and dialed again (None: no pings). The simulator needs
    /// them too: turmoil's TCP never retransmits, so a lossy link stalls a connection
    /// for good; runs without them never converge after loss or partitions.
    pub peer_keepalive: Option<Duration>,
}

impl Default for RaftTiming {
    fn default() -> Self {
        let (election_min, election_max) =
            Self::election_range(DEFAULT_HEARTBEAT, DEFAULT_ELECTION_TIMEOUT).expect("the defaults are consistent");
        Self {
            heartbeat: DEFAULT_HEARTBEAT,
            election_min,
            election_max,
            // etcd's defaults (--snapshot-count, snapshot catch-up entries). Building a
            // snapshot is a checkpoint (a flush and hard links); sending one to a peer
            // costs time and memory in proportion to the data.
            snapshot_every: 100_000,
            logs_to_keep: 5_000,
            peer_keepalive: Some(Duration::from_secs(1)),
        }
    }
}

/// The leader's heartbeat interval by default.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_millis(150);
/// etcd's `--election-timeout` default: the silence after which followers elect a new
/// leader.
pub const DEFAULT_ELECTION_TIMEOUT: Duration = Duration::from_millis(1000);

impl RaftTiming {
    /// etcd's `--election-timeout` as openraft's range: `(election_min, election_max)`
    /// such that a follower stands between `election_timeout` and 5/3 of it
    /// after the leader's last heartbeat, as etcd's followers do between 1 and 2 times.
    ///
    /// openraft's lease is `election_max` and a follower stands after the lease plus a
    /// draw from `election_min..election_max`, so the lease is `election_timeout` less
    /// the shortest draw, and the shortest draw a sixth of it but always longer than a
    /// heartbeat (openraft's rule). Worked example, the defaults: 150 ms heartbeats and
    /// 1,000 ms give a 834 ms lease and draws of 166–834 ms: a follower votes for another
    /// after 834 ms of silence and stands after 1,000–1,668 ms; with two followers the
    /// first stands after about 1.22 s on average. (Session 19's `(T/2, T)` made that
    /// 1.5–2 s, about 1.67 s with two; session 22's failover runs: docs/benchmarks.md.)
    ///
    /// Refused unless `election_timeout` is more than twice `heartbeat` plus 20 ms.
    pub fn election_range(heartbeat: Duration, election_timeout: Duration) -> Result<(Duration, Duration), String> {
        let margin = Duration::from_millis(10);
        if election_timeout <= 2 * (heartbeat + margin) {
            return Err(format!(
                "the election timeout ({} ms) must be more than twice the heartbeat interval ({} ms) plus 20 ms",
                election_timeout.as_millis(),
                heartbeat.as_millis()
            ));
        }
        let shortest_draw = (election_timeout / 6).max(heartbeat + margin);
        Ok((shortest_draw, election_timeout - shortest_draw))
    }
}

/// What a node needs to know to replicate.
#[derive(Debug, Clone)]
pub struct RaftNodeConfig {
    pub id: NodeId,
    /// Every voter's id and peer address, this node included. Used to bootstrap a new
    /// cluster; a restarted node recovers its membership from disk instead.
    pub members: BTreeMap<NodeId, String>,
    pub timing: RaftTiming,
    /// Join an existing cluster instead of bootstrapping one: never propose `members`;
    /// wait to be added (as a learner) by the cluster's leader.
    pub join: bool,
    /// The newest data format this node reads and may write ([`crate::format`]): the
    /// newest this code knows, or 1 to act as a release before formats were numbered.
    pub max_data_format: u32,
    /// Where this run's request ids start: drawn at random at every start.
    pub first_request_seq: u64,
}

impl RaftNodeConfig {
    /// A node of the newest data format; request ids from `first_request_seq`.
    pub fn new(id: NodeId, members: BTreeMap<NodeId, String>, timing: RaftTiming, first_request_seq: u64) -> Self {
        Self { id, members, timing, join: false, max_data_format: crate::format::DATA_FORMAT, first_request_seq }
    }
}

/// A running node's replication.
pub struct StartedRaft<E: ObjectEngine> {
    pub cluster: Cluster,
    pub raft: Raft<StateMachine<E>>,
    pub state_machine: StateMachine<E>,
    peer_service: Option<PeerService<StateMachine<E>>>,
}

impl<E: ObjectEngine> StartedRaft<E> {
    /// The tonic service peers call; serve it on the node's peer listener.
    pub fn take_peer_server(&mut self) -> Option<crate::pb::peer_server::PeerServer<PeerService<StateMachine<E>>>> {
        self.peer_service.take().map(PeerService::into_server)
    }
}

struct EngineReader<E>(Arc<E>);

impl<E: ObjectEngine> LocalReader for EngineReader<E> {
    fn get(&self, key: &str) -> Result<Option<Bytes>, ClusterError> {
        self.0.get(key).map_err(|e| ClusterError::Fatal(e.to_string()))
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, ClusterError> {
        self.0.scan(prefix, start_after, limit).map_err(|e| ClusterError::Fatal(e.to_string()))
    }

    fn get_at(&self, key: &str, rv: u64) -> Result<Option<Bytes>, ClusterError> {
        self.0.get_at(key, rv).map_err(|e| ClusterError::Fatal(e.to_string()))
    }

    fn scan_at(
        &self,
        prefix: &str,
        rv: u64,
        start_after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Bytes)>, ClusterError> {
        self.0.scan_at(prefix, rv, start_after, limit).map_err(|e| ClusterError::Fatal(e.to_string()))
    }

    fn compacted(&self) -> Result<u64, ClusterError> {
        crate::state_machine::compacted_rv(self.0.as_ref()).map_err(|e| ClusterError::Fatal(e.to_string()))
    }

    fn storage_memory(&self) -> Vec<(&'static str, u64)> {
        self.0.memory()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("invalid raft config: {0}")]
    Config(String),
    #[error("raft: {0}")]
    Raft(String),
    #[error("storage: {0}")]
    Storage(#[from] std::io::Error),
    #[error(
        "this node's data directory is empty, but node {peer} says node {id} has served as a member of this \
         cluster: its data was lost, and it must not vote as if it had never voted. Rebuild it as a new member: \
         kuorum member remove {id}, start it with --join on an empty --data-dir, kuorum member add, kuorum member promote"
    )]
    LostData { id: NodeId, peer: NodeId },
}

/// Starts replication on the current tokio runtime. On an empty store, the static
/// membership in `cfg.members` is proposed (every node may do so: identical proposals
/// are harmless, and an initialized node refuses a second one), unless the node joins an
/// existing cluster (`cfg.join`).
pub async fn start_raft<L: LogEngine, E: ObjectEngine>(
    cfg: RaftNodeConfig,
    log_engine: Arc<L>,
    object_engine: Arc<E>,
    dialer: Arc<dyn Dialer>,
    observer: Option<Arc<dyn ApplyObserver>>,
) -> Result<StartedRaft<E>, StartError> {
    let t = &cfg.timing;
    let config = openraft::Config {
        cluster_name: "kuorum".into(),
        heartbeat_interval: t.heartbeat.as_millis() as u64,
        election_timeout_min: t.election_min.as_millis() as u64,
        election_timeout_max: t.election_max.as_millis() as u64,
        install_snapshot_timeout: 10_000,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(t.snapshot_every),
        max_in_snapshot_log_to_keep: t.logs_to_keep,
        enable_pre_vote: Some(true),
        ..Default::default()
    };
    let config = Arc::new(config.validate().map_err(|e| StartError::Config(e.to_string()))?);

    let channels = Channels::new(dialer, cfg.timing.peer_keepalive);
    let counters = crate::status::RaftCounters::default();
    let log_store = LogStore::with_fsync_histogram(log_engine.clone(), counters.log_fsync_seconds.clone());
    log_store.demote_saved_vote().await?;
    let io = std::io::Error::from;
    let empty = log_engine.last_entry().map_err(io)?.is_none()
        && log_engine.get_meta(crate::log_store::META_VOTE).map_err(io)?.is_none()
        && object_engine.get_meta(crate::state_machine::META_APPLIED).map_err(io)?.is_none();
    if empty {
        if let Some(peer) = crate::lost_data::lost_by(&channels, cfg.id, cfg.join, &cfg.members).await {
            return Err(StartError::LostData { id: cfg.id, peer });
        }
    }
    let state_machine = StateMachine::with_observer(object_engine.clone(), observer)?;
    state_machine.reads_up_to(cfg.max_data_format);
    let raft =
        openraft::Raft::new(cfg.id, config, PeerNetwork::new(channels.clone()), log_store, state_machine.clone())
            .await
            .map_err(|e| StartError::Raft(e.to_string()))?;

    if !cfg.join && !raft.is_initialized().await.map_err(|e| StartError::Raft(e.to_string()))? {
        let members: BTreeMap<NodeId, BasicNode> =
            cfg.members.iter().map(|(id, addr)| (*id, BasicNode { addr: addr.clone() })).collect();
        if let Err(e) = raft.initialize(members).await {
            // Another node's identical proposal got here first: fine.
            tracing::debug!("initialize: {e}");
        }
    }

    crate::status::count_leader_changes(raft.clone(), counters.leader_changes.clone());
    let proposed = Arc::new(crate::proposed::ProposedIds::default());
    let replicator = RaftReplicator {
        id: cfg.id,
        raft: raft.clone(),
        pipes: ForwardPipes::new(channels.clone()),
        channels,
        applied_rx: state_machine.applied_rx(),
        engine: object_engine.clone(),
        counters,
        read_rounds: Default::default(),
        told_not_member: Default::default(),
        data_format: state_machine.data_format_rx(),
        max_data_format: cfg.max_data_format,
        requests: state_machine.awaited_requests(),
        next_request: cfg.first_request_seq.into(),
        format_lock: Arc::default(),
        proposed: proposed.clone(),
    };
    let spool_dir = object_engine.spool_dir();
    let cluster = Cluster {
        replicator: Arc::new(replicator),
        reader: Arc::new(EngineReader(object_engine)),
        integrity: Arc::default(),
    };
    let peer_service = Some(PeerService::new(raft.clone(), spool_dir, cluster.clone(), cfg.max_data_format, proposed));
    Ok(StartedRaft { cluster, raft, state_machine, peer_service })
}

/// The ids of the voters this node currently knows.
pub fn voter_ids<E: ObjectEngine>(raft: &Raft<StateMachine<E>>) -> BTreeSet<NodeId> {
    raft.metrics().borrow_watched().membership_config.membership().voter_ids().collect()
}
