//! ServiceAccount tokens through the router over real single-node clusters:
//! `serviceaccounts/token` answers a JWT with kube's header and claims; the token
//! authenticates as its service account (SelfSubjectReview, RBAC) on this node and on
//! another configured with the same key; expired, foreign-audience, orphaned (deleted or
//! recreated service account, deleted pod) and foreign-key tokens are refused 401 and
//! explained by a TokenReview; the OIDC discovery documents; kube's 404/409/422/400s;
//! hostile bearer tokens refused without a panic.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::Method;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use kuorum_api::bootstrap_policy::{cluster_role_bindings, cluster_roles_aggregated};
use kuorum_api::seams::Clock;
use kuorum_rest::auth::Authenticator;
use kuorum_rest::authz::Authorization;
use kuorum_rest::sa_token::{ServiceAccountConfig, ServiceAccountTokens};
use serde_json::{json, Value};

/// TEST ONLY: an RSA key made for these tests with `openssl genrsa -traditional 2048`.
/// It signs nothing anywhere else; never use it outside tests.
const TEST_ONLY_RSA_KEY: &str = "-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAxta2nIdqM0u/MeG7+X9PT/nn7rY4FR6mTuWSJLPanMptw1aV
odR7x5T/yhRGteeUIZm7Nk+PXvgWkc3bFib9jk4ddovVhEM3ThZ9+OTXoAxsVA37
EFfyM6El6OAn5Iy7JU5KJCR1mxkivfXuDYrfWGg+lF/isD6tpmURj40L0iOBJwKg
SP/qimu+81S80qR5K1QCrJh4m8hjz80E+Fi8MMYNj0ZyRuklTkINyWTHKAAakws9
HrkAvfep723NgrNksyCaUBPiA8QXquYr7pvAoHPgwTzowf7NxVShW17Z31xiBc1d
nSthwuvfeGcnUp/y8T7j22suqiwOZxFfGGPwjQIDAQABAoIBAE59qrdukyMtpwtb
Vxc9xMLG3WHzh376yt7BK+gWIVmcZSjjkIzB8pzN+g085M7g3C5JX8goLunn2Az1
bKM5gAUBXAsUVxRvbjECmva5605wKQEjRbTlaqQr3GmptsW3MhcfaRAMXmp7ySWg
o7iv1cux1uY+VZ+KFoVlR0HaBU0NabFHDCO4FN9ydELyVAeWamxCw2BOiaQT5G38
kADh81umzP/p+cxurErlzQLduehKZFj4k0EF2RKhnE1jj0Je76calrCdQdXsnMcN
2bdZXF8v2DSofjv2tP7WBy3wI3EiyLmeLKilLnMPoDfWmRkPqA8q+Xexbb8Kz01a
8iuBMqcCgYEA6SEDZsSweemGjnq20qB8pFCDzOeLtfV7cJNZbsB36POHZqdr1gyI
hUf3s7+8qBr9n026Fmfei82JkMOjg3UnzbUyVZ2s5u98HV1DtNp/1iDenZEg6P3d
PqQKZv7NGagtik+lDV6218ywGFc2JGUKTw1x3x+OWTswKbvhGj+KLUsCgYEA2liB
+plXRC7OuDzSoMmUw+wBOw7isgJgmPOKv0ZmdfBmbh5ac8qN5kL/f6D8P+dM1uYi
LieYljuLZ4IhGHZs1GC9QNm6LqCyruiDCNioDtlLANBxd5IXJkXHdurGCNrzRgCN
aZVBMgsctVaHmiTHXliverDXEz7lgZ+kn80vaocCgYAL88VY33ysw2xCocf9xHyf
cAFR4A0ppwxNGUDcjMGZD+NBQBQnRT06mBX7ATmK5Ndb84A25dxjDoafBWi8tKT1
xvRtr0fODzktyDpQa2Nidwzyxx4I0/sj2wUtgqLBTf4HuU2dAd4d8kCU/uOnugZt
RyMvbU6/BGnTue4wilFrQQKBgH/D3MMUKYFnVmVuid22N0vx9MJnMnXxeC7oC99j
RZ9rvbRgJJOvChucRr+bJyAJq+fwID4bw2jdjPRTrCQRYBtiRDwHa6/PLt+0hMCP
br/JnN7sGglavhsSJ+bI+HrEDCiBOD55LP4ojHL8IDstnE/z2zMS+bd0TX3tObqc
qUtPAoGBAINquxxiIthXfHSIn5Yw82NNvmPXOMIfEgIVHcjjIm119LMgbZZRC242
vQ75R1KjE7+0znomClJFPuGeJdoSRjoHg1ssMzFJTuAn+yYwZEw6IiUyqAZKWXMB
d4r0hzaxsi5raKA+QsP1a+uZDOc8SB2lIOIstLRG98hx3i2kdGHE
-----END RSA PRIVATE KEY-----";

/// `openssl rsa -pubout -outform DER | openssl dgst -sha256 -binary | base64url` of
/// that key: kube's keyIDFromPublicKey.
const TEST_ONLY_RSA_KID: &str = "02zo0h1-XqSYLuCjYMq4TzWm2MkUV4hExHjCEJNPITY";

const ISSUER: &str = "https://kuorum.test";
const JWKS_URI: &str = "https://kuorum.test:6443/openid/v1/jwks";
const ADMIN: &str = "admin-token";
const SA: &str = "/api/v1/namespaces/default/serviceaccounts";
const TOKEN_REVIEWS: &str = "/apis/authentication.k8s.io/v1/tokenreviews";

/// A P-256 key made now (PKCS#8 PEM), for "another key".
fn ec_key_pem() -> String {
    let rng = ring::rand::SystemRandom::new();
    let der = ring::signature::EcdsaKeyPair::generate_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .expect("a P-256 key");
    pem::encode(&pem::Pem::new("PRIVATE KEY", der.as_ref().to_vec()))
}

fn config(signing_key_pem: &str) -> ServiceAccountConfig {
    ServiceAccountConfig {
        signing_key_pem: signing_key_pem.into(),
        issuers: vec![ISSUER.into()],
        extend_expiration: true,
        jwks_uri: JWKS_URI.into(),
        ..Default::default()
    }
}

/// A clock two hours after the common one.
struct Later;

impl Clock for Later {
    fn now_unix_seconds(&self) -> i64 {
        common::FixedClock.now_unix_seconds() + 2 * 3600
    }
}

/// A router over a new single-node cluster with RBAC, the bootstrap policy, a master's
/// static token, the namespace `default` and, when given, service account tokens.
async fn app(tokens: Option<ServiceAccountConfig>) -> common::App {
    let base = common::app().await;
    base.namespace("default").await;
    let statics = Authenticator::parse_token_file("admin-token,root,u-0,\"system:masters\"").unwrap();
    let mut auth = Authenticator::new(statics, false);
    if let Some(c) = tokens {
        auth = auth.with_service_account_tokens(Arc::new(ServiceAccountTokens::new(c).expect("keys read")));
    }
    let state =
        kuorum_rest::RestState { auth: Arc::new(auth), authorization: Authorization::Rbac, ..base.state.clone() };
    let app = common::App { router: kuorum_rest::router(state.clone()), state };
    for (resource, object) in cluster_roles_aggregated().into_iter().chain(cluster_role_bindings()) {
        let r =
            call(&app, ADMIN, Method::POST, &format!("/apis/rbac.authorization.k8s.io/v1/{resource}"), Some(object))
                .await;
        assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    }
    app
}

/// The same cluster seen through a router whose clock is two hours later.
fn later(app: &common::App) -> common::App {
    let state = kuorum_rest::RestState { clock: Arc::new(Later), ..app.state.clone() };
    common::App { router: kuorum_rest::router(state.clone()), state }
}

async fn call(app: &common::App, token: &str, method: Method, uri: &str, body: Option<Value>) -> common::Reply {
    let auth = format!("Bearer {token}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    let body = body.map(|b| Body::from(serde_json::to_vec(&b).unwrap())).unwrap_or_else(Body::empty);
    app.request(method, uri, &headers, body).await
}

async fn created(app: &common::App, uri: &str, body: Value) -> Value {
    let r = call(app, ADMIN, Method::POST, uri, Some(body)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    r.json()
}

async fn service_account(app: &common::App, name: &str) -> Value {
    created(app, SA, json!({"metadata": {"name": name}})).await
}

async fn pod(app: &common::App, name: &str, service_account: &str) -> Value {
    let body = json!({"metadata": {"name": name}, "spec": {"serviceAccountName": service_account,
                      "nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]}});
    created(app, "/api/v1/namespaces/default/pods", body).await
}

/// POST of a TokenRequest as the master: the reply.
async fn request_token(app: &common::App, sa: &str, spec: Value) -> common::Reply {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    call(app, ADMIN, Method::POST, &format!("{SA}/{sa}/token"), Some(body)).await
}

async fn token(app: &common::App, sa: &str, spec: Value) -> String {
    let r = request_token(app, sa, spec).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    r.json()["status"]["token"].as_str().expect("a token").to_string()
}

fn part(token: &str, n: usize) -> Value {
    let text = token.split('.').nth(n).expect("three parts");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).expect("base64url")).expect("JSON")
}

async fn whoami(app: &common::App, token: &str) -> common::Reply {
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    call(app, token, Method::POST, "/apis/authentication.k8s.io/v1/selfsubjectreviews", Some(review)).await
}

async fn review(app: &common::App, token: &str, audiences: &[&str]) -> Value {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                      "spec": {"token": token, "audiences": audiences}});
    let r = call(app, ADMIN, Method::POST, TOKEN_REVIEWS, Some(body)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    r.json()["status"].clone()
}

#[tokio::test]
async fn a_token_request_answers_a_jwt_with_kubes_header_and_claims() {
    let app = app(Some(config(TEST_ONLY_RSA_KEY))).await;
    let sa = service_account(&app, "build").await;
    let sa_uid = sa["metadata"]["uid"].as_str().unwrap();
    let now = common::FixedClock.now_unix_seconds();

    let r = request_token(&app, "build", json!({"audiences": ["vault"], "expirationSeconds": 600})).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let answer = r.json();
    assert_eq!((&answer["apiVersion"], &answer["kind"]), (&json!("authentication.k8s.io/v1"), &json!("TokenRequest")));
    assert_eq!(
        answer["metadata"],
        json!({"name": "build", "namespace": "default", "uid": sa_uid, "creationTimestamp": common::NOW})
    );
    assert_eq!(answer["spec"], json!({"audiences": ["vault"], "expirationSeconds": 600}));
    assert_eq!(answer["status"]["expirationTimestamp"], kuorum_api::time::format(now + 600));

    let token = answer["status"]["token"].as_str().unwrap();
    assert_eq!(part(token, 0), json!({"alg": "RS256", "kid": TEST_ONLY_RSA_KID}));
    let claims = part(token, 1);
    let jti = claims["jti"].as_str().expect("a jti");
    assert_eq!(jti.len(), 36, "a UUID: {jti}");
    assert_eq!(
        claims,
        json!({"aud": ["vault"], "exp": now + 600, "iat": now, "iss": ISSUER, "jti": jti,
               "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "build", "uid": sa_uid}},
               "nbf": now, "sub": "system:serviceaccount:default:build"})
    );
    // go-jose writes the claims' keys sorted, as a Go map.
    let text = String::from_utf8(URL_SAFE_NO_PAD.decode(token.split('.').nth(1).unwrap()).unwrap()).unwrap();
    assert!(text.starts_with(r#"{"aud":["vault"],"exp":"#), "{text}");

    // Defaults: the API audiences (the issuer) and an hour.
    let r = request_token(&app, "build", json!({})).await;
    assert_eq!(r.json()["spec"], json!({"audiences": [ISSUER], "expirationSeconds": 3600}));
    assert_eq!(part(r.json()["status"]["token"].as_str().unwrap(), 1)["exp"], now + 3600);
}

#[tokio::test]
async fn the_token_authenticates_as_its_service_account() {
    let app = app(Some(config(TEST_ONLY_RSA_KEY))).await;
    let sa = service_account(&app, "build").await;
    let token = token(&app, "build", json!({})).await;

    let r = whoami(&app, &token).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let jti = part(&token, 1)["jti"].as_str().unwrap().to_string();
    assert_eq!(
        r.json()["status"]["userInfo"],
        json!({"username": "system:serviceaccount:default:build", "uid": sa["metadata"]["uid"],
               "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
               "extra": {"authentication.kubernetes.io/credential-id": [format!("JTI={jti}")]}})
    );
    // RBAC sees the service account's groups.
    let r = call(&app, &token, Method::GET, "/api/v1/namespaces/default/configmaps", None).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.json());
    assert!(r.json()["message"].as_str().unwrap().contains("system:serviceaccount:default:build"), "{}", r.json());
    let binding = json!({"metadata": {"name": "sa-view"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "Group", "name": "system:serviceaccounts:default", "apiGroup": "rbac.authorization.k8s.io"}]});
    created(&app, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", binding).await;
    let r = call(&app, &token, Method::GET, "/api/v1/namespaces/default/configmaps", None).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());

    // TokenReview: the user, its credential id, the audiences it was accepted for.
    let jti = part(&token, 1)["jti"].as_str().unwrap().to_string();
    assert_eq!(
        review(&app, &token, &[]).await,
        json!({"authenticated": true,
               "user": {"username": "system:serviceaccount:default:build", "uid": sa["metadata"]["uid"],
                        "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
                        "extra": {"authentication.kubernetes.io/credential-id": [format!("JTI={jti}")]}},
               "audiences": [ISSUER]})
    );
}

#[tokio::test]
async fn tokens_it_should_not_accept_are_refused_401_and_a_review_says_why() {
    let app = app(Some(config(TEST_ONLY_RSA_KEY))).await;
    service_account(&app, "build").await;
    let fresh = token(&app, "build", json!({})).await;
    assert_eq!(whoami(&app, &fresh).await.status.as_u16(), 201);

    // Expired: the same token two hours later.
    let later = later(&app);
    assert_eq!(whoami(&later, &fresh).await.status.as_u16(), 401);
    assert_eq!(
        review(&later, &fresh, &[]).await,
        json!({"authenticated": false, "error": "service account token has expired"})
    );

    // For another audience: not for this server, but a review for that audience accepts it.
    let vault = token(&app, "build", json!({"audiences": ["vault"]})).await;
    let r = whoami(&app, &vault).await;
    assert_eq!(r.status.as_u16(), 401, "{}", r.json());
    assert_eq!(r.headers.get("www-authenticate").unwrap(), "Bearer");
    assert_eq!(
        review(&app, &vault, &[]).await["error"],
        format!(r#"token audiences ["vault"] is invalid for the target audiences ["{ISSUER}"]"#)
    );
    assert_eq!(review(&app, &vault, &["vault"]).await["audiences"], json!(["vault"]));

    // Bound to a pod: the pod and its node in the token, and gone with the pod.
    let p = pod(&app, "runner", "build").await;
    let bound_ref = json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "runner"}});
    let bound = token(&app, "build", bound_ref).await;
    assert_eq!(part(&bound, 1)["kubernetes.io"]["pod"], json!({"name": "runner", "uid": p["metadata"]["uid"]}));
    assert_eq!(part(&bound, 1)["kubernetes.io"]["node"], json!({"name": "node-1"}), "no such node: no uid");
    let extra = &review(&app, &bound, &[]).await["user"]["extra"];
    assert_eq!(extra["authentication.kubernetes.io/pod-name"], json!(["runner"]));
    assert_eq!(extra["authentication.kubernetes.io/pod-uid"], json!([p["metadata"]["uid"]]));
    assert_eq!(extra["authentication.kubernetes.io/node-name"], json!(["node-1"]));
    assert_eq!(whoami(&app, &bound).await.status.as_u16(), 201);
    // Deleting the bound pod marks it while its kubelet stops it: the token still holds.
    let r = call(&app, ADMIN, Method::DELETE, "/api/v1/namespaces/default/pods/runner", None).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    assert!(r.json()["metadata"]["deletionTimestamp"].is_string(), "{}", r.json());
    assert_eq!(whoami(&app, &bound).await.status.as_u16(), 201);
    // The kubelet's delete of grace 0 removes it, and the token with it.
    let r =
        call(&app, ADMIN, Method::DELETE, "/api/v1/namespaces/default/pods/runner?gracePeriodSeconds=0", None).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    assert_eq!(whoami(&app, &bound).await.status.as_u16(), 401);
    assert_eq!(review(&app, &bound, &[]).await["error"], "service account token has been invalidated");
    assert_eq!(whoami(&app, &fresh).await.status.as_u16(), 201, "an unbound token does not care");

    // The service account deleted, then made again: another uid.
    let r = call(&app, ADMIN, Method::DELETE, &format!("{SA}/build"), None).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    assert_eq!(whoami(&app, &fresh).await.status.as_u16(), 401);
    assert_eq!(review(&app, &fresh, &[]).await["error"], r#"serviceaccounts "build" not found"#);
    let again = service_account(&app, "build").await;
    assert_eq!(whoami(&app, &fresh).await.status.as_u16(), 401);
    let old_uid = part(&fresh, 1)["kubernetes.io"]["serviceaccount"]["uid"].as_str().unwrap().to_string();
    assert_eq!(
        review(&app, &fresh, &[]).await["error"],
        format!(
            "service account UID ({}) does not match claim ({old_uid})",
            again["metadata"]["uid"].as_str().unwrap()
        )
    );

    // Signed by a key this server does not have.
    let other = app_with_key(&ec_key_pem()).await;
    service_account(&other, "build").await;
    let foreign = token(&other, "build", json!({})).await;
    assert_eq!(part(&foreign, 0)["alg"], "ES256");
    assert_eq!(whoami(&app, &foreign).await.status.as_u16(), 401);
    assert_eq!(review(&app, &foreign, &[]).await["error"], "invalid signature, no keys found");
    // ... even under this server's kid.
    let forged = resign(&foreign, TEST_ONLY_RSA_KID);
    assert_eq!(whoami(&app, &forged).await.status.as_u16(), 401);
}

async fn app_with_key(pem: &str) -> common::App {
    app(Some(config(pem))).await
}

/// `token`'s claims under a header naming `kid`, signed with a key of its own (ES256).
fn resign(token: &str, kid: &str) -> String {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 =
        ring::signature::EcdsaKeyPair::generate_pkcs8(&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.typ = None;
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, &part(token, 1), &jsonwebtoken::EncodingKey::from_ec_der(pkcs8.as_ref())).unwrap()
}

#[tokio::test]
async fn a_token_issued_by_one_node_is_accepted_by_another_with_the_same_key() {
    // Two separate clusters made the same way (the same seeded uids): the same service
    // account, as every node of one cluster sees it.
    let one = app(Some(config(TEST_ONLY_RSA_KEY))).await;
    let ec = ec_key_pem();
    // The other signs with its own key and also accepts the first's.
    let two =
        app(Some(ServiceAccountConfig { verification_key_pems: vec![TEST_ONLY_RSA_KEY.into()], ..config(&ec) })).await;
    let a = service_account(&one, "build").await;
    let b = service_account(&two, "build").await;
    assert_eq!(a["metadata"]["uid"], b["metadata"]["uid"]);
    let t = token(&one, "build", json!({})).await;
    let r = whoami(&two, &t).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    assert_eq!(r.json()["status"]["userInfo"]["username"], "system:serviceaccount:default:build");
    // But not the other way round: the first knows only its own key.
    let t2 = token(&two, "build", json!({})).await;
    assert_eq!(whoami(&one, &t2).await.status.as_u16(), 401);
}

#[tokio::test]
async fn the_oidc_discovery_documents_describe_the_issuer_and_its_keys() {
    let ec = ec_key_pem();
    let app =
        app(Some(ServiceAccountConfig { verification_key_pems: vec![ec.clone()], ..config(TEST_ONLY_RSA_KEY) })).await;
    let r = call(&app, ADMIN, Method::GET, "/.well-known/openid-configuration", None).await;
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(r.headers.get("cache-control").unwrap(), "public, max-age=3600");
    assert_eq!(
        String::from_utf8(r.bytes.clone()).unwrap(),
        format!(
            r#"{{"issuer":"{ISSUER}","jwks_uri":"{JWKS_URI}","response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256","RS256"]}}"#
        )
    );
    let r = call(&app, ADMIN, Method::GET, "/openid/v1/jwks", None).await;
    assert_eq!(r.content_type(), "application/jwk-set+json");
    let keys = r.json()["keys"].as_array().unwrap().clone();
    assert_eq!(keys.len(), 2);
    let rsa = &keys[0];
    let order: Vec<&str> = rsa.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(order, ["use", "kty", "kid", "alg", "n", "e"], "go-jose's order");
    assert_eq!((&rsa["kid"], &rsa["alg"], &rsa["e"]), (&json!(TEST_ONLY_RSA_KID), &json!("RS256"), &json!("AQAB")));
    let order: Vec<&str> = keys[1].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(order, ["use", "kty", "kid", "crv", "alg", "x", "y"]);
    assert_eq!((&keys[1]["crv"], &keys[1]["alg"]), (&json!("P-256"), &json!("ES256")));

    // A relying party verifies an issued token with the published key alone.
    service_account(&app, "build").await;
    let t = token(&app, "build", json!({})).await;
    let key = jsonwebtoken::DecodingKey::from_rsa_components(rsa["n"].as_str().unwrap(), "AQAB").unwrap();
    let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    v.validate_exp = false;
    v.set_audience(&[ISSUER]);
    v.set_issuer(&[ISSUER]);
    assert!(jsonwebtoken::decode::<Value>(&t, &key, &v).is_ok());

    // Service accounts may read them (system:service-account-issuer-discovery).
    assert_eq!(call(&app, &t, Method::GET, "/openid/v1/jwks", None).await.status.as_u16(), 200);
    assert_eq!(call(&app, &t, Method::GET, "/.well-known/openid-configuration/", None).await.status.as_u16(), 200);
}

#[tokio::test]
async fn without_service_account_keys_nothing_is_issued_or_accepted() {
    let app = app(None).await;
    service_account(&app, "build").await;
    let r = request_token(&app, "build", json!({})).await;
    r.status_of(404, "NotFound", "the server could not find the requested resource");
    let r = call(&app, ADMIN, Method::GET, "/.well-known/openid-configuration", None).await;
    assert_eq!(r.status.as_u16(), 404);
    let keyed = app_with_key(TEST_ONLY_RSA_KEY).await;
    service_account(&keyed, "build").await;
    let t = token(&keyed, "build", json!({})).await;
    assert_eq!(whoami(&app, &t).await.status.as_u16(), 401);
}

#[tokio::test]
async fn bad_token_requests_get_kubes_answers() {
    let app = app(Some(config(TEST_ONLY_RSA_KEY))).await;
    service_account(&app, "build").await;
    service_account(&app, "other").await;
    pod(&app, "other-runner", "other").await;
    let r = request_token(&app, "build", json!({"expirationSeconds": 599})).await;
    r.status_of(
        422,
        "Invalid",
        r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"#,
    );
    let r = request_token(&app, "nobody", json!({})).await;
    r.status_of(404, "NotFound", r#"serviceaccounts "nobody" not found"#);
    let to = |kind: &str, name: &str| json!({"boundObjectRef": {"kind": kind, "apiVersion": "v1", "name": name}});
    request_token(&app, "build", to("Pod", "gone")).await.status_of(404, "NotFound", r#"pods "gone" not found"#);
    request_token(&app, "build", to("Secret", "gone")).await.status_of(404, "NotFound", r#"secrets "gone" not found"#);
    request_token(&app, "build", to("Pod", "other-runner")).await.status_of(
        400,
        "BadRequest",
        r#"cannot bind token for serviceaccount "build" to pod running with different serviceaccount name."#,
    );
    request_token(&app, "build", to("ConfigMap", "x")).await.status_of(
        400,
        "BadRequest",
        "cannot bind token to object of type /v1, Kind=ConfigMap",
    );
    let s = created(&app, "/api/v1/namespaces/default/secrets", json!({"metadata": {"name": "s"}})).await;
    let wrong_uid = json!({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s", "uid": "not-it"}});
    request_token(&app, "build", wrong_uid).await.status_of(
        409,
        "Conflict",
        r#"Operation cannot be fulfilled on Secret "s": the UID in the bound object reference (not-it) does not match the UID in record. The object might have been deleted and then recreated"#,
    );
    let right_uid =
        json!({"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s", "uid": s["metadata"]["uid"]}});
    let t = token(&app, "build", right_uid).await;
    assert_eq!(part(&t, 1)["kubernetes.io"]["secret"], json!({"name": "s", "uid": s["metadata"]["uid"]}));
    let body = json!({"metadata": {"name": "other"}, "spec": {}});
    let r = call(&app, ADMIN, Method::POST, &format!("{SA}/build/token"), Some(body)).await;
    r.status_of(
        422,
        "Invalid",
        r#"TokenRequest.authentication.k8s.io "build" is invalid: metadata.name: Invalid value: "other": must match the service account name if specified"#,
    );
}

#[tokio::test]
async fn a_pod_bound_projected_token_lives_a_year_and_the_max_expiration_caps_others() {
    let app = app(Some(ServiceAccountConfig { max_expiration_seconds: 7200, ..config(TEST_ONLY_RSA_KEY) })).await;
    service_account(&app, "build").await;
    pod(&app, "runner", "build").await;
    let now = common::FixedClock.now_unix_seconds();
    let projected =
        json!({"expirationSeconds": 3607, "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "runner"}});
    let r = request_token(&app, "build", projected).await;
    assert_eq!(r.json()["status"]["expirationTimestamp"], kuorum_api::time::format(now + 3607));
    let claims = part(r.json()["status"]["token"].as_str().unwrap(), 1);
    assert_eq!((&claims["exp"], &claims["kubernetes.io"]["warnafter"]), (&json!(now + 31_536_000), &json!(now + 3607)));
    let r = request_token(&app, "build", json!({"expirationSeconds": 10_000})).await;
    assert_eq!(r.json()["spec"]["expirationSeconds"], 7200);
    assert_eq!(
        r.headers.get("warning").unwrap(),
        r#"299 - "requested expiration of 10000 seconds shortened to 7200 seconds""#
    );
}

#[tokio::test]
async fn hostile_bearer_tokens_are_refused_401_without_a_panic() {
    let app = app(Some(config(TEST_ONLY_RSA_KEY))).await;
    service_account(&app, "build").await;
    let good = token(&app, "build", json!({})).await;
    let claims = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&part(&good, 1)).unwrap());
    let b64 = |v: Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(&v).unwrap());
    let huge_header = b64(json!({"alg": "RS256", "kid": "k".repeat(1 << 20)}));
    let hostile = [
        "x".repeat(1 << 20),
        format!("{huge_header}.{claims}.c2ln"),
        format!("{}.{claims}.", b64(json!({"alg": "none"}))),
        format!("{}.{claims}.c2ln", b64(json!({"alg": "HS256", "kid": TEST_ONLY_RSA_KID}))),
        format!("{}.{claims}.c2ln", b64(json!({"alg": "RS256", "kid": "no-such-key"}))),
        format!("{}.{claims}.!!!", b64(json!({"alg": "RS256", "kid": TEST_ONLY_RSA_KID}))),
        format!("{}.{claims}", b64(json!({"alg": "RS256"}))),
        "....".into(),
        "{\"iss\":\"https://kuorum.test\"}".into(),
    ];
    let started = std::time::Instant::now();
    for t in &hostile {
        let r = whoami(&app, t).await;
        assert_eq!(r.status.as_u16(), 401, "{}", &t[..t.len().min(80)]);
    }
    // Refused before any work that grows with them: well under a second in a debug build.
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(review(&app, &hostile[4], &[]).await["error"], "invalid signature, no keys found");
    assert_eq!(review(&app, &hostile[2], &[]).await["error"], "invalid bearer token");
}
