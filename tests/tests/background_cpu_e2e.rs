//! Wide requests at a lower CPU priority, on the real binary: a LIST that takes more than
//! one seat of a Limited priority level runs on the node's background threads (nice 10 by
//! default, `--background-nice`), over HTTP/1.1 (a plain cluster's clients) and over h2
//! (kubectl against `kuorum up`'s TLS), and nothing else does; the answers are whole.
//!
//! Where each request ran is read from the kernel: each background thread's CPU time
//! (`/proc/<pid>/task/<tid>/schedstat`, nanoseconds on a CPU) and nice value.

use std::fs;
use std::time::{Duration, Instant};

use kuorum_e2e::{kubectl_bin, Cluster, UpCluster};
use serde_json::{json, Value};

/// Objects listed: width 3 (kube's work estimate, 100 objects per seat).
const OBJECTS: usize = 300;

/// The background threads of process `pid`: their nice values and CPU time in ns.
fn background_threads(pid: u32) -> (Vec<i64>, u64) {
    let mut nices = Vec::new();
    let mut ns = 0;
    for task in fs::read_dir(format!("/proc/{pid}/task")).unwrap().flatten() {
        let comm = fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("kuorum-backgrou") {
            continue;
        }
        let stat = fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // Fields after the command's closing parenthesis; nice is the 19th field overall.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let nice = after.split_whitespace().nth(16).and_then(|n| n.parse().ok()).unwrap();
        nices.push(nice);
        let sched = fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        ns += sched.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
    }
    (nices, ns)
}

/// The pid of the `kuorum serve` process whose command line names `dir`.
fn serve_pid_under(dir: &str) -> u32 {
    for p in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmd = fs::read(p.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(" serve ") && cmd.contains(dir) {
            return pid;
        }
    }
    panic!("no kuorum serve process under {dir}");
}

/// A priority level for user `flood` (and a schema sending it there), as a user would make.
fn flood_level() -> (Value, Value) {
    let level = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "flood"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 8, "handSize": 2, "queueLengthLimit": 50}}}}});
    let schema = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "flood"}, "spec": {"matchingPrecedence": 500,
        "priorityLevelConfiguration": {"name": "flood"}, "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": [{"kind": "User", "user": {"name": "flood"}}],
                   "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}]}]}});
    (level, schema)
}

/// Runs `list` (which answers how many objects it listed) until the background threads
/// of `pid` have run for 20 ms, at most 60 s; every answer must hold all the objects.
fn list_until_background_runs(pid: u32, mut list: impl FnMut() -> usize) {
    let (nices, before) = background_threads(pid);
    assert!(!nices.is_empty(), "no background threads");
    assert!(nices.iter().all(|n| *n == 10), "the background threads' nice values: {nices:?}");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut lists = 0;
    loop {
        assert_eq!(list(), OBJECTS, "a wide LIST's answer");
        lists += 1;
        let (_, now) = background_threads(pid);
        if now - before >= 20_000_000 {
            eprintln!("{lists} wide LISTs ran the background threads for {} ms", (now - before) / 1_000_000);
            return;
        }
        assert!(Instant::now() < deadline, "after {lists} wide LISTs the background threads ran {} ns", now - before);
    }
}

/// Over HTTP/1.1: narrow requests (GETs, a LIST with `limit` under 100) leave the
/// background threads idle; wide LISTs of a Limited level run there.
#[test]
fn wide_lists_run_at_the_background_priority_over_http1() {
    let Some(c) = Cluster::start_or_skip(1) else { return };
    let base = c.url(1);
    let http = c.http();
    let configmaps = format!("{base}/api/v1/namespaces/default/configmaps");
    for i in 0..OBJECTS {
        let r = http.post(&configmaps, &json!({"metadata": {"name": format!("c{i}")}, "data": {"k": "v"}})).unwrap();
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let (level, schema) = flood_level();
    let fc = format!("{base}/apis/flowcontrol.apiserver.k8s.io/v1");
    assert_eq!(http.post(&format!("{fc}/prioritylevelconfigurations"), &level).unwrap().status, 201);
    assert_eq!(http.post(&format!("{fc}/flowschemas"), &schema).unwrap().status, 201);
    // Each node reads its flow-control configuration again within a second.
    std::thread::sleep(Duration::from_millis(1500));
    let pid = c.node(1).pid().unwrap();
    let as_flood = [("Impersonate-User", "flood")];

    let (_, idle) = background_threads(pid);
    for _ in 0..100 {
        let r = http.send("GET", &format!("{configmaps}/c1"), &as_flood, None).unwrap();
        assert_eq!(r.status, 200);
        let r = http.send("GET", &format!("{configmaps}?limit=50"), &as_flood, None).unwrap();
        assert_eq!(r.body["items"].as_array().map(Vec::len), Some(50));
    }
    let (_, after) = background_threads(pid);
    assert_eq!(after, idle, "narrow and exempt requests ran on the background threads");

    list_until_background_runs(pid, || {
        let r = http.send("GET", &configmaps, &as_flood, None).unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        r.body["items"].as_array().map_or(0, Vec::len)
    });
}

/// Over h2 (kubectl, TLS): the same, a stream at a time.
#[test]
fn wide_lists_run_at_the_background_priority_over_h2() {
    if kubectl_bin().is_none() {
        eprintln!("SKIP: no kubectl (run scripts/setup.sh or set KUBECTL)");
        return;
    }
    let Some(up) = UpCluster::start_or_skip(1) else { return };
    let items: Vec<Value> = (0..OBJECTS)
        .map(|i| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}"), "namespace": "default"}, "data": {"k": "v"}}))
        .collect();
    let (level, schema) = flood_level();
    let file = up.dir.join("objects.json");
    let mut items = items;
    let viewer = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "flood-views"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "flood"}]});
    items.extend([level, schema, viewer]);
    let all = json!({"apiVersion": "v1", "kind": "List", "items": items});
    fs::write(&file, all.to_string()).unwrap();
    let out = up.kubectl(&["create", "-f", file.to_str().unwrap()]).unwrap();
    assert!(out.success(), "{}", out.stderr);
    std::thread::sleep(Duration::from_millis(1500));
    let pid = serve_pid_under(up.dir.to_str().unwrap());
    list_until_background_runs(pid, || {
        let out = up.kubectl(&["--as=flood", "get", "configmaps", "-n", "default", "-o", "name"]).unwrap();
        assert!(out.success(), "{}", out.stderr);
        out.stdout.lines().filter(|l| l.starts_with("configmap/c")).count()
    });
}
