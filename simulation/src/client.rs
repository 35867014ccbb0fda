//! A minimal Kubernetes REST client over turmoil TCP: one HTTP/1.1 request per
//! connection, JSON in and out, and a line reader for watch streams. Enough for the
//! simulator's clients and oracles. turmoil's TCP never retransmits, so a request that
//! meets a partition may hang forever: callers put a deadline on everything.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

pub type ClientError = Box<dyn std::error::Error + Send + Sync>;

/// One response: status code and parsed JSON body (Null if the body was not JSON).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: serde_json::Value,
}

async fn send(
    host: &str,
    port: u16,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<hyper::Response<Incoming>, ClientError> {
    let stream = turmoil::net::TcpStream::connect((host, port)).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
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

/// Sends `method path` with an optional JSON body to `host:port`.
pub async fn request(
    host: &str,
    port: u16,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<Reply, ClientError> {
    let resp = send(host, port, method, path, body).await?;
    let status = resp.status().as_u16();
    let data = resp.into_body().collect().await?.to_bytes();
    let body = serde_json::from_slice(&data).unwrap_or(serde_json::Value::Null);
    Ok(Reply { status, body })
}

/// [`request`] with a deadline; `None` when it passed or the connection failed (the
/// outcome of a write is then unknown).
pub async fn request_within(
    deadline: Duration,
    host: &str,
    port: u16,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Option<Reply> {
    tokio::time::timeout(deadline, request(host, port, method, path, body)).await.ok()?.ok()
}

/// An open watch response: its status, then one line at a time.
pub struct WatchLines {
    pub status: u16,
    body: Incoming,
    buf: BytesMut,
}

impl WatchLines {
    /// Opens `GET path` (a `watch=true` URL).
    pub async fn open(host: &str, port: u16, path: &str) -> Result<WatchLines, ClientError> {
        let resp = send(host, port, "GET", path, None).await?;
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
