//! Typed scalars are stored in the form kube-apiserver stores them, having decoded the
//! object into Go types and encoded it again: quantities canonical (`"1000m"` → `"1"`),
//! `metav1.Time` in UTC to the second, `MicroTime` in UTC with six fraction digits,
//! whatever offset or precision the client sent. A custom resource's own fields are
//! unstructured in kube and kept as sent. Through the router over a real single-node
//! cluster, on create, update and patch.

mod common;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::{app, App, Reply};
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const EVENTS: &str = "/api/v1/namespaces/default/events";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GADGETS: &str = "/apis/example.com/v1/namespaces/default/gadgets";

fn text(r: &Reply) -> String {
    String::from_utf8_lossy(&r.bytes).to_string()
}

async fn with_default() -> App {
    let app = app().await;
    app.namespace("default").await;
    app
}

async fn created(app: &App, uri: &str, obj: Value) -> Value {
    let r = app.post(uri, obj).await;
    assert_eq!(r.status, StatusCode::CREATED, "{uri}: {}", text(&r));
    r.json()
}

/// The object as a later GET reads it.
async fn stored(app: &App, uri: &str) -> Value {
    let r = app.get(uri).await;
    assert_eq!(r.status, StatusCode::OK, "{uri}: {}", text(&r));
    r.json()
}

fn pod(name: &str, resources: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "resources": resources,
            "ports": [{"containerPort": 80}], "readinessProbe": {"httpGet": {"port": "http", "path": "/"}}}]}})
}

#[tokio::test]
async fn pod_quantities_are_stored_canonical() {
    let app = with_default().await;
    let resources = json!({
        "limits": {"cpu": "1000m", "memory": "0.5Gi", "example.com/gpu": "+1", "ephemeral-storage": "1.5Gi"},
        "requests": {"cpu": 0.5, "memory": "100Mi", "ephemeral-storage": " 1e3 "}});
    let answer = created(&app, PODS, pod("web", resources)).await;
    let want_limits = json!({"cpu": "1", "memory": "512Mi", "example.com/gpu": "+1", "ephemeral-storage": "1536Mi"});
    // A limit without its request requests as much (kube's `SetDefaults_Pod`).
    let want_requests = json!({"cpu": "500m", "memory": "100Mi", "ephemeral-storage": "1e3", "example.com/gpu": "+1"});
    for obj in [&answer, &stored(&app, &format!("{PODS}/web")).await] {
        let c = &obj["spec"]["containers"][0];
        assert_eq!(c["resources"]["limits"], want_limits, "{obj}");
        assert_eq!(c["resources"]["requests"], want_requests, "{obj}");
        assert_eq!(c["readinessProbe"]["httpGet"]["port"], "http", "int-or-string as sent");
        assert_eq!(c["ports"][0]["containerPort"], 80);
    }

    // A malformed quantity is still refused, not rewritten.
    let r = app.post(PODS, pod("bad", json!({"limits": {"cpu": "1.5.5"}}))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", text(&r));
    assert!(text(&r).contains("quantities must match the regular expression"), "{}", text(&r));

    // A hostile exponent is written at once, neither expanded nor refused.
    let started = std::time::Instant::now();
    let answer = created(
        &app,
        PODS,
        pod(
            "huge",
            json!({"limits": {"example.com/x": "1234567890123456789e999999999"},
        "requests": {"example.com/x": "1e-999999999"}}),
        ),
    )
    .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let c = &answer["spec"]["containers"][0]["resources"];
    assert_eq!(c["limits"]["example.com/x"], "1234567890123456789e999999999");
    assert_eq!(c["requests"]["example.com/x"], "1e-9", "rounded up to nano");
}

#[tokio::test]
async fn lease_micro_times_are_stored_in_utc_to_the_microsecond() {
    let app = with_default().await;
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 15,
                 "renewTime": "2026-01-02T03:04:05.100000+02:00", "acquireTime": "2026-01-01T23:30:00.000001-01:00"}});
    let answer = created(&app, LEASES, lease).await;
    for obj in [&answer, &stored(&app, &format!("{LEASES}/leader")).await] {
        assert_eq!(obj["spec"]["renewTime"], "2026-01-02T01:04:05.100000Z", "{obj}");
        assert_eq!(obj["spec"]["acquireTime"], "2026-01-02T00:30:00.000001Z", "{obj}");
    }
    // A MicroTime needs exactly six digits: kube refuses one digit, so nothing is rewritten.
    let r = app
        .post(LEASES, json!({"metadata": {"name": "short"}, "spec": {"renewTime": "2026-01-02T03:04:05.1+02:00"}}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", text(&r));
    assert!(text(&r).contains(r#"cannot parse \".1+02:00\" as \".000000\""#), "{}", text(&r));

    // An update and a merge patch are written the same way; Go's zero time is null.
    let mut current = stored(&app, &format!("{LEASES}/leader")).await;
    current["spec"]["renewTime"] = json!("2026-06-30T23:59:59.999999-00:01");
    let r = app.put(&format!("{LEASES}/leader"), current).await;
    assert_eq!(r.status, StatusCode::OK, "{}", text(&r));
    assert_eq!(r.json()["spec"]["renewTime"], "2026-07-01T00:00:59.999999Z");
    let r = app
        .request(
            Method::PATCH,
            &format!("{LEASES}/leader"),
            &[("content-type", "application/merge-patch+json")],
            Body::from(r#"{"spec": {"acquireTime": "0001-01-01T00:00:00.000000Z"}}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", text(&r));
    let obj = stored(&app, &format!("{LEASES}/leader")).await;
    assert_eq!(obj["spec"]["acquireTime"], Value::Null, "{obj}");
    assert_eq!(obj["spec"]["renewTime"], "2026-07-01T00:00:59.999999Z");
}

#[tokio::test]
async fn event_times_are_stored_in_utc() {
    let app = with_default().await;
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "Started", "message": "Started container", "type": "Normal", "action": "Start",
        "reportingComponent": "example.com/kubelet", "reportingInstance": "node-1",
        "eventTime": "2026-01-02T03:04:05.123456+05:30",
        "firstTimestamp": "2026-01-02T03:04:05-02:00", "lastTimestamp": "2026-01-02T03:04:05.987654321+02:00",
        "series": {"count": 2, "lastObservedTime": "2026-01-02T03:04:06.000000+00:00"}});
    let answer = created(&app, EVENTS, event).await;
    for obj in [&answer, &stored(&app, &format!("{EVENTS}/web.1")).await] {
        assert_eq!(obj["eventTime"], "2026-01-01T21:34:05.123456Z", "{obj}");
        assert_eq!(obj["firstTimestamp"], "2026-01-02T05:04:05Z", "{obj}");
        assert_eq!(obj["lastTimestamp"], "2026-01-02T01:04:05Z", "cut to the second: {obj}");
        assert_eq!(obj["series"]["lastObservedTime"], "2026-01-02T03:04:06.000000Z", "{obj}");
    }
}

#[tokio::test]
async fn custom_resources_keep_their_strings_as_sent() {
    let app = with_default().await;
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "cpu": {"type": "string"}, "at": {"type": "string", "format": "date-time"},
        "size": {"x-kubernetes-int-or-string": true}}}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}});
    created(&app, CRDS, crd).await;
    let spec = json!({"cpu": "1000m", "at": "2026-01-02T03:04:05.1+02:00", "size": "0.5Gi"});
    let answer = created(
        &app,
        GADGETS,
        json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec.clone()}),
    )
    .await;
    assert_eq!(answer["spec"], spec);
    assert_eq!(stored(&app, &format!("{GADGETS}/g")).await["spec"], spec);
}
