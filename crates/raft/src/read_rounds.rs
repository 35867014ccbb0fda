//! Owns the coalescing of a follower's read-index requests, much as etcd's linearizable
//! read loop does: the follower asks the leader for a read index once per round, for
//! every read that was waiting when the round began; a read that arrives while
//! [`IN_FLIGHT`] rounds are out waits for the next one to begin. (The leader's own reads
//! are not coalesced here: openraft's core confirms them in batches already, and a round
//! there cost more than it saved.)
//!
//! Why it is still linearizable: a round asks the leader only after each of its reads
//! began, so the index it answers is at least the leader's commit index at some moment
//! after each read began, which is all a read index promises one read.
//!
//! Why: a flood of consistent LISTs or GETs on a follower was one ReadIndex RPC each, at
//! the normal CPU priority of the node's replication; now it is at most [`IN_FLIGHT`].

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

/// How long one round waits for the leader's answer before its reads retry (each read
/// has its own deadline besides): a round that hangs on a leader that went away holds
/// back the reads that queued behind it.
pub(crate) const ROUND_TIMEOUT: Duration = Duration::from_secs(1);

/// The reads waiting for the next round, and whether a round is out.
#[derive(Default)]
pub(crate) struct ReadRounds {
    state: Mutex<Waiting>,
}

/// Rounds out at once, at most: a read that finds fewer out starts one at once, so under
/// load it waits for a round to come back only when [`IN_FLIGHT`] already are.
const IN_FLIGHT: usize = 2;

#[derive(Default)]
struct Waiting {
    /// Tasks running rounds (each stops when it finds no one waiting).
    running: usize,
    /// Invariant: each joined after the round in flight (if any) asked the leader.
    readers: Vec<oneshot::Sender<Option<u64>>>,
}

impl ReadRounds {
    /// The read index of the next round to begin (None: it failed or `remaining` ran
    /// out; the caller retries). `ask` asks the leader once; it runs in a task of its own,
    /// so a read that is dropped never stops the rounds of the others.
    pub(crate) async fn read_index<F, Fut>(self: &Arc<Self>, remaining: Duration, ask: F) -> Option<u64>
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = Option<u64>> + Send,
    {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut w = self.state.lock().unwrap_or_else(|e| e.into_inner());
            w.readers.push(tx);
            let start = w.running < IN_FLIGHT;
            w.running += usize::from(start);
            start
        };
        if start {
            let rounds = self.clone();
            tokio::spawn(async move { rounds.run(ask).await });
        }
        tokio::time::timeout(remaining, rx).await.ok()?.ok()?
    }

    /// Runs rounds while reads are waiting.
    async fn run<F, Fut>(&self, ask: F)
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Option<u64>>,
    {
        loop {
            let readers = {
                let mut w = self.state.lock().unwrap_or_else(|e| e.into_inner());
                // Those whose reads were dropped (or timed out) need no round.
                w.readers.retain(|r| !r.is_closed());
                if w.readers.is_empty() {
                    w.running -= 1;
                    return;
                }
                std::mem::take(&mut w.readers)
            };
            let index = tokio::time::timeout(ROUND_TIMEOUT, ask()).await.ok().flatten();
            for r in readers {
                let _ = r.send(index);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Reads that arrive while [`IN_FLIGHT`] rounds are out share the next round, which
    /// begins after they arrived: three reads then cost one more ask, not three, and see
    /// its index, not an earlier round's.
    #[tokio::test]
    async fn reads_while_rounds_are_out_share_the_next() {
        assert_eq!(IN_FLIGHT, 2);
        let rounds = Arc::new(ReadRounds::default());
        let asked = Arc::new(AtomicU64::new(0));
        let (release_tx, release_rx) = tokio::sync::watch::channel(0u64);
        let ask = {
            let asked = asked.clone();
            move || {
                let n = asked.fetch_add(1, Ordering::SeqCst) + 1;
                let mut release = release_rx.clone();
                async move {
                    // Round n answers once it is released, with index 100 × n.
                    release.wait_for(|r| *r >= n).await.ok()?;
                    Some(100 * n)
                }
            }
        };
        let read = || {
            let (rounds, ask) = (rounds.clone(), ask.clone());
            tokio::spawn(async move { rounds.read_index(Duration::from_secs(5), ask).await })
        };
        let first = read();
        while asked.load(Ordering::SeqCst) < 1 {
            tokio::task::yield_now().await;
        }
        let second = read();
        while asked.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        let later: Vec<_> = (0..3).map(|_| read()).collect();
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(asked.load(Ordering::SeqCst), 2, "no third ask while two are out");
        release_tx.send(1).unwrap();
        assert_eq!(first.await.unwrap(), Some(100));
        release_tx.send(3).unwrap();
        assert_eq!(second.await.unwrap(), Some(200));
        for l in later {
            assert_eq!(
                l.await.unwrap(),
                Some(300),
                "a read that began while rounds 1 and 2 were out waits for round 3"
            );
        }
        assert_eq!(asked.load(Ordering::SeqCst), 3);
    }

    /// A round that never answers fails its reads at [`ROUND_TIMEOUT`], and the next
    /// round is asked afresh.
    #[tokio::test]
    async fn a_hung_round_fails_and_the_next_is_asked() {
        let rounds = Arc::new(ReadRounds::default());
        let asked = Arc::new(AtomicU64::new(0));
        let ask = {
            let asked = asked.clone();
            move || {
                let n = asked.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n == 0 {
                        std::future::pending::<()>().await;
                    }
                    Some(7)
                }
            }
        };
        assert_eq!(rounds.read_index(Duration::from_secs(30), ask.clone()).await, None);
        assert_eq!(rounds.read_index(Duration::from_secs(30), ask).await, Some(7));
        assert_eq!(asked.load(Ordering::SeqCst), 2);
    }
}
