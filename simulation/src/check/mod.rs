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

/// Longest history K2 is asked to search (it is exponential). A longer history is
/// searched up to its last quiescent point within this many ops.
const K2_MAX_OPS: usize = 120;

/// The longest prefix (by call) of `ops` that ends at a quiescent point, with at most
/// `max` ops: every op in it returned before the first op after it was called. Such a
/// prefix is linearizable if the whole history is (real time puts all of it before
/// everything after it), so searching it alone is sound.
fn quiescent_prefix(mut ops: Vec<Op>, max: usize) -> Vec<Op> {
    ops.sort_by_key(|o| o.call);
    let (mut cut, mut max_ret) = (0, 0u64);
    for i in 0..ops.len().min(max) {
        max_ret = max_ret.max(ops[i].ret);
        if ops.get(i + 1).is_none_or(|next| max_ret < next.call) {
            cut = i + 1;
        }
    }
    ops.truncate(cut);
    ops
}

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
    let total = linearizable.len();
    let prefix = quiescent_prefix(linearizable, K2_MAX_OPS);
    if prefix.is_empty() {
        inconclusive.push(format!("K2: no quiescent point within the first {K2_MAX_OPS} of {total} ops"));
    } else {
        match k2_wgl::check(&prefix, &k2_wgl::K2Limits { max_ops: K2_MAX_OPS, ..Default::default() }) {
            k2_wgl::K2Verdict::Linearizable => {}
            k2_wgl::K2Verdict::Violation(d) => {
                v.push(Violation::new("K2", format!("in the first {} of {total} ops: {d}", prefix.len())))
            }
            k2_wgl::K2Verdict::Inconclusive { explored } => {
                inconclusive.push(format!("K2: gave up after {explored} states on {} ops", prefix.len()))
            }
        }
    }
    v.extend(watch::check(sessions, replay));
    v.extend(convergence::check(sessions, replay, states));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{OpKind, Outcome};

    fn op(call: u64, ret: u64) -> Op {
        Op {
            client: 0,
            node: 1,
            kind: OpKind::Create { key: "k".into(), value: call },
            call,
            ret,
            outcome: Outcome::AlreadyExists,
        }
    }

    #[test]
    fn the_prefix_ends_where_nothing_is_in_flight() {
        // [1,4] and [2,3] overlap; [5,6] starts after both returned; [7,∞) never returns.
        let ops = vec![op(5, 6), op(1, 4), op(2, 3), op(7, u64::MAX), op(8, 9)];
        let calls = |v: Vec<Op>| v.iter().map(|o| o.call).collect::<Vec<_>>();
        assert_eq!(calls(quiescent_prefix(ops.clone(), 10)), vec![1, 2, 5, 7, 8], "the whole history is a prefix");
        assert_eq!(calls(quiescent_prefix(ops.clone(), 4)), vec![1, 2, 5], "not inside [7,∞) and [8,9]");
        assert_eq!(calls(quiescent_prefix(ops.clone(), 2)), vec![1, 2]);
        assert_eq!(calls(quiescent_prefix(ops, 1)), Vec::<u64>::new(), "cutting inside an overlap is not allowed");
    }
}
