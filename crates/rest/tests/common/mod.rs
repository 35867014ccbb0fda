//! A router over a real single-node cluster, and one-request helpers.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use bytes::Bytes;
use http_body_util::BodyExt;
use kuorum_api::seams::{Clock, SplitMix64};
use kuorum_rest::{router, RestState};
use serde_json::Value;
use tower::ServiceExt;

/// A clock stopped at 2026-11-21T23:45:28Z.
pub struct FixedClock;

impl Clock for FixedClock {
    fn now_unix_seconds(&self) -> i64 {
        1_795_304_728
    }
}

pub const NOW: &str = "2026-11-21T23:45:28Z";

pub struct App {
    pub router: Router,
    pub state: RestState,
}

pub async fn app() -> App {
    app_with(kuorum_watch::CacheConfig::default()).await
}

/// An app whose watch cache sends bookmarks every `every` (ticked every 20 ms, as the
/// node ticks its cache every second).
pub async fn app_with_bookmarks(every: Duration) -> App {
    let app = app_with(kuorum_watch::CacheConfig { bookmark_every: every, ..Default::default() }).await;
    let cache = app.state.cache.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            cache.bookmark_tick();
        }
    });
    app
}

pub async fn app_with(config: kuorum_watch::CacheConfig) -> App {
    let cache = kuorum_watch::WatchCache::new(config);
    let cluster = kuorum_raft::testing::single_node_observed(Some(cache.clone())).await;
    let state = RestState::new(cluster, cache, Arc::new(FixedClock), Arc::new(SplitMix64::new(42)));
    App { router: router(state.clone()), state }
}

/// An audit log at Metadata level for every request, written by `app`'s router from now on.
pub struct Audited {
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Audited {
    /// The `ResponseComplete` event of the request answered with `reply`.
    pub fn completed(&self, reply: &Reply) -> Value {
        let id = reply.headers.get("audit-id").unwrap().to_str().unwrap();
        let events = kuorum_rest::audit::read_events(&std::fs::read_to_string(&self.path).unwrap());
        events.into_iter().find(|e| e["auditID"] == id && e["stage"] == "ResponseComplete").unwrap()
    }
}

impl App {
    /// Turns on an audit log of every request at Metadata level.
    pub fn audited(&mut self) -> Audited {
        self.audited_at("Metadata")
    }

    /// Turns on an audit log of every request at `level`.
    pub fn audited_at(&mut self, level: &str) -> Audited {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let policy = format!("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: {level}\n");
        let policy = policy.as_str();
        let policy = kuorum_rest::audit::Policy::parse(policy).unwrap();
        let options = kuorum_rest::audit::LogOptions { path: path.clone(), ..Default::default() };
        self.state.audit = Some(Arc::new(kuorum_rest::audit::AuditLog::open(policy, options).unwrap()));
        self.router = router(self.state.clone());
        Audited { path, _dir: dir }
    }

    /// Creates the CRD `widgets.example.com` (namespaced `Widget`), served at v1 (stored)
    /// and v2, with conversion `None`.
    pub async fn widgets_at_two_versions(&self) {
        let version = |name: &str, storage: bool| {
            serde_json::json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema":
                {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}})
        };
        let crd = serde_json::json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [version("v1", true), version("v2", false)]}});
        let r = self.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).await;
        assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub bytes: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.bytes)))
    }

    pub fn content_type(&self) -> &str {
        self.headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// Asserts a Status with this code, reason and message; answers it.
    pub fn status_of(&self, code: u16, reason: &str, message: &str) -> Value {
        let v = self.json();
        assert_eq!(self.status.as_u16(), code, "{v}");
        assert_eq!(self.content_type(), "application/json");
        assert_eq!(v["kind"], "Status", "{v}");
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["status"], "Failure");
        assert_eq!(v["code"], code, "{v}");
        assert_eq!(v["reason"], reason, "{v}");
        assert_eq!(v["message"], message, "{v}");
        v
    }
}

impl App {
    pub async fn request(&self, method: Method, uri: &str, headers: &[(&str, &str)], body: Body) -> Reply {
        let mut req = Request::builder().method(method).uri(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = self.router.clone().oneshot(req.body(body).unwrap()).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
        Reply { status, headers, bytes }
    }

    pub async fn get(&self, uri: &str) -> Reply {
        self.request(Method::GET, uri, &[], Body::empty()).await
    }

    pub async fn get_with(&self, uri: &str, headers: &[(&str, &str)]) -> Reply {
        self.request(Method::GET, uri, headers, Body::empty()).await
    }

    pub async fn send(&self, method: Method, uri: &str, body: Value) -> Reply {
        let body = Body::from(serde_json::to_vec(&body).unwrap());
        self.request(method, uri, &[("content-type", "application/json")], body).await
    }

    pub async fn post(&self, uri: &str, body: Value) -> Reply {
        self.send(Method::POST, uri, body).await
    }

    pub async fn put(&self, uri: &str, body: Value) -> Reply {
        self.send(Method::PUT, uri, body).await
    }

    pub async fn delete(&self, uri: &str) -> Reply {
        self.request(Method::DELETE, uri, &[], Body::empty()).await
    }

    /// Starts a watch (or any streaming GET): answers the status, headers and a reader of
    /// the body's lines.
    pub async fn watch(&self, uri: &str) -> Stream {
        let req = Request::builder().method(Method::GET).uri(uri).body(Body::empty()).unwrap();
        let resp = self.router.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        Stream { status, headers, body: resp.into_body(), buf: Vec::new(), ended: false }
    }

    /// Replicates `Compact{rv}`: history below `rv` is gone on every node.
    pub async fn compact(&self, rv: u64) {
        self.state
            .cluster
            .write(kuorum_store::Command::Compact { rv }, Duration::from_secs(10))
            .await
            .expect("compaction is written")
            .expect("compaction applies");
    }

    /// The current applied index (the cache is at least there).
    pub fn applied(&self) -> u64 {
        self.state.cluster.applied_index()
    }

    /// Creates a namespace and asserts 201.
    pub async fn namespace(&self, name: &str) -> Value {
        let r = self.post("/api/v1/namespaces", serde_json::json!({"metadata": {"name": name}})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
        r.json()
    }

    /// Creates a ConfigMap and asserts 201.
    pub async fn configmap(&self, ns: &str, name: &str) -> Value {
        let r = self
            .post(
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                serde_json::json!({"metadata": {"name": name}, "data": {"k": "v"}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
        r.json()
    }
}

/// The numeric resourceVersion of an object or list.
pub fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().expect("resourceVersion").parse().expect("numeric")
}

/// A streamed response body read line by line.
pub struct Stream {
    pub status: StatusCode,
    pub headers: HeaderMap,
    body: Body,
    buf: Vec<u8>,
    ended: bool,
}

/// What reading a stream gave.
#[derive(Debug)]
pub enum Next {
    Line(Value),
    /// The body ended (cleanly).
    End,
    /// Nothing within the wait.
    Silent,
}

impl Stream {
    fn take_line(&mut self) -> Option<Value> {
        let pos = self.buf.iter().position(|b| *b == b'\n')?;
        let line: Vec<u8> = self.buf.drain(..=pos).collect();
        let text = &line[..line.len() - 1];
        assert!(!text.is_empty(), "empty line in a watch stream");
        Some(
            serde_json::from_slice(text)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(text))),
        )
    }

    /// The next line, the end, or silence after `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(v) = self.take_line() {
                return Next::Line(v);
            }
            if self.ended {
                assert!(self.buf.is_empty(), "a partial line at the end: {}", String::from_utf8_lossy(&self.buf));
                return Next::End;
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return Next::Silent,
                Ok(None) => self.ended = true,
                Ok(Some(Err(e))) => panic!("body error: {e}"),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        let data: Bytes = data;
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The next event line (within 5 s), or a panic saying what came instead.
    pub async fn next(&mut self) -> Value {
        match self.next_within(Duration::from_secs(5)).await {
            Next::Line(v) => v,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    /// `n` events as (type, name, resourceVersion).
    pub async fn events(&mut self, n: usize) -> Vec<(String, String, u64)> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(summary(&self.next().await));
        }
        out
    }

    /// Asserts nothing arrives (and the stream stays open) for `wait`.
    pub async fn silent_for(&mut self, wait: Duration) {
        match self.next_within(wait).await {
            Next::Silent => {}
            other => panic!("expected silence, got {other:?}"),
        }
    }

    /// Asserts the stream ends within `wait` with nothing more.
    pub async fn ends_within(&mut self, wait: Duration) {
        match self.next_within(wait).await {
            Next::End => {}
            other => panic!("expected the end of the stream, got {other:?}"),
        }
    }
}

/// An event as (type, object name, object resourceVersion); bookmarks have no name.
pub fn summary(ev: &Value) -> (String, String, u64) {
    let t = ev["type"].as_str().expect("type").to_string();
    let obj = &ev["object"];
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let rv = obj["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
    (t, name, rv)
}
