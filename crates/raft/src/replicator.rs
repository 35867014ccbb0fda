//! Writes and read barriers from any node: the leader proposes locally, a follower asks
//! the leader over the peer RPC. Both retry across leader changes until the deadline.
//!
//! A retry after an attempt whose outcome is unknown (the leader's entry was discarded,
//! or the RPC to the leader broke after it was sent) can meet its own earlier success. A
//! create settles this by the uid the proposer chose: "already exists" with our uid is our
//! own write, answered as a success; an update's conflict on an object that holds exactly
//! the content it proposed is its own write too. (Updates without a precondition are
//! idempotent at apply: re-applying identical content changes nothing.) Any other
//! refusal after an unknown outcome is answered as unknown (a timeout, 504, as
//! kube-apiserver answers when etcd's outcome is unknown): a delete that meets "not
//! found" may have been the one that deleted, and answering 404 would deny a change it
//! made. The simulator caught that answer breaking linearizability (K2, seed 1532).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use kuorum_store::{Command, ObjectEngine, WriteError, WriteResult};
use openraft::async_runtime::WatchReceiver;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::cluster::{ClusterError, Replicator};
use crate::codec::{decode, encode};
use crate::forward::{ForwardPipes, NoReply};
use crate::network::Channels;
use crate::pb;
use crate::read_rounds::ReadRounds;
use crate::reply::{propose_local, read_index_local, ForwardReply, ReadIndexReply};
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
            match tokio::time::timeout(remaining, propose_local(&self.raft, cmd.clone())).await {
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

    /// After an attempt with an unknown outcome, a retry may meet its own success:
    /// "already exists" with our uid and exactly our content is our create; a conflict on
    /// an object whose content is exactly what we wrote is our update. Any other refusal
    /// leaves the outcome unknown: in particular an object with our uid that was updated
    /// since was created by us, but at a resourceVersion we no longer see, so answering
    /// it would report our create at someone else's version (simulator seeds 1118, 1257).
    fn settle(&self, cmd: &Command, result: WriteResult, uncertain: bool) -> Result<WriteResult, ClusterError> {
        if !uncertain || result.is_ok() {
            return Ok(result);
        }
        let ours = match cmd {
            Command::Create { key, object, .. } if result == Err(WriteError::AlreadyExists) => {
                let uid = uid_of(object);
                self.engine
                    .get(key)
                    .ok()
                    .flatten()
                    .filter(|stored| uid.is_some() && uid_of(stored) == uid && same_content(stored, object))
            }
            Command::Update { key, object, .. } if result == Err(WriteError::Conflict) => {
                self.engine.get(key).ok().flatten().filter(|stored| same_content(stored, object))
            }
            _ => None,
        };
        ours.map(|stored| Ok(Ok(stored))).unwrap_or(Err(ClusterError::Timeout))
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
        if self.current_leader()? == self.id {
            return match tokio::time::timeout(remaining, read_index_local(&self.raft)).await.ok()? {
                ReadIndexReply::Index(i) => Some(i),
                ReadIndexReply::NotLeader { .. } | ReadIndexReply::Failed(_) => None,
            };
        }
        let (id, raft, channels) = (self.id, self.raft.clone(), self.channels.clone());
        self.read_rounds.read_index(remaining, move || ask_read_index(id, raft.clone(), channels.clone())).await
    }
}

/// One round: asks the leader (itself, or over the peer RPC) for a read index.
async fn ask_read_index<E: ObjectEngine>(id: NodeId, raft: Raft<StateMachine<E>>, channels: Channels) -> Option<u64> {
    let (leader, addr) = {
        let m = raft.metrics();
        let m = m.borrow_watched();
        let leader = m.current_leader?;
        (leader, m.membership_config.membership().get_node(&leader).map(|n| n.addr.clone()))
    };
    let reply = if leader == id {
        read_index_local(&raft).await
    } else {
        let mut client = channels.client(&addr?).ok()?;
        let resp = client.read_index(pb::ReadIndexRequest {}).await.ok()?;
        decode::<ReadIndexReply>(&resp.into_inner().data).ok()?
    };
    match reply {
        ReadIndexReply::Index(i) => Some(i),
        ReadIndexReply::NotLeader { .. } | ReadIndexReply::Failed(_) => None,
    }
}

/// Equal apart from the fields apply sets (resourceVersion, generation) or keeps from the
/// stored object (uid, creationTimestamp).
fn same_content(stored: &[u8], proposed: &[u8]) -> bool {
    let strip = |b: &[u8]| -> Option<serde_json::Value> {
        let mut v: serde_json::Value = serde_json::from_slice(b).ok()?;
        if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            for f in ["resourceVersion", "generation", "uid", "creationTimestamp"] {
                m.remove(f);
            }
        }
        Some(v)
    };
    matches!((strip(stored), strip(proposed)), (Some(a), Some(b)) if a == b)
}

fn uid_of(object: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(object).ok()?;
    v.get("metadata")?.get("uid")?.as_str().map(str::to_string)
}

impl<E: ObjectEngine> Replicator for RaftReplicator<E> {
    fn node_id(&self) -> u64 {
        self.id
    }

    fn write(&self, cmd: Command, deadline: Duration) -> BoxFuture<'_, Result<WriteResult, ClusterError>> {
        Box::pin(async move {
            let deadline = Instant::now() + deadline;
            let mut uncertain = false;
            loop {
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
                    Attempt::Done(r) => return r.and_then(|res| self.settle(&cmd, res, uncertain)),
                    Attempt::Retry => {}
                    Attempt::Uncertain => uncertain = true,
                }
                self.pause_for_leader(seen, RETRY_PAUSE.min(deadline.saturating_duration_since(Instant::now()))).await;
            }
        })
    }

    fn read_barrier(&self, deadline: Duration) -> BoxFuture<'_, Result<u64, ClusterError>> {
        Box::pin(async move {
            let deadline = Instant::now() + deadline;
            loop {
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
}
