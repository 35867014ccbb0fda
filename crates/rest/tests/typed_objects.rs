//! Objects of the wrong shape are refused before they are stored, as kube-apiserver's
//! typed decoding (400) and ObjectMeta validation (422) refuse them; objects of the right
//! shape, in kubectl's usual forms, of every built-in kind, still pass. Through the router
//! over a real single-node cluster.

mod common;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::{app, App, Reply};
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const PODS: &str = "/api/v1/namespaces/default/pods";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";

fn text(r: &Reply) -> String {
    String::from_utf8_lossy(&r.bytes).to_string()
}

async fn patch(app: &App, uri: &str, content_type: &str, body: &str) -> Reply {
    app.request(Method::PATCH, uri, &[("content-type", content_type)], Body::from(body.to_string())).await
}

async fn with_default() -> App {
    let app = app().await;
    app.namespace("default").await;
    app
}

fn deployment(name: &str, spec: Value) -> Value {
    let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}});
    merge(&mut d["spec"], spec);
    d
}

/// `patch` merged into `target` (objects key by key, anything else replaced).
fn merge(target: &mut Value, patch: Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p,
    }
}

/// `{key: value}`.
fn one(key: &str, value: Value) -> Value {
    let mut m = serde_json::Map::new();
    m.insert(key.to_string(), value);
    Value::Object(m)
}

/// Asserts a 400 "cannot be handled" for `kind` with `why`.
fn cannot_decode(r: &Reply, kind: &str, version: &str, why: &str) {
    r.status_of(400, "BadRequest", &format!("{kind} in version \"{version}\" cannot be handled as a {kind}: {why}"));
}

/// Asserts nothing named `name` is stored at `collection`.
async fn not_stored(app: &App, collection: &str, name: &str) {
    let r = app.get(&format!("{collection}/{name}")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{collection}/{name} was stored: {}", text(&r));
}

#[tokio::test]
async fn values_of_the_wrong_type_are_400_and_not_stored() {
    let app = with_default().await;
    let labels = "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.labels of type string";
    for (value, got) in
        [(json!(1), "number"), (json!(true), "bool"), (json!({"b": "c"}), "object"), (json!(["x"]), "array")]
    {
        let r = app.post(CMS, json!({"metadata": {"name": "a", "labels": {"a": value}}, "data": {"k": "v"}})).await;
        cannot_decode(&r, "ConfigMap", "v1", &labels.replace("{}", got));
        not_stored(&app, CMS, "a").await;
    }
    let r = app.post(CMS, json!({"metadata": {"name": "a", "labels": "app=web"}})).await;
    cannot_decode(
        &r,
        "ConfigMap",
        "v1",
        "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string",
    );
    let r = app.post(CMS, json!({"metadata": {"name": "a"}, "data": {"n": 5}})).await;
    cannot_decode(
        &r,
        "ConfigMap",
        "v1",
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
    );
    // YAML decodes to the same values.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    a: 1\n";
    let r = app.request(Method::POST, CMS, &[("content-type", "application/yaml")], Body::from(yaml)).await;
    cannot_decode(&r, "ConfigMap", "v1", &labels.replace("{}", "number"));
    not_stored(&app, CMS, "a").await;

    let replicas = "json: cannot unmarshal {} into Go struct field DeploymentSpec.spec.replicas of type int32";
    for (value, got) in [
        (json!(1.5), "number 1.5"),
        (json!("3"), "string"),
        (json!(2147483648u64), "number 2147483648"),
        (json!(-2147483649i64), "number -2147483649"),
    ] {
        let r = app.post(DEPLOYS, deployment("web", json!({"replicas": value}))).await;
        cannot_decode(&r, "Deployment", "v1", &replicas.replace("{}", got));
        not_stored(&app, DEPLOYS, "web").await;
    }
    let r = app.post(DEPLOYS, deployment("web", json!({"template": {"spec": {"containers": {"name": "c"}}}}))).await;
    cannot_decode(
        &r,
        "Deployment",
        "v1",
        "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
    );
    let big_port = json!({"template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 2147483648u64}]}]}}});
    let r = app.post(DEPLOYS, deployment("web", big_port)).await;
    cannot_decode(
        &r,
        "Deployment",
        "v1",
        "json: cannot unmarshal number 2147483648 into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32",
    );
    not_stored(&app, DEPLOYS, "web").await;

    let quantity = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
    for q in [json!("1.5.5Gi"), json!("lots"), json!(""), json!(true)] {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "i", "resources": {"limits": {"memory": q}}}]}});
        cannot_decode(&app.post(PODS, pod).await, "Pod", "v1", quantity);
    }
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1Gb"}}}]}});
    cannot_decode(&app.post(PODS, pod).await, "Pod", "v1", quantity);
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1ki"}}}]}});
    cannot_decode(&app.post(PODS, pod).await, "Pod", "v1", "unable to parse quantity's suffix");
    not_stored(&app, PODS, "p").await;

    let svc = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "targetPort": 1.5}]}});
    cannot_decode(
        &app.post("/api/v1/namespaces/default/services", svc).await,
        "Service",
        "v1",
        "json: cannot unmarshal number 1.5 into Go struct field ServicePort.spec.ports.targetPort of type int32",
    );
    let secret = json!({"metadata": {"name": "s"}, "data": {"k": "not base64!"}});
    cannot_decode(
        &app.post("/api/v1/namespaces/default/secrets", secret).await,
        "Secret",
        "v1",
        "illegal base64 data at input byte 3",
    );
    // Even under fieldValidation=Ignore: the object cannot be decoded at all.
    let r = app
        .post(&format!("{CMS}?fieldValidation=Ignore"), json!({"metadata": {"name": "a", "labels": {"a": 1}}}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", text(&r));
    let list = app.get(CMS).await.json();
    assert_eq!(list["items"], json!([]), "nothing refused was stored: {list}");
}

#[tokio::test]
async fn values_that_decode_but_kube_refuses_are_422() {
    let app = with_default().await;
    let r = app.post(DEPLOYS, deployment("web", json!({"replicas": -1}))).await;
    let s = r.status_of(
        422,
        "Invalid",
        r#"Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"#,
    );
    assert_eq!(s["details"]["causes"][0]["field"], "spec.replicas");
    let ports = json!({"template": {"spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 70000}]}]}}});
    app.post(DEPLOYS, deployment("web", ports)).await.status_of(
        422,
        "Invalid",
        r#"Deployment.apps "web" is invalid: spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"#,
    );
    let svc = json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 0}]}});
    app.post("/api/v1/namespaces/default/services", svc).await.status_of(
        422,
        "Invalid",
        r#"Service "s" is invalid: spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"#,
    );
    not_stored(&app, DEPLOYS, "web").await;
    not_stored(&app, "/api/v1/namespaces/default/services", "s").await;
}

#[tokio::test]
async fn metadata_limits_are_422() {
    let app = with_default().await;
    let post = |meta: Value| {
        let mut meta = meta;
        meta["name"] = json!("a");
        app.post(CMS, json!({"metadata": meta}))
    };

    // Annotations: 256 KiB of keys and values in all.
    let limit = 256 * 1024;
    let over = post(json!({"annotations": {"k": "v".repeat(limit), "x": ""}})).await;
    let s = over.status_of(
        422,
        "Invalid",
        r#"ConfigMap "a" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes"#,
    );
    assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueTooLong");
    not_stored(&app, CMS, "a").await;
    let r = post(json!({"annotations": {"k": "v".repeat(limit - 1)}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "exactly 256 KiB: {}", text(&r));
    app.delete(&format!("{CMS}/a")).await;

    let name_part = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
                     with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for \
                     validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let value_msg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
                     and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or \
                     '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    let long_name = "n".repeat(64);
    let long_prefix = format!("{}/a", "p".repeat(254));
    let bad_keys: Vec<(&str, String)> = vec![
        ("bad key", name_part.to_string()),
        ("-lead", name_part.to_string()),
        ("trail.", name_part.to_string()),
        (long_name.as_str(), "name part must be no more than 63 characters".to_string()),
        ("/a", "prefix part must be non-empty".to_string()),
        (long_prefix.as_str(), "prefix part must be no more than 253 characters".to_string()),
    ];
    for (key, msg) in &bad_keys {
        let r = post(json!({"labels": one(key, json!("v"))})).await;
        r.status_of(
            422,
            "Invalid",
            &format!(r#"ConfigMap "a" is invalid: metadata.labels: Invalid value: "{key}": {msg}"#),
        );
    }
    let r = post(json!({"labels": {"a/b/c": "v"}})).await;
    assert_eq!(r.status.as_u16(), 422, "{}", text(&r));
    assert!(r.json()["message"].as_str().unwrap().contains("a valid label key must consist of"), "{}", text(&r));
    let r = post(json!({"labels": {"Bad.Prefix/a": "v"}})).await;
    assert!(
        r.json()["message"].as_str().unwrap().contains("prefix part a lowercase RFC 1123 subdomain"),
        "{}",
        text(&r)
    );

    for value in ["-v", "v-", "a b", "a/b", "ü"] {
        post(json!({"labels": {"k": value}})).await.status_of(
            422,
            "Invalid",
            &format!(r#"ConfigMap "a" is invalid: metadata.labels: Invalid value: "{value}": {value_msg}"#),
        );
    }
    let long_value = "v".repeat(64);
    post(json!({"labels": {"k": long_value}})).await.status_of(
        422,
        "Invalid",
        &format!(r#"ConfigMap "a" is invalid: metadata.labels: Invalid value: "{long_value}": must be no more than 63 characters"#),
    );
    let r = post(json!({"annotations": {"bad key": "v"}})).await;
    r.status_of(
        422,
        "Invalid",
        &format!(r#"ConfigMap "a" is invalid: metadata.annotations: Invalid value: "bad key": {name_part}"#),
    );
    let r = post(json!({"finalizers": ["example.com/ok", "not ok"]})).await;
    r.status_of(
        422,
        "Invalid",
        &format!(r#"ConfigMap "a" is invalid: metadata.finalizers: Invalid value: "not ok": {name_part}"#),
    );
    let r = post(json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": ""}]})).await;
    r.status_of(
        422,
        "Invalid",
        r#"ConfigMap "a" is invalid: metadata.ownerReferences.uid: Invalid value: "": must not be empty"#,
    );
    let r = post(json!({"ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": 5}]})).await;
    cannot_decode(
        &r,
        "ConfigMap",
        "v1",
        "json: cannot unmarshal number into Go struct field OwnerReference.metadata.ownerReferences.uid of type string",
    );
    // Several problems answer together.
    let r = post(json!({"labels": {"ok": "-bad"}, "annotations": {"-bad": ""}})).await;
    let s = r.json();
    assert_eq!(r.status.as_u16(), 422);
    assert_eq!(s["details"]["causes"].as_array().unwrap().len(), 2, "{s}");
    not_stored(&app, CMS, "a").await;

    // Good metadata of every sort passes.
    let r = post(json!({"labels": {"app.kubernetes.io/name": "web", "tier": "", "A_b.c-9": "X_y.z-0"},
        "annotations": {"Example.COM/Anything": "any text at all: {\"json\": true}", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
        "finalizers": ["example.com/cleanup"],
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-1", "controller": true, "blockOwnerDeletion": true}]}))
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", text(&r));
}

#[tokio::test]
async fn updates_and_every_patch_are_checked_too() {
    let app = with_default().await;
    let created = app.configmap("default", "a").await;
    let cm = format!("{CMS}/a");

    let r = patch(&app, &cm, MERGE, r#"{"metadata":{"labels":5}}"#).await;
    cannot_decode(
        &r,
        "ConfigMap",
        "v1",
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type map[string]string",
    );
    let r = patch(&app, &cm, MERGE, r#"{"metadata":{"labels":{"a":1}}}"#).await;
    cannot_decode(
        &r,
        "ConfigMap",
        "v1",
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
    );
    let r = patch(&app, &cm, JSON_PATCH, r#"[{"op":"add","path":"/metadata/labels","value":{"a":{"b":1}}}]"#).await;
    assert_eq!(r.status.as_u16(), 400, "{}", text(&r));
    let r = patch(&app, &cm, STRATEGIC, r#"{"metadata":{"labels":{"bad key":"v"}}}"#).await;
    assert_eq!(r.status.as_u16(), 422, "{}", text(&r));
    let r =
        patch(&app, &cm, MERGE, &format!(r#"{{"metadata":{{"annotations":{{"a":"{}"}}}}}}"#, "x".repeat(256 * 1024)))
            .await;
    assert_eq!(r.status.as_u16(), 422, "{}", text(&r));
    let mut put = created.clone();
    put["metadata"]["labels"] = json!({"a": false});
    let r = app.put(&cm, put).await;
    cannot_decode(
        &r,
        "ConfigMap",
        "v1",
        "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string",
    );
    let now = app.get(&cm).await.json();
    assert_eq!(
        now["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"],
        "nothing was written: {now}"
    );
    assert!(now["metadata"].get("labels").is_none());

    let r = app.post(DEPLOYS, deployment("web", json!({}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", text(&r));
    let web = format!("{DEPLOYS}/web");
    let r = patch(&app, &web, JSON_PATCH, r#"[{"op":"replace","path":"/spec/replicas","value":"3"}]"#).await;
    cannot_decode(
        &r,
        "Deployment",
        "v1",
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
    );
    let r = patch(&app, &web, STRATEGIC, r#"{"spec":{"replicas":1.5}}"#).await;
    cannot_decode(
        &r,
        "Deployment",
        "v1",
        "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
    );
    let r = patch(&app, &web, MERGE, r#"{"spec":{"replicas":-1}}"#).await;
    assert_eq!(r.status.as_u16(), 422, "{}", text(&r));
    let apply = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1.5\n";
    let r = app
        .request(
            Method::PATCH,
            &format!("{web}?fieldManager=me"),
            &[("content-type", "application/apply-patch+yaml")],
            Body::from(apply),
        )
        .await;
    cannot_decode(
        &r,
        "Deployment",
        "v1",
        "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
    );
    assert_eq!(app.get(&web).await.json()["spec"]["replicas"], 1);
}

#[tokio::test]
async fn custom_resources_type_their_metadata() {
    let app = with_default().await;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced",
                 "names": {"plural": "crontabs", "kind": "CronTab", "singular": "crontab"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                    {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer", "minimum": 0, "default": 1},
                        "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}});
    let r = app.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", text(&r));
    let ct = "/apis/stable.example.com/v1/namespaces/default/crontabs";
    let obj = |meta: Value, spec: Value| json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": meta, "spec": spec});
    let r = app.post(ct, obj(json!({"name": "a", "labels": {"a": 1}}), json!({}))).await;
    cannot_decode(
        &r,
        "CronTab",
        "v1",
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
    );
    let r = app.post(ct, obj(json!({"name": "a", "labels": {"bad key": "v"}}), json!({}))).await;
    assert_eq!(r.status.as_u16(), 422, "{}", text(&r));
    // The rest is the schema's to validate, as before: 422, kube-openapi's words.
    let r = app.post(ct, obj(json!({"name": "a"}), json!({"replicas": "x"}))).await;
    assert_eq!(r.status.as_u16(), 422, "{}", text(&r));
    not_stored(&app, ct, "a").await;
    let r = app
        .post(
            ct,
            obj(json!({"name": "a", "labels": {"app": "x"}}), json!({"replicas": 2, "config": {"any": [1, "x"]}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", text(&r));
}

/// Objects of every built-in kind as kubectl and controllers write them (with
/// `creationTimestamp: null`, empty `status`, int-or-strings both ways, quantities as
/// strings and numbers, micro-times) are stored as before.
#[tokio::test]
async fn good_objects_of_every_built_in_kind_pass() {
    let app = with_default().await;
    let meta = |name: &str| json!({"name": name, "creationTimestamp": null, "labels": {"app": "web"}});
    let objects = [
        (
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta("team"), "spec": {}, "status": {}}),
        ),
        (
            CMS,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cm"), "data": {"k": "v", "empty": ""},
            "binaryData": {"b": "AAEC"}, "immutable": false}),
        ),
        (
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("s"),
            "type": "Opaque", "data": {"password": "czNjcjN0", "wrapped": "YWJj\nZGVm"}, "stringData": {"user": "admin"}}),
        ),
        (
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("sa"),
            "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "reg"}]}),
        ),
        (
            "/api/v1/namespaces/default/services",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": meta("svc"),
            "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP", "nodePort": 30080},
                {"name": "metrics", "port": 9090, "targetPort": 9090}], "sessionAffinity": "None"}, "status": {"loadBalancer": {}}}),
        ),
        (
            PODS,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta("pod"), "spec": {
            "terminationGracePeriodSeconds": 30, "activeDeadlineSeconds": 600, "restartPolicy": "Always",
            "securityContext": {"runAsUser": 1000, "fsGroup": 2000, "runAsNonRoot": true},
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "volumes": [{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}, {"name": "cfg", "configMap": {"name": "cm", "defaultMode": 420}}],
            "containers": [{"name": "c", "image": "nginx:1.27", "args": ["-g", "daemon off;"],
                "ports": [{"containerPort": 80, "name": "http", "protocol": "TCP"}],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "C", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}],
                "resources": {"limits": {"cpu": 1, "memory": "512Mi"}, "requests": {"cpu": "250m", "memory": 2.5e8, "ephemeral-storage": "1e9"}},
                "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "initialDelaySeconds": 3, "periodSeconds": 10},
                "readinessProbe": {"tcpSocket": {"port": 80}},
                "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": false}]}]},
            "status": {}}),
        ),
        (
            DEPLOYS,
            deployment(
                "deploy",
                json!({"minReadySeconds": 0, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {"metadata": {"creationTimestamp": null, "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-02T03:04:05Z"}}}}),
            ),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": meta("lease"), "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40,
                "acquireTime": "2026-01-02T03:04:05.000000Z", "renewTime": "2026-01-02T03:04:45.123456Z", "leaseTransitions": 0}}),
        ),
        (
            "/api/v1/namespaces/default/events",
            json!({"apiVersion": "v1", "kind": "Event", "metadata": meta("ev"),
            "involvedObject": {"kind": "Pod", "name": "pod", "namespace": "default", "apiVersion": "v1"},
            "reason": "Started", "message": "Started container c", "type": "Normal", "count": 1,
            "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:04:05Z", "eventTime": null,
            "source": {"component": "kubelet", "host": "node-1"}}),
        ),
        (
            "/api/v1/nodes",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": meta("node-1"),
            "spec": {"podCIDR": "10.0.0.0/24", "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}, "allocatable": {"cpu": "3800m", "memory": "15Gi"},
                       "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-02T03:04:05Z"}]}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role", "metadata": meta("r"), "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole", "metadata": meta("cr"), "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}],
            "aggregationRule": null}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding", "metadata": meta("rb"), "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}, {"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding", "metadata": meta("crb"), "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cr"},
            "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]}),
        ),
        (
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Cluster", "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10.5, "default": 3, "enum": [1, 3, 5]},
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 4},
                        "extra": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "additionalProperties": true, "x-kubernetes-preserve-unknown-fields": true},
                        "example": {"type": "string", "example": {"any": "thing"}}}}}}}}]}}),
        ),
    ];
    for (collection, obj) in objects {
        let kind = obj["kind"].as_str().unwrap().to_string();
        let r = app.post(collection, obj).await;
        assert_eq!(r.status, StatusCode::CREATED, "{kind}: {}", text(&r));
    }
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "default"}}});
    let r = app.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review).await;
    assert!(r.status.is_success(), "{}", text(&r));
    // Read back: a quantity sent as a number is stored in kube's canonical form.
    let pod = app.get(&format!("{PODS}/pod")).await.json();
    assert_eq!(pod["spec"]["containers"][0]["resources"]["requests"]["memory"], json!("250M"));
}
