//! Owns the K2 cross-check: a Wing & Gong linearizability search, with Lowe's cache, of the whole
//! client history against a sequential model of the key-value API.
//!
//! The search looks for one order of the ops that (1) keeps every op that returned before another
//! was called ahead of it and (2) gives every op exactly the reply it got when replayed on [`Model`].
//! At each step it may take any "minimal" op (no pending op returned before it was called); a dead end
//! backtracks. Lowe's cache remembers each (set of ops taken, model state) pair once explored: two orders
//! of the same ops that reach the same state have the same futures, so the second is pruned.
//!
//! Worked example (one key `k`, `[call, return]` on the logical clock):
//! ```text
//! #0 create k=1        [1, 4] -> Written { rv: 5 }
//! #1 get k             [2, 3] -> NotFound
//! #2 update k=2 pre 5  [5, 8] -> Written { rv: 9 }
//! #3 get k             [6, 7] -> Found { mod_rv: 5, value: 1 }
//! ```
//! #0 and #1 overlap and #1 saw no object, so #1 goes first; #3 ends inside #2's window and saw the
//! old value, so #3 goes before #2: `#1 #0 #3 #2` fits. Had #3 seen `NotFound`, no place would fit
//! it (k exists from #0 on) and the verdict would be a violation naming #3.
//!
//! RVs are global (one Raft log index space), so the history is NOT split by key: a per-key check
//! would accept two keys whose writes' RVs contradict real-time order.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};

use crate::history::{Key, Op, OpKind, Outcome, ReadMode, Seen, ValueId};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum K2Verdict {
    Linearizable,
    /// No order fits; the text names the longest order that did and why each next op could not follow.
    Violation(String),
    /// Too many ops, or the search gave up after `explored` states. Never a pass.
    Inconclusive {
        explored: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct K2Limits {
    /// More participating ops than this: don't search at all (the search is exponential).
    pub max_ops: usize,
    /// Give up after creating this many distinct (ops taken, state) search states.
    pub max_states: u64,
}

impl Default for K2Limits {
    fn default() -> Self {
        K2Limits { max_ops: 64, max_states: 2_000_000 }
    }
}

/// The sequential specification: the highest RV known so far and the live objects.
/// RVs are Raft log indices and other entries consume indices too, so writes need `rv > rev`,
/// not `rv == rev + 1`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
struct Model {
    rev: u64,
    objs: BTreeMap<Key, Seen>,
}

impl Model {
    /// Applies `op` with its recorded reply; `Err` says why that reply is impossible in this state.
    fn apply(&mut self, op: &Op) -> Result<(), &'static str> {
        match (&op.kind, &op.outcome) {
            (OpKind::Create { key, value }, Outcome::Written { rv }) => {
                if self.objs.contains_key(key) {
                    return Err("create succeeded but the key exists");
                }
                self.write(key, Some(*value), *rv)
            }
            (OpKind::Create { key, .. }, Outcome::AlreadyExists) => match self.objs.contains_key(key) {
                true => Ok(()),
                false => Err("AlreadyExists but the key is absent"),
            },
            (OpKind::Update { key, value, precondition }, out) => self.guarded(key, *precondition, out, Some(*value)),
            (OpKind::Delete { key, precondition }, out) => self.guarded(key, *precondition, out, None),
            (OpKind::Get { key, .. }, Outcome::Found(seen)) => match self.objs.get(key) {
                Some(cur) if cur == seen => Ok(()),
                Some(_) => Err("get saw another version than the current one"),
                None => Err("get found an object but the key is absent"),
            },
            (OpKind::Get { key, .. }, Outcome::NotFound) => match self.objs.contains_key(key) {
                true => Err("get said NotFound but the key exists"),
                false => Ok(()),
            },
            (OpKind::List { prefix, .. }, Outcome::Listed { rv, items }) => {
                // A list's RV is an applied index: it covers every write placed before it.
                if *rv < self.rev {
                    return Err("list RV below a write already placed");
                }
                if !self.objs.iter().filter(|(k, _)| k.starts_with(prefix.as_str())).eq(items.iter()) {
                    return Err("list items differ from the model");
                }
                self.rev = *rv;
                Ok(())
            }
            _ => Err("this reply is impossible for this kind of request"),
        }
    }

    /// Update or delete (`value: None`) with a resourceVersion precondition.
    fn guarded(&mut self, key: &str, pre: u64, out: &Outcome, value: Option<ValueId>) -> Result<(), &'static str> {
        match (out, self.objs.get(key).map(|s| s.mod_rv)) {
            (Outcome::Written { rv }, Some(cur)) if cur == pre => self.write(key, value, *rv),
            (Outcome::Written { .. }, Some(_)) => Err("write succeeded but its precondition does not hold"),
            (Outcome::Written { .. }, None) => Err("write succeeded but the key is absent"),
            (Outcome::Conflict, Some(cur)) if cur != pre => Ok(()),
            (Outcome::Conflict, Some(_)) => Err("Conflict but the precondition holds"),
            (Outcome::Conflict, None) => Err("Conflict but the key is absent"),
            (Outcome::NotFound, None) => Ok(()),
            (Outcome::NotFound, Some(_)) => Err("NotFound but the key exists"),
            _ => Err("this reply is impossible for this kind of request"),
        }
    }

    fn write(&mut self, key: &str, value: Option<ValueId>, rv: u64) -> Result<(), &'static str> {
        if rv <= self.rev {
            return Err("write RV not above the highest RV placed so far");
        }
        match value {
            Some(value) => self.objs.insert(key.to_string(), Seen { mod_rv: rv, value }),
            None => self.objs.remove(key),
        };
        self.rev = rv;
        Ok(())
    }

    /// The cache keeps only this hash, not the state: a collision can only prune an unexplored branch,
    /// i.e. turn a pass into a spurious violation, never hide one (odds ~1e-7 at 2M states).
    fn digest(&self) -> u64 {
        let mut h = DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

/// Which recorded ops the linearizability claim covers (the spec only promises it for these).
fn takes_part(op: &Op) -> bool {
    match (&op.kind, &op.outcome) {
        (_, Outcome::Unknown | Outcome::Refused(_)) => false,
        (kind, _) if kind.is_write() => true,
        (OpKind::Get { mode, .. } | OpKind::List { mode, .. }, out) => {
            *mode == ReadMode::MostRecent && !matches!(out, Outcome::Gone | Outcome::TooLarge)
        }
        _ => false,
    }
}

/// One level of the explicit search stack.
struct Frame {
    model: Model,
    /// Bitset over the participating ops: which are already placed.
    done: Vec<u64>,
    /// The op this frame placed (None for the root).
    took: Option<usize>,
    /// Next op index to try from this frame.
    next: usize,
    /// The earliest return among pending ops: only ops called by then are minimal.
    bound: u64,
}

impl Frame {
    fn new(model: Model, done: Vec<u64>, took: Option<usize>, part: &[(usize, &Op)]) -> Frame {
        let bound = (0..part.len()).filter(|&i| !is_set(&done, i)).map(|i| part[i].1.ret).min().unwrap_or(u64::MAX);
        Frame { model, done, took, next: 0, bound }
    }
}

fn is_set(bits: &[u64], i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 == 1
}

/// Checks the whole history (all keys, all clients). See the module doc.
pub fn check(ops: &[Op], limits: &K2Limits) -> K2Verdict {
    let mut part: Vec<(usize, &Op)> = ops.iter().enumerate().filter(|(_, op)| takes_part(op)).collect();
    if part.len() > limits.max_ops {
        return K2Verdict::Inconclusive { explored: 0 };
    }
    // Sorted by call, the minimal ops at any point are a prefix of the pending ones.
    part.sort_by_key(|(_, op)| op.call);
    let n = part.len();

    let mut stack = vec![Frame::new(Model::default(), vec![0; n.div_ceil(64).max(1)], None, &part)];
    let mut cache: HashSet<(Vec<u64>, u64)> = HashSet::new();
    let mut explored = 0u64;
    let mut best: Vec<usize> = Vec::new();
    loop {
        if stack.len() == n + 1 {
            return K2Verdict::Linearizable;
        }
        let Some(top) = stack.last_mut() else {
            return K2Verdict::Violation(explain(&part, &best));
        };
        let next = (top.next..n).take_while(|&i| part[i].1.call <= top.bound).find(|&i| !is_set(&top.done, i));
        let Some(i) = next else {
            stack.pop();
            continue;
        };
        top.next = i + 1;
        let mut model = top.model.clone();
        if model.apply(part[i].1).is_err() {
            continue;
        }
        let mut done = top.done.clone();
        done[i / 64] |= 1 << (i % 64);
        if !cache.insert((done.clone(), model.digest())) {
            continue;
        }
        explored += 1;
        if explored > limits.max_states {
            return K2Verdict::Inconclusive { explored };
        }
        stack.push(Frame::new(model, done, Some(i), &part));
        if stack.len() - 1 > best.len() {
            best = stack.iter().filter_map(|f| f.took).collect();
        }
    }
}

/// Describes the deepest dead end: the order placed so far, the state, and why each minimal op failed.
/// (Every minimal op there fails outright: one that fitted would have reached a deeper state.)
fn explain(part: &[(usize, &Op)], best: &[usize]) -> String {
    let mut model = Model::default();
    let mut done = vec![0u64; part.len().div_ceil(64).max(1)];
    for &i in best {
        let _ = model.apply(part[i].1);
        done[i / 64] |= 1 << (i % 64);
    }
    let order: Vec<String> = best.iter().map(|&i| format!("#{}", part[i].0)).collect();
    let frame = Frame::new(model, done, None, part);
    let stuck: Vec<String> = (0..part.len())
        .filter(|&i| !is_set(&frame.done, i) && part[i].1.call <= frame.bound)
        .map(|i| {
            let why = frame.model.clone().apply(part[i].1).err().unwrap_or("fits, but every continuation fails");
            format!("{}: {why}", describe(part[i].0, part[i].1))
        })
        .collect();
    format!(
        "not linearizable: the longest order that fits places {} of {} ops [{}], reaching rev {} with objects {:?}; \
         none of the ops that may come next fits: {}",
        best.len(),
        part.len(),
        order.join(" "),
        frame.model.rev,
        frame.model.objs,
        stuck.join("; ")
    )
}

fn describe(id: usize, op: &Op) -> String {
    let ret = if op.ret == u64::MAX { "inf".to_string() } else { op.ret.to_string() };
    format!("#{id} (client {}, [{}, {ret}]) {:?} -> {:?}", op.client, op.call, op.kind, op.outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: OpKind, call: u64, ret: u64, outcome: Outcome) -> Op {
        Op { client: 0, node: 1, kind, call, ret, outcome }
    }
    fn create(key: &str, value: ValueId, call: u64, ret: u64, out: Outcome) -> Op {
        op(OpKind::Create { key: key.into(), value }, call, ret, out)
    }
    fn update(key: &str, value: ValueId, pre: u64, call: u64, ret: u64, out: Outcome) -> Op {
        op(OpKind::Update { key: key.into(), value, precondition: pre }, call, ret, out)
    }
    fn delete(key: &str, pre: u64, call: u64, ret: u64, out: Outcome) -> Op {
        op(OpKind::Delete { key: key.into(), precondition: pre }, call, ret, out)
    }
    fn get(key: &str, call: u64, ret: u64, out: Outcome) -> Op {
        op(OpKind::Get { key: key.into(), mode: ReadMode::MostRecent }, call, ret, out)
    }
    fn list(prefix: &str, call: u64, ret: u64, rv: u64, items: &[(&str, u64, ValueId)]) -> Op {
        let items = items.iter().map(|&(k, mod_rv, value)| (k.to_string(), Seen { mod_rv, value })).collect();
        op(OpKind::List { prefix: prefix.into(), mode: ReadMode::MostRecent }, call, ret, Outcome::Listed { rv, items })
    }
    fn w(rv: u64) -> Outcome {
        Outcome::Written { rv }
    }
    fn found(mod_rv: u64, value: ValueId) -> Outcome {
        Outcome::Found(Seen { mod_rv, value })
    }
    fn run(ops: &[Op]) -> K2Verdict {
        check(ops, &K2Limits::default())
    }
    fn is_violation(v: &K2Verdict) -> bool {
        matches!(v, K2Verdict::Violation(_))
    }

    #[test]
    fn sequential_history_with_rv_gaps_is_linearizable() {
        let ops = [
            create("cm/ns/a", 1, 1, 2, w(5)),
            get("cm/ns/a", 3, 4, found(5, 1)),
            update("cm/ns/a", 2, 5, 5, 6, w(9)),
            create("cm/ns/b", 3, 7, 8, w(10)),
            list("cm/ns/", 9, 10, 12, &[("cm/ns/a", 9, 2), ("cm/ns/b", 10, 3)]),
            delete("cm/ns/a", 9, 11, 12, w(15)),
            get("cm/ns/a", 13, 14, Outcome::NotFound),
            create("cm/ns/b", 4, 15, 16, Outcome::AlreadyExists),
        ];
        assert_eq!(run(&ops), K2Verdict::Linearizable);
    }

    #[test]
    fn worked_example_from_module_doc() {
        let mut ops = vec![
            create("k", 1, 1, 4, w(5)),
            get("k", 2, 3, Outcome::NotFound),
            update("k", 2, 5, 5, 8, w(9)),
            get("k", 6, 7, found(5, 1)),
        ];
        assert_eq!(run(&ops), K2Verdict::Linearizable);
        ops[3].outcome = Outcome::NotFound;
        match run(&ops) {
            K2Verdict::Violation(msg) => assert!(msg.contains("#3 (client 0, [6, 7])"), "{msg}"),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn concurrent_updates_fit_only_in_one_order() {
        // #1 is called first but can only follow #2 (its precondition is #2's RV).
        let mut ops = vec![
            create("k", 1, 1, 2, w(3)),
            update("k", 3, 4, 3, 10, w(8)),
            update("k", 2, 3, 4, 9, w(4)),
            get("k", 11, 12, found(8, 3)),
        ];
        assert_eq!(run(&ops), K2Verdict::Linearizable);
        // Same replies, but #1 now returns before #2 is called: no order fits.
        ops[1].ret = 5;
        ops[2].call = 6;
        assert!(is_violation(&run(&ops)));
    }

    #[test]
    fn stale_read_after_completed_write_is_a_violation() {
        let ops = [create("k", 1, 1, 2, w(3)), update("k", 2, 3, 3, 4, w(6)), get("k", 5, 6, found(3, 1))];
        assert!(is_violation(&run(&ops)));
        let ops = [create("k", 1, 1, 2, w(3)), get("k", 3, 4, Outcome::NotFound)];
        assert!(is_violation(&run(&ops)));
    }

    #[test]
    fn two_successful_creates_of_one_key_are_a_violation() {
        let ops = [create("k", 1, 1, 10, w(3)), create("k", 2, 2, 9, w(4))];
        assert!(is_violation(&run(&ops)));
    }

    #[test]
    fn conflict_fits_only_inside_its_window() {
        // The Conflict (#1) needs k at a version other than 5: after #2 and before #4.
        let mut ops = vec![
            create("k", 1, 1, 2, w(5)),
            update("k", 2, 5, 3, 10, Outcome::Conflict),
            update("k", 3, 5, 4, 5, w(7)),
            get("k", 6, 7, found(7, 3)),
            delete("k", 7, 8, 9, w(9)),
        ];
        assert_eq!(run(&ops), K2Verdict::Linearizable);
        // Ending before #2 starts leaves only states where the precondition holds.
        ops[1].ret = 3;
        ops[1].call = 2;
        ops[0].ret = 1;
        ops[0].call = 0;
        assert!(is_violation(&run(&ops)));
        // Starting after the delete leaves only the absent key (NotFound, not Conflict).
        let mut late = ops.clone();
        late[1].call = 11;
        late[1].ret = 12;
        assert!(is_violation(&run(&late)));
    }

    #[test]
    fn lost_update_is_a_violation() {
        let ops = [create("k", 1, 1, 2, w(5)), update("k", 2, 5, 3, 10, w(7)), update("k", 3, 5, 4, 9, w(8))];
        assert!(is_violation(&run(&ops)));
    }

    #[test]
    fn list_rv_must_cover_earlier_writes_and_precede_later_ones() {
        let ops = [create("p/a", 1, 1, 2, w(5)), list("p/", 3, 4, 4, &[("p/a", 5, 1)])];
        assert!(is_violation(&run(&ops)));
        let ops = [list("p/", 1, 2, 6, &[]), create("p/a", 1, 3, 4, w(5))];
        assert!(is_violation(&run(&ops)));
        // Other prefixes are not listed.
        let ops = [create("p/a", 1, 1, 2, w(5)), create("q/a", 2, 3, 4, w(6)), list("p/", 5, 6, 6, &[("p/a", 5, 1)])];
        assert_eq!(run(&ops), K2Verdict::Linearizable);
    }

    #[test]
    fn settled_unknown_write_explains_a_later_read() {
        let mut ops = vec![
            create("k", 1, 1, 2, w(5)),
            update("k", 9, 5, 3, u64::MAX, w(7)),
            get("k", 10, 11, found(7, 9)),
            // Still unknown: ignored, even though it could never apply.
            update("k", 8, 99, 4, u64::MAX, Outcome::Unknown),
        ];
        assert_eq!(run(&ops), K2Verdict::Linearizable);
        // Removed instead (settled as never applied): nothing explains the read.
        ops.remove(1);
        assert!(is_violation(&run(&ops)));
    }

    #[test]
    fn non_linearizable_reads_and_refusals_are_excluded() {
        let mut stale = get("k", 3, 4, Outcome::NotFound);
        stale.kind = OpKind::Get { key: "k".into(), mode: ReadMode::Any };
        let ops = [
            create("k", 1, 1, 2, w(5)),
            stale,
            get("k", 5, 6, Outcome::Gone),
            update("k", 2, 1, 7, 8, Outcome::Refused(429)),
        ];
        assert_eq!(run(&ops), K2Verdict::Linearizable);
    }

    #[test]
    fn too_many_ops_is_inconclusive() {
        let ops = [create("a", 1, 1, 2, w(3)), create("b", 2, 3, 4, w(5)), create("c", 3, 5, 6, w(7))];
        let limits = K2Limits { max_ops: 2, ..K2Limits::default() };
        assert_eq!(check(&ops, &limits), K2Verdict::Inconclusive { explored: 0 });
    }

    #[test]
    fn state_budget_exhausted_is_inconclusive_not_a_pass() {
        // Six overlapping creates must be placed in RV order; the search needs more than 3 states.
        let ops: Vec<Op> = (0..6).map(|i| create(&format!("k{i}"), i, i, 100 - i, w(60 - i * 10))).collect();
        assert_eq!(run(&ops), K2Verdict::Linearizable);
        let limits = K2Limits { max_ops: 64, max_states: 3 };
        assert!(matches!(check(&ops, &limits), K2Verdict::Inconclusive { explored: 4 }));
    }

    #[test]
    fn bitset_handles_more_than_128_ops() {
        let ops: Vec<Op> = (0..200).map(|i| create(&format!("k{i}"), i, 2 * i + 1, 2 * i + 2, w(i + 1))).collect();
        let limits = K2Limits { max_ops: 300, ..K2Limits::default() };
        assert_eq!(check(&ops, &limits), K2Verdict::Linearizable);
        let mut bad = ops.clone();
        bad[150].outcome = w(3);
        assert!(is_violation(&check(&bad, &limits)));
    }
}
