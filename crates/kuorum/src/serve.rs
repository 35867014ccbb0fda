//! `kuorum serve`: one node, with production seams: TCP listeners and dialer (TLS on the
//! REST port, mutual TLS between peers), the system clock, OS-seeded entropy; in
//! `--data-dir`, the Raft log in segment files (`log/`) and the objects in RocksDB
//! (`objects/`).
//!
//! A node serves TLS and refuses anonymous requests unless told otherwise: it will not
//! start without `--tls-cert-file` and `--tls-private-key-file`, or `--insecure` (plain
//! HTTP, every request anonymous and allowed: development and tests only).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use futures::StreamExt;
use kuorum_api::kinds::allocation::Pools;
use kuorum_api::seams::{SplitMix64, SystemClock};
use kuorum_node::apiserver_endpoints::Advertised;
use kuorum_node::background_cpu::BackgroundCpu;
use kuorum_node::http_server::{raise_open_files_limit, ConnectionCaps, HttpLimits};
use kuorum_node::{start_node, NodeConfig, NodeSeams};
use kuorum_raft::{Dialer, PeerIo, RaftTiming, TcpDialer, DEFAULT_ELECTION_TIMEOUT, DEFAULT_HEARTBEAT};
use kuorum_rest::auth::Authenticator;
use kuorum_rest::authz::Authorization;
use kuorum_rest::sa_token::{ServiceAccountConfig, ServiceAccountTokens};
use kuorum_store_file::FileLogEngine;
use kuorum_store_rocks::RocksStore;
use tokio_stream::wrappers::TcpListenerStream;

/// The default of `--max-watches-per-user`.
pub const DEFAULT_MAX_WATCHES_PER_USER: usize = 1000;

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// This node's id (a positive integer, unique in the cluster).
    #[arg(long)]
    pub id: u64,
    /// Address for the Kubernetes REST API.
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: String,
    /// Address for node-to-node RPC.
    #[arg(long, default_value = "127.0.0.1:6543")]
    pub peer_listen: String,
    /// Every member as ID=PEERADDR, comma-separated, this node included.
    #[arg(long, value_delimiter = ',')]
    pub peers: Vec<String>,
    /// Where this node keeps its Raft log and objects.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// Deadline of one request's write or consistent read, in seconds.
    #[arg(long, default_value_t = 60)]
    pub request_timeout_secs: u64,
    /// History older than this many seconds is compacted (exact reads, continue tokens
    /// and watch resumes older than it get 410 Gone).
    #[arg(long, default_value_t = 300)]
    pub compaction_window_secs: u64,
    /// How often, in seconds, this node hashes its state at the latest compaction point and
    /// compares it with its peers' (etcd's corruption check); a node outvoted by an
    /// agreeing majority stops serving. Each check scans the node's state once. 0: never.
    #[arg(long, default_value_t = 300)]
    pub consistency_check_secs: u64,
    /// Events one watcher may have queued before it is cut off as too slow (its client
    /// resumes); also how many events back a watch can start before it gets 410 and
    /// relists. Each queued event costs the node 16 bytes.
    #[arg(long, default_value_t = 4096)]
    pub watch_queue_events: usize,
    /// Bytes the watch cache's history window may keep beyond the current objects (the
    /// versions updates replaced, deleted objects, the events themselves); past it the
    /// oldest events fall out, and a watch from before them gets 410 and relists.
    #[arg(long, default_value_t = kuorum_watch::cache::DEFAULT_MAX_EVENT_BYTES)]
    pub watch_history_bytes: usize,
    /// Bytes of RocksDB memtables (writes not yet flushed to table files), all column
    /// families together; past it they are flushed.
    #[arg(long, default_value_t = kuorum_store_rocks::MemoryBudget::default().memtables)]
    pub storage_memtable_bytes: usize,
    /// Bytes of RocksDB's block cache (table file blocks read), one for all column
    /// families. Reads are served by the watch cache; RocksDB is read for a create's
    /// existence check, history (paged LISTs at an old resourceVersion) and snapshots.
    #[arg(long, default_value_t = kuorum_store_rocks::MemoryBudget::default().block_cache)]
    pub storage_block_cache_bytes: usize,
    /// Applied entries between two Raft snapshots (etcd's flag and default). A snapshot is
    /// a RocksDB checkpoint in the data directory; after it, the log it covers (less
    /// --snapshot-catchup-entries) is purged.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub snapshot_count: u64,
    /// Log entries kept behind the latest snapshot, so a follower that lags by fewer
    /// catches up from the log instead of a whole snapshot (etcd's default).
    #[arg(long, default_value_t = 5_000)]
    pub snapshot_catchup_entries: u64,
    /// Milliseconds between the leader's heartbeats to each follower (etcd's flag).
    #[arg(long, default_value_t = DEFAULT_HEARTBEAT.as_millis() as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub heartbeat_interval: u64,
    /// Milliseconds of silence from the leader after which followers elect a new one
    /// (etcd's flag and default). A follower stands for election after 1 to 5/3 times
    /// this (etcd's: 1 to 2 times) and votes for another after 5/6 of it, so with the
    /// default a dead leader is replaced about 1.2 s after its last heartbeat. Must be
    /// more than twice --heartbeat-interval plus 20 ms.
    #[arg(long, default_value_t = DEFAULT_ELECTION_TIMEOUT.as_millis() as u64)]
    pub election_timeout: u64,
    /// Non-mutating requests served at once; more get 429 with Retry-After (0: no limit).
    /// Watches do not count. kube-apiserver's flag and default.
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: usize,
    /// Mutating requests served at once; more get 429 with Retry-After (0: no limit).
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,
    /// API Priority and Fairness: requests are classified by the FlowSchemas and wait
    /// for a seat of their priority level, sharing --max-requests-inflight +
    /// --max-mutating-requests-inflight (kube's flag and default).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_priority_and_fairness: bool,
    /// Join a running cluster instead of bootstrapping one from --peers: start with an
    /// empty --data-dir, then add this node with `kuorum member add`.
    #[arg(long)]
    pub join: bool,
    /// Act as a release that reads at most this data format (1: a release before formats
    /// were numbered): for upgrade tests only.
    #[arg(long, hide = true, default_value_t = kuorum_raft::format::DATA_FORMAT,
          value_parser = clap::value_parser!(u32).range(1..=kuorum_raft::format::DATA_FORMAT as i64))]
    pub max_data_format: u32,
    /// The REST port's certificate (PEM; the chain, leaf first).
    #[arg(long)]
    pub tls_cert_file: Option<PathBuf>,
    /// The REST port's private key (PEM).
    #[arg(long)]
    pub tls_private_key_file: Option<PathBuf>,
    /// CA that signs client certificates: a client certificate it verifies names the user
    /// (subject CN) and groups (subject O), as kube-apiserver reads them.
    #[arg(long)]
    pub client_ca_file: Option<PathBuf>,
    /// Static bearer tokens, kube-apiserver's format: `token,user,uid,"group1,group2"`.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,
    /// The private key (PEM: RSA, or ECDSA P-256/P-384) service-account tokens are signed
    /// with (`serviceaccounts/token`); every node of a cluster needs the same one.
    /// `kuorum up` and `kuorum certs` make `sa.key`. Without it, tokens are not issued.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,
    /// More keys (PEM) whose service-account tokens are accepted (a key being rotated
    /// out), repeatable.
    #[arg(long = "service-account-key-file")]
    pub service_account_key_files: Vec<PathBuf>,
    /// The issuer written into service-account tokens (the first) and accepted (all),
    /// repeatable; required with --service-account-signing-key-file.
    #[arg(long = "service-account-issuer")]
    pub service_account_issuers: Vec<String>,
    /// Audiences a token must name to authenticate here (default: the issuers).
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,
    /// The longest lifetime a requested token gets, in seconds (0: no cap).
    #[arg(long, default_value_t = 0)]
    pub service_account_max_token_expiration: i64,
    /// Where the OIDC discovery document says the signing keys are (default:
    /// `https://<--listen>/openid/v1/jwks`).
    #[arg(long)]
    pub service_account_jwks_uri: Option<String>,
    /// The IPv4 range Service cluster IPs are allocated from (kube's flag and default);
    /// the same on every node of a cluster.
    #[arg(long, default_value = kuorum_api::kinds::allocation::DEFAULT_SERVICE_CIDR)]
    pub service_cluster_ip_range: String,
    /// The ports Service node ports are allocated from, `FIRST-LAST` (kube's flag and
    /// default); the same on every node of a cluster.
    #[arg(long, default_value = kuorum_api::kinds::allocation::DEFAULT_NODE_PORTS)]
    pub service_node_port_range: String,
    /// Admission plugins to turn off, by kube's names, comma-separated (kube's flag); all
    /// of kuorum's run by default (docs/conformance.md lists them).
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,
    /// Admission plugins to turn on besides the defaults (kube's flag). Every plugin
    /// kuorum has is on by default, so this only checks the names.
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,
    /// kube's audit policy (`audit.k8s.io/v1` Policy, YAML or JSON): which requests this
    /// node writes to its audit log, at which level. Without it, no audit log.
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,
    /// Where this node writes its audit events, one JSON line each (`-`: standard
    /// output). Needs --audit-policy-file.
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,
    /// Megabytes the audit log may reach before it is rotated (kube's flag; 0: never).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxsize: u64,
    /// Rotated audit logs kept (kube's flag; 0: all).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxbackup: usize,
    /// Days a rotated audit log is kept (kube's flag; 0: no limit).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxage: u64,
    /// The most bytes an audit event may take with its request and response objects;
    /// larger objects are left out and the event marked truncated (kube's flag and
    /// default).
    #[arg(long, default_value_t = 102_400)]
    pub audit_log_truncate_max_event_size: usize,
    /// The client certificate (PEM) this node presents to extension API servers it
    /// proxies to (APIServices), so they trust the `X-Remote-*` headers (kube's flag).
    #[arg(long, requires = "proxy_client_key_file")]
    pub proxy_client_cert_file: Option<PathBuf>,
    /// Services reached at a fixed address rather than through their Endpoints, for
    /// webhooks and extension API servers on a local cluster (whose Endpoints may not
    /// hold loopback addresses): `<namespace>/<name>=<host>:<port>`, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub webhook_service_map: Vec<String>,
    /// CA that signs authenticating proxies' client certificates (an aggregating API
    /// server's `--proxy-client-cert-file`): a request over a connection with one is
    /// the user its --requestheader-username-headers name (kube's flag). Published, with
    /// --client-ca-file and the header names, in the ConfigMap
    /// `kube-system/extension-apiserver-authentication`, where extension API servers
    /// read them.
    #[arg(long)]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// Common names a proxy's certificate may have (empty: any the CA signed).
    #[arg(long, value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// Headers naming the user, first non-empty wins (kubeadm's value is the default).
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-User")]
    pub requestheader_username_headers: Vec<String>,
    /// Headers naming the groups.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Group")]
    pub requestheader_group_headers: Vec<String>,
    /// Header prefixes of the user's extra values.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Extra-")]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// Headers naming the user's uid.
    #[arg(long, value_delimiter = ',', default_value = "X-Remote-Uid")]
    pub requestheader_uid_headers: Vec<String>,
    /// The private key (PEM) of --proxy-client-cert-file.
    #[arg(long, requires = "proxy_client_cert_file")]
    pub proxy_client_key_file: Option<PathBuf>,
    /// The address other members and pods reach this node's REST API at, listed in the
    /// `kubernetes` Service's endpoints (default: --listen's, or this host's outbound
    /// address when --listen is a wildcard).
    #[arg(long)]
    pub advertise_address: Option<std::net::IpAddr>,
    /// Serve requests without credentials as `system:anonymous` instead of refusing them.
    #[arg(long)]
    pub anonymous_auth: bool,
    /// Watches one user may hold open on this node; one more gets 429 (0: no cap, as
    /// kube-apiserver, which has priority and fairness instead). Anonymous requests count
    /// as one user. 1,000 is several times what one controller-manager's informers hold,
    /// and bounds what one user's unread watches can hold on a node (about 115 KB each).
    /// `--insecure` serves everyone as one user and has no cap.
    #[arg(long, default_value_t = DEFAULT_MAX_WATCHES_PER_USER)]
    pub max_watches_per_user: usize,
    /// Peer RPC over mutual TLS: this node's certificate, key, and the CA that signs every
    /// member's. All three or none.
    #[arg(long)]
    pub peer_cert_file: Option<PathBuf>,
    #[arg(long)]
    pub peer_key_file: Option<PathBuf>,
    #[arg(long)]
    pub peer_ca_file: Option<PathBuf>,
    /// How authenticated requests are authorized: `RBAC` (Roles, ClusterRoles and their
    /// bindings; `system:masters` may do anything) or `AlwaysAllow`. `--insecure` implies
    /// `AlwaysAllow`.
    #[arg(long, value_enum, default_value = "RBAC")]
    pub authorization_mode: AuthorizationMode,
    /// Plain HTTP on the REST port and no authentication: every request is served,
    /// anonymously. For development and tests on a private machine only.
    #[arg(long)]
    pub insecure: bool,
    /// Serve `/kuorum/v1/chaos`, with which an admin injects faults into this node
    /// (`kuorum chaos`): errors, latency, expired or cut watches, a paused apply. Off
    /// unless given; never on a cluster users depend on.
    #[arg(long)]
    pub enable_chaos: bool,
    /// Seconds an HTTP/1.1 client has to send a request's line and headers once the server
    /// waits for them (kube-apiserver's ReadHeaderTimeout); slower ones are disconnected.
    /// hyper starts this clock when it starts waiting, so it also closes an HTTP/1.1
    /// connection idle this long between requests.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..))]
    pub read_header_timeout_secs: u64,
    /// Seconds a connection (HTTP/1.1 or h2) may have no request in flight before it is
    /// closed (kube-apiserver's IdleTimeout). A watch is a request in flight.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u64).range(1..))]
    pub idle_timeout_secs: u64,
    /// Seconds a REST client has to complete its TLS handshake.
    #[arg(long, default_value_t = crate::tls::HANDSHAKE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub tls_handshake_timeout_secs: u64,
    /// REST connections open at once (handshakes under way included); more are closed at
    /// accept. Default: the open-files limit (raised to its hard limit at start, as Go
    /// programs do) less 1,024 descriptors (or half the limit, if that is less) kept for
    /// RocksDB, the Raft log and the peers.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// REST connections one source IP may hold open (0: no per-source cap).
    #[arg(long, default_value_t = kuorum_node::http_server::DEFAULT_MAX_CONNECTIONS_PER_SOURCE)]
    pub max_connections_per_source: usize,
    /// Of --max-connections, the slots only connections presenting a verified client
    /// certificate may take; a quarter of them also take anonymous connections that may
    /// only ask for /readyz, /livez or /healthz. Default: a tenth of --max-connections,
    /// 8 to 1,024.
    #[arg(long)]
    pub reserved_connections: Option<usize>,
    /// Bytes of request line and headers a request may have; more gets 431 (kube-apiserver's
    /// MaxHeaderBytes).
    #[arg(long, default_value_t = kuorum_node::http_server::DEFAULT_MAX_HEADER_BYTES as u64, value_parser = clap::value_parser!(u64).range(8192..=(64 << 20)))]
    pub max_header_bytes: u64,
    /// Bytes a request's URI (path and query) may have; more gets 414. At most 65,000
    /// (hyper refuses longer URIs itself, without a Status).
    #[arg(long, default_value_t = kuorum_node::http_server::DEFAULT_MAX_URI_BYTES as u64, value_parser = clap::value_parser!(u64).range(256..=65_000))]
    pub max_uri_bytes: u64,
    /// Threads that run the node's requests, replication and apply (the tokio workers;
    /// blocking work such as fsync has its own threads). Default: the CPUs this process
    /// may use (its affinity and cgroup CPU quota). Give fewer when nodes share a
    /// machine: `kuorum up` gives each of its N nodes a 1/N share.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
    /// The `nice` value (1 to 19; 0: off) of the threads that send wide responses: a
    /// request that takes more than one seat of an API Priority and Fairness level (a
    /// LIST of more than 100 objects) is sent at this lower CPU priority, so that on a
    /// busy machine the one-seat requests beside it are not kept waiting for a core.
    #[arg(long, default_value_t = kuorum_node::background_cpu::DEFAULT_NICE, value_parser = clap::value_parser!(i32).range(0..=19))]
    pub background_nice: i32,
}

/// kube-apiserver's `--authorization-mode` values kuorum has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthorizationMode {
    #[value(name = "RBAC")]
    Rbac,
    #[value(name = "AlwaysAllow")]
    AlwaysAllow,
}

/// What authenticated users may do.
fn authorization(args: &ServeArgs) -> Authorization {
    match (args.insecure, args.authorization_mode) {
        (false, AuthorizationMode::Rbac) => Authorization::Rbac,
        _ => Authorization::AlwaysAllow,
    }
}

/// The service-account token issuer and verifier the flags describe, if any.
fn service_account_tokens(args: &ServeArgs) -> anyhow::Result<Option<ServiceAccountTokens>> {
    let Some(signing) = &args.service_account_signing_key_file else {
        if !args.service_account_issuers.is_empty() || !args.service_account_key_files.is_empty() {
            bail!("--service-account-issuer and --service-account-key-file need --service-account-signing-key-file");
        }
        return Ok(None);
    };
    if args.service_account_issuers.is_empty() {
        bail!("--service-account-signing-key-file needs --service-account-issuer");
    }
    let read = |p: &PathBuf| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()));
    let config = ServiceAccountConfig {
        signing_key_pem: read(signing)?,
        verification_key_pems: args.service_account_key_files.iter().map(read).collect::<anyhow::Result<_>>()?,
        issuers: args.service_account_issuers.clone(),
        api_audiences: args.api_audiences.clone(),
        max_expiration_seconds: args.service_account_max_token_expiration,
        extend_expiration: true,
        jwks_uri: args
            .service_account_jwks_uri
            .clone()
            .unwrap_or_else(|| format!("https://{}/openid/v1/jwks", args.listen)),
    };
    ServiceAccountTokens::new(config).map(Some).map_err(|e| anyhow::anyhow!("service-account tokens: {e}"))
}

/// The REST address the `kubernetes` Service lists for this node.
fn advertised(args: &ServeArgs) -> anyhow::Result<Advertised> {
    use std::net::ToSocketAddrs;
    let listen = args
        .listen
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .with_context(|| format!("--listen {} is not an address and port", args.listen))?;
    let ip = match args.advertise_address {
        Some(ip) => ip,
        None if !listen.ip().is_unspecified() => listen.ip(),
        // The address this host sends from: a UDP "connection" only picks a route.
        None => std::net::UdpSocket::bind("0.0.0.0:0")
            .and_then(|s| s.connect("10.255.255.255:1").map(|_| s))
            .and_then(|s| s.local_addr())
            .map(|a| a.ip())
            .unwrap_or(std::net::IpAddr::from([127, 0, 0, 1])),
    };
    Ok(Advertised { ip: ip.to_string(), port: listen.port() })
}

/// What the REST port speaks and who it serves.
fn rest_security(args: &ServeArgs) -> anyhow::Result<(Option<crate::tls::RestTls>, Authenticator)> {
    match (&args.tls_cert_file, &args.tls_private_key_file, args.insecure) {
        (Some(cert), Some(key), false) => {
            let front_proxy =
                args.requestheader_client_ca_file.as_deref().map(|ca| (ca, args.requestheader_allowed_names.clone()));
            let tls = crate::tls::rest_server_config(cert, key, args.client_ca_file.as_deref(), front_proxy)?;
            let tokens = match &args.token_auth_file {
                Some(path) => {
                    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
                    Authenticator::parse_token_file(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
                }
                None => Default::default(),
            };
            if args.client_ca_file.is_none() && tokens.is_empty() && !args.anonymous_auth {
                bail!("no way to authenticate: give --client-ca-file or --token-auth-file (or --anonymous-auth)");
            }
            let mut authenticator =
                Authenticator::new(tokens, args.anonymous_auth).with_watch_cap(args.max_watches_per_user);
            if args.requestheader_client_ca_file.is_some() {
                authenticator = authenticator.with_request_header(request_header(args));
            }
            let authenticator = match service_account_tokens(args)? {
                Some(sa) => authenticator.with_service_account_tokens(Arc::new(sa)),
                None => authenticator,
            };
            Ok((Some(tls), authenticator))
        }
        (None, None, true) => Ok((None, Authenticator::allow_all())),
        (_, _, true) => bail!("--insecure serves plain HTTP: it cannot be combined with --tls-cert-file"),
        (Some(_), None, false) | (None, Some(_), false) => {
            bail!("--tls-cert-file and --tls-private-key-file go together")
        }
        (None, None, false) => bail!(
            "refusing to serve without TLS: give --tls-cert-file and --tls-private-key-file \
             (`kuorum certs` makes them), or --insecure for plain HTTP with no authentication"
        ),
    }
}

/// The headers authenticating proxies name the user in (`--requestheader-*`).
fn request_header(args: &ServeArgs) -> kuorum_rest::auth::RequestHeader {
    let names = |v: &[String]| v.iter().map(|h| h.trim().to_string()).filter(|h| !h.is_empty()).collect();
    kuorum_rest::auth::RequestHeader {
        username: names(&args.requestheader_username_headers),
        group: names(&args.requestheader_group_headers),
        extra_prefixes: names(&args.requestheader_extra_headers_prefix),
        uid: names(&args.requestheader_uid_headers),
    }
}

/// What kube-apiserver publishes in `kube-system/extension-apiserver-authentication` for
/// extension API servers: `client-ca-file`, and with a front-proxy CA the
/// `requestheader-*` keys (lists as JSON arrays).
fn authentication_info(args: &ServeArgs) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let mut data = std::collections::BTreeMap::new();
    let read = |p: &std::path::Path| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()));
    if let Some(ca) = &args.client_ca_file {
        data.insert("client-ca-file".to_string(), read(ca)?);
    }
    if let Some(ca) = &args.requestheader_client_ca_file {
        let h = request_header(args);
        let list = |v: &[String]| serde_json::to_string(v).unwrap_or_default();
        data.insert("requestheader-client-ca-file".into(), read(ca)?);
        data.insert("requestheader-allowed-names".into(), list(&args.requestheader_allowed_names));
        data.insert("requestheader-username-headers".into(), list(&h.username));
        data.insert("requestheader-group-headers".into(), list(&h.group));
        data.insert("requestheader-extra-headers-prefix".into(), list(&h.extra_prefixes));
        data.insert("requestheader-uid-headers".into(), list(&h.uid));
    }
    Ok(data)
}

/// How peers reach each other: plain TCP, or mutual TLS.
fn peer_security(args: &ServeArgs) -> anyhow::Result<Option<(Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>)>> {
    match (&args.peer_cert_file, &args.peer_key_file, &args.peer_ca_file) {
        (Some(cert), Some(key), Some(ca)) => {
            Ok(Some((crate::tls::peer_server_config(cert, key, ca)?, crate::tls::peer_client_config(cert, key, ca)?)))
        }
        (None, None, None) if args.insecure => Ok(None),
        (None, None, None) => bail!(
            "peer RPC needs mutual TLS: give --peer-cert-file, --peer-key-file and --peer-ca-file \
             (or --insecure)"
        ),
        _ => bail!("--peer-cert-file, --peer-key-file and --peer-ca-file go together"),
    }
}

pub(crate) fn parse_peers(peers: &[String]) -> anyhow::Result<BTreeMap<u64, String>> {
    let mut out = BTreeMap::new();
    for p in peers {
        let (id, addr) = p.split_once('=').with_context(|| format!("peer {p:?} is not ID=ADDR"))?;
        let id: u64 = id.trim().parse().with_context(|| format!("peer id in {p:?}"))?;
        if id == 0 {
            bail!("node ids start at 1");
        }
        out.insert(id, addr.trim().to_string());
    }
    Ok(out)
}

/// The threads wide responses are sent from, as many as the node's workers.
fn background_cpu(args: &ServeArgs) -> anyhow::Result<Option<BackgroundCpu>> {
    if args.background_nice == 0 || !args.enable_priority_and_fairness {
        return Ok(None);
    }
    let threads = match args.worker_threads {
        Some(n) => n.into(),
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let cpu = BackgroundCpu::start(threads, args.background_nice).context("--background-nice")?;
    Ok(Some(cpu))
}

/// What a REST connection may cost, from the flags; `open_files` is the process's limit.
fn http_limits(args: &ServeArgs, open_files: u64) -> anyhow::Result<HttpLimits> {
    let mut caps = ConnectionCaps::for_open_files(open_files, args.max_connections_per_source);
    if let Some(total) = args.max_connections {
        caps.total = usize::try_from(total).unwrap_or(usize::MAX);
        caps.reserved = ConnectionCaps::default_reserve(caps.total);
    }
    if let Some(reserved) = args.reserved_connections {
        if reserved >= caps.total {
            bail!("--reserved-connections ({reserved}) must be less than --max-connections ({})", caps.total);
        }
        caps.reserved = reserved;
    }
    if caps.total as u64 > open_files {
        tracing::warn!(
            max_connections = caps.total,
            open_files,
            "--max-connections is above the open-files limit: accepts will fail before the cap is reached"
        );
    }
    Ok(HttpLimits {
        header_read_timeout: Duration::from_secs(args.read_header_timeout_secs),
        idle_timeout: Duration::from_secs(args.idle_timeout_secs),
        max_header_bytes: args.max_header_bytes as usize,
        max_uri_bytes: args.max_uri_bytes as usize,
        connections: caps,
    })
}

/// The Raft timing the flags ask for (etcd's two flags, mapped as
/// [`RaftTiming::election_range`] explains).
fn raft_timing(args: &ServeArgs) -> anyhow::Result<RaftTiming> {
    let heartbeat = Duration::from_millis(args.heartbeat_interval);
    let (election_min, election_max) =
        RaftTiming::election_range(heartbeat, Duration::from_millis(args.election_timeout))
            .map_err(|reason| anyhow::anyhow!("--election-timeout and --heartbeat-interval: {reason}"))?;
    Ok(RaftTiming {
        heartbeat,
        election_min,
        election_max,
        snapshot_every: args.snapshot_count,
        logs_to_keep: args.snapshot_catchup_entries,
        ..RaftTiming::default()
    })
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let members = parse_peers(&args.peers)?;
    if !members.contains_key(&args.id) {
        bail!("--peers must include this node (id {})", args.id);
    }
    let timing = raft_timing(&args)?;
    let http = http_limits(&args, raise_open_files_limit())?;
    std::fs::create_dir_all(&args.data_dir).with_context(|| format!("creating {}", args.data_dir.display()))?;
    if args.data_dir.join("CURRENT").exists() {
        bail!(
            "{} holds a RocksDB database from an older kuorum, which kept the Raft log in it; \
             this version keeps the log in {}/log and the objects in {}/objects: start from an empty directory",
            args.data_dir.display(),
            args.data_dir.display(),
            args.data_dir.display()
        );
    }
    crate::data_dir::claim(&args.data_dir, args.max_data_format)?;
    let budget = kuorum_store_rocks::MemoryBudget {
        memtables: args.storage_memtable_bytes,
        block_cache: args.storage_block_cache_bytes,
    };
    let objects =
        RocksStore::open_within(&args.data_dir.join("objects"), budget).map_err(|e| anyhow::anyhow!("{e}"))?;
    let log = FileLogEngine::open(&args.data_dir.join("log")).map_err(|e| anyhow::anyhow!("{e}"))?;

    let (rest_tls, auth) = rest_security(&args)?;
    let peer_tls = peer_security(&args)?;

    let rest = tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("binding {}", args.listen))?;
    let rest = crate::tls::RestListener::new(
        rest,
        rest_tls,
        http.connections,
        Duration::from_secs(args.tls_handshake_timeout_secs),
    )?;
    let peer = tokio::net::TcpListener::bind(&args.peer_listen)
        .await
        .with_context(|| format!("binding {}", args.peer_listen))?;
    let (peer_incoming, dialer): (_, Arc<dyn Dialer>) = match peer_tls {
        None => (
            TcpListenerStream::new(peer)
                .map(|r| {
                    r.map(|s| {
                        let _ = s.set_nodelay(true);
                        Box::new(s) as Box<dyn PeerIo>
                    })
                })
                .boxed(),
            Arc::new(TcpDialer),
        ),
        Some((server, client)) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(server);
            // Handshakes run side by side; one that fails drops only its connection.
            let incoming = TcpListenerStream::new(peer)
                .filter_map(|r| futures::future::ready(r.ok()))
                .map(move |s| crate::tls::accept_peer(acceptor.clone(), s))
                .buffer_unordered(64)
                .filter_map(|r| {
                    futures::future::ready(match r {
                        Ok(io) => Some(Ok(io)),
                        Err(e) => {
                            tracing::warn!("peer connection refused: {e}");
                            None
                        }
                    })
                })
                .boxed();
            (incoming, Arc::new(crate::tls::TlsDialer::new(client)))
        }
    };

    let cfg = NodeConfig {
        request_timeout: Duration::from_secs(args.request_timeout_secs),
        compaction_window: Duration::from_secs(args.compaction_window_secs),
        consistency_check_every: (args.consistency_check_secs > 0)
            .then(|| Duration::from_secs(args.consistency_check_secs)),
        max_requests_inflight: args.max_requests_inflight,
        max_mutating_requests_inflight: args.max_mutating_requests_inflight,
        priority_and_fairness: args.enable_priority_and_fairness,
        join: args.join,
        max_data_format: args.max_data_format,
        auth: Arc::new(auth),
        authorization: authorization(&args),
        chaos: args.enable_chaos,
        timing,
        http,
        advertise: Some(advertised(&args)?),
        pools: Pools::new(&args.service_cluster_ip_range, &args.service_node_port_range)
            .map_err(|e| anyhow::anyhow!("--service-cluster-ip-range / --service-node-port-range: {e}"))?,
        admission: admission_plugins(&args)?,
        audit: audit_log(&args)?,
        proxy_identity: proxy_identity(&args)?,
        authentication_info: authentication_info(&args)?,
        service_map: service_map(&args)?,
        background_cpu: background_cpu(&args)?,
        cache: kuorum_watch::CacheConfig {
            watcher_queue: args.watch_queue_events.max(1),
            max_event_bytes: args.watch_history_bytes,
            ..kuorum_watch::CacheConfig::default()
        },
        ..NodeConfig::new(args.id, members)
    };
    let seams = NodeSeams {
        rest_listener: rest,
        peer_incoming,
        dialer,
        clock: Arc::new(SystemClock),
        entropy: Arc::new(SplitMix64::from_os()),
        log_engine: Arc::new(log),
        object_engine: Arc::new(objects.object_engine()),
        apply_tap: None,
    };
    let node = start_node(cfg, seams).await?;
    tracing::info!(
        id = args.id,
        rest = %args.listen,
        peer = %args.peer_listen,
        tls = !args.insecure,
        "kuorum node serving"
    );

    tokio::select! {
        _ = shutdown_signal() => {}
        why = node.stopped() => {
            // Exit non-zero, so systemd or Kubernetes restarts the node once it can work.
            tracing::error!("replication stopped: {why}; exiting");
            node.shutdown().await;
            bail!("replication stopped: {why}");
        }
    }
    tracing::info!("shutting down");
    node.shutdown().await;
    Ok(())
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn args(extra: &[&str]) -> ServeArgs {
        let base = ["kuorum", "--id", "1", "--peers", "1=127.0.0.1:1", "--data-dir", "/nonexistent", "--insecure"];
        Cli::try_parse_from(base.iter().chain(extra)).expect("flags parse").serve
    }

    #[test]
    fn worker_threads_default_to_unset_and_refuse_zero() {
        assert_eq!(args(&[]).worker_threads, None);
        assert_eq!(args(&["--worker-threads", "1"]).worker_threads, Some(1));
        let base = ["kuorum", "--id", "1", "--peers", "1=127.0.0.1:1", "--data-dir", "/x", "--worker-threads", "0"];
        assert!(Cli::try_parse_from(base).is_err());
    }

    #[test]
    fn connection_limits_default_to_kube_apiservers_and_follow_the_open_files_limit() {
        let l = http_limits(&args(&[]), 20_000).unwrap();
        assert_eq!(
            l,
            HttpLimits { connections: ConnectionCaps::for_open_files(20_000, 4096), ..HttpLimits::default() }
        );
        assert_eq!((l.connections.total, l.connections.reserved), (18_976, 1024));
        assert_eq!((l.header_read_timeout, l.idle_timeout), (Duration::from_secs(32), Duration::from_secs(90)));
        let l = http_limits(&args(&["--max-connections", "100", "--max-connections-per-source", "0"]), 20_000).unwrap();
        assert_eq!(l.connections, ConnectionCaps { per_source: 0, total: 100, reserved: 10 });
        let l = http_limits(&args(&["--max-connections", "100", "--reserved-connections", "0"]), 20_000).unwrap();
        assert_eq!(l.connections.reserved, 0);
        assert!(http_limits(&args(&["--max-connections", "100", "--reserved-connections", "100"]), 20_000).is_err());
        let base = ["kuorum", "--id", "1", "--peers", "1=127.0.0.1:1", "--data-dir", "/x", "--max-uri-bytes", "70000"];
        assert!(Cli::try_parse_from(base).is_err(), "hyper refuses such URIs itself");
    }

    #[test]
    fn default_timing_is_the_raft_crates_default() {
        let t = raft_timing(&args(&[])).unwrap();
        let d = RaftTiming::default();
        assert_eq!((t.heartbeat, t.election_min, t.election_max), (d.heartbeat, d.election_min, d.election_max));
    }

    #[test]
    fn a_follower_stands_between_the_election_timeout_and_five_thirds_of_it() {
        let t = raft_timing(&args(&["--heartbeat-interval", "300", "--election-timeout", "6000"])).unwrap();
        assert_eq!(t.heartbeat, Duration::from_millis(300));
        // Lease 5,000 ms plus a draw of 1,000..5,000 ms: standing 6,000..10,000 ms.
        assert_eq!(t.election_max, Duration::from_millis(5000));
        assert_eq!(t.election_min, Duration::from_millis(1000));
        assert_eq!(t.election_max + t.election_min, Duration::from_millis(6000));
        // A short timeout keeps the shortest draw above the heartbeat (openraft's rule).
        let t = raft_timing(&args(&["--heartbeat-interval", "150", "--election-timeout", "400"])).unwrap();
        assert_eq!((t.election_min, t.election_max), (Duration::from_millis(160), Duration::from_millis(240)));
    }

    #[test]
    fn an_election_timeout_too_close_to_the_heartbeat_is_refused() {
        let e = raft_timing(&args(&["--heartbeat-interval", "150", "--election-timeout", "320"])).unwrap_err();
        assert!(
            e.to_string().contains("(320 ms) must be more than twice the heartbeat interval (150 ms) plus 20 ms"),
            "{e}"
        );
        assert!(raft_timing(&args(&["--heartbeat-interval", "150", "--election-timeout", "321"])).is_ok());
    }
}

/// `--webhook-service-map`: each `<namespace>/<name>=<host>:<port>`.
fn service_map(args: &ServeArgs) -> anyhow::Result<HashMap<(String, String), std::net::SocketAddr>> {
    let mut map = HashMap::new();
    for entry in &args.webhook_service_map {
        let bad = || anyhow::anyhow!("--webhook-service-map {entry:?}: want <namespace>/<name>=<host>:<port>");
        let (service, addr) = entry.split_once('=').ok_or_else(bad)?;
        let (namespace, name) = service.split_once('/').ok_or_else(bad)?;
        let addr = std::net::ToSocketAddrs::to_socket_addrs(addr).map_err(|_| bad())?.next().ok_or_else(bad)?;
        map.insert((namespace.to_string(), name.to_string()), addr);
    }
    Ok(map)
}

/// The client identity of `--proxy-client-cert-file` and `--proxy-client-key-file`.
fn proxy_identity(args: &ServeArgs) -> anyhow::Result<Option<kuorum_rest::aggregator::ProxyIdentity>> {
    let (Some(cert), Some(key)) = (&args.proxy_client_cert_file, &args.proxy_client_key_file) else {
        return Ok(None);
    };
    let read = |p: &PathBuf| std::fs::read(p).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()));
    let identity = kuorum_rest::aggregator::proxy_identity(&read(cert)?, &read(key)?)
        .map_err(|e| anyhow::anyhow!("--proxy-client-cert-file/--proxy-client-key-file: {e}"))?;
    Ok(Some(identity))
}

/// The audit log `--audit-policy-file` and `--audit-log-*` describe, if any.
fn audit_log(args: &ServeArgs) -> anyhow::Result<Option<Arc<kuorum_rest::audit::AuditLog>>> {
    use kuorum_rest::audit::{AuditLog, LogOptions, Policy};
    let (Some(policy), Some(path)) = (&args.audit_policy_file, &args.audit_log_path) else {
        if args.audit_log_path.is_some() {
            anyhow::bail!("--audit-log-path needs --audit-policy-file");
        }
        return Ok(None);
    };
    let text = std::fs::read_to_string(policy)
        .map_err(|e| anyhow::anyhow!("--audit-policy-file {}: {e}", policy.display()))?;
    let policy = Policy::parse(&text).map_err(|e| anyhow::anyhow!("--audit-policy-file {}: {e}", policy.display()))?;
    let options = LogOptions {
        path: path.clone(),
        max_size_mb: args.audit_log_maxsize,
        max_backups: args.audit_log_maxbackup,
        max_age_days: args.audit_log_maxage,
        max_event_bytes: args.audit_log_truncate_max_event_size,
    };
    Ok(Some(Arc::new(AuditLog::open(policy, options).map_err(|e| anyhow::anyhow!("--audit-log-path: {e}"))?)))
}

/// `--disable-admission-plugins`, with `--enable-admission-plugins`' names checked too.
fn admission_plugins(args: &ServeArgs) -> anyhow::Result<kuorum_rest::admission::Plugins> {
    kuorum_rest::admission::Plugins::with_disabled(&args.enable_admission_plugins)
        .map_err(|e| anyhow::anyhow!("--enable-admission-plugins: {e}"))?;
    kuorum_rest::admission::Plugins::with_disabled(&args.disable_admission_plugins)
        .map_err(|e| anyhow::anyhow!("--disable-admission-plugins: {e}"))
}
