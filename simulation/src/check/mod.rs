//! Owns the checkers: each property of `../shared/notes/verification.md` in its own
//! file, reading only the clients' [`crate::history`] and the [`crate::replay`].
//!
//! | file | properties |
//! |---|---|
//! | `k4_settle.rs` | K4: writes with unknown outcome, settled from the replicated logs |
//! | `k1_rv_witness.rs` | K1: linearizability by resourceVersion witness; K3: reads at older RVs |
//! | `k2_wgl.rs` | K2: Wing-Gong/Lowe search, a cross-check on short histories |
//! | `watch.rs` | W1-W11: every watch session against the replay |
//! | `convergence.rs` | W12 and R2: after healing, every node and watcher caught up, equal states |
//! | `replay.rs` (crate root) | R1: nodes never applied different changes at one index |
//!
//! R1's election safety (one leader per term) is sampled between simulation steps in
//! `run.rs`; D1 (determinism) is the runner running a seed twice.

use std::collections::BTreeMap;

use crate::history::{Op, WatchSession};
use crate::replay::Replay;

pub mod convergence;
pub mod k1_rv_witness;
pub mod k2_wgl;
pub mod k4_settle;
pub mod watch;

/// One property broken, with what shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub property: &'static str,
    pub detail: String,
}

impl Violation {
    pub fn new(property: &'static str, detail: impl Into<String>) -> Violation {
        Violation { property, detail: detail.into() }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.property, self.detail)
    }
}

/// Longest history K2 is asked to search (it is exponential); longer ones are checked by
/// K1 alone and K2 is reported inconclusive for them.
const K2_MAX_OPS: usize = 120;

/// Runs every checker. `states`: per node, its applied index and a hash of its objects.
pub fn all(
    ops: &[Op],
    sessions: &[WatchSession],
    replay: &Replay,
    states: &BTreeMap<u64, (u64, u64)>,
    inconclusive: &mut Vec<String>,
) -> Vec<Violation> {
    let mut v = Vec::new();
    for d in &replay.disagreements {
        v.push(Violation::new("R1", d.clone()));
    }
    let (settled, mut k4) = k4_settle::settle(ops, replay);
    v.append(&mut k4);
    v.extend(k1_rv_witness::check(&settled, replay));
    let linearizable: Vec<Op> = settled.iter().filter(|o| k1_rv_witness::takes_part(o)).cloned().collect();
    if linearizable.len() <= K2_MAX_OPS {
        match k2_wgl::check(&linearizable, &k2_wgl::K2Limits { max_ops: K2_MAX_OPS, ..Default::default() }) {
            k2_wgl::K2Verdict::Linearizable => {}
            k2_wgl::K2Verdict::Violation(d) => v.push(Violation::new("K2", d)),
            k2_wgl::K2Verdict::Inconclusive { explored } => {
                inconclusive.push(format!("K2: gave up after {explored} states"))
            }
        }
    } else {
        inconclusive.push(format!("K2: {} ops, over its limit of {K2_MAX_OPS}", linearizable.len()));
    }
    v.extend(watch::check(sessions, replay));
    v.extend(convergence::check(sessions, replay, states));
    v
}
