//! Owns what a leader answers about a write or a read index, wherever the question came
//! from: this node's own proposals, the unary `Forward`/`ReadIndex` RPCs
//! ([`crate::service`]) and the forwarding streams ([`crate::forward`]). Both of those
//! read it; it reads neither.

use std::pin::Pin;

use futures::Stream;
use openraft::errors::ClientWriteError;
use openraft::storage::RaftStateMachine;
use openraft::ReadPolicy;
use serde::{Deserialize, Serialize};
use tonic::Status;

use crate::pb;
use crate::proposed::ProposedIds;
use crate::types::{NodeId, Raft, TypeConfig};
use kuorum_store::{Command, WriteResult};

/// The leader's answer to a forwarded write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ForwardReply {
    /// Committed and applied: what apply decided.
    Applied(WriteResult),
    /// Not appended here; try the leader this node knows of.
    NotLeader {
        leader: Option<NodeId>,
    },
    /// Appended here but discarded by a leader change: it may or may not commit.
    Unknown(String),
    Failed(String),
}

/// The leader's answer to a read-index request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ReadIndexReply {
    /// Reads that wait until this index is applied are linearizable.
    Index(u64),
    NotLeader {
        leader: Option<NodeId>,
    },
    Failed(String),
    /// The asking node is not in the leader's membership: it was removed (and may not
    /// have applied its removal), so it must serve nothing.
    NotMember,
}

/// The leader's side of a stream: its replies.
pub type ReplyStream = Pin<Box<dyn Stream<Item = Result<pb::RaftMessage, Status>> + Send>>;

/// Answers the leader's write for a command proposed on this node; "unknown" for a
/// second attempt of a write this leader proposed already in its term ([`ProposedIds`]).
pub(crate) async fn propose_local<SM: RaftStateMachine<TypeConfig>>(
    raft: &Raft<SM>,
    proposed: &ProposedIds,
    cmd: Command,
) -> ForwardReply {
    if !proposed.first_in_term(current_term(raft), &cmd) {
        return ForwardReply::Unknown(ATTEMPT_IN_FLIGHT.into());
    }
    match raft.client_write(cmd).await {
        Ok(resp) => ForwardReply::Applied(resp.data),
        Err(e) => match e.api_error() {
            Some(refused) => refused_reply(refused),
            None => ForwardReply::Failed(e.to_string()),
        },
    }
}

/// Why a leader answers "unknown" to a write's second attempt.
pub(crate) const ATTEMPT_IN_FLIGHT: &str = "an earlier attempt of this write is in flight on the leader";

/// The term this node is in now (the one its proposals are appended in while it leads).
pub(crate) fn current_term<SM: RaftStateMachine<TypeConfig>>(raft: &Raft<SM>) -> u64 {
    use openraft::async_runtime::WatchReceiver;
    raft.metrics().borrow_watched().current_term
}

/// The reply for a write the leader refused or lost.
pub(crate) fn refused_reply(e: &ClientWriteError<TypeConfig>) -> ForwardReply {
    match e {
        ClientWriteError::ForwardToLeader(f) => ForwardReply::NotLeader { leader: f.leader_id },
        ClientWriteError::LogEntryDiscarded(f) => ForwardReply::Unknown(f.to_string()),
        other => ForwardReply::Failed(other.to_string()),
    }
}

/// The leader's read index for a linearizable read, asked by node `requester` (0: not told).
pub(crate) async fn read_index_local<SM: RaftStateMachine<TypeConfig>>(
    raft: &Raft<SM>,
    requester: NodeId,
) -> ReadIndexReply {
    match raft.get_read_linearizer(ReadPolicy::ReadIndex).await {
        // Asked after leadership is confirmed: the leader's membership then holds every
        // committed change, so a node it does not list has been removed (or was never
        // added). It may also hold the asker's removal before that commits; if this
        // leader is then deposed and the removal lost, the asker refuses to serve until
        // the next membership change (the operator finishing the removal).
        Ok(_) if requester != 0 && !is_member_of(raft, requester) => ReadIndexReply::NotMember,
        Ok(lin) => ReadIndexReply::Index(lin.read_log_id().index()),
        Err(e) => match e.api_error() {
            Some(openraft::errors::LinearizableReadError::ForwardToLeader(f)) => {
                ReadIndexReply::NotLeader { leader: f.leader_id }
            }
            _ => ReadIndexReply::Failed(e.to_string()),
        },
    }
}

/// Whether `id` is a voter or learner of the latest membership `raft` knows.
fn is_member_of<SM: RaftStateMachine<TypeConfig>>(raft: &Raft<SM>, id: NodeId) -> bool {
    use openraft::async_runtime::WatchReceiver;
    raft.server_metrics().borrow_watched().membership_config.membership().get_node(&id).is_some()
}
