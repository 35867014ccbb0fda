//! A minimal Kubernetes REST client over turmoil TCP: one HTTP/1.1 request per
//! connection, JSON in and out. Enough for the simulator's clients and oracles.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

/// One response: status code and parsed JSON body (Null if the body was not JSON).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: serde_json::Value,
}

/// Sends `method path` with an optional JSON body to `host:port`.
pub async fn request(
    host: &str,
    port: u16,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<Reply, Box<dyn std::error::Error>> {
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
    let resp = sender.send_request(req.body(Full::new(bytes))?).await?;
    let status = resp.status().as_u16();
    let data = resp.into_body().collect().await?.to_bytes();
    let body = serde_json::from_slice(&data).unwrap_or(serde_json::Value::Null);
    Ok(Reply { status, body })
}
