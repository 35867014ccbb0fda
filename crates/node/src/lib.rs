//! One kuorum node, assembled from its seams (DESIGN.md): it never binds or dials by
//! itself. It is given a REST listener, a stream of incoming peer connections, a dialer
//! for peers, a clock, an entropy source and its two storage engines; production passes
//! TCP and RocksDB, the simulator passes turmoil and the in-memory engines.
//!
//! [`start_node`] wires replication (kuorum-raft) under the REST router (kuorum-rest),
//! serves both, creates what every cluster has (the system namespaces, PriorityClasses,
//! roles and flow-control configuration) once a leader exists, and, on the leader,
//! empties and removes namespaces and CustomResourceDefinitions that are being deleted,
//! proposes compaction of history older than the window, frees leaked pool values, keeps
//! the `kubernetes` Service's endpoints, quotas' usage and aggregated roles, and releases
//! claims and volumes no longer in use. Every node checks its state against its peers'
//! at each compaction point.

pub mod apiserver_endpoints;
mod apiservice_availability;
pub mod background_cpu;
mod backup;
mod bootstrap;
mod claim_repair;
mod compaction;
mod consistency_check;
mod crd_controller;
mod data_format;
mod debug;
mod flowschema_status;
pub mod http_server;
mod members;
mod membership_probe;
mod namespace_controller;
mod policy_status;
mod quota_controller;
mod role_aggregation;
mod status_write;
mod storage_protection;

use std::collections::BTreeMap;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use kuorum_api::seams::{Clock, Entropy};
use kuorum_raft::{Cluster, Dialer, PeerIo, RaftNodeConfig, RaftTiming};
use kuorum_rest::RestState;
use kuorum_store::{ApplyObserver, LogEngine, ObjectEngine};
use kuorum_watch::{CacheConfig, WatchCache};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::task::JoinHandle;

/// What a node is.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub id: u64,
    /// Every voter's id and peer address, this node included.
    pub members: BTreeMap<u64, String>,
    pub timing: RaftTiming,
    /// Deadline of one write or read barrier.
    pub request_timeout: Duration,
    /// How much history (for exact reads, continue tokens and watch resumes) is kept:
    /// the leader compacts what is older than this.
    pub compaction_window: Duration,
    /// How often this node checks its state against its peers' at the latest compaction
    /// point (`None`: never).
    pub consistency_check_every: Option<Duration>,
    pub cache: CacheConfig,
    /// Non-mutating requests served at once before 429 (0: no limit); watches do not count.
    pub max_requests_inflight: usize,
    /// Mutating requests served at once before 429 (0: no limit).
    pub max_mutating_requests_inflight: usize,
    /// API Priority and Fairness, sharing the two limits above among priority levels.
    pub priority_and_fairness: bool,
    /// Join an existing cluster (to be added by `kuorum member add`) instead of
    /// bootstrapping `members`.
    pub join: bool,
    /// The newest data format this node reads and writes (`kuorum_raft::format`): the
    /// newest this code knows, or 1 to act as a release before formats were numbered
    /// (upgrade tests).
    pub max_data_format: u32,
    /// Who may use the REST API (default: everyone, anonymously).
    pub auth: Arc<kuorum_rest::auth::Authenticator>,
    /// What authenticated users may do (default: everything).
    pub authorization: kuorum_rest::authz::Authorization,
    /// Serve `/kuorum/v1/chaos` and inject the faults it is told to (off unless asked
    /// for: `kuorum serve --enable-chaos`, or the simulator).
    pub chaos: bool,
    /// What a REST connection may cost: timeouts, head size, connection caps.
    pub http: http_server::HttpLimits,
    /// Where wide responses are sent from, at a lower CPU priority (`None`: on the node's
    /// runtime, as the simulator wants).
    pub background_cpu: Option<background_cpu::BackgroundCpu>,
    /// The service address and node-port ranges every node allocates from (the same on
    /// every node of a cluster).
    pub pools: kuorum_api::kinds::allocation::Pools,
    /// Which admission plugins run (`--disable-admission-plugins`).
    pub admission: kuorum_rest::admission::Plugins,
    /// The audit log this node writes, if any (`--audit-policy-file`, `--audit-log-path`).
    pub audit: Option<Arc<kuorum_rest::audit::AuditLog>>,
    /// The client certificate presented to extension API servers (`--proxy-client-cert-file`).
    pub proxy_identity: Option<kuorum_rest::aggregator::ProxyIdentity>,
    /// What extension API servers read in `kube-system/extension-apiserver-authentication`
    /// (`client-ca-file`, `requestheader-*`); empty: no ConfigMap is written.
    pub authentication_info: BTreeMap<String, String>,
    /// Services reached at a fixed address (`--webhook-service-map`).
    pub service_map: std::collections::HashMap<(String, String), std::net::SocketAddr>,
    /// The REST address this node lists in the `kubernetes` Service's endpoints; `None`
    /// keeps the Service and its endpoints out (the simulator).
    pub advertise: Option<apiserver_endpoints::Advertised>,
}

impl NodeConfig {
    /// A node with the defaults for everything but its identity.
    pub fn new(id: u64, members: BTreeMap<u64, String>) -> NodeConfig {
        NodeConfig {
            id,
            members,
            timing: RaftTiming::default(),
            request_timeout: Duration::from_secs(60),
            compaction_window: Duration::from_secs(300),
            consistency_check_every: Some(Duration::from_secs(300)),
            cache: CacheConfig::default(),
            max_requests_inflight: kuorum_rest::metrics::DEFAULT_MAX_READONLY_INFLIGHT,
            max_mutating_requests_inflight: kuorum_rest::metrics::DEFAULT_MAX_MUTATING_INFLIGHT,
            // Off unless asked for (`kuorum serve` asks by default): the simulator's
            // clients are few and its runs compare with earlier ones.
            priority_and_fairness: false,
            join: false,
            max_data_format: kuorum_raft::format::DATA_FORMAT,
            auth: Arc::new(kuorum_rest::auth::Authenticator::allow_all()),
            authorization: kuorum_rest::authz::Authorization::AlwaysAllow,
            chaos: false,
            http: http_server::HttpLimits::default(),
            background_cpu: None,
            pools: Default::default(),
            admission: Default::default(),
            audit: None,
            proxy_identity: None,
            authentication_info: BTreeMap::new(),
            service_map: Default::default(),
            advertise: None,
        }
    }
}

/// What a node is given from outside: the seams.
pub struct NodeSeams<L, O, R> {
    pub rest_listener: R,
    pub peer_incoming: BoxStream<'static, io::Result<Box<dyn PeerIo>>>,
    pub dialer: Arc<dyn Dialer>,
    pub clock: Arc<dyn Clock>,
    pub entropy: Arc<dyn Entropy>,
    pub log_engine: Arc<L>,
    pub object_engine: Arc<O>,
    /// Also told of every applied change, after the watch cache (the simulator's
    /// checkers record what each node applied through it); None in a real node.
    pub apply_tap: Option<Arc<dyn ApplyObserver>>,
}

/// A running node. Dropping it does not stop it; call [`RunningNode::shutdown`].
pub struct RunningNode<O: ObjectEngine> {
    pub cluster: Cluster,
    pub cache: Arc<WatchCache>,
    pub raft: kuorum_raft::types::Raft<kuorum_raft::state_machine::StateMachine<O>>,
    /// The fault injector, when the node was started with chaos enabled.
    pub chaos: Option<Arc<kuorum_rest::chaos::Chaos>>,
    tasks: Vec<JoinHandle<()>>,
}

impl<O: ObjectEngine> RunningNode<O> {
    /// Resolves, with the reason, when replication has stopped on its own: a storage
    /// error (a full or failing disk) is fatal to openraft. The node cannot serve past
    /// it; `kuorum serve` exits then, so a supervisor restarts it once the disk is fixed.
    pub async fn stopped(&self) -> String {
        use openraft::async_runtime::WatchReceiver;
        // Polled, not woken on every metrics change: those come with every append and
        // apply, and waking for each cost measurable CPU under load.
        let metrics = self.raft.metrics();
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
        loop {
            tick.tick().await;
            if let Err(fatal) = &metrics.borrow_watched().running_state {
                return fatal.to_string();
            }
        }
    }

    /// Stops serving and stops replication.
    pub async fn shutdown(self) {
        for t in &self.tasks {
            t.abort();
        }
        let _ = self.raft.shutdown().await;
    }
}

/// Two observers told of the same applies, in order.
struct Tee(Arc<WatchCache>, Arc<dyn ApplyObserver>);

impl ApplyObserver for Tee {
    fn applied(&self, rv: u64, changes: Vec<kuorum_store::Change>, compacted: Option<u64>) {
        self.0.applied(rv, changes.clone(), compacted);
        self.1.applied(rv, changes, compacted);
    }

    fn reset(&self, rv: u64, oldest: u64, objects: Vec<(String, bytes::Bytes)>, changes: Vec<kuorum_store::Change>) {
        self.0.reset(rv, oldest, objects.clone(), changes.clone());
        self.1.reset(rv, oldest, objects, changes);
    }
}

/// A peer connection as tonic's server wants it.
struct PeerConn(Box<dyn PeerIo>);

impl AsyncRead for PeerConn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for PeerConn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    // Passed through, so HTTP/2 hands a reply's frames to one `writev`. Without them the
    // default (not vectored) made the leader answer each forwarded write in two or three
    // `sendto` calls, the payload cut at 1 KiB (session 11's strace of the peer port).
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for PeerConn {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

/// Starts a node on the current tokio runtime and returns once it is serving.
pub async fn start_node<L, O, R>(cfg: NodeConfig, seams: NodeSeams<L, O, R>) -> anyhow::Result<RunningNode<O>>
where
    L: LogEngine,
    O: ObjectEngine,
    R: axum::serve::Listener<Addr = std::net::SocketAddr>,
    R::Io: kuorum_rest::auth::ClientIdentity,
{
    let raft_cfg = RaftNodeConfig {
        join: cfg.join,
        max_data_format: cfg.max_data_format,
        ..RaftNodeConfig::new(cfg.id, cfg.members.clone(), cfg.timing.clone(), seams.entropy.next_u64())
    };
    let cache = WatchCache::new(cfg.cache.clone());
    let observer: Arc<dyn ApplyObserver> = match seams.apply_tap {
        None => cache.clone(),
        Some(tap) => Arc::new(Tee(cache.clone(), tap)),
    };
    let mut started =
        kuorum_raft::start_raft(raft_cfg, seams.log_engine, seams.object_engine, seams.dialer, Some(observer)).await?;
    let peer_server = started.take_peer_server().expect("peer server taken once");
    let cluster = started.cluster.clone();
    let mut tasks = Vec::new();

    let incoming = seams.peer_incoming.map(|r| r.map(PeerConn));
    tasks.push(tokio::spawn(async move {
        let res = tonic::transport::Server::builder()
            .tcp_nodelay(true)
            .add_service(peer_server)
            .serve_with_incoming(incoming)
            .await;
        if let Err(e) = res {
            tracing::error!("peer server stopped: {e}");
        }
    }));

    let mut rest = RestState {
        request_timeout: cfg.request_timeout,
        auth: cfg.auth.clone(),
        authorization: cfg.authorization,
        pools: cfg.pools.clone(),
        admission: cfg.admission.clone(),
        audit: cfg.audit.clone(),
        proxy_identity: cfg.proxy_identity.clone(),
        service_map: Arc::new(cfg.service_map.clone()),
        ..RestState::new(cluster.clone(), cache.clone(), seams.clock.clone(), seams.entropy.clone())
    };
    // Not ready before this node has the bootstrap roles and bindings (started before
    // anything serves).
    rest.start_hooks.started(bootstrap::ROLES_HOOK);
    rest.metrics.set_inflight_limits(cfg.max_requests_inflight, cfg.max_mutating_requests_inflight);
    rest.apf = cfg.priority_and_fairness.then(|| {
        let total = cfg.max_requests_inflight + cfg.max_mutating_requests_inflight;
        let limited = cfg.max_requests_inflight > 0 && cfg.max_mutating_requests_inflight > 0;
        Arc::new(kuorum_rest::apf::Apf::new(if limited { total } else { kuorum_rest::apf::DEFAULT_TOTAL_SEATS }))
    });
    if cfg.chaos {
        tracing::warn!("chaos mode: /kuorum/v1/chaos can inject faults into this node");
        let gate = started.state_machine.apply_gate();
        rest.chaos = Some(kuorum_rest::chaos::Chaos::new(gate, rest.entropy.clone(), &rest.metrics));
    }
    let chaos = rest.chaos.clone();
    tasks.push(tokio::spawn(quota_controller::run(rest.clone())));
    tasks.push(tokio::spawn(apiservice_availability::run(rest.clone())));
    tasks.push(tokio::spawn(flowschema_status::run(rest.clone())));
    tasks.push(tokio::spawn(policy_status::run(rest.clone())));
    let mut own = debug::router(started.raft.clone(), cluster.clone())
        .merge(members::router(started.raft.clone(), cluster.clone()))
        .merge(backup::router(started.state_machine.clone(), cluster.clone()));
    if let Some(c) = &chaos {
        own = own.merge(kuorum_rest::chaos::router(c.clone(), cache.clone(), cluster.clone()));
    }
    let start_hooks = rest.start_hooks.clone();
    let app = kuorum_rest::router_with(rest, own);
    // Each connection's requests carry its client certificate's user (http_server).
    tasks.push(tokio::spawn(http_server::serve(
        seams.rest_listener,
        app,
        cfg.http.clone(),
        cfg.background_cpu.clone(),
    )));

    if let Some(me) = cfg.advertise.clone() {
        let (clock, entropy, service_ip) = (seams.clock.clone(), seams.entropy.clone(), cfg.pools.first_address());
        tasks.push(tokio::spawn(apiserver_endpoints::run(cluster.clone(), clock, entropy, me, service_ip)));
    }
    if !cfg.authentication_info.is_empty() {
        let (clock, entropy, data) = (seams.clock.clone(), seams.entropy.clone(), cfg.authentication_info.clone());
        tasks.push(tokio::spawn(bootstrap::ensure_authentication_info(cluster.clone(), clock, entropy, data)));
    }
    {
        let made = bootstrap::ensure_bootstrap_objects(cluster.clone(), seams.clock.clone(), seams.entropy);
        tasks.push(tokio::spawn(async move {
            made.await;
            start_hooks.finished(bootstrap::ROLES_HOOK);
        }));
    }
    tasks.push(tokio::spawn(namespace_controller::run(cluster.clone(), seams.clock.clone())));
    tasks.push(tokio::spawn(crd_controller::run(cluster.clone(), seams.clock)));
    tasks.push(tokio::spawn(compaction::run(cluster.clone(), cfg.compaction_window)));
    tasks.push(tokio::spawn(membership_probe::run(cluster.clone())));
    tasks.push(tokio::spawn(data_format::run(cluster.clone())));
    if let Some(every) = cfg.consistency_check_every {
        tasks.push(tokio::spawn(consistency_check::run(cluster.clone(), every)));
    }
    tasks.push(tokio::spawn(claim_repair::run(cluster.clone())));
    tasks.push(tokio::spawn(role_aggregation::run(cluster.clone())));
    tasks.push(tokio::spawn(storage_protection::run(cluster.clone())));
    let ticking = cache.clone();
    tasks.push(tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            ticking.bookmark_tick();
        }
    }));

    Ok(RunningNode { cluster, cache, raft: started.raft, chaos, tasks })
}
