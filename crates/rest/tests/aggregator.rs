//! The aggregation layer through the router over a real single-node cluster, against a
//! real HTTPS extension API server the test starts (a self-signed certificate for
//! `metrics-server.kube-system.svc`, given as the APIService's `caBundle`): requests under
//! its group-version reach it with the user in the front-proxy headers and without the
//! client's credentials; discovery (legacy and aggregated) and `/openapi/v3` list it; the availability
//! check passes while it answers and fails once it stops, and an unavailable APIService
//! is answered 503.

mod common;
#[path = "common/tls_server.rs"]
mod tls_server;

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::HeaderMap;
use axum::routing::get;
use axum::Json;
use serde_json::json;

const APISERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";
const NAME: &str = "v1beta1.metrics.k8s.io";

/// Starts the extension server; answers its port, its certificate as a `caBundle`, and
/// the task serving it.
async fn extension_server() -> (u16, String, tokio::task::JoinHandle<()>) {
    let router = axum::Router::new()
        .route(
            "/apis/metrics.k8s.io/v1beta1",
            get(|| async {
                Json(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "metrics.k8s.io/v1beta1",
                    "resources": [{"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]}]}))
            }),
        )
        .route(
            "/openapi/v3",
            get(|| async {
                Json(json!({"paths": {"apis/metrics.k8s.io/v1beta1": {"serverRelativeURL": "/openapi/v3/apis/metrics.k8s.io/v1beta1?hash=ABC"}}}))
            }),
        )
        .route(
            "/openapi/v3/apis/metrics.k8s.io/v1beta1",
            get(|| async {
                Json(json!({"openapi": "3.0.0", "info": {"title": "metrics-server", "version": "v1beta1"},
                    "components": {"schemas": {"io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics": {"type": "object"}}}}))
            }),
        )
        .route(
            "/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/{name}",
            get(|headers: HeaderMap| async move {
                let all = |k: &str| headers.get_all(k).iter().map(|v| v.to_str().unwrap_or("").to_string()).collect::<Vec<_>>();
                Json(json!({"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1beta1",
                    "user": all("x-remote-user"), "groups": all("x-remote-group"),
                    "extra": all("x-remote-extra-scopes"),
                    "impersonate": all("impersonate-user")}))
            }),
        );
    tls_server::serve(router, "metrics-server.kube-system.svc").await
}

/// Writes the Available condition the availability check finds now; answers it.
async fn check_and_record(app: &common::App) -> (bool, String) {
    let stored = app.get(&format!("{APISERVICES}/{NAME}")).await.json();
    let obj = stored.as_object().unwrap().clone();
    let (up, reason, message) = kuorum_rest::aggregator::check(&app.state, &obj).await;
    let mut updated = stored.clone();
    updated["status"] = json!({"conditions": [{"type": "Available", "status": if up { "True" } else { "False" },
        "reason": reason, "message": message, "lastTransitionTime": common::NOW}]});
    let r = app.put(&format!("{APISERVICES}/{NAME}/status"), updated).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    (up, reason.to_string())
}

#[tokio::test]
async fn an_apiservice_is_proxied_discovered_and_checked() {
    let base = common::app().await;
    let (port, ca, server) = extension_server().await;
    let mut state = base.state.clone();
    let map: HashMap<(String, String), std::net::SocketAddr> =
        [(("kube-system".to_string(), "metrics-server".to_string()), format!("127.0.0.1:{port}").parse().unwrap())]
            .into_iter()
            .collect();
    state.service_map = Arc::new(map);
    let app = common::App { router: kuorum_rest::router(state.clone()), state };

    let apiservice = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": NAME},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
                 "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443}, "caBundle": ca}});
    let r = app.post(APISERVICES, apiservice).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let pod_metrics = "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/web";

    // Not checked yet: not available, 503.
    let r = app.get(pod_metrics).await;
    assert_eq!(r.status.as_u16(), 503, "{}", String::from_utf8_lossy(&r.bytes));
    assert_eq!(r.json()["reason"], "ServiceUnavailable");

    assert_eq!(check_and_record(&app).await, (true, "Passed".to_string()));

    // Proxied with the user in the front-proxy headers, not the client's impersonation
    // headers (its credentials are dropped too; this app authenticates nobody by token).
    let r = app
        .get_with(
            pod_metrics,
            &[("impersonate-user", "jane"), ("impersonate-group", "team"), ("impersonate-extra-scopes", "view")],
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", String::from_utf8_lossy(&r.bytes));
    let v = r.json();
    assert_eq!(v["kind"], "PodMetrics");
    assert_eq!(v["user"], json!(["jane"]), "{v}");
    let groups = v["groups"].as_array().unwrap();
    assert!(groups.contains(&json!("team")) && groups.contains(&json!("system:authenticated")), "{v}");
    assert_eq!(v["extra"], json!(["view"]), "{v}");
    assert_eq!(v["impersonate"], json!([]), "{v}");

    // Discovery: the group in /apis, the group document, the server's own resource list,
    // and the aggregated document with its resources.
    let groups = app.get("/apis").await.json();
    let ours = groups["groups"].as_array().unwrap().iter().find(|g| g["name"] == "metrics.k8s.io").cloned();
    assert_eq!(ours.unwrap()["preferredVersion"]["groupVersion"], "metrics.k8s.io/v1beta1");
    assert_eq!(app.get("/apis/metrics.k8s.io").await.json()["versions"][0]["version"], "v1beta1");
    assert_eq!(app.get("/apis/metrics.k8s.io/v1beta1").await.json()["resources"][0]["kind"], "PodMetrics");
    let aggregated = app
        .get_with("/apis", &[("accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")])
        .await
        .json();
    let ours =
        aggregated["items"].as_array().unwrap().iter().find(|g| g["metadata"]["name"] == "metrics.k8s.io").cloned();
    let ours = ours.expect("metrics.k8s.io in aggregated discovery");
    assert_eq!(ours["versions"][0]["resources"][0]["resource"], "pods");
    assert_eq!(ours["versions"][0]["resources"][0]["responseKind"]["kind"], "PodMetrics");

    // OpenAPI v3: kuorum's index lists the server's group-version beside its own, and
    // its URL serves the server's document.
    let index = app.get("/openapi/v3").await.json();
    assert!(index["paths"]["api/v1"].is_object(), "kuorum's own documents stay");
    let url = index["paths"]["apis/metrics.k8s.io/v1beta1"]["serverRelativeURL"].as_str().expect("listed").to_string();
    assert!(url.starts_with("/openapi/v3/apis/metrics.k8s.io/v1beta1?hash="), "{url}");
    let doc = app.get(&url).await;
    assert_eq!(doc.status.as_u16(), 200);
    assert_eq!(doc.json()["info"]["title"], "metrics-server");

    // The server stops: the check fails, and the APIService is answered 503.
    server.abort();
    let _ = server.await;
    let (up, reason) = check_and_record(&app).await;
    assert!(!up);
    assert_eq!(reason, "FailedDiscoveryCheck");
    let r = app.get(pod_metrics).await;
    assert_eq!(r.status.as_u16(), 503);
}

#[tokio::test]
async fn an_apiservice_without_its_service_is_not_available() {
    let app = common::app().await;
    let apiservice = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": NAME},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
                 "service": {"namespace": "kube-system", "name": "metrics-server"}, "insecureSkipTLSVerify": true}});
    assert_eq!(app.post(APISERVICES, apiservice).await.status.as_u16(), 201);
    assert_eq!(check_and_record(&app).await, (false, "ServiceNotFound".to_string()));
}

/// An extension server's OpenAPI document is read up to the body limit (3 MiB): a larger
/// one is left out of `/openapi/v3` rather than held, and kuorum's own documents stay.
#[tokio::test]
async fn an_oversized_openapi_document_is_left_out() {
    let base = common::app().await;
    let router = axum::Router::new()
        .route(
            "/apis/metrics.k8s.io/v1beta1",
            get(|| async {
                Json(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "metrics.k8s.io/v1beta1", "resources": []}))
            }),
        )
        .route(
            "/openapi/v3",
            get(|| async {
                Json(json!({"paths": {"apis/metrics.k8s.io/v1beta1": {"serverRelativeURL": "/openapi/v3/apis/metrics.k8s.io/v1beta1"}}}))
            }),
        )
        .route(
            "/openapi/v3/apis/metrics.k8s.io/v1beta1",
            get(|| async { Json(json!({"openapi": "3.0.0", "padding": "x".repeat(4 << 20)})) }),
        );
    let (port, ca, _server) = tls_server::serve(router, "metrics-server.kube-system.svc").await;
    let mut state = base.state.clone();
    let map: HashMap<(String, String), std::net::SocketAddr> =
        [(("kube-system".to_string(), "metrics-server".to_string()), format!("127.0.0.1:{port}").parse().unwrap())]
            .into_iter()
            .collect();
    state.service_map = Arc::new(map);
    let app = common::App { router: kuorum_rest::router(state.clone()), state };
    let apiservice = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": NAME},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100, "versionPriority": 100,
                 "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443}, "caBundle": ca}});
    assert_eq!(app.post(APISERVICES, apiservice).await.status.as_u16(), 201);
    assert_eq!(check_and_record(&app).await, (true, "Passed".to_string()));

    let index = app.get("/openapi/v3").await.json();
    assert!(index["paths"]["api/v1"].is_object(), "{index}");
    assert!(index["paths"].get("apis/metrics.k8s.io/v1beta1").is_none(), "an oversized document is not listed");
    assert_eq!(app.get("/openapi/v3/apis/metrics.k8s.io/v1beta1").await.status.as_u16(), 404);
}
