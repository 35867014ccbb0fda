//! The aggregation layer on a real three-node cluster: an extension API server the test
//! starts (HTTPS, a self-signed certificate for `metrics-server.kube-system.svc`), reached
//! through `--webhook-service-map` (Endpoints may not hold loopback addresses), is
//! registered with an APIService; the leader finds it Available; `kubectl get --raw`
//! --as=jane` through every node reaches it with jane in the front-proxy headers;
//! `kubectl api-versions` lists it; when the server stops, the APIService reports
//! unavailable and its requests get 503.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kuorum_e2e::https_server::HttpsServer;
use kuorum_e2e::{kubectl_bin, Cluster, ClusterOptions};
use serde_json::{json, Value};

const RAW: &str = "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web";

/// Waits (up to 30 s) until the APIService's Available condition, read through node
/// `id`, is `status`.
fn wait_available(c: &Cluster, id: u64, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = c.kubectl(id, &["get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json"]).unwrap();
        let v: Value = serde_json::from_str(&out.stdout).unwrap_or(Value::Null);
        let conditions = v["status"]["conditions"].as_array().cloned().unwrap_or_default();
        if conditions.iter().any(|c| c["type"] == "Available" && c["status"] == status) {
            return v;
        }
        assert!(Instant::now() < deadline, "never Available={status}: {v}");
        thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn an_extension_api_server_is_reached_through_every_node() {
    if kubectl_bin().is_none() {
        eprintln!("SKIP: no kubectl (run scripts/setup.sh or set KUBECTL)");
        return;
    }
    let seen: Arc<Mutex<Vec<(String, Vec<String>)>>> = Arc::default();
    let record = seen.clone();
    let server = HttpsServer::start(&["metrics-server.kube-system.svc"], move |req| match req.path.as_str() {
        "/apis/metrics.k8s.io/v1beta1" => (
            200,
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "metrics.k8s.io/v1beta1",
                "resources": [{"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]}]}),
        ),
        RAW => {
            let user = req.header_values("x-remote-user").join(",");
            record.lock().unwrap().push((user.clone(), req.header_values("x-remote-group")));
            (
                200,
                json!({"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                "metadata": {"name": "web", "namespace": "default"}, "servedTo": user}),
            )
        }
        _ => {
            (404, json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound"}))
        }
    });
    let opts = ClusterOptions {
        extra_args: vec![
            "--webhook-service-map".into(),
            format!("kube-system/metrics-server=127.0.0.1:{}", server.port),
        ],
        ..ClusterOptions::default()
    };
    let Some(c) = Cluster::start_opts_or_skip(opts) else { return };

    let apiservice = format!(
        "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {{name: v1beta1.metrics.k8s.io}}\nspec:\n  group: metrics.k8s.io\n  version: v1beta1\n  groupPriorityMinimum: 100\n  versionPriority: 100\n  service: {{namespace: kube-system, name: metrics-server, port: 443}}\n  caBundle: {}\n",
        server.ca_bundle
    );
    let path = c.write_file("apiservice.yaml", &apiservice);
    c.kubectl(1, &["apply", "-f", &path]).unwrap().ok("apply apiservice");
    let v = wait_available(&c, 2, "True");
    assert_eq!(v["status"]["conditions"][0]["reason"], "Passed", "{v}");

    for id in c.ids() {
        let out = c.kubectl(id, &["get", "--raw", RAW, "--as=jane", "--as-group=team"]).unwrap().ok("get --raw");
        let got: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(got["kind"], "PodMetrics", "node {id}: {got}");
    }
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3);
        for (user, groups) in seen.iter() {
            assert_eq!(user, "jane", "{seen:?}");
            assert!(
                groups.iter().any(|g| g == "team") && groups.iter().any(|g| g == "system:authenticated"),
                "{seen:?}"
            );
        }
    }
    let out = c.kubectl(3, &["api-versions"]).unwrap().ok("api-versions");
    assert!(out.stdout.lines().any(|l| l == "metrics.k8s.io/v1beta1"), "{}", out.stdout);

    // The server stops: the APIService is reported unavailable and requests get 503.
    server.set_down(true);
    let v = wait_available(&c, 3, "False");
    assert_eq!(v["status"]["conditions"][0]["reason"], "FailedDiscoveryCheck", "{v}");
    for id in c.ids() {
        let r = c.http().get(&format!("{}{RAW}", c.url(id))).unwrap();
        assert_eq!(r.status, 503, "node {id}: {}", r.text);
    }
}
