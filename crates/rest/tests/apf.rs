//! API Priority and Fairness through the router over a real single-node cluster, with a
//! server of one seat: a priority level with one queue of one holds a second request
//! while the first has the seat, refuses a third with 429 and `Retry-After`, and serves
//! the held one once the seat is free (a response's seat is free once its body has
//! gone); exempt traffic (`system:masters`) is never held;
//! answers name their FlowSchema and PriorityLevelConfiguration by uid; kube's
//! `apiserver_flowcontrol_*` metrics count what is executing, queued and refused.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const FS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const PLC: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";

fn header(r: &common::Reply, name: &str) -> String {
    r.headers.get(name).map(|v| v.to_str().unwrap().to_string()).unwrap_or_default()
}

#[tokio::test]
async fn a_full_level_queues_then_refuses_and_exempt_traffic_passes() {
    let base = common::app().await;
    base.namespace("default").await;
    let mut state = base.state.clone();
    state.apf = Some(Arc::new(kuorum_rest::apf::Apf::new(1)));
    let app = Arc::new(common::App { router: kuorum_rest::router(state.clone()), state });

    let post = |uri: &'static str, body: Value| {
        let app = app.clone();
        async move {
            let r = app.post(uri, body).await;
            assert_eq!(r.status.as_u16(), 201, "{}", r.json());
            r.json()
        }
    };
    let tiny = post(
        PLC,
        json!({"metadata": {"name": "tiny"}, "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 1,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 1}}}}}),
    )
    .await;
    let exempt = post(PLC, json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}})).await;
    post(FS, json!({"metadata": {"name": "masters"}, "spec": {"matchingPrecedence": 2,
        "priorityLevelConfiguration": {"name": "exempt"},
        "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:masters"}}],
                   "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}]}]}}))
    .await;
    let everyone = post(FS, json!({"metadata": {"name": "everyone"}, "spec": {"matchingPrecedence": 500,
        "priorityLevelConfiguration": {"name": "tiny"}, "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
                   "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}]}]}}))
    .await;
    // The configuration is read again once a second.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    let r = app.get("/api/v1/namespaces/default/configmaps").await;
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(header(&r, "x-kubernetes-pf-flowschema-uid"), everyone["metadata"]["uid"].as_str().unwrap());
    assert_eq!(header(&r, "x-kubernetes-pf-prioritylevel-uid"), tiny["metadata"]["uid"].as_str().unwrap());

    // A list waiting for a resourceVersion the cluster has not reached holds the one seat.
    let holder = {
        let app = app.clone();
        tokio::spawn(async move {
            app.get("/api/v1/namespaces/default/configmaps?resourceVersion=999999&resourceVersionMatch=NotOlderThan")
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let queued = {
        let app = app.clone();
        tokio::spawn(async move { app.get("/api/v1/namespaces/default/configmaps").await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The one queue holds one: the next is refused.
    let r = app.get("/api/v1/namespaces/default/configmaps").await;
    r.status_of(429, "TooManyRequests", "Too many requests, please try again later.");
    assert_eq!(header(&r, "retry-after"), "1");
    // Exempt traffic passes at once.
    let r = app
        .get_with(
            "/api/v1/namespaces/default/configmaps",
            &[("impersonate-user", "root"), ("impersonate-group", "system:masters")],
        )
        .await;
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(header(&r, "x-kubernetes-pf-prioritylevel-uid"), exempt["metadata"]["uid"].as_str().unwrap());
    assert!(!queued.is_finished(), "the queued request waits for the seat");
    // kube's APF metrics show the one executing, the one queued and the one refused.
    let metrics = metrics_text(&app).await;
    let everyone = ["flow_schema=\"everyone\"", "priority_level=\"tiny\""];
    assert_eq!(values(&metrics, "current_executing_requests", &everyone), ["1"], "{metrics}");
    assert_eq!(values(&metrics, "current_inqueue_requests", &everyone), ["1"], "{metrics}");
    assert_eq!(values(&metrics, "rejected_requests_total", &["everyone", "queue-full"]), ["1"], "{metrics}");
    assert_eq!(values(&metrics, "nominal_limit_seats", &["priority_level=\"tiny\""]), ["1"], "{metrics}");

    let held = holder.await.unwrap();
    assert_ne!(held.status.as_u16(), 429);
    let r = queued.await.unwrap();
    assert_eq!(r.status.as_u16(), 200, "served once the seat was free");
    assert!(started.elapsed() > Duration::from_millis(500), "{:?}", started.elapsed());
    let metrics = metrics_text(&app).await;
    let waited = values(&metrics, "request_wait_duration_seconds_count", &["everyone", "execute=\"true\""]);
    assert!(waited.len() == 1 && waited[0] != "0", "{metrics}");
    let executed = values(&metrics, "request_execution_seconds_count", &["everyone", "type=\"regular\""]);
    assert!(executed.len() == 1 && executed[0] != "0", "{metrics}");
    assert_eq!(values(&metrics, "current_inqueue_requests", &["everyone"]), ["0"], "{metrics}");

    // A response holds its seat until its body has been sent: one not read yet keeps
    // the next request waiting, and giving it up frees the seat.
    let request =
        || axum::http::Request::get("/api/v1/namespaces/default/configmaps").body(axum::body::Body::empty()).unwrap();
    let unread = tower::ServiceExt::oneshot(app.router.clone(), request()).await.unwrap();
    assert_eq!(unread.status().as_u16(), 200);
    let next = tokio::spawn(tower::ServiceExt::oneshot(app.router.clone(), request()));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!next.is_finished(), "the seat is still the unread answer's");
    drop(unread);
    let r = tokio::time::timeout(Duration::from_secs(5), next).await.expect("served once the body is gone");
    assert_eq!(r.unwrap().unwrap().status().as_u16(), 200);

    // A FlowSchema and level deleted take their series with them when the configuration
    // is read again: their number is bounded by the objects stored.
    assert_eq!(app.delete(&format!("{FS}/everyone")).await.status.as_u16(), 200);
    assert_eq!(app.delete(&format!("{PLC}/tiny")).await.status.as_u16(), 200);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let metrics = metrics_text(&app).await;
    let left: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("apiserver_flowcontrol_") && (l.contains("\"everyone\"") || l.contains("\"tiny\"")))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

async fn metrics_text(app: &common::App) -> String {
    String::from_utf8(app.get("/metrics").await.bytes.to_vec()).unwrap()
}

/// The values of the `apiserver_flowcontrol_<series>` lines that carry every one of `labels`.
fn values(metrics: &str, series: &str, labels: &[&str]) -> Vec<String> {
    let prefix = format!("apiserver_flowcontrol_{series}{{");
    metrics
        .lines()
        .filter(|l| l.starts_with(&prefix) && labels.iter().all(|label| l.contains(label)))
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect()
}
