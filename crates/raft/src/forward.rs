//! Write forwarding over one long-lived stream per follower and leader: the follower's
//! side ([`ForwardPipes`]) and the leader's ([`serve_stream`]).
//!
//! A unary RPC per forwarded write cost an HTTP/2 stream each (headers both ways, a
//! stream state, a task per call on both sides); with clients spread over three nodes,
//! two thirds of the writes pay it. Here each write is one message on a stream that
//! stays open: `(id, Command)` out, `(id, ForwardReply)` back, in whatever order the
//! leader's applies finish.
//!
//! What a follower may conclude is the same as with a unary call: a reply is the
//! leader's answer; a write whose reply never comes (the stream broke, the deadline
//! passed) has an unknown outcome, since the leader may have appended it. A leader
//! that does not know the stream (an older binary) answers "unimplemented"; the address
//! is then remembered and its writes go by the unary `Forward`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use kuorum_store::Command;
use openraft::storage::RaftStateMachine;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::{Status, Streaming};

use crate::codec::{decode, encode};
use crate::network::Channels;
use crate::pb;
use crate::proposed::ProposedIds;
use crate::reply::{current_term, refused_reply, ForwardReply, ReplyStream, ATTEMPT_IN_FLIGHT};
use crate::types::{Raft, TypeConfig};

/// Why a forwarded write has no reply.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NoReply {
    /// The leader has no stream: send it by the unary RPC. Nothing was proposed.
    Unsupported,
    /// Sent, or maybe sent, and no answer: the outcome is unknown.
    Lost,
}

/// One node's open streams to leaders, by address.
#[derive(Clone)]
pub(crate) struct ForwardPipes {
    channels: Channels,
    state: Arc<Mutex<PipesState>>,
}

#[derive(Default)]
struct PipesState {
    open: HashMap<String, Arc<Pipe>>,
    /// Leaders that answered "unimplemented".
    unary_only: HashSet<String>,
}

/// One stream to one leader.
struct Pipe {
    requests: mpsc::UnboundedSender<pb::RaftMessage>,
    calls: Mutex<Calls>,
}

#[derive(Default)]
struct Calls {
    next_id: u64,
    /// Writes sent and not answered. Emptied (every waiter told "lost") when the stream
    /// ends, after which `closed` keeps new writes out: both change under this one lock,
    /// so no waiter is left behind a stream that is gone.
    waiting: HashMap<u64, oneshot::Sender<ForwardReply>>,
    closed: bool,
}

impl ForwardPipes {
    pub(crate) fn new(channels: Channels) -> Self {
        Self { channels, state: Arc::default() }
    }

    /// Whether writes to `addr` go by the unary RPC.
    pub(crate) fn unary_only(&self, addr: &str) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).unary_only.contains(addr)
    }

    /// Sends `cmd` to the leader at `addr` and waits up to `remaining` for its reply.
    pub(crate) async fn call(&self, addr: &str, cmd: &Command, remaining: Duration) -> Result<ForwardReply, NoReply> {
        let pipe = self.pipe(addr).map_err(|_| NoReply::Lost)?;
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut calls = pipe.calls.lock().unwrap_or_else(|e| e.into_inner());
            if calls.closed {
                return Err(NoReply::Lost);
            }
            calls.next_id += 1;
            let id = calls.next_id;
            calls.waiting.insert(id, tx);
            id
        };
        let msg = pb::RaftMessage { data: Bytes::from(encode(&(id, cmd))) };
        if pipe.requests.send(msg).is_err() {
            pipe.forget(id);
            return Err(NoReply::Lost);
        }
        match tokio::time::timeout(remaining, rx).await {
            Ok(Ok(reply)) => Ok(reply),
            // Told by the closing stream: a leader without the stream answered before
            // reading anything, so nothing was proposed.
            Ok(Err(_)) if self.unary_only(addr) => Err(NoReply::Unsupported),
            Ok(Err(_)) => Err(NoReply::Lost),
            Err(_) => {
                pipe.forget(id);
                Err(NoReply::Lost)
            }
        }
    }

    /// The open stream to `addr`, opened now if there is none.
    fn pipe(&self, addr: &str) -> Result<Arc<Pipe>, std::io::Error> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = state.open.get(addr) {
            return Ok(p.clone());
        }
        let mut client = self.channels.client(addr)?;
        let (requests, outgoing) = mpsc::unbounded_channel();
        let pipe = Arc::new(Pipe { requests, calls: Mutex::default() });
        state.open.insert(addr.to_string(), pipe.clone());
        drop(state);

        let (pipes, addr, reading) = (self.clone(), addr.to_string(), pipe.clone());
        tokio::spawn(async move {
            match client.forward_stream(UnboundedReceiverStream::new(outgoing)).await {
                Ok(resp) => {
                    let mut replies = resp.into_inner();
                    while let Ok(Some(m)) = replies.message().await {
                        let Ok((id, reply)) = decode::<(u64, ForwardReply)>(&m.data) else { break };
                        reading.answer(id, reply);
                    }
                }
                Err(s) if s.code() == tonic::Code::Unimplemented => {
                    pipes.state.lock().unwrap_or_else(|e| e.into_inner()).unary_only.insert(addr.clone());
                }
                Err(_) => {}
            }
            // Closed before it is let go, so a write that finds it in the map is told.
            reading.close();
            let mut state = pipes.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.open.get(&addr).is_some_and(|p| Arc::ptr_eq(p, &reading)) {
                state.open.remove(&addr);
            }
        });
        Ok(pipe)
    }
}

impl Pipe {
    fn answer(&self, id: u64, reply: ForwardReply) {
        let waiter = self.calls.lock().unwrap_or_else(|e| e.into_inner()).waiting.remove(&id);
        if let Some(w) = waiter {
            let _ = w.send(reply);
        }
    }

    fn forget(&self, id: u64) {
        self.calls.lock().unwrap_or_else(|e| e.into_inner()).waiting.remove(&id);
    }

    /// Every waiting write hears that no reply will come (its sender is dropped).
    fn close(&self) {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        calls.closed = true;
        calls.waiting.clear();
    }
}

/// At most this many streamed writes go to the Raft core in one proposal.
const MAX_PROPOSAL_BATCH: usize = 256;

/// The leader's side: proposes the writes as they arrive, those that arrived together
/// in one call to the Raft core, and sends each reply when its write is applied. The
/// reply stream ends once the follower has closed its side and every write it sent has
/// been answered.
pub(crate) fn serve_stream<SM: RaftStateMachine<TypeConfig>>(
    raft: Raft<SM>,
    proposed: Arc<ProposedIds>,
    mut incoming: Streaming<pb::RaftMessage>,
) -> ReplyStream {
    let (replies, outgoing) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(first)) = incoming.message().await {
            let mut batch = vec![first];
            // `message` keeps its place when its future is dropped, so peeking loses nothing.
            while batch.len() < MAX_PROPOSAL_BATCH {
                match incoming.message().now_or_never() {
                    Some(Ok(Some(m))) => batch.push(m),
                    _ => break,
                }
            }
            let decoded: Result<Vec<(u64, Command)>, _> = batch.iter().map(|m| decode(&m.data)).collect();
            let decoded = match decoded {
                Ok(d) => d,
                Err(e) => {
                    let _ = replies.send(Err(Status::invalid_argument(e.to_string())));
                    return;
                }
            };
            // A second attempt of a write proposed in this term is not proposed again.
            let term = current_term(&raft);
            let (ids, cmds): (Vec<u64>, Vec<Command>) = decoded
                .into_iter()
                .filter(|(id, cmd)| {
                    let first = proposed.first_in_term(term, cmd);
                    if !first {
                        let _ = replies.send(Ok(reply_message(*id, &ForwardReply::Unknown(ATTEMPT_IN_FLIGHT.into()))));
                    }
                    first
                })
                .unzip();
            if cmds.is_empty() {
                continue;
            }
            let answered = match raft.client_write_many(cmds).await {
                Ok(results) => results,
                Err(fatal) => {
                    for id in ids {
                        let _ = replies.send(Ok(reply_message(id, &ForwardReply::Failed(fatal.to_string()))));
                    }
                    continue;
                }
            };
            // Results come in submission order, each when its entry is applied.
            let replies = replies.clone();
            tokio::spawn(async move {
                let mut answered = answered;
                for id in ids {
                    let reply = match answered.next().await {
                        Some(Ok(Ok(applied))) => ForwardReply::Applied(applied.response),
                        Some(Ok(Err(refused))) => refused_reply(&refused),
                        Some(Err(fatal)) => ForwardReply::Unknown(fatal.to_string()),
                        None => ForwardReply::Unknown("the leader stopped before answering".into()),
                    };
                    let _ = replies.send(Ok(reply_message(id, &reply)));
                }
            });
        }
    });
    Box::pin(UnboundedReceiverStream::new(outgoing))
}

fn reply_message(id: u64, reply: &ForwardReply) -> pb::RaftMessage {
    pb::RaftMessage { data: Bytes::from(encode(&(id, reply))) }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures::StreamExt;
    use kuorum_store::WriteResult;

    use super::*;
    use crate::network::TcpDialer;
    use crate::test_peer::TestPeer;

    /// How a test's leader answers streamed writes.
    #[derive(Clone, Copy)]
    enum StreamMode {
        /// Collects `n` writes, then answers them last first, each with its own key.
        Reversed(usize),
        /// An older binary: no such method.
        Unimplemented,
        /// Reads one write, then breaks the stream without answering.
        Breaks,
    }

    fn applied(key: &str) -> ForwardReply {
        let r: WriteResult = Ok(Bytes::copy_from_slice(key.as_bytes()));
        ForwardReply::Applied(r)
    }

    fn key_of(cmd: &Command) -> String {
        cmd.key().unwrap_or_default().to_string()
    }

    fn create(key: &str) -> Command {
        Command::Create { key: key.into(), namespace: None, object: Bytes::from_static(b"{}") }
    }

    fn message(v: &impl serde::Serialize) -> pb::RaftMessage {
        pb::RaftMessage { data: Bytes::from(encode(v)) }
    }

    /// A leader whose streamed writes are answered as `mode` says; its unary `Forward`
    /// counts its calls and answers "applied".
    fn leader(mode: StreamMode, unary_calls: Arc<AtomicUsize>) -> TestPeer {
        let mut peer = TestPeer {
            forward: Some(Arc::new(move |m: pb::RaftMessage| {
                unary_calls.fetch_add(1, Ordering::SeqCst);
                Box::pin(async move {
                    let cmd: Command = decode(&m.data).map_err(|e| Status::invalid_argument(e.to_string()))?;
                    Ok(message(&applied(&key_of(&cmd))))
                })
            })),
            ..TestPeer::default()
        };
        peer.forward_stream = match mode {
            StreamMode::Unimplemented => None,
            StreamMode::Breaks => Some(Arc::new(|mut incoming: Streaming<pb::RaftMessage>| {
                Box::pin(async move {
                    let first = incoming.message().await;
                    assert!(matches!(first, Ok(Some(_))), "one write arrives");
                    let out = futures::stream::iter([Err(Status::internal("leader went away"))]);
                    Ok(Box::pin(out) as ReplyStream)
                })
            })),
            StreamMode::Reversed(n) => Some(Arc::new(move |mut incoming: Streaming<pb::RaftMessage>| {
                Box::pin(async move {
                    let mut got = Vec::new();
                    while got.len() < n {
                        let m = incoming.message().await?.expect("n writes");
                        got.push(decode::<(u64, Command)>(&m.data).expect("an (id, command)"));
                    }
                    let replies: Vec<_> =
                        got.into_iter().rev().map(|(id, cmd)| Ok(message(&(id, applied(&key_of(&cmd)))))).collect();
                    // Keeps the stream open after the replies, as a leader does while the
                    // follower's side is open.
                    let out = futures::stream::iter(replies).chain(futures::stream::pending());
                    Ok(Box::pin(out) as ReplyStream)
                })
            })),
        };
        peer
    }

    /// Serves a leader; returns its address and the pipes of a follower that forwards to it.
    async fn start(leader: TestPeer) -> (String, ForwardPipes) {
        (leader.start().await, ForwardPipes::new(Channels::new(Arc::new(TcpDialer), None)))
    }

    const WAIT: Duration = Duration::from_secs(10);

    /// Writes share one stream and each gets its own reply, whatever order the leader
    /// answers in.
    #[tokio::test]
    async fn each_write_gets_its_own_reply_in_any_order() {
        let unary_calls = Arc::new(AtomicUsize::new(0));
        let (addr, pipes) = start(leader(StreamMode::Reversed(3), unary_calls.clone())).await;
        let (a, b, c) = (create("/a"), create("/b"), create("/c"));
        let (ra, rb, rc) =
            tokio::join!(pipes.call(&addr, &a, WAIT), pipes.call(&addr, &b, WAIT), pipes.call(&addr, &c, WAIT));
        for (r, key) in [(ra, "/a"), (rb, "/b"), (rc, "/c")] {
            match r {
                Ok(ForwardReply::Applied(Ok(v))) => assert_eq!(v, key.as_bytes()),
                other => panic!("{key}: {other:?}"),
            }
        }
        assert_eq!(pipes.state.lock().unwrap().open.len(), 1, "one stream for all three");
        assert_eq!(unary_calls.load(Ordering::SeqCst), 0);
    }

    /// A leader without the stream: the write is reported unsent (the caller sends it by
    /// the unary RPC) and the address is remembered.
    #[tokio::test]
    async fn a_leader_without_the_stream_is_remembered_as_unary_only() {
        let unary_calls = Arc::new(AtomicUsize::new(0));
        let (addr, pipes) = start(leader(StreamMode::Unimplemented, unary_calls)).await;
        assert!(!pipes.unary_only(&addr));
        assert_eq!(pipes.call(&addr, &create("/a"), WAIT).await, Err(NoReply::Unsupported));
        assert!(pipes.unary_only(&addr));
        assert!(pipes.state.lock().unwrap().open.is_empty(), "the failed stream is let go");
    }

    /// A stream that breaks leaves the writes on it without an answer: their outcome is
    /// unknown, reported at once rather than at the deadline. The next write opens a new
    /// stream.
    #[tokio::test]
    async fn a_broken_stream_reports_its_writes_lost_at_once() {
        let unary_calls = Arc::new(AtomicUsize::new(0));
        let (addr, pipes) = start(leader(StreamMode::Breaks, unary_calls)).await;
        let started = tokio::time::Instant::now();
        assert_eq!(pipes.call(&addr, &create("/a"), WAIT).await, Err(NoReply::Lost));
        assert!(started.elapsed() < WAIT / 2, "not by the deadline: {:?}", started.elapsed());
        assert!(!pipes.unary_only(&addr));
        assert_eq!(pipes.call(&addr, &create("/b"), WAIT).await, Err(NoReply::Lost), "a second stream, broken too");
    }

    /// No reply by the deadline: lost, and the waiter is let go.
    #[tokio::test]
    async fn a_write_without_a_reply_by_its_deadline_is_lost() {
        let unary_calls = Arc::new(AtomicUsize::new(0));
        // Waits for two writes before answering; only one comes.
        let (addr, pipes) = start(leader(StreamMode::Reversed(2), unary_calls)).await;
        assert_eq!(pipes.call(&addr, &create("/a"), Duration::from_millis(300)).await, Err(NoReply::Lost));
        let state = pipes.state.lock().unwrap();
        let pipe = state.open.get(&addr).expect("the stream stays open");
        assert!(pipe.calls.lock().unwrap().waiting.is_empty());
    }
}
