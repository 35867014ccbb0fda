//! Damaged disks on real processes: bytes flipped in a follower's Raft log segment and in
//! its RocksDB table files. The node notices and refuses to serve (it will not start on a
//! damaged log or object store), the other two keep serving and taking writes, and the
//! node is rebuilt from the cluster (`kuorum member remove`, an empty data directory,
//! `kuorum member add` and `promote`) with every acknowledged write on it.

use std::fs;
use std::time::Duration;

use kuorum_e2e::{configmap, files_ending, flip_middle, Cluster, ClusterOptions, Http};
use serde_json::json;

const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";

/// Creates `names` through `url`, each acknowledged (201).
fn create_all(http: &Http, url: &str, names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut acked = Vec::new();
    for name in names {
        let r = http.post(&format!("{url}{CM_PATH}"), &configmap("default", &name, json!({"k": name}))).unwrap();
        assert_eq!(r.status, 201, "{name}: {}", r.text);
        acked.push(name);
    }
    acked
}

/// Removes node `id` from the cluster, wipes it, adds it back and promotes it, and waits
/// until it serves.
fn rebuild(c: &mut Cluster, id: u64, healthy: &[u64]) {
    let servers: Vec<String> = healthy.iter().map(|h| c.url(*h)).collect();
    let servers = servers.join(",");
    c.cli(&["member", "remove", &id.to_string(), "--server", &servers]).unwrap();
    c.wipe_and_join(id).unwrap();
    let peer = format!("127.0.0.1:{}", c.node(id).peer_port);
    c.cli(&["member", "add", &id.to_string(), &peer, "--server", &servers]).unwrap();
    c.cli(&["member", "promote", &id.to_string(), "--server", &servers]).unwrap();
    c.wait_node_ready(id, Duration::from_secs(60)).unwrap();
}

/// Every name in `acked` reads back from node `id` with a consistent LIST.
fn assert_all_on(c: &Cluster, id: u64, acked: &[String]) {
    let have = c.http().list_names(&c.url(id), CM_PATH).unwrap();
    let lost: Vec<&String> = acked.iter().filter(|n| !have.contains(*n)).collect();
    assert!(lost.is_empty(), "node {id} lacks {} acknowledged writes: {lost:?}", lost.len());
}

fn log_of(c: &Cluster, id: u64) -> String {
    fs::read_to_string(&c.node(id).log_path).unwrap_or_default()
}

/// The last line of node `id`'s log that holds `needle` (printed as the test's evidence).
fn line_with(c: &Cluster, id: u64, needle: &str) -> Option<String> {
    log_of(c, id).lines().rev().find(|l| l.to_lowercase().contains(needle)).map(str::to_string)
}

/// Stops follower `id`, flips `bytes` bytes in the middle of its largest file under
/// `dir` (relative to its data directory) ending with `suffix`, and checks that it then
/// refuses to start with a log line holding `says`. Meanwhile the others take 50 writes
/// (`prefix`-0..); then `id` is rebuilt and takes 20 (`prefix`-after-0..). Answers the
/// names acknowledged.
fn damage_refuse_rebuild(c: &mut Cluster, id: u64, dir: &str, suffix: &str, bytes: usize, says: &str) -> Vec<String> {
    let http = Http::with_timeout(Duration::from_secs(10));
    c.stop(id, Duration::from_secs(10));
    let files = files_ending(&c.node(id).data_dir.join(dir), suffix);
    let file = files.iter().max_by_key(|p| fs::metadata(p).unwrap().len()).expect("a file to damage");
    flip_middle(file, bytes);
    let status = c.start_expecting_exit(id, Duration::from_secs(30)).unwrap();
    assert!(!status.success(), "node {id} must not start on a damaged {dir}");
    let Some(said) = line_with(c, id, says) else {
        let log = log_of(c, id);
        panic!("node {id} does not say why: {}", &log[log.len().saturating_sub(2000)..]);
    };
    eprintln!("node {id} refused to start ({status}): {said}");
    let healthy: Vec<u64> = c.ids().into_iter().filter(|n| *n != id).collect();
    // The other two are a quorum: writes go on.
    let mut acked = create_all(&http, &c.url(healthy[0]), (0..50).map(|i| format!("{dir}-damaged-{i}")));
    rebuild(c, id, &healthy);
    acked.extend(create_all(&http, &c.url(id), (0..20).map(|i| format!("{dir}-after-{i}"))));
    acked
}

#[test]
fn damaged_log_and_object_files_stop_the_node_and_it_is_rebuilt_without_losing_a_write() {
    let opts = ClusterOptions {
        // Snapshots often, so the objects are in RocksDB's table files, not only in memory.
        extra_args: vec!["--snapshot-count".into(), "50".into()],
        ..ClusterOptions::default()
    };
    let Some(mut c) = Cluster::start_opts_or_skip(opts) else { return };
    let leader = c.leader().unwrap();
    let followers = c.followers().unwrap();
    let http = Http::with_timeout(Duration::from_secs(10));
    let mut acked = create_all(&http, &c.url(leader), (0..200).map(|i| format!("before-{i}")));

    // 1. One flipped byte in the middle of a follower's log segment, while it is stopped.
    acked.extend(damage_refuse_rebuild(&mut c, followers[0], "log", ".log", 1, "the log is corrupt"));
    for id in c.ids() {
        assert_all_on(&c, id, &acked);
    }
    // 2. Flipped bytes in the middle of the other follower's largest RocksDB table file.
    acked.extend(damage_refuse_rebuild(&mut c, followers[1], "objects", ".sst", 8, "corruption"));
    for id in c.ids() {
        assert_all_on(&c, id, &acked);
    }
    let list = c.cli(&["member", "list", "--server", &c.url(leader), "-o", "json"]).unwrap();
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let voters = list["members"].as_array().unwrap().iter().filter(|m| m["role"] == "voter").count();
    assert_eq!(voters, 3, "{list}");
    eprintln!("{} acknowledged writes, all on every node after both rebuilds", acked.len());
}
