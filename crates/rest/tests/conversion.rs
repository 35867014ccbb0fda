//! CRD conversion webhooks through the router over a real single-node cluster, against a
//! real HTTPS conversion server the test starts, speaking `ConversionReview` v1 as real
//! servers do: a CronTab stored at v1 (`spec.cronSpec`) is served at v2
//! (`spec.schedule`) on get, list, watch, Table, create, update, patch and delete; a list
//! converts in reviews of at most 100 objects; a failing or misbehaving webhook is kube's
//! 500, and a write it fails leaves nothing in the log.

mod common;
#[path = "common/tls_server.rs"]
mod tls_server;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::{Method, StatusCode};
use axum::routing::post;
use axum::Json;
use common::{app, rv, App};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const V1: &str = "/apis/stable.example.com/v1/namespaces/default/crontabs";
const V2: &str = "/apis/stable.example.com/v2/namespaces/default/crontabs";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// What the test server does with the next reviews.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Convert,
    /// `result.status: Failure`.
    Fail,
    /// Converts, but renames the objects.
    Rename,
}

/// The conversion server's state: its mode, and the number of reviews and objects it saw.
#[derive(Clone)]
struct Server {
    mode: Arc<Mutex<Mode>>,
    reviews: Arc<AtomicUsize>,
    largest: Arc<AtomicUsize>,
}

impl Server {
    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }
}

/// v1 says `spec.cronSpec`, v2 says `spec.schedule`; everything else carries over.
fn convert(mut obj: Value, desired: &str, mode: Mode) -> Value {
    let spec = obj["spec"].as_object_mut().unwrap();
    let (from, to) = if desired.ends_with("/v2") { ("cronSpec", "schedule") } else { ("schedule", "cronSpec") };
    if let Some(v) = spec.remove(from) {
        spec.insert(to.into(), v);
    }
    obj["apiVersion"] = json!(desired);
    if mode == Mode::Rename {
        obj["metadata"]["name"] = json!("renamed");
    }
    obj
}

async fn conversion_server() -> (Server, u16, String) {
    let server = Server { mode: Arc::new(Mutex::new(Mode::Convert)), reviews: Arc::default(), largest: Arc::default() };
    let s = server.clone();
    let router = axum::Router::new().route(
        "/convert",
        post(move |Json(review): Json<Value>| {
            let s = s.clone();
            async move {
                let mode = *s.mode.lock().unwrap();
                let request = &review["request"];
                let objects = request["objects"].as_array().unwrap().clone();
                s.reviews.fetch_add(1, Ordering::SeqCst);
                s.largest.fetch_max(objects.len(), Ordering::SeqCst);
                let desired = request["desiredAPIVersion"].as_str().unwrap();
                let response = match mode {
                    Mode::Fail => json!({"uid": request["uid"], "result": {"status": "Failure", "message": "broken"}}),
                    _ => json!({"uid": request["uid"], "result": {"status": "Success"},
                        "convertedObjects": objects.into_iter().map(|o| convert(o, desired, mode)).collect::<Vec<_>>()}),
                };
                Json(json!({"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": response}))
            }
        }),
    );
    let (port, ca, _task) = tls_server::serve(router, "127.0.0.1").await;
    (server, port, ca)
}

fn crd(port: u16, ca: &str) -> Value {
    let spec = |field: &str| {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            field: {"type": "string"}, "replicas": {"type": "integer"}}}}})
    };
    let column = |field: &str| json!([{"name": "Schedule", "type": "string", "jsonPath": format!(".spec.{field}")}]);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": spec("cronSpec")},
                 "additionalPrinterColumns": column("cronSpec")},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": spec("schedule")},
                 "additionalPrinterColumns": column("schedule")},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": format!("https://127.0.0.1:{port}/convert"), "caBundle": ca},
                "conversionReviewVersions": ["v1"]}},
        }
    })
}

async fn setup() -> (App, Server) {
    let app = app().await;
    app.namespace("default").await;
    let (server, port, ca) = conversion_server().await;
    let r = app.post(CRDS, crd(port, &ca)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    (app, server)
}

fn v2_crontab(name: &str, schedule: &str) -> Value {
    json!({"apiVersion": "stable.example.com/v2", "kind": "CronTab", "metadata": {"name": name},
        "spec": {"schedule": schedule, "replicas": 1}})
}

#[tokio::test]
async fn every_verb_serves_the_version_asked_for() {
    let (app, server) = setup().await;

    // Created through v2: answered at v2, stored (and read through v1) at v1.
    let created = app.post(V2, v2_crontab("a", "*/5 * * * *")).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json());
    let created = created.json();
    assert_eq!(
        (created["apiVersion"].as_str(), &created["spec"]["schedule"]),
        (Some("stable.example.com/v2"), &json!("*/5 * * * *"))
    );
    let v1 = app.get(&format!("{V1}/a")).await.json();
    assert_eq!(v1["apiVersion"], "stable.example.com/v1");
    assert_eq!(v1["spec"], json!({"cronSpec": "*/5 * * * *", "replicas": 1}));
    assert_eq!(rv(&v1), rv(&created));
    assert_eq!(v1["metadata"]["uid"], created["metadata"]["uid"]);

    // Read through v2.
    let v2 = app.get(&format!("{V2}/a")).await.json();
    assert_eq!(v2["spec"], json!({"schedule": "*/5 * * * *", "replicas": 1}), "{v2}");

    // A watch through v2 from the start: the initial object and later changes at v2.
    let mut watch = app.watch(&format!("{V2}?watch=true&resourceVersion=0")).await;
    let added = watch.next().await;
    assert_eq!((added["type"].as_str(), &added["object"]["spec"]["schedule"]), (Some("ADDED"), &json!("*/5 * * * *")));

    // Updated through v1; the watch sees it at v2.
    let mut changed = v1.clone();
    changed["spec"]["cronSpec"] = json!("0 * * * *");
    let put = app.put(&format!("{V1}/a"), changed).await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.json());
    let modified = watch.next().await;
    assert_eq!(modified["type"], "MODIFIED");
    assert_eq!(modified["object"]["apiVersion"], "stable.example.com/v2");
    assert_eq!(modified["object"]["spec"]["schedule"], "0 * * * *");

    // Updated through v2 (the read it starts from is converted too).
    let mut changed = app.get(&format!("{V2}/a")).await.json();
    changed["spec"]["schedule"] = json!("1 * * * *");
    let put = app.put(&format!("{V2}/a"), changed).await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.json());
    assert_eq!(put.json()["spec"]["schedule"], "1 * * * *");
    assert_eq!(app.get(&format!("{V1}/a")).await.json()["spec"]["cronSpec"], "1 * * * *");
    assert_eq!(watch.next().await["object"]["spec"]["schedule"], "1 * * * *");

    // Patched through v2.
    let r = app
        .request(
            Method::PATCH,
            &format!("{V2}/a"),
            &[("content-type", "application/merge-patch+json")],
            axum::body::Body::from(r#"{"spec":{"schedule":"2 * * * *"}}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert_eq!(r.json()["spec"], json!({"schedule": "2 * * * *", "replicas": 1}));
    assert_eq!(app.get(&format!("{V1}/a")).await.json()["spec"]["cronSpec"], "2 * * * *");
    assert_eq!(watch.next().await["object"]["spec"]["schedule"], "2 * * * *");

    // Listed through both versions, and as a Table with v2's column.
    app.post(V2, v2_crontab("b", "3 * * * *")).await;
    assert_eq!(watch.next().await["object"]["spec"]["schedule"], "3 * * * *");
    let list = app.get(V2).await.json();
    assert_eq!(list["apiVersion"], "stable.example.com/v2");
    let schedules: Vec<&Value> = list["items"].as_array().unwrap().iter().map(|i| &i["spec"]["schedule"]).collect();
    assert_eq!(schedules, [&json!("2 * * * *"), &json!("3 * * * *")]);
    let list = app.get(V1).await.json();
    assert!(list["items"].as_array().unwrap().iter().all(|i| i["spec"].get("cronSpec").is_some()), "{list}");
    let table = app.get_with(V2, &[("accept", TABLE)]).await.json();
    assert_eq!(table["rows"][1]["cells"][1], "3 * * * *", "{table}");

    // Deleted through v2: the answer is at v2.
    let gone = app.delete(&format!("{V2}/b")).await;
    assert_eq!(gone.status, StatusCode::OK, "{}", gone.json());
    assert_eq!(gone.json()["spec"]["schedule"], "3 * * * *");
    let deleted = watch.next().await;
    assert_eq!(
        (deleted["type"].as_str(), &deleted["object"]["spec"]["schedule"]),
        (Some("DELETED"), &json!("3 * * * *"))
    );

    // Reads at the storage version need no review.
    let before = server.reviews.load(Ordering::SeqCst);
    app.get(V1).await;
    app.get(&format!("{V1}/a")).await;
    assert_eq!(server.reviews.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn a_long_list_converts_in_bounded_reviews() {
    let (app, server) = setup().await;
    for i in 0..250 {
        let body = json!({"metadata": {"name": format!("c{i:03}")}, "spec": {"cronSpec": "* * * * *"}});
        assert_eq!(app.post(V1, body).await.status, StatusCode::CREATED);
    }
    let before = server.reviews.load(Ordering::SeqCst);
    let list = app.get(V2).await.json();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 250);
    assert!(items.iter().all(|i| i["spec"]["schedule"] == "* * * * *" && i["apiVersion"] == "stable.example.com/v2"));
    assert_eq!(server.reviews.load(Ordering::SeqCst) - before, 3, "250 objects in reviews of at most 100");
    assert_eq!(server.largest.load(Ordering::SeqCst), 100);

    // A watch's initial events likewise.
    let mut watch = app.watch(&format!("{V2}?watch=true&resourceVersion=0")).await;
    for _ in 0..250 {
        let ev = watch.next().await;
        assert_eq!(ev["object"]["spec"]["schedule"], "* * * * *");
    }
}

/// Large objects go in reviews of at most 1 MiB, so that no answer outgrows what a
/// webhook answer may be: 12 objects of 200 KB each take at least three reviews.
#[tokio::test]
async fn large_objects_convert_in_reviews_bounded_in_bytes() {
    let (app, server) = setup().await;
    let big = "x".repeat(200 * 1024);
    for i in 0..12 {
        let body = json!({"metadata": {"name": format!("big{i:02}")}, "spec": {"cronSpec": big}});
        assert_eq!(app.post(V1, body).await.status, StatusCode::CREATED);
    }
    let before = server.reviews.load(Ordering::SeqCst);
    let list = app.get(V2).await;
    assert_eq!(list.status, StatusCode::OK);
    let list = list.json();
    assert_eq!(list["items"].as_array().unwrap().len(), 12);
    assert!(list["items"].as_array().unwrap().iter().all(|i| i["spec"]["schedule"].as_str() == Some(big.as_str())));
    let reviews = server.reviews.load(Ordering::SeqCst) - before;
    assert!((3..=12).contains(&reviews), "{reviews} reviews");
    assert!(server.largest.load(Ordering::SeqCst) <= 5, "at most 1 MiB of 200 KB objects per review");
}

#[tokio::test]
async fn a_failing_webhook_is_a_500_and_stores_nothing() {
    let (app, server) = setup().await;
    let created = app.post(V2, v2_crontab("a", "* * * * *")).await.json();

    server.set(Mode::Fail);
    let r = app.get(&format!("{V2}/a")).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: conversion webhook for stable.example.com/v1, Kind=CronTab failed: conversion \
         webhook error: broken"
    );
    assert_eq!(app.get(V2).await.status, StatusCode::INTERNAL_SERVER_ERROR);
    // The storage version needs no webhook.
    assert_eq!(app.get(&format!("{V1}/a")).await.status, StatusCode::OK);

    // A write through v2 cannot be stored: refused before anything is proposed.
    let applied = app.applied();
    let r = app.post(V2, v2_crontab("b", "* * * * *")).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{}", r.json());
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: conversion webhook for stable.example.com/v2, Kind=CronTab failed: conversion \
         webhook error: broken"
    );
    assert_eq!(app.applied(), applied, "nothing reached the log");
    assert_eq!(app.get(&format!("{V1}/b")).await.status, StatusCode::NOT_FOUND);

    // A watch that cannot convert ends with an ERROR event.
    let mut watch = app.watch(&format!("{V2}?watch=true&resourceVersion=0")).await;
    let ev = watch.next().await;
    assert_eq!(ev["type"], "ERROR", "{ev}");
    assert_eq!(ev["object"]["code"], 500);
    watch.ends_within(std::time::Duration::from_secs(5)).await;

    // An answer that renames the object is refused.
    server.set(Mode::Rename);
    let r = app.get(&format!("{V2}/a")).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid \
         converted object at index 0: must have the same name: a != renamed"
    );

    // Back to converting: served again, unchanged.
    server.set(Mode::Convert);
    let v2 = app.get(&format!("{V2}/a")).await.json();
    assert_eq!((rv(&v2), &v2["spec"]["schedule"]), (rv(&created), &json!("* * * * *")));
}

#[tokio::test]
async fn a_webhook_conversion_is_checked_when_the_crd_is_written() {
    let app = app().await;
    let mut bad = crd(1, "");
    bad["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = json!(["v9"]);
    bad["spec"]["conversion"]["webhook"]["clientConfig"] = json!({"url": "http://insecure.example.com"});
    let r = app.post(CRDS, bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let message = r.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("spec.conversion.webhookClientConfig.url: Invalid value: \"http://insecure.example.com\": 'https' is the only allowed URL scheme"), "{message}");
    assert!(message.contains("spec.conversion.conversionReviewVersions: Invalid value: [\"v9\"]: must include at least one of v1, v1beta1"), "{message}");
}
