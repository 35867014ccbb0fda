//! The audit log on a real three-node cluster (`--audit-policy-file`,
//! `--audit-log-path`, one log per node): kubectl's create of a ConfigMap is logged by the
//! node that served it, once per stage, with its request and response objects at
//! `RequestResponse`; a request sent with an `Audit-Id` is logged under that id; nothing
//! is logged for a `None` rule (Secrets), and other nodes log only what they served.

use std::time::{Duration, Instant};

use kuorum_e2e::{Cluster, ClusterOptions};
use serde_json::{json, Value};

const POLICY: &str = r#"apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    resources: [{group: "", resources: ["secrets"]}]
  - level: RequestResponse
    resources: [{group: "", resources: ["configmaps"]}]
  - level: Metadata
    nonResourceURLs: ["/api*", "/apis*"]
"#;

fn events(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // A line being written as this reads is left for the next read.
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// Waits (up to 10 s) until the log at `path` has an event `done` accepts.
fn wait_for(path: &std::path::Path, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let all = events(path);
        if all.iter().any(&done) {
            return all;
        }
        assert!(Instant::now() < deadline, "no such event in {}: {all:?}", path.display());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn each_node_logs_what_it_served_at_the_policys_level() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = |id: u64| dir.path().join(format!("audit-{id}.log"));
    let opts = ClusterOptions {
        extra_args: vec![
            "--audit-policy-file".into(),
            policy.display().to_string(),
            "--audit-log-path".into(),
            dir.path().join("audit-{id}.log").display().to_string(),
        ],
        ..ClusterOptions::default()
    };
    let Some(c) = Cluster::start_opts_or_skip(opts) else { return };

    c.kubectl(1, &["create", "configmap", "audited", "--from-literal=k=v"]).unwrap().ok("create configmap");
    let all = wait_for(&log(1), |e| {
        e["verb"] == "create" && e["objectRef"]["name"].is_null() && e["objectRef"]["resource"] == "configmaps"
    });
    let creates: Vec<&Value> =
        all.iter().filter(|e| e["verb"] == "create" && e["objectRef"]["resource"] == "configmaps").collect();
    assert_eq!(creates.len(), 1, "RequestReceived is omitted: one event: {creates:?}");
    let e = creates[0];
    assert_eq!((e["stage"].as_str(), e["level"].as_str()), (Some("ResponseComplete"), Some("RequestResponse")));
    assert_eq!(e["requestObject"]["metadata"]["name"], "audited");
    assert_eq!(e["responseObject"]["data"], json!({"k": "v"}));
    assert_eq!(e["responseStatus"]["code"], 201);
    assert_eq!(e["sourceIPs"], json!(["127.0.0.1"]));
    assert!(e["userAgent"].as_str().unwrap_or("").starts_with("kubectl"), "{e}");

    // A client's Audit-Id is the event's.
    let id = "e2e-audit-0001";
    let r = c
        .http()
        .send("GET", &format!("{}/api/v1/namespaces/default/configmaps/audited", c.url(2)), &[("Audit-Id", id)], None)
        .unwrap();
    assert_eq!(r.status, 200);
    let all = wait_for(&log(2), |e| e["auditID"] == id);
    let mine: Vec<&Value> = all.iter().filter(|e| e["auditID"] == id).collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["responseObject"]["metadata"]["name"], "audited");
    assert!(
        !all.iter().any(|e| e["verb"] == "create" && e["objectRef"]["resource"] == "configmaps"),
        "node 2 served no create"
    );

    // Secrets: nothing, on any node.
    c.kubectl(3, &["create", "secret", "generic", "quiet", "--from-literal=p=hunter2"]).unwrap().ok("create secret");
    c.kubectl(3, &["get", "configmaps"]).unwrap().ok("get configmaps");
    wait_for(&log(3), |e| e["verb"] == "list" && e["objectRef"]["resource"] == "configmaps");
    for id in 1..=3 {
        let text = std::fs::read_to_string(log(id)).unwrap_or_default();
        assert!(!text.contains("\"secrets\"") && !text.contains("hunter2"), "node {id} logged a secret");
    }
}
