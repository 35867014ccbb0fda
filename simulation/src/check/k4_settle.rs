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
    for op in ops {
        if !(op.kind.is_write() && op.outcome == Outcome::Unknown) {
            out.push(op.clone());
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
            out.push(Op { outcome: Outcome::Written { rv }, ret: u64::MAX, ..op.clone() });
        }
    }
    (out, violations)
}
