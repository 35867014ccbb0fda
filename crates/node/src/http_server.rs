//! The REST port's connections (DESIGN.md, "The edge"): which connections are let in,
//! how long one may take to send a request's head or sit idle, how large a request's
//! head may be, and serving the router on each over hyper-util's HTTP/1.1 and h2 builder.
//!
//! - **Admission** ([`ConnectionLimiter`]): caps on open connections per source IP and in
//!   total, checked when a connection is accepted, before anything is read from it. The
//!   last [`ConnectionCaps::reserved`] slots of the total are kept for connections that
//!   present a verified client certificate (an admin, a controller) — the only thing known
//!   about a client before it sends a request — and a quarter of them for anonymous
//!   connections that may then ask only for `/readyz`, `/livez` or `/healthz` (probes from
//!   kubelets and load balancers carry no credentials). A connection over a cap is closed
//!   at once — except that when the total is full, the connection that has sat longest in
//!   its TLS handshake is told to give up its place ([`Admission::evicted`]) and the new
//!   one takes it: a flood of sockets that never finish a handshake would otherwise hold
//!   every slot, the reserve included, for the whole handshake timeout, while a real
//!   client's handshake takes milliseconds and is never the oldest.
//! - **Time**: hyper closes an HTTP/1.1 connection that has not sent a whole request head
//!   within [`HttpLimits::header_read_timeout`] (hyper starts that clock when it starts
//!   waiting for a head, so it also bounds an idle HTTP/1.1 connection); this module
//!   closes any connection (HTTP/1.1 or h2) with no request in flight for
//!   [`HttpLimits::idle_timeout`]. The TLS handshake's limit is the listener's.
//! - **Heads**: kube-apiserver's limits (Go's `MaxHeaderBytes`, 1 MiB, and any number of
//!   headers within it) are answered here with a `metav1.Status` (414 for a URI longer
//!   than [`HttpLimits::max_uri_bytes`], 431 for more header bytes than
//!   [`HttpLimits::max_header_bytes`]); hyper's own limits sit above ours as a backstop
//!   (past them it answers with an empty body: see [`HYPER_MAX_HEADERS`]).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, HeaderValue, Request, Response, Version};
use axum::response::IntoResponse;
use axum::Router;
use bytes::Bytes;
use http_body::Frame;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use kuorum_api::status::{ApiError, Reason};
use kuorum_rest::auth::{ClientAddr, ClientCert, ClientIdentity, FrontProxyCert};
use kuorum_rest::RestError;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::background_cpu::{self, BackgroundCpu, StreamExecutor};
use kuorum_rest::wide::WideRequests;

/// kube-apiserver's `ReadHeaderTimeout`.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);
/// kube-apiserver's `IdleTimeout` (HTTP/1.1 and h2), Go's client keep-alive.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// kube-apiserver's `MaxHeaderBytes`: the request line and the headers.
pub const DEFAULT_MAX_HEADER_BYTES: usize = 1 << 20;
/// The longest request URI answered. A URI cannot be longer than 65,534 bytes in hyper
/// (the `http` crate's limit; past it hyper answers 414 with no body), so ours sits below.
pub const DEFAULT_MAX_URI_BYTES: usize = 32 << 10;
/// Connections one source IP may hold open. The benchmarks hold 3,334 watch streams per
/// node from 127.0.0.1 (10,000 over three nodes, one connection each) next to their
/// load clients.
pub const DEFAULT_MAX_CONNECTIONS_PER_SOURCE: usize = 4096;
/// Descriptors left to the rest of the node when the total is derived from the open-files
/// limit: RocksDB keeps every table file open, plus the Raft log's segments, the peers'
/// connections and the runtime's own.
pub const DESCRIPTORS_KEPT: u64 = 1024;
/// Headers hyper parses in one HTTP/1.1 request; more get hyper's bare 431. Go has no count
/// limit (only the bytes); hyper allocates this many slots per request, so it is bounded,
/// ten times what hyper allows by default.
pub const HYPER_MAX_HEADERS: usize = 1024;
/// A connection told to close (idle) gets this long to finish before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// What a REST connection may cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpLimits {
    /// An HTTP/1.1 connection that has not sent a whole request head this long after the
    /// server started waiting for it is closed (slowloris).
    pub header_read_timeout: Duration,
    /// A connection with no request in flight this long is closed.
    pub idle_timeout: Duration,
    /// A request whose line and headers are more bytes than this gets 431.
    pub max_header_bytes: usize,
    /// A request whose URI (path and query) is longer than this gets 414.
    pub max_uri_bytes: usize,
    pub connections: ConnectionCaps,
}

impl Default for HttpLimits {
    /// kube-apiserver's values; the connection caps from this process's open-files limit.
    fn default() -> Self {
        HttpLimits {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_uri_bytes: DEFAULT_MAX_URI_BYTES,
            connections: ConnectionCaps::for_open_files(open_files_limit(), DEFAULT_MAX_CONNECTIONS_PER_SOURCE),
        }
    }
}

/// How many connections are let in (0 in `per_source`: no per-source cap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionCaps {
    pub per_source: usize,
    pub total: usize,
    /// Of `total`, the slots only connections with a verified client certificate may take
    /// (and, for a quarter of them, anonymous connections that ask only for health).
    pub reserved: usize,
}

impl ConnectionCaps {
    /// The total this many open files allow (all but [`DESCRIPTORS_KEPT`], or half of
    /// them when the limit is small) and its default reserve.
    pub fn for_open_files(open_files: u64, per_source: usize) -> ConnectionCaps {
        let kept = DESCRIPTORS_KEPT.min(open_files / 2);
        let total = usize::try_from(open_files - kept).unwrap_or(usize::MAX).max(1);
        ConnectionCaps { per_source, total, reserved: ConnectionCaps::default_reserve(total) }
    }

    /// A tenth of the total, at least 8 and at most 1,024 slots (never all of it).
    pub fn default_reserve(total: usize) -> usize {
        (total / 10).clamp(8, 1024).min(total / 2)
    }

    /// Slots anonymous connections may use to ask for health, beyond their own share.
    pub fn health_slots(&self) -> usize {
        (self.reserved / 4).max(usize::from(self.reserved > 0))
    }

    /// Slots anonymous connections may fill with any request.
    pub fn anonymous(&self) -> usize {
        self.total.saturating_sub(self.reserved)
    }
}

/// This process's soft limit on open files (`RLIMIT_NOFILE`); 1,024 if it cannot be read.
pub fn open_files_limit() -> u64 {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } == 0 {
        l.rlim_cur
    } else {
        1024
    }
}

/// Raises the soft open-files limit to the hard one, as every Go program (kube-apiserver
/// among them) does at start since Go 1.19, and returns the soft limit then in force.
pub fn raise_open_files_limit() -> u64 {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct they are given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            let raised = libc::rlimit { rlim_cur: l.rlim_max, rlim_max: l.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return raised.rlim_cur;
            }
        }
    }
    open_files_limit()
}

/// What an admitted connection may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Full,
    /// Only `/readyz`, `/livez` and `/healthz`, one request (it sits in the reserve).
    HealthChecksOnly,
}

#[derive(Default)]
struct Counts {
    open: usize,
    anonymous: usize,
    health: usize,
    per_source: HashMap<IpAddr, usize>,
    /// Connections not yet settled (in their TLS handshake), oldest first, each with the
    /// signal that asks it to give up its place. Entries of settled or closed connections
    /// are skipped when met.
    pending: VecDeque<(u64, Arc<Evict>)>,
    /// Connections asked to give up their place that have not closed yet.
    leaving: usize,
    next_id: u64,
}

/// Counts the open connections and lets in or turns away new ones (see the module doc).
pub struct ConnectionLimiter {
    caps: ConnectionCaps,
    counts: Mutex<Counts>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// Admitted, not yet known to be anonymous or not (a TLS handshake under way).
    Pending,
    Verified,
    Anonymous,
    Health,
}

/// One admitted connection's place; dropping it frees the place.
pub struct Admission {
    limiter: Arc<ConnectionLimiter>,
    ip: IpAddr,
    slot: Slot,
    /// This connection's entry in the pending queue, and its signal to leave.
    id: u64,
    evict: Arc<Evict>,
}

/// A pending connection's signal to give up its place.
#[derive(Default)]
struct Evict {
    notify: tokio::sync::Notify,
    /// Set (with `Counts::leaving` counted) when the limiter asks; read when it closes.
    asked: std::sync::atomic::AtomicBool,
}

impl ConnectionLimiter {
    pub fn new(caps: ConnectionCaps) -> Arc<ConnectionLimiter> {
        Arc::new(ConnectionLimiter { caps, counts: Mutex::new(Counts::default()) })
    }

    pub fn caps(&self) -> ConnectionCaps {
        self.caps
    }

    /// A place for a new connection from `ip`, if `ip`'s share allows one and the total
    /// has room, or can make room by asking the oldest connection still in its handshake
    /// to leave (see the module doc).
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Admission> {
        let mut c = self.counts.lock().unwrap();
        if self.caps.per_source > 0 && c.per_source.get(&ip).is_some_and(|n| *n >= self.caps.per_source) {
            return None;
        }
        if c.open - c.leaving >= self.caps.total {
            let (_, evict) = c.pending.pop_front()?;
            evict.asked.store(true, Ordering::Relaxed);
            evict.notify.notify_one();
            c.leaving += 1;
        }
        *c.per_source.entry(ip).or_insert(0) += 1;
        c.open += 1;
        c.next_id += 1;
        let (id, evict) = (c.next_id, Arc::new(Evict::default()));
        c.pending.push_back((id, evict.clone()));
        Some(Admission { limiter: self.clone(), ip, slot: Slot::Pending, id, evict })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.counts.lock().unwrap().open
    }
}

impl Admission {
    /// Resolves when the limiter asks this connection, still in its handshake, to give up
    /// its place for a newer one: the handshake should be dropped.
    pub async fn evicted(&self) {
        self.evict.notify.notified().await;
    }

    /// Ends the connection's handshake: it can no longer be asked to leave. False when it
    /// was asked already (its place went to a newer connection): it should close.
    pub fn handshake_done(&self) -> bool {
        let mut c = self.limiter.counts.lock().unwrap();
        if self.evict.asked.load(Ordering::Relaxed) {
            return false;
        }
        forget_settled(&mut c.pending, self.id);
        true
    }

    /// Places the connection once it is known whether it presented a verified client
    /// certificate: `None` when it may not stay (the anonymous share and the health slots
    /// are full).
    pub fn settle(&mut self, verified: bool) -> Option<Access> {
        let caps = self.limiter.caps;
        let mut c = self.limiter.counts.lock().unwrap();
        match self.slot {
            Slot::Verified | Slot::Anonymous => return Some(Access::Full),
            Slot::Health => return Some(Access::HealthChecksOnly),
            Slot::Pending => {}
        }
        // No longer evictable. (The queue drops settled entries as it meets them, so a
        // settle costs no search; see `forget_settled`.)
        forget_settled(&mut c.pending, self.id);
        if verified {
            self.slot = Slot::Verified;
            Some(Access::Full)
        } else if c.anonymous < caps.anonymous() {
            c.anonymous += 1;
            self.slot = Slot::Anonymous;
            Some(Access::Full)
        } else if c.health < caps.health_slots() {
            c.health += 1;
            self.slot = Slot::Health;
            Some(Access::HealthChecksOnly)
        } else {
            None
        }
    }
}

/// Takes connection `id` out of the pending queue: at the front (the common case, as
/// handshakes finish about in the order they began) at once, else by a scan, which a
/// queue of at most the total cap's entries bounds.
fn forget_settled(pending: &mut VecDeque<(u64, Arc<Evict>)>, id: u64) {
    if pending.front().is_some_and(|(first, _)| *first == id) {
        pending.pop_front();
    } else if let Some(i) = pending.iter().position(|(p, _)| *p == id) {
        pending.remove(i);
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut c = self.limiter.counts.lock().unwrap();
        c.open -= 1;
        if self.evict.asked.load(Ordering::Relaxed) {
            c.leaving -= 1;
        } else if self.slot == Slot::Pending {
            forget_settled(&mut c.pending, self.id);
        }
        match self.slot {
            Slot::Anonymous => c.anonymous -= 1,
            Slot::Health => c.health -= 1,
            Slot::Pending | Slot::Verified => {}
        }
        if let Some(n) = c.per_source.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                c.per_source.remove(&self.ip);
            }
        }
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission").field("ip", &self.ip).field("slot", &self.slot).finish()
    }
}

/// Serves `app` on every connection `listener` accepts, within `limits`, until the task
/// running it is dropped. Each connection's requests carry its client certificate's user
/// as [`ClientCert`].
pub async fn serve<L>(mut listener: L, app: Router, limits: HttpLimits, background: Option<BackgroundCpu>)
where
    L: axum::serve::Listener<Addr = SocketAddr>,
    L::Io: ClientIdentity,
{
    let limiter = ConnectionLimiter::new(limits.connections);
    let limits = Arc::new(limits);
    loop {
        let (io, addr) = listener.accept().await;
        let Some(mut admission) = limiter.admit(addr.ip()) else {
            tracing::debug!(%addr, "connection refused: too many open");
            continue;
        };
        let user = io.client_user();
        let front_proxy = io.front_proxy();
        let Some(access) = admission.settle(user.is_some() || front_proxy.is_some()) else {
            tracing::debug!(%addr, "connection refused: the anonymous share is full");
            continue;
        };
        tracing::debug!(%addr, ?access, "connection served");
        let conn =
            Connection { app: app.clone(), limits: limits.clone(), cert: ClientCert(user), front_proxy, addr, access };
        let activity = Arc::new(Activity::new());
        let wide = activity.wide.clone();
        let builder = connection_builder(&limits, StreamExecutor::new(background.clone(), wide.clone()));
        tokio::spawn(background_cpu::drive(conn.serve(builder, io, admission, activity), wide, background.clone()));
    }
}

/// hyper-util's builder with our limits: hyper's own sit above ours, so a request between
/// the two gets our Status.
/// (Built for each connection: its h2 streams' executor is the connection's.)
fn connection_builder(limits: &HttpLimits, streams: StreamExecutor) -> auto::Builder<StreamExecutor> {
    let head_backstop = limits.max_header_bytes.saturating_add(64 << 10).max(8192);
    let mut builder = auto::Builder::new(streams);
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(HYPER_MAX_HEADERS)
        .max_buf_size(head_backstop);
    builder
        .http2()
        .timer(TokioTimer::new())
        // h2 counts 32 bytes more per header than we do.
        .max_header_list_size(u32::try_from(head_backstop.saturating_mul(2)).unwrap_or(u32::MAX));
    builder
}

/// One connection's service: its limits, its client certificate, what it may ask for.
#[derive(Clone)]
struct Connection {
    app: Router,
    limits: Arc<HttpLimits>,
    cert: ClientCert,
    /// An authenticating proxy's certificate, when the connection presented one.
    front_proxy: Option<FrontProxyCert>,
    /// Where the connection comes from (the audit log's `sourceIPs`).
    addr: SocketAddr,
    access: Access,
}

impl Connection {
    async fn serve<I>(
        self,
        builder: auto::Builder<StreamExecutor>,
        io: I,
        admission: Admission,
        activity: Arc<Activity>,
    ) where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let idle_timeout = self.limits.idle_timeout;
        let service = {
            let activity = activity.clone();
            hyper::service::service_fn(move |req| self.clone().call(req, activity.clone()))
        };
        let conn = builder.serve_connection(TokioIo::new(io), service);
        tokio::pin!(conn);
        let idle = tokio::time::sleep(idle_timeout);
        tokio::pin!(idle);
        loop {
            tokio::select! {
                res = conn.as_mut() => {
                    if let Err(e) = res {
                        tracing::trace!("connection ended: {e}");
                    }
                    break;
                }
                _ = idle.as_mut() => match activity.idle_deadline(idle_timeout) {
                    Some(deadline) if deadline <= Instant::now() => {
                        tracing::trace!("closing an idle connection");
                        conn.as_mut().graceful_shutdown();
                        let _ = tokio::time::timeout(CLOSE_GRACE, conn.as_mut()).await;
                        break;
                    }
                    Some(deadline) => idle.as_mut().reset(deadline),
                    // Busy: look again in a while (no wake per request).
                    None => idle.as_mut().reset(Instant::now() + idle_timeout),
                },
            }
        }
        drop(admission);
    }

    async fn call(self, req: Request<Incoming>, activity: Arc<Activity>) -> Result<Response<Tracked>, Infallible> {
        let guard = activity.start();
        let version = req.version();
        let mut resp = match self.refusal(&req) {
            Some(e) => RestError(e).into_response(),
            None => {
                let mut req = req.map(Body::new);
                req.extensions_mut().insert(self.cert.clone());
                if let Some(proxy) = &self.front_proxy {
                    req.extensions_mut().insert(proxy.clone());
                }
                req.extensions_mut().insert(ClientAddr(self.addr));
                // An h2 stream's own, else (HTTP/1.1) the connection's.
                let wide = background_cpu::this_stream().unwrap_or_else(|| activity.wide.clone());
                req.extensions_mut().insert(wide);
                match self.app.oneshot(req).await {
                    Ok(resp) => resp,
                    Err(never) => match never {},
                }
            }
        };
        if self.access == Access::HealthChecksOnly && version <= Version::HTTP_11 {
            // A probe's connection serves one request: the slot goes back at once.
            resp.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        Ok(resp.map(|body| Tracked { body, _guard: guard }))
    }

    /// Why this request is answered without reaching the router, if it is.
    fn refusal(&self, req: &Request<Incoming>) -> Option<ApiError> {
        let uri = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
        if uri > self.limits.max_uri_bytes {
            return Some(status(
                414,
                format!(
                    "the request URI is {uri} bytes, longer than the {} this server accepts",
                    self.limits.max_uri_bytes
                ),
            ));
        }
        let head = head_bytes(req);
        if head > self.limits.max_header_bytes {
            return Some(status(
                431,
                format!(
                    "the request line and headers are {head} bytes, more than the {} this server accepts",
                    self.limits.max_header_bytes
                ),
            ));
        }
        if self.access == Access::HealthChecksOnly && !is_health_check(req.uri().path()) {
            let mut e = ApiError::too_many_requests(1);
            e.message = "too many connections to this server: this one may only ask for /readyz, /livez or /healthz; \
                         try again later or present a client certificate"
                .into();
            return Some(e);
        }
        None
    }
}

/// A Status with a code that has no reason of its own in `metav1` (414, 431).
fn status(code: u16, message: String) -> ApiError {
    ApiError { reason: Reason::BadRequest, code, message, details: None }
}

/// The bytes of the request line and headers as HTTP/1.1 sends them (what Go's
/// `MaxHeaderBytes` counts).
fn head_bytes(req: &Request<Incoming>) -> usize {
    let uri = req.uri().path_and_query().map_or(1, |p| p.as_str().len());
    let line = req.method().as_str().len() + 1 + uri + " HTTP/1.1\r\n".len();
    line + req.headers().iter().map(|(n, v)| n.as_str().len() + 2 + v.len() + 2).sum::<usize>() + 2
}

fn is_health_check(path: &str) -> bool {
    ["/readyz", "/livez", "/healthz"]
        .iter()
        .any(|p| path.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with('/')))
}

/// A connection's requests in flight and since when it has had none.
struct Activity {
    base: Instant,
    in_flight: AtomicUsize,
    idle_since_ms: AtomicU64,
    /// Its wide requests, which move it to the background CPU while they run.
    wide: WideRequests,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            base: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since_ms: AtomicU64::new(0),
            wide: WideRequests::default(),
        }
    }

    fn start(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.clone())
    }

    /// When the connection will have been idle `timeout` (None: a request is in flight).
    fn idle_deadline(&self, timeout: Duration) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(self.base + Duration::from_millis(self.idle_since_ms.load(Ordering::Acquire)) + timeout)
    }
}

/// A request in flight, until its response body is done or dropped.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let since = self.0.base.elapsed().as_millis() as u64;
        self.0.idle_since_ms.fetch_max(since, Ordering::AcqRel);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request in flight until it is done.
struct Tracked {
    body: Body,
    _guard: InFlight,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(per_source: usize, total: usize, reserved: usize) -> Arc<ConnectionLimiter> {
        ConnectionLimiter::new(ConnectionCaps { per_source, total, reserved })
    }

    /// A full total makes room by asking the connection longest in its handshake to leave,
    /// never one that is settled; it counts as open until it closes.
    #[tokio::test]
    async fn a_full_total_evicts_the_oldest_handshake() {
        let l = limiter(0, 3, 0);
        let ip: IpAddr = "127.0.0.2".parse().unwrap();
        let asked = |a: &Admission| {
            let a = a.evict.clone();
            async move { tokio::time::timeout(Duration::from_millis(200), a.notify.notified()).await.is_ok() }
        };
        let mut settled = l.admit(ip).unwrap();
        settled.settle(false);
        let old = l.admit(ip).unwrap();
        let young = l.admit(ip).unwrap();
        let mut newest = l.admit(ip).expect("room made by the oldest handshake");
        assert!(asked(&old).await, "the oldest handshake is asked to leave");
        assert!(!asked(&young).await && !asked(&settled).await);
        assert_eq!(l.open(), 4, "it holds its descriptor until it closes");
        drop(old);
        assert_eq!(l.open(), 3);
        let mut next = l.admit(ip).expect("the next oldest handshake makes room");
        assert!(asked(&young).await);
        drop(young);
        assert!(newest.handshake_done() && next.handshake_done(), "neither was asked");
        assert!(l.admit(ip).is_none(), "handshakes done, even unsettled: nothing to evict, the total holds");
        newest.settle(true);
        next.settle(true);
        assert!(l.admit(ip).is_none(), "nothing left in a handshake: the total holds");
        assert_eq!(l.open(), 3);
    }

    #[test]
    fn per_source_and_total_caps_hold_and_free_on_drop() {
        let l = limiter(2, 3, 0);
        let a: IpAddr = "127.0.0.2".parse().unwrap();
        let b: IpAddr = "127.0.0.1".parse().unwrap();
        let mut a1 = l.admit(a).unwrap();
        let mut a2 = l.admit(a).unwrap();
        assert!(l.admit(a).is_none(), "a third from one source");
        let mut b1 = l.admit(b).unwrap();
        for c in [&mut a1, &mut a2, &mut b1] {
            assert_eq!(c.settle(true), Some(Access::Full));
        }
        assert!(l.admit(b).is_none(), "the total, with no connection left in its handshake");
        drop(a1);
        assert!(l.admit(a).is_some(), "a place freed is a place again");
        drop(b1);
        assert_eq!(l.open(), 1, "only the second from the first source is left");
    }

    #[test]
    fn the_reserve_takes_verified_connections_and_a_few_health_checks() {
        // 10 slots, 4 reserved: 6 anonymous, 1 anonymous health check, the rest verified.
        let l = limiter(0, 10, 4);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let mut held = Vec::new();
        for _ in 0..6 {
            let mut a = l.admit(ip).unwrap();
            assert_eq!(a.settle(false), Some(Access::Full));
            held.push(a);
        }
        let mut probe = l.admit(ip).unwrap();
        assert_eq!(probe.settle(false), Some(Access::HealthChecksOnly));
        let mut late = l.admit(ip).unwrap();
        assert_eq!(late.settle(false), None, "the anonymous share and the health slot are full");
        drop(late);
        for _ in 0..3 {
            let mut a = l.admit(ip).unwrap();
            assert_eq!(a.settle(true), Some(Access::Full));
            held.push(a);
        }
        assert!(l.admit(ip).is_none(), "the total holds for verified connections too");
        drop(probe);
        let mut again = l.admit(ip).unwrap();
        assert_eq!(again.settle(false), Some(Access::HealthChecksOnly), "the health slot came back");
    }

    #[test]
    fn the_total_follows_the_open_files_limit() {
        let c = ConnectionCaps::for_open_files(20_000, 4096);
        assert_eq!((c.total, c.reserved, c.health_slots()), (18_976, 1024, 256));
        let c = ConnectionCaps::for_open_files(1024, 4096);
        assert_eq!((c.total, c.reserved), (512, 51));
        assert_eq!(c.anonymous(), 461);
        let c = ConnectionCaps::for_open_files(1_048_576, 4096);
        assert_eq!(c.total, 1_047_552);
    }

    #[test]
    fn health_paths() {
        for p in ["/readyz", "/livez", "/healthz", "/readyz/ping"] {
            assert!(is_health_check(p), "{p}");
        }
        for p in ["/readyzz", "/api", "/", "/metrics"] {
            assert!(!is_health_check(p), "{p}");
        }
    }
}
