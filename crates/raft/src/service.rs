//! Peer RPC, server side: the tonic `Peer` service. Raft messages go straight to
//! openraft (`AppendStream` through [`crate::append_stream`]); `Forward`, `ForwardStream` and `ReadIndex` are what followers ask of the
//! leader; `StateHash` is what any member asks of the others ([`crate::consistency`]).

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use openraft::storage::RaftStateMachine;
use serde::Serialize;
use tonic::{Request, Response, Status, Streaming};

use crate::codec::{decode, encode};
use crate::pb;
use crate::proposed::ProposedIds;
use crate::reply::{propose_local, read_index_local};
use crate::snapshot::SnapshotData;
use crate::state_machine::Snapshot;
use crate::types::{Raft, TypeConfig};
use kuorum_store::Command;

/// The `Peer` service of one node.
pub struct PeerService<SM: RaftStateMachine<TypeConfig, SnapshotData = SnapshotData>> {
    raft: Raft<SM>,
    /// Where snapshots from the leader are kept until installed (in memory if none).
    spool_dir: Option<PathBuf>,
    /// This node's state, for the hashes peers ask for.
    cluster: crate::Cluster,
    /// The newest data format this node reads; 1 answers as a release before formats
    /// were numbered did (upgrade tests run such nodes).
    max_data_format: u32,
    /// The request ids this node proposed in its term as leader (shared with its own
    /// writes).
    proposed: Arc<ProposedIds>,
}

impl<SM: RaftStateMachine<TypeConfig, SnapshotData = SnapshotData>> PeerService<SM> {
    pub(crate) fn new(
        raft: Raft<SM>,
        spool_dir: Option<PathBuf>,
        cluster: crate::Cluster,
        max_data_format: u32,
        proposed: Arc<ProposedIds>,
    ) -> Self {
        Self { raft, spool_dir, cluster, max_data_format, proposed }
    }

    pub fn into_server(self) -> pb::peer_server::PeerServer<Self> {
        pb::peer_server::PeerServer::new(self).max_decoding_message_size(usize::MAX)
    }
}

fn reply<T: Serialize>(v: &T) -> Result<Response<pb::RaftMessage>, Status> {
    Ok(Response::new(pb::RaftMessage { data: Bytes::from(encode(v)) }))
}

fn bad(e: impl std::fmt::Display) -> Status {
    Status::invalid_argument(e.to_string())
}

#[tonic::async_trait]
impl<SM: RaftStateMachine<TypeConfig, SnapshotData = SnapshotData>> pb::peer_server::Peer for PeerService<SM> {
    async fn append_entries(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        let rpc = decode(&req.into_inner().data).map_err(bad)?;
        reply(&self.raft.append_entries(rpc).await.map_err(|e| e.to_string()))
    }

    type AppendStreamStream = crate::reply::ReplyStream;

    async fn append_stream(
        &self,
        req: Request<Streaming<pb::RaftMessage>>,
    ) -> Result<Response<Self::AppendStreamStream>, Status> {
        Ok(Response::new(crate::append_stream::serve(self.raft.clone(), req.into_inner())))
    }

    async fn vote(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        let rpc = decode(&req.into_inner().data).map_err(bad)?;
        reply(&self.raft.vote(rpc).await.map_err(|e| e.to_string()))
    }

    async fn pre_vote(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        let rpc = decode(&req.into_inner().data).map_err(bad)?;
        reply(&self.raft.pre_vote(rpc).await.map_err(|e| e.to_string()))
    }

    async fn install_snapshot(
        &self,
        req: Request<Streaming<pb::SnapshotChunk>>,
    ) -> Result<Response<pb::RaftMessage>, Status> {
        let received = crate::snapshot::receive(req.into_inner(), self.spool_dir.as_deref()).await.map_err(bad)?;
        let snapshot = Snapshot { meta: received.meta, snapshot: received.data };
        reply(&self.raft.install_full_snapshot(received.vote, snapshot).await.map_err(|e| e.to_string()))
    }

    async fn forward(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        let cmd: Command = decode(&req.into_inner().data).map_err(bad)?;
        reply(&propose_local(&self.raft, &self.proposed, cmd).await)
    }

    type ForwardStreamStream = crate::reply::ReplyStream;

    async fn forward_stream(
        &self,
        req: Request<Streaming<pb::RaftMessage>>,
    ) -> Result<Response<Self::ForwardStreamStream>, Status> {
        Ok(Response::new(crate::forward::serve_stream(self.raft.clone(), self.proposed.clone(), req.into_inner())))
    }

    async fn transfer_leader(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        let rpc = decode(&req.into_inner().data).map_err(bad)?;
        reply(&self.raft.handle_transfer_leader(rpc).await.map_err(|e| e.to_string()))
    }

    async fn read_index(&self, req: Request<pb::ReadIndexRequest>) -> Result<Response<pb::RaftMessage>, Status> {
        reply(&read_index_local(&self.raft, req.into_inner().requester).await)
    }

    async fn state_hash(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        let rv: u64 = decode(&req.into_inner().data).map_err(bad)?;
        reply(&crate::consistency::answer(&self.cluster, rv).await)
    }

    async fn member_started(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        if self.max_data_format < 2 {
            return Err(Status::unimplemented("MemberStarted"));
        }
        let id: u64 = decode(&req.into_inner().data).map_err(bad)?;
        let key = kuorum_store::keys::member_started_key(id);
        let started = self.cluster.get(&key).map_err(|e| Status::unavailable(e.to_string()))?.is_some();
        let member = {
            use openraft::async_runtime::WatchReceiver;
            self.raft.metrics().borrow_watched().membership_config.membership().get_node(&id).is_some()
        };
        reply(&crate::lost_data::Served { started, member })
    }

    async fn data_format(&self, _: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        if self.max_data_format < 2 {
            return Err(Status::unimplemented("DataFormat"));
        }
        reply(&self.max_data_format)
    }
}
