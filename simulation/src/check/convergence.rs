//! Owns the liveness phase's verdicts: after the faults stop and the cluster heals, every
//! node applies the last change (R2: and nodes at the same applied index hold the same
//! objects), and every watcher's stream reaches the last change under its prefix (W12).

use std::collections::BTreeMap;

use crate::check::Violation;
use crate::history::{WatchItem, WatchSession};
use crate::replay::Replay;

/// `states`: per node, its applied index and a hash of its objects at the end.
pub fn check(sessions: &[WatchSession], replay: &Replay, states: &BTreeMap<u64, (u64, u64)>) -> Vec<Violation> {
    let mut v = Vec::new();
    let last_change = replay.changes.keys().next_back().copied().unwrap_or(0);
    let mut by_index: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for (node, (applied, hash)) in states {
        if *applied < last_change {
            v.push(Violation::new(
                "R2",
                format!("node {node} stopped at index {applied}, the last change is at {last_change}"),
            ));
        }
        match by_index.insert(*applied, (*node, *hash)) {
            Some((other, h)) if h != *hash => v.push(Violation::new(
                "R2",
                format!("nodes {other} and {node} both applied up to {applied} but hold different objects"),
            )),
            _ => {}
        }
    }

    let mut reached: BTreeMap<(u32, String), u64> = BTreeMap::new();
    for s in sessions {
        let top = s
            .items
            .iter()
            .filter_map(|i| match i {
                WatchItem::Event { seen, .. } => Some(seen.mod_rv),
                WatchItem::Bookmark { rv, .. } => Some(*rv),
                WatchItem::Error { .. } => None,
            })
            .max()
            .unwrap_or(0);
        let e = reached.entry((s.watcher, s.prefix.clone())).or_default();
        *e = (*e).max(top);
    }
    for ((watcher, prefix), top) in reached {
        let want = replay.changes_between(&prefix, 0, u64::MAX).last().map(|(rv, _)| *rv).unwrap_or(0);
        if top < want {
            v.push(Violation::new(
                "W12",
                format!("watcher {watcher} on {prefix} reached RV {top} after healing; the last change is at {want}"),
            ));
        }
    }
    v
}
