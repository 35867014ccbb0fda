//! Admission webhooks through the router over a real single-node cluster, against a real
//! HTTPS webhook server the test starts (a self-signed certificate, given as the
//! configuration's `caBundle`), speaking `AdmissionReview` v1 as real servers do: a
//! mutating webhook's JSONPatch lands, a validating webhook's refusal is kube's Status and
//! stores nothing, `failurePolicy` Fail and Ignore for a server that is down or hangs
//! past `timeoutSeconds`, an endless answer cut at the body limit, `objectSelector` skips, and dry runs reach webhooks free of
//! side effects.

mod common;
#[path = "common/tls_server.rs"]
mod tls_server;

use std::time::{Duration, Instant};

use axum::routing::post;
use axum::Json;
use base64::Engine;
use serde_json::{json, Value};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/// The answer to a review: allowed, with `extra` merged into the response.
fn answer(review: &Value, extra: Value) -> Json<Value> {
    let mut response = json!({"uid": review["request"]["uid"], "allowed": true});
    for (k, v) in extra.as_object().unwrap() {
        response[k] = v.clone();
    }
    Json(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
}

/// The answer to a review: allowed, with `ops` as its JSONPatch.
fn patched(review: &Value, ops: Value) -> Json<Value> {
    let patch = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&ops).unwrap());
    answer(review, json!({"patchType": "JSONPatch", "patch": patch}))
}

/// Starts the webhook server; answers its port and its certificate as a `caBundle`.
async fn webhook_server() -> (u16, String) {
    let router = axum::Router::new()
        .route(
            "/mutate",
            post(|Json(review): Json<Value>| async move {
                let patch = match review["request"]["object"]["metadata"].get("labels") {
                    Some(_) => json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]),
                    None => json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]),
                };
                let patch = base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&patch).unwrap());
                answer(&review, json!({"patchType": "JSONPatch", "patch": patch, "warnings": ["mutated by the test"]}))
            }),
        )
        .route(
            "/validate",
            post(|Json(review): Json<Value>| async move {
                if review["request"]["object"]["data"].get("forbidden").is_some() {
                    answer(&review, json!({"allowed": false, "status": {"code": 403, "message": "no forbidden keys"}}))
                } else {
                    answer(&review, json!({}))
                }
            }),
        )
        .route(
            "/huge",
            // An answer without a length that never stops growing.
            post(|| async {
                let chunk = bytes::Bytes::from(vec![b' '; 1 << 20]);
                let endless = futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
                axum::body::Body::from_stream(endless)
            }),
        )
        .route(
            "/hang",
            post(|Json(review): Json<Value>| async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                answer(&review, json!({}))
            }),
        );
    let (port, ca, _server) = tls_server::serve(router, "127.0.0.1").await;
    (port, ca)
}

fn configuration(kind: &str, name: &str, url: &str, ca: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": format!("{name}.kuorum.test"),
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 1,
    });
    for (k, v) in extra.as_object().unwrap() {
        hook[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": [hook]})
}

async fn created(app: &common::App, uri: &str, body: Value) -> Value {
    let r = app.post(uri, body).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    r.json()
}

/// Serves `router` (its `/deletes`) over HTTPS and registers a configuration of `kind`
/// (at `uri`) calling it on ConfigMap deletes; answers the task serving it.
async fn delete_hook(app: &common::App, kind: &str, uri: &str, router: axum::Router) -> tokio::task::JoinHandle<()> {
    let (port, ca, server) = tls_server::serve(router, "127.0.0.1").await;
    let mut config = configuration(kind, "deletes", &format!("https://127.0.0.1:{port}/deletes"), &ca, json!({}));
    config["webhooks"][0]["rules"][0]["operations"] = json!(["DELETE"]);
    created(app, uri, config).await;
    server
}

fn cm(name: &str, data: Value) -> Value {
    json!({"metadata": {"name": name}, "data": data})
}

#[tokio::test]
async fn webhooks_mutate_refuse_and_fail_as_their_policies_say() {
    let app = common::app().await;
    app.namespace("default").await;
    let (port, ca) = webhook_server().await;
    let url = |path: &str| format!("https://127.0.0.1:{port}{path}");

    created(&app, MUTATING, configuration("MutatingWebhookConfiguration", "label", &url("/mutate"), &ca, json!({})))
        .await;
    created(
        &app,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "guard", &url("/validate"), &ca, json!({})),
    )
    .await;

    // Mutated, with the webhook's warning.
    let r = app.post(CONFIGMAPS, cm("a", json!({"k": "v"}))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    assert_eq!(r.json()["metadata"]["labels"], json!({"mutated": "yes"}));
    let warning = r.headers.get("warning").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    assert!(warning.contains("mutated by the test"), "{warning}");

    // Refused: kube's words, and nothing stored (no resourceVersion taken).
    let before = app.applied();
    let r = app.post(CONFIGMAPS, cm("b", json!({"forbidden": "x"}))).await;
    r.status_of(403, "Forbidden", r#"admission webhook "guard.kuorum.test" denied the request: no forbidden keys"#);
    assert_eq!(app.applied(), before, "a refused create proposes nothing");
    assert_eq!(app.get(&format!("{CONFIGMAPS}/b")).await.status.as_u16(), 404);

    // A dry run reaches webhooks without side effects.
    let r = app.post(&format!("{CONFIGMAPS}?dryRun=All"), cm("c", json!({"k": "v"}))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    assert_eq!(r.json()["metadata"]["labels"], json!({"mutated": "yes"}));

    // A server that is down: Fail refuses, Ignore lets the write through.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let gone = format!("https://127.0.0.1:{down}/validate");
    created(&app, VALIDATING, configuration("ValidatingWebhookConfiguration", "down", &gone, &ca, json!({}))).await;
    let r = app.post(CONFIGMAPS, cm("d", json!({}))).await;
    let v = r.json();
    assert_eq!((r.status.as_u16(), v["reason"].as_str()), (500, Some("InternalError")), "{v}");
    let m = v["message"].as_str().unwrap();
    assert!(m.starts_with(r#"Internal error occurred: failed calling webhook "down.kuorum.test": failed to call webhook: Post "https://127.0.0.1:"#), "{m}");
    let r = app.delete(&format!("{VALIDATING}/down")).await;
    assert_eq!(r.status.as_u16(), 200);
    created(
        &app,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "down-ignored", &gone, &ca, json!({"failurePolicy": "Ignore"})),
    )
    .await;
    created(&app, CONFIGMAPS, cm("d", json!({}))).await;

    // A server that hangs: given up at timeoutSeconds, then as its policy says.
    created(
        &app,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "slow", &url("/hang"), &ca, json!({"failurePolicy": "Ignore"})),
    )
    .await;
    let started = Instant::now();
    created(&app, CONFIGMAPS, cm("e", json!({}))).await;
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let r = app.delete(&format!("{VALIDATING}/slow")).await;
    assert_eq!(r.status.as_u16(), 200);
    created(
        &app,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "slow-fail", &url("/hang"), &ca, json!({})),
    )
    .await;
    let r = app.post(CONFIGMAPS, cm("f", json!({}))).await;
    assert_eq!(r.status.as_u16(), 500, "{}", r.json());
    let r = app.delete(&format!("{VALIDATING}/slow-fail")).await;
    assert_eq!(r.status.as_u16(), 200);

    // An endless answer is cut at the body limit: a failed call, not a node out of memory.
    created(
        &app,
        VALIDATING,
        configuration("ValidatingWebhookConfiguration", "huge", &url("/huge"), &ca, json!({"timeoutSeconds": 30})),
    )
    .await;
    let r = app.post(CONFIGMAPS, cm("big", json!({}))).await;
    let v = r.json();
    assert_eq!(r.status.as_u16(), 500, "{v}");
    assert!(v["message"].as_str().unwrap().ends_with("the response is larger than the body limit"), "{v}");
    let r = app.delete(&format!("{VALIDATING}/huge")).await;
    assert_eq!(r.status.as_u16(), 200);

    // objectSelector: a webhook for labelled objects only skips the rest.
    let selective = configuration(
        "ValidatingWebhookConfiguration",
        "selective",
        &gone,
        &ca,
        json!({"objectSelector": {"matchLabels": {"checked": "true"}}}),
    );
    created(&app, VALIDATING, selective).await;
    created(&app, CONFIGMAPS, cm("g", json!({}))).await;
    let mut labelled = cm("h", json!({}));
    labelled["metadata"]["labels"] = json!({"checked": "true"});
    assert_eq!(app.post(CONFIGMAPS, labelled).await.status.as_u16(), 500);
    let r = app.delete(&format!("{VALIDATING}/selective")).await;
    assert_eq!(r.status.as_u16(), 200);

    // Dry runs reach webhooks declared free of side effects (v1 allows only None and
    // NoneOnDryRun; a stored webhook with others would make a dry run 400).
    created(
        &app,
        VALIDATING,
        configuration(
            "ValidatingWebhookConfiguration",
            "effects",
            &url("/validate"),
            &ca,
            json!({"sideEffects": "NoneOnDryRun"}),
        ),
    )
    .await;
    let mut effects = configuration("ValidatingWebhookConfiguration", "no-effects", &url("/validate"), &ca, json!({}));
    effects["webhooks"][0]["sideEffects"] = json!("None");
    created(&app, VALIDATING, effects).await;
    let r = app.post(&format!("{CONFIGMAPS}?dryRun=All"), cm("i", json!({}))).await;
    assert_eq!(r.status.as_u16(), 201, "NoneOnDryRun is fine for a dry run: {}", r.json());
}

#[tokio::test]
async fn match_conditions_skip_refuse_or_ignore() {
    let app = common::app().await;
    app.namespace("default").await;
    let (port, ca) = webhook_server().await;
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("https://127.0.0.1:{}/validate", l.local_addr().unwrap().port())
    };
    // A webhook that is down, called only for config maps whose name starts with "checked-"
    // and that are not dry runs: the others never reach it, so they are written.
    let conditions = json!({"matchConditions": [
        {"name": "checked-only", "expression": "object.metadata.name.startsWith('checked-')"},
        {"name": "not-dry", "expression": "!request.dryRun"}]});
    created(&app, VALIDATING, configuration("ValidatingWebhookConfiguration", "cond", &gone, &ca, conditions)).await;
    created(&app, CONFIGMAPS, cm("plain", json!({}))).await;
    assert_eq!(app.post(&format!("{CONFIGMAPS}?dryRun=All"), cm("checked-dry", json!({}))).await.status.as_u16(), 201);
    assert_eq!(app.post(CONFIGMAPS, cm("checked-a", json!({}))).await.status.as_u16(), 500);
    assert_eq!(app.delete(&format!("{VALIDATING}/cond")).await.status.as_u16(), 200);

    // Conditions may ask the authorizer (this server allows all): the webhook is called
    // when the requester may create the resource requested, and not when the condition
    // asks the opposite.
    let may = json!({"matchConditions": [
        {"name": "may", "expression": "authorizer.requestResource.check('create').allowed()"}]});
    created(&app, VALIDATING, configuration("ValidatingWebhookConfiguration", "may", &gone, &ca, may)).await;
    assert_eq!(app.post(CONFIGMAPS, cm("asked", json!({}))).await.status.as_u16(), 500);
    assert_eq!(app.delete(&format!("{VALIDATING}/may")).await.status.as_u16(), 200);
    let may_not = json!({"matchConditions": [
        {"name": "may-not", "expression": "!authorizer.group('').resource('configmaps').check('create').allowed()"}]});
    created(&app, VALIDATING, configuration("ValidatingWebhookConfiguration", "may-not", &gone, &ca, may_not)).await;
    created(&app, CONFIGMAPS, cm("not-asked", json!({}))).await;
    assert_eq!(app.delete(&format!("{VALIDATING}/may-not")).await.status.as_u16(), 200);

    // A condition that fails to evaluate (no such key) with none false: Fail refuses with
    // kube's 403, Ignore skips the webhook.
    let erring = json!({"matchConditions": [{"name": "label", "expression": "object.metadata.labels.team == 'a'"}]});
    created(&app, VALIDATING, configuration("ValidatingWebhookConfiguration", "erring", &gone, &ca, erring.clone()))
        .await;
    let before = app.applied();
    let r = app.post(CONFIGMAPS, cm("x", json!({}))).await;
    let v = r.json();
    assert_eq!((r.status.as_u16(), v["reason"].as_str()), (403, Some("Forbidden")), "{v}");
    let m = v["message"].as_str().unwrap();
    assert!(
        m.starts_with(
            r#"configmaps "x" is forbidden: expression 'object.metadata.labels.team == 'a'' resulted in error: "#
        ),
        "{m}"
    );
    assert_eq!(app.applied(), before);
    assert_eq!(app.delete(&format!("{VALIDATING}/erring")).await.status.as_u16(), 200);
    let mut ignoring = erring;
    ignoring["failurePolicy"] = json!("Ignore");
    created(&app, VALIDATING, configuration("ValidatingWebhookConfiguration", "ignoring", &gone, &ca, ignoring)).await;
    created(&app, CONFIGMAPS, cm("y", json!({}))).await;

    // A mutating webhook whose condition holds mutates; one whose condition fails does not.
    let mutate = format!("https://127.0.0.1:{port}/mutate");
    let only_b = json!({"matchConditions": [{"name": "b", "expression": "object.metadata.name == 'b'"}]});
    created(&app, MUTATING, configuration("MutatingWebhookConfiguration", "only-b", &mutate, &ca, only_b)).await;
    assert_eq!(created(&app, CONFIGMAPS, cm("a", json!({}))).await["metadata"].get("labels"), None);
    assert_eq!(created(&app, CONFIGMAPS, cm("b", json!({}))).await["metadata"]["labels"], json!({"mutated": "yes"}));

    // An expression that is not CEL is refused when the configuration is written.
    let bad = json!({"matchConditions": [{"name": "bad", "expression": "object.metadata.name =="}]});
    let r = app.post(VALIDATING, configuration("ValidatingWebhookConfiguration", "bad", &gone, &ca, bad)).await;
    let v = r.json();
    assert_eq!(r.status.as_u16(), 422, "{v}");
    let m = v["message"].as_str().unwrap();
    assert!(m.contains("webhooks[0].matchConditions[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed: "), "{m}");
}

/// A webhook that records the labels it saw in an annotation, then one that adds a label:
/// with `reinvocationPolicy: IfNeeded` the first runs again and sees the label; with
/// `Never` it does not.
#[tokio::test]
async fn if_needed_webhooks_run_again_after_a_later_change() {
    let app = common::app().await;
    app.namespace("default").await;
    let router = axum::Router::new()
        .route(
            "/record",
            post(|Json(review): Json<Value>| async move {
                let labels = review["request"]["object"]["metadata"]["labels"].as_object().cloned().unwrap_or_default();
                let seen = labels.keys().cloned().collect::<Vec<_>>().join(",");
                patched(&review, json!([{"op": "add", "path": "/metadata/annotations", "value": {"seen": seen}}]))
            }),
        )
        .route(
            "/label",
            post(|Json(review): Json<Value>| async move {
                patched(&review, json!([{"op": "add", "path": "/metadata/labels", "value": {"added": "yes"}}]))
            }),
        );
    let (port, ca, _server) = tls_server::serve(router, "127.0.0.1").await;
    let url = |path: &str| format!("https://127.0.0.1:{port}{path}");
    let record = |policy: &str| {
        configuration(
            "MutatingWebhookConfiguration",
            "a-record",
            &url("/record"),
            &ca,
            json!({"reinvocationPolicy": policy}),
        )
    };
    created(&app, MUTATING, record("Never")).await;
    created(&app, MUTATING, configuration("MutatingWebhookConfiguration", "b-label", &url("/label"), &ca, json!({})))
        .await;

    // Never: the recorder ran first and saw no labels.
    let r = app.post(CONFIGMAPS, cm("never", json!({}))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let obj = r.json();
    assert_eq!(
        (&obj["metadata"]["annotations"]["seen"], &obj["metadata"]["labels"]["added"]),
        (&json!(""), &json!("yes"))
    );

    // IfNeeded: it runs again after the label was added, and sees it.
    let mut config = app.get(&format!("{MUTATING}/a-record")).await.json();
    config["webhooks"][0]["reinvocationPolicy"] = json!("IfNeeded");
    assert_eq!(app.put(&format!("{MUTATING}/a-record"), config).await.status.as_u16(), 200);
    let r = app.post(CONFIGMAPS, cm("if-needed", json!({}))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    assert_eq!(r.json()["metadata"]["annotations"]["seen"], "added");
}

/// A validating webhook whose rules take DELETE is asked about deletes, with the object
/// as `oldObject` and no `object`, and its refusal keeps the object.
#[tokio::test]
async fn validating_webhooks_are_asked_about_deletes() {
    let app = common::app().await;
    app.namespace("default").await;
    let router = axum::Router::new().route(
        "/deletes",
        post(|Json(review): Json<Value>| async move {
            let request = &review["request"];
            let protected = request["oldObject"]["metadata"]["labels"].get("protected").is_some();
            if request["operation"] != "DELETE" || !request["object"].is_null() {
                return answer(&review, json!({"allowed": false, "status": {"message": "not a delete review"}}));
            }
            if protected {
                answer(&review, json!({"allowed": false, "status": {"code": 403, "message": "protected"}}))
            } else {
                answer(&review, json!({"warnings": ["deleted"]}))
            }
        }),
    );
    let _server = delete_hook(&app, "ValidatingWebhookConfiguration", VALIDATING, router).await;
    created(&app, CONFIGMAPS, json!({"metadata": {"name": "guarded", "labels": {"protected": "yes"}}})).await;
    created(&app, CONFIGMAPS, cm("free", json!({}))).await;

    let r = app.delete(&format!("{CONFIGMAPS}/guarded")).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.json());
    assert_eq!(r.json()["message"], r#"admission webhook "deletes.kuorum.test" denied the request: protected"#);
    assert_eq!(app.get(&format!("{CONFIGMAPS}/guarded")).await.status.as_u16(), 200);
    let r = app.delete(&format!("{CONFIGMAPS}/free")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    assert_eq!(r.headers.get("warning").unwrap().to_str().unwrap(), "299 - \"deleted\"");
}

/// kube runs mutating admission on deletes too, with the object as `oldObject`: a
/// mutating webhook may refuse a delete, or allow it with an empty patch, but a patch
/// that would change something is an internal error (there is no new object to change).
#[tokio::test]
async fn mutating_webhooks_may_refuse_deletes_but_not_patch_them() {
    let app = common::app().await;
    app.namespace("default").await;
    let router = axum::Router::new().route(
        "/deletes",
        post(|Json(review): Json<Value>| async move {
            let request = &review["request"];
            let name = request["oldObject"]["metadata"]["name"].as_str().unwrap_or("").to_string();
            if request["operation"] != "DELETE" || !request["object"].is_null() {
                return answer(&review, json!({"allowed": false, "status": {"message": "not a delete review"}}));
            }
            let patch = |ops: &str| base64::engine::general_purpose::STANDARD.encode(ops);
            match name.as_str() {
                "kept" => answer(&review, json!({"allowed": false, "status": {"code": 403, "message": "kept"}})),
                "patched" => answer(
                    &review,
                    json!({"patchType": "JSONPatch", "patch": patch(r#"[{"op":"add","path":"/data","value":{}}]"#)}),
                ),
                _ => answer(&review, json!({"patchType": "JSONPatch", "patch": patch("[]"), "warnings": ["seen"]})),
            }
        }),
    );
    let _server = delete_hook(&app, "MutatingWebhookConfiguration", MUTATING, router).await;
    for name in ["kept", "patched", "free"] {
        created(&app, CONFIGMAPS, cm(name, json!({}))).await;
    }

    let r = app.delete(&format!("{CONFIGMAPS}/kept")).await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.json());
    assert_eq!(r.json()["message"], r#"admission webhook "deletes.kuorum.test" denied the request: kept"#);
    let r = app.delete(&format!("{CONFIGMAPS}/patched")).await;
    assert_eq!(r.status.as_u16(), 500, "{}", r.json());
    assert_eq!(
        r.json()["message"],
        "Internal error occurred: admission webhook \"deletes.kuorum.test\" attempted to modify the object, which is not supported for this operation"
    );
    for name in ["kept", "patched"] {
        assert_eq!(app.get(&format!("{CONFIGMAPS}/{name}")).await.status.as_u16(), 200, "{name} is still there");
    }
    let r = app.delete(&format!("{CONFIGMAPS}/free")).await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.json());
    assert_eq!(r.headers.get("warning").unwrap().to_str().unwrap(), "299 - \"seen\"");
    assert_eq!(app.get(&format!("{CONFIGMAPS}/free")).await.status.as_u16(), 404);
}

#[tokio::test]
async fn webhook_audit_annotations_reach_the_audit_event_under_the_webhooks_name() {
    let mut app = common::app().await;
    app.namespace("default").await;
    let audit = app.audited();
    let router = axum::Router::new().route(
        "/annotate",
        post(|Json(review): Json<Value>| async move {
            let name = review["request"]["name"].as_str().unwrap_or("").to_string();
            answer(&review, json!({"auditAnnotations": {"checked": name, "not a key!": "dropped"}}))
        }),
    );
    let (port, ca, _server) = tls_server::serve(router, "127.0.0.1").await;
    let url = format!("https://127.0.0.1:{port}/annotate");
    created(&app, VALIDATING, configuration("ValidatingWebhookConfiguration", "annotate", &url, &ca, json!({}))).await;
    // A mutating webhook that labels the object: kube's annotation of each one called.
    let (mutate_port, mutate_ca) = webhook_server().await;
    let mutate_url = format!("https://127.0.0.1:{mutate_port}/mutate");
    created(
        &app,
        MUTATING,
        configuration("MutatingWebhookConfiguration", "labels", &mutate_url, &mutate_ca, json!({})),
    )
    .await;
    let r = app.post(CONFIGMAPS, cm("noted", json!({}))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let done = audit.completed(&r);
    let annotations = done["annotations"].as_object().unwrap();
    assert_eq!(annotations.get("annotate.kuorum.test/checked"), Some(&json!("noted")), "{annotations:?}");
    assert!(!annotations.keys().any(|k| k.contains("not a key")), "{annotations:?}");
    let mutation =
        annotations.get("mutation.webhook.admission.k8s.io/round_0_index_0").expect("the mutating webhook's");
    let mutation: Value = serde_json::from_str(mutation.as_str().unwrap()).unwrap();
    assert_eq!(mutation, json!({"configuration": "labels", "webhook": "labels.kuorum.test", "mutated": true}));
    // The patch is request data: not written at the Metadata level.
    assert!(!annotations.keys().any(|k| k.starts_with("patch.webhook")), "{annotations:?}");

    // At the Request level the patch is written; a webhook that is down and ignored is
    // named under `failed-open`, at its place among the validating webhooks.
    let gone = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("https://127.0.0.1:{}/validate", l.local_addr().unwrap().port())
    };
    let ignore = json!({"failurePolicy": "Ignore"});
    created(&app, VALIDATING, configuration("ValidatingWebhookConfiguration", "gone", &gone, &ca, ignore)).await;
    let audit = app.audited_at("Request");
    let r = app.post(CONFIGMAPS, cm("patched", json!({}))).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let done = audit.completed(&r);
    let annotations = done["annotations"].as_object().unwrap();
    let patch = annotations.get("patch.webhook.admission.k8s.io/round_0_index_0").expect("the patch");
    let patch: Value = serde_json::from_str(patch.as_str().unwrap()).unwrap();
    assert_eq!(patch["configuration"], "labels", "{patch}");
    assert_eq!(patch["webhook"], "labels.kuorum.test", "{patch}");
    assert_eq!(patch["patchType"], "JSONPatch", "{patch}");
    assert!(patch["patch"].as_array().is_some_and(|ops| !ops.is_empty()), "{patch}");
    assert_eq!(
        annotations.get("failed-open.validating.webhook.admission.k8s.io/round_0_index_1"),
        Some(&json!("gone.kuorum.test")),
        "{annotations:?}"
    );
}

#[tokio::test]
async fn an_equivalent_version_is_reviewed_at_the_version_the_rules_name() {
    let app = common::app().await;
    app.namespace("default").await;
    app.widgets_at_two_versions().await;
    // The webhook records what it was sent and labels the object.
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let record = seen.clone();
    let router = axum::Router::new().route(
        "/widgets",
        post(move |Json(review): Json<Value>| {
            let record = record.clone();
            async move {
                record.lock().unwrap().push(review["request"].clone());
                patched(&review, json!([{"op": "add", "path": "/metadata/labels", "value": {"reviewed-as": "v1"}}]))
            }
        }),
    );
    let (port, ca, _server) = tls_server::serve(router, "127.0.0.1").await;
    let mut config = configuration(
        "MutatingWebhookConfiguration",
        "widgets",
        &format!("https://127.0.0.1:{port}/widgets"),
        &ca,
        json!({}),
    );
    config["webhooks"][0]["rules"] = json!([{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}]);
    created(&app, MUTATING, config.clone()).await;

    let widget =
        json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}});
    let made = created(&app, "/apis/example.com/v2/namespaces/default/widgets", widget.clone()).await;
    assert_eq!(made["apiVersion"], "example.com/v2", "answered at the version asked for");
    assert_eq!(made["metadata"]["labels"], json!({"reviewed-as": "v1"}), "the patch made at v1 is kept");
    let request = seen.lock().unwrap().pop().expect("the webhook was called for v2 (matchPolicy Equivalent)");
    assert_eq!(request["kind"], json!({"group": "example.com", "version": "v1", "kind": "Widget"}));
    assert_eq!(request["resource"], json!({"group": "example.com", "version": "v1", "resource": "widgets"}));
    assert_eq!(request["requestKind"], json!({"group": "example.com", "version": "v2", "kind": "Widget"}));
    assert_eq!(request["requestResource"], json!({"group": "example.com", "version": "v2", "resource": "widgets"}));
    assert_eq!(request["object"]["apiVersion"], "example.com/v1", "the object is sent at the rules' version");

    // matchPolicy Exact: a v2 write is not the webhook's.
    let mut exact = config;
    exact["metadata"]["name"] = json!("widgets-exact");
    exact["webhooks"][0]["name"] = json!("exact.kuorum.test");
    exact["webhooks"][0]["matchPolicy"] = json!("Exact");
    app.delete(&format!("{MUTATING}/widgets")).await;
    created(&app, MUTATING, exact).await;
    let mut other = widget;
    other["metadata"]["name"] = json!("x");
    let made = created(&app, "/apis/example.com/v2/namespaces/default/widgets", other).await;
    assert!(made["metadata"].get("labels").is_none(), "{made}");
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_built_in_kind_at_another_version_is_reviewed_at_the_version_the_rules_name() {
    let app = common::app().await;
    app.namespace("default").await;
    let seen: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let record = seen.clone();
    let router = axum::Router::new().route(
        "/hpas",
        post(move |Json(review): Json<Value>| {
            let record = record.clone();
            async move {
                record.lock().unwrap().push(review["request"].clone());
                // A v1 field: the patch is made at v1 and must reach the v2 object.
                patched(
                    &review,
                    json!([{"op": "replace", "path": "/spec/targetCPUUtilizationPercentage", "value": 42}]),
                )
            }
        }),
    );
    let (port, ca, _server) = tls_server::serve(router, "127.0.0.1").await;
    let mut config = configuration(
        "MutatingWebhookConfiguration",
        "hpas",
        &format!("https://127.0.0.1:{port}/hpas"),
        &ca,
        json!({}),
    );
    config["webhooks"][0]["rules"] = json!([{"operations": ["CREATE"], "apiGroups": ["autoscaling"],
        "apiVersions": ["v1"], "resources": ["horizontalpodautoscalers"]}]);
    created(&app, MUTATING, config).await;
    let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 5, "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 70}}}]}});
    let made = created(&app, "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers", hpa).await;
    assert_eq!(made["apiVersion"], "autoscaling/v2");
    assert_eq!(made["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 42, "{made}");
    let request = seen.lock().unwrap().pop().expect("called for a v2 create (matchPolicy Equivalent)");
    assert_eq!(request["kind"]["version"], "v1");
    assert_eq!(request["requestKind"]["version"], "v2");
    assert_eq!(request["object"]["spec"]["targetCPUUtilizationPercentage"], 70, "{request}");
}

#[tokio::test]
async fn a_mutating_policy_if_needed_runs_again_after_a_webhook_changed_the_object() {
    let app = common::app().await;
    app.namespace("default").await;
    let (port, ca) = webhook_server().await;
    created(
        &app,
        MUTATING,
        configuration(
            "MutatingWebhookConfiguration",
            "labels",
            &format!("https://127.0.0.1:{port}/mutate"),
            &ca,
            json!({}),
        ),
    )
    .await;
    let policy = |name: &str, reinvocation: &str, label: &str| {
        json!({"metadata": {"name": name}, "spec": {"failurePolicy": "Fail", "reinvocationPolicy": reinvocation,
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                format!("Object{{metadata: Object.metadata{{labels: {{'{label}': has(object.metadata.labels) && 'mutated' in object.metadata.labels ? object.metadata.labels['mutated'] : 'none'}}}}}}")}}]}})
    };
    let policies = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies";
    let bindings = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings";
    for (name, reinvocation, label) in [("again", "IfNeeded", "copied"), ("once", "Never", "first-seen")] {
        created(&app, policies, policy(name, reinvocation, label)).await;
        created(&app, bindings, json!({"metadata": {"name": name}, "spec": {"policyName": name}})).await;
    }
    let made = created(&app, CONFIGMAPS, cm("relabelled", json!({}))).await;
    let labels = &made["metadata"]["labels"];
    assert_eq!(labels["mutated"], "yes", "{labels}");
    assert_eq!(labels["copied"], "yes", "the IfNeeded policy ran again after the webhook: {labels}");
    assert_eq!(labels["first-seen"], "none", "the Never policy ran once, before the webhook: {labels}");
}
