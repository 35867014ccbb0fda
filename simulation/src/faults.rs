//! Owns fault injection: a schedule drawn from the seed and applied between simulation
//! steps (turmoil's network and host controls are driven from outside the hosts), each
//! fault undone after a while, everything undone when the safety phase ends, and a
//! count of what actually happened (coverage).

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kuorum_api::seams::{Entropy, SplitMix64};

use crate::cluster::{host_name, SimCluster};
use crate::options::SimOptions;

/// What the faults and the cluster did in one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coverage {
    pub partitions: u64,
    pub one_way: u64,
    pub leader_isolations: u64,
    pub crashes: u64,
    pub leader_crashes: u64,
    pub restarts: u64,
    pub loss: u64,
    pub delays: u64,
    pub slow_disks: u64,
    pub leader_changes: u64,
    pub snapshot_installs: u64,
    pub compactions: u64,
    pub gone_410: u64,
    pub resumes_elsewhere: u64,
    pub ops: u64,
    pub unknown_writes: u64,
    pub watch_events: u64,
    /// Consistency checks in which a majority of voters held the checking node's state.
    pub consistency_agreed: u64,
    pub members: crate::membership::MemberCounts,
}

impl Coverage {
    pub fn rows(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("partitions (symmetric)", self.partitions),
            ("partitions (one-way)", self.one_way),
            ("leader isolations", self.leader_isolations),
            ("crashes (power loss)", self.crashes),
            ("  of which the leader", self.leader_crashes),
            ("restarts", self.restarts),
            ("lossy links", self.loss),
            ("delayed links", self.delays),
            ("slow disks", self.slow_disks),
            ("leader changes", self.leader_changes),
            ("snapshot installs", self.snapshot_installs),
            ("compactions", self.compactions),
            ("410 Gone (reads and watches)", self.gone_410),
            ("watch resumes on another node", self.resumes_elsewhere),
            ("client operations", self.ops),
            ("writes with unknown outcome", self.unknown_writes),
            ("watch events delivered", self.watch_events),
            ("consistency checks agreed", self.consistency_agreed),
            ("members removed (committed)", self.members.removed),
            ("nodes wiped and joined", self.members.wiped),
            ("learners added (caught up)", self.members.added),
            ("learners promoted", self.members.promoted),
        ]
    }
}

/// An undo due at a simulated time.
#[derive(Debug, Clone)]
enum Undo {
    Repair(String, String),
    RepairOneway(String, String),
    Restart(u64),
    LinkFail(String, String),
    Latency(String, String),
    Disk(u64),
}

/// The fault driver of one run.
pub struct Faults {
    rng: SplitMix64,
    opts: SimOptions,
    next_at: Duration,
    undo: Vec<(Duration, Undo)>,
    down: BTreeSet<u64>,
    pub coverage: Coverage,
}

impl Faults {
    pub fn new(opts: &SimOptions) -> Faults {
        let rng = SplitMix64::new(opts.seed ^ 0xFA17_5EED);
        Faults {
            next_at: Duration::from_secs(3),
            rng,
            opts: opts.clone(),
            undo: Vec::new(),
            down: BTreeSet::new(),
            coverage: Coverage::default(),
        }
    }

    fn pick(&self, n: u64) -> u64 {
        self.rng.next_u64() % n.max(1)
    }

    fn hosts(&self) -> Vec<String> {
        (1..=self.opts.nodes).map(host_name).collect()
    }

    /// Called between steps: does what is due at `now` (simulated time).
    pub fn tick(&mut self, sim: &mut turmoil::Sim<'_>, cluster: &SimCluster, leader: Option<u64>, now: Duration) {
        let due: Vec<Undo> = {
            let (due, keep): (Vec<_>, Vec<_>) = self.undo.drain(..).partition(|(t, _)| *t <= now);
            self.undo = keep;
            due.into_iter().map(|(_, u)| u).collect()
        };
        for u in due {
            self.undo_one(sim, cluster, u);
        }
        if now >= self.opts.fault_phase || now < self.next_at {
            return;
        }
        let mean = self.opts.fault_every.as_millis() as u64;
        self.next_at = now + Duration::from_millis(mean / 2 + self.pick(mean));
        let hold = Duration::from_millis(500 + self.pick(4000));
        let k = self.opts.faults;
        let mut choices = Vec::new();
        if k.partitions {
            choices.push(0);
        }
        if k.one_way {
            choices.push(1);
        }
        if k.leader_isolation && leader.is_some() {
            choices.push(2);
        }
        // Keep a majority up most of the time; sometimes take down more (safety only).
        let max_down = if self.pick(10) == 0 { self.opts.nodes } else { self.opts.nodes / 2 };
        if k.crashes && (self.down.len() as u64) < max_down {
            choices.push(3);
        }
        if k.loss {
            choices.push(4);
        }
        if k.delay {
            choices.push(5);
        }
        if k.slow_disk {
            choices.push(6);
        }
        if choices.is_empty() {
            return;
        }
        let hosts = self.hosts();
        let n = self.opts.nodes;
        match choices[self.pick(choices.len() as u64) as usize] {
            0 => {
                // Split off a random minority (1 or 2 nodes) from the rest.
                let cut = 1 + self.pick(n / 2);
                let start = self.pick(n);
                let side: Vec<u64> = (0..cut).map(|i| 1 + (start + i) % n).collect();
                for a in &side {
                    for b in (1..=n).filter(|b| !side.contains(b)) {
                        sim.partition(host_name(*a), host_name(b));
                        self.undo.push((now + hold, Undo::Repair(host_name(*a), host_name(b))));
                    }
                }
                self.coverage.partitions += 1;
            }
            1 => {
                let a = 1 + self.pick(n);
                let b = 1 + (a + self.pick(n - 1)) % n;
                sim.partition_oneway(host_name(a), host_name(b));
                self.undo.push((now + hold, Undo::RepairOneway(host_name(a), host_name(b))));
                self.coverage.one_way += 1;
            }
            2 => {
                let l = leader.expect("checked above");
                for b in (1..=n).filter(|b| *b != l) {
                    sim.partition(host_name(l), host_name(b));
                    self.undo.push((now + hold, Undo::Repair(host_name(l), host_name(b))));
                }
                self.coverage.leader_isolations += 1;
            }
            3 => {
                // Half the crashes hit the leader, whatever it is doing (mid-write).
                let up: Vec<u64> = (1..=n).filter(|i| !self.down.contains(i)).collect();
                let id = match leader {
                    Some(l) if self.pick(2) == 0 && up.contains(&l) => {
                        self.coverage.leader_crashes += 1;
                        l
                    }
                    _ => up[self.pick(up.len() as u64) as usize],
                };
                cluster.crash(sim, id);
                self.down.insert(id);
                self.undo.push((now + hold + Duration::from_secs(1), Undo::Restart(id)));
                self.coverage.crashes += 1;
            }
            4 => {
                let a = &hosts[self.pick(n) as usize];
                for b in hosts.iter().filter(|b| *b != a) {
                    sim.set_link_fail_rate(a.clone(), b.clone(), 0.02 + self.pick(8) as f64 / 100.0);
                    self.undo.push((now + hold, Undo::LinkFail(a.clone(), b.clone())));
                }
                self.coverage.loss += 1;
            }
            5 => {
                let a = &hosts[self.pick(n) as usize];
                let d = Duration::from_millis(20 + self.pick(300));
                for b in hosts.iter().filter(|b| *b != a) {
                    sim.set_link_latency(a.clone(), b.clone(), d);
                    self.undo.push((now + hold, Undo::Latency(a.clone(), b.clone())));
                }
                self.coverage.delays += 1;
            }
            _ => {
                let id = 1 + self.pick(n);
                cluster.disks[&id].log.sync_delay_ms.store(10 + self.pick(200), Ordering::Relaxed);
                self.undo.push((now + hold, Undo::Disk(id)));
                self.coverage.slow_disks += 1;
            }
        }
    }

    fn undo_one(&mut self, sim: &mut turmoil::Sim<'_>, cluster: &SimCluster, u: Undo) {
        match u {
            Undo::Repair(a, b) => sim.repair(a, b),
            Undo::RepairOneway(a, b) => sim.repair_oneway(a, b),
            Undo::Restart(id) => {
                if self.down.remove(&id) {
                    cluster.restart(sim, id);
                    self.coverage.restarts += 1;
                }
            }
            Undo::LinkFail(a, b) => sim.set_link_fail_rate(a, b, 0.0),
            Undo::Latency(a, b) => sim.set_link_latency(a, b, self.opts.min_latency),
            Undo::Disk(id) => cluster.disks[&id].log.sync_delay_ms.store(0, Ordering::Relaxed),
        }
    }

    /// Replaces node `id`'s data directory (asked by the membership operator once its
    /// removal committed): a restart pending from a crash is dropped, the node starts now.
    pub fn wipe(&mut self, sim: &mut turmoil::Sim<'_>, cluster: &SimCluster, id: u64) {
        self.down.remove(&id);
        cluster.wipe_and_rejoin(sim, id);
    }

    /// Ends the safety phase: undoes every fault now.
    pub fn heal(&mut self, sim: &mut turmoil::Sim<'_>, cluster: &SimCluster) {
        let all: Vec<Undo> = self.undo.drain(..).map(|(_, u)| u).collect();
        for u in all {
            self.undo_one(sim, cluster, u);
        }
        let hosts = self.hosts();
        for a in &hosts {
            for b in &hosts {
                if a < b {
                    sim.repair(a.clone(), b.clone());
                }
            }
        }
    }
}
