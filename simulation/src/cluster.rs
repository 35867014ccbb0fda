//! A simulated cluster: N hosts `node1..nodeN`, each running a whole kuorum node on the
//! in-memory engines. The engines ("disks"), each node's apply tap and its slow-disk
//! knob live outside the hosts, so a crashed and restarted host comes back with what it
//! had synced, and the checkers keep what every life of every node applied.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kuorum_api::seams::{Clock, SplitMix64};
use kuorum_node::{start_node, NodeConfig, NodeSeams};
use kuorum_raft::state_machine::StateMachine;
use kuorum_raft::RaftTiming;
use kuorum_store::memory::{MemoryLogEngine, MemoryObjectEngine};
use kuorum_store::{LogEngine, StoreResult};
use kuorum_watch::{CacheConfig, WatchCache};

use crate::net::{peer_incoming, SimDialer, SimListener};
use crate::replay::NodeTap;

pub const REST_PORT: u16 = 6443;
pub const PEER_PORT: u16 = 7443;

/// A running node's Raft handle, for the checkers' metrics sampling.
pub type SimRaft = kuorum_raft::types::Raft<StateMachine<MemoryObjectEngine>>;

/// The simulated clock: the simulation's elapsed time on top of a fixed epoch, so object
/// timestamps are reproducible.
#[derive(Debug, Clone, Copy)]
pub struct SimClock;

impl Clock for SimClock {
    fn now_unix_seconds(&self) -> i64 {
        // 2026-01-01T00:00:00Z plus simulated time.
        1_767_225_600 + turmoil::sim_elapsed().map(|d| d.as_secs() as i64).unwrap_or(0)
    }
}

/// The Raft log's disk with an adjustable fsync latency (the "slow disk" fault).
#[derive(Debug, Default, Clone)]
pub struct SlowLog {
    pub inner: MemoryLogEngine,
    /// Milliseconds every sync waits (simulated time) before it makes data durable.
    pub sync_delay_ms: Arc<AtomicU64>,
}

impl LogEngine for SlowLog {
    async fn append(&self, entries: Vec<(u64, Bytes)>) -> StoreResult<()> {
        self.inner.append(entries).await
    }
    async fn sync(&self) -> StoreResult<()> {
        let d = self.sync_delay_ms.load(Ordering::Relaxed);
        if d > 0 {
            tokio::time::sleep(Duration::from_millis(d)).await;
        }
        self.inner.sync().await
    }
    async fn truncate_from(&self, index: u64) -> StoreResult<()> {
        self.inner.truncate_from(index).await
    }
    async fn purge_upto(&self, index: u64) -> StoreResult<()> {
        self.inner.purge_upto(index).await
    }
    fn read_range(&self, start: u64, end: u64) -> StoreResult<Vec<(u64, Bytes)>> {
        self.inner.read_range(start, end)
    }
    fn last_entry(&self) -> StoreResult<Option<(u64, Bytes)>> {
        self.inner.last_entry()
    }
    async fn put_meta(&self, key: &str, value: Bytes) -> StoreResult<()> {
        self.inner.put_meta(key, value).await
    }
    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        self.inner.get_meta(key)
    }
}

/// One node's storage and tap, outliving its host.
#[derive(Debug, Default, Clone)]
pub struct SimNodeDisks {
    pub log: SlowLog,
    pub objects: MemoryObjectEngine,
    pub tap: NodeTap,
    /// The node starts in join mode (`kuorum serve --join`): set once its disks were
    /// wiped, so it waits to be added instead of bootstrapping a cluster of its own.
    pub joins: Arc<AtomicBool>,
}

impl SimNodeDisks {
    /// A power loss: what was not synced is gone.
    pub fn crash(&self) {
        self.log.inner.crash();
        self.objects.crash();
    }

    /// New, empty disks (a replacement node's data directory); the node joins from now on.
    /// The tap keeps what earlier lives applied (the ground truth) but counts applies afresh.
    pub fn wipe(&self) {
        self.log.inner.wipe();
        self.objects.wipe();
        self.tap.wiped();
        self.joins.store(true, Ordering::Relaxed);
    }
}

/// How to build the cluster's nodes.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    pub nodes: u64,
    pub seed: u64,
    pub timing: RaftTiming,
    pub compaction_window: Duration,
    pub cache: CacheConfig,
    /// Start every node in chaos mode (API-level faults, [`SimCluster::chaos`]).
    pub chaos: bool,
    /// Keep every applied change whole in each node's tap ([`NodeTap::objects`]).
    pub keep_objects: bool,
    /// How often each node checks its state against its peers' (`None`: never).
    pub consistency_check_every: Option<Duration>,
}

impl ClusterSpec {
    pub fn new(nodes: u64, seed: u64) -> ClusterSpec {
        ClusterSpec {
            nodes,
            seed,
            timing: RaftTiming::default(),
            compaction_window: Duration::from_secs(300),
            cache: CacheConfig::default(),
            chaos: false,
            keep_objects: false,
            consistency_check_every: Some(Duration::from_secs(5)),
        }
    }
}

/// The hosts of a simulated cluster, their disks, and (for checkers) the watch cache and
/// Raft handle each running node currently has.
pub struct SimCluster {
    pub nodes: u64,
    pub disks: BTreeMap<u64, SimNodeDisks>,
    pub caches: Arc<Mutex<BTreeMap<u64, Arc<WatchCache>>>>,
    pub rafts: Arc<Mutex<BTreeMap<u64, SimRaft>>>,
    /// Each running node's fault injector (chaos mode only).
    pub chaos: Arc<Mutex<BTreeMap<u64, Arc<kuorum_rest::chaos::Chaos>>>>,
    /// The replication handle of every life of every node, in the order they started
    /// (what their consistency checks found stays readable after a crash).
    pub lives: Arc<Mutex<Vec<(u64, kuorum_raft::Cluster)>>>,
}

pub fn host_name(id: u64) -> String {
    format!("node{id}")
}

impl SimCluster {
    /// Registers hosts `node1..=nodeN` in `sim`, each running a kuorum node.
    pub fn start(sim: &mut turmoil::Sim<'_>, nodes: u64, seed: u64) -> SimCluster {
        Self::start_spec(sim, ClusterSpec::new(nodes, seed))
    }

    /// As [`SimCluster::start`], with the given Raft timing and snapshot policy.
    pub fn start_with(sim: &mut turmoil::Sim<'_>, nodes: u64, seed: u64, timing: RaftTiming) -> SimCluster {
        Self::start_spec(sim, ClusterSpec { timing, ..ClusterSpec::new(nodes, seed) })
    }

    pub fn start_spec(sim: &mut turmoil::Sim<'_>, spec: ClusterSpec) -> SimCluster {
        let members: BTreeMap<u64, String> =
            (1..=spec.nodes).map(|i| (i, format!("{}:{PEER_PORT}", host_name(i)))).collect();
        let mut disks = BTreeMap::new();
        let caches: Arc<Mutex<BTreeMap<u64, Arc<WatchCache>>>> = Arc::default();
        let rafts: Arc<Mutex<BTreeMap<u64, SimRaft>>> = Arc::default();
        let chaos: Arc<Mutex<BTreeMap<u64, Arc<kuorum_rest::chaos::Chaos>>>> = Arc::default();
        let lives: Arc<Mutex<Vec<(u64, kuorum_raft::Cluster)>>> = Arc::default();
        for id in 1..=spec.nodes {
            let caches_out = caches.clone();
            let rafts_out = rafts.clone();
            let chaos_out = chaos.clone();
            let lives_out = lives.clone();
            let d = SimNodeDisks::default();
            if spec.keep_objects {
                d.tap.keep_objects();
            }
            disks.insert(id, d.clone());
            let members = members.clone();
            let spec = spec.clone();
            // Each life of a host gets its own entropy stream, derived from the seed.
            let lives = Arc::new(AtomicU64::new(0));
            sim.host(host_name(id), move || {
                let caches_out = caches_out.clone();
                let rafts_out = rafts_out.clone();
                let chaos_out = chaos_out.clone();
                let lives_out = lives_out.clone();
                let d = d.clone();
                let members = members.clone();
                let spec = spec.clone();
                let life = lives.fetch_add(1, Ordering::Relaxed);
                async move {
                    let rest = turmoil::net::TcpListener::bind(("0.0.0.0", REST_PORT)).await?;
                    let peer = turmoil::net::TcpListener::bind(("0.0.0.0", PEER_PORT)).await?;
                    let cfg = NodeConfig {
                        timing: spec.timing.clone(),
                        request_timeout: Duration::from_secs(3),
                        compaction_window: spec.compaction_window,
                        cache: spec.cache.clone(),
                        chaos: spec.chaos,
                        consistency_check_every: spec.consistency_check_every,
                        join: d.joins.load(Ordering::Relaxed),
                        ..NodeConfig::new(id, members)
                    };
                    let seams = NodeSeams {
                        rest_listener: SimListener(rest),
                        peer_incoming: peer_incoming(peer),
                        dialer: Arc::new(SimDialer),
                        clock: Arc::new(SimClock),
                        entropy: Arc::new(SplitMix64::new(
                            spec.seed ^ id.wrapping_mul(0x9E37_79B9) ^ life.wrapping_mul(0xA5A5_5A5A_0F0F),
                        )),
                        log_engine: Arc::new(d.log.clone()),
                        object_engine: Arc::new(d.objects.clone()),
                        apply_tap: Some(Arc::new(d.tap.clone())),
                    };
                    let node = start_node(cfg, seams).await.map_err(|e| e.to_string())?;
                    caches_out.lock().unwrap_or_else(|e| e.into_inner()).insert(id, node.cache.clone());
                    rafts_out.lock().unwrap_or_else(|e| e.into_inner()).insert(id, node.raft.clone());
                    lives_out.lock().unwrap_or_else(|e| e.into_inner()).push((id, node.cluster.clone()));
                    if let Some(c) = &node.chaos {
                        chaos_out.lock().unwrap_or_else(|e| e.into_inner()).insert(id, c.clone());
                    }
                    std::future::pending::<()>().await;
                    Ok(())
                }
            });
        }
        SimCluster { nodes: spec.nodes, disks, caches, rafts, chaos, lives }
    }

    /// Crashes node `id` with a power loss (unsynced writes are lost).
    pub fn crash(&self, sim: &mut turmoil::Sim<'_>, id: u64) {
        sim.crash(host_name(id));
        self.disks[&id].crash();
        self.caches.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        self.rafts.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        self.chaos.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    }

    /// Restarts a crashed node from its disk.
    pub fn restart(&self, sim: &mut turmoil::Sim<'_>, id: u64) {
        sim.bounce(host_name(id));
    }

    /// Replaces node `id`'s data directory: stops it, wipes its disks and starts it in
    /// join mode, waiting to be added. Only for a node whose removal has committed.
    pub fn wipe_and_rejoin(&self, sim: &mut turmoil::Sim<'_>, id: u64) {
        self.crash(sim, id);
        self.disks[&id].wipe();
        self.restart(sim, id);
    }
}
