//! Owns K4: writes whose outcome the client never learned (timeout, lost connection,
//! 5xx after proposing) are settled from what the nodes applied. A create or update is
//! found by its unique value; a delete by the deletion of its key whose previous state
//! had the delete's precondition RV. A settled write gets the RV it was applied at and a
//! return time of "never" (it may linearize anywhere after its call); one that was never
//! applied is dropped from the history, which is what "it did not happen" means.

use std::collections::BTreeSet;

use crate::check::Violation;
use crate::history::{EventType, Op, OpKind, Outcome};
use crate::replay::Replay;

/// The history with every unknown write settled, and the K4 violations (an applied
/// change claimed by two writes).
pub fn settle(ops: &[Op], replay: &Replay) -> (Vec<Op>, Vec<Violation>) {
    let mut violations = Vec::new();
    // RVs already explained by an acknowledged write.
    let claimed: BTreeSet<u64> = ops
        .iter()
        .filter(|o| o.kind.is_write())
        .filter_map(|o| match o.outcome {
            Outcome::Written { rv } => Some(rv),
            _ => None,
        })
        .collect();
    let mut taken = BTreeSet::new();
    let mut out = Vec::with_capacity(ops.len());
    // Settled in the order they were called: two unknown deletes of one key on one
    // precondition (a client's retry) match the same deletion, which only one of them made;
    // it goes to the one called first, whose call bounds its place in the order least.
    let mut order: Vec<usize> = (0..ops.len()).collect();
    order.sort_by_key(|&i| ops[i].call);
    let mut settled: Vec<Option<Op>> = vec![None; ops.len()];
    for i in order {
        let op = &ops[i];
        if !(op.kind.is_write() && op.outcome == Outcome::Unknown) {
            settled[i] = Some(op.clone());
            continue;
        }
        let found = match &op.kind {
            OpKind::Create { key, value } | OpKind::Update { key, value, .. } => {
                replay.find_value(*value).filter(|(_, a)| &a.key == key).map(|(rv, _)| rv)
            }
            OpKind::Delete { key, precondition } => replay
                .changes
                .iter()
                .flat_map(|(rv, l)| l.iter().map(move |a| (*rv, a)))
                .find(|(rv, a)| {
                    a.kind == EventType::Deleted
                        && &a.key == key
                        && a.prev.map(|p| p.mod_rv) == Some(*precondition)
                        && !claimed.contains(rv)
                        && !taken.contains(rv)
                })
                .map(|(rv, _)| rv),
            _ => None,
        };
        if let Some(rv) = found {
            if claimed.contains(&rv) || !taken.insert(rv) {
                violations
                    .push(Violation::new("K4", format!("change at RV {rv} is claimed by two writes, one {op:?}")));
                continue;
            }
            settled[i] = Some(Op { outcome: Outcome::Written { rv }, ret: u64::MAX, ..op.clone() });
        }
    }
    out.extend(settled.into_iter().flatten());
    (out, violations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Seen;
    use crate::replay::Applied;

    /// Two clients delete one key on one precondition and learn neither outcome: the one
    /// deletion goes to the delete called first, whatever order the history lists them in.
    #[test]
    fn a_deletion_two_unknown_deletes_match_goes_to_the_first_called() {
        let delete = |client, call| Op {
            client,
            node: 1,
            kind: OpKind::Delete { key: "k".into(), precondition: 7 },
            call,
            ret: u64::MAX,
            outcome: Outcome::Unknown,
        };
        let mut replay = Replay::default();
        let seen = Seen { mod_rv: 7, value: 1 };
        replay.changes.insert(9, vec![Applied { key: "k".into(), kind: EventType::Deleted, seen, prev: Some(seen) }]);
        let (settled, violations) = settle(&[delete(5, 30), delete(1, 10)], &replay);
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(settled.len(), 1, "the other never happened: {settled:?}");
        assert_eq!((settled[0].client, settled[0].outcome.clone()), (1, Outcome::Written { rv: 9 }));
    }
}
