//! RBAC over a real single-node cluster: requests refused with kube-apiserver's 403 until
//! a binding grants them, RoleBindings confined to their namespace, subresources and
//! resource names, service accounts, the validation of roles and bindings, and the
//! access reviews `kubectl auth can-i` and `kubectl auth whoami` send.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::Method;
use kuorum_api::bootstrap_policy::{cluster_role_bindings, cluster_roles_aggregated};
use kuorum_rest::auth::Authenticator;
use kuorum_rest::authz::Authorization;
use serde_json::{json, Value};

const TOKENS: &str = "\
root-token,root,u-0,\"system:masters\"
alice-token,alice,u-1,\"dev\"
ci-token,system:serviceaccount:dev:ci,u-2
n1-token,system:node:n1,u-3,\"system:nodes\"
";

async fn app() -> common::App {
    let base = common::app().await;
    for ns in ["default", "dev", "prod"] {
        base.namespace(ns).await;
    }
    let tokens = Authenticator::parse_token_file(TOKENS).unwrap();
    let state = kuorum_rest::RestState {
        auth: Arc::new(Authenticator::new(tokens, false)),
        authorization: Authorization::Rbac,
        ..base.state.clone()
    };
    let app = common::App { router: kuorum_rest::router(state.clone()), state };
    // The bootstrap policy a node creates: reviews for every authenticated user.
    for (resource, object) in cluster_roles_aggregated().into_iter().chain(cluster_role_bindings()) {
        admin(&app, &format!("{RBAC}/{resource}"), object).await;
    }
    app
}

async fn as_user(app: &common::App, token: &str, method: Method, uri: &str, body: Option<Value>) -> common::Reply {
    let auth = format!("Bearer {token}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    let body = body.map(|b| Body::from(serde_json::to_vec(&b).unwrap())).unwrap_or_else(Body::empty);
    app.request(method, uri, &headers, body).await
}

async fn admin(app: &common::App, uri: &str, body: Value) -> Value {
    let r = as_user(app, "root-token", Method::POST, uri, Some(body)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    r.json()
}

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

fn role(kind: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "rules": rules})
}

fn binding(kind: &str, name: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects,
    })
}

async fn can_i(app: &common::App, token: &str, attrs: Value) -> bool {
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": attrs}});
    let r =
        as_user(app, token, Method::POST, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", Some(review)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    r.json()["status"]["allowed"].as_bool().unwrap()
}

#[tokio::test]
async fn nothing_is_allowed_until_a_binding_grants_it() {
    let app = app().await;
    let r = as_user(&app, "alice-token", Method::GET, "/api/v1/namespaces/dev/configmaps", None).await;
    r.status_of(
        403,
        "Forbidden",
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"dev\"",
    );
    let r = as_user(&app, "alice-token", Method::GET, "/apis/apps/v1/deployments", None).await;
    r.status_of(
        403,
        "Forbidden",
        "deployments.apps is forbidden: User \"alice\" cannot list resource \"deployments\" in API group \"apps\" at the cluster scope",
    );
    let r = as_user(&app, "alice-token", Method::GET, "/metrics", None).await;
    r.status_of(403, "Forbidden", "forbidden: User \"alice\" cannot get path \"/metrics\"");
    // system:masters needs no binding.
    assert_eq!(as_user(&app, "root-token", Method::GET, "/api/v1/namespaces/dev/configmaps", None).await.status, 200);

    // The view ClusterRole bound in dev: reads in dev, nothing in prod, no writes.
    let view = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]);
    admin(&app, &format!("{RBAC}/clusterroles"), role("ClusterRole", "cm-view", view)).await;
    let subjects = json!([{"kind": "Group", "name": "dev", "apiGroup": "rbac.authorization.k8s.io"}]);
    admin(
        &app,
        &format!("{RBAC}/namespaces/dev/rolebindings"),
        binding("RoleBinding", "dev-view", "ClusterRole", "cm-view", subjects),
    )
    .await;
    assert_eq!(as_user(&app, "alice-token", Method::GET, "/api/v1/namespaces/dev/configmaps", None).await.status, 200);
    assert_eq!(as_user(&app, "alice-token", Method::GET, "/api/v1/namespaces/prod/configmaps", None).await.status, 403);
    assert_eq!(as_user(&app, "alice-token", Method::GET, "/api/v1/configmaps", None).await.status, 403);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let r = as_user(&app, "alice-token", Method::POST, "/api/v1/namespaces/dev/configmaps", Some(cm.clone())).await;
    assert_eq!(r.status.as_u16(), 403);

    // A Role naming one object and one subresource, bound to alice by name.
    let rules = json!([
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"], "verbs": ["delete"]},
        {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get"]},
    ]);
    admin(&app, &format!("{RBAC}/namespaces/dev/roles"), role("Role", "writer", rules)).await;
    let subjects = json!([{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]);
    admin(
        &app,
        &format!("{RBAC}/namespaces/dev/rolebindings"),
        binding("RoleBinding", "alice-writer", "Role", "writer", subjects),
    )
    .await;
    let r = as_user(&app, "alice-token", Method::POST, "/api/v1/namespaces/dev/configmaps", Some(cm)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    assert_eq!(
        as_user(&app, "alice-token", Method::DELETE, "/api/v1/namespaces/dev/configmaps/b", None).await.status,
        403
    );
    assert_eq!(
        as_user(&app, "alice-token", Method::DELETE, "/api/v1/namespaces/dev/configmaps/a", None).await.status,
        200
    );
    assert_eq!(as_user(&app, "alice-token", Method::GET, "/api/v1/namespaces/dev/pods/p", None).await.status, 403);
    // Allowed, and then not found: authorization comes first.
    assert_eq!(
        as_user(&app, "alice-token", Method::GET, "/api/v1/namespaces/dev/pods/p/status", None).await.status,
        404
    );
}

#[tokio::test]
async fn cluster_role_bindings_reach_every_namespace_and_service_accounts_are_subjects() {
    let app = app().await;
    let rules = json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["list"]}]);
    admin(&app, &format!("{RBAC}/clusterroles"), role("ClusterRole", "lister", rules)).await;
    let subjects = json!([{"kind": "ServiceAccount", "name": "ci", "namespace": "dev"}]);
    admin(
        &app,
        &format!("{RBAC}/clusterrolebindings"),
        binding("ClusterRoleBinding", "ci-lists", "ClusterRole", "lister", subjects),
    )
    .await;
    for path in ["/api/v1/configmaps", "/api/v1/namespaces/prod/configmaps", "/apis/apps/v1/deployments"] {
        assert_eq!(as_user(&app, "ci-token", Method::GET, path, None).await.status, 200, "{path}");
    }
    assert_eq!(as_user(&app, "ci-token", Method::GET, "/api/v1/namespaces/prod/configmaps/x", None).await.status, 403);
    assert_eq!(as_user(&app, "alice-token", Method::GET, "/api/v1/configmaps", None).await.status, 403);
    // Deleting the binding takes the grant away.
    let r = as_user(&app, "root-token", Method::DELETE, &format!("{RBAC}/clusterrolebindings/ci-lists"), None).await;
    assert_eq!(r.status, 200);
    assert_eq!(as_user(&app, "ci-token", Method::GET, "/api/v1/configmaps", None).await.status, 403);
}

#[tokio::test]
async fn roles_and_bindings_are_validated() {
    let app = app().await;
    let r = as_user(
        &app,
        "root-token",
        Method::POST,
        &format!("{RBAC}/namespaces/dev/roles"),
        Some(role("Role", "bad", json!([{"apiGroups": [""], "resources": ["pods"], "verbs": []}]))),
    )
    .await;
    let v = r.json();
    assert_eq!((r.status.as_u16(), v["reason"].as_str()), (422, Some("Invalid")), "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], "rules[0].verbs");

    let b = binding("ClusterRoleBinding", "b", "Role", "r", json!([{"kind": "User", "name": "x"}]));
    let r = as_user(&app, "root-token", Method::POST, &format!("{RBAC}/clusterrolebindings"), Some(b)).await;
    assert_eq!(r.status.as_u16(), 422, "a ClusterRoleBinding names a ClusterRole: {}", r.json());

    let mut b = admin(
        &app,
        &format!("{RBAC}/namespaces/dev/rolebindings"),
        binding("RoleBinding", "b", "Role", "r", json!([{"kind": "User", "name": "x"}])),
    )
    .await;
    b["roleRef"]["name"] = json!("other");
    let r = as_user(&app, "root-token", Method::PUT, &format!("{RBAC}/namespaces/dev/rolebindings/b"), Some(b)).await;
    let v = r.json();
    assert_eq!(r.status.as_u16(), 422, "{v}");
    assert_eq!(v["details"]["causes"][0]["field"], "roleRef");
}

#[tokio::test]
async fn access_reviews_answer_for_the_asking_user() {
    let app = app().await;
    let attrs = json!({"namespace": "dev", "verb": "list", "resource": "configmaps"});
    assert!(can_i(&app, "root-token", attrs.clone()).await, "system:masters may do anything");
    assert!(!can_i(&app, "alice-token", attrs.clone()).await);
    let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]);
    admin(&app, &format!("{RBAC}/namespaces/dev/roles"), role("Role", "r", rules)).await;
    let subjects = json!([{"kind": "User", "name": "alice"}]);
    admin(&app, &format!("{RBAC}/namespaces/dev/rolebindings"), binding("RoleBinding", "b", "Role", "r", subjects))
        .await;
    assert!(can_i(&app, "alice-token", attrs).await);
    assert!(!can_i(&app, "alice-token", json!({"namespace": "prod", "verb": "list", "resource": "configmaps"})).await);
    assert!(!can_i(&app, "alice-token", json!({"namespace": "dev", "verb": "delete", "resource": "configmaps"})).await);

    // The rules alice holds in dev.
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                        "spec": {"namespace": "dev"}});
    let r = as_user(
        &app,
        "alice-token",
        Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        Some(review),
    )
    .await;
    assert_eq!(r.status.as_u16(), 201);
    let status = &r.json()["status"];
    let granted = status["resourceRules"].as_array().unwrap();
    assert!(granted.contains(&json!({"verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"]})), "{status}");
    assert!(
        granted.iter().any(|r| r["resources"].as_array().unwrap().contains(&json!("selfsubjectaccessreviews"))),
        "system:basic-user's: {status}"
    );
    assert!(status["nonResourceRules"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["nonResourceURLs"].as_array().unwrap().contains(&json!("/version"))));
    assert_eq!(status["incomplete"], false);

    // Who alice is.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let r =
        as_user(&app, "alice-token", Method::POST, "/apis/authentication.k8s.io/v1/selfsubjectreviews", Some(review))
            .await;
    assert_eq!(r.status.as_u16(), 201);
    assert_eq!(
        r.json()["status"]["userInfo"],
        json!({"username": "alice", "uid": "u-1", "groups": ["dev", "system:authenticated"]})
    );

    // A review is created, never read back.
    let r =
        as_user(&app, "root-token", Method::GET, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", None).await;
    assert_eq!(r.status.as_u16(), 405);
    let empty = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}});
    let r = as_user(
        &app,
        "root-token",
        Method::POST,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        Some(empty),
    )
    .await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.json());
}

#[tokio::test]
async fn no_one_grants_what_they_do_not_hold() {
    let app = app().await;
    // alice may manage roles and bindings in dev, and read configmaps there. (Not with
    // verb `*`: that includes `escalate` and `bind`, as in kube-apiserver.)
    let rules = json!([
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
         "verbs": ["create", "get", "list", "update", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
    ]);
    admin(&app, &format!("{RBAC}/namespaces/dev/roles"), role("Role", "manager", rules)).await;
    let subjects = json!([{"kind": "User", "name": "alice"}]);
    admin(
        &app,
        &format!("{RBAC}/namespaces/dev/rolebindings"),
        binding("RoleBinding", "alice-manager", "Role", "manager", subjects.clone()),
    )
    .await;
    let roles = format!("{RBAC}/namespaces/dev/roles");
    // A role within what she holds: fine.
    let reader = role("Role", "reader", json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]));
    assert_eq!(as_user(&app, "alice-token", Method::POST, &roles, Some(reader)).await.status, 201);
    // One granting secrets: refused, as kube-apiserver refuses it.
    let thief = role("Role", "thief", json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]));
    let r = as_user(&app, "alice-token", Method::POST, &roles, Some(thief)).await;
    let v = r.json();
    assert_eq!(r.status.as_u16(), 403, "{v}");
    assert!(
        v["message"].as_str().unwrap().contains("is attempting to grant RBAC permissions not currently held"),
        "{v}"
    );

    // Binding herself to cluster-admin: refused; to a role within her rights: fine.
    let bindings = format!("{RBAC}/namespaces/dev/rolebindings");
    let grab = binding("RoleBinding", "grab", "ClusterRole", "cluster-admin", subjects.clone());
    assert_eq!(as_user(&app, "alice-token", Method::POST, &bindings, Some(grab)).await.status, 403);
    let fine = binding("RoleBinding", "fine", "Role", "reader", json!([{"kind": "User", "name": "bob"}]));
    assert_eq!(as_user(&app, "alice-token", Method::POST, &bindings, Some(fine)).await.status, 201);

    // With `bind` on cluster-admin granted by an admin, the binding goes through.
    let binder = role(
        "Role",
        "binder",
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"],
                "resourceNames": ["cluster-admin"]}]),
    );
    admin(&app, &roles, binder).await;
    admin(&app, &bindings, binding("RoleBinding", "alice-binder", "Role", "binder", subjects.clone())).await;
    let grab = binding("RoleBinding", "grab", "ClusterRole", "cluster-admin", subjects);
    assert_eq!(as_user(&app, "alice-token", Method::POST, &bindings, Some(grab)).await.status, 201);
}

/// What a GET by `token` was served as: its status, and for a 200 whether the body is a
/// watch stream (its first line an event) or a list (read only up to the first frame, so
/// a watch that sends nothing more never holds the test).
async fn served_as(app: &common::App, token: &str, uri: &str) -> (u16, Option<&'static str>) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let req = axum::http::Request::builder()
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    let status = resp.status().as_u16();
    if status != 200 {
        return (status, None);
    }
    let mut body = resp.into_body();
    let frame = tokio::time::timeout(std::time::Duration::from_secs(5), body.frame()).await;
    let first = frame.expect("a first frame within 5 s").expect("a frame").unwrap().into_data().unwrap();
    let text = String::from_utf8_lossy(&first);
    (status, Some(if text.starts_with("{\"type\":") { "watch" } else { "list" }))
}

/// RBAC, the router and metrics read one parse of the request: every spelling of the
/// `watch` parameter is authorized as the verb it is served as.
#[tokio::test]
async fn every_spelling_of_a_watch_is_authorized_as_it_is_served() {
    let app = app().await;
    for (name, verbs) in [("lister", json!(["list"])), ("watcher", json!(["watch"]))] {
        let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}]);
        admin(&app, &format!("{RBAC}/clusterroles"), role("ClusterRole", name, rules)).await;
    }
    // alice lists; the service account ci watches.
    let bind = |name: &str, user: &str| {
        binding("ClusterRoleBinding", name, "ClusterRole", name, json!([{"kind": "User", "name": user}]))
    };
    admin(&app, &format!("{RBAC}/clusterrolebindings"), bind("lister", "alice")).await;
    admin(&app, &format!("{RBAC}/clusterrolebindings"), bind("watcher", "system:serviceaccount:dev:ci")).await;
    admin(&app, "/api/v1/namespaces/dev/configmaps", json!({"metadata": {"name": "a"}})).await;

    let base = "/api/v1/namespaces/dev/configmaps";
    let watches = [
        "?watch=1",
        "?%77atch=1",
        "?watch=%74rue",
        "?watch=True",
        "?watch",
        "?watch&watch=1",
        "?watch=yes",
        "?watch=1&watch=0",
        "?&watch=true&",
    ];
    let lists = ["", "?watch=0", "?watch=false", "?watch=FALSE", "?%77atch=%30", "?watch=0&watch=1", "?xwatch=1"];
    for q in watches {
        let uri = format!("{base}{q}");
        assert_eq!(served_as(&app, "alice-token", &uri).await, (403, None), "a lister's {q}");
        assert_eq!(served_as(&app, "ci-token", &uri).await, (200, Some("watch")), "a watcher's {q}");
    }
    for q in lists {
        let uri = format!("{base}{q}");
        assert_eq!(served_as(&app, "alice-token", &uri).await, (200, Some("list")), "a lister's {q}");
        assert_eq!(served_as(&app, "ci-token", &uri).await, (403, None), "a watcher's {q}");
    }
    // The legacy watch path is a watch too.
    assert_eq!(served_as(&app, "alice-token", "/api/v1/watch/namespaces/dev/configmaps").await, (403, None));
    assert_eq!(served_as(&app, "ci-token", "/api/v1/watch/namespaces/dev/configmaps").await, (200, Some("watch")));
}

/// As kube-apiserver: a binding names a role that must exist to be checked; a role not
/// yet created cannot be bound (and so granted later) without `bind` on it.
#[tokio::test]
async fn a_binding_to_a_role_that_does_not_exist_is_refused_without_bind() {
    let app = app().await;
    let rules = json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings"],
                        "verbs": ["create", "get"]}]);
    admin(&app, &format!("{RBAC}/namespaces/dev/roles"), role("Role", "binder-maker", rules)).await;
    let alice = json!([{"kind": "User", "name": "alice"}]);
    let bindings = format!("{RBAC}/namespaces/dev/rolebindings");
    admin(&app, &bindings, binding("RoleBinding", "alice", "Role", "binder-maker", alice.clone())).await;
    for (kind, role_name) in [("ClusterRole", "later-admin"), ("Role", "later-role")] {
        let b = binding("RoleBinding", "sneak", kind, role_name, alice.clone());
        let r = as_user(&app, "alice-token", Method::POST, &bindings, Some(b)).await;
        let v = r.json();
        assert_eq!((r.status.as_u16(), v["reason"].as_str()), (403, Some("Forbidden")), "{v}");
        assert!(v["message"].as_str().unwrap().contains(&format!("{role_name:?} not found")), "{v}");
    }
    assert_eq!(as_user(&app, "alice-token", Method::GET, &format!("{bindings}/sneak"), None).await.status, 404);
    // With `bind` on that name, it may be bound before it exists.
    let may_bind = json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                           "verbs": ["bind"], "resourceNames": ["later-admin"]}]);
    admin(&app, &format!("{RBAC}/namespaces/dev/roles"), role("Role", "may-bind", may_bind)).await;
    admin(&app, &bindings, binding("RoleBinding", "alice-may-bind", "Role", "may-bind", alice.clone())).await;
    let b = binding("RoleBinding", "sneak", "ClusterRole", "later-admin", alice);
    assert_eq!(as_user(&app, "alice-token", Method::POST, &bindings, Some(b)).await.status, 201);
}

/// Impersonation (`kubectl --as`): a sender with RBAC's `impersonate` on a user, its
/// groups, uid and extras is served as that user (whoami, authorization); one without is
/// refused with kube's message naming what it may not impersonate; groups without a user
/// are 400.
#[tokio::test]
async fn impersonation_acts_as_whom_rbac_lets_the_sender_impersonate() {
    let app = app().await;
    let send = |token: &'static str,
                uri: &'static str,
                headers: Vec<(&'static str, &'static str)>,
                body: Option<Value>| {
        let app = &app;
        async move {
            let auth = format!("Bearer {token}");
            let mut all = vec![("authorization", auth.as_str()), ("content-type", "application/json")];
            all.extend(headers);
            let body = body.map(|b| Body::from(serde_json::to_vec(&b).unwrap())).unwrap_or_else(Body::empty);
            app.request(if uri.contains("selfsubjectreviews") { Method::POST } else { Method::GET }, uri, &all, body)
                .await
        }
    };
    const WHOAMI: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    // A master may act as anyone: whoami says who.
    let as_jane = vec![
        ("impersonate-user", "jane"),
        ("impersonate-group", "qa"),
        ("impersonate-uid", "7"),
        ("impersonate-extra-reason", "debug"),
    ];
    let r = send("root-token", WHOAMI, as_jane.clone(), Some(review.clone())).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    assert_eq!(
        r.json()["status"]["userInfo"],
        json!({"username": "jane", "uid": "7", "groups": ["qa", "system:authenticated"], "extra": {"reason": ["debug"]}})
    );
    // A service account without groups asked for gets its own.
    let r =
        send("root-token", WHOAMI, vec![("impersonate-user", "system:serviceaccount:dev:ci")], Some(review.clone()))
            .await;
    assert_eq!(
        r.json()["status"]["userInfo"]["groups"],
        json!(["system:serviceaccounts", "system:serviceaccounts:dev", "system:authenticated"])
    );
    // Served as jane: jane may not list secrets.
    let r = send("root-token", "/api/v1/namespaces/dev/secrets", vec![("impersonate-user", "jane")], None).await;
    r.status_of(
        403,
        "Forbidden",
        r#"secrets is forbidden: User "jane" cannot list resource "secrets" in API group "" in the namespace "dev""#,
    );
    // Alice may not impersonate, until a role lets her impersonate jane (and only jane).
    let r = send("alice-token", "/api/v1/namespaces/dev/pods", vec![("impersonate-user", "jane")], None).await;
    r.status_of(403, "Forbidden", r#"users "jane" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#);
    let rules =
        json!([{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["jane"]}]);
    admin(&app, &format!("{RBAC}/clusterroles"), role("ClusterRole", "impersonate-jane", rules)).await;
    let subjects = json!([{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]);
    admin(
        &app,
        &format!("{RBAC}/clusterrolebindings"),
        binding("ClusterRoleBinding", "alice-as-jane", "ClusterRole", "impersonate-jane", subjects),
    )
    .await;
    let jane = vec![("impersonate-user", "jane")];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let r = send("alice-token", WHOAMI, jane.clone(), Some(review.clone())).await;
        if r.status.as_u16() == 201 {
            assert_eq!(r.json()["status"]["userInfo"]["username"], "jane");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{}", r.json());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let r = send("alice-token", WHOAMI, vec![("impersonate-user", "bob")], Some(review.clone())).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.json());
    let r = send(
        "alice-token",
        WHOAMI,
        vec![("impersonate-user", "jane"), ("impersonate-group", "system:masters")],
        Some(review.clone()),
    )
    .await;
    r.status_of(403, "Forbidden", r#"groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope"#);
    // Groups without a user.
    let r = send("root-token", WHOAMI, vec![("impersonate-group", "qa")], Some(review)).await;
    assert_eq!(r.status.as_u16(), 400, "{}", r.json());
}

/// A namespaced resource across all namespaces is only read: DELETE there is 405 (as
/// kube-apiserver), and deletes nothing.
#[tokio::test]
async fn deleting_a_collection_across_all_namespaces_is_not_allowed() {
    let app = app().await;
    admin(&app, "/api/v1/namespaces/dev/configmaps", json!({"metadata": {"name": "a"}})).await;
    admin(&app, "/api/v1/namespaces/prod/configmaps", json!({"metadata": {"name": "b"}})).await;
    let r = as_user(&app, "root-token", Method::DELETE, "/api/v1/configmaps", None).await;
    let v = r.json();
    assert_eq!((r.status.as_u16(), v["reason"].as_str()), (405, Some("MethodNotAllowed")), "{v}");
    let left = as_user(&app, "root-token", Method::GET, "/api/v1/configmaps", None).await.json();
    let names: Vec<&str> =
        left["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"a") && names.contains(&"b"), "{names:?}");
}

/// A kubelet's or webhook's authorizer asks about someone else (SubjectAccessReview, or
/// LocalSubjectAccessReview in one namespace), and its authenticator about a token
/// (TokenReview); the asker needs the right to create the review.
#[tokio::test]
async fn subject_access_and_token_reviews_answer_for_whom_they_name() {
    let app = app().await;
    let view_in_dev =
        binding("RoleBinding", "alice-view", "ClusterRole", "view", json!([{"kind": "User", "name": "alice"}]));
    admin(&app, &format!("{RBAC}/namespaces/dev/rolebindings"), view_in_dev).await;
    let sar = |user: &str, ns: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
               "spec": {"user": user, "groups": ["system:authenticated"],
                        "resourceAttributes": {"verb": "list", "resource": "configmaps", "namespace": ns}}})
    };
    let ask = |body: Value, uri: &'static str| {
        let app = &app;
        async move { as_user(app, "root-token", Method::POST, uri, Some(body)).await }
    };
    const SAR: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let r = ask(sar("alice", "dev"), SAR).await;
    assert_eq!((r.status.as_u16(), &r.json()["status"]["allowed"]), (201, &json!(true)), "{}", r.json());
    let r = ask(sar("alice", "prod"), SAR).await;
    assert_eq!(r.json()["status"]["allowed"], false, "{}", r.json());
    let r = ask(sar("bob", "dev"), SAR).await;
    assert_eq!(r.json()["status"]["allowed"], false, "{}", r.json());
    let nobody = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}});
    assert_eq!(ask(nobody, SAR).await.status.as_u16(), 422);

    // Local: the namespace in the spec must be the URL's.
    let mut local = sar("alice", "dev");
    local["kind"] = json!("LocalSubjectAccessReview");
    let r = ask(local.clone(), "/apis/authorization.k8s.io/v1/namespaces/dev/localsubjectaccessreviews").await;
    assert_eq!((r.status.as_u16(), &r.json()["status"]["allowed"]), (201, &json!(true)), "{}", r.json());
    let r = ask(local, "/apis/authorization.k8s.io/v1/namespaces/prod/localsubjectaccessreviews").await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.json());

    // A user without the right to create reviews of others cannot ask.
    let r = as_user(&app, "alice-token", Method::POST, SAR, Some(sar("alice", "dev"))).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.json());

    // Whom a token authenticates.
    let review = |token: &str| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    const TR: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
    let r = ask(review("alice-token"), TR).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    assert_eq!(
        r.json()["status"],
        json!({"authenticated": true, "user": {"username": "alice", "uid": "u-1", "groups": ["dev", "system:authenticated"]}})
    );
    let r = ask(review("forged"), TR).await;
    assert_eq!(r.json()["status"]["authenticated"], false, "{}", r.json());
}

/// kube's Node authorizer before RBAC, as a SubjectAccessReview and a kubelet's own
/// requests see it: a node reads the secrets and configmaps its pods use and no others,
/// creates tokens for its pods' service accounts, keeps its own lease, and otherwise has
/// the `system:node` role's rules.
#[tokio::test]
async fn the_node_authorizer_answers_for_kubelets() {
    let app = app().await;
    admin(&app, "/api/v1/namespaces/dev/serviceaccounts", json!({"metadata": {"name": "runner"}})).await;
    let pod = json!({"metadata": {"name": "web"}, "spec": {"nodeName": "n1", "serviceAccountName": "runner",
        "volumes": [{"name": "db", "secret": {"secretName": "db"}}],
        "containers": [{"name": "c", "image": "x", "envFrom": [{"configMapRef": {"name": "cfg"}}]}]}});
    admin(&app, "/api/v1/namespaces/dev/pods", pod).await;
    for (plural, name) in [("secrets", "db"), ("secrets", "other"), ("configmaps", "cfg")] {
        admin(&app, &format!("/api/v1/namespaces/dev/{plural}"), json!({"metadata": {"name": name}})).await;
    }
    const SAR: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let ask = |user: &str, attrs: Value| {
        let app = &app;
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                          "spec": {"user": user, "groups": ["system:nodes", "system:authenticated"], "resourceAttributes": attrs}});
        async move { as_user(app, "root-token", Method::POST, SAR, Some(body)).await.json()["status"].clone() }
    };
    let get = |resource: &str, ns: &str, name: &str| json!({"verb": "get", "resource": resource, "namespace": ns, "name": name});
    let n1 = "system:node:n1";
    assert_eq!(ask(n1, get("secrets", "dev", "db")).await, json!({"allowed": true}));
    assert_eq!(ask(n1, get("configmaps", "dev", "cfg")).await["allowed"], true);
    assert_eq!(
        ask(n1, get("secrets", "dev", "other")).await,
        json!({"allowed": false, "reason": "no relationship found between node 'n1' and this object"})
    );
    assert_eq!(ask("system:node:n2", get("secrets", "dev", "db")).await["allowed"], false);
    let list = json!({"verb": "list", "resource": "secrets", "namespace": "dev"});
    assert_eq!(ask(n1, list).await["reason"], "No Object name found");
    let token = |sa: &str| json!({"verb": "create", "resource": "serviceaccounts", "subresource": "token", "namespace": "dev", "name": sa});
    assert_eq!(ask(n1, token("runner")).await["allowed"], true);
    assert_eq!(ask(n1, token("default")).await["allowed"], false);
    let lease = |name: &str| json!({"verb": "update", "group": "coordination.k8s.io", "resource": "leases", "namespace": "kube-node-lease", "name": name});
    assert_eq!(ask(n1, lease("n1")).await["allowed"], true);
    assert_eq!(
        ask(n1, lease("n2")).await["reason"],
        "can only access node lease with the same name as the requesting node"
    );
    // The rest: the system:node role's rules.
    assert_eq!(ask(n1, get("nodes", "", "n1")).await["allowed"], true);
    assert_eq!(ask(n1, json!({"verb": "delete", "resource": "namespaces", "name": "dev"})).await["allowed"], false);
    // Not a node: RBAC alone.
    let alice = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                       "spec": {"user": "alice", "groups": ["dev"], "resourceAttributes": get("secrets", "dev", "db")}});
    let r = as_user(&app, "root-token", Method::POST, SAR, Some(alice)).await.json();
    assert_eq!(r["status"]["allowed"], false);

    // The kubelet's own requests.
    let r = as_user(&app, "n1-token", Method::GET, "/api/v1/namespaces/dev/secrets/db", None).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    let r = as_user(&app, "n1-token", Method::GET, "/api/v1/namespaces/dev/secrets/other", None).await;
    r.status_of(403, "Forbidden", "secrets \"other\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"dev\": no relationship found between node 'n1' and this object");
}

/// An admission policy asks the authorizer about the requester: config maps with a
/// `privileged` key may be created only by who may create `configmaps/privileged`, and
/// a check for a service account answers for it, not for the requester.
#[tokio::test]
async fn admission_policies_ask_the_authorizer() {
    let app = app().await;
    let admission = "/apis/admissionregistration.k8s.io/v1";
    admin(
        &app,
        &format!("{RBAC}/namespaces/dev/roles"),
        role("Role", "cm-writer", json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}])),
    )
    .await;
    admin(
        &app,
        &format!("{RBAC}/namespaces/dev/rolebindings"),
        binding(
            "RoleBinding",
            "writers",
            "Role",
            "cm-writer",
            json!([{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "ci", "namespace": "dev"}]),
        ),
    )
    .await;
    admin(
        &app,
        &format!("{RBAC}/namespaces/dev/roles"),
        role(
            "Role",
            "privileged",
            json!([{"apiGroups": [""], "resources": ["configmaps/privileged"], "verbs": ["create"]}]),
        ),
    )
    .await;
    admin(
        &app,
        &format!("{RBAC}/namespaces/dev/rolebindings"),
        binding(
            "RoleBinding",
            "privileged",
            "Role",
            "privileged",
            json!([{"kind": "ServiceAccount", "name": "ci", "namespace": "dev"}]),
        ),
    )
    .await;
    admin(&app, &format!("{admission}/validatingadmissionpolicies"), json!({
        "metadata": {"name": "privileged-data"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "validations": [
                {"expression": "!has(object.data) || !('privileged' in object.data) || authorizer.requestResource.subresource('privileged').check('create').allowed()",
                 "message": "privileged data needs configmaps/privileged"},
                {"expression": "authorizer.serviceAccount('dev', 'ci').group('').resource('configmaps').namespace('dev').check('create').allowed()"}]}})).await;
    admin(
        &app,
        &format!("{admission}/validatingadmissionpolicybindings"),
        json!({
        "metadata": {"name": "privileged-data"},
        "spec": {"policyName": "privileged-data", "validationActions": ["Deny"]}}),
    )
    .await;

    let cm = |name: &str, data: Value| json!({"metadata": {"name": name}, "data": data});
    let uri = "/api/v1/namespaces/dev/configmaps";
    let plain = as_user(&app, "alice-token", Method::POST, uri, Some(cm("plain", json!({"a": "b"})))).await;
    assert_eq!(plain.status.as_u16(), 201, "{}", plain.json());
    let before = app.applied();
    let r = as_user(&app, "alice-token", Method::POST, uri, Some(cm("p1", json!({"privileged": "x"})))).await;
    let v = r.json();
    assert_eq!(r.status.as_u16(), 422, "{v}");
    assert!(v["message"].as_str().unwrap().ends_with("privileged data needs configmaps/privileged"), "{v}");
    assert_eq!(app.applied(), before, "nothing proposed");
    let r = as_user(&app, "ci-token", Method::POST, uri, Some(cm("p2", json!({"privileged": "x"})))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let r = as_user(&app, "root-token", Method::POST, uri, Some(cm("p3", json!({"privileged": "x"})))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());

    // Once the service account may no longer create config maps, the second validation
    // refuses everyone, whoever asks.
    let r =
        as_user(&app, "root-token", Method::DELETE, &format!("{RBAC}/namespaces/dev/rolebindings/writers"), None).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    let r = as_user(&app, "root-token", Method::POST, uri, Some(cm("p4", json!({})))).await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.json());
}
