//! Writes and read barriers from any node: the leader proposes locally, a follower asks
//! the leader over the peer RPC. Both retry across leader changes until the deadline.
//!
//! A retry after an attempt whose outcome is unknown (the leader's entry was discarded,
//! or the RPC to the leader broke after it was sent) can meet its own earlier success:
//! a create refused as "already exists", an update refused as a conflict, a delete as
//! "not found". Once the cluster's data format is 2 ([`crate::format`]), every attempt
//! of a write carries one request id, and once this node has caught up with the leader,
//! what the first entry carrying the id answered is the write's outcome
//! ([`crate::requests`]); the leader does not propose a second attempt of an id it
//! proposed in its term ([`crate::proposed`]). Before that, or when a snapshot skipped the entries, the
//! refusal is settled from the key's history ([`crate::settle`]): the write's own
//! success, the refusal when the history proves the attempt never applied, otherwise a
//! timeout (504, as kube-apiserver answers when etcd's outcome is unknown). (Updates
//! without a precondition are idempotent at apply: re-applying identical content
//! changes nothing.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use kuorum_store::{Command, ObjectEngine, RequestId, WriteError, WriteResult};
use openraft::async_runtime::WatchReceiver;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::cluster::{ClusterError, Replicator};
use crate::codec::{decode, encode};
use crate::consistency::HashAnswer;
use crate::format::Raise;
use crate::forward::{ForwardPipes, NoReply};
use crate::network::Channels;
use crate::pb;
use crate::proposed::ProposedIds;
use crate::read_rounds::ReadRounds;
use crate::reply::{propose_local, read_index_local, ForwardReply, ReadIndexReply};
use crate::requests::{AwaitedRequests, Awaiting, Outcome};
use crate::settle::{settle, settle_unretried, Settled, Unretried};
use crate::state_machine::StateMachine;
use crate::types::{NodeId, Raft};

/// The longest wait before retrying when no leader is known or the leader moved; a
/// newly known leader ends it at once (see `pause_for_leader`).
const RETRY_PAUSE: Duration = Duration::from_millis(50);

pub(crate) struct RaftReplicator<E: ObjectEngine> {
    pub(crate) id: NodeId,
    pub(crate) raft: Raft<StateMachine<E>>,
    pub(crate) channels: Channels,
    /// Forwarded writes go over these streams (the unary RPC to leaders without them).
    pub(crate) pipes: ForwardPipes,
    pub(crate) applied_rx: watch::Receiver<u64>,
    pub(crate) engine: Arc<E>,
    pub(crate) counters: crate::status::RaftCounters,
    /// Read indexes are asked once per round for every read waiting.
    pub(crate) read_rounds: Arc<ReadRounds>,
    /// The membership (its log id) in which the leader said this node is not a member;
    /// `None`: never. A follower removed while it was cut off never applies its removal:
    /// the leader's word keeps it from serving until its membership changes (it is
    /// added again).
    pub(crate) told_not_member: Arc<NotMemberSince>,
    /// The cluster's data format as applied here (see [`crate::format`]).
    pub(crate) data_format: watch::Receiver<u32>,
    /// The newest data format this node reads.
    pub(crate) max_data_format: u32,
    /// This node's writes in flight, told by apply what their entries answered.
    pub(crate) requests: Arc<AwaitedRequests>,
    /// The number of this node's next request id (random at start: ids of an earlier
    /// run of the node may still be in the log).
    pub(crate) next_request: AtomicU64,
    /// Held by the format raise from asking the members to the raise applied, and by a
    /// member add from its check of the node to the node added: so the raise asks every
    /// member added meanwhile, and the add checks against a raise made meanwhile.
    pub(crate) format_lock: Arc<tokio::sync::Mutex<()>>,
    /// The request ids this node proposed in its term as leader ([`crate::proposed`]).
    pub(crate) proposed: Arc<ProposedIds>,
}

/// Where the leader's "not a member" was heard (see [`RaftReplicator::told_not_member`]).
pub(crate) type NotMemberSince = Mutex<Option<Option<crate::types::LogId>>>;

/// The log id naming the membership `raft` holds now.
fn membership_id<E: ObjectEngine>(raft: &Raft<StateMachine<E>>) -> Option<crate::types::LogId> {
    *raft.server_metrics().borrow_watched().membership_config.log_id()
}

enum Attempt<T> {
    Done(T),
    /// Nothing was appended: retry freely.
    Retry,
    /// The outcome is unknown: retry, remembering it may have been applied.
    Uncertain,
}

impl<E: ObjectEngine> RaftReplicator<E> {
    fn leader_addr(&self, leader: NodeId) -> Option<String> {
        let m = self.raft.metrics();
        let m = m.borrow_watched();
        m.membership_config.membership().get_node(&leader).map(|n| n.addr.clone())
    }

    fn current_leader(&self) -> Option<NodeId> {
        self.raft.metrics().borrow_watched().current_leader
    }

    /// Waits up to `pause` for this node to know a leader other than `seen`, so a write
    /// held through an election goes to the new leader as soon as it is known rather
    /// than at the next tick of a fixed pause.
    async fn pause_for_leader(&self, seen: Option<NodeId>, pause: Duration) {
        let mut metrics = self.raft.metrics();
        let changed = async {
            while metrics.borrow_watched().current_leader == seen {
                if metrics.changed().await.is_err() {
                    // Raft has stopped: nothing will change; the pause ends it.
                    std::future::pending::<()>().await;
                }
            }
        };
        let _ = tokio::time::timeout(pause, changed).await;
    }

    async fn write_once(&self, cmd: &Command, remaining: Duration) -> Attempt<Result<WriteResult, ClusterError>> {
        let Some(leader) = self.current_leader() else {
            return Attempt::Retry;
        };
        let reply = if leader == self.id {
            match tokio::time::timeout(remaining, propose_local(&self.raft, &self.proposed, cmd.clone())).await {
                Ok(r) => r,
                Err(_) => return Attempt::Uncertain,
            }
        } else {
            let Some(addr) = self.leader_addr(leader) else {
                return Attempt::Retry;
            };
            let streamed = match self.pipes.unary_only(&addr) {
                false => self.pipes.call(&addr, cmd, remaining).await,
                true => Err(NoReply::Unsupported),
            };
            match streamed {
                Ok(r) => r,
                Err(NoReply::Lost) => return Attempt::Uncertain,
                Err(NoReply::Unsupported) => match self.forward_unary(&addr, cmd, remaining).await {
                    Ok(r) => r,
                    Err(attempt) => return attempt,
                },
            }
        };
        match reply {
            ForwardReply::Applied(r) => Attempt::Done(Ok(r)),
            ForwardReply::NotLeader { .. } => Attempt::Retry,
            ForwardReply::Unknown(_) => Attempt::Uncertain,
            ForwardReply::Failed(msg) => Attempt::Done(Err(ClusterError::Fatal(msg))),
        }
    }

    /// A write forwarded by the unary RPC (to a leader without the stream).
    async fn forward_unary(
        &self,
        addr: &str,
        cmd: &Command,
        remaining: Duration,
    ) -> Result<ForwardReply, Attempt<Result<WriteResult, ClusterError>>> {
        let mut client = self.channels.client(addr).map_err(|_| Attempt::Retry)?;
        let req = pb::RaftMessage { data: Bytes::from(encode(cmd)) };
        match tokio::time::timeout(remaining, client.forward(req)).await {
            Ok(Ok(resp)) => decode::<ForwardReply>(&resp.into_inner().data).map_err(|_| Attempt::Uncertain),
            // Even "unavailable" may come from a connection that broke after the leader
            // took the request, so any failure leaves the outcome unknown.
            Ok(Err(_)) | Err(_) => Err(Attempt::Uncertain),
        }
    }

    /// The answer to a write that was refused after an attempt with an unknown outcome:
    /// once this node has caught up with the leader, the key's history since `since`
    /// says whether the refusal was caused by the write's own attempt (see
    /// [`crate::settle`]).
    async fn settle(
        &self,
        cmd: &Command,
        refusal: WriteError,
        since: u64,
        deadline: Instant,
        awaiting: Option<&Awaiting>,
    ) -> Result<WriteResult, ClusterError> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let upto = self.read_barrier(remaining).await.map_err(|_| ClusterError::Timeout)?;
        // Applied up to the leader's commit, which covers the refused retry's entry: the
        // first entry carrying the id is at or below it, and an attempt not applied by
        // now never commits (a later leader's log holds the retry's entry, not it).
        if let Some(Outcome::Applied(answer)) = awaiting.map(Awaiting::outcome) {
            return Ok(answer);
        }
        let settled = settle(self.engine.as_ref(), cmd.unwrapped(), &refusal, since, upto);
        tracing::debug!(key = ?cmd.key(), since, upto, ?refusal, ?settled, "a refused retry settled from the history");
        match settled {
            Settled::Ours(object) => Ok(Ok(object)),
            Settled::NotOurs => Ok(Err(refusal)),
            Settled::Unknown => Err(ClusterError::Timeout),
        }
    }

    /// What a write without a request id answers after an attempt with an unknown
    /// outcome, which it does not retry: see [`settle_unretried`].
    async fn settle_unretried(
        &self,
        cmd: &Command,
        since: u64,
        deadline: Instant,
    ) -> Result<WriteResult, ClusterError> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let upto = self.read_barrier(remaining).await.map_err(|_| ClusterError::Timeout)?;
        let settled = settle_unretried(self.engine.as_ref(), cmd.unwrapped(), since, upto);
        tracing::debug!(key = ?cmd.key(), since, upto, ?settled, "an unretried write settled from the history");
        match settled {
            Unretried::Ours(object) => Ok(Ok(object)),
            Unretried::Refused(refusal) => Ok(Err(refusal)),
            Unretried::Unknown => Err(ClusterError::Timeout),
        }
    }

    async fn wait_applied(&self, index: u64, deadline: Instant) -> Result<u64, ClusterError> {
        let mut rx = self.applied_rx.clone();
        let res = tokio::time::timeout_at(deadline, rx.wait_for(|a| *a >= index)).await;
        match res {
            Ok(Ok(a)) => Ok(*a),
            Ok(Err(_)) => Err(ClusterError::Shutdown),
            Err(_) => Err(ClusterError::Timeout),
        }
    }

    /// A read index from the leader: on the leader at once, on a follower in the next
    /// round (see [`ReadRounds`]).
    async fn read_index_once(&self, remaining: Duration) -> Option<u64> {
        if self.current_leader() == Some(self.id) {
            let asked_in = membership_id(&self.raft);
            let reply = tokio::time::timeout(remaining, read_index_local(&self.raft, self.id)).await.ok()?;
            return answered_index(reply, &self.raft, asked_in, &self.told_not_member);
        }
        let (id, raft, channels, told) =
            (self.id, self.raft.clone(), self.channels.clone(), self.told_not_member.clone());
        self.read_rounds
            .read_index(remaining, move || ask_read_index(id, raft.clone(), channels.clone(), told.clone()))
            .await
    }
}

/// One round: asks the leader (itself, or over the peer RPC) for a read index.
async fn ask_read_index<E: ObjectEngine>(
    id: NodeId,
    raft: Raft<StateMachine<E>>,
    channels: Channels,
    told_not_member: Arc<NotMemberSince>,
) -> Option<u64> {
    let asked_in = membership_id(&raft);
    let (leader, peer) = {
        let m = raft.metrics();
        let m = m.borrow_watched();
        // A node that knows no leader asks another member, whose "not the leader" names
        // the one it knows (and so does a former leader asked as the leader). That is
        // how a follower removed while it was cut off learns that it was removed, even
        // after the leader changed: it hears from no leader any more, and its failing
        // pre-votes leave it naming the old one. Which member it asks turns with the
        // term, which grows with every election it starts.
        let others: Vec<NodeId> = m.membership_config.membership().voter_ids().filter(|v| *v != id).collect();
        let peer = (!others.is_empty()).then(|| others[m.current_term as usize % others.len()]);
        (m.current_leader, peer)
    };
    let mut target = leader.or(peer)?;
    for _ in 0..2 {
        let reply = if target == id {
            read_index_local(&raft, id).await
        } else {
            let addr = raft.metrics().borrow_watched().membership_config.membership().get_node(&target)?.addr.clone();
            let mut client = channels.client(&addr).ok()?;
            let resp = client.read_index(pb::ReadIndexRequest { requester: id }).await.ok()?;
            decode::<ReadIndexReply>(&resp.into_inner().data).ok()?
        };
        match reply {
            // Only a leader that confirmed its leadership with a quorum answers an index
            // or "not a member", so following a hint is safe.
            ReadIndexReply::NotLeader { leader: Some(hint) } if hint != target => target = hint,
            reply => return answered_index(reply, &raft, asked_in, &told_not_member),
        }
    }
    None
}

/// The read index in a leader's reply; a "not a member" is remembered against the
/// membership this node held when it asked, unless that has changed since (it may have
/// been added again meanwhile; see [`RaftReplicator::told_not_member`]).
fn answered_index<E: ObjectEngine>(
    reply: ReadIndexReply,
    raft: &Raft<StateMachine<E>>,
    asked_in: Option<crate::types::LogId>,
    told_not_member: &NotMemberSince,
) -> Option<u64> {
    match reply {
        ReadIndexReply::Index(i) => Some(i),
        // Planted bug: the removed node reads its own stale state as if it were current.
        ReadIndexReply::NotMember if kuorum_mutation::active(kuorum_mutation::Mutation::RemovedNodeServes) => {
            Some(raft.metrics().borrow_watched().last_applied.map_or(0, |l| l.index))
        }
        ReadIndexReply::NotMember => {
            let mut told = told_not_member.lock().unwrap_or_else(|e| e.into_inner());
            if membership_id(raft) == asked_in {
                *told = Some(asked_in);
            }
            None
        }
        ReadIndexReply::NotLeader { .. } | ReadIndexReply::Failed(_) => None,
    }
}

impl<E: ObjectEngine> Replicator for RaftReplicator<E> {
    fn node_id(&self) -> u64 {
        self.id
    }

    fn write(&self, cmd: Command, deadline: Duration) -> BoxFuture<'_, Result<WriteResult, ClusterError>> {
        Box::pin(async move {
            let deadline = Instant::now() + deadline;
            // Identified while the cluster's format allows it (every member reads it).
            let awaiting = (*self.data_format.borrow() >= 2 && self.max_data_format >= 2).then(|| {
                let id = RequestId { node: self.id, seq: self.next_request.fetch_add(1, Ordering::Relaxed) };
                self.requests.register(id)
            });
            let cmd = match &awaiting {
                Some(a) => Command::Identified { request: a.id, command: Box::new(cmd) },
                None => cmd,
            };
            // Every attempt is appended above what this node has applied now.
            let since = self.applied_index();
            let mut uncertain = false;
            loop {
                if !uncertain && !self.is_member() {
                    return Err(ClusterError::NotMember);
                }
                let now = Instant::now();
                if now >= deadline {
                    return Err(if uncertain || self.current_leader().is_some() {
                        ClusterError::Timeout
                    } else {
                        ClusterError::NoLeader
                    });
                }
                let seen = self.current_leader();
                match self.write_once(&cmd, deadline - now).await {
                    Attempt::Done(Ok(Err(refusal))) if uncertain => {
                        return self.settle(&cmd, refusal, since, deadline, awaiting.as_ref()).await
                    }
                    Attempt::Done(r) => return r,
                    Attempt::Retry => {}
                    Attempt::Uncertain => {
                        uncertain = true;
                        let Some(a) = &awaiting else {
                            // Without a request id, a retry cannot be told from a second
                            // write of the same content: answer what the history says.
                            return self.settle_unretried(&cmd, since, deadline).await;
                        };
                        // The attempt may have committed already: learn that before a retry
                        // applies the write a second time.
                        let remaining = deadline.saturating_duration_since(Instant::now());
                        if self.read_barrier(remaining).await.is_ok() {
                            if let Outcome::Applied(answer) = a.outcome() {
                                return Ok(answer);
                            }
                        }
                    }
                }
                self.pause_for_leader(seen, RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now()))).await;
            }
        })
    }

    fn read_barrier(&self, deadline: Duration) -> BoxFuture<'_, Result<u64, ClusterError>> {
        Box::pin(async move {
            let deadline = Instant::now() + deadline;
            loop {
                if !self.is_member() {
                    return Err(ClusterError::NotMember);
                }
                let now = Instant::now();
                if now >= deadline {
                    return Err(if self.current_leader().is_some() {
                        ClusterError::Timeout
                    } else {
                        ClusterError::NoLeader
                    });
                }
                let seen = self.current_leader();
                if let Some(index) = self.read_index_once(deadline - now).await {
                    return self.wait_applied(index, deadline).await;
                }
                self.pause_for_leader(seen, RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now()))).await;
            }
        })
    }

    fn applied_index(&self) -> u64 {
        *self.applied_rx.borrow()
    }

    fn leader(&self) -> Option<u64> {
        self.current_leader()
    }

    fn status(&self) -> crate::status::RaftStatus {
        crate::status::read_status(&self.raft)
    }

    fn counters(&self) -> crate::status::RaftCounters {
        self.counters.clone()
    }

    fn voters(&self) -> std::collections::BTreeSet<u64> {
        self.raft.metrics().borrow_watched().membership_config.membership().voter_ids().collect()
    }

    fn is_member(&self) -> bool {
        // The server metrics change with the leader, the state and the membership only,
        // not with every append and apply: a cheap read on every request.
        let m = self.raft.server_metrics();
        let m = m.borrow_watched();
        let told = *self.told_not_member.lock().unwrap_or_else(|e| e.into_inner());
        m.membership_config.membership().get_node(&self.id).is_some() && told != Some(*m.membership_config.log_id())
    }

    fn data_format(&self) -> u32 {
        *self.data_format.borrow()
    }

    fn max_data_format(&self) -> u32 {
        self.max_data_format
    }

    fn raise_data_format(&self, deadline: Duration) -> BoxFuture<'_, Result<Raise, ClusterError>> {
        Box::pin(self.raise_format(deadline))
    }

    fn format_lock(&self) -> Arc<tokio::sync::Mutex<()>> {
        self.format_lock.clone()
    }

    fn ask_data_format(&self, addr: String, deadline: Duration) -> BoxFuture<'_, Result<u32, String>> {
        Box::pin(async move { crate::format::ask(&self.channels, &addr, deadline).await })
    }

    fn ask_state_hashes(&self, rv: u64, deadline: Duration) -> BoxFuture<'_, Vec<(NodeId, HashAnswer)>> {
        Box::pin(async move {
            let others = self.other_members();
            let asks = others
                .into_iter()
                .map(|(id, addr)| async move { (id, self.ask_state_hash(&addr, rv, deadline).await) });
            futures::future::join_all(asks).await
        })
    }
}

impl<E: ObjectEngine> RaftReplicator<E> {
    /// Every other member (voters and learners) of the membership this node knows, with
    /// its peer address.
    fn other_members(&self) -> Vec<(NodeId, String)> {
        let m = self.raft.metrics();
        let m = m.borrow_watched();
        let membership = m.membership_config.membership();
        membership.nodes().filter(|(id, _)| **id != self.id).map(|(id, n)| (*id, n.addr.clone())).collect()
    }

    /// The leader's raise of the cluster's data format (see [`crate::format`]).
    async fn raise_format(&self, deadline: Duration) -> Result<Raise, ClusterError> {
        let _changing = self.format_lock.lock().await;
        let target = self.max_data_format;
        let current = *self.data_format.borrow();
        if current >= target {
            return Ok(Raise::Done(current));
        }
        if self.current_leader() != Some(self.id) {
            return Ok(Raise::NotLeader);
        }
        let others = self.other_members();
        let asks = others
            .iter()
            .map(|(id, addr)| async move { (*id, crate::format::ask(&self.channels, addr, deadline).await) });
        for (node, answer) in futures::future::join_all(asks).await {
            match answer {
                Ok(f) if f >= target => {}
                Ok(f) => return Ok(Raise::Waiting { node, why: format!("it reads data format {f}") }),
                Err(why) => return Ok(Raise::Waiting { node, why }),
            }
        }
        match self.write(Command::RaiseFormat { format: target }, deadline).await? {
            Ok(_) => Ok(Raise::Raised(target)),
            Err(e) => Err(ClusterError::Fatal(e.to_string())),
        }
    }

    /// One member's hash at `rv`; what went wrong in asking, as its failure.
    async fn ask_state_hash(&self, addr: &str, rv: u64, deadline: Duration) -> HashAnswer {
        let mut client = match self.channels.client(addr) {
            Ok(c) => c,
            Err(e) => return HashAnswer::Failed(e.to_string()),
        };
        let ask = client.state_hash(pb::RaftMessage { data: Bytes::from(encode(&rv)) });
        match tokio::time::timeout(deadline, ask).await {
            Err(_) => HashAnswer::Failed("no answer within the deadline".into()),
            Ok(Err(s)) if s.code() == tonic::Code::Unimplemented => {
                HashAnswer::Failed("the peer has no consistency check (an older version)".into())
            }
            Ok(Err(s)) => HashAnswer::Failed(s.to_string()),
            Ok(Ok(resp)) => decode(&resp.into_inner().data).unwrap_or_else(|e| HashAnswer::Failed(e.to_string())),
        }
    }
}
