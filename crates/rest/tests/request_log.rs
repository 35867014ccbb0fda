//! Request ids: every request gets kube-apiserver's `Audit-Id`, answered in the header and
//! named in the log lines written while serving it, with the user.
//!
//! One test in its own binary: tracing caches whether a log line is wanted per call site,
//! and tests on other threads without a subscriber would race this one's capture.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use kuorum_rest::auth::{Authenticator, ClientCert};
use tower::ServiceExt;

mod common;

async fn app(anonymous: bool) -> axum::Router {
    let base = common::app().await;
    let tokens = Authenticator::parse_token_file("s3cret-dev,dev-user,u-1,\"dev\"\n").unwrap();
    let state = kuorum_rest::RestState { auth: Arc::new(Authenticator::new(tokens, anonymous)), ..base.state.clone() };
    kuorum_rest::router(state)
}

/// Log lines written while a test runs, for the request-id check.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn every_request_has_an_id_in_its_answer_and_its_log_lines() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("kuorum_rest=debug")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let app = app(false).await;

    // A new id per request, UUID-shaped, in kube-apiserver's Audit-Id header.
    let req = |id: Option<&str>| {
        let mut b = Request::builder().uri("/api/v1/namespaces").header("authorization", "Bearer s3cret-dev");
        if let Some(id) = id {
            b = b.header("audit-id", id);
        }
        let mut r = b.body(Body::empty()).unwrap();
        r.extensions_mut().insert(ClientCert(None));
        r
    };
    let first = app.clone().oneshot(req(None)).await.unwrap();
    let second = app.clone().oneshot(req(None)).await.unwrap();
    let id_of = |r: &axum::response::Response| r.headers().get("audit-id").unwrap().to_str().unwrap().to_string();
    let (a, b) = (id_of(&first), id_of(&second));
    assert_ne!(a, b);
    assert_eq!(a.len(), 36, "{a}");
    // A client's own id is kept; one that could mangle a log line is replaced.
    assert_eq!(id_of(&app.clone().oneshot(req(Some("client-chosen-1"))).await.unwrap()), "client-chosen-1");
    assert_ne!(id_of(&app.clone().oneshot(req(Some("bad id\\n"))).await.unwrap()), "bad id\\n");

    // The log line of a served request names its id, its user and its outcome.
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let line = text.lines().find(|l| l.contains(&a) && l.contains("served")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("user=dev-user") && line.contains("status=200"), "{line}");
    assert!(!text.contains("s3cret"), "tokens are never logged");
}
