//! TLS for `kuorum serve` (rustls, ring): the REST listener (server certificate, optional
//! client certificates checked against the client CA), and mutual TLS between peers (both
//! sides present a certificate signed by the peer CA, and both check the other's).

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use anyhow::{bail, Context as _};
use futures::future::BoxFuture;
use kuorum_node::http_server::{Admission, ConnectionCaps, ConnectionLimiter};
use kuorum_raft::{Dialer, PeerIo};
use kuorum_rest::auth::{ClientIdentity, FrontProxyCert, UserInfo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// A peer, or by default a REST client, that has not finished its handshake by then is
/// dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

pub fn load_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("reading certificates from {}", path.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing certificates in {}", path.display()))?;
    if certs.is_empty() {
        bail!("{} holds no certificate", path.display());
    }
    Ok(certs)
}

pub fn load_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path).with_context(|| format!("reading the private key in {}", path.display()))
}

fn roots(ca: &Path) -> anyhow::Result<Arc<RootCertStore>> {
    let mut roots = RootCertStore::empty();
    for c in load_certs(ca)? {
        roots.add(c).with_context(|| format!("adding the CA in {}", ca.display()))?;
    }
    Ok(Arc::new(roots))
}

/// The REST port's TLS: its configuration, and how a client certificate is read.
pub struct RestTls {
    pub config: Arc<ServerConfig>,
    certs: Arc<ClientCerts>,
}

/// Whom a REST client's certificate names. The handshake accepts a certificate of either
/// CA; which one signed it is told apart here.
struct ClientCerts {
    /// Checks against `--client-ca-file`, when there is also a front-proxy CA (with only
    /// the client CA, the handshake's check is this one).
    client: Option<Arc<dyn ClientCertVerifier>>,
    /// Checks against `--requestheader-client-ca-file`, and the common names allowed
    /// (`--requestheader-allowed-names`; empty: any).
    front_proxy: Option<(Arc<dyn ClientCertVerifier>, Vec<String>)>,
}

impl ClientCerts {
    /// The user a verified `chain` names as a client certificate, and whether it is an
    /// authenticating proxy's.
    fn identify(&self, chain: Option<&[CertificateDer<'static>]>) -> (Option<UserInfo>, Option<FrontProxyCert>) {
        let Some((leaf, intermediates)) = chain.and_then(|c| c.split_first()) else { return (None, None) };
        let Some((proxy_ca, allowed)) = &self.front_proxy else { return (user_of(leaf), None) };
        let signed_by =
            |v: &Arc<dyn ClientCertVerifier>| v.verify_client_cert(leaf, intermediates, UnixTime::now()).is_ok();
        let user = self.client.as_ref().filter(|v| signed_by(v)).and_then(|_| user_of(leaf));
        let proxy = signed_by(proxy_ca)
            .then(|| user_of(leaf))
            .flatten()
            .filter(|u| allowed.is_empty() || allowed.contains(&u.name))
            .map(|u| FrontProxyCert(u.name));
        (user, proxy)
    }
}

/// The REST port's configuration: this certificate; client certificates optional,
/// checked against `client_ca` (a user's) or `front_proxy_ca` (an authenticating
/// proxy's, with the common names `allowed`) when given. A request without one
/// authenticates some other way or is anonymous.
pub fn rest_server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
    front_proxy_ca: Option<(&Path, Vec<String>)>,
) -> anyhow::Result<RestTls> {
    let verifier = |roots: Arc<RootCertStore>| {
        WebPkiClientVerifier::builder_with_provider(roots, provider()).allow_unauthenticated().build()
    };
    let mut both = RootCertStore::empty();
    for ca in client_ca.into_iter().chain(front_proxy_ca.as_ref().map(|(ca, _)| *ca)) {
        both.roots.extend(roots(ca)?.roots.iter().cloned());
    }
    let builder = ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let builder = match both.is_empty() {
        false => builder.with_client_cert_verifier(verifier(Arc::new(both))?),
        true => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(load_certs(cert)?, load_key(key)?)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let certs = match front_proxy_ca {
        None => ClientCerts { client: None, front_proxy: None },
        Some((ca, allowed)) => ClientCerts {
            client: client_ca.map(|ca| verifier(roots(ca)?).map_err(anyhow::Error::from)).transpose()?,
            front_proxy: Some((verifier(roots(ca)?)?, allowed)),
        },
    };
    Ok(RestTls { config: Arc::new(config), certs: Arc::new(certs) })
}

/// The peer port's configuration: a client certificate signed by `ca` is required.
pub fn peer_server_config(cert: &Path, key: &Path, ca: &Path) -> anyhow::Result<Arc<ServerConfig>> {
    let verifier = WebPkiClientVerifier::builder_with_provider(roots(ca)?, provider()).build()?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(load_certs(cert)?, load_key(key)?)?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// A peer client's configuration: trusts `ca`, presents this certificate.
pub fn peer_client_config(cert: &Path, key: &Path, ca: &Path) -> anyhow::Result<Arc<ClientConfig>> {
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots(ca)?)
        .with_client_auth_cert(load_certs(cert)?, load_key(key)?)?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// The user a client certificate names: the subject's common name, its organizations as
/// groups (kube-apiserver's rule).
fn user_of(cert: &CertificateDer<'_>) -> Option<UserInfo> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let subject = parsed.subject();
    let name = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    let groups = subject.iter_organization().filter_map(|o| o.as_str().ok()).map(String::from).collect();
    Some(UserInfo { name, uid: String::new(), groups })
}

/// A REST connection: plain TCP, or TLS with the user its client certificate names; it
/// holds its place among the listener's connections until it is dropped.
pub struct RestStream {
    io: RestIo,
    user: Option<UserInfo>,
    front_proxy: Option<FrontProxyCert>,
    _admission: Admission,
}

enum RestIo {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl ClientIdentity for RestStream {
    fn client_user(&self) -> Option<UserInfo> {
        self.user.clone()
    }

    fn front_proxy(&self) -> Option<FrontProxyCert> {
        self.front_proxy.clone()
    }
}

impl AsyncRead for RestStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            RestIo::Plain(s) => Pin::new(s).poll_read(cx, buf),
            RestIo::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for RestStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            RestIo::Plain(s) => Pin::new(s).poll_write(cx, buf),
            RestIo::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match &mut self.get_mut().io {
            RestIo::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            RestIo::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            RestIo::Plain(s) => s.is_write_vectored(),
            RestIo::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            RestIo::Plain(s) => Pin::new(s).poll_flush(cx),
            RestIo::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().io {
            RestIo::Plain(s) => Pin::new(s).poll_shutdown(cx),
            RestIo::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The REST listener: accepts TCP connections (with `TCP_NODELAY`: watch streams write
/// one small chunk per event) within the connection caps — checked at accept, before the
/// TLS handshake costs anything, and held by the connection until it closes, so
/// handshakes under way count too — and, with TLS, completes each handshake on a task of
/// its own within `handshake_timeout`, so a slow client never holds up the others.
pub struct RestListener {
    ready: mpsc::Receiver<(RestStream, SocketAddr)>,
    local: SocketAddr,
}

impl RestListener {
    pub fn new(
        tcp: TcpListener,
        tls: Option<RestTls>,
        caps: ConnectionCaps,
        handshake_timeout: Duration,
    ) -> io::Result<Self> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(256);
        let (acceptor, certs) = match tls {
            Some(t) => (Some(TlsAcceptor::from(t.config)), t.certs),
            None => (None, Arc::new(ClientCerts { client: None, front_proxy: None })),
        };
        let limiter = ConnectionLimiter::new(caps);
        tokio::spawn(async move {
            loop {
                let (sock, addr) = match tcp.accept().await {
                    Ok(c) => c,
                    Err(e) => {
                        // Out of descriptors and the like: back off rather than spin.
                        tracing::warn!("accept: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Some(admission) = limiter.admit(addr.ip()) else {
                    tracing::debug!(%addr, "connection refused: too many open");
                    continue;
                };
                let _ = sock.set_nodelay(true);
                limit_unsent(&sock);
                let tx = tx.clone();
                match &acceptor {
                    None => {
                        // No handshake: nothing to wait for, nothing to evict.
                        admission.handshake_done();
                        let conn = RestStream {
                            io: RestIo::Plain(sock),
                            user: None,
                            front_proxy: None,
                            _admission: admission,
                        };
                        if tx.send((conn, addr)).await.is_err() {
                            return;
                        }
                    }
                    Some(acceptor) => {
                        let acceptor = acceptor.clone();
                        let certs = certs.clone();
                        tokio::spawn(async move {
                            let handshake = tokio::time::timeout(handshake_timeout, acceptor.accept(sock));
                            let done = tokio::select! {
                                done = handshake => done,
                                // A newer connection needs the place (the total is full):
                                // this one has been in its handshake longest.
                                () = admission.evicted() => {
                                    tracing::debug!(%addr, "TLS handshake dropped: its place went to a newer connection");
                                    return;
                                }
                            };
                            match done {
                                // Asked to leave as the handshake finished: the place is gone.
                                Ok(Ok(_)) if !admission.handshake_done() => {}
                                Ok(Ok(tls)) => {
                                    tracing::debug!(%addr, "TLS handshake done");
                                    let (user, front_proxy) = certs.identify(tls.get_ref().1.peer_certificates());
                                    let conn = RestStream {
                                        io: RestIo::Tls(Box::new(tls)),
                                        user,
                                        front_proxy,
                                        _admission: admission,
                                    };
                                    let _ = tx.send((conn, addr)).await;
                                }
                                Ok(Err(e)) => tracing::debug!(%addr, "TLS handshake failed: {e}"),
                                Err(_) => tracing::debug!(%addr, "TLS handshake timed out"),
                            }
                        });
                    }
                }
            }
        });
        Ok(RestListener { ready, local })
    }
}

impl axum::serve::Listener for RestListener {
    type Io = RestStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The accept task is gone (the runtime is shutting down): nothing more comes.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}

/// The organization every node certificate carries (`kuorum certs` puts it there). A
/// peer must present it: the CA may also sign users' client certificates, and a user
/// must not be able to speak Raft.
pub const NODE_GROUP: &str = "kuorum:nodes";

/// The most a client connection may hold written but not yet sent (`TCP_NOTSENT_LOWAT`).
/// Past it the socket reads as not writable, so a client that stops reading holds this
/// much in the node's kernel per connection rather than an autotuned send buffer (up to
/// `tcp_wmem`'s 4 MiB: 1,000 unread watches of hostile_e2e's class 4 queued 2 GB, and
/// node 1 spent seconds serializing and encrypting it), and the node stops producing for
/// it. Bytes in flight are not limited, so a long, fast link keeps its throughput.
const CLIENT_UNSENT_MAX: libc::c_int = 128 * 1024;

/// Sets [`CLIENT_UNSENT_MAX`] on a client connection (best effort). libc rather than
/// socket2: socket2 has the setter behind its `all` feature only.
fn limit_unsent(sock: &TcpStream) {
    use std::os::fd::AsRawFd;
    let lowat = CLIENT_UNSENT_MAX;
    // SAFETY: a valid socket descriptor, and a c_int option of the size given.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NOTSENT_LOWAT,
            &lowat as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        tracing::debug!("TCP_NOTSENT_LOWAT: {}", io::Error::last_os_error());
    }
}

/// Whether a certificate is a node's (see [`NODE_GROUP`]).
pub fn is_node_cert(cert: &CertificateDer<'_>) -> bool {
    user_of(cert).is_some_and(|u| u.groups.iter().any(|g| g == NODE_GROUP))
}

/// Accepts a peer connection over mutual TLS from a node certificate.
pub async fn accept_peer(acceptor: TlsAcceptor, sock: TcpStream) -> io::Result<Box<dyn PeerIo>> {
    let _ = sock.set_nodelay(true);
    let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(sock))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "peer TLS handshake timed out"))??;
    let node = tls.get_ref().1.peer_certificates().and_then(|c| c.first()).is_some_and(is_node_cert);
    if !node {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("the peer's certificate is not a node's (its subject lacks O={NODE_GROUP})"),
        ));
    }
    Ok(Box::new(tls))
}

/// Dials peers over mutual TLS. The peer address's host (an IP or a name) must be in the
/// peer's certificate.
pub struct TlsDialer {
    connector: TlsConnector,
}

impl TlsDialer {
    pub fn new(config: Arc<ClientConfig>) -> Self {
        TlsDialer { connector: TlsConnector::from(config) }
    }
}

impl Dialer for TlsDialer {
    fn dial(&self, addr: String) -> BoxFuture<'static, io::Result<Box<dyn PeerIo>>> {
        let connector = self.connector.clone();
        Box::pin(async move {
            let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(&addr);
            let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
            let name = ServerName::try_from(host)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("peer address {addr}: {e}")))?;
            let sock = TcpStream::connect(&addr).await?;
            let _ = sock.set_nodelay(true);
            let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, connector.connect(name, sock))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "peer TLS handshake timed out"))??;
            Ok(Box::new(tls) as Box<dyn PeerIo>)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_certificates_name_users_and_only_node_certificates_pass_as_peers() {
        let dir = tempfile::tempdir().unwrap();
        crate::pki::ensure_cluster(dir.path(), 1, &[]).unwrap();
        let ca = crate::pki::Ca::load(dir.path()).unwrap();
        ca.issue(dir.path(), "alice", "alice", &["dev".into()], &[], false).unwrap();

        let alice = &load_certs(&dir.path().join("alice.crt")).unwrap()[0];
        assert_eq!(
            user_of(alice),
            Some(UserInfo { name: "alice".into(), uid: String::new(), groups: vec!["dev".into()] })
        );
        assert!(!is_node_cert(alice), "a user is not a peer");
        let admin = &load_certs(&dir.path().join("admin.crt")).unwrap()[0];
        assert_eq!(user_of(admin).unwrap().groups, vec!["system:masters".to_string()]);
        assert!(!is_node_cert(admin));
        let node = &load_certs(&dir.path().join("node1.crt")).unwrap()[0];
        assert!(is_node_cert(node));

        // The configurations build from what `kuorum certs` wrote.
        let (c, k) = crate::pki::node_files(dir.path(), 1);
        rest_server_config(&c, &k, Some(&dir.path().join("ca.crt")), None).unwrap();
        peer_server_config(&c, &k, &dir.path().join("ca.crt")).unwrap();
        peer_client_config(&c, &k, &dir.path().join("ca.crt")).unwrap();
    }

    /// With a front-proxy CA beside the client CA, the handshake takes a certificate of
    /// either; a user's names its user, a proxy's (with an allowed name) is a proxy's and
    /// no user, and a proxy certificate with a name not allowed is neither.
    #[tokio::test]
    async fn front_proxy_certificates_are_told_from_users() {
        use axum::routing::get as route;
        use kuorum_rest::auth::ClientCert;
        let dir = tempfile::tempdir().unwrap();
        crate::pki::ensure_cluster(dir.path(), 1, &[]).unwrap();
        let proxy_dir = tempfile::tempdir().unwrap();
        let proxy_ca = crate::pki::Ca::create_named(proxy_dir.path(), "front-proxy-ca").unwrap();
        for (stem, cn) in [("front-proxy-client", "front-proxy-client"), ("stranger", "stranger")] {
            proxy_ca.issue(proxy_dir.path(), stem, cn, &[], &[], false).unwrap();
        }
        let (c, k) = crate::pki::node_files(dir.path(), 1);
        let tls = rest_server_config(
            &c,
            &k,
            Some(&dir.path().join("ca.crt")),
            Some((&proxy_dir.path().join("ca.crt"), vec!["front-proxy-client".into()])),
        )
        .unwrap();
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let listener = RestListener::new(
            tcp,
            Some(tls),
            ConnectionCaps { per_source: 0, total: 1000, reserved: 10 },
            HANDSHAKE_TIMEOUT,
        )
        .unwrap();
        let app = axum::Router::new().route(
            "/whoami",
            route(
                |axum::Extension(ClientCert(user)): axum::Extension<ClientCert>,
                 proxy: Option<axum::Extension<FrontProxyCert>>| async move {
                    format!(
                        "user={} proxy={}",
                        user.map_or("-".to_string(), |u| u.name),
                        proxy.map_or("-".to_string(), |axum::Extension(p)| p.0)
                    )
                },
            ),
        );
        tokio::spawn(kuorum_node::http_server::serve(listener, app, Default::default(), None));
        let ask = |cert_dir: std::path::PathBuf, stem: &'static str| {
            let roots_dir = dir.path().to_path_buf();
            async move {
                let config = ClientConfig::builder_with_provider(provider())
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_root_certificates(roots(&roots_dir.join("ca.crt")).unwrap())
                    .with_client_auth_cert(
                        load_certs(&cert_dir.join(format!("{stem}.crt"))).unwrap(),
                        load_key(&cert_dir.join(format!("{stem}.key"))).unwrap(),
                    )
                    .unwrap();
                let sock = TcpStream::connect(addr).await.unwrap();
                let name = ServerName::try_from("127.0.0.1").unwrap();
                let mut c = TlsConnector::from(Arc::new(config)).connect(name, sock).await.unwrap();
                get(&mut c, "/whoami").await.unwrap().1
            }
        };
        assert_eq!(ask(dir.path().to_path_buf(), "admin").await, "user=kuorum-admin proxy=-");
        assert_eq!(ask(proxy_dir.path().to_path_buf(), "front-proxy-client").await, "user=- proxy=front-proxy-client");
        assert_eq!(ask(proxy_dir.path().to_path_buf(), "stranger").await, "user=- proxy=-");
    }

    /// A REST port on 127.0.0.1 with TLS (node 1's certificate, client certificates from
    /// the cluster CA) within `caps` and `handshake_timeout`, serving `/readyz` and
    /// `/whoami` (the client certificate's user, or `anonymous`) through the node's HTTP
    /// server; and the directory with the certificates.
    async fn rest_port(caps: ConnectionCaps, handshake_timeout: Duration) -> (SocketAddr, tempfile::TempDir) {
        use axum::routing::get;
        use kuorum_rest::auth::ClientCert;
        let dir = tempfile::tempdir().unwrap();
        crate::pki::ensure_cluster(dir.path(), 1, &[]).unwrap();
        let (c, k) = crate::pki::node_files(dir.path(), 1);
        let tls = rest_server_config(&c, &k, Some(&dir.path().join("ca.crt")), None).unwrap();
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let listener = RestListener::new(tcp, Some(tls), caps, handshake_timeout).unwrap();
        let app = axum::Router::new().route("/readyz", get(|| async { "ok" })).route(
            "/whoami",
            get(|axum::Extension(ClientCert(user)): axum::Extension<ClientCert>| async move {
                user.map_or("anonymous".to_string(), |u| u.name)
            }),
        );
        let limits = kuorum_node::http_server::HttpLimits {
            connections: caps,
            ..kuorum_node::http_server::HttpLimits::default()
        };
        tokio::spawn(kuorum_node::http_server::serve(listener, app, limits, None));
        (addr, dir)
    }

    type Client = tokio_rustls::client::TlsStream<TcpStream>;

    /// A TLS connection to `addr`, as `user` (a certificate `kuorum certs` wrote) or anonymous.
    async fn tls_connect(addr: SocketAddr, dir: &Path, user: Option<&str>) -> io::Result<Client> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots(&dir.join("ca.crt")).unwrap());
        let config = match user {
            Some(u) => builder
                .with_client_auth_cert(
                    load_certs(&dir.join(format!("{u}.crt"))).unwrap(),
                    load_key(&dir.join(format!("{u}.key"))).unwrap(),
                )
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        let sock = TcpStream::connect(addr).await?;
        let name = ServerName::try_from("127.0.0.1").unwrap();
        tokio::time::timeout(Duration::from_secs(5), TlsConnector::from(Arc::new(config)).connect(name, sock))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "handshake"))?
    }

    /// GETs `path` over HTTP/1.1 and returns the status and body (Content-Length bodies).
    async fn get<S: AsyncRead + AsyncWrite + Unpin>(c: &mut S, path: &str) -> io::Result<(u16, String)> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        c.write_all(format!("GET {path} HTTP/1.1\r\nHost: k\r\n\r\n").as_bytes()).await?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                    .unwrap_or(0);
                if buf.len() >= i + 4 + len {
                    let body = String::from_utf8_lossy(&buf[i + 4..i + 4 + len]).to_string();
                    return Ok((head[9..12].parse().unwrap(), body));
                }
            }
            let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut chunk))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "response"))??;
            if n == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Whether the server closes `c` within `within` (EOF or an error), reading what comes.
    async fn closed_within<S: AsyncRead + Unpin>(c: &mut S, within: Duration) -> bool {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 4096];
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, c.read(&mut chunk)).await {
                Err(_) => return false,
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_handshakes_neither_hold_up_others_nor_outlive_the_timeout() {
        let caps = ConnectionCaps { per_source: 0, total: 1000, reserved: 10 };
        let (addr, dir) = rest_port(caps, Duration::from_secs(1)).await;
        // 100 clients that connect and never say hello, and 20 that stop mid-hello.
        let mut slow = Vec::new();
        for i in 0..120 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            if i >= 100 {
                use tokio::io::AsyncWriteExt;
                s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01]).await.unwrap();
            }
            slow.push(s);
        }
        let started = std::time::Instant::now();
        let mut admin = tls_connect(addr, dir.path(), Some("admin")).await.unwrap();
        assert_eq!(get(&mut admin, "/whoami").await.unwrap(), (200, "kuorum-admin".to_string()));
        assert!(started.elapsed() < Duration::from_millis(900), "a handshake waited behind slow ones");
        for s in &mut slow {
            assert!(closed_within(s, Duration::from_secs(4)).await, "a stalled handshake outlived its timeout");
        }
        assert!(started.elapsed() >= Duration::from_millis(700));
        // The admin's connection, whose handshake finished, is still served.
        assert_eq!(get(&mut admin, "/readyz").await.unwrap().0, 200);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_reserve_keeps_room_for_client_certificates_and_probes() {
        // 6 connections: 2 anonymous, 1 more anonymous for health checks, the rest for
        // clients with a certificate.
        let caps = ConnectionCaps { per_source: 0, total: 6, reserved: 4 };
        let (addr, dir) = rest_port(caps, Duration::from_secs(5)).await;
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut c = tls_connect(addr, dir.path(), None).await.unwrap();
            assert_eq!(get(&mut c, "/whoami").await.unwrap(), (200, "anonymous".to_string()));
            held.push(c);
        }
        // A third anonymous client may only probe.
        let mut c = tls_connect(addr, dir.path(), None).await.unwrap();
        let (code, body) = get(&mut c, "/whoami").await.unwrap();
        assert_eq!(code, 429, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!((v["kind"].as_str(), v["code"].as_u64()), (Some("Status"), Some(429)));
        drop(c);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut probe = tls_connect(addr, dir.path(), None).await.unwrap();
        assert_eq!(get(&mut probe, "/readyz").await.unwrap().0, 200);
        drop(probe);
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Hold the health slot; the next anonymous client is turned away after its handshake.
        let _probe = tls_connect(addr, dir.path(), None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Ok(mut late) = tls_connect(addr, dir.path(), None).await {
            let _ = get(&mut late, "/readyz").await;
            assert!(closed_within(&mut late, Duration::from_secs(3)).await, "an anonymous client took a reserved slot");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Clients with certificates fill the reserve...
        for _ in 0..3 {
            let mut admin = tls_connect(addr, dir.path(), Some("admin")).await.unwrap();
            assert_eq!(get(&mut admin, "/whoami").await.unwrap(), (200, "kuorum-admin".to_string()));
            held.push(admin);
        }
        // ...up to the total.
        match tls_connect(addr, dir.path(), Some("admin")).await {
            Err(_) => {}
            Ok(mut c) => assert!(
                get(&mut c, "/whoami").await.is_err() || closed_within(&mut c, Duration::from_secs(3)).await,
                "a seventh connection was served"
            ),
        }
    }
}
