//! PATCH (all four kinds), fieldValidation, managedFields, the status and scale
//! subresources and deletecollection, through the router over a real single-node cluster.

mod common;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::{app, rv, App};
use serde_json::{json, Value};

const CM: &str = "/api/v1/namespaces/default/configmaps/a";
const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments/web";

async fn patch(app: &App, uri: &str, content_type: &str, body: &str) -> common::Reply {
    app.request(Method::PATCH, uri, &[("content-type", content_type)], Body::from(body.to_string())).await
}

const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| (e["manager"].as_str().unwrap().to_string(), e["operation"].as_str().unwrap().to_string()))
        .collect()
}

async fn deployment(app: &App) -> Value {
    let r = app
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                    {"name": "c", "image": "img:1", "ports": [{"containerPort": 80}]}]}}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
    r.json()
}

#[tokio::test]
async fn the_three_patch_types() {
    let app = app().await;
    app.namespace("default").await;
    let created = app.configmap("default", "a").await;

    let r = patch(&app, &format!("{CM}?fieldManager=merger"), MERGE, r#"{"data":{"m":"1"}}"#).await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    let merged = r.json();
    assert_eq!(merged["data"], json!({"k": "v", "m": "1"}));
    assert!(rv(&merged) > rv(&created));
    assert_eq!(merged["metadata"]["uid"], created["metadata"]["uid"]);
    assert!(managers(&merged).contains(&("merger".into(), "Update".into())), "{merged}");

    let r =
        patch(&app, CM, JSON_PATCH, r#"[{"op":"test","path":"/data/m","value":"1"},{"op":"remove","path":"/data/k"}]"#)
            .await;
    assert_eq!(r.json()["data"], json!({"m": "1"}));
    let r = patch(&app, CM, JSON_PATCH, r#"[{"op":"test","path":"/data/m","value":"2"}]"#).await;
    assert_eq!(r.status.as_u16(), 422, "a failed test op: {}", String::from_utf8_lossy(&r.bytes));
    let r = patch(&app, CM, JSON_PATCH, r#"{"op":"add"}"#).await;
    assert_eq!(r.status.as_u16(), 400, "not a JSON Patch: {}", String::from_utf8_lossy(&r.bytes));

    let r = patch(&app, CM, STRATEGIC, r#"{"data":{"s":"1","m":null}}"#).await;
    assert_eq!(r.json()["data"], json!({"s": "1"}));

    deployment(&app).await;
    let r = patch(
        &app,
        DEPLOY,
        STRATEGIC,
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"img:2"},{"name":"d","image":"d:1"}]}}}}"#,
    )
    .await;
    let d = r.json();
    let containers = &d["spec"]["template"]["spec"]["containers"];
    assert_eq!((&containers[0]["name"], &containers[0]["image"]), (&json!("c"), &json!("img:2")), "{d}");
    assert_eq!(containers[0]["ports"], json!([{"containerPort": 80, "protocol": "TCP"}]), "kept, defaulted: {d}");
    assert_eq!(containers[1]["imagePullPolicy"], "IfNotPresent", "a new container is defaulted: {d}");
    assert_eq!(containers[1]["name"], "d");
    assert_eq!(d["metadata"]["generation"], 2);

    // The same change as a merge patch replaces the list.
    let r = patch(&app, DEPLOY, MERGE, r#"{"spec":{"template":{"spec":{"containers":[{"name":"e","image":"e:1"}]}}}}"#)
        .await;
    let containers = r.json()["spec"]["template"]["spec"]["containers"].clone();
    let names: Vec<&str> = containers.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["e"]);
}

#[tokio::test]
async fn patch_errors_and_preconditions() {
    let app = app().await;
    app.namespace("default").await;
    let created = app.configmap("default", "a").await;

    patch(&app, CM, "application/json", "{}").await.status_of(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, \
         application/apply-patch+yaml",
    );
    patch(&app, "/api/v1/namespaces/default/configmaps/missing", MERGE, "{}").await.status_of(
        404,
        "NotFound",
        "configmaps \"missing\" not found",
    );
    patch(&app, CM, MERGE, "{not json").await;
    assert_eq!(patch(&app, CM, MERGE, "{not json").await.status.as_u16(), 400);
    patch(&app, CM, MERGE, r#"{"metadata":{"name":"b"}}"#).await.status_of(
        400,
        "BadRequest",
        "the name of the object (b) does not match the name on the URL (a)",
    );
    patch(&app, &format!("{CM}?force=true"), MERGE, "{}").await.status_of(
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
    );

    // A resourceVersion in the patch is a precondition.
    let stale = rv(&created).to_string();
    let r = patch(&app, CM, MERGE, r#"{"data":{"x":"1"}}"#).await;
    assert_eq!(r.status, StatusCode::OK);
    let body = format!(r#"{{"metadata":{{"resourceVersion":"{stale}"}},"data":{{"y":"1"}}}}"#);
    assert_eq!(patch(&app, CM, MERGE, &body).await.status.as_u16(), 409);
    let current = rv(&r.json()).to_string();
    let body = format!(r#"{{"metadata":{{"resourceVersion":"{current}"}},"data":{{"y":"1"}}}}"#);
    assert_eq!(patch(&app, CM, MERGE, &body).await.json()["data"]["y"], "1");

    // dryRun: answered, not stored.
    let before = app.applied();
    let r = patch(&app, &format!("{CM}?dryRun=All"), MERGE, r#"{"data":{"dry":"run"}}"#).await;
    assert_eq!(r.json()["data"]["dry"], "run");
    assert!(app.get(CM).await.json()["data"].get("dry").is_none());
    assert_eq!(app.applied(), before, "a dry run consumes no resourceVersion");
}

#[tokio::test]
async fn field_validation_on_every_write() {
    let app = app().await;
    app.namespace("default").await;
    let url = "/api/v1/namespaces/default/configmaps";

    // Warn (the default): stored without the field, one Warning header per field.
    let r = app.post(url, json!({"metadata": {"name": "w"}, "data": {}, "bogus": 1, "spec": {}})).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let warnings: Vec<&str> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(warnings, [r#"299 - "unknown field \"bogus\"""#, r#"299 - "unknown field \"spec\"""#]);
    assert!(r.json().get("bogus").is_none());

    // Strict: 400 naming every field, on POST, PUT and PATCH.
    app.post(&format!("{url}?fieldValidation=Strict"), json!({"metadata": {"name": "s"}, "bogus": 1})).await.status_of(
        400,
        "BadRequest",
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus""#,
    );
    let r = app
        .request(
            Method::POST,
            &format!("{url}?fieldValidation=Strict"),
            &[("content-type", "application/json")],
            Body::from(r#"{"metadata":{"name":"s"},"data":{"a":"1"},"data":{"a":"2"}}"#),
        )
        .await;
    assert_eq!(
        r.json()["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data""#
    );
    app.put(&format!("{url}/w?fieldValidation=Strict"), json!({"metadata": {"name": "w"}, "x": {"y": 1}}))
        .await
        .status_of(
            400,
            "BadRequest",
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "x""#,
        );
    let r = patch(&app, &format!("{url}/w?fieldValidation=Strict"), MERGE, r#"{"metadata":{"labelz":{}}}"#).await;
    assert_eq!(r.status.as_u16(), 400, "{}", String::from_utf8_lossy(&r.bytes));

    // Ignore: dropped silently.
    let r = app.post(&format!("{url}?fieldValidation=Ignore"), json!({"metadata": {"name": "i"}, "bogus": 1})).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert!(r.headers.get("warning").is_none());
    assert!(r.json().get("bogus").is_none());

    app.post(&format!("{url}?fieldValidation=Loose"), json!({"metadata": {"name": "l"}})).await.status_of(
        422,
        "Invalid",
        r#"CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn""#,
    );
}

#[tokio::test]
async fn server_side_apply_creates_tracks_and_conflicts() {
    let app = app().await;
    app.namespace("default").await;
    let url = "/api/v1/namespaces/default/configmaps/ssa";
    let yaml = |v: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: \"{v}\"\n");

    patch(&app, url, APPLY, &yaml("1")).await.status_of(
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
    );
    let r = patch(&app, &format!("{url}?fieldManager=alice"), APPLY, &yaml("1")).await;
    assert_eq!(r.status, StatusCode::CREATED, "apply creates: {}", String::from_utf8_lossy(&r.bytes));
    let created = r.json();
    assert_eq!(created["data"], json!({"k": "1"}));
    assert!(created["metadata"]["uid"].is_string());
    assert_eq!(managers(&created), [("alice".to_string(), "Apply".to_string())]);
    assert_eq!(created["metadata"]["managedFields"][0]["fieldsV1"], json!({"f:data": {"f:k": {}}}));

    // Another manager changing alice's field conflicts, one cause per field.
    let r = patch(&app, &format!("{url}?fieldManager=bob"), APPLY, &yaml("2")).await;
    let v = r.json();
    assert_eq!((r.status.as_u16(), v["reason"].as_str()), (409, Some("Conflict")), "{v}");
    assert_eq!(v["message"], r#"Apply failed with 1 conflict: conflict with "alice": .data.k"#);
    assert_eq!(
        v["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"alice\"", "field": ".data.k"}])
    );
    // The same value is shared, not a conflict; force takes the field.
    assert_eq!(patch(&app, &format!("{url}?fieldManager=bob"), APPLY, &yaml("1")).await.status, StatusCode::OK);
    let r = patch(&app, &format!("{url}?fieldManager=bob&force=true"), APPLY, &yaml("2")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["data"]["k"], "2");

    // JSON bodies are YAML too; the configuration's kind must be the URL's.
    let r = patch(
        &app,
        &format!("{url}?fieldManager=carol"),
        APPLY,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa"},"data":{"c":"3"}}"#,
    )
    .await;
    assert_eq!(r.json()["data"], json!({"k": "2", "c": "3"}));
    let r = patch(
        &app,
        &format!("{url}?fieldManager=carol"),
        APPLY,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ssa\n",
    )
    .await;
    assert_eq!(r.status.as_u16(), 400, "{}", String::from_utf8_lossy(&r.bytes));
}

#[tokio::test]
async fn status_and_scale_subresources() {
    let app = app().await;
    app.namespace("default").await;
    let d = deployment(&app).await;

    // The main resource ignores status; /status changes only status.
    let mut body = d.clone();
    body["status"] = json!({"replicas": 7});
    body["spec"]["replicas"] = json!(2);
    let r = app.put(DEPLOY, body.clone()).await.json();
    assert_eq!((r["spec"]["replicas"].clone(), r.get("status").cloned()), (json!(2), None), "{r}");
    body["metadata"]["resourceVersion"] = r["metadata"]["resourceVersion"].clone();
    body["spec"]["replicas"] = json!(9);
    let r = app.put(&format!("{DEPLOY}/status"), body).await.json();
    assert_eq!((r["spec"]["replicas"].clone(), r["status"]["replicas"].clone()), (json!(2), json!(7)), "{r}");
    let r = patch(&app, &format!("{DEPLOY}/status"), MERGE, r#"{"status":{"replicas":8},"spec":{"replicas":5}}"#)
        .await
        .json();
    assert_eq!((r["spec"]["replicas"].clone(), r["status"]["replicas"].clone()), (json!(2), json!(8)), "{r}");

    // Scale reads and writes spec.replicas.
    let s = app.get(&format!("{DEPLOY}/scale")).await.json();
    assert_eq!(s["kind"], "Scale");
    assert_eq!(s["apiVersion"], "autoscaling/v1");
    assert_eq!((s["spec"]["replicas"].clone(), s["status"]["replicas"].clone()), (json!(2), json!(8)));
    assert_eq!(s["status"]["selector"], "app=web");
    let r = patch(&app, &format!("{DEPLOY}/scale"), MERGE, r#"{"spec":{"replicas":4}}"#).await;
    assert_eq!(r.json()["spec"]["replicas"], 4, "{}", String::from_utf8_lossy(&r.bytes));
    assert_eq!(app.get(DEPLOY).await.json()["spec"]["replicas"], 4);
    let r = patch(&app, &format!("{DEPLOY}/scale"), MERGE, r#"{"spec":{"replicas":-1}}"#).await;
    assert_eq!(r.status.as_u16(), 422);
    assert_eq!(
        r.json()["message"],
        "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: \"-1\": must be greater than or equal to 0"
    );
    let mut s = app.get(&format!("{DEPLOY}/scale")).await.json();
    s["spec"]["replicas"] = json!(6);
    assert_eq!(app.put(&format!("{DEPLOY}/scale"), s).await.json()["spec"]["replicas"], 6);
}

#[tokio::test]
async fn delete_collection_with_selectors() {
    let app = app().await;
    app.namespace("default").await;
    let url = "/api/v1/namespaces/default/configmaps";
    for (name, tier) in [("a", "fe"), ("b", "fe"), ("c", "be")] {
        let r = app.post(url, json!({"metadata": {"name": name, "labels": {"tier": tier}}})).await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let r = app.request(Method::DELETE, &format!("{url}?labelSelector=tier%3Dfe"), &[], Body::empty()).await;
    assert_eq!(r.status, StatusCode::OK);
    let v = r.json();
    assert_eq!(v["kind"], "ConfigMapList");
    let names: Vec<&str> =
        v["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    let left = app.get(url).await.json();
    let left: Vec<&str> =
        left["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(left, ["c"]);
    let r = app
        .request(
            Method::DELETE,
            url,
            &[("content-type", "application/json")],
            Body::from(r#"{"propagationPolicy":"Sideways"}"#),
        )
        .await;
    assert_eq!(r.status.as_u16(), 422);
}
