//! Owns the ground truth the checkers compare clients against: every change each node
//! applied, recorded through the node's apply tap, merged into one sequence by
//! resourceVersion (= Raft log index).
//!
//! Two nodes that applied the same index must have made the same change there (Raft's
//! log matching, seen from the state machine); a disagreement is recorded as an R1
//! violation instead of being merged. Indices no node reported (no-ops, refused writes,
//! compactions) have no change, which is why RVs are increasing but not consecutive.
//!
//! Worked example: node 1 applies index 12 (create `configmaps/default/k1`, value 4) and
//! index 14 (update it to value 9); node 3 was down and later receives both from the
//! log. The replay holds `12 → Added k1 {12, 4}` and `14 → Modified k1 {14, 9}`, and the
//! state at 13 is `{k1: {12, 4}}`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kuorum_store::{ApplyObserver, Change, ChangeKind};

use crate::history::{EventType, Key, Seen};

/// The annotation carrying a write's value id.
pub const VALUE_ANNOTATION: &str = "sim.kuorum.dev/value";

/// One applied change as the checkers see it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Applied {
    pub key: Key,
    pub kind: EventType,
    /// The object after the change; for a deletion, its last value at the deleting RV.
    pub seen: Seen,
    /// The object before the change.
    pub prev: Option<Seen>,
}

/// What one node's tap recorded.
#[derive(Debug, Default)]
struct TapLog {
    changes: BTreeMap<u64, Vec<Applied>>,
    applied: u64,
    compactions: BTreeSet<u64>,
    resets: u64,
    /// Whole changes by rv, with the simulated time this node applied them, when asked
    /// for ([`NodeTap::keep_objects`]): the chaos library's users check invariants over
    /// objects, not value ids.
    objects: Option<BTreeMap<u64, (std::time::Duration, Vec<Change>)>>,
}

/// An apply tap for one node; clones share the log, which outlives the node's host.
#[derive(Debug, Clone, Default)]
pub struct NodeTap(Arc<Mutex<TapLog>>);

impl NodeTap {
    fn lock(&self) -> std::sync::MutexGuard<'_, TapLog> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The highest index this node has applied (in this life or an earlier one).
    pub fn applied(&self) -> u64 {
        self.lock().applied
    }

    pub fn resets(&self) -> u64 {
        self.lock().resets
    }

    /// The node's disks were wiped: what it applied starts again from nothing (what it
    /// applied before stays in the record).
    pub fn wiped(&self) {
        self.lock().applied = 0;
    }

    /// Also keep every change whole (see [`NodeTap::objects`]).
    pub fn keep_objects(&self) {
        let mut g = self.lock();
        if g.objects.is_none() {
            g.objects = Some(BTreeMap::new());
        }
    }

    /// The whole changes this node applied, by rv, and when (empty unless kept).
    pub fn objects(&self) -> BTreeMap<u64, (std::time::Duration, Vec<Change>)> {
        self.lock().objects.clone().unwrap_or_default()
    }

    fn record(&self, changes: &[Change]) {
        let mut g = self.lock();
        if let Some(objects) = g.objects.as_mut() {
            let now = turmoil::sim_elapsed().unwrap_or_default();
            for c in changes {
                let (_, slot) = objects.entry(c.rv).or_insert_with(|| (now, Vec::new()));
                if !slot.contains(c) {
                    slot.push(c.clone());
                }
            }
        }
        for c in changes {
            if let Some(a) = to_applied(c) {
                let slot = g.changes.entry(c.rv).or_default();
                if !slot.contains(&a) {
                    slot.push(a);
                }
            }
        }
    }
}

impl ApplyObserver for NodeTap {
    fn applied(&self, rv: u64, changes: Vec<Change>, compacted: Option<u64>) {
        self.record(&changes);
        let mut g = self.lock();
        g.applied = g.applied.max(rv);
        if let Some(c) = compacted {
            g.compactions.insert(c);
        }
    }

    fn reset(&self, rv: u64, _oldest: u64, _objects: Vec<(String, Bytes)>, changes: Vec<Change>) {
        self.record(&changes);
        let mut g = self.lock();
        g.applied = g.applied.max(rv);
        g.resets += 1;
    }
}

/// `/registry/core/configmaps/default/k1` → `configmaps/default/k1`.
pub fn checker_key(store_key: &str) -> Key {
    let rest = store_key.strip_prefix("/registry/").unwrap_or(store_key);
    let rest = rest.split_once('/').map(|(_, r)| r).unwrap_or(rest);
    rest.to_string()
}

/// The resourceVersion and value id of a stored or served object (value 0 if it has none:
/// an object the simulator did not write, such as a system namespace).
pub fn seen_of(obj: &serde_json::Value) -> Option<Seen> {
    let meta = obj.get("metadata")?;
    let mod_rv = meta.get("resourceVersion")?.as_str()?.parse().ok()?;
    let value = meta
        .get("annotations")
        .and_then(|a| a.get(VALUE_ANNOTATION))
        .and_then(|v| v.as_str())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    Some(Seen { mod_rv, value })
}

fn to_applied(c: &Change) -> Option<Applied> {
    let obj: serde_json::Value = serde_json::from_slice(&c.object).ok()?;
    let mut seen = seen_of(&obj)?;
    seen.mod_rv = c.rv;
    let prev = c.prev.as_ref().and_then(|p| serde_json::from_slice(p).ok()).and_then(|p| seen_of(&p));
    let kind = match c.kind {
        ChangeKind::Added => EventType::Added,
        ChangeKind::Modified => EventType::Modified,
        ChangeKind::Deleted => EventType::Deleted,
    };
    Some(Applied { key: checker_key(&c.key), kind, seen, prev })
}

/// The merged sequence of applied changes.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    pub changes: BTreeMap<u64, Vec<Applied>>,
    /// The highest index any node applied.
    pub max_applied: u64,
    /// Every compaction RV any node applied.
    pub compactions: BTreeSet<u64>,
    /// Indices at which two nodes recorded different changes (R1).
    pub disagreements: Vec<String>,
}

impl Replay {
    /// Merges the taps of all nodes.
    pub fn merge(taps: &BTreeMap<u64, NodeTap>) -> Replay {
        let mut r = Replay::default();
        let mut owner: BTreeMap<u64, u64> = BTreeMap::new();
        for (&node, tap) in taps {
            let g = tap.lock();
            r.max_applied = r.max_applied.max(g.applied);
            r.compactions.extend(g.compactions.iter().copied());
            for (&rv, list) in &g.changes {
                match r.changes.get(&rv) {
                    None => {
                        r.changes.insert(rv, list.clone());
                        owner.insert(rv, node);
                    }
                    Some(have) if have == list => {}
                    Some(have) => r.disagreements.push(format!(
                        "index {rv}: node {} applied {have:?}, node {node} applied {list:?}",
                        owner[&rv]
                    )),
                }
            }
        }
        r
    }

    /// The highest compaction RV.
    pub fn compacted(&self) -> u64 {
        self.compactions.last().copied().unwrap_or(0)
    }

    /// The objects under `prefix` at `rv` (all changes at or below it applied).
    pub fn state_at(&self, prefix: &str, rv: u64) -> BTreeMap<Key, Seen> {
        let mut s = BTreeMap::new();
        for list in self.changes.range(..=rv).map(|(_, l)| l) {
            for a in list.iter().filter(|a| a.key.starts_with(prefix)) {
                match a.kind {
                    EventType::Deleted => s.remove(&a.key),
                    _ => s.insert(a.key.clone(), a.seen),
                };
            }
        }
        s
    }

    /// The object `key` at `rv`.
    pub fn get_at(&self, key: &str, rv: u64) -> Option<Seen> {
        let mut cur = None;
        for a in self.changes.range(..=rv).flat_map(|(_, l)| l).filter(|a| a.key == key) {
            cur = (a.kind != EventType::Deleted).then_some(a.seen);
        }
        cur
    }

    /// The states of `key` as intervals `[from, to)` of RV (`to` = u64::MAX for the last),
    /// each with the object or None; the first starts at 0.
    pub fn intervals(&self, key: &str) -> Vec<(u64, u64, Option<Seen>)> {
        let mut out = vec![(0u64, u64::MAX, None)];
        for (&rv, list) in &self.changes {
            for a in list.iter().filter(|a| a.key == key) {
                let now = (a.kind != EventType::Deleted).then_some(a.seen);
                let last = out.last_mut().expect("never empty");
                last.1 = rv;
                out.push((rv, u64::MAX, now));
            }
        }
        out
    }

    /// Where value `v` was written: its RV and the change.
    pub fn find_value(&self, v: u64) -> Option<(u64, &Applied)> {
        self.changes
            .iter()
            .flat_map(|(rv, l)| l.iter().map(move |a| (*rv, a)))
            .find(|(_, a)| a.kind != EventType::Deleted && a.seen.value == v)
    }

    /// The changes under `prefix` with `after < rv <= upto`, in order.
    pub fn changes_between(&self, prefix: &str, after: u64, upto: u64) -> Vec<(u64, &Applied)> {
        if upto <= after {
            return Vec::new();
        }
        self.changes
            .range(after + 1..=upto)
            .flat_map(|(rv, l)| l.iter().map(move |a| (*rv, a)))
            .filter(|(_, a)| a.key.starts_with(prefix))
            .collect()
    }

    /// A stable hash of the whole sequence (part of the D1 trace hash).
    pub fn digest(&self) -> u64 {
        let mut h = Fnv::default();
        for (rv, l) in &self.changes {
            h.write(&rv.to_le_bytes());
            for a in l {
                h.write(a.key.as_bytes());
                h.write(&[a.kind as u8]);
                h.write(&a.seen.mod_rv.to_le_bytes());
                h.write(&a.seen.value.to_le_bytes());
            }
        }
        h.0
    }
}

/// FNV-1a: a stable hash, the same on every run and platform (std's is randomized).
#[derive(Debug, Clone, Copy)]
pub struct Fnv(pub u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= *b as u64;
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }
}
