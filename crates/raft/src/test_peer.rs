//! A peer as seen on the wire, for the RPC clients' tests: each test gives the handlers
//! of the RPCs it exercises; every other RPC answers "unimplemented", as a binary
//! without it would.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status, Streaming};

use crate::pb;
use crate::pb::peer_server::{Peer, PeerServer};
use crate::reply::ReplyStream;

pub(crate) type Unary =
    Arc<dyn Fn(pb::RaftMessage) -> BoxFuture<'static, Result<pb::RaftMessage, Status>> + Send + Sync>;
pub(crate) type Streamed =
    Arc<dyn Fn(Streaming<pb::RaftMessage>) -> BoxFuture<'static, Result<ReplyStream, Status>> + Send + Sync>;

#[derive(Clone, Default)]
pub(crate) struct TestPeer {
    pub append_entries: Option<Unary>,
    pub append_stream: Option<Streamed>,
    pub forward: Option<Unary>,
    pub forward_stream: Option<Streamed>,
}

impl TestPeer {
    /// Serves this peer on a loopback port; answers its address.
    pub(crate) async fn start(self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(PeerServer::new(self))
                .serve_with_incoming(TcpListenerStream::new(listener)),
        );
        addr
    }
}

async fn unary(handler: &Option<Unary>, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
    match handler {
        Some(h) => h(req.into_inner()).await.map(Response::new),
        None => Err(Status::unimplemented("not in this test")),
    }
}

async fn streamed(
    handler: &Option<Streamed>,
    req: Request<Streaming<pb::RaftMessage>>,
) -> Result<Response<ReplyStream>, Status> {
    match handler {
        Some(h) => h(req.into_inner()).await.map(Response::new),
        None => Err(Status::unimplemented("not in this test")),
    }
}

#[tonic::async_trait]
impl Peer for TestPeer {
    async fn append_entries(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        unary(&self.append_entries, req).await
    }
    type AppendStreamStream = ReplyStream;
    async fn append_stream(&self, req: Request<Streaming<pb::RaftMessage>>) -> Result<Response<ReplyStream>, Status> {
        streamed(&self.append_stream, req).await
    }
    async fn vote(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        unary(&None, req).await
    }
    async fn pre_vote(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        unary(&None, req).await
    }
    async fn install_snapshot(
        &self,
        _: Request<Streaming<pb::SnapshotChunk>>,
    ) -> Result<Response<pb::RaftMessage>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
    async fn forward(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        unary(&self.forward, req).await
    }
    type ForwardStreamStream = ReplyStream;
    async fn forward_stream(&self, req: Request<Streaming<pb::RaftMessage>>) -> Result<Response<ReplyStream>, Status> {
        streamed(&self.forward_stream, req).await
    }
    async fn read_index(&self, _: Request<pb::ReadIndexRequest>) -> Result<Response<pb::RaftMessage>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
    async fn transfer_leader(&self, req: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        unary(&None, req).await
    }
    async fn state_hash(&self, _: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
    async fn data_format(&self, _: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
    async fn member_started(&self, _: Request<pb::RaftMessage>) -> Result<Response<pb::RaftMessage>, Status> {
        Err(Status::unimplemented("not in this test"))
    }
}
