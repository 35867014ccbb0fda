//! Owns what can go wrong in a run and when: the [`Fault`]s, a [`FaultPlan`] (faults at
//! chosen times), and the random plan a [`FaultMix`] draws from the run's seed.
//!
//! A random plan never takes more than one node away at a time (an isolated, crashed or
//! paused node), so a quorum is always there: the faults are the ones a highly
//! available control plane is built to ride out, and a controller must survive them.

use std::time::Duration;

use kuorum_api::seams::{Entropy, SplitMix64};

/// One fault. Those with a duration last for the [`Scheduled::lasting`] they are given
/// and are undone after it; the rest happen at one instant.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Node `n` cut off from every other host: the other nodes and every client.
    IsolateNode(u64),
    /// A controller or workload host cut off from every node.
    IsolateHost(String),
    /// Node `n` loses power (what it had not synced is lost) and starts again after.
    CrashNode(u64),
    /// A controller host is killed, and started again after (its state is gone).
    RestartHost(String),
    /// The leader hands the leadership to another node (instant).
    MoveLeader,
    /// Every open watch on every node ends with an ERROR event carrying 410 Expired, as
    /// when the server compacted past it (instant): watchers must relist.
    ExpireWatches,
    /// Every open watch on every node is cut without a final event (instant): watchers
    /// resume from the last resourceVersion they saw.
    CutWatches,
    /// The cluster's history is compacted up to now and every watch is cut (instant): a
    /// watcher that resumes from an older resourceVersion gets 410.
    Compact,
    /// Every API request on every node is held back this long before it is served.
    Latency(Duration),
    /// This fraction of API requests is answered 429 TooManyRequests with Retry-After.
    Throttle(f64),
    /// This fraction of API requests is answered `code` (500, 503 or 504); with
    /// `after_serving` the request is served first, so a write may have happened.
    Errors { code: u16, rate: f64, after_serving: bool },
    /// Node `n` stops applying committed entries: its cache and its Any reads fall
    /// behind; its consistent reads and the writes it leads wait.
    PauseApply(u64),
}

impl Fault {
    /// Whether this fault takes a node away from the quorum while it lasts.
    pub fn takes_a_node(&self) -> bool {
        matches!(self, Fault::IsolateNode(_) | Fault::CrashNode(_) | Fault::PauseApply(_))
    }

    /// Whether it happens at one instant (its duration is ignored).
    pub fn instant(&self) -> bool {
        matches!(self, Fault::MoveLeader | Fault::ExpireWatches | Fault::CutWatches | Fault::Compact)
    }
}

/// A fault and when.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    /// Simulated time since the start of the run.
    pub at: Duration,
    pub fault: Fault,
    pub lasting: Duration,
}

/// The faults of one run, in time order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    pub faults: Vec<Scheduled>,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> FaultPlan {
        FaultPlan::default()
    }

    /// This plan and `fault` at `at`, lasting `lasting`.
    pub fn at(mut self, at: Duration, fault: Fault, lasting: Duration) -> FaultPlan {
        self.faults.push(Scheduled { at, fault, lasting });
        self.faults.sort_by_key(|s| s.at);
        self
    }
}

/// The kinds of fault a random plan draws from (each with its parameters drawn too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    IsolateNode,
    IsolateHost,
    CrashNode,
    RestartHost,
    MoveLeader,
    ExpireWatches,
    CutWatches,
    Compact,
    Latency,
    Throttle,
    Errors,
    PauseApply,
}

impl FaultKind {
    pub const ALL: [FaultKind; 12] = [
        FaultKind::IsolateNode,
        FaultKind::IsolateHost,
        FaultKind::CrashNode,
        FaultKind::RestartHost,
        FaultKind::MoveLeader,
        FaultKind::ExpireWatches,
        FaultKind::CutWatches,
        FaultKind::Compact,
        FaultKind::Latency,
        FaultKind::Throttle,
        FaultKind::Errors,
        FaultKind::PauseApply,
    ];
}

/// What a random plan draws: which kinds, how often, for how long.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultMix {
    pub kinds: Vec<FaultKind>,
    /// Time between one fault's start and the next's: uniform in this range.
    pub gap: (Duration, Duration),
    /// How long a lasting fault lasts: uniform in this range.
    pub lasting: (Duration, Duration),
}

impl Default for FaultMix {
    fn default() -> Self {
        FaultMix::all()
    }
}

impl FaultMix {
    /// Every kind, a fault every 1 to 5 s, each lasting 1 to 20 s.
    pub fn all() -> FaultMix {
        FaultMix::only(&FaultKind::ALL)
    }

    /// Only these kinds, with the default timing.
    pub fn only(kinds: &[FaultKind]) -> FaultMix {
        FaultMix {
            kinds: kinds.to_vec(),
            gap: (Duration::from_secs(1), Duration::from_secs(5)),
            lasting: (Duration::from_secs(1), Duration::from_secs(20)),
        }
    }

    /// The plan for one run: faults between `from` and `until` (every lasting fault is
    /// over by `until`), on `nodes` nodes and the given controller and workload hosts.
    pub fn plan(
        &self,
        seed: u64,
        nodes: u64,
        controllers: &[String],
        clients: &[String],
        from: Duration,
        until: Duration,
    ) -> FaultPlan {
        let rng = SplitMix64::new(seed ^ 0xFA17_FA17_FA17_FA17);
        let uniform = |lo: Duration, hi: Duration| -> Duration {
            let span = hi.saturating_sub(lo).as_millis() as u64;
            lo + Duration::from_millis(if span == 0 { 0 } else { rng.next_u64() % (span + 1) })
        };
        let pick = |n: usize| (rng.next_u64() % n as u64) as usize;
        let mut plan = FaultPlan::none();
        let mut node_busy_until = Duration::ZERO;
        // A host has one fault at a time: two would undo each other's end.
        let mut host_busy_until: std::collections::BTreeMap<String, Duration> = Default::default();
        let mut at = from + uniform(self.gap.0, self.gap.1);
        while at < until && !self.kinds.is_empty() {
            let kind = self.kinds[pick(self.kinds.len())];
            let lasting = uniform(self.lasting.0, self.lasting.1).min(until - at);
            let node = 1 + (rng.next_u64() % nodes.max(1));
            let fault = match kind {
                FaultKind::IsolateNode => Some(Fault::IsolateNode(node)),
                FaultKind::CrashNode => Some(Fault::CrashNode(node)),
                FaultKind::PauseApply => Some(Fault::PauseApply(node)),
                FaultKind::IsolateHost => {
                    let hosts: Vec<&String> = controllers.iter().chain(clients).collect();
                    (!hosts.is_empty()).then(|| Fault::IsolateHost(hosts[pick(hosts.len())].clone()))
                }
                FaultKind::RestartHost => {
                    (!controllers.is_empty()).then(|| Fault::RestartHost(controllers[pick(controllers.len())].clone()))
                }
                FaultKind::MoveLeader => Some(Fault::MoveLeader),
                FaultKind::ExpireWatches => Some(Fault::ExpireWatches),
                FaultKind::CutWatches => Some(Fault::CutWatches),
                FaultKind::Compact => Some(Fault::Compact),
                FaultKind::Latency => Some(Fault::Latency(Duration::from_millis(50 + rng.next_u64() % 1950))),
                FaultKind::Throttle => Some(Fault::Throttle((10 + rng.next_u64() % 60) as f64 / 100.0)),
                FaultKind::Errors => Some(Fault::Errors {
                    code: [500, 503, 504][pick(3)],
                    rate: (5 + rng.next_u64() % 30) as f64 / 100.0,
                    after_serving: rng.next_u64() % 2 == 0,
                }),
            };
            if let Some(fault) = fault {
                let host = match &fault {
                    Fault::IsolateHost(h) | Fault::RestartHost(h) => Some(h.clone()),
                    _ => None,
                };
                // One node away at a time: skip a node fault while another lasts.
                let node_free = !fault.takes_a_node() || at >= node_busy_until;
                let host_free = host.as_ref().is_none_or(|h| host_busy_until.get(h).is_none_or(|until| at >= *until));
                if node_free && host_free {
                    if fault.takes_a_node() {
                        node_busy_until = at + lasting;
                    }
                    if let Some(h) = host {
                        host_busy_until.insert(h, at + lasting);
                    }
                    plan.faults.push(Scheduled { at, fault, lasting });
                }
            }
            at += uniform(self.gap.0, self.gap.1);
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_plan_is_a_function_of_the_seed_and_keeps_a_quorum() {
        let hosts = vec!["ctl".to_string()];
        let (from, until) = (Duration::from_secs(5), Duration::from_secs(120));
        let a = FaultMix::all().plan(7, 3, &hosts, &[], from, until);
        assert_eq!(a, FaultMix::all().plan(7, 3, &hosts, &[], from, until));
        assert_ne!(a, FaultMix::all().plan(8, 3, &hosts, &[], from, until));
        assert!(a.faults.len() > 10, "{} faults", a.faults.len());
        let mut busy_until = Duration::ZERO;
        for s in &a.faults {
            assert!(s.at >= from && s.at + s.lasting <= until, "{s:?}");
            if s.fault.takes_a_node() {
                assert!(s.at >= busy_until, "two nodes away at once: {s:?}");
                busy_until = s.at + s.lasting;
            }
        }
        let kinds: std::collections::BTreeSet<String> = a
            .faults
            .iter()
            .map(|s| format!("{:?}", s.fault).split('(').next().unwrap_or_default().to_string())
            .collect();
        assert!(kinds.len() >= 8, "only {} kinds drawn", kinds.len());
    }
}
