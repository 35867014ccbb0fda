//! Owns the ground truth a run's invariants are checked against: every change the
//! cluster applied, in resourceVersion order, as the nodes' state machines recorded it
//! (not as any client saw it, so no fault can hide a change from the check).
//!
//! Worked example: a controller's test asks "was a replica ever deleted while its source
//! existed?". It walks [`History::changes`] in order, keeping which sources exist, and
//! fails at the first `Deleted` change of a replica whose source is in the set.

use std::collections::BTreeMap;

use kuorum_sim::replay::{Fnv, NodeTap};
use kuorum_store::ChangeKind;

/// One applied change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub rv: u64,
    /// Simulated time the first node applied it (about when it was committed).
    pub at: std::time::Duration,
    /// `Added`, `Modified` or `Deleted`.
    pub kind: ChangeKind,
    /// The resource's plural, as in the URL: `configmaps`, `leases`.
    pub resource: String,
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
    /// The object after the change; for a deletion, its last state.
    pub object: serde_json::Value,
}

/// Every change the cluster applied in one run.
#[derive(Debug, Clone, Default)]
pub struct History {
    pub changes: Vec<Change>,
}

impl History {
    /// Merges the nodes' taps: each resourceVersion's changes as the first node that
    /// applied it recorded them (Raft makes every node apply the same).
    pub(crate) fn merge(taps: &[NodeTap]) -> History {
        let mut by_rv: BTreeMap<u64, (std::time::Duration, Vec<kuorum_store::Change>)> = BTreeMap::new();
        for tap in taps {
            for (rv, (at, changes)) in tap.objects() {
                let first = by_rv.entry(rv).or_insert((at, Vec::new()));
                if first.1.is_empty() {
                    first.1 = changes;
                }
                first.0 = first.0.min(at);
            }
        }
        let changes = by_rv
            .into_values()
            .flat_map(|(at, changes)| changes.into_iter().filter_map(move |c| to_change(&c, at)))
            .collect();
        History { changes }
    }

    /// The changes of one resource (plural name), in order.
    pub fn of<'h>(&'h self, resource: &'h str) -> impl Iterator<Item = &'h Change> + 'h {
        self.changes.iter().filter(move |c| c.resource == resource)
    }

    /// A hash of everything in the history: two runs of one seed have the same.
    pub fn digest(&self) -> u64 {
        let mut h = Fnv::default();
        for c in &self.changes {
            let line = format!(
                "{} {} {:?} {}/{}/{} {}",
                c.rv,
                c.at.as_nanos(),
                c.kind,
                c.resource,
                c.namespace,
                c.name,
                c.object
            );
            h.write(line.as_bytes());
        }
        h.0
    }
}

/// `/registry/<group>/<resource>/<namespace>/<name>` (or without the namespace) and the
/// object's JSON, as a [`Change`] applied at `at`.
fn to_change(c: &kuorum_store::Change, at: std::time::Duration) -> Option<Change> {
    let object: serde_json::Value = serde_json::from_slice(&c.object).ok()?;
    let meta = &object["metadata"];
    let name = meta["name"].as_str()?.to_string();
    let namespace = meta["namespace"].as_str().unwrap_or_default().to_string();
    let rest = c.key.strip_prefix("/registry/")?;
    let mut segs = rest.split('/');
    let _group = segs.next()?;
    let resource = segs.next()?.to_string();
    Some(Change { rv: c.rv, at, kind: c.kind, resource, namespace, name, object })
}
