//! A minimal Kubernetes REST client: one HTTP/1.1 request per connection, JSON in and
//! out, and a line reader for watch streams. Enough for the simulator's clients and
//! oracles. How it reaches a node is a [`Dial`]: turmoil's TCP in the simulator
//! ([`TurmoilDial`]), real TCP for the chaos test on network namespaces. turmoil's TCP
//! never retransmits, so a request that meets a partition may hang forever: callers put
//! a deadline on everything.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use crate::cluster::{host_name, REST_PORT};

pub type ClientError = Box<dyn std::error::Error + Send + Sync>;

/// A connection to a node's REST port.
pub trait ClientIo: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> ClientIo for T {}

/// How a client connects to node `id`'s REST port.
pub trait Dial: Send + Sync + 'static {
    fn dial(&self, node: u64) -> BoxFuture<'static, std::io::Result<Box<dyn ClientIo>>>;
}

/// The simulator's network: node `id` is turmoil host `node{id}`.
pub struct TurmoilDial;

impl Dial for TurmoilDial {
    fn dial(&self, node: u64) -> BoxFuture<'static, std::io::Result<Box<dyn ClientIo>>> {
        Box::pin(async move {
            let s = turmoil::net::TcpStream::connect((host_name(node), REST_PORT)).await?;
            Ok(Box::new(s) as Box<dyn ClientIo>)
        })
    }
}

/// One response: status code and parsed JSON body (Null if the body was not JSON).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: serde_json::Value,
}

async fn send(
    dial: &dyn Dial,
    node: u64,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<hyper::Response<Incoming>, ClientError> {
    let io = dial.dial(node).await?;
    send_on(io, &host_name(node), method, path, body).await
}

async fn send_on(
    io: Box<dyn ClientIo>,
    host: &str,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<hyper::Response<Incoming>, ClientError> {
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let bytes = match body {
        Some(b) => Bytes::from(serde_json::to_vec(b)?),
        None => Bytes::new(),
    };
    let mut req = hyper::Request::builder().method(method).uri(path).header("host", host);
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    Ok(sender.send_request(req.body(Full::new(bytes))?).await?)
}

async fn reply(resp: hyper::Response<Incoming>) -> Result<Reply, ClientError> {
    let status = resp.status().as_u16();
    let data = resp.into_body().collect().await?.to_bytes();
    let body = serde_json::from_slice(&data).unwrap_or(serde_json::Value::Null);
    Ok(Reply { status, body })
}

/// Sends `method path` with an optional JSON body to turmoil host `host:port`.
pub async fn request(
    host: &str,
    port: u16,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<Reply, ClientError> {
    let io: Box<dyn ClientIo> = Box::new(turmoil::net::TcpStream::connect((host, port)).await?);
    reply(send_on(io, host, method, path, body).await?).await
}

/// Sends `method path` with an optional JSON body to node `node`.
pub async fn request_to(
    dial: &dyn Dial,
    node: u64,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<Reply, ClientError> {
    reply(send(dial, node, method, path, body).await?).await
}

/// [`request_to`] with a deadline; `None` when it passed or the connection failed (the
/// outcome of a write is then unknown).
pub async fn request_within(
    deadline: Duration,
    dial: &dyn Dial,
    node: u64,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Option<Reply> {
    tokio::time::timeout(deadline, request_to(dial, node, method, path, body)).await.ok()?.ok()
}

/// An open watch response: its status, then one line at a time.
pub struct WatchLines {
    pub status: u16,
    body: Incoming,
    buf: BytesMut,
}

impl WatchLines {
    /// Opens `GET path` (a `watch=true` URL).
    pub async fn open(dial: &dyn Dial, node: u64, path: &str) -> Result<WatchLines, ClientError> {
        let resp = send(dial, node, "GET", path, None).await?;
        Ok(WatchLines { status: resp.status().as_u16(), body: resp.into_body(), buf: BytesMut::new() })
    }

    /// The next line (without its newline); `Ok(None)` when the server ended the stream.
    pub async fn next_line(&mut self) -> Result<Option<Bytes>, ClientError> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line = self.buf.split_to(i + 1).freeze();
                return Ok(Some(line.slice(..i)));
            }
            match self.body.frame().await {
                None => return Ok(None),
                Some(frame) => {
                    if let Ok(data) = frame?.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}
