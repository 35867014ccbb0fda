//! Owns the leader's memory of the request ids it proposed in its current term, so that
//! one leader never proposes two attempts of one write.
//!
//! A follower whose forwarded attempt has an unknown outcome (its stream to the leader
//! broke) retries once a read barrier shows the attempt not applied. But the barrier's
//! index is the leader's commit index: an attempt the leader took and appended but has not
//! committed yet is above it. Its retry would then be a second entry with the same
//! request id, and both apply: an update without a precondition twice, the second after
//! any write in between (lost). The leader refuses the retry instead, answering "unknown"
//! (the follower asks again after another barrier, and meets the first attempt's outcome
//! once it is applied).
//!
//! Only the current term matters. An attempt appended in an earlier term either is in
//! the new leader's log, and committed before the new leader answers any read index (the
//! barrier then finds it applied), or is not, and then never commits. Memory is bounded:
//! ids are kept [`KEEP`] (longer than any write's deadline) and at most [`MAX_IDS`] of them.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use kuorum_store::{Command, RequestId};
use tokio::time::Instant;

/// How long an id is remembered: twice the default request timeout (60 s), a write's
/// deadline, after which it is not retried. (A node run with a longer timeout keeps the
/// ids no longer: a retry after 120 s can then be proposed again.)
const KEEP: Duration = Duration::from_secs(120);
/// The most ids remembered (the oldest are forgotten first): about 70 B each with the
/// map and the queue, 1 Mi ids ~70 MB; at 5,000 writes/s, 120 s of them ~40 MB.
const MAX_IDS: usize = 1 << 20;

#[derive(Default)]
pub(crate) struct ProposedIds {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The term the ids were proposed in; a new term starts an empty set.
    term: u64,
    /// Invariant: holds exactly the ids of `order`.
    ids: HashMap<RequestId, Instant>,
    /// The ids in the order they were proposed, to forget the oldest.
    order: VecDeque<(Instant, RequestId)>,
}

impl ProposedIds {
    /// Whether `cmd` may be proposed by this leader in `term`: false when a command with
    /// its request id was proposed already in this term (commands without one: true).
    pub(crate) fn first_in_term(&self, term: u64, cmd: &Command) -> bool {
        self.first_in_term_at(term, cmd, Instant::now())
    }

    fn first_in_term_at(&self, term: u64, cmd: &Command, now: Instant) -> bool {
        let Some(id) = cmd.request() else {
            return true;
        };
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if s.term != term {
            *s = Inner { term, ..Inner::default() };
        }
        while let Some(&(at, old)) = s.order.front() {
            if now.duration_since(at) < KEEP && s.order.len() < MAX_IDS {
                break;
            }
            s.order.pop_front();
            s.ids.remove(&old);
        }
        if s.ids.contains_key(&id) {
            tracing::debug!(?id, term, "a second attempt of a write proposed in this term: not proposed");
            return false;
        }
        s.ids.insert(id, now);
        s.order.push_back((now, id));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(seq: u64) -> Command {
        Command::Identified { request: RequestId { node: 2, seq }, command: Box::new(Command::Noop) }
    }

    #[test]
    fn a_retry_in_the_same_term_is_refused_and_a_new_term_forgets() {
        let p = ProposedIds::default();
        assert!(p.first_in_term(5, &Command::Noop), "no id: nothing to tell apart");
        assert!(p.first_in_term(5, &Command::Noop));
        assert!(p.first_in_term(5, &write(1)));
        assert!(p.first_in_term(5, &write(2)));
        assert!(!p.first_in_term(5, &write(1)), "the retry of 1 in term 5");
        // A new term: the first attempt is committed by then or never will be.
        assert!(p.first_in_term(6, &write(1)));
        assert!(!p.first_in_term(6, &write(1)));
    }

    #[test]
    fn ids_are_forgotten_after_a_while() {
        let p = ProposedIds::default();
        let t0 = Instant::now();
        assert!(p.first_in_term_at(1, &write(1), t0));
        assert!(!p.first_in_term_at(1, &write(1), t0 + KEEP - Duration::from_secs(1)));
        let later = t0 + KEEP + Duration::from_secs(1);
        assert!(p.first_in_term_at(1, &write(2), later));
        assert!(p.first_in_term_at(1, &write(1), later), "forgotten after {KEEP:?}");
        let s = p.inner.lock().unwrap();
        assert_eq!((s.ids.len(), s.order.len()), (2, 2));
    }
}
