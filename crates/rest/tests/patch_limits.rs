//! Patches and applies that try to grow an object past its limits, through the router
//! over a real single-node cluster: each is answered with kube-apiserver's 4xx Status
//! (never a 500), before anything is stored.
//!
//! - JSON Patch `copy` chains stop at 3 MiB of copied bytes (422, evanphx/json-patch's
//!   message), and a JSON Patch holds at most 10,000 operations (413);
//! - no write stores an object larger than 3 MiB (413), whichever way it was made: create,
//!   update, JSON/merge/strategic patch, apply, the status subresource;
//! - a patch whose body nests too deep is 400, and one whose result would is 422.

mod common;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::{app, App};
use serde_json::{json, Map, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const CM: &str = "/api/v1/namespaces/default/configmaps/a";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments/web";

const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

const MIB: usize = 1024 * 1024;
/// The object limit (the body limit).
const LIMIT: usize = 3 * MIB;
/// What the message of an object refused for its size says (a body over the body limit
/// says only "limit is 3145728").
const TOO_LARGE: &str = "bytes, limit is 3145728";

async fn patch(app: &App, uri: &str, content_type: &str, body: impl Into<Body>) -> common::Reply {
    app.request(Method::PATCH, uri, &[("content-type", content_type)], body.into()).await
}

fn text(r: &common::Reply) -> String {
    String::from_utf8_lossy(&r.bytes[..r.bytes.len().min(2000)]).into_owned()
}

/// Asserts a Status with this code and reason whose message contains `part`.
fn refused(r: &common::Reply, code: u16, reason: &str, part: &str) {
    assert_eq!(r.status.as_u16(), code, "{}", text(r));
    let v = r.json();
    assert_eq!(v["kind"], "Status", "{v}");
    assert_eq!(v["code"], code, "{v}");
    assert_eq!(v["reason"], reason, "{v}");
    let message = v["message"].as_str().unwrap_or("");
    assert!(message.contains(part), "{message:?} lacks {part:?}");
}

/// Creates ConfigMap `a` with `data` and answers it.
async fn configmap(app: &App, data: Value) -> Value {
    let r = app.post(CMS, json!({"metadata": {"name": "a"}, "data": data})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", text(&r));
    r.json()
}

/// Asserts the object at `uri` is still `before` (same resourceVersion, same data).
async fn unchanged(app: &App, uri: &str, before: &Value) {
    let now = app.get(uri).await;
    assert_eq!(now.status, StatusCode::OK, "{}", text(&now));
    let now = now.json();
    assert_eq!(now["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"]);
    assert_eq!(now["data"], before["data"]);
    assert_eq!(now["status"], before["status"]);
}

/// `n` keys of short values: a body of about 13 bytes per key, whose managedFields add as
/// much again.
fn many_keys(n: usize) -> Value {
    Value::Object((0..n).map(|i| (format!("k{i:06}"), json!(""))).collect::<Map<_, _>>())
}

#[tokio::test]
async fn json_patch_copy_chains_stop_at_the_copy_limit() {
    let app = app().await;
    app.namespace("default").await;
    let before = configmap(&app, json!({"a": "x".repeat(1024)})).await;

    // Each copies /metadata into itself: the object doubles per op (2^25 KiB untouched).
    let chain: Vec<Value> =
        (0..25).map(|i| json!({"op": "copy", "from": "/metadata", "path": format!("/metadata/copy{i}")})).collect();
    let started = std::time::Instant::now();
    let r = patch(&app, CM, JSON_PATCH, Value::Array(chain).to_string()).await;
    refused(&r, 422, "Invalid", "the accumulated size increase of copy");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());

    // Sideways: two maps copied into each other in turn, 40 times.
    let chain: Vec<Value> = (0..40)
        .map(|i| {
            if i % 2 == 0 {
                json!({"op": "copy", "from": "/data", "path": "/metadata/labels"})
            } else {
                json!({"op": "copy", "from": "/metadata", "path": format!("/data/m{i}")})
            }
        })
        .collect();
    let r = patch(&app, CM, JSON_PATCH, Value::Array(chain).to_string()).await;
    refused(&r, 422, "Invalid", "exceeding the limit 3145728");
    unchanged(&app, CM, &before).await;
}

#[tokio::test]
async fn copies_under_the_copy_limit_still_cannot_store_more_than_the_object_limit() {
    let app = app().await;
    app.namespace("default").await;
    // 1 MiB of data, then a patch copying it twice: 2 MiB copied (under the 3 MiB copy
    // limit) makes a 3 MiB+ object.
    let before = configmap(&app, json!({"a": "x".repeat(MIB)})).await;
    let ops = json!([{"op": "copy", "from": "/data/a", "path": "/data/b"},
                     {"op": "copy", "from": "/data/a", "path": "/data/c"}]);
    let r = patch(&app, CM, JSON_PATCH, ops.to_string()).await;
    refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
    unchanged(&app, CM, &before).await;

    // One copy is fine.
    let ops = json!([{"op": "copy", "from": "/data/a", "path": "/data/b"}]);
    let r = patch(&app, CM, JSON_PATCH, ops.to_string()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", text(&r));
    assert_eq!(r.json()["data"]["b"].as_str().map(str::len), Some(MIB));
}

#[tokio::test]
async fn a_json_patch_of_more_than_10000_operations_is_413() {
    let app = app().await;
    app.namespace("default").await;
    let before = configmap(&app, json!({"k": "v"})).await;
    let test = json!({"op": "test", "path": "/data/k", "value": "v"});
    let mut ops = vec![test; 10_001];
    let r = patch(&app, CM, JSON_PATCH, Value::Array(ops.clone()).to_string()).await;
    refused(&r, 413, "RequestEntityTooLarge", "The allowed maximum operations in a JSON patch is 10000, got 10001");
    unchanged(&app, CM, &before).await;
    ops.truncate(9_999);
    ops.push(json!({"op": "add", "path": "/data/k2", "value": "v2"}));
    let r = patch(&app, CM, JSON_PATCH, Value::Array(ops).to_string()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", text(&r));
}

#[tokio::test]
async fn a_1_mib_json_patch_cannot_grow_an_object_past_the_limit() {
    let app = app().await;
    app.namespace("default").await;
    let before = configmap(&app, json!({"a": "x".repeat(2 * MIB + MIB / 2)})).await;
    let ops = json!([{"op": "add", "path": "/data/b", "value": "y".repeat(MIB)}]);
    let r = patch(&app, CM, JSON_PATCH, ops.to_string()).await;
    refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
    unchanged(&app, CM, &before).await;
}

#[tokio::test]
async fn merge_and_strategic_patches_cannot_grow_an_object_past_the_limit() {
    let app = app().await;
    app.namespace("default").await;
    let before = configmap(&app, json!({"a": "x".repeat(2 * MIB)})).await;
    for content_type in [MERGE, STRATEGIC] {
        let body = json!({"data": {"b": "y".repeat(MIB + MIB / 2)}}).to_string();
        let r = patch(&app, CM, content_type, body).await;
        refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
        // Many small keys instead of one large one: field tracking doubles them.
        let r = patch(&app, CM, content_type, json!({"data": many_keys(60_000)}).to_string()).await;
        refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
        unchanged(&app, CM, &before).await;
    }
}

#[tokio::test]
async fn create_and_update_cannot_store_more_than_the_limit() {
    let app = app().await;
    app.namespace("default").await;
    // A body under the 3 MiB body limit whose managedFields take the object past it.
    let body = json!({"metadata": {"name": "a"}, "data": many_keys(200_000)});
    let len = serde_json::to_vec(&body).unwrap().len();
    assert!(len < LIMIT && len > 2 * MIB, "{len}");
    let r = app.post(CMS, body.clone()).await;
    refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
    assert_eq!(app.get(CM).await.status, StatusCode::NOT_FOUND);

    let before = configmap(&app, json!({"k": "v"})).await;
    let r = app.put(CM, body).await;
    refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
    unchanged(&app, CM, &before).await;
}

#[tokio::test]
async fn apply_with_a_huge_body_is_413_and_stores_nothing() {
    let app = app().await;
    app.namespace("default").await;
    let config =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": many_keys(200_000)});
    let body = serde_json::to_vec(&config).unwrap();
    assert!(body.len() < LIMIT, "{}", body.len());
    let r = patch(&app, &format!("{CM}?fieldManager=big"), APPLY, body.clone()).await;
    refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
    assert_eq!(app.get(CM).await.status, StatusCode::NOT_FOUND);

    // Over an existing object.
    let before = configmap(&app, json!({"k": "v"})).await;
    let r = patch(&app, &format!("{CM}?fieldManager=big"), APPLY, body).await;
    refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
    unchanged(&app, CM, &before).await;
    // Over an existing object with a large value, a small apply that adds another.
    let big = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
                     "data": {"k": "v", "big": "x".repeat(2 * MIB)}});
    let r = patch(&app, &format!("{CM}?fieldManager=first"), APPLY, big.to_string()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", text(&r));
    let before = r.json();
    let more = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
                      "data": {"more": "y".repeat(MIB + MIB / 2)}});
    let r = patch(&app, &format!("{CM}?fieldManager=second"), APPLY, more.to_string()).await;
    refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
    unchanged(&app, CM, &before).await;
}

#[tokio::test]
async fn the_status_subresource_cannot_store_more_than_the_limit() {
    let app = app().await;
    app.namespace("default").await;
    let r = app
        .post(
            DEPLOYS,
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                    {"name": "c", "image": "img:1", "args": ["x".repeat(MIB + MIB * 6 / 10)]}]}}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", text(&r));
    let before = r.json();
    let condition = |kind: &str, size: usize| {
        json!({"type": kind, "status": "True", "reason": "R", "message": "m".repeat(size),
               "lastUpdateTime": "2026-11-21T23:45:28Z", "lastTransitionTime": "2026-11-21T23:45:28Z"})
    };
    // PUT /status: the spec is kept, the status is the body's.
    let with_status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                             "status": {"conditions": [condition("Available", MIB + MIB * 6 / 10)]}});
    let r = app.put(&format!("{DEPLOY}/status"), with_status).await;
    refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
    unchanged(&app, DEPLOY, &before).await;

    // PATCH /status: a condition at a time, the second past the limit.
    let r = patch(
        &app,
        &format!("{DEPLOY}/status"),
        STRATEGIC,
        json!({"status": {"conditions": [condition("Available", MIB / 2)]}}).to_string(),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", text(&r));
    let before = r.json();
    let r = patch(
        &app,
        &format!("{DEPLOY}/status"),
        STRATEGIC,
        json!({"status": {"conditions": [condition("Progressing", MIB)]}}).to_string(),
    )
    .await;
    refused(&r, 413, "RequestEntityTooLarge", TOO_LARGE);
    unchanged(&app, DEPLOY, &before).await;
}

/// `levels` nested objects: `{"k": {"k": .. {}}}`.
fn nested(levels: usize) -> Value {
    let mut v = json!({});
    for _ in 1..levels {
        v = json!({ "k": v });
    }
    v
}

#[tokio::test]
async fn deep_patches_are_4xx_never_500() {
    let app = app().await;
    app.namespace("default").await;
    let before = configmap(&app, json!({"k": "v"})).await;

    // A body nested past what the decoder reads: 400, for every patch type.
    let deep = format!("{}{}", "{\"a\":".repeat(200), "}".repeat(200));
    for content_type in [MERGE, STRATEGIC] {
        let r = patch(&app, CM, content_type, format!("{{\"metadata\":{{\"annotations\":{deep}}}}}")).await;
        assert_eq!(r.status.as_u16(), 400, "{content_type}: {}", text(&r));
        assert_eq!(r.json()["kind"], "Status");
    }
    let r = patch(&app, CM, JSON_PATCH, format!("[{{\"op\":\"add\",\"path\":\"/x\",\"value\":{deep}}}]")).await;
    assert_eq!(r.status.as_u16(), 400, "{}", text(&r));

    // A copy into itself nests one level more per op: 422 at the depth limit.
    let mut chain = vec![json!({"op": "add", "path": "/metadata/labels", "value": {}})];
    chain.extend((0..200).map(|_| json!({"op": "copy", "from": "/metadata/labels", "path": "/metadata/labels/x"})));
    let r = patch(&app, CM, JSON_PATCH, Value::Array(chain).to_string()).await;
    refused(&r, 422, "Invalid", "more than 127 levels deep");

    // Adds of values as deep as a body allows, each under the last.
    let mut ops = vec![json!({"op": "add", "path": "/metadata/annotations", "value": nested(120)})];
    ops.push(
        json!({"op": "add", "path": format!("/metadata/annotations{}/x", "/k".repeat(110)), "value": nested(120)}),
    );
    let r = patch(&app, CM, JSON_PATCH, Value::Array(ops).to_string()).await;
    refused(&r, 422, "Invalid", "more than 127 levels deep");
    unchanged(&app, CM, &before).await;

    // The node still serves the object, and a sane patch.
    let r = patch(&app, CM, MERGE, r#"{"data":{"k2":"v2"}}"#).await;
    assert_eq!(r.status, StatusCode::OK, "{}", text(&r));
}

/// A custom resource whose free-form field is as deep as a body may be: its managedFields
/// (which track each key of a free-form map) nest deeper than kuorum reads back, so the
/// write is refused (422) rather than stored and then unreadable (500 on every GET).
#[tokio::test]
async fn an_object_that_field_tracking_nests_too_deep_is_not_stored() {
    let app = app().await;
    app.namespace("default").await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "deeps.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "deeps", "kind": "Deep"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                    {"type": "object", "properties": {"spec": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}}}]}});
    let r = app.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", text(&r));
    let deeps = "/apis/example.com/v1/namespaces/default/deeps";
    let body = json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "d"},
                      "spec": {"config": nested(124)}});
    let r = app.post(deeps, body).await;
    refused(&r, 422, "Invalid", "more than 127 levels deep");
    assert_eq!(app.get(&format!("{deeps}/d")).await.status, StatusCode::NOT_FOUND);
    // Shallower, it is stored and reads back.
    let body = json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "d"},
                      "spec": {"config": nested(100)}});
    let r = app.post(deeps, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", text(&r));
    assert_eq!(app.get(&format!("{deeps}/d")).await.status, StatusCode::OK);
}
