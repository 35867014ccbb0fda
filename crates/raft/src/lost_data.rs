//! Owns the refusal of a voter that lost its data. A node that starts with an empty data
//! directory bootstraps from `--peers` (or, with `--join`, waits to be added); if it is
//! a member that served before, it has forgotten its vote and the entries it
//! acknowledged, and voting now could elect a second leader in a term or lose committed
//! writes. So before it starts Raft, it asks the `--peers` whether it ever served (each
//! node writes [`kuorum_store::keys::member_started_key`] once, like etcd's published
//! member attributes and its "member has already been bootstrapped" refusal) and whether
//! it is a member now:
//!
//! - without `--join`: refused if it served (it would bootstrap over the cluster's log);
//! - with `--join`: refused if it served and a majority of the peers still count it a
//!   member (it must be removed and added again: the replacement `docs/operations.md`
//!   describes).
//!
//! A peer of a release without the question, or one that does not answer, cannot tell;
//! the node then starts as before (a new cluster's nodes start before any of them has
//! written the key). So does a node whose `--peers` no longer names any member.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::codec::{decode, encode};
use crate::network::Channels;
use crate::pb;
use crate::types::NodeId;

/// How long a starting node waits for each peer's answer.
const ASK_WAIT: Duration = Duration::from_secs(2);

/// What a peer knows of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Served {
    /// It wrote its started key: it served as a member.
    pub started: bool,
    /// It is a voter or a learner of the peer's membership.
    pub member: bool,
}

/// A peer that says node `id`, starting empty (`joining` or not), lost its data. Without
/// `--join`, one peer saying it served is enough (the key is never deleted). With it, a
/// majority of the peers asked must say it is still a member: one that has not applied
/// the node's removal yet still counts it.
pub(crate) async fn lost_by(
    channels: &Channels,
    id: NodeId,
    joining: bool,
    members: &BTreeMap<NodeId, String>,
) -> Option<NodeId> {
    let peers: Vec<(&NodeId, &String)> = members.iter().filter(|(peer, _)| **peer != id).collect();
    let asks = peers.iter().map(|(peer, addr)| async move {
        let mut client = channels.client(addr).ok()?;
        let asked = client.member_started(pb::RaftMessage { data: Bytes::from(encode(&id)) });
        let resp = tokio::time::timeout(ASK_WAIT, asked).await.ok()?.ok()?;
        let served: Served = decode(&resp.into_inner().data).ok()?;
        Some((**peer, served))
    });
    let answers: Vec<(NodeId, Served)> = futures::future::join_all(asks).await.into_iter().flatten().collect();
    if !joining {
        return answers.iter().find(|(_, s)| s.started).map(|(p, _)| *p);
    }
    let still: Vec<NodeId> = answers.iter().filter(|(_, s)| s.started && s.member).map(|(p, _)| *p).collect();
    (still.len() * 2 > peers.len()).then(|| still[0])
}
