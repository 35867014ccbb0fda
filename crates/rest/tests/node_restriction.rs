//! NodeRestriction over a real single-node cluster with RBAC and the Node authorizer: a
//! kubelet's credentials (`system:node:n1`) change only its own Node (not its taints, not
//! labels a kubelet may not set), create only its mirror pods, delete, evict and update
//! the status of only the pods bound to it, and ask tokens only for those pods.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::Method;
use kuorum_api::bootstrap_policy::{cluster_role_bindings, cluster_roles_aggregated};
use kuorum_rest::auth::Authenticator;
use kuorum_rest::authz::Authorization;
use kuorum_rest::sa_token::{ServiceAccountConfig, ServiceAccountTokens};
use serde_json::{json, Value};

const TOKENS: &str = "\
root-token,root,u-0,\"system:masters\"
n1-token,system:node:n1,u-3,\"system:nodes\"
";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";
const PODS: &str = "/api/v1/namespaces/dev/pods";

async fn app() -> common::App {
    let base = common::app().await;
    base.namespace("dev").await;
    let tokens = Authenticator::parse_token_file(TOKENS).unwrap();
    let rng = ring::rand::SystemRandom::new();
    let der = ring::signature::EcdsaKeyPair::generate_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .expect("a P-256 key");
    let signing = ServiceAccountConfig {
        signing_key_pem: pem::encode(&pem::Pem::new("PRIVATE KEY", der.as_ref().to_vec())),
        issuers: vec!["https://kuorum.test".into()],
        ..Default::default()
    };
    let auth = Authenticator::new(tokens, false)
        .with_service_account_tokens(Arc::new(ServiceAccountTokens::new(signing).expect("keys read")));
    let state =
        kuorum_rest::RestState { auth: Arc::new(auth), authorization: Authorization::Rbac, ..base.state.clone() };
    let app = common::App { router: kuorum_rest::router(state.clone()), state };
    for (resource, object) in cluster_roles_aggregated().into_iter().chain(cluster_role_bindings()) {
        send(&app, "root-token", Method::POST, &format!("{RBAC}/{resource}"), Some(object)).await;
    }
    app
}

async fn send(app: &common::App, token: &str, method: Method, uri: &str, body: Option<Value>) -> common::Reply {
    let auth = format!("Bearer {token}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    let body = body.map(|b| Body::from(serde_json::to_vec(&b).unwrap())).unwrap_or_else(Body::empty);
    app.request(method, uri, &headers, body).await
}

async fn as_root(app: &common::App, method: Method, uri: &str, body: Value) -> Value {
    let r = send(app, "root-token", method, uri, Some(body)).await;
    assert!(r.status.is_success(), "{uri}: {}", r.json());
    r.json()
}

fn pod(name: &str, node: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}})
}

#[tokio::test]
async fn a_kubelet_changes_only_its_own_node() {
    let app = app().await;
    let r = send(&app, "n1-token", Method::POST, "/api/v1/nodes", Some(json!({"metadata": {"name": "n2"}}))).await;
    r.status_of(403, "Forbidden", r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#);
    let steering = json!({"metadata": {"name": "n1", "labels": {"node-restriction.kubernetes.io/pool": "gold"}}});
    let r = send(&app, "n1-token", Method::POST, "/api/v1/nodes", Some(steering)).await;
    r.status_of(403, "Forbidden", r#"nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: node-restriction.kubernetes.io/pool"#);
    let own = json!({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "team": "a"}}});
    let r = send(&app, "n1-token", Method::POST, "/api/v1/nodes", Some(own)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let mut node = r.json();
    node["metadata"]["labels"]["topology.kubernetes.io/zone"] = json!("z1");
    let r = send(&app, "n1-token", Method::PUT, "/api/v1/nodes/n1", Some(node.clone())).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    let mut untainted = r.json();
    untainted["spec"]["taints"] = json!([]);
    let r = send(&app, "n1-token", Method::PUT, "/api/v1/nodes/n1", Some(untainted)).await;
    r.status_of(403, "Forbidden", r#"nodes "n1" is forbidden: node "n1" is not allowed to modify taints"#);
    // Another node's status neither.
    let other = as_root(&app, Method::POST, "/api/v1/nodes", json!({"metadata": {"name": "n2"}})).await;
    let r = send(&app, "n1-token", Method::PUT, "/api/v1/nodes/n2/status", Some(other)).await;
    r.status_of(403, "Forbidden", r#"nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2""#);
}

#[tokio::test]
async fn a_kubelet_creates_only_mirror_pods_and_touches_only_its_own() {
    let app = app().await;
    let node = as_root(&app, Method::POST, "/api/v1/nodes", json!({"metadata": {"name": "n1"}})).await;
    let r = send(&app, "n1-token", Method::POST, PODS, Some(pod("plain", "n1"))).await;
    r.status_of(403, "Forbidden", r#"pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods"#);
    let mirror = |name: &str, uid: &str| {
        let mut p = pod(name, "n1");
        p["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "hash"});
        p["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": uid, "controller": true}]);
        p
    };
    let r = send(&app, "n1-token", Method::POST, PODS, Some(mirror("static", "wrong"))).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.json());
    let uid = node["metadata"]["uid"].as_str().unwrap();
    let mut with_secret = mirror("secretive", uid);
    with_secret["spec"]["volumes"] = json!([{"name": "s", "secret": {"secretName": "db"}}]);
    let r = send(&app, "n1-token", Method::POST, PODS, Some(with_secret)).await;
    r.status_of(
        403,
        "Forbidden",
        r#"pods "secretive" is forbidden: node "n1" can not create pods that reference secrets"#,
    );
    let r = send(&app, "n1-token", Method::POST, PODS, Some(mirror("static", uid))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());

    // Pods bound elsewhere are not the kubelet's.
    as_root(&app, Method::POST, PODS, pod("there", "n2")).await;
    let here = as_root(&app, Method::POST, PODS, pod("here", "n1")).await;
    let r = send(&app, "n1-token", Method::DELETE, &format!("{PODS}/there"), None).await;
    r.status_of(
        403,
        "Forbidden",
        r#"pods "there" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself"#,
    );
    let there = send(&app, "root-token", Method::GET, &format!("{PODS}/there"), None).await.json();
    let r = send(&app, "n1-token", Method::PUT, &format!("{PODS}/there/status"), Some(there)).await;
    r.status_of(
        403,
        "Forbidden",
        r#"pods "there" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself"#,
    );
    let eviction =
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "there", "namespace": "dev"}});
    let r = send(&app, "n1-token", Method::POST, &format!("{PODS}/there/eviction"), Some(eviction)).await;
    r.status_of(
        403,
        "Forbidden",
        r#"pods "there" is forbidden: node n1 can only evict pods with spec.nodeName set to itself"#,
    );

    // Its own pods' status (a status write keeps the pod's labels, so none are stolen).
    let mut status = here.clone();
    status["status"] = json!({"phase": "Running"});
    status["metadata"]["labels"] = json!({"stolen": "yes"});
    let r = send(&app, "n1-token", Method::PUT, &format!("{PODS}/here/status"), Some(status)).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    assert_eq!((&r.json()["status"]["phase"], r.json()["metadata"].get("labels")), (&json!("Running"), None));

    // Tokens only for its own pods.
    let request = |pod: &Value| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": ["x"], "boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                 "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}}})
    };
    as_root(&app, Method::POST, "/api/v1/namespaces/dev/serviceaccounts", json!({"metadata": {"name": "default"}}))
        .await;
    let tokens = "/api/v1/namespaces/dev/serviceaccounts/default/token";
    let unbound =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": ["x"]}});
    let r = send(&app, "n1-token", Method::POST, tokens, Some(unbound)).await;
    r.status_of(403, "Forbidden", r#"serviceaccounts "default" is forbidden: node requested token not bound to a pod"#);
    let there = send(&app, "root-token", Method::GET, &format!("{PODS}/there"), None).await.json();
    let r = send(&app, "n1-token", Method::POST, tokens, Some(request(&there))).await;
    r.status_of(
        403,
        "Forbidden",
        r#"serviceaccounts "default" is forbidden: node requested token bound to a pod scheduled on a different node"#,
    );
    let r = send(&app, "n1-token", Method::POST, tokens, Some(request(&here))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());

    // Its own pods go.
    let r = send(&app, "n1-token", Method::DELETE, &format!("{PODS}/here"), None).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
}
