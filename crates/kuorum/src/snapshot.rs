//! `kuorum snapshot save FILE`: a backup of a running cluster, taken by one of its nodes
//! after a linearizable read barrier (`/kuorum/v1/snapshot`), written to FILE.
//!
//! `kuorum snapshot restore FILE --data-dir DIR --id N --peers ...`: makes DIR the data
//! directory of node N of a new cluster whose first state is the backup's. Run it once
//! per node of the new cluster, with the same FILE and --peers, then start each node with
//! `kuorum serve` on its DIR and the same --peers. Objects keep their uids and
//! resourceVersions; the new cluster's writes continue above them.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use kuorum_store_file::FileLogEngine;
use kuorum_store_rocks::RocksStore;

use crate::member::{message, target, Connect};

#[derive(Args, Debug)]
pub struct SnapshotArgs {
    #[command(subcommand)]
    pub action: SnapshotAction,
}

#[derive(Subcommand, Debug)]
pub enum SnapshotAction {
    /// Save a backup of a running cluster to FILE.
    Save {
        file: PathBuf,
        #[command(flatten)]
        connect: Connect,
    },
    /// Make an empty data directory node ID of a new cluster that starts from FILE.
    Restore {
        file: PathBuf,
        /// The new node's data directory (must be empty or absent).
        #[arg(long)]
        data_dir: PathBuf,
        /// The new node's id.
        #[arg(long)]
        id: u64,
        /// Every member of the new cluster as ID=PEERADDR, comma-separated (as `kuorum
        /// serve --peers`).
        #[arg(long, value_delimiter = ',')]
        peers: Vec<String>,
    },
}

pub fn run(args: SnapshotArgs) -> anyhow::Result<()> {
    match args.action {
        SnapshotAction::Save { file, connect } => save(&file, &connect),
        SnapshotAction::Restore { file, data_dir, id, peers } => restore(&file, &data_dir, id, &peers),
    }
}

fn save(file: &std::path::Path, connect: &Connect) -> anyhow::Result<()> {
    let t = target(connect)?;
    let mut last = String::from("no server given");
    for server in &t.servers {
        let (url, req) = t.request(reqwest::Method::GET, server, "/kuorum/v1/snapshot");
        let resp = match req.send() {
            Ok(r) => r,
            Err(e) => {
                last = format!("{url}: {e}");
                continue;
            }
        };
        let status = resp.status();
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or("?").to_string();
        let (index, objects) = (header("x-kuorum-snapshot-index"), header("x-kuorum-snapshot-objects"));
        let body = resp.bytes().with_context(|| format!("reading the backup from {url}"))?;
        if !status.is_success() {
            last = format!("{url}: {status}: {}", message(&String::from_utf8_lossy(&body)));
            continue;
        }
        // Written beside the target and renamed: a FILE is a whole backup or absent.
        let tmp = file.with_extension("part");
        std::fs::write(&tmp, &body).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, file).with_context(|| format!("renaming to {}", file.display()))?;
        println!("saved {} ({} bytes, {objects} objects, at index {index}) from {server}", file.display(), body.len());
        return Ok(());
    }
    bail!("no server gave a backup; last: {last}")
}

fn restore(file: &std::path::Path, data_dir: &std::path::Path, id: u64, peers: &[String]) -> anyhow::Result<()> {
    let members = crate::serve::parse_peers(peers)?;
    if !members.contains_key(&id) {
        bail!("--peers must include this node (id {id})");
    }
    if data_dir.exists() && std::fs::read_dir(data_dir)?.next().is_some() {
        bail!("{} is not empty: restore makes a new node's data directory", data_dir.display());
    }
    let bytes = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    std::fs::create_dir_all(data_dir)?;
    let store = RocksStore::open(&data_dir.join("objects")).map_err(|e| anyhow::anyhow!("{e}"))?;
    let objects = Arc::new(store.object_engine());
    let log = Arc::new(FileLogEngine::open(&data_dir.join("log")).map_err(|e| anyhow::anyhow!("{e}"))?);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let info = rt
        .block_on(kuorum_raft::backup::restore(&bytes, log, objects, &members))
        .with_context(|| format!("restoring {}", file.display()))?;
    println!(
        "restored {} objects at index {} into {} (node {id} of {} members)",
        info.objects,
        info.index,
        data_dir.display(),
        members.len()
    );
    Ok(())
}
