//! Owns what a write answers when one of its attempts had an unknown outcome and a retry
//! was refused: was the refusal caused by the write's own earlier attempt?
//!
//! The retry's refusal was decided by the leader at some index. This node first catches
//! up to the leader's commit (a read barrier), so its own engine holds everything up to
//! that decision, then reads the key's history since the write began (`since`: this
//! node's applied index before the first attempt, below every index an attempt can have
//! been appended at):
//!
//! - a create refused as "already exists": the first version carrying the create's uid
//!   is the create's own (uids are chosen by the proposer and never reused), answered
//!   as it was created, at its own resourceVersion. If one other object held the key
//!   from `since` to now, the create cannot have happened and "already exists" is true.
//! - an update with a resourceVersion precondition refused as a conflict: the first
//!   version after the precondition's is whoever won; if it holds exactly the update's
//!   content it is the update's own, otherwise the update lost and the conflict is true.
//!
//! A write without a request id (data format 1) is not retried after such an attempt: a
//! retry could apply it twice. [`settle_unretried`] then tells from the history only
//! what already happened: the write's own success, or for an update a precondition
//! another write took.
//!
//! Anything else stays unknown (504, as kube-apiserver answers when etcd's outcome is
//! unknown), and so does every case where the history since `since` was compacted away.
//! A delete that meets "not found" in particular: the log does not say which of two
//! identical deletes removed the object, and claiming a deletion another client made
//! breaks linearizability (simulator seed 1532).

use bytes::Bytes;
use kuorum_store::{Command, ObjectEngine, Precondition, WriteError};
use serde_json::Value;

use crate::state_machine::compacted_rv;

/// What the history says about a write whose first attempt's outcome was unknown.
#[derive(Debug, PartialEq)]
pub(crate) enum Settled {
    /// The write happened: this is the object as it wrote it.
    Ours(Bytes),
    /// The write did not happen; the retry's refusal is the outcome.
    NotOurs,
    /// The history cannot tell.
    Unknown,
}

/// Settles `cmd`, refused with `refusal` after an uncertain attempt, from the engine's
/// history between `since` and `upto` (both applied on this node).
pub(crate) fn settle<E: ObjectEngine>(
    engine: &E,
    cmd: &Command,
    refusal: &WriteError,
    since: u64,
    upto: u64,
) -> Settled {
    match compacted_rv(engine) {
        Ok(compacted) if compacted <= since => {}
        _ => return Settled::Unknown,
    }
    let h = History { engine, since, upto, refused: true };
    match (cmd, refusal) {
        (Command::Create { key, object, .. }, WriteError::AlreadyExists) => h.create(key, object),
        (
            Command::Update { key, object, precondition: Precondition { resource_version: Some(p), .. }, .. },
            WriteError::Conflict,
        ) => h.update(key, object, *p),
        _ => Settled::Unknown,
    }
}

/// What a write not retried after an attempt with an unknown outcome answers.
#[derive(Debug, PartialEq)]
pub(crate) enum Unretried {
    /// The write happened: this is the object as it wrote it.
    Ours(Bytes),
    /// The write can no longer apply: the refusal it meets against the state at `upto`.
    Refused(WriteError),
    /// The history cannot tell, or the write may still apply.
    Unknown,
}

/// Settles `cmd` after an attempt whose outcome was unknown and that is not retried, from
/// the history between `since` and `upto`: a write without a request id (data format 1),
/// whose retry could apply it a second time (a create made again after another client
/// deleted the first one: simulator seed 1709). Refused only where the write can no
/// longer apply: an update whose precondition's version another write replaced, with
/// the refusal it meets now (not found if the object is gone, else a conflict).
pub(crate) fn settle_unretried<E: ObjectEngine>(engine: &E, cmd: &Command, since: u64, upto: u64) -> Unretried {
    match compacted_rv(engine) {
        Ok(compacted) if compacted <= since => {}
        _ => return Unretried::Unknown,
    }
    let h = History { engine, since, upto, refused: false };
    match cmd {
        Command::Create { key, object, .. } => match h.create(key, object) {
            Settled::Ours(object) => Unretried::Ours(object),
            Settled::NotOurs | Settled::Unknown => Unretried::Unknown,
        },
        Command::Update { key, object, precondition: Precondition { resource_version: Some(p), uid }, .. } => {
            match h.update(key, object, *p) {
                Settled::Ours(object) => Unretried::Ours(object),
                Settled::NotOurs => h.refusal_now(key, uid.as_deref()),
                Settled::Unknown => Unretried::Unknown,
            }
        }
        _ => Unretried::Unknown,
    }
}

/// One key's versions between two applied indexes.
struct History<'a, E> {
    engine: &'a E,
    since: u64,
    upto: u64,
    /// Whether a retry was refused at or below `upto` (else the first attempt may still
    /// be on its way to the leader, and only what already happened can be told).
    refused: bool,
}

impl<E: ObjectEngine> History<'_, E> {
    fn at(&self, key: &str, rv: u64) -> Option<Option<Bytes>> {
        self.engine.get_at(key, rv).ok()
    }

    /// The smallest rv in `(from, upto]` where `hit` holds, given that it holds at
    /// `upto` and, once it holds, holds at every later rv. `None` if a read fails.
    fn first(&self, key: &str, from: u64, hit: impl Fn(Option<&Bytes>) -> bool) -> Option<u64> {
        let (mut lo, mut hi) = (from, self.upto);
        // Invariant: `hit` is false at `lo` (or lo == from) and true at `hi`.
        while hi > lo + 1 {
            let mid = lo + (hi - lo) / 2;
            if hit(self.at(key, mid)?.as_ref()) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }

    /// What an update whose precondition is gone meets at `upto`: not found if the
    /// object is gone, a uid mismatch if another object took the key, else a conflict.
    fn refusal_now(&self, key: &str, uid: Option<&str>) -> Unretried {
        match self.at(key, self.upto) {
            Some(None) => Unretried::Refused(WriteError::NotFound),
            Some(Some(now)) => match (uid, uid_of(&now)) {
                (Some(wanted), Some(actual)) if wanted != actual => {
                    Unretried::Refused(WriteError::UidMismatch { wanted: wanted.to_string(), actual })
                }
                _ => Unretried::Refused(WriteError::Conflict),
            },
            None => Unretried::Unknown,
        }
    }

    fn create(&self, key: &str, object: &Bytes) -> Settled {
        let Some(uid) = uid_of(object) else { return Settled::Unknown };
        let (Some(then), Some(now)) = (self.at(key, self.since), self.at(key, self.upto)) else {
            return Settled::Unknown;
        };
        let ours = |v: Option<&Bytes>| v.is_some_and(|v| uid_of(v).as_deref() == Some(uid.as_str()));
        if ours(now.as_ref()) {
            // The uid appears once, at the create, and stays until the object goes.
            let Some(rv) = self.first(key, self.since, ours) else { return Settled::Unknown };
            return match self.at(key, rv).flatten() {
                Some(created) if same_content(&created, object) => Settled::Ours(created),
                _ => Settled::Unknown,
            };
        }
        if !self.refused {
            // It may yet apply.
            return Settled::Unknown;
        }
        // One object (one uid) at both ends held the key throughout.
        match (then.as_deref().and_then(uid_of), now.as_deref().and_then(uid_of)) {
            (Some(a), Some(b)) if a == b => Settled::NotOurs,
            _ => Settled::Unknown,
        }
    }

    fn update(&self, key: &str, object: &Bytes, precondition: u64) -> Settled {
        let moved = |v: Option<&Bytes>| v.and_then(|v| resource_version_of(v)) != Some(precondition);
        // The precondition's version begins at its own rv (a resourceVersion is the index
        // that wrote it). This node may have been behind it when the update began (the
        // client read it elsewhere): what the key held at `since` then says nothing.
        let from = self.since.max(precondition);
        if from > self.upto {
            return Settled::Unknown;
        }
        let Some(then) = self.at(key, from) else { return Settled::Unknown };
        if moved(then.as_ref()) {
            // Past the precondition before the update was first sent, or the
            // precondition is no version of this key: it cannot apply.
            return Settled::NotOurs;
        }
        if !self.refused && !matches!(self.at(key, self.upto), Some(now) if moved(now.as_ref())) {
            // Still at the precondition: it may yet apply.
            return Settled::Unknown;
        }
        let Some(rv) = self.first(key, from, moved) else { return Settled::Unknown };
        match self.at(key, rv) {
            Some(Some(next)) if same_content(&next, object) => Settled::Ours(next),
            Some(_) => Settled::NotOurs,
            None => Settled::Unknown,
        }
    }
}

fn parsed(object: &[u8]) -> Option<serde_json::Map<String, Value>> {
    serde_json::from_slice(object).ok()
}

fn uid_of(object: &[u8]) -> Option<String> {
    parsed(object)?.get("metadata")?.get("uid")?.as_str().map(str::to_string)
}

fn resource_version_of(object: &[u8]) -> Option<u64> {
    kuorum_store::apply::resource_version_of(&parsed(object)?)
}

/// Equal apart from the fields apply sets (resourceVersion, generation) or keeps from the
/// stored object (uid, creationTimestamp).
pub(crate) fn same_content(stored: &[u8], proposed: &[u8]) -> bool {
    let strip = |b: &[u8]| -> Option<Value> {
        let mut v: Value = serde_json::from_slice(b).ok()?;
        if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            for f in ["resourceVersion", "generation", "uid", "creationTimestamp"] {
                m.remove(f);
            }
        }
        Some(v)
    };
    matches!((strip(stored), strip(proposed)), (Some(a), Some(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_machine::META_COMPACTED;
    use kuorum_store::apply_command;
    use kuorum_store::memory::MemoryObjectEngine;

    const KEY: &str = "/registry/configmaps/default/a";

    fn object(uid: &str, data: &str) -> Bytes {
        Bytes::from(format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","namespace":"default","uid":"{uid}"}},"data":{{"k":"{data}"}}}}"#
        ))
    }

    fn create(uid: &str) -> Command {
        Command::Create { key: KEY.into(), namespace: None, object: object(uid, "v") }
    }

    fn update(uid: &str, data: &str, rv: u64) -> Command {
        Command::Update {
            key: KEY.into(),
            object: object(uid, data),
            precondition: Precondition { resource_version: Some(rv), uid: None },
            finalizing: Default::default(),
        }
    }

    fn delete() -> Command {
        Command::Delete {
            key: KEY.into(),
            precondition: Precondition::default(),
            deletion_timestamp: None,
            finalizing: Default::default(),
        }
    }

    /// Applies `log` at indexes 1, 2, ... (`None`: an entry for another key).
    async fn engine(log: &[Option<Command>]) -> MemoryObjectEngine {
        let e = MemoryObjectEngine::new();
        for (i, cmd) in log.iter().enumerate() {
            let noop = Command::Noop;
            apply_command(&e, i as u64 + 1, cmd.as_ref().unwrap_or(&noop)).await.unwrap();
        }
        e
    }

    fn rv(settled: &Settled) -> Option<u64> {
        match settled {
            Settled::Ours(b) => resource_version_of(b),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_create_that_applied_before_its_retry_is_answered_as_created() {
        // Ours applied at 3, then updated by someone else at 5; the retry refused at 6.
        let e =
            engine(&[None, None, Some(create("ours")), None, Some(update("ours", "w", 3)), Some(create("ours"))]).await;
        let s = settle(&e, &create("ours"), &WriteError::AlreadyExists, 1, 6);
        assert_eq!(rv(&s), Some(3), "the create's own version, not the later update: {s:?}");
    }

    #[tokio::test]
    async fn a_create_refused_by_an_object_that_held_the_key_throughout_is_refused() {
        let e = engine(&[Some(create("theirs")), None, None, Some(create("ours"))]).await;
        assert_eq!(settle(&e, &create("ours"), &WriteError::AlreadyExists, 2, 4), Settled::NotOurs);
    }

    #[tokio::test]
    async fn a_create_whose_key_changed_hands_stays_unknown() {
        // Theirs deleted at 3 and another created at 5: ours may have lived in between
        // (not here, but the two ends cannot tell).
        let e =
            engine(&[Some(create("theirs")), None, Some(delete()), None, Some(create("other")), Some(create("ours"))])
                .await;
        assert_eq!(settle(&e, &create("ours"), &WriteError::AlreadyExists, 2, 6), Settled::Unknown);
    }

    #[tokio::test]
    async fn an_update_that_won_its_precondition_is_answered_as_written() {
        // Created at 1; ours (on rv 1) applied at 3; another at 4; ours retried, refused at 5.
        let mine = update("u", "mine", 1);
        let e =
            engine(&[Some(create("u")), None, Some(mine.clone()), Some(update("u", "x", 3)), Some(mine.clone())]).await;
        let s = settle(&e, &mine, &WriteError::Conflict, 2, 5);
        assert_eq!(rv(&s), Some(3), "{s:?}");
    }

    #[tokio::test]
    async fn an_update_sent_through_a_node_behind_its_precondition_is_answered_as_written() {
        // Created at 1, updated at 3 (the client read rv 3 elsewhere); ours (on rv 3)
        // applied at 5 and its retry was refused at 6. This node was at 2 when the update
        // began: the key's version there (rv 1) is older than the precondition, not past
        // it (simulator seed 1613).
        let mine = update("u", "mine", 3);
        let e =
            engine(&[Some(create("u")), None, Some(update("u", "x", 1)), None, Some(mine.clone()), Some(mine.clone())])
                .await;
        let s = settle(&e, &mine, &WriteError::Conflict, 2, 6);
        assert_eq!(rv(&s), Some(5), "{s:?}");
        // And beaten to it by another update at 4: the conflict is true.
        let e = engine(&[
            Some(create("u")),
            None,
            Some(update("u", "x", 1)),
            Some(update("u", "theirs", 3)),
            Some(mine.clone()),
        ])
        .await;
        assert_eq!(settle(&e, &mine, &WriteError::Conflict, 2, 5), Settled::NotOurs);
    }

    #[tokio::test]
    async fn an_update_beaten_to_its_precondition_is_a_conflict() {
        let mine = update("u", "mine", 1);
        let e = engine(&[Some(create("u")), None, Some(update("u", "theirs", 1)), Some(mine.clone())]).await;
        assert_eq!(settle(&e, &mine, &WriteError::Conflict, 2, 4), Settled::NotOurs);
        // Past the precondition before the update began.
        assert_eq!(settle(&e, &mine, &WriteError::Conflict, 3, 4), Settled::NotOurs);
    }

    #[tokio::test]
    async fn an_unretried_write_is_settled_only_by_what_happened() {
        // Ours created at 2 and still there: answered as created at 2.
        let e = engine(&[None, Some(create("ours")), None]).await;
        assert!(
            matches!(settle_unretried(&e, &create("ours"), 1, 3), Unretried::Ours(b) if resource_version_of(&b) == Some(2))
        );
        // Deleted by another at 4: the two ends cannot tell (a retry here would have
        // created it a second time).
        let e = engine(&[None, Some(create("ours")), None, Some(delete())]).await;
        assert_eq!(settle_unretried(&e, &create("ours"), 1, 4), Unretried::Unknown);
        // Another object held the key throughout: the create may still apply later
        // (if that one goes first), so it stays unknown.
        let e = engine(&[Some(create("theirs")), None, None]).await;
        assert_eq!(settle_unretried(&e, &create("ours"), 2, 3), Unretried::Unknown);
        // An update still at its precondition may still apply: unknown. Beaten to it:
        // the conflict it meets now; the object deleted since: not found (simulator
        // seed 47). Applied: answered as written.
        let mine = update("u", "mine", 1);
        let e = engine(&[Some(create("u")), None]).await;
        assert_eq!(settle_unretried(&e, &mine, 1, 2), Unretried::Unknown);
        let e = engine(&[Some(create("u")), None, Some(update("u", "theirs", 1))]).await;
        assert_eq!(settle_unretried(&e, &mine, 1, 3), Unretried::Refused(WriteError::Conflict));
        let e = engine(&[Some(create("u")), None, Some(delete())]).await;
        assert_eq!(settle_unretried(&e, &mine, 1, 3), Unretried::Refused(WriteError::NotFound));
        let e = engine(&[Some(create("u")), None, Some(mine.clone()), Some(update("u", "x", 3))]).await;
        assert!(matches!(settle_unretried(&e, &mine, 1, 4), Unretried::Ours(b) if resource_version_of(&b) == Some(3)));
        // Deletes stay unknown.
        let e = engine(&[Some(create("u")), Some(delete())]).await;
        assert_eq!(settle_unretried(&e, &delete(), 1, 2), Unretried::Unknown);
    }

    #[tokio::test]
    async fn deletes_and_compacted_history_stay_unknown() {
        let e = engine(&[Some(create("u")), None, Some(delete()), Some(delete())]).await;
        assert_eq!(settle(&e, &delete(), &WriteError::NotFound, 2, 4), Settled::Unknown);
        let e = engine(&[Some(create("u")), None, Some(create("ours")), Some(create("ours"))]).await;
        let compacted = vec![(META_COMPACTED.to_string(), Bytes::from(crate::codec::encode(&3u64)))];
        e.write(kuorum_store::apply::BatchApplier::new(&e).into_batch(compacted)).await.unwrap();
        assert_eq!(settle(&e, &create("ours"), &WriteError::AlreadyExists, 2, 5), Settled::Unknown);
    }
}
