//! Owns the cluster's data format: which format each member reads, and the leader's
//! raise of the cluster to a newer one once every member reads it.
//!
//! What a node writes into the log must be readable by every member, so a node upgraded
//! to a release that reads a newer format keeps writing the older one (every entry of
//! format 1 is byte for byte what the release before formats were numbered wrote; the
//! fixtures in `tests/fixtures/format1` hold it to that). The cluster's format is part
//! of the replicated state ([`crate::state_machine::META_DATA_FORMAT`], 1 if absent):
//! the leader raises it with a `RaiseFormat` entry once every member, learners
//! included, answers the `DataFormat` peer RPC with the newer format. A member of a
//! release before formats were numbered has no such RPC and reads format 1. From the
//! raise on, proposers may write entries of the new format; it never goes back down.
//!
//! A node that reads an older format than the cluster's cannot be added
//! (`kuorum member add` asks it first), and a data directory once opened by a release
//! that reads a newer format is refused by an older one before it touches anything
//! (the `FORMAT` file, `kuorum serve`).

use std::time::Duration;

use bytes::Bytes;

use crate::codec::decode;
use crate::network::Channels;
use crate::pb;

pub use kuorum_store::DATA_FORMAT;

/// What a leader's attempt to raise the cluster's data format found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Raise {
    /// Only the leader raises.
    NotLeader,
    /// The cluster is at the newest format this node reads.
    Done(u32),
    /// A member reads an older format, or did not answer.
    Waiting { node: u64, why: String },
    /// The raise was proposed and applied.
    Raised(u32),
}

/// The newest data format the member at `addr` reads.
pub(crate) async fn ask(channels: &Channels, addr: &str, deadline: Duration) -> Result<u32, String> {
    let mut client = channels.client(addr).map_err(|e| e.to_string())?;
    let asked = client.data_format(pb::RaftMessage { data: Bytes::new() });
    match tokio::time::timeout(deadline, asked).await {
        Err(_) => Err("no answer within the deadline".into()),
        // A release before formats were numbered.
        Ok(Err(s)) if s.code() == tonic::Code::Unimplemented => Ok(1),
        Ok(Err(s)) => Err(s.to_string()),
        Ok(Ok(resp)) => decode(&resp.into_inner().data).map_err(|e| e.to_string()),
    }
}
