//! The audit log through the router over a real single-node cluster: a policy's levels
//! (RequestResponse for ConfigMaps, None for Secrets, Metadata for the rest), one event
//! per stage per request with the response's `Audit-Id`, the request and response objects
//! at RequestResponse, a refusal's Status, the impersonated user beside its sender, and
//! objects past the event size left out and marked truncated.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::Method;
use kuorum_rest::audit::{read_events, AuditLog, LogOptions, Policy};
use serde_json::{json, Value};

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    resources: [{group: "", resources: ["secrets"]}]
  - level: RequestResponse
    resources: [{group: "", resources: ["configmaps"]}]
  - level: Metadata
"#;

struct Audited {
    app: common::App,
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn audited(max_event_bytes: usize) -> Audited {
    let mut app = common::app().await;
    app.namespace("default").await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let options = LogOptions { path: path.clone(), max_event_bytes, ..LogOptions::default() };
    app.state.audit = Some(Arc::new(AuditLog::open(Policy::parse(POLICY).unwrap(), options).unwrap()));
    app.router = kuorum_rest::router(app.state.clone());
    Audited { app, path, _dir: dir }
}

impl Audited {
    fn events(&self) -> Vec<Value> {
        read_events(&std::fs::read_to_string(&self.path).unwrap_or_default())
    }

    fn of(&self, id: &str) -> Vec<Value> {
        self.events().into_iter().filter(|e| e["auditID"] == id).collect()
    }
}

fn audit_id(r: &common::Reply) -> String {
    r.headers.get("audit-id").unwrap().to_str().unwrap().to_string()
}

#[tokio::test]
async fn each_request_is_logged_at_its_level_once_per_stage() {
    let a = audited(102_400).await;
    let cm = json!({"metadata": {"name": "conf"}, "data": {"k": "v"}});
    let r = a.app.post("/api/v1/namespaces/default/configmaps", cm).await;
    assert_eq!(r.status.as_u16(), 201);
    let events = a.of(&audit_id(&r));
    let stages: Vec<&str> = events.iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["RequestReceived", "ResponseComplete"], "{events:?}");
    let done = &events[1];
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!((done["kind"].as_str(), done["apiVersion"].as_str()), (Some("Event"), Some("audit.k8s.io/v1")));
    assert_eq!(done["verb"], "create");
    assert_eq!(done["requestURI"], "/api/v1/namespaces/default/configmaps");
    assert_eq!(done["objectRef"], json!({"resource": "configmaps", "namespace": "default", "apiVersion": "v1"}));
    assert_eq!(done["responseStatus"]["code"], 201);
    assert_eq!(done["requestObject"]["data"], json!({"k": "v"}));
    assert_eq!(done["responseObject"]["metadata"]["name"], "conf");
    assert!(done["responseObject"]["metadata"]["uid"].is_string());
    assert!(events[0].get("requestObject").is_none(), "the first stage has no objects");
    let ts = done["stageTimestamp"].as_str().unwrap();
    assert!(ts.len() == "2026-11-27T21:50:00.123456Z".len() && ts.ends_with('Z'), "{ts}");

    // A refusal's Status is its responseStatus.
    let r = a.app.get("/api/v1/namespaces/default/configmaps/missing").await;
    let events = a.of(&audit_id(&r));
    assert_eq!(events.len(), 2);
    assert_eq!(events[1]["responseStatus"]["code"], 404);
    assert_eq!(events[1]["responseStatus"]["reason"], "NotFound");
    assert_eq!(events[1]["objectRef"]["name"], "missing");

    // Secrets: None. The rest: Metadata, no objects.
    let r = a
        .app
        .post("/api/v1/namespaces/default/secrets", json!({"metadata": {"name": "s"}, "stringData": {"p": "w"}}))
        .await;
    assert_eq!(r.status.as_u16(), 201);
    assert!(a.of(&audit_id(&r)).is_empty());
    assert!(!std::fs::read_to_string(&a.path).unwrap().contains("\"w\""), "no secret data in the log");
    let r = a.app.get("/api/v1/namespaces/default/pods").await;
    let events = a.of(&audit_id(&r));
    assert_eq!(events.len(), 2);
    assert_eq!((events[1]["level"].as_str(), events[1]["verb"].as_str()), (Some("Metadata"), Some("list")));
    assert!(events[1].get("responseObject").is_none());

    // A watch: started when its response begins, complete when it ends.
    let r = a.app.get("/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1").await;
    let events = a.of(&audit_id(&r));
    let stages: Vec<&str> = events.iter().map(|e| e["stage"].as_str().unwrap()).collect();
    assert_eq!(stages, ["RequestReceived", "ResponseStarted", "ResponseComplete"], "{events:?}");
    assert_eq!(events[2]["verb"], "watch");

    // An impersonated request names both users.
    let r = a
        .app
        .request(
            Method::GET,
            "/api/v1/namespaces/default/configmaps/conf",
            &[("impersonate-user", "jane")],
            Body::empty(),
        )
        .await;
    assert_eq!(r.status.as_u16(), 200);
    let events = a.of(&audit_id(&r));
    assert_eq!(events[1]["impersonatedUser"]["username"], "jane");
    assert_ne!(events[1]["user"]["username"], "jane");
}

/// PodSecurity says in the event what it enforced and what the `audit` level found.
#[tokio::test]
async fn pod_security_annotates_the_event() {
    let a = audited(102_400).await;
    let ns = json!({"metadata": {"name": "watched", "labels": {"pod-security.kubernetes.io/audit": "restricted"}}});
    assert_eq!(a.app.post("/api/v1/namespaces", ns).await.status.as_u16(), 201);
    let pod = json!({"metadata": {"name": "root"}, "spec": {"containers": [
        {"name": "c", "image": "nginx", "securityContext": {"privileged": true}}]}});
    let r = a.app.post("/api/v1/namespaces/watched/pods", pod).await;
    assert_eq!(r.status.as_u16(), 201, "audit does not refuse: {}", r.json());
    let events = a.of(&audit_id(&r));
    let annotations = &events.last().unwrap()["annotations"];
    assert_eq!(annotations["pod-security.kubernetes.io/enforce-policy"], "privileged:latest");
    let violations = annotations["pod-security.kubernetes.io/audit-violations"].as_str().unwrap();
    assert!(violations.starts_with(r#"would violate PodSecurity "restricted:latest": privileged"#), "{violations}");
}

#[tokio::test]
async fn objects_past_the_event_size_are_left_out() {
    let a = audited(4096).await;
    let cm = json!({"metadata": {"name": "big"}, "data": {"k": "x".repeat(10_000)}});
    let r = a.app.post("/api/v1/namespaces/default/configmaps", cm).await;
    assert_eq!(r.status.as_u16(), 201);
    let events = a.of(&audit_id(&r));
    let done = &events[1];
    assert!(done.get("requestObject").is_none() && done.get("responseObject").is_none(), "{done}");
    assert_eq!(done["annotations"]["audit.k8s.io/truncated"], "true");
    assert_eq!(done["responseStatus"]["code"], 201);
    assert!(std::fs::metadata(&a.path).unwrap().len() < 8192);
}
