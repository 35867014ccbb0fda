//! Watch over a real single-node cluster and its watch cache: the spec's watch table
//! (unset / "0" / N), streaming lists (sendInitialEvents and the initial-events-end
//! bookmark), bookmarks, timeoutSeconds, the 410 ERROR event, selectors, and every
//! invalid combination. The body is read line by line with timeouts: each line must be
//! one JSON event.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use common::{app, app_with_bookmarks, rv, summary, App, Next};
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const QUIET: Duration = Duration::from_millis(300);

fn ev(t: &str, name: &str, rv: u64) -> (String, String, u64) {
    (t.to_string(), name.to_string(), rv)
}

async fn set_labels(app: &App, name: &str, labels: Value) -> u64 {
    let url = format!("{CMS}/{name}");
    let mut obj = app.get(&url).await.json();
    obj["metadata"]["labels"] = labels;
    let r = app.put(&url, obj).await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    rv(&r.json())
}

async fn modify(app: &App, name: &str) -> u64 {
    let url = format!("{CMS}/{name}");
    let mut obj = app.get(&url).await.json();
    obj["data"]["k"] = json!(format!("{}", obj["data"]["k"]));
    let r = app.put(&url, obj).await;
    assert_eq!(r.status, StatusCode::OK);
    rv(&r.json())
}

async fn delete(app: &App, name: &str) -> u64 {
    let r = app.delete(&format!("{CMS}/{name}")).await;
    assert_eq!(r.status, StatusCode::OK);
    // The DELETED event carries the deleting resourceVersion: the applied index now.
    app.applied()
}

#[tokio::test]
async fn rv_unset_gets_the_state_then_every_change() {
    let app = app().await;
    app.namespace("default").await;
    let a = rv(&app.configmap("default", "a").await);
    let b = rv(&app.configmap("default", "b").await);
    let mut w = app.watch(&format!("{CMS}?watch=1")).await;
    assert_eq!(w.status, StatusCode::OK);
    assert_eq!(w.headers.get("content-type").unwrap(), "application/json");
    assert!(w.headers.get("content-length").is_none(), "a watch is streamed");
    assert_eq!(w.events(2).await, [ev("ADDED", "a", a), ev("ADDED", "b", b)]);
    w.silent_for(QUIET).await;
    let c = rv(&app.configmap("default", "c").await);
    let a2 = modify(&app, "a").await;
    let d = delete(&app, "b").await;
    assert_eq!(w.events(3).await, [ev("ADDED", "c", c), ev("MODIFIED", "a", a2), ev("DELETED", "b", d)]);
    assert!(d > a2, "resourceVersions rise, deletions included");
    // Other namespaces and kinds are not in the view.
    app.namespace("other").await;
    app.configmap("other", "x").await;
    w.silent_for(QUIET).await;
    // Full objects with type meta, one line each.
    let e = {
        app.configmap("default", "d").await;
        w.next().await
    };
    assert_eq!(e["object"]["kind"], "ConfigMap");
    assert_eq!(e["object"]["apiVersion"], "v1");
    assert_eq!(e["object"]["data"], json!({"k": "v"}));
}

#[tokio::test]
async fn rv_0_gets_the_state_as_the_cache_has_it() {
    let app = app().await;
    app.namespace("default").await;
    let a = rv(&app.configmap("default", "a").await);
    let mut w = app.watch(&format!("{CMS}?watch=true&resourceVersion=0")).await;
    assert_eq!(w.events(1).await, [ev("ADDED", "a", a)]);
    w.silent_for(QUIET).await;
    let a2 = modify(&app, "a").await;
    assert_eq!(w.events(1).await, [ev("MODIFIED", "a", a2)]);
}

#[tokio::test]
async fn rv_n_starts_exactly_after_n_without_initial_state() {
    let app = app().await;
    app.namespace("default").await;
    let a = rv(&app.configmap("default", "a").await);
    let b = rv(&app.configmap("default", "b").await);
    let a2 = modify(&app, "a").await;
    let mut w = app.watch(&format!("{CMS}?watch=true&resourceVersion={a}")).await;
    assert_eq!(w.events(2).await, [ev("ADDED", "b", b), ev("MODIFIED", "a", a2)]);
    w.silent_for(QUIET).await;
    let mut now = app.watch(&format!("{CMS}?watch=true&resourceVersion={a2}")).await;
    now.silent_for(QUIET).await;
    let c = rv(&app.configmap("default", "c").await);
    assert_eq!(now.events(1).await, [ev("ADDED", "c", c)]);
    assert_eq!(w.events(1).await, [ev("ADDED", "c", c)]);
}

#[tokio::test]
async fn rv_ahead_of_the_node_delivers_only_what_follows_it() {
    let app = app().await;
    app.namespace("default").await;
    let cur = app.applied();
    let mut w = app.watch(&format!("{CMS}?watch=true&resourceVersion={}", cur + 2)).await;
    assert_eq!(w.status, StatusCode::OK);
    app.configmap("default", "x").await;
    app.configmap("default", "y").await;
    let z = rv(&app.configmap("default", "z").await);
    assert_eq!(z, cur + 3);
    assert_eq!(w.events(1).await, [ev("ADDED", "z", z)]);
}

#[tokio::test]
async fn too_old_is_a_200_with_one_410_error_event() {
    let app = app().await;
    app.namespace("default").await;
    let a = rv(&app.configmap("default", "a").await);
    app.configmap("default", "b").await;
    let c = rv(&app.configmap("default", "c").await);
    app.compact(c).await;
    let mut w = app.watch(&format!("{CMS}?watch=true&resourceVersion={a}&allowWatchBookmarks=true")).await;
    assert_eq!(w.status, StatusCode::OK, "an expired watch is a 200 stream, not an HTTP 410");
    assert_eq!(w.headers.get("content-type").unwrap(), "application/json");
    let e = w.next().await;
    assert_eq!(
        e,
        json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("too old resource version: {a} ({c})"), "reason": "Expired", "code": 410}})
    );
    w.ends_within(Duration::from_secs(1)).await;
    // At the compacted version itself the window still answers.
    let mut ok = app.watch(&format!("{CMS}?watch=true&resourceVersion={c}")).await;
    ok.silent_for(QUIET).await;
    let d = rv(&app.configmap("default", "d").await);
    assert_eq!(ok.events(1).await, [ev("ADDED", "d", d)]);
}

#[tokio::test]
async fn send_initial_events_then_the_initial_events_end_bookmark() {
    let app = app().await;
    app.namespace("default").await;
    let a = rv(&app.configmap("default", "a").await);
    let b = rv(&app.configmap("default", "b").await);
    let now = app.applied();
    let watch_list = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    // client-go's informers (RV unset, then the last RV), kube-rs (RV 0), and an explicit N.
    for rv_param in ["", "&resourceVersion=", "&resourceVersion=0", &format!("&resourceVersion={a}")] {
        let mut w = app.watch(&format!("{CMS}?{watch_list}{rv_param}")).await;
        assert_eq!(w.status, StatusCode::OK, "{rv_param}");
        assert_eq!(w.events(2).await, [ev("ADDED", "a", a), ev("ADDED", "b", b)], "{rv_param}");
        let bm = w.next().await;
        assert_eq!(
            bm,
            json!({"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"resourceVersion": now.to_string(),
                             "annotations": {"k8s.io/initial-events-end": "true"}}}}),
            "{rv_param}"
        );
        w.silent_for(Duration::from_millis(100)).await;
    }
    // Then live events.
    let mut w = app.watch(&format!("{CMS}?{watch_list}")).await;
    assert_eq!(w.events(3).await.len(), 3);
    let c = rv(&app.configmap("default", "c").await);
    assert_eq!(w.events(1).await, [ev("ADDED", "c", c)]);

    // kubectl delete/wait: one object by name, no RV.
    let mut one = app.watch(&format!("{CMS}?{watch_list}&fieldSelector=metadata.name%3Db&timeoutSeconds=300")).await;
    assert_eq!(one.events(1).await, [ev("ADDED", "b", b)]);
    let bm = one.next().await;
    assert_eq!(bm["type"], "BOOKMARK");
    assert_eq!(bm["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    let gone = delete(&app, "b").await;
    assert_eq!(one.events(1).await, [ev("DELETED", "b", gone)]);

    // An empty collection: just the bookmark.
    let mut empty = app.watch(&format!("/api/v1/namespaces/default/secrets?{watch_list}")).await;
    let bm = empty.next().await;
    assert_eq!(summary(&bm).0, "BOOKMARK");
    assert_eq!(bm["object"]["kind"], "Secret");
}

#[tokio::test]
async fn send_initial_events_without_bookmarks_or_with_false() {
    let app = app().await;
    app.namespace("default").await;
    let a = rv(&app.configmap("default", "a").await);
    // Without allowWatchBookmarks: the initial events, and no bookmark.
    let mut w = app.watch(&format!("{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")).await;
    assert_eq!(w.events(1).await, [ev("ADDED", "a", a)]);
    w.silent_for(QUIET).await;
    // sendInitialEvents=false: no initial state, changes from now on.
    for q in ["", "&resourceVersion=0"] {
        let mut w = app
            .watch(&format!(
                "{CMS}?watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true{q}"
            ))
            .await;
        w.silent_for(QUIET).await;
        let m = modify(&app, "a").await;
        assert_eq!(w.events(1).await, [ev("MODIFIED", "a", m)], "{q}");
    }
}

#[tokio::test]
async fn send_initial_events_for_a_version_not_reached_is_a_504_error_event() {
    let app = app().await;
    app.namespace("default").await;
    let far = app.applied() + 1000;
    let mut w = app
        .watch(&format!(
            "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={far}"
        ))
        .await;
    assert_eq!(w.status, StatusCode::OK);
    let e = w.next().await;
    assert_eq!(e["type"], "ERROR");
    let st = &e["object"];
    assert_eq!(
        (st["kind"].as_str(), st["code"].as_u64(), st["reason"].as_str()),
        (Some("Status"), Some(504), Some("Timeout"))
    );
    assert_eq!(st["message"], format!("Timeout: Too large resource version: {far}, current: {}", app.applied()));
    assert_eq!(st["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    w.ends_within(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn invalid_watch_parameters() {
    let app = app().await;
    app.namespace("default").await;
    let invalid = |m: &str| format!("ListOptions.meta.k8s.io \"\" is invalid: {m}");
    for (q, msg) in [
        (
            "sendInitialEvents=true",
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
        (
            "sendInitialEvents=false&allowWatchBookmarks=true",
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is \
             provided",
        ),
        (
            "sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=5",
            "[resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to \
             NotOlderThan, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]",
        ),
    ] {
        let r = app.get(&format!("{CMS}?watch=true&{q}")).await;
        let v = r.status_of(422, "Invalid", &invalid(msg));
        assert_eq!(v["details"]["kind"], "ListOptions", "{q}");
    }
    for (q, msg) in [
        ("resourceVersion=abc", "invalid resource version: \"abc\""),
        ("timeoutSeconds=soon", "invalid value for timeoutSeconds: \"soon\": expected an integer"),
        ("labelSelector=a+b+c", ""),
        ("fieldSelector=spec.x%3D1", "field label not supported: spec.x"),
    ] {
        let r = app.get(&format!("{CMS}?watch=true&{q}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{q}");
        if !msg.is_empty() {
            r.status_of(400, "BadRequest", msg);
        }
    }
}

#[tokio::test]
async fn bookmarks_only_when_asked_with_the_resources_type() {
    let app = app_with_bookmarks(Duration::from_millis(100)).await;
    app.namespace("default").await;
    let from = app.applied();
    let mut with = app.watch(&format!("{CMS}?watch=true&resourceVersion={from}&allowWatchBookmarks=true")).await;
    let mut without = app.watch(&format!("{CMS}?watch=true&resourceVersion={from}")).await;
    let a = rv(&app.configmap("default", "a").await);
    assert_eq!(with.events(1).await, [ev("ADDED", "a", a)]);
    assert_eq!(without.events(1).await, [ev("ADDED", "a", a)]);
    let bm = with.next().await;
    assert_eq!(
        bm,
        json!({"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"resourceVersion": app.applied().to_string()}}})
    );
    without.silent_for(Duration::from_millis(500)).await;
    // Bookmarks carry the group's apiVersion too.
    let mut deploys = app
        .watch(&format!(
            "/apis/apps/v1/namespaces/default/deployments?watch=true&resourceVersion={from}&allowWatchBookmarks=true"
        ))
        .await;
    app.configmap("default", "b").await;
    let bm = deploys.next().await;
    assert_eq!(
        (bm["type"].as_str(), bm["object"]["kind"].as_str(), bm["object"]["apiVersion"].as_str()),
        (Some("BOOKMARK"), Some("Deployment"), Some("apps/v1"))
    );
    assert!(summary(&bm).2 >= a);
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream_cleanly() {
    let app = app().await;
    app.namespace("default").await;
    let a = rv(&app.configmap("default", "a").await);
    let started = tokio::time::Instant::now();
    let mut w = app.watch(&format!("{CMS}?watch=true&timeoutSeconds=1")).await;
    assert_eq!(w.events(1).await, [ev("ADDED", "a", a)]);
    w.silent_for(Duration::from_millis(600)).await;
    w.ends_within(Duration::from_secs(2)).await;
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(950) && took < Duration::from_secs(3), "{took:?}");
    // An enormous timeout is simply no timeout.
    let mut long = app.watch(&format!("{CMS}?watch=true&timeoutSeconds={}", i64::MAX)).await;
    assert_eq!(long.status, StatusCode::OK);
    assert_eq!(long.events(1).await, [ev("ADDED", "a", a)]);
    long.silent_for(QUIET).await;
}

#[tokio::test]
async fn selectors_turn_changes_into_added_and_deleted() {
    let app = app().await;
    app.namespace("default").await;
    for (name, label) in [("a", "web"), ("b", "db")] {
        let r = app.post(CMS, json!({"metadata": {"name": name, "labels": {"app": label}}})).await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let mut w = app.watch(&format!("{CMS}?watch=true&labelSelector=app%3Dweb")).await;
    let a = rv(&app.get(&format!("{CMS}/a")).await.json());
    assert_eq!(w.events(1).await, [ev("ADDED", "a", a)]);
    w.silent_for(QUIET).await;
    let b2 = set_labels(&app, "b", json!({"app": "web"})).await;
    assert_eq!(w.events(1).await, [ev("ADDED", "b", b2)], "b starts matching");
    let a2 = set_labels(&app, "a", json!({"app": "db"})).await;
    assert_eq!(w.events(1).await, [ev("DELETED", "a", a2)], "a stops matching");
    let a3 = modify(&app, "a").await;
    let b3 = modify(&app, "b").await;
    assert_eq!(w.events(1).await, [ev("MODIFIED", "b", b3)], "a's change at {a3} is not seen");

    let mut by_name = app.watch(&format!("{CMS}?watch=true&fieldSelector=metadata.name%3Da")).await;
    assert_eq!(by_name.events(1).await, [ev("ADDED", "a", a3)]);
    modify(&app, "b").await;
    by_name.silent_for(QUIET).await;
    let gone = delete(&app, "a").await;
    assert_eq!(by_name.events(1).await, [ev("DELETED", "a", gone)]);
}

#[tokio::test]
async fn a_watch_on_an_object_url_watches_that_object() {
    let app = app().await;
    app.namespace("default").await;
    let a = rv(&app.configmap("default", "a").await);
    app.configmap("default", "ab").await;
    let mut w = app.watch(&format!("{CMS}/a?watch=true")).await;
    assert_eq!(w.status, StatusCode::OK);
    assert_eq!(w.events(1).await, [ev("ADDED", "a", a)]);
    modify(&app, "ab").await;
    w.silent_for(QUIET).await;
    let a2 = modify(&app, "a").await;
    assert_eq!(w.events(1).await, [ev("MODIFIED", "a", a2)]);
}

#[tokio::test]
async fn a_list_then_watch_from_its_resource_version_misses_nothing() {
    let app = app().await;
    app.namespace("default").await;
    app.configmap("default", "a").await;
    let list = app.get(&format!("{CMS}?limit=500")).await.json();
    let from = rv(&list);
    // Changes between the list and the watch arrive on the watch.
    let b = rv(&app.configmap("default", "b").await);
    let mut w = app
        .watch(&format!("{CMS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=290&resourceVersion={from}"))
        .await;
    assert_eq!(w.events(1).await, [ev("ADDED", "b", b)]);
    match w.next_within(QUIET).await {
        Next::Silent => {}
        other => panic!("nothing else: {other:?}"),
    }
}
