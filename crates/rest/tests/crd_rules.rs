//! CRD validation rules (`x-kubernetes-validations`, CEL) through the router over a real
//! single-node cluster: rules and transition rules refuse writes with kube's messages,
//! `messageExpression`, `reason` and `fieldPath` shape the error, a failure on an
//! unchanged value is a warning (ratcheting), and a CRD whose rule does not compile, names
//! an undeclared field, uses `oldSelf` where nothing correlates, or would cost too much
//! is refused when it is written.

mod common;

use axum::http::StatusCode;
use common::{app, rv, App};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/rules.example.com/v1/namespaces/default/widgets";

fn crd(spec_schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.rules.example.com"},
        "spec": {
            "group": "rules.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}}}]
        }
    })
}

fn widget_schema() -> Value {
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.replicas", "message": "replicas should be at least minReplicas"},
            {"rule": "self.replicas >= oldSelf.replicas", "reason": "FieldValueForbidden",
             "messageExpression": "'replicas may not go down from ' + string(oldSelf.replicas)"},
            {"rule": "!has(self.tier) || self.tier in ['gold', 'silver']", "fieldPath": ".tier"}
        ],
        "properties": {
            "replicas": {"type": "integer"},
            "minReplicas": {"type": "integer"},
            "tier": {"type": "string", "maxLength": 16},
            "name": {"type": "string", "maxLength": 63,
                     "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]},
            "ports": {"type": "array", "maxItems": 16, "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string", "maxLength": 15},
                          "port": {"type": "integer", "x-kubernetes-validations": [
                              {"rule": "self >= oldSelf", "message": "a port may only grow"}]}}}}
        }
    })
}

async fn with_widgets() -> App {
    let app = app().await;
    app.namespace("default").await;
    let r = app.post(CRDS, crd(widget_schema())).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
    app
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "rules.example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn rules_refuse_creates_with_kubes_messages() {
    let app = with_widgets().await;
    let before = app.applied();
    let r = app.post(WIDGETS, widget("w", json!({"replicas": 1, "minReplicas": 2}))).await;
    r.status_of(
        422,
        "Invalid",
        "Widget.rules.example.com \"w\" is invalid: spec: Invalid value: replicas should be at least minReplicas",
    );
    let v = r.json();
    assert_eq!(v["details"]["causes"][0]["field"], "spec", "{v}");
    assert_eq!(v["details"]["causes"][0]["reason"], "FieldValueInvalid", "{v}");
    // fieldPath moves the error (the value shown is still the rule's node's, an object:
    // none); a rule with no message names its expression.
    let r = app.post(WIDGETS, widget("w", json!({"replicas": 1, "minReplicas": 1, "tier": "bronze"}))).await;
    r.status_of(
        422,
        "Invalid",
        "Widget.rules.example.com \"w\" is invalid: spec.tier: Invalid value: failed rule: !has(self.tier) || self.tier in ['gold', 'silver']",
    );
    // Refused writes were never proposed.
    assert_eq!(app.applied(), before);
    // Transition rules do not run on a create.
    let r = app
        .post(
            WIDGETS,
            widget("w", json!({"replicas": 3, "minReplicas": 1, "name": "a", "ports": [{"name": "http", "port": 80}]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
}

#[tokio::test]
async fn transition_rules_refuse_the_right_updates() {
    let app = with_widgets().await;
    let spec = json!({"replicas": 3, "minReplicas": 1, "name": "a", "ports": [{"name": "http", "port": 80}]});
    let r = app.post(WIDGETS, widget("w", spec)).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let stored = r.json();
    let uri = format!("{WIDGETS}/w");
    let update = |spec: Value| {
        let mut w = widget("w", spec);
        w["metadata"]["resourceVersion"] = json!(rv(&stored).to_string());
        w
    };
    let r = app
        .put(
            &uri,
            update(json!({"replicas": 2, "minReplicas": 1, "name": "b", "ports": [{"name": "http", "port": 79}]})),
        )
        .await;
    r.status_of(
        422,
        "Invalid",
        "Widget.rules.example.com \"w\" is invalid: [spec: Forbidden: replicas may not go down from 3, spec.name: Invalid value: \"b\": name is immutable, spec.ports[0].port: Invalid value: 79: a port may only grow]",
    );
    // A new port has no old value to compare with: the transition rule does not run.
    let r = app
        .put(&uri, update(json!({"replicas": 4, "minReplicas": 1, "name": "a", "ports": [{"name": "http", "port": 81}, {"name": "x", "port": 1}]})))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
}

#[tokio::test]
async fn a_failure_on_an_unchanged_value_is_a_warning() {
    let app = app().await;
    app.namespace("default").await;
    let loose = json!({"type": "object", "properties": {"size": {"type": "integer"}, "note": {"type": "string"}}});
    assert_eq!(app.post(CRDS, crd(loose)).await.status, StatusCode::CREATED);
    let r = app.post(WIDGETS, widget("w", json!({"size": 50, "note": "a"}))).await;
    assert_eq!(r.status, StatusCode::CREATED);
    // A rule is added that the stored object breaks.
    let uri = format!("{CRDS}/widgets.rules.example.com");
    let mut c = app.get(&uri).await.json();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]
        ["x-kubernetes-validations"] = json!([{"rule": "self <= 10", "message": "at most 10"}]);
    let r = app.put(&uri, c).await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    // Changing something else still works, with a warning; changing size to another bad value does not.
    let w = app.get(&format!("{WIDGETS}/w")).await.json();
    let mut changed = w.clone();
    changed["spec"]["note"] = json!("b");
    let r = app.put(&format!("{WIDGETS}/w"), changed).await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    let warning = r.headers.get("warning").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    assert!(warning.contains("spec.size: Invalid value: 50: at most 10"), "{warning:?}");
    let mut worse = r.json();
    worse["spec"]["size"] = json!(60);
    let r = app.put(&format!("{WIDGETS}/w"), worse).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", String::from_utf8_lossy(&r.bytes));
}

#[tokio::test]
async fn bad_rules_refuse_the_crd() {
    let app = app().await;
    let cases = [
        (
            json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}},
                   "x-kubernetes-validations": [{"rule": "self.items.all(x, self.items.all(y, x == y))"}]}),
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of",
        ),
        (
            json!({"type": "object", "properties": {"replicas": {"type": "integer"}},
                   "x-kubernetes-validations": [{"rule": "self.replicaz > 0"}]}),
            "undefined field 'replicaz'",
        ),
        (
            json!({"type": "object", "properties": {"replicas": {"type": "integer"}},
                   "x-kubernetes-validations": [{"rule": "self.replicas >"}]}),
            "x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.replicas >\"",
        ),
        (
            json!({"type": "object", "properties": {"tags": {"type": "array", "maxItems": 4,
                   "items": {"type": "string", "maxLength": 8, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}),
            "oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[spec].properties[tags]",
        ),
        (
            json!({"type": "object", "properties": {"replicas": {"type": "integer"}},
                   "x-kubernetes-validations": [{"rule": "self.replicas"}]}),
            "cel expression must evaluate to a bool",
        ),
    ];
    for (schema, want) in cases {
        let before = app.applied();
        let r = app.post(CRDS, crd(schema)).await;
        let v = r.json();
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
        let message = v["message"].as_str().unwrap_or("");
        assert!(
            message.starts_with(
                "CustomResourceDefinition.apiextensions.k8s.io \"widgets.rules.example.com\" is invalid: "
            ),
            "{message}"
        );
        assert!(message.contains(want), "{message}\nwant: {want}");
        assert_eq!(app.applied(), before);
    }
}
