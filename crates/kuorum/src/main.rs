//! The `kuorum` command: `serve` runs one node over TCP; `up` runs a local cluster of
//! `serve` processes and writes a kubeconfig for it; `member` lists and changes a running
//! cluster's membership; `certs` makes certificates; `snapshot` saves and restores
//! backups; `chaos` injects faults into nodes started with `--enable-chaos`.

mod chaos;
mod csr_signer;
mod data_dir;
mod member;
mod pki;
mod serve;
mod snapshot;
mod tls;
mod up;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "kuorum", version, about = "A Kubernetes API server cluster with its storage built in")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one node.
    Serve(serve::ServeArgs),
    /// Run a local cluster of N nodes on 127.0.0.1 until interrupted.
    Up(up::UpArgs),
    /// List, add, promote or remove members, or move the leadership.
    Member(member::MemberArgs),
    /// Make a CA and the certificates for a cluster's nodes and admin, or a user's.
    Certs(pki::CertsArgs),
    /// Save a backup of a running cluster, or restore one into a new cluster's node.
    Snapshot(snapshot::SnapshotArgs),
    /// Inject faults into nodes started with --enable-chaos: errors, latency, expired or
    /// cut watches, a paused apply.
    Chaos(chaos::ChaosArgs),
}

/// glibc's malloc was about a sixth of a node's CPU under concurrent creates (many small,
/// short-lived allocations across threads: JSON values, buffers, RPC frames); mimalloc's
/// thread-local free lists make those cheaper. It is built without transparent huge
/// pages (the `no_thp` feature): mimalloc returns idle memory to the OS, and with huge
/// pages every reuse of such a region faulted in and zeroed 2 MiB (a tenth of a node's
/// CPU under creates went to `clear_page`, mostly for Raft message buffers). It is
/// mimalloc 2 (the `v2` feature), not the crate's default 3: with 3, 64 create clients
/// cost 10% more server CPU per create and made 10% fewer creates/s (session 18, A/B).
/// The `system-alloc` feature leaves it out, for heap profilers that hook malloc.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let command = match cli.command {
        // A blocking HTTP client: no runtime around it.
        Cmd::Member(args) => return member::run(args),
        Cmd::Certs(args) => return pki::run(args),
        Cmd::Snapshot(args) => return snapshot::run(args),
        Cmd::Chaos(args) => return chaos::run(args),
        other => other,
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    match &command {
        Cmd::Serve(args) => {
            if let Some(n) = args.worker_threads {
                builder.worker_threads(n.into());
            }
        }
        // `up` only starts and watches its nodes: the CPUs are theirs.
        Cmd::Up(_) => {
            builder.worker_threads(1);
        }
        _ => {}
    }
    let rt = builder.enable_all().build()?;
    match command {
        Cmd::Serve(args) => rt.block_on(serve::run(args)),
        Cmd::Up(args) => rt.block_on(up::run(args)),
        Cmd::Member(_) | Cmd::Certs(_) | Cmd::Snapshot(_) | Cmd::Chaos(_) => unreachable!("handled above"),
    }
}
