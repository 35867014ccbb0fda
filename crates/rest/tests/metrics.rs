//! `/metrics` over a real single-node cluster: kube-apiserver's request metrics with its
//! labels, Raft and watch-cache figures, and the in-flight limits answering 429.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use common::app;
use serde_json::json;
use tower::ServiceExt;

/// The value of the sample whose line starts with `prefix` (metric name and labels).
fn sample(text: &str, prefix: &str) -> Option<f64> {
    text.lines().find(|l| l.starts_with(prefix)).and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok())
}

async fn scrape(app: &common::App) -> String {
    let r = app.get("/metrics").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.content_type().starts_with("application/openmetrics-text"), "{}", r.content_type());
    String::from_utf8(r.bytes).unwrap()
}

#[tokio::test]
async fn requests_are_counted_and_timed_with_kube_apiserver_labels() {
    let app = app().await;
    app.namespace("default").await;
    for i in 0..3 {
        let r = app
            .post(
                "/api/v1/namespaces/default/configmaps",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("m{i}")}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let r = app.get("/api/v1/namespaces/default/configmaps/missing").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/api/v1/namespaces/default/configmaps").await.status, StatusCode::OK);

    let text = scrape(&app).await;
    let created = r#"apiserver_request_total{verb="POST",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver",code="201"}"#;
    assert_eq!(sample(&text, created), Some(3.0), "{text}");
    let missing = r#"apiserver_request_total{verb="GET",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="resource",component="apiserver",code="404"}"#;
    assert_eq!(sample(&text, missing), Some(1.0), "{text}");
    let listed = r#"apiserver_request_duration_seconds_count{verb="LIST",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver"}"#;
    assert_eq!(sample(&text, listed), Some(1.0), "{text}");
    assert!(text.contains(r#"apiserver_request_duration_seconds_bucket{le="0.005","#) || text.contains("le=\"0.005\""));
    assert!(text.ends_with("# EOF\n"));
}

#[tokio::test]
async fn raft_and_watch_figures_follow_the_node() {
    let app = app().await;
    app.namespace("default").await;
    let before = scrape(&app).await;
    assert_eq!(sample(&before, "kuorum_raft_is_leader "), Some(1.0), "{before}");
    assert_eq!(sample(&before, "kuorum_raft_has_leader "), Some(1.0));
    assert_eq!(sample(&before, "kuorum_raft_voters "), Some(1.0));
    assert!(sample(&before, "kuorum_raft_term ").unwrap() >= 1.0);
    assert!(sample(&before, "kuorum_raft_log_fsync_duration_seconds_count ").unwrap() >= 1.0, "{before}");
    let applied = sample(&before, "kuorum_raft_applied_index ").unwrap();
    assert_eq!(applied, app.applied() as f64);

    let _watch = app.watch("/api/v1/namespaces/default/configmaps?watch=1").await;
    app.post(
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
    )
    .await;
    let after = scrape(&app).await;
    assert!(sample(&after, "kuorum_raft_applied_index ").unwrap() > applied);
    assert_eq!(sample(&after, "kuorum_watch_cache_watchers "), Some(1.0), "{after}");
    // The cache's size: the namespace and the ConfigMap, their bytes as stored.
    let size = app.state.cache.size();
    assert_eq!(size.objects, 2);
    assert_eq!(sample(&after, "kuorum_watch_cache_objects "), Some(2.0), "{after}");
    assert_eq!(sample(&after, "kuorum_watch_cache_object_bytes "), Some(size.object_bytes as f64));
    assert!(size.object_bytes > 100, "{size:?}");
    assert_eq!(sample(&after, "kuorum_watch_cache_events "), Some(size.events as f64));
    assert!(sample(&after, "process_resident_memory_bytes ").unwrap() > 1e6, "{after}");
    let watching = r#"apiserver_longrunning_requests{verb="WATCH",group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver"}"#;
    assert_eq!(sample(&after, watching), Some(1.0), "{after}");
    drop(_watch);
    // The stream's end is seen when its body is dropped.
    let mut text = scrape(&app).await;
    for _ in 0..50 {
        if sample(&text, watching) == Some(0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = scrape(&app).await;
    }
    assert_eq!(sample(&text, watching), Some(0.0), "{text}");
}

#[tokio::test]
async fn past_the_in_flight_limit_requests_get_429_with_retry_after() {
    let app = app().await;
    app.namespace("default").await;
    app.state.metrics.set_inflight_limits(1, 1);
    let _watch = app.watch("/api/v1/namespaces/default/configmaps?watch=1").await;
    // A read of a resourceVersion this node has not reached waits for it, holding the
    // one read-only slot meanwhile.
    let router = app.router.clone();
    let held = tokio::spawn(async move {
        let req = axum::http::Request::get(
            "/api/v1/namespaces/default/configmaps?resourceVersion=999999&resourceVersionMatch=NotOlderThan",
        )
        .body(axum::body::Body::empty())
        .unwrap();
        router.oneshot(req).await.unwrap().status()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!held.is_finished(), "the read waits for its resourceVersion");
    let r = app.get("/api/v1/namespaces/default/configmaps").await;
    let v = r.status_of(429, "TooManyRequests", "Too many requests, please try again later.");
    assert_eq!(v["details"]["retryAfterSeconds"], 1);
    assert_eq!(r.headers.get("retry-after").and_then(|h| h.to_str().ok()), Some("1"));
    // Watches are long-running and never limited.
    let _second = app.watch("/api/v1/namespaces/default/configmaps?watch=1").await;
    // Writes have their own limit.
    let r = app
        .post(
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    held.abort();
    let _ = held.await;
    assert_eq!(app.get("/api/v1/namespaces/default/configmaps").await.status, StatusCode::OK);
    app.state.metrics.set_inflight_limits(0, 0);
    let text = scrape(&app).await;
    let refused = r#"apiserver_request_total{verb="LIST",dry_run="",group="",version="v1",resource="configmaps",subresource="",scope="namespace",component="apiserver",code="429"}"#;
    assert_eq!(sample(&text, refused), Some(1.0), "{text}");
}

/// No label takes what the URL says: 2,000 requests to paths and dryRun values that are
/// each new add nothing to `/metrics` but their fixed buckets (a closed set), so its size
/// and the node's memory do not grow with them.
#[tokio::test]
async fn labels_do_not_grow_with_what_clients_send() {
    let app = app().await;
    app.namespace("default").await;
    let before = scrape(&app).await;
    for i in 0..2_000 {
        let uri = match i % 4 {
            0 => format!("/apis/g{i}.example.com/v{i}/things{i}"),
            1 => format!("/api/v1/namespaces/default/configmaps?dryRun=x{i}"),
            2 => format!("/api/v1/namespaces/default/configmaps/c/sub{i}"),
            _ => format!("/random{i}/path"),
        };
        let method = if i % 4 == 1 { axum::http::Method::POST } else { axum::http::Method::GET };
        let r = app.request(method, &uri, &[], axum::body::Body::empty()).await;
        assert!(r.status.is_client_error(), "{uri}: {}", r.status);
    }
    let after = scrape(&app).await;
    for needle in ["g0.example.com", "things4", "x1\"", "sub2", "random3", "v4\""] {
        assert!(!after.contains(needle), "a label took {needle:?} from a URL");
    }
    // A few new series (the buckets and codes seen), not one per request.
    let series = |text: &str| text.lines().filter(|l| l.starts_with("apiserver_request_total{")).count();
    assert!(series(&after) <= series(&before) + 12, "{} -> {} series", series(&before), series(&after));
    assert!(after.len() < before.len() + 32 * 1024, "{} -> {} bytes", before.len(), after.len());
    assert!(after.contains(r#"dry_run="invalid""#), "invalid dryRun values share one bucket");
}
