//! A simulated cluster: N hosts `node1..nodeN`, each running a whole kuorum node on the
//! in-memory engines. The engines ("disks") live outside the hosts so a crashed and
//! restarted host comes back with what it had synced.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kuorum_api::seams::{Clock, SplitMix64};
use kuorum_node::{start_node, NodeConfig, NodeSeams};
use kuorum_raft::RaftTiming;
use kuorum_store::memory::{MemoryLogEngine, MemoryObjectEngine};
use kuorum_watch::WatchCache;

use crate::net::{peer_incoming, SimDialer, SimListener};

pub const REST_PORT: u16 = 6443;
pub const PEER_PORT: u16 = 7443;

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

/// One node's storage, outliving its host.
#[derive(Debug, Default, Clone)]
pub struct SimNodeDisks {
    pub log: MemoryLogEngine,
    pub objects: MemoryObjectEngine,
}

impl SimNodeDisks {
    /// A power loss: what was not synced is gone.
    pub fn crash(&self) {
        self.log.crash();
        self.objects.crash();
    }
}

/// The hosts of a simulated cluster, their disks, and (for checkers) the watch cache each
/// running node currently has.
pub struct SimCluster {
    pub nodes: u64,
    pub disks: BTreeMap<u64, SimNodeDisks>,
    pub caches: Arc<Mutex<BTreeMap<u64, Arc<WatchCache>>>>,
}

pub fn host_name(id: u64) -> String {
    format!("node{id}")
}

impl SimCluster {
    /// Registers hosts `node1..=nodeN` in `sim`, each running a kuorum node.
    pub fn start(sim: &mut turmoil::Sim<'_>, nodes: u64, seed: u64) -> SimCluster {
        Self::start_with(sim, nodes, seed, RaftTiming::default())
    }

    /// As [`SimCluster::start`], with the given Raft timing and snapshot policy.
    pub fn start_with(sim: &mut turmoil::Sim<'_>, nodes: u64, seed: u64, timing: RaftTiming) -> SimCluster {
        let members: BTreeMap<u64, String> =
            (1..=nodes).map(|i| (i, format!("{}:{PEER_PORT}", host_name(i)))).collect();
        let mut disks = BTreeMap::new();
        let caches: Arc<Mutex<BTreeMap<u64, Arc<WatchCache>>>> = Arc::default();
        for id in 1..=nodes {
            let caches_out = caches.clone();
            let d = SimNodeDisks::default();
            disks.insert(id, d.clone());
            let members = members.clone();
            let timing = timing.clone();
            sim.host(host_name(id), move || {
                let caches_out = caches_out.clone();
                let d = d.clone();
                let members = members.clone();
                let timing = timing.clone();
                async move {
                    let rest = turmoil::net::TcpListener::bind(("0.0.0.0", REST_PORT)).await?;
                    let peer = turmoil::net::TcpListener::bind(("0.0.0.0", PEER_PORT)).await?;
                    let cfg =
                        NodeConfig { timing, request_timeout: Duration::from_secs(10), ..NodeConfig::new(id, members) };
                    let seams = NodeSeams {
                        rest_listener: SimListener(rest),
                        peer_incoming: peer_incoming(peer),
                        dialer: Arc::new(SimDialer),
                        clock: Arc::new(SimClock),
                        entropy: Arc::new(SplitMix64::new(seed ^ id.wrapping_mul(0x9E37_79B9))),
                        log_engine: Arc::new(d.log.clone()),
                        object_engine: Arc::new(d.objects.clone()),
                    };
                    let node = start_node(cfg, seams).await.map_err(|e| e.to_string())?;
                    caches_out.lock().unwrap_or_else(|e| e.into_inner()).insert(id, node.cache.clone());
                    std::future::pending::<()>().await;
                    Ok(())
                }
            });
        }
        SimCluster { nodes, disks, caches }
    }
}
