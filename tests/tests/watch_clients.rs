//! Real watch clients against one node of a 3-node cluster while every change goes through
//! the OTHER two nodes: kube-rs `watcher` (list-then-watch and streaming lists), the Python
//! `kubernetes` client's `watch.Watch().stream` and `kubectl get -w`. Each must report
//! exactly the acknowledged changes, in order, with the resourceVersions the writes got:
//! nothing missing, nothing twice.

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher::{self, watcher, Event};
use kube::{Api, Client};
use kuorum_e2e::{
    configmap, eventually, kubectl_bin, scripted_writes, venv_python, Change, Cluster, StreamChild, WAIT,
};
use serde_json::{json, Value};

const END: &str = "zz-end";

/// The node to watch and the two to write through (the leader writes too: one of the two
/// writers, unless `watch_leader`).
fn roles(c: &mut Cluster, watch_leader: bool) -> (u64, Vec<String>) {
    let leader = c.leader().unwrap();
    let followers = c.followers().unwrap();
    let watched = if watch_leader { leader } else { followers[0] };
    let writers = c.ids().into_iter().filter(|&id| id != watched).map(|id| c.url(id)).collect();
    eprintln!("leader {leader}; watching node {watched}");
    (watched, writers)
}

/// Creates `pre-0` in `ns` so the initial state is not empty; returns it as a change.
fn precreate(c: &Cluster, writer: &str, ns: &str) -> Change {
    let r = c
        .http()
        .post(&format!("{writer}/api/v1/namespaces/{ns}/configmaps"), &configmap(ns, "pre-0", json!({"v": "pre"})))
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    Change::from_event("ADDED", &r.body).unwrap()
}

// ---------------------------------------------------------------------------------------
// kube-rs
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Init,
    InitApply(Change),
    InitDone,
    Apply(Change),
    Delete(Change),
}

fn change_of(kind: &str, cm: &ConfigMap) -> Change {
    Change {
        kind: kind.to_string(),
        name: cm.metadata.name.clone().unwrap_or_default(),
        rv: cm.metadata.resource_version.as_deref().and_then(|s| s.parse().ok()).unwrap_or(0),
        data: cm.data.clone().unwrap_or_default().into_iter().collect::<BTreeMap<_, _>>(),
    }
}

fn kube_rs_sees_every_change(streaming: bool) {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    let ns = if streaming { "kube-rs-stream" } else { "kube-rs-list" };
    let (watched, writers) = roles(&mut c, false);
    c.create_namespace(c.ids()[0], ns).unwrap();
    let pre = precreate(&c, &writers[0], ns);
    // kube-rs's streaming list asks for `resourceVersion=0` (any state, possibly stale):
    // a node that has not applied pre-0 yet may rightly send it as a live event after the
    // initial-events-end bookmark. Wait until the watched node's cache serves it, so the
    // initial state is exactly [pre-0] either way.
    let cached = format!("{}/api/v1/namespaces/{ns}/configmaps?resourceVersion=0", c.url(watched));
    eventually(WAIT, "the watched node's cache has pre-0", || {
        let r = c.http().get(&cached)?;
        Ok(r.body["items"].as_array().is_some_and(|a| a.len() == 1).then_some(()))
    })
    .unwrap();

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (tx, rx) = mpsc::channel::<Result<Seen, String>>();
    let url = c.url(watched);
    let ns_owned = ns.to_string();
    rt.spawn(async move {
        let client = Client::try_from(kube::Config::new(url.parse().unwrap())).expect("kube client");
        let api: Api<ConfigMap> = Api::namespaced(client, &ns_owned);
        let cfg = if streaming { watcher::Config::default().streaming_lists() } else { watcher::Config::default() };
        let mut stream = watcher(api, cfg).boxed();
        while let Some(item) = stream.next().await {
            let seen = match item {
                Ok(Event::Init) => Ok(Seen::Init),
                Ok(Event::InitApply(cm)) => Ok(Seen::InitApply(change_of("ADDED", &cm))),
                Ok(Event::InitDone) => Ok(Seen::InitDone),
                Ok(Event::Apply(cm)) => Ok(Seen::Apply(change_of("APPLY", &cm))),
                Ok(Event::Delete(cm)) => Ok(Seen::Delete(change_of("DELETED", &cm))),
                Err(e) => Err(format!("{e}")),
            };
            if tx.send(seen).is_err() {
                return;
            }
        }
    });

    let next = |timeout: Duration| -> Seen {
        match rx.recv_timeout(timeout) {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => panic!("watcher error: {e}"),
            Err(e) => panic!("no watcher event within {timeout:?}: {e}"),
        }
    };
    // Initial state: exactly the pre-created object.
    let init: Vec<Seen> = (0..3).map(|_| next(Duration::from_secs(15))).collect();
    assert_eq!(init, [Seen::Init, Seen::InitApply(pre.clone()), Seen::InitDone], "initial state");

    let t0 = Instant::now();
    let changes = scripted_writes(c.http(), &writers, ns, END).unwrap();
    let expected: Vec<Seen> = changes
        .iter()
        .map(|ch| match ch.kind.as_str() {
            "DELETED" => Seen::Delete(ch.clone()),
            _ => Seen::Apply(Change { kind: "APPLY".into(), ..ch.clone() }),
        })
        .collect();

    let mut got = Vec::new();
    while !matches!(got.last(), Some(Seen::Apply(ch)) if ch.name == END) {
        assert!(got.len() <= expected.len(), "more events than changes: {got:#?}\nexpected {expected:#?}");
        got.push(next(Duration::from_secs(15)));
    }
    // Nothing after the end marker either (a duplicate would come now).
    if let Ok(extra) = rx.recv_timeout(Duration::from_millis(700)) {
        panic!("event after the end marker: {extra:?}");
    }
    eprintln!("kube-rs watcher (streaming={streaming}) saw {} changes in {:?}", got.len(), t0.elapsed());
    assert_eq!(got, expected, "kube-rs watcher on node {watched} (streaming_lists={streaming})");
    rt.shutdown_timeout(Duration::from_secs(2));
    c.check_alive().unwrap();
}

#[test]
fn kube_rs_watcher_list_then_watch_sees_every_change() {
    kube_rs_sees_every_change(false);
}

#[test]
fn kube_rs_watcher_streaming_lists_sees_every_change() {
    kube_rs_sees_every_change(true);
}

// ---------------------------------------------------------------------------------------
// Python `kubernetes`
// ---------------------------------------------------------------------------------------

fn python_watch(c: &Cluster, node: u64, ns: &str, extra: &[&str]) -> StreamChild {
    let python = venv_python().expect("venv python3");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/watch_check.py");
    let mut cmd = std::process::Command::new(python);
    cmd.arg(script).arg(c.url(node)).arg(ns).args(extra);
    StreamChild::spawn("watch_check.py", cmd, &c.root().join(format!("python-{ns}.stderr"))).unwrap()
}

fn parse_python(lines: &[String]) -> Vec<Value> {
    lines.iter().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}"))).collect()
}

fn python_change(v: &Value) -> Change {
    let data =
        v["data"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
    Change {
        kind: v["type"].as_str().unwrap().to_string(),
        name: v["name"].as_str().unwrap().to_string(),
        rv: v["rv"].as_str().unwrap().parse().unwrap(),
        data,
    }
}

#[test]
fn python_watch_stream_sees_every_change() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    if venv_python().is_none() {
        eprintln!("SKIP: no venv python3 (run scripts/setup.sh or set KUORUM_VENV)");
        return;
    }
    let ns = "py-watch";
    let (watched, writers) = roles(&mut c, true);
    c.create_namespace(c.ids()[0], ns).unwrap();
    let pre = precreate(&c, &writers[1], ns);

    // 1. From a resourceVersion (the pre-created object's): exactly the later changes.
    let w = python_watch(
        &c,
        watched,
        ns,
        &["--resource-version", &pre.rv.to_string(), "--timeout-seconds", "40", "--stop-at", END, "--bookmarks"],
    );
    let changes = scripted_writes(c.http(), &writers, ns, END).unwrap();
    let (code, lines) = w.wait_exit(Duration::from_secs(30)).unwrap();
    assert_eq!(code, Some(0), "watch_check.py: {lines:?}");
    let events = parse_python(&lines);
    assert_eq!(events.last().unwrap()["reason"], "stop-at", "{lines:?}");
    let got: Vec<Change> =
        events.iter().filter(|e| !matches!(e["type"].as_str(), Some("BOOKMARK" | "END"))).map(python_change).collect();
    assert_eq!(got, changes, "python watch from rv {} on node {watched}", pre.rv);
    // Bookmarks (if any arrived) never run ahead of the events around them.
    let mut last = pre.rv;
    for e in &events {
        if let Some(rv) = e["rv"].as_str().and_then(|s| s.parse::<u64>().ok()) {
            assert!(rv >= last, "rv went back: {e} after {last}: {lines:?}");
            last = rv;
        }
    }

    // 2. Without a resourceVersion: the current state as ADDED, then live changes.
    let mut w = python_watch(&c, watched, ns, &["--timeout-seconds", "40", "--stop-at", "zz-live"]);
    let mut expected_state: Vec<Change> = Vec::new();
    {
        let mut alive: BTreeMap<String, Change> = BTreeMap::new();
        alive.insert(pre.name.clone(), pre.clone());
        for ch in &changes {
            if ch.kind == "DELETED" {
                alive.remove(&ch.name);
            } else {
                alive.insert(ch.name.clone(), Change { kind: "ADDED".into(), ..ch.clone() });
            }
        }
        expected_state.extend(alive.into_values());
    }
    let n = expected_state.len();
    w.wait_for(Duration::from_secs(15), "the initial state", |l| (l.len() >= n).then_some(())).unwrap();
    let r = c
        .http()
        .post(
            &format!("{}/api/v1/namespaces/{ns}/configmaps", writers[0]),
            &configmap(ns, "zz-live", json!({"v": "live"})),
        )
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let live = Change::from_event("ADDED", &r.body).unwrap();
    let (code, lines) = w.wait_exit(Duration::from_secs(30)).unwrap();
    assert_eq!(code, Some(0), "watch_check.py: {lines:?}");
    let events = parse_python(&lines);
    let got: Vec<Change> =
        events.iter().filter(|e| !matches!(e["type"].as_str(), Some("BOOKMARK" | "END"))).map(python_change).collect();
    let mut initial = got[..n.min(got.len())].to_vec();
    initial.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(initial, expected_state, "initial state from python watch without rv: {lines:?}");
    assert_eq!(&got[n..], &[live], "live change after the initial state: {lines:?}");
    c.check_alive().unwrap();
}

// ---------------------------------------------------------------------------------------
// kubectl get -w
// ---------------------------------------------------------------------------------------

/// Every complete JSON value in kubectl's (pretty-printed, concatenated) output.
fn json_values(lines: &[String]) -> Vec<Value> {
    let text = lines.join("\n");
    let mut out = Vec::new();
    for v in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        match v {
            Ok(v) => out.push(v),
            Err(_) => break, // an incomplete last value
        }
    }
    out
}

#[test]
fn kubectl_get_watch_sees_every_change() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    if kubectl_bin().is_none() {
        eprintln!("SKIP: no kubectl (run scripts/setup.sh or set KUBECTL)");
        return;
    }
    let ns = "kubectl-watch";
    let (watched, writers) = roles(&mut c, false);
    c.create_namespace(c.ids()[0], ns).unwrap();
    let pre = precreate(&c, &writers[0], ns);

    let cmd = c
        .kubectl_command(watched, "50s", &["get", "configmaps", "-n", ns, "-w", "--output-watch-events", "-o", "json"])
        .unwrap();
    let mut w = StreamChild::spawn("kubectl get -w", cmd, &c.root().join("kubectl-watch.stderr")).unwrap();
    // The listed state comes first (kubectl prints it as ADDED events); changes after the
    // list reach kubectl through the watch from the list's resourceVersion.
    w.wait_for(Duration::from_secs(20), "pre-0 in kubectl's output", |l| {
        json_values(l).iter().any(|v| v["object"]["metadata"]["name"] == "pre-0").then_some(())
    })
    .unwrap();
    let changes = scripted_writes(c.http(), &writers, ns, END).unwrap();
    w.wait_for(Duration::from_secs(20), "the end marker in kubectl's output", |l| {
        json_values(l).iter().any(|v| v["object"]["metadata"]["name"] == END).then_some(())
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(700)); // a duplicate would show up now
    let stderr = w.stderr();
    let lines = w.kill();
    let values = json_values(&lines);
    let got: Vec<Change> =
        values.iter().map(|v| Change::from_event(v["type"].as_str().unwrap_or("?"), &v["object"]).unwrap()).collect();
    let mut expected = vec![pre];
    expected.extend(changes);
    assert_eq!(got, expected, "kubectl get -w on node {watched}; stderr: {stderr}");
    c.check_alive().unwrap();
}
