//! A router over a real single-node cluster, and one-request helpers.

#![allow(dead_code)]

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
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
    let cache = kuorum_watch::WatchCache::new(kuorum_watch::CacheConfig::default());
    let cluster = kuorum_raft::testing::single_node_observed(Some(cache.clone())).await;
    let state = RestState::new(cluster, cache, Arc::new(FixedClock), Arc::new(SplitMix64::new(42)));
    App { router: router(state.clone()), state }
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
