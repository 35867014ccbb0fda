//! Owns the outcomes this node waits for of its own requests, found by request id in
//! what it applies.
//!
//! A write whose attempt had an unknown outcome (the leader's entry was discarded, the
//! RPC broke after it was sent) and whose retry was refused needs the outcome of the
//! first entry that carried its request id: the attempt's own (it was applied, so its
//! result is the answer), or the retry's (the attempt never committed, so the refusal
//! is). Every node applies every entry, so the proposer registers the id before the
//! first attempt and apply records what the first entry carrying it answered.
//!
//! An installed snapshot skips entries without applying them: a request still waiting
//! then is marked [`Outcome::Skipped`], and the proposer falls back on the history.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kuorum_store::{RequestId, WriteResult};

/// What apply has seen of one awaited request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// No entry carrying the id applied yet.
    Pending,
    /// What the first entry carrying the id answered.
    Applied(WriteResult),
    /// A snapshot was installed while waiting: an entry may have been skipped.
    Skipped,
}

/// The requests this node proposed and still waits on. Shared by the state machine
/// (which records) and the replicator (which registers and reads).
#[derive(Debug, Default)]
pub(crate) struct AwaitedRequests {
    /// Invariant: holds an id only while the write that registered it runs (its
    /// [`Awaiting`] removes it), so it is as large as the writes in flight here.
    awaited: Mutex<HashMap<RequestId, Outcome>>,
    /// How many ids `awaited` holds, read without the lock: apply skips the answers of
    /// its entries while none is awaited (on every node but the proposers, always).
    /// Raised before the write is proposed, so an entry of it never finds it 0.
    count: AtomicUsize,
}

impl AwaitedRequests {
    /// Awaits `id` (new: never registered before) until the returned guard is dropped.
    pub(crate) fn register(self: &Arc<Self>, id: RequestId) -> Awaiting {
        if self.lock().insert(id, Outcome::Pending).is_none() {
            self.count.fetch_add(1, Ordering::SeqCst);
        }
        Awaiting { id, requests: self.clone() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Outcome>> {
        self.awaited.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether any request is awaited (apply collects answers only then).
    pub(crate) fn any(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// Records what applying entries carrying these ids answered (after they are
    /// written, before the applied index is published). Only the first answer counts.
    pub(crate) fn applied(&self, answers: Vec<(RequestId, WriteResult)>) {
        if answers.is_empty() {
            return;
        }
        let mut awaited = self.lock();
        if awaited.is_empty() {
            return;
        }
        for (id, result) in answers {
            if let Some(o @ Outcome::Pending) = awaited.get_mut(&id) {
                *o = Outcome::Applied(result);
            }
        }
    }

    /// A snapshot was installed: entries below it were never applied here.
    pub(crate) fn snapshot_installed(&self) {
        for o in self.lock().values_mut() {
            if *o == Outcome::Pending {
                *o = Outcome::Skipped;
            }
        }
    }
}

/// One registered request; dropping it stops the waiting.
#[derive(Debug)]
pub(crate) struct Awaiting {
    pub(crate) id: RequestId,
    requests: Arc<AwaitedRequests>,
}

impl Awaiting {
    pub(crate) fn outcome(&self) -> Outcome {
        self.requests.lock().get(&self.id).cloned().unwrap_or(Outcome::Skipped)
    }
}

impl Drop for Awaiting {
    fn drop(&mut self) {
        if self.requests.lock().remove(&self.id).is_some() {
            self.requests.count.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use bytes::Bytes;
    use kuorum_store::memory::{MemoryLogEngine, MemoryObjectEngine};
    use kuorum_store::{Command, Precondition, WriteError};

    use super::*;
    use crate::node::{start_raft, RaftNodeConfig, RaftTiming};

    /// Through real apply (one openraft node): a delete whose first entry applied and
    /// whose retry (the same request id) was refused as "not found" answers the first.
    #[tokio::test]
    async fn a_retried_delete_answers_what_its_first_entry_did() {
        let cfg = RaftNodeConfig::new(1, BTreeMap::from([(1, "127.0.0.1:1".to_string())]), RaftTiming::default(), 0);
        let started = start_raft(
            cfg,
            Arc::new(MemoryLogEngine::new()),
            Arc::new(MemoryObjectEngine::new()),
            Arc::new(crate::network::TcpDialer),
            None,
        )
        .await
        .unwrap();
        let raft = started.raft.clone();
        raft.wait(Some(Duration::from_secs(10))).current_leader(1, "leads").await.unwrap();
        let object = Bytes::from_static(br#"{"metadata":{"name":"a","uid":"u1"}}"#);
        let create = Command::Create { key: "/a".into(), namespace: None, object };
        raft.client_write(create).await.unwrap().data.unwrap();

        let requests = started.state_machine.awaited_requests();
        let id = RequestId { node: 1, seq: 7 };
        let waiting = requests.register(id);
        let delete = Command::Delete {
            key: "/a".into(),
            precondition: Precondition::default(),
            deletion_timestamp: None,
            finalizing: Default::default(),
        };
        let identified = Command::Identified { request: id, command: Box::new(delete) };
        let first = raft.client_write(identified.clone()).await.unwrap().data;
        assert!(first.is_ok(), "{first:?}");
        let retry = raft.client_write(identified).await.unwrap().data;
        assert_eq!(retry, Err(WriteError::NotFound), "the retry meets its own deletion");
        assert_eq!(waiting.outcome(), Outcome::Applied(first), "the outcome is the first entry's");
        raft.shutdown().await.unwrap();
    }

    #[test]
    fn the_first_answer_for_an_id_is_its_outcome_and_the_guard_lets_it_go() {
        let requests = Arc::new(AwaitedRequests::default());
        let a = requests.register(RequestId { node: 3, seq: 10 });
        let b = requests.register(RequestId { node: 3, seq: 11 });
        let other = RequestId { node: 4, seq: a.id.seq };
        requests.applied(vec![(other, Ok(Bytes::from_static(b"not ours")))]);
        assert_eq!(a.outcome(), Outcome::Pending, "another node's id with the same number is not ours");
        requests.applied(vec![(a.id, Ok(Bytes::from_static(b"deleted")))]);
        requests.applied(vec![(a.id, Err(WriteError::NotFound))]);
        assert_eq!(a.outcome(), Outcome::Applied(Ok(Bytes::from_static(b"deleted"))), "the retry's refusal is not");
        requests.snapshot_installed();
        assert_eq!(a.outcome(), Outcome::Applied(Ok(Bytes::from_static(b"deleted"))), "an answer stays");
        assert_eq!(b.outcome(), Outcome::Skipped, "a waiting one may have been skipped");
        assert!(requests.any());
        drop(a);
        drop(b);
        assert!(requests.lock().is_empty());
        assert!(!requests.any(), "none awaited: apply skips the answers");
    }
}
