//! The Kubernetes REST frontend: routing, content negotiation, one handler per verb, and
//! discovery, on top of a [`kuorum_raft::Cluster`].
//!
//! A request flows top-down: [`route`] turns the path into a [`target`] (a resource, maybe
//! a namespace, name and subresource), [`negotiate`] checks the media types and reads the
//! body, then one verb module (`get`, `list`, `watch`, `create`, `update`, `delete`)
//! decodes, defaults and validates, stores through the cluster and encodes the answer.
//! Reads (get, list, watch) are served from the node's watch cache, or from the MVCC
//! history for exact lists and continue tokens, after waiting as [`consistency`] decides.
//! Every failure is a [`kuorum_api::ApiError`], turned into a `metav1.Status` response
//! in one place ([`error`]).
//!
//! Custom resources go the same way: [`route`] finds them among the node's CRDs
//! ([`custom`]), and the verbs apply their schema (pruning, defaults, validation, field
//! ownership) where they apply a built-in kind's; [`strategy`] holds the rules particular
//! to CRDs and custom resources.

use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use kuorum_api::seams::{Clock, Entropy};
use kuorum_raft::Cluster;
use kuorum_watch::WatchCache;
use tower_http::compression::{CompressionLayer, Predicate};

pub mod admission;
pub mod admission_policy;
pub mod aggregator;
mod alloc;
mod answered;
pub mod apf;
pub mod audit;
pub mod auth;
pub mod authz;
pub mod chaos;
mod component_status;
mod consistency;
mod conversion;
mod crd_cleanup;
mod create;
mod custom;
mod custom_rules;
mod defaults;
mod delete;
mod discovery;
pub mod error;
mod eviction;
mod expressions;
mod fields;
mod front;
mod get;
mod graceful;
mod history;
mod impersonation;
mod list;
pub mod metrics;
pub mod negotiate;
mod node_authz;
mod object;
mod openapi;
pub mod parse;
mod patch;
mod pod_binding;
mod protobuf;
pub mod query;
pub mod request;
pub mod request_log;
mod route;
pub mod sa_token;
pub mod start_hooks;
mod strategy;
mod subresource;
mod table;
mod target;
mod token;
mod update;
mod watch;
pub mod webhook;
pub mod wide;
mod yaml_limits;

pub use crd_cleanup::finalize_deleted_crds;
pub use custom::CustomResources;
pub use error::RestError;

/// How long a request may wait for replication by default (kube-apiserver's 60 s).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What every handler needs: the cluster handle and the node's seams.
#[derive(Clone)]
pub struct RestState {
    pub cluster: Cluster,
    /// This node's watch cache, fed by `cluster`'s state machine.
    pub cache: Arc<WatchCache>,
    pub clock: Arc<dyn Clock>,
    pub entropy: Arc<dyn Entropy>,
    /// The deadline of a write (and of a read barrier).
    pub request_timeout: Duration,
    /// The custom resources this node serves, read from `cache`.
    pub custom: Arc<CustomResources>,
    /// `/metrics` and the in-flight limits.
    pub metrics: Arc<metrics::Metrics>,
    /// Who may ask: client certificates, tokens, anonymous or not.
    pub auth: Arc<auth::Authenticator>,
    /// What the users authentication found may do.
    pub authorization: authz::Authorization,
    /// Fault injection, when this node was started with it enabled.
    pub chaos: Option<Arc<chaos::Chaos>>,
    /// The service address and node-port ranges (`--service-cluster-ip-range`,
    /// `--service-node-port-range`).
    pub pools: kuorum_api::kinds::allocation::Pools,
    /// Which admission plugins run (`--disable-admission-plugins`).
    pub admission: admission::Plugins,
    /// Held while this node charges a ResourceQuota, so its own creates queue rather than
    /// race each other for the quota's version (other nodes' creates still may).
    pub quota_charging: Arc<tokio::sync::Mutex<()>>,
    /// The audit log this node writes (`--audit-policy-file`, `--audit-log-path`).
    pub audit: Option<Arc<audit::AuditLog>>,
    /// The client certificate presented to extension API servers
    /// (`--proxy-client-cert-file`, `--proxy-client-key-file`).
    pub proxy_identity: Option<reqwest::Identity>,
    /// What this node fetched from extension API servers for discovery.
    pub aggregated: Arc<aggregator::Discovered>,
    /// The extension servers' OpenAPI v3 documents this node fetched.
    pub aggregated_openapi: Arc<aggregator::OpenApiFetched>,
    /// Services reached at a fixed address instead of through their Endpoints
    /// (`--webhook-service-map`): webhooks and extension API servers on a local cluster,
    /// where Endpoints may not hold loopback addresses.
    pub service_map: Arc<std::collections::HashMap<(String, String), std::net::SocketAddr>>,
    /// API Priority and Fairness (`--enable-priority-and-fairness`); `None`: off.
    pub apf: Option<Arc<apf::Apf>>,
    /// The HTTPS clients of webhooks and extension servers, kept so that calls reuse
    /// their connections.
    pub clients: Arc<webhook::Clients>,
    /// Which admission configuration `cache` holds any of.
    pub configured: Arc<admission::Configured>,
    /// Start-up work `/readyz` waits for.
    pub start_hooks: Arc<start_hooks::StartHooks>,
}

impl RestState {
    /// A state with the default request timeout.
    pub fn new(cluster: Cluster, cache: Arc<WatchCache>, clock: Arc<dyn Clock>, entropy: Arc<dyn Entropy>) -> Self {
        RestState {
            configured: Arc::new(admission::Configured::new(&cache)),
            metrics: Arc::new(metrics::Metrics::new(cluster.counters())),
            cluster,
            cache,
            clock,
            entropy,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            custom: Arc::new(CustomResources::default()),
            auth: Arc::new(auth::Authenticator::allow_all()),
            authorization: authz::Authorization::AlwaysAllow,
            chaos: None,
            pools: Default::default(),
            admission: Default::default(),
            quota_charging: Default::default(),
            audit: None,
            proxy_identity: None,
            aggregated: Default::default(),
            aggregated_openapi: Default::default(),
            service_map: Default::default(),
            apf: Some(Arc::default()),
            clients: Default::default(),
            start_hooks: Default::default(),
        }
    }
}

/// The whole REST API as one router.
pub fn router(state: RestState) -> Router {
    router_with(state, Router::new())
}

/// The REST API and `extra` routes (the node's own endpoints) behind the same
/// authentication, limits and metrics.
pub fn router_with(state: RestState, extra: Router) -> Router {
    let rbac = state.authorization == authz::Authorization::Rbac;
    let service_account_tokens = state.auth.service_account_tokens().is_some();
    let chaos = state.chaos.clone();
    let state = Arc::new(state);
    let api = Router::new()
        .route("/metrics", get(metrics::serve))
        .route("/version", get(discovery::version))
        .route("/version/", get(discovery::version))
        .route("/healthz", get(discovery::healthy))
        .route("/livez", get(discovery::healthy))
        .route("/readyz", get(discovery::ready))
        .route("/openapi/v3", get(openapi::index))
        .route("/openapi/v3/{*gv}", get(openapi::group_version))
        .route("/openapi/v2", get(openapi::swagger))
        .route("/api", get(discovery::api))
        .route("/api/", get(discovery::api))
        .route("/apis", get(discovery::apis))
        .route("/apis/", get(discovery::apis))
        .route("/api/v1", get(discovery::core_resources))
        .route("/api/v1/", get(discovery::core_resources))
        .route("/apis/{group}", get(discovery::group))
        .route("/apis/{group}/", get(discovery::group))
        .route("/apis/{group}/{version}", get(discovery::group_resources))
        .route("/apis/{group}/{version}/", get(discovery::group_resources))
        .route("/.well-known/openid-configuration", get(sa_token::openid_configuration))
        .route("/.well-known/openid-configuration/", get(sa_token::openid_configuration))
        .route("/openid/v1/jwks", get(sa_token::openid_keyset))
        .route("/openid/v1/jwks/", get(sa_token::openid_keyset))
        .route("/api/v1/{*rest}", axum::routing::any(route::dispatch))
        .route("/apis/{group}/{version}/{*rest}", axum::routing::any(route::dispatch))
        .method_not_allowed_fallback(error::method_not_allowed)
        .fallback(error::path_not_found)
        // Shared, not copied: axum hands every request its own clone of the state.
        .with_state(state.clone())
        .layer(axum::middleware::from_fn(protobuf::answer_in_protobuf))
        .merge(extra);
    // With AlwaysAllow there is nothing to decide: no layer, no cost.
    let api = if rbac { api.layer(axum::middleware::from_fn_with_state(state.clone(), authz::authorize)) } else { api };
    // Service account bearer tokens are confirmed against this node's state before they
    // are authorized; without such tokens configured there is nothing to confirm.
    let api = if service_account_tokens {
        api.layer(axum::middleware::from_fn_with_state(state.clone(), sa_token::confirm))
    } else {
        api
    };
    // Without chaos mode there is nothing to inject: no layer, no cost. Inside
    // authentication, so an injected error never hides a 401.
    let api = match chaos {
        Some(injector) => api.layer(axum::middleware::from_fn_with_state(injector, chaos::inject)),
        None => api,
    };
    api.layer(CompressionLayer::new().gzip(true).no_br().no_deflate().no_zstd().compress_when(LargeBodies))
        // Outermost: every request gets its id, name and user first, and is counted and
        // logged as answered.
        .layer(axum::middleware::from_fn_with_state(state, front::serve))
}

/// Responses at least this large are gzipped for clients that accept it, as
/// kube-apiserver does (its threshold is 128 KiB).
pub const COMPRESS_ABOVE: u64 = 128 * 1024;

/// Compress only complete bodies of known size above [`COMPRESS_ABOVE`]: watch streams
/// (size unknown) stay uncompressed so every event is flushed as it comes.
#[derive(Debug, Clone, Copy)]
struct LargeBodies;

impl Predicate for LargeBodies {
    fn should_compress<B: axum::body::HttpBody>(&self, response: &http::Response<B>) -> bool {
        response.body().size_hint().exact().is_some_and(|n| n >= COMPRESS_ABOVE)
    }
}
