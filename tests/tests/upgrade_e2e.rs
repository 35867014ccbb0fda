//! A rolling upgrade, then a refused downgrade, with real processes.
//!
//! Three nodes of the previous release serve while a writer creates objects through every
//! node and a watcher follows them, resuming on the next node from the last
//! resourceVersion it saw whenever its stream ends. One node at a time is stopped and
//! started again with this release's binary. While any node is of the previous release,
//! the cluster's data format stays 1 (the upgraded nodes write what the previous release
//! reads); once the last is upgraded, the leader raises it to 2 and writes carry request
//! ids. Every acknowledged create must then be readable on every node and seen exactly
//! once by the watcher, in resourceVersion order, with no 410.
//!
//! Then a node is started as a release that reads format 1 only: it must exit before it
//! touches its data directory (every file unchanged), and start again as this release.
//!
//! The previous release is the binary `KUORUM_PREVIOUS_BIN` names (built by
//! `scripts/previous-release.sh` from the pinned commit f960e37) when it is set; CI does
//! not build it (a second build of the workspace on a cold machine would take the run
//! past its hour), so there this binary acts as it, with `--max-data-format 1`: it then
//! answers the peers as that release does and writes format 1 only, which
//! `crates/raft/tests/format1_fixtures.rs` holds byte for byte to what that release wrote.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kuorum_e2e::{
    configmap, eventually, kuorum_bin, previous_release, previous_release_stand_in, rv_of, Cluster, ClusterOptions,
    Http,
};
use serde_json::{json, Value};

const NS: &str = "upgrade";
const PATH: &str = "/api/v1/namespaces/upgrade/configmaps";

/// The cluster's data format as node `id` reports it (1 for a release that does not);
/// `None` if it does not answer within 5 s.
fn data_format(c: &Cluster, id: u64) -> Option<u64> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(r) = c.http().get(&format!("{}/debug/kuorum/raft", c.url(id))) {
            if r.status == 200 {
                return Some(r.body.get("data_format").and_then(Value::as_u64).unwrap_or(1));
            }
        }
        thread::sleep(Duration::from_millis(200));
    }
    None
}

/// What the writer had acknowledged: name → resourceVersion.
type Acked = Arc<Mutex<BTreeMap<String, u64>>>;

/// Creates `w-0`, `w-1`, ... through the nodes in turn until told to stop; each create is
/// retried (the same name) until its outcome is known.
fn writer(urls: Vec<String>, acked: Acked, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let http = Http::with_timeout(Duration::from_secs(5));
        for i in 0.. {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let name = format!("w-{i}");
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut attempt = i;
            let rv = loop {
                assert!(Instant::now() < deadline, "create {name}: no known outcome within 60 s");
                let base = &urls[attempt % urls.len()];
                attempt += 1;
                match http.post(&format!("{base}{PATH}"), &configmap(NS, &name, json!({"i": i.to_string()}))) {
                    Ok(r) if r.status == 201 => break rv_of(&r.body).unwrap(),
                    Ok(r) if r.reason() == Some("AlreadyExists") => match http.get(&format!("{base}{PATH}/{name}")) {
                        Ok(g) if g.status == 200 => break rv_of(&g.body).unwrap(),
                        _ => {}
                    },
                    _ => {}
                }
                thread::sleep(Duration::from_millis(100));
            };
            acked.lock().unwrap().insert(name, rv);
            thread::sleep(Duration::from_millis(20));
        }
    })
}

/// What the watcher saw: (type, name, rv) of every event in order, and what went wrong.
#[derive(Default)]
struct Seen {
    events: Vec<(String, String, u64)>,
    /// 410s and ERROR events: a resume that could not continue.
    gaps: Vec<String>,
    resumes: usize,
}

/// Watches the namespace from `from`, on the nodes in turn: whenever a stream ends (its
/// node stopped, its timeout), resumes on the next from the last rv seen.
fn watcher(urls: Vec<String>, from: u64, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let client =
            reqwest::blocking::Client::builder().timeout(None).connect_timeout(Duration::from_secs(2)).build().unwrap();
        let mut last = from;
        for turn in 0.. {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let base = &urls[turn % urls.len()];
            let url =
                format!("{base}{PATH}?watch=true&resourceVersion={last}&allowWatchBookmarks=true&timeoutSeconds=5");
            let resp = match client.get(&url).send() {
                Ok(r) if r.status() == 200 => r,
                Ok(r) if r.status() == 410 => {
                    seen.lock().unwrap().gaps.push(format!("410 from {base} at {last}"));
                    return;
                }
                _ => {
                    thread::sleep(Duration::from_millis(200));
                    continue;
                }
            };
            seen.lock().unwrap().resumes += 1;
            for line in BufReader::new(resp).lines() {
                let Ok(line) = line else { break };
                let Ok(ev) = serde_json::from_str::<Value>(&line) else { break };
                let ty = ev["type"].as_str().unwrap_or_default().to_string();
                if ty == "ERROR" {
                    seen.lock().unwrap().gaps.push(format!("{base}: {line}"));
                    return;
                }
                let Ok(rv) = rv_of(&ev["object"]) else { continue };
                if ty != "BOOKMARK" {
                    let name = ev["object"]["metadata"]["name"].as_str().unwrap_or_default().to_string();
                    seen.lock().unwrap().events.push((ty, name, rv));
                }
                last = rv;
            }
        }
    })
}

/// Every file under `dir` and its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.clone(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_rolling_upgrade_keeps_every_write_and_watch_and_a_downgrade_is_refused() {
    let Some(this) = kuorum_bin() else {
        eprintln!("SKIP: no kuorum binary found (set KUORUM_BIN or run scripts/test.sh)");
        return;
    };
    let (previous, previous_args, what) = previous_release(&this);
    eprintln!("upgrading from {what}");
    let opts = ClusterOptions { first_release: Some((previous, previous_args)), ..ClusterOptions::default() };
    let mut c = Cluster::start_with(this.clone(), opts).expect("a cluster of the previous release starts");
    let http = Http::default();
    let ns = http.post(&format!("{}/api/v1/namespaces", c.url(1)), &json!({"metadata": {"name": NS}})).unwrap();
    assert_eq!(ns.status, 201, "{}", ns.text);
    let from = rv_of(&ns.body).unwrap();
    for id in c.ids() {
        assert_eq!(data_format(&c, id), Some(1), "node {id} starts at format 1");
    }

    let (acked, seen, stop): (Acked, Arc<Mutex<Seen>>, Arc<AtomicBool>) = Default::default();
    let writing = writer(c.urls(), acked.clone(), stop.clone());
    let watching = watcher(c.urls(), from, seen.clone(), stop.clone());
    thread::sleep(Duration::from_secs(2));

    let ids = c.ids();
    for (n, id) in ids.iter().copied().enumerate() {
        c.stop(id, Duration::from_secs(10));
        c.set_release(id, None);
        c.restart(id).unwrap_or_else(|e| panic!("node {id} of this release: {e:#}"));
        thread::sleep(Duration::from_secs(2));
        if n + 1 < ids.len() {
            // Two raise periods: a leader of this release would have raised by now if it
            // did not wait for every member.
            thread::sleep(Duration::from_secs(4));
            for id in c.ids() {
                assert_eq!(data_format(&c, id), Some(1), "node {id}: still format 1 with {} nodes upgraded", n + 1);
            }
        }
    }
    eventually(Duration::from_secs(30), "every node at data format 2", || {
        Ok(c.ids().iter().all(|id| data_format(&c, *id) == Some(2)).then_some(()))
    })
    .unwrap();
    // Writes of format 2 (with request ids), creates and deletes.
    thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::Relaxed);
    writing.join().expect("writer");
    watching.join().expect("watcher");
    let deleted: Vec<String> = acked.lock().unwrap().keys().take(5).cloned().collect();
    for (i, name) in deleted.iter().enumerate() {
        let r = http.delete(&format!("{}{PATH}/{name}", c.url(c.ids()[i % 3]))).unwrap();
        assert_eq!(r.status, 200, "delete {name}: {}", r.text);
    }

    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 50, "only {} writes acknowledged", acked.len());
    for id in c.ids() {
        let names = http.list_names(&c.url(id), PATH).unwrap();
        let want: BTreeSet<String> = acked.keys().filter(|n| !deleted.contains(n)).cloned().collect();
        assert_eq!(names, want, "node {id} holds every acknowledged write, less the deleted");
    }
    let seen = seen.lock().unwrap();
    assert!(seen.gaps.is_empty(), "watch gaps: {:?}", seen.gaps);
    assert!(seen.resumes >= 3, "the watch resumed across the restarts ({} streams)", seen.resumes);
    let rvs: Vec<u64> = seen.events.iter().map(|e| e.2).collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "watch events in rv order");
    let added: BTreeMap<String, u64> =
        seen.events.iter().filter(|e| e.0 == "ADDED").map(|e| (e.1.clone(), e.2)).collect();
    assert_eq!(added.len(), seen.events.iter().filter(|e| e.0 == "ADDED").count(), "each create seen once");
    for (name, rv) in &acked {
        // The watcher stopped with the writer; the last create may be after its last look.
        if *rv <= rvs.last().copied().unwrap_or(0) {
            assert_eq!(added.get(name), Some(rv), "the watch saw {name} at its acknowledged rv");
        }
    }
    eprintln!(
        "upgraded 3 nodes: {} writes acknowledged, {} watch events over {} streams, no gap",
        acked.len(),
        seen.events.len(),
        seen.resumes
    );

    // A downgrade of one node is refused before it touches its data.
    let id = c.ids()[1];
    c.stop(id, Duration::from_secs(10));
    let dir = c.node(id).data_dir.clone();
    let before = files(&dir);
    c.set_release(id, Some(previous_release_stand_in(&this)));
    let status = c.start_expecting_exit(id, Duration::from_secs(30)).unwrap();
    assert!(!status.success(), "a downgraded node must not start");
    let log = std::fs::read_to_string(&c.node(id).log_path).unwrap();
    assert!(
        log.contains("Downgrading a node is refused"),
        "the refusal says why:\n{}",
        kuorum_e2e::tail(&c.node(id).log_path, 20)
    );
    assert!(files(&dir) == before, "the refused start changed nothing in {}", dir.display());
    c.set_release(id, None);
    c.restart(id).unwrap();
    let r = http.get(&format!("{}{PATH}/{}", c.url(id), acked.keys().last().unwrap())).unwrap();
    assert_eq!(r.status, 200, "the node serves again as this release: {}", r.text);
}

/// `tests/fixtures/previous-release/`: the data directory of a one-node cluster of the
/// previous release (f960e37), and what it served when it was stopped
/// (`expected.json`: name → resourceVersion and data, and the newest resourceVersion).
fn previous_fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/previous-release")
}

/// A data directory the previous release wrote (its RocksDB, its log segments, its
/// metadata, no `FORMAT` file) is served by this release: every object as it was, at its
/// resourceVersion; new writes go on above; the cluster's data format is raised (one
/// node: it alone reads format 2) and recorded in the directory.
#[test]
fn a_data_directory_of_the_previous_release_is_served() {
    let Some(this) = kuorum_bin() else {
        eprintln!("SKIP: no kuorum binary found (set KUORUM_BIN or run scripts/test.sh)");
        return;
    };
    let fixture = previous_fixture();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("expected.json")).unwrap()).unwrap();
    let unpacked = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("tar")
        .args(["xzf", &fixture.join("node1.tar.gz").display().to_string(), "-C"])
        .arg(unpacked.path())
        .status()
        .unwrap();
    assert!(status.success(), "tar");
    assert!(!unpacked.path().join("node1/FORMAT").exists(), "written before formats were numbered");
    let opts = ClusterOptions { nodes: 1, data_from: Some(unpacked.path().to_path_buf()), ..ClusterOptions::default() };
    let c = Cluster::start_with(this, opts).expect("this release starts on the previous release's directory");
    let http = Http::default();
    let path = "/api/v1/namespaces/fixture/configmaps";
    let mut newest = 0;
    for (name, want) in expected["objects"].as_object().unwrap() {
        let r = http.get(&format!("{}{path}/{name}", c.url(1))).unwrap();
        assert_eq!(r.status, 200, "{name}: {}", r.text);
        assert_eq!(rv_of(&r.body).unwrap(), want["rv"].as_u64().unwrap(), "{name} at its resourceVersion");
        assert_eq!(r.body["data"], want["data"], "{name}'s data");
        newest = newest.max(want["rv"].as_u64().unwrap());
    }
    let gone = http.get(&format!("{}{path}/deleted", c.url(1))).unwrap();
    assert_eq!(gone.status, 404, "a deletion stays one");
    let created = http.post(&format!("{}{path}", c.url(1)), &configmap("fixture", "new", json!({}))).unwrap();
    assert_eq!(created.status, 201, "{}", created.text);
    assert!(rv_of(&created.body).unwrap() > expected["newest"].as_u64().unwrap().max(newest), "writes go on above");
    eventually(Duration::from_secs(20), "data format 2", || Ok((data_format(&c, 1) == Some(2)).then_some(()))).unwrap();
    let recorded = std::fs::read_to_string(c.node(1).data_dir.join("FORMAT")).unwrap();
    assert_eq!(recorded.trim(), "kuorum data format 2");
}
