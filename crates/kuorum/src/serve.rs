//! `kuorum serve`: one node, with production seams: TCP listeners and dialer, the system
//! clock, OS-seeded entropy; in `--data-dir`, the Raft log in segment files (`log/`) and
//! the objects in RocksDB (`objects/`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use axum::serve::ListenerExt;
use clap::Args;
use futures::StreamExt;
use kuorum_api::seams::{SplitMix64, SystemClock};
use kuorum_node::{start_node, NodeConfig, NodeSeams};
use kuorum_raft::{PeerIo, TcpDialer};
use kuorum_store_file::FileLogEngine;
use kuorum_store_rocks::RocksStore;
use tokio_stream::wrappers::TcpListenerStream;

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
    /// Non-mutating requests served at once; more get 429 with Retry-After (0: no limit).
    /// Watches do not count. kube-apiserver's flag and default.
    #[arg(long, default_value_t = 400)]
    pub max_requests_inflight: usize,
    /// Mutating requests served at once; more get 429 with Retry-After (0: no limit).
    #[arg(long, default_value_t = 200)]
    pub max_mutating_requests_inflight: usize,
    /// Join a running cluster instead of bootstrapping one from --peers: start with an
    /// empty --data-dir, then add this node with `kuorum member add`.
    #[arg(long)]
    pub join: bool,
}

fn parse_peers(peers: &[String]) -> anyhow::Result<BTreeMap<u64, String>> {
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

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let members = parse_peers(&args.peers)?;
    if !members.contains_key(&args.id) {
        bail!("--peers must include this node (id {})", args.id);
    }
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
    let objects = RocksStore::open(&args.data_dir.join("objects")).map_err(|e| anyhow::anyhow!("{e}"))?;
    let log = FileLogEngine::open(&args.data_dir.join("log")).map_err(|e| anyhow::anyhow!("{e}"))?;

    let rest = tokio::net::TcpListener::bind(&args.listen).await.with_context(|| format!("binding {}", args.listen))?;
    let peer = tokio::net::TcpListener::bind(&args.peer_listen)
        .await
        .with_context(|| format!("binding {}", args.peer_listen))?;
    let peer_incoming = TcpListenerStream::new(peer)
        .map(|r| {
            r.map(|s| {
                let _ = s.set_nodelay(true);
                Box::new(s) as Box<dyn PeerIo>
            })
        })
        .boxed();

    let cfg = NodeConfig {
        request_timeout: Duration::from_secs(args.request_timeout_secs),
        compaction_window: Duration::from_secs(args.compaction_window_secs),
        max_requests_inflight: args.max_requests_inflight,
        max_mutating_requests_inflight: args.max_mutating_requests_inflight,
        join: args.join,
        ..NodeConfig::new(args.id, members)
    };
    let seams = NodeSeams {
        // Watch streams write one small chunk per event: without TCP_NODELAY each would
        // wait for the client's delayed ACK (tens of milliseconds).
        rest_listener: rest.tap_io(|s| {
            let _ = s.set_nodelay(true);
        }),
        peer_incoming,
        dialer: Arc::new(TcpDialer),
        clock: Arc::new(SystemClock),
        entropy: Arc::new(SplitMix64::from_os()),
        log_engine: Arc::new(log),
        object_engine: Arc::new(objects.object_engine()),
        apply_tap: None,
    };
    let node = start_node(cfg, seams).await?;
    tracing::info!(id = args.id, rest = %args.listen, peer = %args.peer_listen, "kuorum node serving");

    shutdown_signal().await;
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
