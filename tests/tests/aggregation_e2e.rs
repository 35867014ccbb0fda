//! The aggregation layer on a real three-node cluster: an extension API server the test
//! starts (HTTPS, a self-signed certificate for `metrics-server.kube-system.svc`), reached
//! through `--webhook-service-map` (Endpoints may not hold loopback addresses), is
//! registered with an APIService; the leader finds it Available; `kubectl get --raw`
//! --as=jane` through every node reaches it with jane in the front-proxy headers;
//! `kubectl api-versions` lists it; when the server stops, the APIService reports
//! unavailable and its requests get 503. `kuorum up`'s nodes publish their front-proxy
//! CA in `extension-apiserver-authentication` and accept that proxy's `X-Remote-*` users.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kuorum_e2e::https_server::HttpsServer;
use kuorum_e2e::{kubectl_bin, Cluster, ClusterOptions, Http, TlsClientOptions, UpCluster};
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

/// `kuorum up` makes kubeadm's front-proxy pair and starts its nodes with
/// `--requestheader-*` and `--proxy-client-*`: every node publishes whom extension
/// servers should trust in `kube-system/extension-apiserver-authentication`, and a
/// request over a connection with the front-proxy client certificate is the user its
/// `X-Remote-*` headers name, on every node, while the same headers from an ordinary
/// user's connection are ignored.
#[test]
fn nodes_publish_and_accept_the_front_proxy() {
    let Some(up) = UpCluster::start_or_skip(3) else { return };
    let admin = up.client(Some("admin"), &TlsClientOptions::default()).unwrap();
    let front_proxy = up.pki().join("front-proxy");
    let cm_url = format!("{}/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication", up.url(2));
    let deadline = Instant::now() + Duration::from_secs(30);
    let cm = loop {
        let r = admin.send("GET", &cm_url, &[], None).unwrap();
        if r.status == 200 {
            break r.body;
        }
        assert!(Instant::now() < deadline, "no extension-apiserver-authentication: {}", r.text);
        thread::sleep(Duration::from_millis(300));
    };
    let data = &cm["data"];
    let proxy_ca = std::fs::read_to_string(front_proxy.join("ca.crt")).unwrap();
    assert_eq!(data["requestheader-client-ca-file"].as_str().unwrap().trim(), proxy_ca.trim(), "{cm}");
    assert_eq!(data["client-ca-file"].as_str().unwrap().trim(), std::fs::read_to_string(up.ca()).unwrap().trim());
    assert_eq!(data["requestheader-allowed-names"], r#"["front-proxy-client"]"#);
    assert_eq!(data["requestheader-username-headers"], r#"["X-Remote-User"]"#);
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(data["requestheader-extra-headers-prefix"], r#"["X-Remote-Extra-"]"#);

    let proxy = Http::tls(
        &up.ca(),
        Some((&front_proxy.join("front-proxy-client.crt"), &front_proxy.join("front-proxy-client.key"))),
        &TlsClientOptions::default(),
    )
    .unwrap();
    let review = br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec();
    let headers = [
        ("Content-Type", "application/json"),
        ("X-Remote-User", "jane"),
        ("X-Remote-Group", "dev"),
        ("X-Remote-Extra-Scopes", "view"),
    ];
    for id in up.ids() {
        let url = format!("{}/apis/authentication.k8s.io/v1/selfsubjectreviews", up.url(id));
        let r = proxy.send("POST", &url, &headers, Some(review.clone())).unwrap();
        assert_eq!(r.status, 201, "node {id}: {}", r.text);
        let user = &r.body["status"]["userInfo"];
        assert_eq!(user["username"], "jane", "node {id}: {}", r.text);
        assert!(user["groups"].as_array().unwrap().contains(&json!("dev")), "{user}");
        assert_eq!(user["extra"]["scopes"], json!(["view"]), "{user}");
        // The admin's own connection: the headers are not its word.
        let r = admin.send("POST", &url, &headers, Some(review.clone())).unwrap();
        assert_eq!(r.body["status"]["userInfo"]["username"], "kuorum-admin", "{}", r.text);
    }
}
