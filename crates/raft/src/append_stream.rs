//! Replication pipelined over one long-lived stream per session: the leader's side
//! ([`send`]) and the follower's ([`serve`]).
//!
//! openraft replicates as a stream of AppendEntries requests and takes the responses in
//! the order of the requests. Its default network sends them one at a time, each a unary
//! RPC: the next batch of entries waits for the follower's answer to the last one, so
//! for the follower's fsync of it, and each batch costs an HTTP/2 stream (headers both
//! ways, a task per call on both sides). Here the requests leave as openraft makes them,
//! as messages on one stream; the follower hands that stream to openraft's pipelined
//! `Raft::stream_append`, which answers in order on the way back.
//!
//! A follower that does not know the stream (an older binary) answers "unimplemented":
//! the session fails once and the connection replicates by the unary RPC from then on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use openraft::errors::RPCError;
use openraft::raft::{AppendEntriesRequest, StreamAppendResult};
use openraft::storage::RaftStateMachine;
use tonic::transport::Channel;
use tonic::{Status, Streaming};

use crate::codec::{decode, encode};
use crate::network::{net_err, status_err};
use crate::pb;
use crate::pb::peer_client::PeerClient;
use crate::reply::ReplyStream;
use crate::types::{Raft, TypeConfig};

/// What the follower answers each request with: openraft's result, or why its Raft
/// could not answer (it stopped).
type Reply = Result<StreamAppendResult<TypeConfig>, String>;

/// The responses of one session, in request order, as openraft's replication reads them.
pub(crate) type Responses = BoxStream<'static, Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>>;

/// Opens a session on `client` and sends `input` down it. Every request that is sent
/// must be answered within `ttl` (the budget a unary AppendEntries had); a session
/// whose follower stops answering ends with an error, and openraft opens another.
///
/// The stream is opened only once `input` has its first request: openraft waits out its
/// backoff after a failure inside the request stream, so a session that dialed first
/// would dial a peer that refuses connections again and again without ever waiting
/// (the simulator ran out of ports on seed 1118).
pub(crate) async fn send<S>(mut client: PeerClient<Channel>, mut input: S, ttl: Duration) -> Result<Responses, Status>
where
    S: Stream<Item = AppendEntriesRequest<TypeConfig>> + Send + Unpin + 'static,
{
    let Some(first) = input.next().await else {
        return Ok(Box::pin(futures::stream::empty()));
    };
    let sent = Arc::new(AtomicU64::new(0));
    let counted = sent.clone();
    let requests = futures::stream::iter([first]).chain(input).map(move |req| {
        counted.fetch_add(1, Ordering::SeqCst);
        pb::RaftMessage { data: Bytes::from(encode(&req)) }
    });
    let opened = tokio::time::timeout(ttl, client.append_stream(requests))
        .await
        .map_err(|_| Status::deadline_exceeded("the append stream did not open in time"))??;
    let reading = Reading { replies: opened.into_inner(), sent, answered: 0, ttl };
    Ok(Box::pin(futures::stream::unfold(Some(reading), |state| async move {
        let mut reading = state?;
        let item = reading.next().await?;
        // After an error or a refusal (a conflict, a higher vote) the session is over.
        let go_on = matches!(item, Ok(Ok(_)));
        Some((item, go_on.then_some(reading)))
    })))
}

/// The leader's end of one session.
struct Reading {
    replies: Streaming<pb::RaftMessage>,
    /// Requests handed to the stream so far; `answered` of them have their response.
    sent: Arc<AtomicU64>,
    answered: u64,
    ttl: Duration,
}

impl Reading {
    /// The next response; `None` once the follower has ended the stream.
    async fn next(&mut self) -> Option<Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>> {
        loop {
            // A request that was waiting for its answer before this wait began has had
            // at least `ttl` when the wait times out; one sent during it gets another round.
            let was_waiting = self.sent.load(Ordering::SeqCst) > self.answered;
            // `message` keeps its place when its future is dropped by the timeout.
            match tokio::time::timeout(self.ttl, self.replies.message()).await {
                Ok(Ok(Some(m))) => {
                    self.answered += 1;
                    let reply = decode::<Reply>(&m.data).map_err(net_err);
                    return Some(reply.and_then(|r| r.map_err(net_err)));
                }
                Ok(Ok(None)) => return None,
                Ok(Err(s)) => return Some(Err(status_err(s))),
                Err(_) if was_waiting => {
                    return Some(Err(net_err(format!("no AppendEntries response in {:?}", self.ttl))))
                }
                // Idle: nothing was sent, nothing is owed.
                Err(_) => {}
            }
        }
    }
}

/// The follower's side: the requests as they arrive go to openraft's pipelined append,
/// its answers go back in the same order. A request that does not decode ends the
/// session (the leader's unanswered requests are sent again in a new one).
pub(crate) fn serve<SM: RaftStateMachine<TypeConfig>>(
    raft: Raft<SM>,
    incoming: Streaming<pb::RaftMessage>,
) -> ReplyStream {
    let requests = futures::stream::unfold(incoming, |mut incoming| async move {
        let m = incoming.message().await.ok()??;
        match decode::<AppendEntriesRequest<TypeConfig>>(&m.data) {
            Ok(req) => Some((req, incoming)),
            Err(e) => {
                tracing::warn!("append stream: a request that does not decode ends the session: {e}");
                None
            }
        }
    });
    let replies = raft.stream_append(requests).map(|r| {
        let reply: Reply = r.map_err(|fatal| fatal.to_string());
        Ok(pb::RaftMessage { data: Bytes::from(encode(&reply)) })
    });
    Box::pin(replies)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Instant;

    use futures::future::BoxFuture;
    use openraft::network::RaftNetworkFactory;
    use openraft::raft::AppendEntriesResponse;
    use openraft::{BasicNode, RaftNetworkV2};
    use tokio_stream::wrappers::UnboundedReceiverStream;

    use super::*;
    use crate::network::{Channels, PeerNetwork, TcpDialer};
    use crate::test_peer::{Streamed, TestPeer};
    use crate::types::{LogId, Vote};

    fn log_id(index: u64) -> LogId {
        LogId::new(openraft::impls::leader_id_adv::LeaderId { term: 1, node_id: 1 }, index)
    }

    /// An entry-less request, told apart by where it says the log stands.
    fn request(index: u64) -> AppendEntriesRequest<TypeConfig> {
        AppendEntriesRequest {
            vote: Vote::new(1, 1),
            prev_log_id: Some(log_id(index)),
            leader_commit: None,
            entries: vec![],
        }
    }

    fn reply_to(req: &AppendEntriesRequest<TypeConfig>) -> Result<pb::RaftMessage, Status> {
        let reply: Reply = Ok(Ok(req.prev_log_id));
        Ok(pb::RaftMessage { data: Bytes::from(encode(&reply)) })
    }

    /// A follower that reads `batch` requests before it answers any, then answers them in
    /// order, and so on; 0 reads forever and answers nothing.
    fn follower(batch: usize) -> Streamed {
        Arc::new(move |incoming: Streaming<pb::RaftMessage>| -> BoxFuture<'static, Result<ReplyStream, Status>> {
            let requests = futures::stream::unfold(incoming, |mut incoming| async move {
                let m = incoming.message().await.ok()??;
                Some((decode::<AppendEntriesRequest<TypeConfig>>(&m.data).expect("a request"), incoming))
            });
            let replies: ReplyStream = if batch == 0 {
                Box::pin(requests.filter_map(|_| async { None }))
            } else {
                Box::pin(
                    requests
                        .chunks(batch)
                        .flat_map(|reqs| futures::stream::iter(reqs.iter().map(reply_to).collect::<Vec<_>>())),
                )
            };
            Box::pin(async move { Ok(replies) })
        })
    }

    async fn client(peer: TestPeer) -> PeerClient<Channel> {
        let addr = peer.start().await;
        Channels::new(Arc::new(TcpDialer), None).client(&addr).unwrap()
    }

    fn answered(item: Option<Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>>) -> u64 {
        match item {
            Some(Ok(Ok(Some(l)))) => l.index(),
            other => panic!("not an answer: {other:?}"),
        }
    }

    /// Requests leave without waiting for the answers before them (this follower answers
    /// only once it holds three), and the answers come back in request order.
    #[tokio::test]
    async fn requests_are_pipelined_and_answered_in_order() {
        let client = client(TestPeer { append_stream: Some(follower(3)), ..TestPeer::default() }).await;
        let input = futures::stream::iter((1..=6).map(request)).chain(futures::stream::pending());
        let mut responses = send(client, Box::pin(input), Duration::from_secs(5)).await.unwrap();
        for index in 1..=6 {
            assert_eq!(answered(responses.next().await), index);
        }
    }

    /// A request the follower never answers ends the session with an error after the ttl.
    #[tokio::test]
    async fn an_unanswered_request_ends_the_session_after_its_ttl() {
        let client = client(TestPeer { append_stream: Some(follower(0)), ..TestPeer::default() }).await;
        let input = futures::stream::iter([request(1)]).chain(futures::stream::pending());
        let ttl = Duration::from_millis(300);
        let started = Instant::now();
        let mut responses = send(client, Box::pin(input), ttl).await.unwrap();
        assert!(matches!(responses.next().await, Some(Err(RPCError::Network(_)))));
        assert!(started.elapsed() >= ttl && started.elapsed() < ttl * 3, "{:?}", started.elapsed());
        assert!(responses.next().await.is_none(), "the session is over");
    }

    /// A session with nothing to send stays open past its ttl; what is sent later is answered.
    #[tokio::test]
    async fn an_idle_session_does_not_time_out() {
        let client = client(TestPeer { append_stream: Some(follower(1)), ..TestPeer::default() }).await;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let ttl = Duration::from_millis(100);
        tx.send(request(1)).unwrap();
        let mut responses = send(client, UnboundedReceiverStream::new(rx), ttl).await.unwrap();
        assert_eq!(answered(responses.next().await), 1);
        tokio::time::sleep(ttl * 4).await;
        tx.send(request(2)).unwrap();
        assert_eq!(answered(responses.next().await), 2);
    }

    /// Nothing is dialed before openraft hands over the first request (it waits out its
    /// backoff before that): a session towards a peer that refuses connections waits.
    #[tokio::test]
    async fn nothing_is_dialed_before_the_first_request() {
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = closed.local_addr().unwrap().to_string();
        drop(closed);
        let client = Channels::new(Arc::new(TcpDialer), None).client(&addr).unwrap();
        let backoff = Duration::from_millis(300);
        let input = futures::stream::once(async move {
            tokio::time::sleep(backoff).await;
            request(1)
        });
        let started = Instant::now();
        let refused = send(client, Box::pin(input), Duration::from_secs(5)).await;
        assert!(matches!(refused, Err(ref s) if s.code() == tonic::Code::Unavailable), "{:?}", refused.err());
        assert!(started.elapsed() >= backoff, "dialed after {:?}, before the request", started.elapsed());
    }

    /// A follower without `AppendStream` (an older binary) fails one session, then gets
    /// unary AppendEntries.
    #[tokio::test]
    async fn a_follower_without_the_stream_gets_unary_rpcs() {
        let unary_calls = Arc::new(AtomicUsize::new(0));
        let counted = unary_calls.clone();
        let peer = TestPeer {
            append_entries: Some(Arc::new(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
                let resp: Result<AppendEntriesResponse<TypeConfig>, String> = Ok(AppendEntriesResponse::Success);
                Box::pin(async move { Ok(pb::RaftMessage { data: Bytes::from(encode(&resp)) }) })
            })),
            ..TestPeer::default()
        };
        let addr = peer.start().await;
        let mut net = PeerNetwork::new(Channels::new(Arc::new(TcpDialer), None));
        let mut conn = net.new_client(2, &BasicNode { addr }).await;
        let option = openraft::network::RPCOption::new(Duration::from_secs(5));
        let once = || futures::stream::iter([request(1)]);
        assert!(conn.stream_append(once(), option.clone()).await.is_err(), "the first session learns it");
        assert_eq!(unary_calls.load(Ordering::SeqCst), 0);
        let mut responses = conn.stream_append(once(), option).await.expect("the unary fallback");
        assert!(matches!(responses.next().await, Some(Ok(Ok(_)))));
        assert_eq!(unary_calls.load(Ordering::SeqCst), 1);
    }
}
