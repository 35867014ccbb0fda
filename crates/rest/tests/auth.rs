//! Authentication over a real single-node cluster: bearer tokens from kube-apiserver's
//! token file, client certificates handed over by the listener, anonymous requests
//! refused (or served as `system:anonymous` when allowed), the health endpoints open,
//! and the node's own endpoints for `system:masters` only.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use axum::routing::get;
use axum::{Extension, Router};
use http_body_util::BodyExt;
use kuorum_rest::auth::{Authenticator, ClientCert, UserInfo};
use kuorum_rest::router_with;
use serde_json::Value;
use tower::ServiceExt;

const TOKENS: &str = "\
# token,user,uid,groups
s3cret-admin,root,u-0,\"system:masters\"
s3cret-dev,dev-user,u-1,\"dev,qa\"
";

/// The REST API plus one node endpoint that answers who asked.
async fn app(anonymous: bool) -> Router {
    let base = common::app().await;
    for ns in ["default", "kube-system", "kube-public"] {
        base.namespace(ns).await;
    }
    let tokens = Authenticator::parse_token_file(TOKENS).unwrap();
    let state = kuorum_rest::RestState { auth: Arc::new(Authenticator::new(tokens, anonymous)), ..base.state.clone() };
    let whoami = Router::new()
        .route(
            "/kuorum/v1/whoami",
            get(|Extension(u): Extension<UserInfo>| async move { format!("{} {:?}", u.name, u.groups) }),
        )
        .route("/apis/example.com/v1/whoami", get(|Extension(u): Extension<UserInfo>| async move { u.name }));
    router_with(state, whoami)
}

async fn call(
    app: &Router,
    path: &str,
    token: Option<&str>,
    cert: Option<UserInfo>,
) -> (StatusCode, String, Option<String>) {
    let mut req = Request::builder().method(Method::GET).uri(path);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let mut req = req.body(Body::empty()).unwrap();
    req.extensions_mut().insert(ClientCert(cert));
    let resp = app.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let challenge = resp.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_string());
    let body = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    (status, body, challenge)
}

#[tokio::test]
async fn requests_without_credentials_get_401_and_probes_stay_open() {
    let app = app(false).await;
    let (status, body, challenge) = call(&app, "/api/v1/namespaces", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v["kind"].as_str(), v["reason"].as_str(), v["code"].as_u64()),
        (Some("Status"), Some("Unauthorized"), Some(401))
    );
    assert_eq!(challenge.as_deref(), Some("Bearer"));
    for open in ["/livez", "/readyz", "/healthz"] {
        assert_eq!(call(&app, open, None, None).await.0, StatusCode::OK, "{open}");
    }
    // /metrics and discovery are not open.
    assert_eq!(call(&app, "/metrics", None, None).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(call(&app, "/api", None, None).await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn tokens_and_certificates_name_the_user() {
    let app = app(false).await;
    let (status, body, _) = call(&app, "/apis/example.com/v1/whoami", Some("s3cret-dev"), None).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "dev-user"));
    assert_eq!(call(&app, "/api/v1/namespaces", Some("s3cret-dev"), None).await.0, StatusCode::OK);
    // An unknown token is refused, whatever certificate the connection has.
    let cert = UserInfo::new("alice", &["system:masters"]);
    assert_eq!(call(&app, "/api/v1/namespaces", Some("guess"), Some(cert.clone())).await.0, StatusCode::UNAUTHORIZED);
    let (status, body, _) = call(&app, "/kuorum/v1/whoami", None, Some(cert)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, r#"alice ["system:masters", "system:authenticated"]"#);
}

#[tokio::test]
async fn the_nodes_own_endpoints_need_system_masters() {
    let app = app(false).await;
    let (status, body, _) = call(&app, "/kuorum/v1/whoami", Some("s3cret-dev"), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["reason"], "Forbidden");
    assert!(v["message"].as_str().unwrap().contains("dev-user"), "{v}");
    let (status, body, _) = call(&app, "/kuorum/v1/whoami", Some("s3cret-admin"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.starts_with("root "), "{body}");
}

#[tokio::test]
async fn anonymous_requests_are_served_only_when_allowed() {
    let app = app(true).await;
    let (status, body, _) = call(&app, "/apis/example.com/v1/whoami", None, None).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "system:anonymous"));
    // Allowed anonymous users are still not masters.
    assert_eq!(call(&app, "/kuorum/v1/whoami", None, None).await.0, StatusCode::FORBIDDEN);
    // With no authentication at all (the simulator, --insecure) the node's endpoints are open.
    let base = common::app().await;
    let open = router_with(
        base.state.clone(),
        Router::new().route("/kuorum/v1/whoami", get(|Extension(u): Extension<UserInfo>| async move { u.name })),
    );
    let (status, body, _) = call(&open, "/kuorum/v1/whoami", None, None).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "system:anonymous"));
}

#[tokio::test]
async fn the_authenticators_debug_output_holds_no_token() {
    let tokens = Authenticator::parse_token_file(TOKENS).unwrap();
    let shown = format!("{:?}", Authenticator::new(tokens, false));
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("tokens: 2"), "{shown}");
}

#[tokio::test]
async fn a_user_holds_at_most_the_cap_of_watches() {
    let base = common::app().await;
    base.namespace("default").await;
    let tokens = Authenticator::parse_token_file(TOKENS).unwrap();
    let state = kuorum_rest::RestState {
        auth: Arc::new(Authenticator::new(tokens, false).with_watch_cap(2)),
        ..base.state.clone()
    };
    let app = router_with(state, Router::new());
    let watch = |token: &'static str| {
        let app = app.clone();
        async move {
            let req = Request::get("/api/v1/namespaces/default/configmaps?watch=1")
                .header("authorization", format!("Bearer {token}"))
                .body(Body::empty())
                .unwrap();
            app.oneshot(req).await.unwrap()
        }
    };
    let first = watch("s3cret-dev").await;
    let second = watch("s3cret-dev").await;
    assert_eq!((first.status(), second.status()), (StatusCode::OK, StatusCode::OK));
    let third = watch("s3cret-dev").await;
    assert_eq!(third.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(third.headers().get("retry-after").unwrap(), "1");
    let body = third.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert!(v["message"].as_str().unwrap().contains("dev-user"), "{v}");
    // Another user is not affected, and lists are not watches.
    assert_eq!(watch("s3cret-admin").await.status(), StatusCode::OK);
    assert_eq!(call(&app, "/api/v1/namespaces/default/configmaps", Some("s3cret-dev"), None).await.0, StatusCode::OK);
    // Closing a watch (dropping its stream) gives its place back.
    drop(first);
    assert_eq!(watch("s3cret-dev").await.status(), StatusCode::OK);
}

/// An authenticating proxy (its certificate verified against the requestheader CA, as
/// the listener reports with `FrontProxyCert`) names the user in `X-Remote-*` headers;
/// the same headers from anyone else are ignored.
#[tokio::test]
async fn front_proxy_headers_name_the_user_only_from_a_front_proxy_connection() {
    use kuorum_rest::auth::{FrontProxyCert, RequestHeader, UserExtra};
    let base = common::app().await;
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let auth = Authenticator::new(Default::default(), false).with_request_header(RequestHeader {
        username: names(&["X-Remote-User"]),
        group: names(&["X-Remote-Group"]),
        extra_prefixes: names(&["X-Remote-Extra-"]),
        uid: names(&["X-Remote-Uid"]),
    });
    let state = kuorum_rest::RestState { auth: Arc::new(auth), ..base.state.clone() };
    let whoami = Router::new().route(
        "/apis/example.com/v1/whoami",
        get(|Extension(u): Extension<UserInfo>, extra: Option<Extension<UserExtra>>| async move {
            format!("{} {} {:?} {:?}", u.name, u.uid, u.groups, extra.map(|Extension(e)| e.0).unwrap_or_default())
        }),
    );
    let app = router_with(state, whoami);
    let ask = |proxy: bool, cert: Option<UserInfo>, user: Option<&str>| {
        let mut req = Request::builder().method(Method::GET).uri("/apis/example.com/v1/whoami");
        if let Some(u) = user {
            req = req
                .header("x-remote-user", u)
                .header("x-remote-uid", "u-7")
                .header("x-remote-group", "dev")
                .header("x-remote-group", "qa")
                .header("x-remote-extra-acme.com%2Fproject", "blue");
        }
        let mut req = req.body(Body::empty()).unwrap();
        req.extensions_mut().insert(ClientCert(cert));
        if proxy {
            req.extensions_mut().insert(FrontProxyCert("front-proxy-client".into()));
        }
        let app = app.clone();
        async move {
            let resp = app.oneshot(req).await.unwrap();
            let status = resp.status();
            (status, String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap())
        }
    };
    let (status, body) = ask(true, None, Some("jane")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body, r#"jane u-7 ["dev", "qa", "system:authenticated"] {"acme.com/project": ["blue"]}"#);
    // Not a proxy: the headers are nobody's word, and there is no other credential.
    assert_eq!(ask(false, None, Some("jane")).await.0, StatusCode::UNAUTHORIZED);
    // A user's own certificate with the headers: the certificate's user, not jane.
    let (status, body) = ask(false, Some(UserInfo::new("bob", &[])), Some("jane")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.starts_with("bob "), "{body}");
    // A proxy without a username header authenticates no one.
    assert_eq!(ask(true, None, None).await.0, StatusCode::UNAUTHORIZED);
}
