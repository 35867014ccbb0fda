//! Owns the kube-rs [`kube::Client`]s a simulated host uses to reach the cluster: plain
//! HTTP/1.1 over turmoil's TCP, pooled by hyper, either to one chosen node or to the
//! whole cluster through a simulated load balancer (each new connection goes to the
//! next node, as a Kubernetes Service in front of the API servers would do).
//!
//! turmoil's TCP does not retransmit: a request or a watch caught by a partition would
//! wait forever. Real clients have timeouts for that, and so do these: the response
//! headers must come within [`RESPONSE_TIMEOUT`], and a response body (a watch stream
//! included) that yields nothing for [`IDLE_TIMEOUT`] fails, so kube-runtime's watcher
//! backs off and reconnects as it would after a dead TCP connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Uri};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kuorum_sim::cluster::{host_name, REST_PORT};

/// How long a request may wait for its response headers.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a response body (a watch included) may stay silent. The simulated nodes
/// send a watch bookmark every second, so only a dead connection is this quiet.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(20);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Which nodes a client's connections go to.
#[derive(Clone)]
struct Connector {
    nodes: Arc<Vec<u64>>,
    /// The next connection's node, round robin (shared by the client's clones).
    next: Arc<AtomicUsize>,
}

/// A turmoil TCP connection as hyper wants it.
struct SimConnection(TokioIo<turmoil::net::TcpStream>);

impl Connection for SimConnection {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for SimConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for SimConnection {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl tower::Service<Uri> for Connector {
    type Response = SimConnection;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<SimConnection>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        let node = self.nodes[self.next.fetch_add(1, Ordering::Relaxed) % self.nodes.len()];
        Box::pin(async move {
            let connect = turmoil::net::TcpStream::connect((host_name(node), REST_PORT));
            let stream = tokio::time::timeout(RESPONSE_TIMEOUT, connect).await.map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::TimedOut, format!("connecting to node{node}"))
            })??;
            Ok(SimConnection(TokioIo::new(stream)))
        })
    }
}

/// A response body that fails after [`IDLE_TIMEOUT`] without a frame.
struct IdleTimeout<B> {
    inner: B,
    idle: Pin<Box<tokio::time::Sleep>>,
}

impl<B> http_body::Body for IdleTimeout<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, BoxError>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                let deadline = tokio::time::Instant::now() + IDLE_TIMEOUT;
                self.idle.as_mut().reset(deadline);
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => match self.idle.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err("no data from the server for too long".into()))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

/// A kube-rs client whose connections go to `nodes` in turn (one node: always that one).
/// Must be called on a simulated host.
pub(crate) fn kube_client(nodes: Vec<u64>, first: usize) -> kube::Client {
    assert!(!nodes.is_empty(), "a client needs a node to reach");
    let connector = Connector { nodes: Arc::new(nodes), next: Arc::new(AtomicUsize::new(first)) };
    let http: hyper_util::client::legacy::Client<Connector, kube::client::Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector);
    let service = tower::service_fn(move |req: Request<kube::client::Body>| {
        let http = http.clone();
        async move {
            // kube-rs sends path-only URIs; the pool wants an authority (the connector
            // decides which node it really is).
            let (mut parts, body) = req.into_parts();
            let path = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
            parts.uri = format!("http://kuorum:{REST_PORT}{path}").parse()?;
            let resp = tokio::time::timeout(RESPONSE_TIMEOUT, http.request(Request::from_parts(parts, body)))
                .await
                .map_err(|_| -> BoxError { "no response within the timeout".into() })??;
            let (parts, body) = resp.into_parts();
            let idle = Box::pin(tokio::time::sleep(IDLE_TIMEOUT));
            Ok::<_, BoxError>(Response::from_parts(parts, IdleTimeout { inner: body, idle }))
        }
    });
    kube::Client::new(service, "default")
}
