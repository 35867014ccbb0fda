//! Peer RPC, client side: openraft's network over tonic, dialing through an injected
//! [`Dialer`] (TCP in production, turmoil in the simulator). One lazily connected tonic
//! channel per peer address is cached and shared by every RPC to that peer.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::Stream;
use hyper_util::rt::TokioIo;
use openraft::errors::{ErrorSource, NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{stream_append_sequential, RPCOption, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, StreamAppendResult, TransferLeaderRequest,
    TransferLeaderResponse, VoteRequest, VoteResponse,
};
use openraft::{AnyError, BasicNode, RaftNetworkV2, StorageError};
use serde::de::DeserializeOwned;
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::transport::{Channel, Endpoint};

use crate::codec::{decode, encode};
use crate::pb;
use crate::pb::peer_client::PeerClient;
use crate::snapshot::{send_chunks, SnapshotData};
use crate::state_machine::Snapshot;
use crate::types::{NodeId, TypeConfig, Vote};

/// A byte stream to a peer.
pub trait PeerIo: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> PeerIo for T {}

/// How a node opens a connection to a peer address (`host:port`).
pub trait Dialer: Send + Sync + 'static {
    fn dial(&self, addr: String) -> BoxFuture<'static, io::Result<Box<dyn PeerIo>>>;
}

/// Production dialing: plain TCP with Nagle off.
#[derive(Debug, Default, Clone, Copy)]
pub struct TcpDialer;

impl Dialer for TcpDialer {
    fn dial(&self, addr: String) -> BoxFuture<'static, io::Result<Box<dyn PeerIo>>> {
        Box::pin(async move {
            let s = tokio::net::TcpStream::connect(addr).await?;
            s.set_nodelay(true)?;
            Ok(Box::new(s) as Box<dyn PeerIo>)
        })
    }
}

/// Peer channels of one node, by address.
#[derive(Clone)]
pub struct Channels {
    dialer: Arc<dyn Dialer>,
    cache: Arc<Mutex<HashMap<String, Channel>>>,
    keepalive: Option<Duration>,
}

impl Channels {
    pub fn new(dialer: Arc<dyn Dialer>, keepalive: Option<Duration>) -> Self {
        Self { dialer, keepalive, cache: Arc::default() }
    }

    /// The client for `addr`, connecting lazily on first use and reconnecting after a
    /// failure (tonic does both).
    pub fn client(&self, addr: &str) -> Result<PeerClient<Channel>, io::Error> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ch) = cache.get(addr) {
            return Ok(PeerClient::new(ch.clone()).max_decoding_message_size(usize::MAX));
        }
        let mut endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?
            .connect_timeout(Duration::from_secs(2))
            .tcp_nodelay(true);
        if let Some(every) = self.keepalive {
            // A peer that lost power leaves a connection that is open on our side but
            // dead: HTTP/2 pings find it, the channel drops it and dials again.
            endpoint =
                endpoint.http2_keep_alive_interval(every).keep_alive_timeout(every * 2).keep_alive_while_idle(true);
        }
        let dialer = self.dialer.clone();
        let target = addr.to_string();
        let channel = endpoint.connect_with_connector_lazy(tower::service_fn(move |_uri: http::Uri| {
            let fut = dialer.dial(target.clone());
            async move { fut.await.map(TokioIo::new) }
        }));
        cache.insert(addr.to_string(), channel.clone());
        Ok(PeerClient::new(channel).max_decoding_message_size(usize::MAX))
    }
}

/// openraft's network factory.
#[derive(Clone)]
pub struct PeerNetwork {
    channels: Channels,
}

impl PeerNetwork {
    pub fn new(channels: Channels) -> Self {
        Self { channels }
    }
}

impl RaftNetworkFactory<TypeConfig> for PeerNetwork {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Self::Network {
        PeerConnection { target, addr: node.addr.clone(), channels: self.channels.clone(), append_unary: false }
    }
}

/// The connection openraft uses to replicate to one peer.
pub struct PeerConnection {
    target: NodeId,
    addr: String,
    channels: Channels,
    /// The peer answered that it has no `AppendStream`: replicate by unary AppendEntries.
    append_unary: bool,
}

pub(crate) fn net_err(e: impl std::fmt::Display) -> RPCError<TypeConfig> {
    RPCError::Network(NetworkError::new(&AnyError::error(e.to_string())))
}

fn unreachable(e: impl std::fmt::Display) -> RPCError<TypeConfig> {
    RPCError::Unreachable(Unreachable::new(&AnyError::error(e.to_string())))
}

pub(crate) fn status_err(s: tonic::Status) -> RPCError<TypeConfig> {
    match s.code() {
        tonic::Code::Unavailable => unreachable(s.message()),
        _ => net_err(s),
    }
}

/// Runs one unary call with the RPC's hard deadline and decodes `Result<T, String>`.
async fn unary<T, F>(ttl: Duration, call: F) -> Result<T, RPCError<TypeConfig>>
where
    T: DeserializeOwned,
    F: Future<Output = Result<tonic::Response<pb::RaftMessage>, tonic::Status>>,
{
    let resp = tokio::time::timeout(ttl, call).await.map_err(|_| net_err("peer RPC timed out"))?.map_err(status_err)?;
    let decoded: Result<T, String> = decode(&resp.into_inner().data).map_err(net_err)?;
    decoded.map_err(net_err)
}

fn msg<T: serde::Serialize>(v: &T) -> pb::RaftMessage {
    pb::RaftMessage { data: Bytes::from(encode(v)) }
}

impl RaftNetworkV2<TypeConfig> for PeerConnection {
    type SnapshotData = SnapshotData;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        let mut client = self.channels.client(&self.addr).map_err(unreachable)?;
        unary(option.hard_ttl(), client.append_entries(msg(&rpc))).await
    }

    /// Replication sessions and heartbeats: pipelined on one stream ([`crate::append_stream`]).
    fn stream_append<'s, S>(
        &'s mut self,
        input: S,
        option: RPCOption,
    ) -> BoxFuture<
        's,
        Result<BoxStream<'s, Result<StreamAppendResult<TypeConfig>, RPCError<TypeConfig>>>, RPCError<TypeConfig>>,
    >
    where
        S: Stream<Item = AppendEntriesRequest<TypeConfig>> + Send + Unpin + 'static,
    {
        if self.append_unary {
            return stream_append_sequential(self, input, option);
        }
        Box::pin(async move {
            let client = self.channels.client(&self.addr).map_err(unreachable)?;
            match crate::append_stream::send(client, input, option.hard_ttl()).await {
                Ok(responses) => Ok(responses),
                Err(s) if s.code() == tonic::Code::Unimplemented => {
                    tracing::info!(target = self.target, "the peer has no AppendStream: replicating by unary RPCs");
                    self.append_unary = true;
                    Err(net_err(s))
                }
                Err(s) => Err(status_err(s)),
            }
        })
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        let mut client = self.channels.client(&self.addr).map_err(unreachable)?;
        unary(option.hard_ttl(), client.vote(msg(&rpc))).await
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        let mut client = self.channels.client(&self.addr).map_err(unreachable)?;
        unary(option.hard_ttl(), client.pre_vote(msg(&rpc))).await
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<TypeConfig>, RPCError<TypeConfig>> {
        let mut client = self.channels.client(&self.addr).map_err(unreachable)?;
        unary(option.hard_ttl(), client.transfer_leader(msg(&req))).await
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        let mut client = self
            .channels
            .client(&self.addr)
            .map_err(|e| StreamingError::Unreachable(Unreachable::new(&AnyError::error(e.to_string()))))?;
        let target = self.target;
        // Read part by part from the frozen state while the stream goes out.
        let (chunks, reading) = send_chunks(&vote, &snapshot.meta, &snapshot.snapshot);
        let send = client.install_snapshot(chunks);
        let resp = tokio::select! {
            r = send => r,
            closed = cancel => return Err(StreamingError::Closed(closed)),
        };
        // The stream is over: a read that failed is why it ended early. The reader ends
        // once its stream is dropped; the bound is for safety, not expected to bite.
        if let Ok(Ok(Err(e))) = tokio::time::timeout(Duration::from_secs(5), reading).await {
            tracing::warn!(target, "reading the snapshot failed: {e}");
            let e = io::Error::from(e);
            return Err(StreamingError::StorageError(StorageError::read_snapshot(
                Some(snapshot.meta.signature()),
                ErrorSource::from_error(&e),
            )));
        }
        let resp = resp.map_err(|s| {
            tracing::warn!(target, "snapshot stream failed: {s}");
            StreamingError::Network(NetworkError::new(&AnyError::error(s.to_string())))
        })?;
        let decoded: Result<SnapshotResponse<TypeConfig>, String> = decode(&resp.into_inner().data)
            .map_err(|e| StreamingError::Network(NetworkError::new(&AnyError::error(e.to_string()))))?;
        decoded.map_err(|e| StreamingError::Network(NetworkError::new(&AnyError::error(e))))
    }
}
