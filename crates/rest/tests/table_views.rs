//! Tables, PartialObjectMetadata(List) and Table watches through the router (`oneshot`),
//! as kubectl and the metadata-only clients ask for them.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use kuorum_api::seams::{Clock, SplitMix64};
use serde_json::{json, Value};
use tower::ServiceExt;

use kuorum_rest::{router, RestState};

const KUBECTL_GET: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;\
                           g=meta.k8s.io,application/json";
const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;\
                             v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
const METADATA: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,\
                        application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// A clock that the test moves.
struct TestClock(std::sync::atomic::AtomicI64);

impl Clock for TestClock {
    fn now_unix_seconds(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

async fn app() -> (Router, Arc<TestClock>) {
    let cache = kuorum_watch::WatchCache::new(kuorum_watch::CacheConfig::default());
    let cluster = kuorum_raft::testing::single_node_observed(Some(cache.clone())).await;
    let clock = Arc::new(TestClock(1_795_304_728.into()));
    let state = RestState::new(cluster, cache, clock.clone(), Arc::new(SplitMix64::new(7)));
    let app = router(state);
    create(&app, "/api/v1/namespaces", json!({"metadata": {"name": "default"}})).await;
    (app, clock)
}

async fn call(
    app: &Router,
    method: Method,
    uri: &str,
    accept: Option<&str>,
    body: Option<Value>,
) -> axum::response::Response {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(a) = accept {
        req = req.header("accept", a);
    }
    let body = match body {
        Some(b) => {
            req = req.header("content-type", "application/json");
            Body::from(serde_json::to_vec(&b).unwrap())
        }
        None => Body::empty(),
    };
    app.clone().oneshot(req.body(body).unwrap()).await.unwrap()
}

async fn get(app: &Router, uri: &str, accept: &str) -> (StatusCode, String, Value) {
    let resp = call(app, Method::GET, uri, Some(accept), None).await;
    let status = resp.status();
    let ct = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)));
    (status, ct, v)
}

async fn create(app: &Router, uri: &str, obj: Value) -> Value {
    let resp = call(app, Method::POST, uri, None, Some(obj)).await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap()
}

/// Reads whole lines from a watch body until `n` lines or the wait ends.
async fn lines(body: &mut Body, n: usize, wait: Duration) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + wait;
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while out.len() < n {
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            out.push(serde_json::from_slice(&line[..line.len() - 1]).unwrap());
        }
        if out.len() >= n {
            break;
        }
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                }
            }
            _ => break,
        }
    }
    out
}

#[tokio::test]
async fn get_and_list_as_tables() {
    let (app, clock) = app().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let a = create(&app, cms, json!({"metadata": {"name": "a", "labels": {"app": "x"}}, "data": {"k": "v", "l": "w"}}))
        .await;
    create(&app, cms, json!({"metadata": {"name": "b"}})).await;
    clock.0.fetch_add(65, std::sync::atomic::Ordering::SeqCst);

    // kubectl get cm: a Table with the list's resourceVersion and one row per item.
    let (status, ct, plain) = get(&app, cms, "application/json").await;
    assert_eq!(
        (status, ct.as_str(), plain["kind"].as_str()),
        (StatusCode::OK, "application/json", Some("ConfigMapList"))
    );
    let (status, ct, t) = get(&app, &format!("{cms}?limit=500"), KUBECTL_GET).await;
    assert_eq!(status, StatusCode::OK, "{t}");
    assert_eq!(ct, "application/json;as=Table;v=v1;g=meta.k8s.io");
    assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")));
    assert!(t["metadata"]["resourceVersion"].as_str().unwrap().parse::<u64>().unwrap() >= 2, "{t}");
    let names: Vec<&str> =
        t["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Name", "Data", "Age"]);
    assert_eq!(t["rows"][0]["cells"], json!(["a", 2, "65s"]));
    assert_eq!(t["rows"][1]["cells"], json!(["b", 0, "65s"]));
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(t["rows"][0]["object"]["metadata"], a["metadata"]);

    // Paging carries continue and remainingItemCount.
    let (_, _, t) = get(&app, &format!("{cms}?limit=1"), KUBECTL_GET).await;
    assert_eq!(t["rows"].as_array().unwrap().len(), 1);
    assert!(t["metadata"]["continue"].as_str().is_some_and(|c| !c.is_empty()), "{t}");
    assert_eq!(t["metadata"]["remainingItemCount"], 1);
    let next = format!("{cms}?limit=1&continue={}", t["metadata"]["continue"].as_str().unwrap());
    let (_, _, t2) = get(&app, &next, KUBECTL_GET).await;
    assert_eq!(t2["rows"][0]["cells"][0], "b");

    // One object, v1beta1, each includeObject.
    let (status, ct, t) = get(&app, &format!("{cms}/a"), "application/json;as=Table;v=v1beta1;g=meta.k8s.io").await;
    assert_eq!((status, ct.as_str()), (StatusCode::OK, "application/json;as=Table;v=v1beta1;g=meta.k8s.io"));
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["metadata"]["resourceVersion"], a["metadata"]["resourceVersion"]);
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
    let (_, _, t) = get(&app, &format!("{cms}/a?includeObject=Object"), KUBECTL_GET).await;
    assert_eq!(t["rows"][0]["object"], a);
    let (_, _, t) = get(&app, &format!("{cms}/a?includeObject=None"), KUBECTL_GET).await;
    assert_eq!(t["rows"][0]["object"], Value::Null);
    let (status, _, s) = get(&app, &format!("{cms}/a?includeObject=All"), KUBECTL_GET).await;
    assert_eq!((status, s["reason"].as_str()), (StatusCode::BAD_REQUEST, Some("BadRequest")));
    assert!(s["message"].as_str().unwrap().starts_with("Unable to convert to Table as requested: includeObject"));
    let (status, _, _) = get(&app, &format!("{cms}?includeObject=All"), KUBECTL_GET).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // The object is looked up first, as kube-apiserver does.
    let (status, _, _) = get(&app, &format!("{cms}/zz?includeObject=All"), KUBECTL_GET).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A deployment, and its status subresource, which reads as the object.
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    create(
        &app,
        deploys,
        json!({"metadata": {"name": "web"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
               "template": {"metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}}),
    )
    .await;
    for uri in [deploys.to_string(), format!("{deploys}/web/status")] {
        let (status, _, t) = get(&app, &uri, KUBECTL_GET).await;
        assert_eq!(status, StatusCode::OK, "{t}");
        assert_eq!(t["rows"][0]["cells"], json!(["web", "0/3", 0, 0, "0s", "nginx", "nginx:1.27", "app=web"]), "{uri}");
    }

    // Cluster-scoped kinds and other printers.
    let (_, _, t) = get(&app, "/api/v1/namespaces", KUBECTL_GET).await;
    let default = t["rows"].as_array().unwrap().iter().find(|r| r["cells"][0] == "default").expect("default ns");
    assert_eq!(default["cells"][1], "Active");
    assert_eq!(default["object"]["metadata"]["name"], "default");
}

#[tokio::test]
async fn partial_object_metadata_and_refusals() {
    let (app, _) = app().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let a = create(&app, cms, json!({"metadata": {"name": "a"}, "data": {"k": "v"}})).await;

    let (status, ct, l) = get(&app, cms, METADATA_LIST).await;
    assert_eq!(status, StatusCode::OK, "{l}");
    assert_eq!(ct, "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io");
    assert_eq!(
        (l["kind"].as_str(), l["apiVersion"].as_str()),
        (Some("PartialObjectMetadataList"), Some("meta.k8s.io/v1"))
    );
    assert_eq!(
        l["items"][0],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": a["metadata"]})
    );
    assert!(l["metadata"]["resourceVersion"].is_string());

    let (status, ct, p) = get(&app, &format!("{cms}/a"), METADATA).await;
    assert_eq!((status, ct.as_str()), (StatusCode::OK, "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"));
    assert_eq!(p, json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": a["metadata"]}));

    let only = |k: &str| format!("application/json;as={k};g=meta.k8s.io;v=v1");
    let (status, _, s) = get(&app, cms, &only("PartialObjectMetadata")).await;
    assert_eq!((status, s["reason"].as_str()), (StatusCode::NOT_ACCEPTABLE, Some("NotAcceptable")));
    assert_eq!(
        s["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    );
    let (status, _, s) = get(&app, &format!("{cms}/a"), &only("PartialObjectMetadataList")).await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(
        s["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );

    for bad in ["application/json;as=Table;v=v2;g=meta.k8s.io", "application/yaml;as=Table;v=v1;g=meta.k8s.io"] {
        let (status, ct, s) = get(&app, cms, bad).await;
        assert_eq!((status, ct.as_str()), (StatusCode::NOT_ACCEPTABLE, "application/json"), "{bad}");
        assert_eq!(s["message"], "only the following media types are accepted: application/json");
    }
}

#[tokio::test]
async fn watch_events_are_one_row_tables() {
    let (app, _) = app().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    create(&app, cms, json!({"metadata": {"name": "before"}})).await;
    let (_, _, t) = get(&app, &format!("{cms}?limit=500"), KUBECTL_GET).await;
    let rv = t["metadata"]["resourceVersion"].as_str().unwrap().to_string();

    // kubectl get -w: a watch from the list's resourceVersion with the Table Accept.
    let resp =
        call(&app, Method::GET, &format!("{cms}?resourceVersion={rv}&watch=true"), Some(KUBECTL_GET), None).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let mut body = resp.into_body();
    let made = create(&app, cms, json!({"metadata": {"name": "w1"}, "data": {"a": "1"}})).await;
    create(&app, cms, json!({"metadata": {"name": "w2"}})).await;
    let del = call(&app, Method::DELETE, &format!("{cms}/w1"), None, None).await;
    assert_eq!(del.status(), StatusCode::OK);
    let events = lines(&mut body, 3, Duration::from_secs(10)).await;
    assert_eq!(events.len(), 3, "{events:?}");
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["ADDED", "ADDED", "DELETED"]);
    for (i, e) in events.iter().enumerate() {
        let t = &e["object"];
        assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")), "{e}");
        assert_eq!(t["rows"].as_array().unwrap().len(), 1, "{e}");
        assert!(t["metadata"]["resourceVersion"].as_str().unwrap().parse::<u64>().unwrap() > rv.parse().unwrap());
        // Column definitions only in the first event.
        assert_eq!(t["columnDefinitions"].is_array(), i == 0, "{e}");
        assert!(t.as_object().unwrap().contains_key("columnDefinitions"));
    }
    assert_eq!(events[0]["object"]["rows"][0]["cells"], json!(["w1", 1, "0s"]));
    assert_eq!(events[0]["object"]["metadata"]["resourceVersion"], made["metadata"]["resourceVersion"]);
    assert_eq!(events[2]["object"]["rows"][0]["cells"][0], "w1");
    drop(body);

    // A watch without a resourceVersion starts with the state, as Tables too.
    let resp =
        call(&app, Method::GET, &format!("{cms}?watch=true&includeObject=Object"), Some(KUBECTL_GET), None).await;
    let mut body = resp.into_body();
    let events = lines(&mut body, 2, Duration::from_secs(10)).await;
    let names: Vec<&str> = events.iter().map(|e| e["object"]["rows"][0]["cells"][0].as_str().unwrap()).collect();
    assert_eq!(names, ["before", "w2"]);
    assert_eq!(events[0]["object"]["rows"][0]["object"]["kind"], "ConfigMap");
    assert!(events[0]["object"]["columnDefinitions"].is_array() && events[1]["object"]["columnDefinitions"].is_null());
    drop(body);

    // PartialObjectMetadata watches; a bad includeObject is refused before streaming.
    let resp = call(&app, Method::GET, &format!("{cms}?watch=true"), Some(METADATA), None).await;
    let mut body = resp.into_body();
    let events = lines(&mut body, 1, Duration::from_secs(10)).await;
    assert_eq!(events[0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(events[0]["object"]["metadata"]["name"], "before");
    let resp = call(&app, Method::GET, &format!("{cms}?watch=true&includeObject=x"), Some(KUBECTL_GET), None).await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

    // A plain JSON watch is unchanged.
    let resp = call(&app, Method::GET, &format!("{cms}?watch=true"), Some("application/json"), None).await;
    let mut body = resp.into_body();
    let events = lines(&mut body, 1, Duration::from_secs(10)).await;
    assert_eq!(events[0]["object"]["kind"], "ConfigMap");
}
