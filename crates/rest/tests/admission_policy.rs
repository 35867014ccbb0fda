//! Admission policies (CEL) through the router over a real single-node cluster: a
//! ValidatingAdmissionPolicy with a param refuses a Deployment with too many replicas
//! (kube's message, 422, nothing proposed), its Warn binding warns, a missing param with
//! `parameterNotFoundAction: Deny` refuses, match conditions skip; a
//! MutatingAdmissionPolicy adds a label (apply configuration) and sets a field (JSON
//! patch); an expression that is not CEL is refused when the policy is written.

mod common;

use serde_json::{json, Value};

const VAP: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const VAPB: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const MAP: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies";
const MAPB: &str = "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings";
const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

async fn created(app: &common::App, uri: &str, body: Value) -> Value {
    let r = app.post(uri, body).await;
    assert_eq!(r.status.as_u16(), 201, "{uri}: {}", r.json());
    r.json()
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn max_replicas_policy() -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
    "metadata": {"name": "max-replicas"},
    "spec": {
        "failurePolicy": "Fail",
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
        "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}],
        "variables": [{"name": "limit", "expression": "int(params.data.maxReplicas)"}],
        "validations": [
            {"expression": "object.spec.replicas <= variables.limit"},
            {"expression": "object.metadata.name.size() < 20", "messageExpression": "'name ' + object.metadata.name + ' is too long'", "reason": "Forbidden"}
        ],
        "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}]
    }})
}

fn binding(name: &str, param: Value, actions: &[&str]) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": "max-replicas", "validationActions": actions, "paramRef": param}})
}

#[tokio::test]
async fn a_validating_policy_with_a_param_refuses_too_many_replicas() {
    let app = common::app().await;
    app.namespace("default").await;
    created(&app, CONFIGMAPS, json!({"metadata": {"name": "limits"}, "data": {"maxReplicas": "5"}})).await;
    created(&app, VAP, max_replicas_policy()).await;
    created(
        &app,
        VAPB,
        binding(
            "max-replicas-binding",
            json!({"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}),
            &["Deny"],
        ),
    )
    .await;

    created(&app, DEPLOYMENTS, deployment("small", 3)).await;
    let before = app.applied();
    let r = app.post(DEPLOYMENTS, deployment("big", 50)).await;
    let v = r.status_of(
        422,
        "Invalid",
        "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= variables.limit",
    );
    assert_eq!(
        v["details"]["causes"][0]["message"],
        "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= variables.limit"
    );
    assert_eq!(app.applied(), before, "a refused create proposes nothing");

    // The validation's reason and messageExpression.
    let r = app.post(DEPLOYMENTS, deployment("a-name-much-too-long-for-it", 1)).await;
    r.status_of(
        403,
        "Forbidden",
        "deployments.apps \"a-name-much-too-long-for-it\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: name a-name-much-too-long-for-it is too long",
    );

    // Updates are judged too; raising the param's limit lets them through.
    let mut scaled = app.get(&format!("{DEPLOYMENTS}/small")).await.json();
    scaled["spec"]["replicas"] = json!(9);
    assert_eq!(app.put(&format!("{DEPLOYMENTS}/small"), scaled.clone()).await.status.as_u16(), 422);
    let mut limits = app.get(&format!("{CONFIGMAPS}/limits")).await.json();
    limits["data"]["maxReplicas"] = json!("10");
    assert_eq!(app.put(&format!("{CONFIGMAPS}/limits"), limits).await.status.as_u16(), 200);
    assert_eq!(app.put(&format!("{DEPLOYMENTS}/small"), scaled).await.status.as_u16(), 200);

    // Match conditions skip: an exempt Deployment is not judged.
    let mut exempt = deployment("exempt", 500);
    exempt["metadata"]["labels"]["exempt"] = json!("yes");
    created(&app, DEPLOYMENTS, exempt).await;

    // A Warn binding warns without refusing.
    assert_eq!(app.delete(&format!("{VAPB}/max-replicas-binding")).await.status.as_u16(), 200);
    created(&app, VAPB, binding("warn", json!({"name": "limits", "namespace": "default"}), &["Warn", "Audit"])).await;
    let r = app.post(DEPLOYMENTS, deployment("warned", 11)).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let warning = r.headers.get("warning").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    assert!(
        warning.contains("Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding 'warn': failed expression: object.spec.replicas <= variables.limit"),
        "{warning}"
    );

    // A param that is not there, with parameterNotFoundAction Deny, refuses under Fail.
    assert_eq!(app.delete(&format!("{VAPB}/warn")).await.status.as_u16(), 200);
    created(
        &app,
        VAPB,
        binding(
            "missing",
            json!({"name": "nothere", "namespace": "default", "parameterNotFoundAction": "Deny"}),
            &["Deny"],
        ),
    )
    .await;
    let r = app.post(DEPLOYMENTS, deployment("d", 1)).await;
    r.status_of(
        422,
        "Invalid",
        "deployments.apps \"d\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'missing' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
    );
    // ... and with Allow, nothing runs.
    assert_eq!(app.delete(&format!("{VAPB}/missing")).await.status.as_u16(), 200);
    created(
        &app,
        VAPB,
        binding(
            "allow",
            json!({"name": "nothere", "namespace": "default", "parameterNotFoundAction": "Allow"}),
            &["Deny"],
        ),
    )
    .await;
    created(&app, DEPLOYMENTS, deployment("e", 100)).await;
}

#[tokio::test]
async fn a_mutating_policy_adds_a_label_and_patches() {
    let app = common::app().await;
    app.namespace("default").await;
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
    "metadata": {"name": "label"},
    "spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["configmaps"]}]},
        "reinvocationPolicy": "Never",
        "mutations": [
            {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                "Object{metadata: Object.metadata{labels: {'environment': 'test', 'owner': request.userInfo.username}}}"}},
            {"patchType": "JSONPatch", "jsonPatch": {"expression":
                "[JSONPatch{op: 'add', path: '/data', value: {'added': 'by-policy'}}]"}}
        ]
    }});
    created(&app, MAP, policy).await;
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": "label-binding"}, "spec": {"policyName": "label"}});
    created(&app, MAPB, binding).await;
    let cm = created(&app, CONFIGMAPS, json!({"metadata": {"name": "a", "labels": {"kept": "yes"}}})).await;
    assert_eq!(cm["metadata"]["labels"]["environment"], "test", "{cm}");
    assert_eq!(cm["metadata"]["labels"]["kept"], "yes", "{cm}");
    assert_eq!(cm["data"], json!({"added": "by-policy"}), "{cm}");
}

/// An apply configuration is merged by the kind's schema, as kube merges it: a keyed list
/// (a Deployment's containers) gains an element by its key and keeps the others, and one
/// that sets an atomic struct (the label selector) is refused with kube's message.
#[tokio::test]
async fn apply_configurations_merge_keyed_lists_and_refuse_atomic_values() {
    let app = common::app().await;
    app.namespace("default").await;
    let policy = |name: &str, expression: &str| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "matchConditions": [{"name": "named", "expression": format!("object.metadata.name.startsWith('{name}')")}],
            "reinvocationPolicy": "Never",
            "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}]}})
    };
    let sidecar = "Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{
        containers: [Object.spec.template.spec.containers{name: 'proxy', image: 'envoy'}]}}}}";
    created(&app, MAP, policy("sidecar", sidecar)).await;
    let selector = "Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {'x': 'y'}}}}";
    created(&app, MAP, policy("selector", selector)).await;
    for name in ["sidecar", "selector"] {
        let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": {"policyName": name}});
        created(&app, MAPB, binding).await;
    }

    let d = created(&app, DEPLOYMENTS, deployment("sidecar-web", 1)).await;
    let names: Vec<&str> = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "proxy"], "{d}");
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx");

    let before = app.applied();
    let r = app.post(DEPLOYMENTS, deployment("selector-web", 1)).await;
    let v = r.json();
    assert_eq!(r.status.as_u16(), 403, "{v}");
    let m = v["message"].as_str().unwrap();
    assert!(
        m.ends_with("error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.selector"),
        "{m}"
    );
    assert_eq!(app.applied(), before, "nothing proposed");
}

#[tokio::test]
async fn expressions_that_are_not_cel_refuse_the_policy() {
    let app = common::app().await;
    let mut policy = max_replicas_policy();
    policy["spec"]["validations"][0]["expression"] = json!("object.spec.replicas <=");
    let r = app.post(VAP, policy).await;
    let v = r.json();
    assert_eq!(r.status.as_u16(), 422, "{v}");
    let m = v["message"].as_str().unwrap();
    assert!(
        m.contains("spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed: "),
        "{m}"
    );
}

/// A policy on deletes sees the object as `oldObject` (and `object` null): config maps
/// marked `protected` cannot be deleted, one at a time or as a collection; the rest can.
#[tokio::test]
async fn a_validating_policy_guards_deletes() {
    let app = common::app().await;
    app.namespace("default").await;
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "keep-protected"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["DELETE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "object == null && !(has(oldObject.metadata.labels) && 'protected' in oldObject.metadata.labels)",
                "messageExpression": "oldObject.metadata.name + ' is protected'"}]}});
    created(&app, VAP, policy).await;
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "keep-protected"}, "spec": {"policyName": "keep-protected", "validationActions": ["Deny"]}});
    created(&app, VAPB, binding).await;
    created(&app, CONFIGMAPS, json!({"metadata": {"name": "guarded", "labels": {"protected": "yes"}}})).await;
    created(&app, CONFIGMAPS, json!({"metadata": {"name": "free"}})).await;

    // kube's reason for a failed validation without one is Invalid: 422.
    let r = app.delete(&format!("{CONFIGMAPS}/guarded")).await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.json());
    assert_eq!(
        r.json()["message"],
        "configmaps \"guarded\" is forbidden: ValidatingAdmissionPolicy 'keep-protected' with binding \
         'keep-protected' denied request: guarded is protected"
    );
    assert_eq!(app.delete(&format!("{CONFIGMAPS}/free")).await.status.as_u16(), 200);
    // A collection's delete stops at the protected one.
    assert_eq!(app.delete(CONFIGMAPS).await.status.as_u16(), 422);
    assert_eq!(app.get(&format!("{CONFIGMAPS}/guarded")).await.status.as_u16(), 200);
}

#[tokio::test]
async fn audit_annotations_are_written_trimmed_once_and_a_wrong_type_refuses() {
    let mut app = common::app().await;
    app.namespace("default").await;
    let audit = app.audited();
    created(
        &app,
        VAP,
        json!({"metadata": {"name": "noted"}, "spec": {"failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["configmaps"]}]},
        "auditAnnotations": [
            {"key": "name", "valueExpression": "'  ' + object.metadata.name + '  '"},
            {"key": "nothing", "valueExpression": "null"},
            {"key": "blank", "valueExpression": "'   '"},
            {"key": "count", "valueExpression": "has(object.data) && 'count' in object.data ? 1 : null"}]}}),
    )
    .await;
    // Two bindings: the same value is written once.
    for b in ["first", "second"] {
        created(
            &app,
            VAPB,
            json!({"metadata": {"name": b}, "spec": {"policyName": "noted", "validationActions": ["Deny"]}}),
        )
        .await;
    }
    let r = app.post(CONFIGMAPS, json!({"metadata": {"name": "seen"}})).await;
    assert_eq!(r.status.as_u16(), 201, "{}", r.json());
    let done = audit.completed(&r);
    let annotations = done["annotations"].as_object().unwrap();
    assert_eq!(annotations.get("noted/name"), Some(&json!("seen")), "{annotations:?}");
    for absent in ["noted/nothing", "noted/blank", "noted/count"] {
        assert!(!annotations.contains_key(absent), "{absent}: {annotations:?}");
    }
    // An int is not a value an annotation can have: an error, under Fail a refusal.
    let r = app.post(CONFIGMAPS, json!({"metadata": {"name": "counted"}, "data": {"count": "1"}})).await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.json());
    let message = r.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("resulted in unsupported return type: int"), "{message}");
}

#[tokio::test]
async fn policies_take_an_equivalent_version_at_the_version_their_rules_name() {
    let app = common::app().await;
    app.namespace("default").await;
    app.widgets_at_two_versions().await;
    let v1_only = json!({"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
        "operations": ["CREATE"], "resources": ["widgets"]}]});
    // Sees the object at v1 and the request as asked: refuses a large widget.
    created(&app, VAP, json!({"metadata": {"name": "small-widgets"}, "spec": {"failurePolicy": "Fail",
        "matchConstraints": v1_only,
        "validations": [{"expression": "object.apiVersion == 'example.com/v1' && request.requestKind.version == 'v2' && object.spec.size < 10",
            "message": "too big"}]}}))
    .await;
    created(&app, VAPB, json!({"metadata": {"name": "small-widgets"}, "spec": {"policyName": "small-widgets", "validationActions": ["Deny"]}})).await;
    created(
        &app,
        MAP,
        json!({"metadata": {"name": "label-widgets"}, "spec": {"failurePolicy": "Fail",
        "matchConstraints": v1_only, "reinvocationPolicy": "Never",
        "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
            "Object{metadata: Object.metadata{labels: {'seen-as': object.apiVersion.split('/')[1]}}}"}}]}}),
    )
    .await;
    created(&app, MAPB, json!({"metadata": {"name": "label-widgets"}, "spec": {"policyName": "label-widgets"}})).await;

    let v2 = "/apis/example.com/v2/namespaces/default/widgets";
    let widget = |name: &str, size: i64| json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": name}, "spec": {"size": size}});
    let made = created(&app, v2, widget("small", 3)).await;
    assert_eq!(made["apiVersion"], "example.com/v2");
    assert_eq!(made["metadata"]["labels"], json!({"seen-as": "v1"}), "mutated at v1, kept at v2: {made}");
    let r = app.post(v2, widget("big", 30)).await;
    assert_eq!(r.status.as_u16(), 422, "{}", r.json());
    assert!(r.json()["message"].as_str().unwrap().contains("too big"), "{}", r.json());
}
