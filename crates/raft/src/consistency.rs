//! Consistency between members: each node's applied state at a compaction point, hashed
//! and compared with its peers' (etcd's `HashKV` check, at kuorum's compaction points).
//!
//! Every node applies `Compact{rv}` at the same index of the log, and the state at `rv`
//! stays readable (`scan_at(rv)`) until the next compaction, so the nodes can each hash
//! the same state while writes go on. A node that applied the same log and holds other
//! bytes has a disk, a memory or a bug that changed them: it says so and stops serving.
//!
//! - [`state_hash`]: this node's hash at `rv` (CRC-32 of every key and value in key
//!   order, and their count), kept for a while for the peers that ask about the same
//!   point.
//! - [`verdict`]: what the answers of the voters say of this node's state: it agrees with
//!   a majority, a majority that agree among themselves hold another state (this node is
//!   corrupt), or no majority agrees on anything (nothing can be concluded).
//! - [`Integrity`]: whether this node found its own state corrupt, read by the REST layer
//!   (503 for every request, `/readyz` fails) and the metrics.
//!
//! Worked example: three voters at compaction point 7,000. Nodes 2 and 3 hash
//! (0x5a17c3e1, 412 objects); node 1, whose disk flipped a byte of one value, hashes
//! (0x0b9d4420, 412). Node 1 finds a majority (2 and 3) agreeing on another state and
//! marks itself corrupt; nodes 2 and 3 each find a majority agreeing with them and log
//! that node 1 differs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cluster::Cluster;
use crate::types::NodeId;

/// Keys read per page while hashing: one engine read, then the runtime gets a turn.
const PAGE: usize = 1024;

/// How long a peer asked for a hash waits to apply the point it is asked about.
pub const CATCH_UP: Duration = Duration::from_secs(5);

/// A node's applied state at one resourceVersion, hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StateHash {
    pub rv: u64,
    /// CRC-32 over each object's key and value (each length-prefixed), in key order.
    pub crc: u32,
    pub objects: u64,
}

/// What a node answers when asked for its hash at a resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum HashAnswer {
    Hash(StateHash),
    /// History at the point is gone here: this node compacted past it.
    Compacted(u64),
    /// This node has not applied the point yet (it answers what it has applied).
    Behind(u64),
    /// Reading the state failed (a storage error: what a checksum failure looks like).
    Failed(String),
}

/// Whether this node found its own state corrupt, and what the checks found so far.
#[derive(Debug, Default)]
pub struct Integrity {
    /// Set once, by a check that found this node's state differs from an agreeing
    /// majority's (or could not be read); cleared only by rebuilding the node.
    corrupt: Mutex<Option<String>>,
    /// The last hash computed here and when, for the peers that ask about the same point
    /// soon after. Held across the computation, so concurrent askers wait for one scan
    /// instead of running their own.
    last: tokio::sync::Mutex<Option<(StateHash, tokio::time::Instant)>>,
    pub agreed: AtomicU64,
    pub mismatched: AtomicU64,
    pub inconclusive: AtomicU64,
    /// The newest compaction point at which a majority agreed with this node.
    pub verified_rv: AtomicU64,
}

impl Integrity {
    /// Why this node's state is not to be served, if it is not.
    pub fn corrupt(&self) -> Option<String> {
        self.corrupt.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Marks the state corrupt (the first reason stays).
    pub fn mark_corrupt(&self, why: String) {
        let mut corrupt = self.corrupt.lock().unwrap_or_else(|e| e.into_inner());
        if corrupt.is_none() {
            tracing::error!("this node's state is corrupt and it stops serving: {why}");
            *corrupt = Some(why);
        }
    }
}

/// How long a hash computed here answers for the same point: the checks of all the
/// members at one point then cost about one scan of each node's state, and damage done
/// after a scan is found by a scan at most this much later.
pub const FRESH: Duration = Duration::from_secs(30);

/// This node's hash at `rv`: the one computed last if it was for the same point less than
/// [`FRESH`] ago, else computed by scanning the state as it was at `rv`.
pub async fn state_hash(cluster: &Cluster, rv: u64) -> HashAnswer {
    let mut last = cluster.integrity.last.lock().await;
    if let Some((h, at)) = *last {
        if h.rv == rv && at.elapsed() < FRESH {
            return HashAnswer::Hash(h);
        }
    }
    let answer = scan_hash(cluster, rv).await;
    if let HashAnswer::Hash(h) = answer {
        *last = Some((h, tokio::time::Instant::now()));
    }
    answer
}

async fn scan_hash(cluster: &Cluster, rv: u64) -> HashAnswer {
    let applied = cluster.applied_index();
    if applied < rv {
        return HashAnswer::Behind(applied);
    }
    let compacted = |c: &Cluster| c.compacted().map_err(|e| HashAnswer::Failed(e.to_string()));
    match compacted(cluster) {
        Ok(at) if at > rv => return HashAnswer::Compacted(at),
        Ok(_) => {}
        Err(failed) => return failed,
    }
    let mut crc = crc32fast::Hasher::new();
    let mut objects = 0u64;
    let mut after: Option<String> = None;
    loop {
        let page = match cluster.scan_at("", rv, after.as_deref(), PAGE) {
            Ok(page) => page,
            Err(e) => return HashAnswer::Failed(e.to_string()),
        };
        for (key, value) in &page {
            crc.update(&(key.len() as u64).to_le_bytes());
            crc.update(key.as_bytes());
            crc.update(&(value.len() as u64).to_le_bytes());
            crc.update(value);
        }
        objects += page.len() as u64;
        let full = page.len() == PAGE;
        after = page.into_iter().last().map(|(key, _)| key);
        if !full {
            break;
        }
        tokio::task::yield_now().await;
    }
    // A compaction past `rv` while the pages were read may have changed what they held.
    match compacted(cluster) {
        Ok(at) if at > rv => HashAnswer::Compacted(at),
        Ok(_) => HashAnswer::Hash(StateHash { rv, crc: crc.finalize(), objects }),
        Err(failed) => failed,
    }
}

/// What a peer asked about `rv` is answered: once this node has applied it (waiting up
/// to [`CATCH_UP`]), its hash there.
pub async fn answer(cluster: &Cluster, rv: u64) -> HashAnswer {
    let until = tokio::time::Instant::now() + CATCH_UP;
    while cluster.applied_index() < rv && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    state_hash(cluster, rv).await
}

/// What the voters' answers say of this node's state (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A majority of the voters holds the same state as this node; `differ` lists the
    /// voters that answered another.
    Agrees { differ: Vec<NodeId> },
    /// A majority of the voters agree on another state than this node's.
    Corrupt { majority: StateHash, holders: Vec<NodeId> },
    /// No majority agrees on one state, or too few answered.
    Inconclusive(String),
}

/// Decides from this node's hash and the answers of the others (any node's; only
/// voters count).
pub fn verdict(me: NodeId, own: StateHash, answers: &[(NodeId, HashAnswer)], voters: &BTreeSet<NodeId>) -> Verdict {
    let quorum = voters.len() / 2 + 1;
    let mut holders: BTreeMap<StateHash, Vec<NodeId>> = BTreeMap::new();
    if voters.contains(&me) {
        holders.entry(own).or_default().push(me);
    }
    for (id, answer) in answers {
        if let (true, HashAnswer::Hash(h)) = (voters.contains(id) && *id != me, answer) {
            holders.entry(*h).or_default().push(*id);
        }
    }
    if holders.get(&own).map_or(0, Vec::len) >= quorum {
        let differ = holders.iter().filter(|(h, _)| **h != own).flat_map(|(_, ids)| ids.iter().copied()).collect();
        return Verdict::Agrees { differ };
    }
    if let Some((h, ids)) = holders.iter().find(|(h, ids)| **h != own && ids.len() >= quorum) {
        return Verdict::Corrupt { majority: *h, holders: ids.clone() };
    }
    Verdict::Inconclusive(format!(
        "{} of {} voters answered with a hash; none held by {quorum}",
        holders.values().map(Vec::len).sum::<usize>(),
        voters.len()
    ))
}

/// One check at this node's latest compaction point: hash here, ask the other members,
/// decide, and record the outcome in [`Integrity`]. Answers the verdict, or `None` if
/// there is nothing to check (no compaction yet, this node already found corrupt, or
/// the point moved on while it was read). A quiet cluster keeps its compaction point:
/// checks then hash the same point again, which still finds damage done since.
pub async fn check(cluster: &Cluster, deadline: Duration) -> Option<Verdict> {
    let integrity = &cluster.integrity;
    let rv = cluster.compacted().ok().filter(|rv| *rv > 0)?;
    if integrity.corrupt().is_some() {
        return None;
    }
    let own = match state_hash(cluster, rv).await {
        HashAnswer::Hash(h) => h,
        HashAnswer::Failed(e) => {
            integrity.mark_corrupt(format!("reading its state at resourceVersion {rv} failed: {e}"));
            return Some(Verdict::Inconclusive(e));
        }
        HashAnswer::Compacted(_) | HashAnswer::Behind(_) => return None,
    };
    let answers = cluster.replicator.ask_state_hashes(rv, deadline).await;
    let voters = cluster.replicator.voters();
    let verdict = verdict(cluster.node_id(), own, &answers, &voters);
    match &verdict {
        Verdict::Agrees { differ } => {
            integrity.agreed.fetch_add(1, Ordering::Relaxed);
            integrity.verified_rv.store(rv, Ordering::Relaxed);
            if !differ.is_empty() {
                tracing::warn!(
                    "consistency check at resourceVersion {rv}: a majority agrees with this node; nodes {differ:?} \
                     hold another state"
                );
            }
        }
        Verdict::Corrupt { majority, holders } => {
            integrity.mismatched.fetch_add(1, Ordering::Relaxed);
            integrity.mark_corrupt(format!(
                "at resourceVersion {rv} it holds {} objects with CRC-32 {:08x}, while nodes {holders:?} agree on {} \
                 objects with CRC-32 {:08x}",
                own.objects, own.crc, majority.objects, majority.crc
            ));
        }
        Verdict::Inconclusive(why) => {
            integrity.inconclusive.fetch_add(1, Ordering::Relaxed);
            let said: Vec<String> = answers.iter().map(|(id, a)| format!("{id}: {a:?}")).collect();
            tracing::warn!(
                "consistency check at resourceVersion {rv} is inconclusive ({why}): own {own:?}; {}",
                said.join(", ")
            );
        }
    }
    Some(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(crc: u32) -> StateHash {
        StateHash { rv: 7, crc, objects: 3 }
    }

    fn voters(ids: &[NodeId]) -> BTreeSet<NodeId> {
        ids.iter().copied().collect()
    }

    #[test]
    fn a_node_outvoted_by_an_agreeing_majority_is_corrupt() {
        let answers = [(2, HashAnswer::Hash(h(5))), (3, HashAnswer::Hash(h(5)))];
        assert_eq!(
            verdict(1, h(9), &answers, &voters(&[1, 2, 3])),
            Verdict::Corrupt { majority: h(5), holders: vec![2, 3] }
        );
        // Seen from node 2: it agrees with 3, and 1 differs.
        let answers = [(1, HashAnswer::Hash(h(9))), (3, HashAnswer::Hash(h(5)))];
        assert_eq!(verdict(2, h(5), &answers, &voters(&[1, 2, 3])), Verdict::Agrees { differ: vec![1] });
    }

    #[test]
    fn without_an_agreeing_majority_nothing_is_concluded() {
        // One peer differs, the other did not answer: which of the two is wrong is unknown.
        let answers = [(2, HashAnswer::Hash(h(5))), (3, HashAnswer::Behind(4))];
        assert!(matches!(verdict(1, h(9), &answers, &voters(&[1, 2, 3])), Verdict::Inconclusive(_)));
        // Three states among five voters, none held by three.
        let answers = [
            (2, HashAnswer::Hash(h(5))),
            (3, HashAnswer::Hash(h(5))),
            (4, HashAnswer::Hash(h(6))),
            (5, HashAnswer::Compacted(9)),
        ];
        assert!(matches!(verdict(1, h(9), &answers, &voters(&[1, 2, 3, 4, 5])), Verdict::Inconclusive(_)));
    }

    #[test]
    fn only_voters_count_and_a_learner_is_judged_by_them() {
        // Learner 4 agrees with node 1, but only voters 2 and 3 count: 1 is outvoted.
        let answers = [(2, HashAnswer::Hash(h(5))), (3, HashAnswer::Hash(h(5))), (4, HashAnswer::Hash(h(9)))];
        assert!(matches!(verdict(1, h(9), &answers, &voters(&[1, 2, 3])), Verdict::Corrupt { .. }));
        // Learner 4 itself: the voters agree on another state.
        let answers = [(1, HashAnswer::Hash(h(5))), (2, HashAnswer::Hash(h(5))), (3, HashAnswer::Hash(h(5)))];
        assert!(matches!(verdict(4, h(9), &answers, &voters(&[1, 2, 3])), Verdict::Corrupt { .. }));
        // A lone voter is its own majority.
        assert_eq!(verdict(1, h(9), &[], &voters(&[1])), Verdict::Agrees { differ: vec![] });
    }

    #[test]
    fn the_count_of_objects_is_part_of_the_state() {
        let other = StateHash { objects: 4, ..h(5) };
        let answers = [(2, HashAnswer::Hash(other)), (3, HashAnswer::Hash(other))];
        assert!(matches!(verdict(1, h(5), &answers, &voters(&[1, 2, 3])), Verdict::Corrupt { .. }));
    }
}
