//! Membership under load, through the `kuorum member` CLI: a fourth node joins as a learner
//! and is promoted, leadership moves to it, and the old leader is removed, while writers
//! keep creating objects. No write fails beyond client retries, every acknowledged write
//! is readable on the new node, and the cluster ends with three voters.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use kuorum_e2e::{configmap, Cluster, Http};
use serde_json::{json, Value};

const WRITERS: usize = 4;
const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";

/// Creates `name`, retrying through every node on errors a client retries (connection
/// refused, 429, 5xx) for up to 30 s. A 409 after a retry is our own earlier attempt.
fn create_with_retries(http: &Http, urls: &[String], name: &str, first: usize) -> Result<(), String> {
    let body = configmap("default", name, json!({"k": name}));
    let mut last = String::new();
    for attempt in 0..300 {
        let url = &urls[(first + attempt) % urls.len()];
        match http.post(&format!("{url}{CM_PATH}"), &body) {
            Ok(r) if r.status == 201 => return Ok(()),
            Ok(r) if r.status == 409 && attempt > 0 => return Ok(()),
            Ok(r) if r.status == 429 || r.status >= 500 => last = format!("{} {}", r.status, r.text),
            Ok(r) => return Err(format!("{name}: {} {}", r.status, r.text)),
            Err(e) => last = format!("{e:#}"),
        }
        thread::sleep(Duration::from_millis(100));
    }
    Err(format!("{name}: still failing after retries: {last}"))
}

fn members(c: &Cluster, servers: &str) -> Value {
    serde_json::from_str(&c.cli(&["member", "list", "--server", servers, "-o", "json"]).unwrap()).unwrap()
}

fn role_of(list: &Value, id: u64) -> Option<String> {
    list["members"].as_array()?.iter().find(|m| m["id"] == id).map(|m| m["role"].as_str().unwrap().to_string())
}

#[test]
fn a_node_joins_takes_the_lead_and_the_old_leader_leaves_under_load() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    let old_leader = c.leader().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let failed: Arc<Mutex<Vec<String>>> = Arc::default();
    // Writers use the three original nodes and, once it is a voter, the new one.
    let urls: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(c.urls()));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (stop, acked, failed, urls) = (stop.clone(), acked.clone(), failed.clone(), urls.clone());
            thread::spawn(move || {
                let http = Http::with_timeout(Duration::from_secs(5));
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    let name = format!("w{w}-{i}");
                    let now: Vec<String> = urls.lock().unwrap().clone();
                    match create_with_retries(&http, &now, &name, w + i) {
                        Ok(()) => acked.lock().unwrap().push(name),
                        Err(e) => failed.lock().unwrap().push(e),
                    }
                    i += 1;
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(500));

    let servers = c.urls().join(",");
    let new = c.start_joining_node().unwrap();
    let peer = format!("127.0.0.1:{}", c.node(new).peer_port);
    let out = c.cli(&["member", "add", &new.to_string(), &peer, "--server", &servers]).unwrap();
    assert!(out.contains("learner"), "{out}");
    c.wait_node_ready(new, Duration::from_secs(30)).unwrap();
    assert_eq!(role_of(&members(&c, &servers), new).as_deref(), Some("learner"));

    c.cli(&["member", "promote", &new.to_string(), "--server", &servers]).unwrap();
    assert_eq!(role_of(&members(&c, &servers), new).as_deref(), Some("voter"));
    urls.lock().unwrap().push(c.url(new));
    thread::sleep(Duration::from_millis(500));

    c.cli(&["member", "transfer-leader", &new.to_string(), "--server", &servers]).unwrap();
    assert_eq!(c.raft_status(new).unwrap().leader, Some(new), "the new node leads");
    thread::sleep(Duration::from_millis(500));

    let all = format!("{servers},{}", c.url(new));
    c.cli(&["member", "remove", &old_leader.to_string(), "--server", &all]).unwrap();
    urls.lock().unwrap().retain(|u| *u != c.url(old_leader));
    let list = members(&c, &c.url(new));
    assert_eq!(role_of(&list, old_leader), None, "{list}");
    let voters = list["members"].as_array().unwrap().iter().filter(|m| m["role"] == "voter").count();
    assert_eq!(voters, 3, "{list}");
    c.stop(old_leader, Duration::from_secs(5));
    thread::sleep(Duration::from_millis(500));

    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().unwrap();
    }
    let failed = failed.lock().unwrap().clone();
    assert!(failed.is_empty(), "writes failed beyond retries: {failed:?}");
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 20, "the writers made progress: {}", acked.len());
    eprintln!("{} writes acknowledged across the membership changes, none failed", acked.len());

    // Every acknowledged write is on the new node (a consistent list there).
    let names = c.http().list_names(&c.url(new), CM_PATH).unwrap();
    let missing: Vec<&String> = acked.iter().filter(|n| !names.contains(*n)).collect();
    assert!(missing.is_empty(), "acknowledged but missing on node {new}: {missing:?}");

    // A node that was never a member cannot make changes, and bad requests are 400s.
    let err = c.cli(&["member", "promote", "99", "--server", &c.url(new)]).unwrap_err();
    assert!(format!("{err:#}").contains("not a learner"), "{err:#}");
    let metrics = c.http().get(&format!("{}/metrics", c.url(new))).unwrap().text;
    assert!(metrics.lines().any(|l| l == "kuorum_raft_voters 3"), "{metrics}");
    assert!(metrics.lines().any(|l| l == "kuorum_raft_is_leader 1"), "{metrics}");
    // RocksDB's memory by part, its memtables holding the objects written since start.
    let memtables = metrics
        .lines()
        .find_map(|l| l.strip_prefix(r#"kuorum_storage_memory_bytes{part="memtables"} "#))
        .and_then(|v| v.parse::<u64>().ok());
    assert!(memtables.is_some_and(|b| b > 0), "{metrics}");
}

/// A voter whose data directory was emptied and that is started again as it was (without
/// `--join`) would have forgotten its votes: its peers say it served as a member, and it
/// exits before it starts Raft. Rebuilt as a new member (remove, `--join`, add, promote),
/// it serves again. A new cluster's nodes, which have not served yet, start as before
/// (the cluster above started).
#[test]
fn a_voter_that_lost_its_data_is_refused_until_rebuilt() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    let victim = c.followers().unwrap()[0];
    // Each node records that it served at its first probe (5 s after it started) at
    // which it knows a leader: two probe periods and more.
    thread::sleep(Duration::from_secs(12));
    c.kill(victim);
    let dir = c.node(victim).data_dir.clone();
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let status = c.start_expecting_exit(victim, Duration::from_secs(30)).unwrap();
    assert!(!status.success(), "a voter that lost its data must not start");
    let log = std::fs::read_to_string(&c.node(victim).log_path).unwrap();
    assert!(log.contains("its data was lost"), "{}", kuorum_e2e::tail(&c.node(victim).log_path, 20));

    let servers = c.urls().join(",");
    c.cli(&["member", "remove", &victim.to_string(), "--server", &servers]).unwrap();
    c.wipe_and_join(victim).unwrap();
    let peer = format!("127.0.0.1:{}", c.node(victim).peer_port);
    c.cli(&["member", "add", &victim.to_string(), &peer, "--server", &servers]).unwrap();
    c.cli(&["member", "promote", &victim.to_string(), "--server", &servers]).unwrap();
    c.wait_node_ready(victim, Duration::from_secs(30)).unwrap();
    let created =
        c.http().post(&format!("{}{CM_PATH}", c.url(victim)), &configmap("default", "after", json!({}))).unwrap();
    assert_eq!(created.status, 201, "{}", created.text);
}
