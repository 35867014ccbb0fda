//! Owns K1, the resourceVersion-witness linearizability check over a whole history, and
//! K3, the reads that are not linearizable by contract (RV "0", NotOlderThan, Exact).
//!
//! K1 takes RV order as the linearization order, which is sound because RV = Raft log
//! index. With `pos` the RV of a write or of a Most-Recent list:
//! (a) successful writes have distinct RVs;
//! (b) real time is respected: if A returned before B was called, pos(A) < pos(B) when B
//!     is a write and pos(A) <= pos(B) when B is a list;
//! (c) a write's RV is where the replay applied exactly that write, and a list at RV r
//!     equals the replay's state at r;
//! (d) a result without an RV of its own (a get, a 404, a 409) is what the replay holds
//!     for its key at some RV inside its real-time window [L, U], where L is the largest
//!     pos returned before its call and U the smallest pos called after its return.
//!
//! Worked example: a get called at t=10, returning at t=14, saw `k1` at mod RV 30. A
//! write at RV 31 (value changed) returned at t=9, so L = 31: at every RV >= 31 `k1`
//! is no longer at 30, and the get is a stale read.

use crate::check::Violation;
use crate::history::{Op, OpKind, Outcome, ReadMode, Seen};
use crate::replay::Replay;

/// Whether `op` takes part in the linearizable history (K1/K2): writes that changed
/// something or were definitely refused by state, and Most-Recent reads with an answer.
pub fn takes_part(op: &Op) -> bool {
    match (&op.kind, &op.outcome) {
        (_, Outcome::Unknown | Outcome::Refused(_) | Outcome::Gone | Outcome::TooLarge) => false,
        (OpKind::Get { mode, .. } | OpKind::List { mode, .. }, _) => *mode == ReadMode::MostRecent,
        _ => true,
    }
}

/// The RV an op is pinned at, if any.
fn pos(op: &Op) -> Option<u64> {
    match (&op.kind, &op.outcome) {
        (k, Outcome::Written { rv }) if k.is_write() => Some(*rv),
        (OpKind::List { .. }, Outcome::Listed { rv, .. }) => Some(*rv),
        _ => None,
    }
}

pub fn check(ops: &[Op], replay: &Replay) -> Vec<Violation> {
    let mut v = Vec::new();
    let lin: Vec<&Op> = ops.iter().filter(|o| takes_part(o)).collect();

    // (a)
    let mut rvs: Vec<(u64, &Op)> =
        lin.iter().filter(|o| o.kind.is_write()).filter_map(|o| pos(o).map(|p| (p, *o))).collect();
    rvs.sort_by_key(|(rv, _)| *rv);
    for w in rvs.windows(2) {
        if w[0].0 == w[1].0 {
            v.push(Violation::new(
                "K1",
                format!("two writes acknowledged at RV {}: {:?} and {:?}", w[0].0, w[0].1, w[1].1),
            ));
        }
    }

    // (b) and the lower bounds of (d): sweep calls in order, folding in what returned.
    let mut by_call: Vec<&Op> = lin.clone();
    by_call.sort_by_key(|o| o.call);
    let mut by_ret: Vec<&Op> = lin.iter().copied().filter(|o| o.ret != u64::MAX).collect();
    by_ret.sort_by_key(|o| o.ret);
    let mut lower = std::collections::HashMap::new();
    let (mut i, mut max_pos, mut max_from) = (0usize, 0u64, None::<&Op>);
    for b in &by_call {
        while i < by_ret.len() && by_ret[i].ret < b.call {
            if let Some(p) = pos(by_ret[i]) {
                if p >= max_pos {
                    max_pos = p;
                    max_from = Some(by_ret[i]);
                }
            }
            i += 1;
        }
        if let Some(p) = pos(b) {
            let ok = if b.kind.is_write() { p > max_pos } else { p >= max_pos };
            if let (false, Some(from)) = (ok, max_from) {
                v.push(Violation::new(
                    "K1",
                    format!("real-time order broken: {b:?} is at RV {p} but {from:?} returned before it was called"),
                ));
            }
        }
        lower.insert((b.client, b.call), max_pos);
    }

    // Upper bounds of (d): sweep returns backwards, folding in what was called after.
    let mut upper = std::collections::HashMap::new();
    let mut by_call_desc = by_call.clone();
    by_call_desc.reverse();
    let mut by_ret_desc = by_ret.clone();
    by_ret_desc.reverse();
    let (mut j, mut min_bound) = (0usize, u64::MAX);
    for a in &by_ret_desc {
        while j < by_call_desc.len() && by_call_desc[j].call > a.ret {
            if let Some(p) = pos(by_call_desc[j]) {
                // The state a read saw excludes a write called later (< its RV) and is
                // not newer than a list called later (<= its RV).
                let bound = if by_call_desc[j].kind.is_write() { p.saturating_sub(1) } else { p };
                min_bound = min_bound.min(bound);
            }
            j += 1;
        }
        upper.insert((a.client, a.call), min_bound);
    }

    // (c) and (d).
    for op in &lin {
        let l = lower.get(&(op.client, op.call)).copied().unwrap_or(0);
        let u = upper.get(&(op.client, op.call)).copied().unwrap_or(u64::MAX);
        match (&op.kind, &op.outcome) {
            (OpKind::Create { key, value } | OpKind::Update { key, value, .. }, Outcome::Written { rv }) => {
                let change =
                    replay.changes.get(rv).and_then(|l| l.iter().find(|a| &a.key == key && a.seen.value == *value));
                // An update that succeeded replaced exactly the version it named.
                if let (OpKind::Update { precondition, .. }, Some(a)) = (&op.kind, change) {
                    if a.prev.map(|p| p.mod_rv) != Some(*precondition) {
                        v.push(Violation::new(
                            "K1",
                            format!("update applied over version {:?}, not its precondition: {op:?}", a.prev),
                        ));
                    }
                }
                if change.is_none() {
                    v.push(Violation::new(
                        "K1",
                        format!("acknowledged write is not in the replicated history at its RV: {op:?}"),
                    ));
                }
            }
            (OpKind::Delete { key, .. }, Outcome::Written { rv }) => {
                let here = replay
                    .changes
                    .get(rv)
                    .is_some_and(|l| l.iter().any(|a| &a.key == key && a.kind == crate::history::EventType::Deleted));
                if !here {
                    v.push(Violation::new(
                        "K1",
                        format!("acknowledged delete is not in the replicated history: {op:?}"),
                    ));
                }
            }
            (OpKind::List { prefix, .. }, Outcome::Listed { rv, items }) => {
                let want = replay.state_at(prefix, *rv);
                if &want != items {
                    v.push(Violation::new(
                        "K1",
                        format!(
                            "list at RV {rv} differs from the replay there: got {items:?}, replay {want:?} ({op:?})"
                        ),
                    ));
                }
            }
            (kind, outcome) => {
                let Some(key) = kind.key() else { continue };
                let fits = |s: Option<Seen>| match (kind, outcome) {
                    (_, Outcome::Found(seen)) => s == Some(*seen),
                    (_, Outcome::NotFound) => s.is_none(),
                    (OpKind::Update { precondition, .. } | OpKind::Delete { precondition, .. }, Outcome::Conflict) => {
                        s.is_some_and(|s| s.mod_rv != *precondition)
                    }
                    (_, Outcome::AlreadyExists) => s.is_some(),
                    _ => true,
                };
                let explained = replay.intervals(key).into_iter().any(|(from, to, s)| from <= u && to > l && fits(s));
                if !explained {
                    v.push(Violation::new("K1", format!("no state of {key} in RV window [{l}, {u}] explains {op:?}")));
                }
            }
        }
    }

    v.extend(check_k3(ops, replay));
    v
}

/// K3: reads that may be stale by contract must still be a real state, and not older
/// than they asked for.
fn check_k3(ops: &[Op], replay: &Replay) -> Vec<Violation> {
    let mut v = Vec::new();
    for op in ops {
        let mode = match &op.kind {
            OpKind::Get { mode, .. } | OpKind::List { mode, .. } if *mode != ReadMode::MostRecent => *mode,
            _ => continue,
        };
        let floor = match mode {
            ReadMode::NotOlderThan(n) | ReadMode::Exact(n) => n,
            _ => 0,
        };
        match (&op.kind, &op.outcome) {
            (OpKind::List { prefix, .. }, Outcome::Listed { rv, items }) => {
                if *rv < floor || matches!(mode, ReadMode::Exact(n) if n != *rv) || *rv > replay.max_applied {
                    v.push(Violation::new("K3", format!("list answered at RV {rv} for {mode:?}: {op:?}")));
                } else if &replay.state_at(prefix, *rv) != items {
                    v.push(Violation::new(
                        "K3",
                        format!(
                            "{mode:?} list at RV {rv} differs from the replay there ({:?}): {op:?}",
                            replay.state_at(prefix, *rv)
                        ),
                    ));
                }
            }
            (OpKind::Get { key, .. }, Outcome::Found(_) | Outcome::NotFound) => {
                let want = match &op.outcome {
                    Outcome::Found(s) => Some(*s),
                    _ => None,
                };
                // The state must have been current at some RV >= the floor.
                let ok = replay.intervals(key).into_iter().any(|(_, to, s)| to > floor && s == want);
                if !ok {
                    v.push(Violation::new(
                        "K3",
                        format!("{mode:?} get saw a state of {key} never current at or after RV {floor}: {op:?}"),
                    ));
                }
            }
            (_, Outcome::Gone) if floor >= replay.compacted() => {
                v.push(Violation::new(
                    "K3",
                    format!("410 for RV {floor}, but nothing at or above it was compacted: {op:?}"),
                ));
            }
            _ => {}
        }
    }
    v
}
