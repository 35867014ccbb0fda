//! Owns the derivation of a whole run from one seed: cluster size, latencies, message
//! loss, the fault schedule's rates, the client mix and the durations. Everything a run
//! does is a function of [`SimOptions`], and `SimOptions` is a function of the seed, so
//! printing the seed (and the options, for the reader) is enough to replay a run.

use std::fmt;
use std::time::Duration;

use kuorum_api::seams::{Entropy, SplitMix64};

/// Everything one run is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    pub seed: u64,
    /// 3 or 5 nodes.
    pub nodes: u64,
    /// Per-message latency range of every link.
    pub min_latency: Duration,
    pub max_latency: Duration,
    /// Simulated time with faults (safety phase); then faults stop and the cluster heals.
    pub fault_phase: Duration,
    /// Simulated time after healing in which every node and watcher must catch up.
    pub heal_phase: Duration,
    /// Mean simulated time between two fault actions in the safety phase.
    pub fault_every: Duration,
    /// Which kinds of fault this run may use (a run with all of them at once is mostly
    /// unavailable, so each seed picks a subset).
    pub faults: FaultKinds,
    /// Writer/reader clients (one op in flight each) and list-then-watch clients.
    pub clients: u32,
    pub watchers: u32,
    /// Keys per resource (configmaps and secrets in namespace `default`).
    pub keys: u32,
    /// The leader compacts history older than this.
    pub compaction_window: Duration,
    /// Raft: snapshot after this many entries, keeping this many behind it.
    pub snapshot_every: u64,
    pub logs_to_keep: u64,
}

/// The fault kinds a run may inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultKinds {
    pub partitions: bool,
    pub one_way: bool,
    pub leader_isolation: bool,
    pub crashes: bool,
    pub loss: bool,
    pub delay: bool,
    pub slow_disk: bool,
    /// Members removed, wiped and added back ([`crate::membership`]).
    pub membership: bool,
}

impl FaultKinds {
    pub fn names(&self) -> Vec<&'static str> {
        let all = [
            (self.partitions, "partition"),
            (self.one_way, "one-way"),
            (self.leader_isolation, "leader-isolation"),
            (self.crashes, "crash"),
            (self.loss, "loss"),
            (self.delay, "delay"),
            (self.slow_disk, "slow-disk"),
            (self.membership, "membership"),
        ];
        all.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect()
    }
}

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

impl SimOptions {
    /// The options seed `seed` stands for.
    pub fn from_seed(seed: u64) -> SimOptions {
        let r = SplitMix64::new(seed ^ 0x005E_ED0F_0F71_0235);
        let pick = |n: u64| r.next_u64() % n;
        let nodes = if pick(4) == 0 { 5 } else { 3 };
        let min_latency = ms(1 + pick(3));
        let max_latency = min_latency + ms(pick(20));
        let mut faults = FaultKinds {
            partitions: pick(2) == 0,
            one_way: pick(3) == 0,
            leader_isolation: pick(2) == 0,
            crashes: pick(3) != 0,
            loss: pick(4) == 0,
            delay: pick(2) == 0,
            slow_disk: pick(3) == 0,
            membership: false,
        };
        if faults.names().is_empty() {
            faults.crashes = true;
        }
        let snapshot_every = [40, 100, 400][pick(3) as usize];
        let mut opts = SimOptions {
            seed,
            nodes,
            min_latency,
            max_latency,
            fault_phase: Duration::from_secs(20 + pick(20)),
            heal_phase: Duration::from_secs(30),
            fault_every: ms(1500 + pick(3000)),
            faults,
            clients: 3 + pick(4) as u32,
            watchers: 2 + pick(3) as u32,
            keys: 5,
            compaction_window: Duration::from_secs(3 + pick(8)),
            snapshot_every,
            logs_to_keep: snapshot_every / 4,
        };
        // Drawn last, so every other option of a seed is what it was before membership
        // changes were added.
        opts.faults.membership = pick(2) == 0;
        opts
    }

    /// The command that replays this run exactly.
    pub fn replay_command(&self, mutation: Option<&str>) -> String {
        let m = mutation.map(|m| format!(" --features mutations -- --mutation {m}")).unwrap_or_else(|| " --".into());
        format!("cargo run --release -p kuorum-sim{m} --seed {}", self.seed)
    }
}

impl fmt::Display for SimOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {} | {} nodes | latency {}-{} ms | faults [{}] every ~{} ms for {} s, then {} s healing | \
             {} clients, {} watchers, {} keys x 2 resources | compaction window {} s | snapshot every {} (keep {})",
            self.seed,
            self.nodes,
            self.min_latency.as_millis(),
            self.max_latency.as_millis(),
            self.faults.names().join(","),
            self.fault_every.as_millis(),
            self.fault_phase.as_secs(),
            self.heal_phase.as_secs(),
            self.clients,
            self.watchers,
            self.keys,
            self.compaction_window.as_secs(),
            self.snapshot_every,
            self.logs_to_keep,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_decides_everything() {
        assert_eq!(SimOptions::from_seed(42), SimOptions::from_seed(42));
        let sizes: std::collections::BTreeSet<u64> = (0..64).map(|s| SimOptions::from_seed(s).nodes).collect();
        assert_eq!(sizes, [3, 5].into_iter().collect(), "both cluster sizes occur");
        assert!((0..64).all(|s| !SimOptions::from_seed(s).faults.names().is_empty()));
    }
}
