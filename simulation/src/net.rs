//! The network seams over turmoil: a REST listener axum can serve, a stream of incoming
//! peer connections for tonic, and a peer dialer.

use std::io;
use std::net::SocketAddr;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::StreamExt;
use kuorum_raft::{Dialer, PeerIo};

/// A turmoil TCP listener as axum's `Listener`.
pub struct SimListener(pub turmoil::net::TcpListener);

/// A REST connection in the simulation: plain TCP, never a client certificate.
pub struct SimStream(turmoil::net::TcpStream);

impl kuorum_rest::auth::ClientIdentity for SimStream {
    fn client_user(&self) -> Option<kuorum_rest::auth::UserInfo> {
        None
    }
}

impl tokio::io::AsyncRead for SimStream {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for SimStream {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl axum::serve::Listener for SimListener {
    type Io = SimStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((s, a)) => return (SimStream(s), a),
                // A failed accept is transient in turmoil (e.g. a host being torn down).
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(1)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// Incoming peer connections on a turmoil listener.
pub fn peer_incoming(listener: turmoil::net::TcpListener) -> BoxStream<'static, io::Result<Box<dyn PeerIo>>> {
    futures::stream::unfold(listener, |l| async move {
        let r = l.accept().await.map(|(s, _)| Box::new(s) as Box<dyn PeerIo>);
        Some((r, l))
    })
    .boxed()
}

/// Dials peers by `host:port` through turmoil's DNS.
#[derive(Debug, Default, Clone, Copy)]
pub struct SimDialer;

impl Dialer for SimDialer {
    fn dial(&self, addr: String) -> BoxFuture<'static, io::Result<Box<dyn PeerIo>>> {
        Box::pin(async move {
            let s = turmoil::net::TcpStream::connect(addr.as_str()).await?;
            Ok(Box::new(s) as Box<dyn PeerIo>)
        })
    }
}
