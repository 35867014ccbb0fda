//! Raft snapshots on real processes and RocksDB. A follower that was down while the
//! leader snapshotted and purged its log catches up by a snapshot streamed to it in parts
//! (several here: 600 objects of 4 KiB) through a spool file that is gone once it is
//! installed; every node keeps its latest snapshot as a RocksDB checkpoint in its data
//! directory (not as an encoding in memory), and only that one.

use std::path::Path;
use std::time::Duration;

use kuorum_e2e::{configmap, eventually, Cluster, ClusterOptions, WAIT};
use serde_json::{json, Value};

const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";
const WRITES: usize = 600;

/// The checkpoints a node's object store holds now.
fn checkpoints(data_dir: &Path) -> Vec<String> {
    files_in(data_dir, "checkpoints")
}

/// What a directory inside a node's object store holds now.
fn files_in(data_dir: &Path, dir: &str) -> Vec<String> {
    match std::fs::read_dir(data_dir.join("objects").join(dir)) {
        Ok(dir) => dir.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => vec![],
    }
}

/// A number from a node's `/debug/kuorum/raft` (0 when it is null).
fn raft_field(c: &Cluster, id: u64, field: &str) -> u64 {
    let r = c.http().get(&format!("{}/debug/kuorum/raft", c.url(id))).unwrap();
    r.body[field].as_u64().unwrap_or(0)
}

fn snapshot_index(c: &Cluster, id: u64) -> u64 {
    raft_field(c, id, "snapshot")
}

fn names(c: &Cluster, id: u64, query: &str) -> anyhow::Result<Option<usize>> {
    let r = c.http().get(&format!("{}{CM_PATH}{query}", c.url(id)))?;
    if r.status != 200 {
        return Ok(None);
    }
    Ok(r.body["items"].as_array().map(|a| a.iter().filter(|o| o["metadata"]["name"].as_str().is_some()).count()))
}

#[test]
fn a_follower_behind_the_purged_log_catches_up_by_snapshot() {
    let opts = ClusterOptions {
        extra_args: ["--snapshot-count", "200", "--snapshot-catchup-entries", "20"].map(String::from).to_vec(),
        ..Default::default()
    };
    let Some(mut c) = Cluster::start_opts_or_skip(opts) else { return };
    let leader = c.leader().unwrap();
    let behind = c.followers().unwrap()[0];
    let behind_at = raft_field(&c, behind, "last_log_index");
    c.stop(behind, Duration::from_secs(10));
    let before = snapshot_index(&c, leader);

    let url = format!("{}{CM_PATH}", c.url(leader));
    let pad = "p".repeat(4096);
    for i in 0..WRITES {
        let data = json!({"i": i.to_string(), "pad": pad});
        let r = c.http().post(&url, &configmap("default", &format!("snap-{i}"), data)).unwrap();
        assert!(r.is_success(), "create {i}: {} {}", r.status, r.text);
    }
    let built = eventually(WAIT, "the leader builds a snapshot", || {
        Ok(Some(snapshot_index(&c, leader)).filter(|s| *s >= before + 200))
    })
    .unwrap();
    // openraft keeps entries that replication to a peer still has in flight, so the purge
    // can trail the snapshot; the node must come back to a log that no longer has what it
    // lacks.
    let purged = eventually(WAIT, "the leader purges its log past the stopped node's end", || {
        Ok(Some(raft_field(&c, leader, "purged")).filter(|p| *p > behind_at))
    })
    .unwrap();
    eprintln!("leader {leader} snapshot at {built}, log purged up to {purged}; node {behind} was down at {behind_at}");
    let leader_dir = c.node(leader).data_dir.clone();
    // A new snapshot's checkpoint is made before the one it replaces is dropped.
    eventually(WAIT, "the leader keeps one checkpoint, its latest snapshot's", || {
        Ok(Some(()).filter(|_| checkpoints(&leader_dir).len() == 1))
    })
    .unwrap();

    c.restart(behind).unwrap();
    let listed = eventually(WAIT, "the restarted follower lists every object", || {
        Ok(names(&c, behind, "")?.filter(|n| *n == WRITES))
    })
    .unwrap();
    assert_eq!(listed, WRITES);
    let installed = snapshot_index(&c, behind);
    assert!(installed >= built, "node {behind} installed the leader's snapshot ({installed} < {built})");
    let behind_dir = c.node(behind).data_dir.clone();
    eventually(WAIT, "the installed snapshot is kept as a checkpoint, not as the received bytes", || {
        Ok(Some(()).filter(|_| checkpoints(&behind_dir).len() == 1))
    })
    .unwrap();
    assert_eq!(files_in(&behind_dir, "incoming-snapshots"), Vec::<String>::new(), "the spool file is gone");

    // It serves from its own watch cache, rebuilt from the snapshot, and follows new writes.
    let r = c.http().post(&url, &configmap("default", "after", json!({}))).unwrap();
    assert!(r.is_success(), "{} {}", r.status, r.text);
    eventually(WAIT, "the follower's cache holds the snapshot and the write after it", || {
        Ok(names(&c, behind, "?resourceVersion=0")?.filter(|n| *n == WRITES + 1))
    })
    .unwrap();
    let one: Value = c.http().get(&format!("{}{CM_PATH}/snap-123?resourceVersion=0", c.url(behind))).unwrap().body;
    assert_eq!(one["data"]["i"], "123", "{one}");
    assert_eq!(one["data"]["pad"].as_str().map(str::len), Some(4096));
}
