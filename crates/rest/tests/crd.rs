//! CustomResourceDefinitions and custom resources through the router over a real
//! single-node cluster: registration (status, discovery, OpenAPI), kube-apiserver's CRD
//! validation, every verb on custom resources, schema validation, pruning, defaults, the
//! status and scale subresources, several versions, printer columns, updates of the CRD,
//! and deletion with its cleanup.

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::{app, rv, App, Reply};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const CT: &str = "/apis/stable.example.com/v1/namespaces/default/crontabs";
const CT_BETA: &str = "/apis/stable.example.com/v1beta1/namespaces/default/crontabs";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// The CronTab CRD of the Kubernetes docs, grown: two versions (v1 stored), status and
/// scale subresources, printer columns, defaults and constraints.
fn crontab_crd() -> Value {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["cronSpec"], "properties": {
            "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$",
                         "description": "the schedule, in cron format"},
            "image": {"type": "string", "maxLength": 20},
            "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
            "mode": {"type": "string", "enum": ["Fast", "Slow"], "default": "Slow"},
            "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
        "status": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "selector": {"type": "string"}, "phase": {"type": "string"}}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"], "categories": ["all"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema},
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                 "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]},
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    })
}

fn body_text(r: &Reply) -> String {
    String::from_utf8_lossy(&r.bytes).to_string()
}

async fn created(app: &App, uri: &str, obj: Value) -> Value {
    let r = app.post(uri, obj).await;
    assert_eq!(r.status, StatusCode::CREATED, "{uri}: {}", body_text(&r));
    r.json()
}

async fn patch(app: &App, uri: &str, content_type: &str, body: &str) -> Reply {
    app.request(Method::PATCH, uri, &[("content-type", content_type)], Body::from(body.to_string())).await
}

/// A namespace, the CronTab CRD, and the app.
async fn with_crontabs() -> (App, Value) {
    let app = app().await;
    app.namespace("default").await;
    let crd = created(&app, CRDS, crontab_crd()).await;
    (app, crd)
}

async fn crontab(app: &App, name: &str, spec: Value) -> Value {
    created(
        app,
        CT,
        json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": name}, "spec": spec}),
    )
    .await
}

#[tokio::test]
async fn a_crd_is_established_and_discoverable_at_once() {
    let (app, crd) = with_crontabs().await;
    assert_eq!(crd["metadata"]["generation"], 1);
    assert_eq!(crd["spec"]["names"]["singular"], "crontab", "defaulted from the kind");
    assert_eq!(crd["spec"]["names"]["listKind"], "CronTabList");
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    let conditions: Vec<(String, String)> = crd["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap().into(), c["status"].as_str().unwrap().into()))
        .collect();
    assert_eq!(conditions, [("NamesAccepted".into(), "True".into()), ("Established".into(), "True".into())]);
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "CronTab");
    assert_eq!(crd["status"]["acceptedNames"]["shortNames"], json!(["ct"]));
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));

    // Legacy discovery.
    let group = app.get("/apis/stable.example.com").await.json();
    assert_eq!(group["preferredVersion"], json!({"groupVersion": "stable.example.com/v1", "version": "v1"}));
    assert_eq!(group["versions"].as_array().unwrap().len(), 2);
    let list = app.get("/apis/stable.example.com/v1").await.json();
    let names: Vec<&str> = list["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["crontabs", "crontabs/scale", "crontabs/status"]);
    assert_eq!(list["resources"][0]["shortNames"], json!(["ct"]));
    assert_eq!(list["resources"][0]["categories"], json!(["all"]));
    assert_eq!(list["resources"][0]["namespaced"], true);
    let beta = app.get("/apis/stable.example.com/v1beta1").await.json();
    assert_eq!(beta["resources"].as_array().unwrap().len(), 1, "v1beta1 has no subresources");
    let groups = app.get("/apis").await.json();
    assert!(groups["groups"].as_array().unwrap().iter().any(|g| g["name"] == "stable.example.com"), "{groups}");

    // Aggregated discovery, as kubectl asks for it.
    let agg = app
        .get_with("/apis", &[("accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")])
        .await
        .json();
    let item = agg["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == "stable.example.com").unwrap();
    assert_eq!(item["versions"][0]["version"], "v1");
    let r = &item["versions"][0]["resources"][0];
    assert_eq!((r["resource"].as_str(), r["scope"].as_str()), (Some("crontabs"), Some("Namespaced")));
    assert_eq!(r["responseKind"], json!({"group": "stable.example.com", "version": "v1", "kind": "CronTab"}));

    // OpenAPI v3: the index lists the group-version; its document has the kind's schema.
    let index = app.get("/openapi/v3").await.json();
    let url = index["paths"]["apis/stable.example.com/v1"]["serverRelativeURL"].as_str().unwrap().to_string();
    let doc = app.get(&url).await.json();
    let schema = &doc["components"]["schemas"]["com.example.stable.v1.CronTab"];
    assert_eq!(schema["x-kubernetes-group-version-kind"][0]["kind"], "CronTab");
    assert_eq!(schema["properties"]["spec"]["properties"]["cronSpec"]["description"], "the schedule, in cron format");
    let ops = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"];
    assert_eq!(ops["patch"]["x-kubernetes-group-version-kind"]["kind"], "CronTab");
    assert!(ops["patch"]["parameters"].as_array().unwrap().iter().any(|p| p["name"] == "fieldValidation"));
    assert!(index["paths"]["apis/stable.example.com/v1beta1"].is_object());
    assert!(index["paths"]["apis/apiextensions.k8s.io/v1"].is_object(), "the CRD resource's own document");

    // The CRD itself, as kubectl get lists it.
    let t = app.get_with(CRDS, &[("accept", TABLE)]).await.json();
    assert_eq!(t["rows"][0]["cells"][0], "crontabs.stable.example.com");
}

/// A change to a valid CRD and the message it must be refused with.
type Case = (Box<dyn Fn(&mut Value)>, &'static str);

#[tokio::test]
async fn invalid_crds_are_refused_with_kubes_messages() {
    let app = app().await;
    let cases: Vec<Case> = vec![
        (
            Box::new(|c| c["metadata"]["name"] = json!("crontab.stable.example.com")),
            "metadata.name: Invalid value: \"crontab.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
        ),
        (Box::new(|c| c["spec"]["names"]["kind"] = json!("")), "spec.names.kind: Required value"),
        (Box::new(|c| c["spec"]["names"]["plural"] = json!("")), "spec.names.plural: Required value"),
        (
            Box::new(|c| c["spec"]["scope"] = json!("Global")),
            "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
        ),
        (
            Box::new(|c| c["spec"]["versions"][1]["storage"] = json!(true)),
            "must have exactly one version marked as storage version",
        ),
        (
            Box::new(|c| c["spec"]["versions"][1]["schema"] = Value::Null),
            "spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required",
        ),
        (
            Box::new(|c| c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["x"] = json!({})),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].type: Required value: must not be empty for specified object fields",
        ),
        (
            Box::new(|c| c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["image"]["pattern"] = json!("^[a-z")),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[image].pattern: Invalid value: \"^[a-z\": must be a valid regular expression, but isn't: ",
        ),
    ];
    for (change, want) in cases {
        let mut crd = crontab_crd();
        change(&mut crd);
        let r = app.post(CRDS, crd).await;
        assert_eq!(r.status.as_u16(), 422, "{want}: {}", body_text(&r));
        let s = r.json();
        assert_eq!(s["reason"], "Invalid");
        assert_eq!(s["details"]["kind"], "CustomResourceDefinition");
        assert_eq!(s["details"]["group"], "apiextensions.k8s.io");
        let message = s["message"].as_str().unwrap();
        assert!(message.starts_with("CustomResourceDefinition.apiextensions.k8s.io \""), "{message}");
        assert!(message.contains(want), "want {want:?} in {message}");
    }
    assert_eq!(app.get(CRDS).await.json()["items"], json!([]), "nothing was stored");
}

#[tokio::test]
async fn custom_resources_through_every_verb() {
    let (app, _) = with_crontabs().await;
    let c = crontab(&app, "daily", json!({"cronSpec": "0 0 * * *", "image": "img:1"})).await;
    assert_eq!(c["apiVersion"], "stable.example.com/v1");
    assert_eq!(c["kind"], "CronTab");
    assert_eq!(c["metadata"]["namespace"], "default");
    assert_eq!(c["metadata"]["generation"], 1);
    assert_eq!(c["spec"]["replicas"], 1, "schema default");
    assert_eq!(c["spec"]["mode"], "Slow", "schema default");
    assert!(c["metadata"]["uid"].is_string());
    assert_eq!(c["metadata"]["managedFields"][0]["apiVersion"], "stable.example.com/v1");

    let got = app.get(&format!("{CT}/daily")).await.json();
    assert_eq!(got, c);
    let list = app.get(CT).await.json();
    assert_eq!(
        (list["kind"].as_str(), list["apiVersion"].as_str()),
        (Some("CronTabList"), Some("stable.example.com/v1"))
    );
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let all = app.get("/apis/stable.example.com/v1/crontabs").await.json();
    assert_eq!(all["items"][0]["metadata"]["name"], "daily");

    // PUT: a spec change bumps the generation.
    let mut put = got.clone();
    put["spec"]["image"] = json!("img:2");
    let r = app.put(&format!("{CT}/daily"), put).await;
    assert_eq!(r.status, StatusCode::OK, "{}", body_text(&r));
    let updated = r.json();
    assert_eq!(
        (updated["spec"]["image"].as_str(), updated["metadata"]["generation"].as_i64()),
        (Some("img:2"), Some(2))
    );

    // Merge and JSON patches; a strategic merge patch is not for custom resources.
    let r = patch(&app, &format!("{CT}/daily"), "application/merge-patch+json", r#"{"spec":{"replicas":3}}"#).await;
    assert_eq!(r.status, StatusCode::OK, "{}", body_text(&r));
    assert_eq!(r.json()["spec"]["replicas"], 3);
    let r = patch(
        &app,
        &format!("{CT}/daily"),
        "application/json-patch+json",
        r#"[{"op":"replace","path":"/spec/mode","value":"Fast"}]"#,
    )
    .await;
    assert_eq!(r.json()["spec"]["mode"], "Fast");
    let r = patch(&app, &format!("{CT}/daily"), "application/strategic-merge-patch+json", r#"{"spec":{"replicas":4}}"#)
        .await;
    r.status_of(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    );

    // Server-side apply with the CRD's schema: create, then a second manager conflicts.
    let cfg = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: applied\nspec:\n  cronSpec: \"*/5 * * * *\"\n  image: a:1\n";
    let r = patch(&app, &format!("{CT}/applied?fieldManager=alice"), "application/apply-patch+yaml", cfg).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", body_text(&r));
    let applied = r.json();
    assert_eq!(applied["spec"]["replicas"], 1, "defaults apply to applied objects too");
    let managers: Vec<&str> = applied["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, ["alice"]);
    let bob = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: applied\nspec:\n  cronSpec: \"*/5 * * * *\"\n  image: b:1\n";
    let r = patch(&app, &format!("{CT}/applied?fieldManager=bob"), "application/apply-patch+yaml", bob).await;
    assert_eq!(r.status.as_u16(), 409, "{}", body_text(&r));
    assert_eq!(r.json()["details"]["causes"][0]["field"], ".spec.image");
    let r =
        patch(&app, &format!("{CT}/applied?fieldManager=bob&force=true"), "application/apply-patch+yaml", bob).await;
    assert_eq!(r.json()["spec"]["image"], "b:1");

    // Delete one, then the collection.
    let r = app.delete(&format!("{CT}/daily")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", body_text(&r));
    app.get(&format!("{CT}/daily")).await.status_of(404, "NotFound", "crontabs.stable.example.com \"daily\" not found");
    crontab(&app, "other", json!({"cronSpec": "1 1 * * *"})).await;
    let r = app.delete(CT).await;
    assert_eq!(r.status, StatusCode::OK, "{}", body_text(&r));
    let gone = r.json();
    assert_eq!(gone["kind"], "CronTabList");
    assert_eq!(gone["items"].as_array().unwrap().len(), 2);
    assert_eq!(gone["items"][0]["apiVersion"], "stable.example.com/v1");
    assert_eq!(app.get(CT).await.json()["items"], json!([]));
}

#[tokio::test]
async fn the_schema_validates_with_kubes_field_paths() {
    let (app, _) = with_crontabs().await;
    let r = app
        .post(
            CT,
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "bad"},
                   "spec": {"cronSpec": "often", "image": "a-very-long-image-name:1", "replicas": "two", "mode": "Medium"}}),
        )
        .await;
    let s = r.status_of(
        422,
        "Invalid",
        "CronTab.stable.example.com \"bad\" is invalid: [\
         spec.cronSpec: Invalid value: \"often\": spec.cronSpec in body should match '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$', \
         spec.image: Too long: may not be more than 20 bytes, \
         spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\", \
         spec.mode: Unsupported value: \"Medium\": supported values: \"Fast\", \"Slow\"]",
    );
    let causes: Vec<(&str, &str)> = s["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["reason"].as_str().unwrap(), c["field"].as_str().unwrap()))
        .collect();
    assert_eq!(
        causes,
        [
            ("FieldValueInvalid", "spec.cronSpec"),
            ("FieldValueTooLong", "spec.image"),
            ("FieldValueTypeInvalid", "spec.replicas"),
            ("FieldValueNotSupported", "spec.mode")
        ]
    );
    assert_eq!(
        (s["details"]["group"].as_str(), s["details"]["kind"].as_str()),
        (Some("stable.example.com"), Some("CronTab"))
    );

    let r = app
        .post(
            CT,
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"}, "spec": {}}),
        )
        .await;
    r.status_of(422, "Invalid", "CronTab.stable.example.com \"x\" is invalid: spec.cronSpec: Required value");
    let r = app
        .post(
            CT,
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "x"},
                         "spec": {"cronSpec": "* * * * *", "replicas": 11}}),
        )
        .await;
    r.status_of(
        422,
        "Invalid",
        "CronTab.stable.example.com \"x\" is invalid: spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
    );

    // Updates and patches are validated too.
    crontab(&app, "ok", json!({"cronSpec": "* * * * *"})).await;
    let r = patch(&app, &format!("{CT}/ok"), "application/merge-patch+json", r#"{"spec":{"replicas":-1}}"#).await;
    assert_eq!(r.status.as_u16(), 422, "{}", body_text(&r));
    assert!(r.json()["message"].as_str().unwrap().contains("should be greater than or equal to 0"));
    // A wrong apiVersion or kind for the URL is a 400, as for built-in kinds.
    let r = app
        .post(CT, json!({"apiVersion": "stable.example.com/v2", "kind": "CronTab", "metadata": {"name": "y"}}))
        .await;
    assert_eq!(r.status.as_u16(), 400, "{}", body_text(&r));
}

#[tokio::test]
async fn unknown_fields_are_pruned_refused_or_warned_about() {
    let (app, _) = with_crontabs().await;
    let obj = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "p", "bogus": 1},
        "spec": {"cronSpec": "* * * * *", "extra": true, "config": {"free": {"form": 1}}}, "top": 2});
    let r = app.post(&format!("{CT}?fieldValidation=Strict"), obj.clone()).await;
    r.status_of(
        400,
        "BadRequest",
        "CronTab in version \"v1\" cannot be handled as a CronTab: strict decoding error: \
         unknown field \"metadata.bogus\", unknown field \"spec.extra\", unknown field \"top\"",
    );
    let r = app.post(CT, obj.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", body_text(&r));
    let warnings: Vec<&str> = r.headers.get_all("warning").iter().map(|v| v.to_str().unwrap()).collect();
    assert_eq!(
        warnings,
        [
            "299 - \"unknown field \\\"metadata.bogus\\\"\"",
            "299 - \"unknown field \\\"spec.extra\\\"\"",
            "299 - \"unknown field \\\"top\\\"\""
        ]
    );
    let stored = r.json();
    assert!(
        stored.get("top").is_none()
            && stored["spec"].get("extra").is_none()
            && stored["metadata"].get("bogus").is_none()
    );
    assert_eq!(
        stored["spec"]["config"],
        json!({"free": {"form": 1}}),
        "x-kubernetes-preserve-unknown-fields keeps it all"
    );
    let mut again = obj;
    again["metadata"]["name"] = json!("q");
    let r = app.post(&format!("{CT}?fieldValidation=Ignore"), again).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert!(r.headers.get("warning").is_none());
}

#[tokio::test]
async fn status_and_scale_subresources() {
    let (app, _) = with_crontabs().await;
    let c = crontab(&app, "s", json!({"cronSpec": "* * * * *", "replicas": 2})).await;
    let uri = format!("{CT}/s");

    // A write to the object leaves status alone; one to /status changes only status.
    let mut put = c.clone();
    put["status"] = json!({"phase": "Ignored"});
    let r = app.put(&uri, put).await.json();
    assert!(r.get("status").is_none(), "{r}");
    let mut put = r.clone();
    put["status"] = json!({"replicas": 2, "selector": "app=s", "phase": "Running"});
    put["spec"]["replicas"] = json!(9);
    let r = app.put(&format!("{uri}/status"), put).await;
    assert_eq!(r.status, StatusCode::OK, "{}", body_text(&r));
    let r = r.json();
    assert_eq!((r["status"]["phase"].as_str(), r["spec"]["replicas"].as_i64()), (Some("Running"), Some(2)));
    assert_eq!(r["metadata"]["generation"], 1, "a status write is not a spec change");
    let r =
        patch(&app, &format!("{uri}/status"), "application/merge-patch+json", r#"{"status":{"phase":"Done"}}"#).await;
    assert_eq!(r.json()["status"]["phase"], "Done");
    assert_eq!(app.get(&format!("{uri}/status")).await.json()["status"]["phase"], "Done");

    // The Scale reads the CRD's paths.
    let scale = app.get(&format!("{uri}/scale")).await.json();
    assert_eq!((scale["kind"].as_str(), scale["apiVersion"].as_str()), (Some("Scale"), Some("autoscaling/v1")));
    assert_eq!(scale["spec"], json!({"replicas": 2}));
    assert_eq!(scale["status"], json!({"replicas": 2, "selector": "app=s"}));
    assert_eq!(scale["metadata"]["name"], "s");
    let r = patch(&app, &format!("{uri}/scale"), "application/merge-patch+json", r#"{"spec":{"replicas":5}}"#).await;
    assert_eq!(r.status, StatusCode::OK, "{}", body_text(&r));
    assert_eq!(r.json()["spec"]["replicas"], 5);
    let now = app.get(&uri).await.json();
    assert_eq!((now["spec"]["replicas"].as_i64(), now["metadata"]["generation"].as_i64()), (Some(5), Some(2)));
    let mut scale = app.get(&format!("{uri}/scale")).await.json();
    scale["spec"]["replicas"] = json!(3);
    let r = app.put(&format!("{uri}/scale"), scale).await;
    assert_eq!(r.json()["spec"]["replicas"], 3);
    // The schema still holds: 11 is above the maximum.
    let r = patch(&app, &format!("{uri}/scale"), "application/merge-patch+json", r#"{"spec":{"replicas":11}}"#).await;
    assert_eq!(r.status.as_u16(), 422, "{}", body_text(&r));
    // No scale subresource in v1beta1.
    assert_eq!(app.get(&format!("{CT_BETA}/s/scale")).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn objects_are_stored_at_the_storage_version_and_served_at_any() {
    let (app, _) = with_crontabs().await;
    let r = app
        .post(
            CT_BETA,
            json!({"apiVersion": "stable.example.com/v1beta1", "kind": "CronTab", "metadata": {"name": "b"},
                              "spec": {"cronSpec": "* * * * *", "anything": "goes"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", body_text(&r));
    let b = r.json();
    assert_eq!(b["apiVersion"], "stable.example.com/v1beta1");
    assert_eq!(b["spec"]["anything"], "goes", "v1beta1 preserves unknown fields");
    let key = "/registry/stable.example.com/crontabs/default/b";
    let stored: Value = serde_json::from_slice(&app.state.cluster.get(key).unwrap().unwrap()).unwrap();
    assert_eq!(stored["apiVersion"], "stable.example.com/v1", "stored at the storage version");

    let v1 = app.get(&format!("{CT}/b")).await.json();
    assert_eq!(v1["apiVersion"], "stable.example.com/v1");
    assert_eq!(app.get(&format!("{CT_BETA}/b")).await.json()["apiVersion"], "stable.example.com/v1beta1");
    let list = app.get(CT_BETA).await.json();
    assert_eq!(list["apiVersion"], "stable.example.com/v1beta1");
    assert_eq!(list["items"][0]["apiVersion"], "stable.example.com/v1beta1");

    // A watch through v1beta1 sees its events at v1beta1, created through v1.
    let mut w = app.watch(&format!("{CT_BETA}?watch=true&resourceVersion={}", rv(&b))).await;
    crontab(&app, "c", json!({"cronSpec": "* * * * *"})).await;
    let e = w.next().await;
    assert_eq!(
        (e["type"].as_str(), e["object"]["apiVersion"].as_str()),
        (Some("ADDED"), Some("stable.example.com/v1beta1"))
    );
    assert_eq!(e["object"]["metadata"]["name"], "c");

    // An update through v1beta1 keeps the storage version.
    let r = patch(&app, &format!("{CT_BETA}/c"), "application/merge-patch+json", r#"{"spec":{"note":"x"}}"#).await;
    assert_eq!(r.json()["apiVersion"], "stable.example.com/v1beta1");
    let stored: Value = serde_json::from_slice(
        &app.state.cluster.get("/registry/stable.example.com/crontabs/default/c").unwrap().unwrap(),
    )
    .unwrap();
    assert_eq!(
        (stored["apiVersion"].as_str(), stored["spec"]["note"].as_str()),
        (Some("stable.example.com/v1"), Some("x"))
    );
}

#[tokio::test]
async fn printer_columns_make_the_table() {
    let (app, _) = with_crontabs().await;
    crontab(&app, "t", json!({"cronSpec": "*/10 * * * *", "replicas": 4})).await;
    let t = app.get_with(CT, &[("accept", TABLE)]).await.json();
    let columns: Vec<(&str, &str)> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["type"].as_str().unwrap()))
        .collect();
    assert_eq!(columns, [("Name", "string"), ("Spec", "string"), ("Replicas", "integer"), ("Age", "date")]);
    assert_eq!(t["rows"][0]["cells"], json!(["t", "*/10 * * * *", 4, "0s"]));
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    // A version without printer columns gets Name and Age.
    let t = app.get_with(&format!("{CT_BETA}/t"), &[("accept", TABLE)]).await.json();
    let columns: Vec<&str> =
        t["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(columns, ["Name", "Age"]);
    assert_eq!(t["rows"][0]["cells"], json!(["t", "0s"]));
}

#[tokio::test]
async fn cluster_scoped_custom_resources() {
    let app = app().await;
    let mut crd = crontab_crd();
    crd["metadata"]["name"] = json!("clustertabs.stable.example.com");
    crd["spec"]["names"] = json!({"plural": "clustertabs", "kind": "ClusterTab"});
    crd["spec"]["scope"] = json!("Cluster");
    created(&app, CRDS, crd).await;
    let base = "/apis/stable.example.com/v1/clustertabs";
    let c = created(&app, base, json!({"apiVersion": "stable.example.com/v1", "kind": "ClusterTab",
                                       "metadata": {"name": "x", "namespace": "ignored"}, "spec": {"cronSpec": "* * * * *"}}))
        .await;
    assert!(c["metadata"].get("namespace").is_none());
    assert_eq!(app.get(&format!("{base}/x")).await.json()["metadata"]["name"], "x");
    assert_eq!(
        app.get("/apis/stable.example.com/v1/namespaces/default/clustertabs").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn crd_updates_change_what_is_served() {
    let (app, crd) = with_crontabs().await;
    let uri = format!("{CRDS}/crontabs.stable.example.com");
    crontab(&app, "u", json!({"cronSpec": "* * * * *"})).await;

    // v1beta1 no longer served: 404 there, still served as v1.
    let mut c = crd.clone();
    c["spec"]["versions"][1]["served"] = json!(false);
    let r = app.put(&uri, c).await;
    assert_eq!(r.status, StatusCode::OK, "{}", body_text(&r));
    let updated = r.json();
    assert_eq!(updated["metadata"]["generation"], 2);
    assert_eq!(updated["status"]["conditions"][1]["type"], "Established");
    app.get(&format!("{CT_BETA}/u")).await.status_of(
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
    assert_eq!(app.get(&format!("{CT}/u")).await.status, StatusCode::OK);
    assert_eq!(app.get("/apis/stable.example.com").await.json()["versions"].as_array().unwrap().len(), 1);

    // A new storage version: stored versions keep both; v1 may not go while stored.
    let mut c = updated.clone();
    c["spec"]["versions"][0]["storage"] = json!(false);
    c["spec"]["versions"][1]["storage"] = json!(true);
    c["spec"]["versions"][1]["served"] = json!(true);
    let r = app.put(&uri, c).await;
    assert_eq!(r.status, StatusCode::OK, "{}", body_text(&r));
    let updated = r.json();
    assert_eq!(updated["status"]["storedVersions"], json!(["v1", "v1beta1"]));
    crontab(&app, "w", json!({"cronSpec": "* * * * *"})).await;
    let stored: Value = serde_json::from_slice(
        &app.state.cluster.get("/registry/stable.example.com/crontabs/default/w").unwrap().unwrap(),
    )
    .unwrap();
    assert_eq!(stored["apiVersion"], "stable.example.com/v1beta1", "new objects at the new storage version");
    let mut c = updated.clone();
    c["spec"]["versions"].as_array_mut().unwrap().remove(0);
    let r = app.put(&uri, c).await;
    assert_eq!(r.status.as_u16(), 422, "{}", body_text(&r));
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .contains("status.storedVersions[0]: Invalid value: \"v1\": must appear in spec.versions"));

    // The scope is immutable.
    let r = patch(&app, &uri, "application/merge-patch+json", r#"{"spec":{"scope":"Cluster"}}"#).await;
    assert_eq!(r.status.as_u16(), 422, "{}", body_text(&r));
    assert!(r.json()["message"]
        .as_str()
        .unwrap()
        .contains("spec.scope: Invalid value: \"Cluster\": field is immutable"));
}

#[tokio::test]
async fn deleting_a_crd_removes_its_objects_then_its_resource() {
    let (app, _) = with_crontabs().await;
    app.namespace("other").await;
    crontab(&app, "a", json!({"cronSpec": "* * * * *"})).await;
    created(&app, "/apis/stable.example.com/v1/namespaces/other/crontabs",
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "b"}, "spec": {"cronSpec": "* * * * *"}}))
        .await;
    let uri = format!("{CRDS}/crontabs.stable.example.com");
    let r = app.delete(&uri).await;
    assert_eq!(r.status, StatusCode::OK, "{}", body_text(&r));
    let marked = r.json();
    assert!(marked["metadata"]["deletionTimestamp"].is_string(), "{marked}");
    assert_eq!(marked["metadata"]["finalizers"], json!(["customresourcecleanup.apiextensions.k8s.io"]));

    // While it is being deleted: its objects can be read, no new one created.
    assert_eq!(app.get(&format!("{CT}/a")).await.status, StatusCode::OK);
    let r = app
        .post(
            CT,
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "c"},
                               "spec": {"cronSpec": "* * * * *"}}),
        )
        .await;
    r.status_of(405, "MethodNotAllowed", "create not allowed while custom resource definition is terminating");

    // The cleanup (the leader's controller, one pass at a time): Terminating, objects
    // deleted, then the finalizer dropped and the CRD gone.
    let clock = common::FixedClock;
    let mut passes = 0;
    while app
        .state
        .cluster
        .get("/registry/apiextensions.k8s.io/customresourcedefinitions/crontabs.stable.example.com")
        .unwrap()
        .is_some()
    {
        passes += 1;
        assert!(passes < 10, "the CRD is never released");
        let found =
            kuorum_rest::finalize_deleted_crds(&app.state.cluster, &clock, Duration::from_secs(5)).await.unwrap();
        assert_eq!(found, 1);
        if passes == 1 {
            let crd = app.get(&uri).await.json();
            let terminating = crd["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Terminating")
                .unwrap()
                .clone();
            assert_eq!(
                (terminating["status"].as_str(), terminating["reason"].as_str()),
                (Some("True"), Some("InstanceDeletionInProgress"))
            );
        }
    }
    assert_eq!(passes, 2, "one pass deletes the objects, the next releases the CRD");
    assert_eq!(app.state.cluster.scan("/registry/stable.example.com/", None, usize::MAX).unwrap().len(), 0);
    app.get(&format!("{CT}/a")).await.status_of(404, "NotFound", "the server could not find the requested resource");
    app.get(&uri).await.status_of(
        404,
        "NotFound",
        "customresourcedefinitions.apiextensions.k8s.io \"crontabs.stable.example.com\" not found",
    );
    assert_eq!(app.get("/apis/stable.example.com").await.status, StatusCode::NOT_FOUND);
    let index = app.get("/openapi/v3").await.json();
    assert!(index["paths"].get("apis/stable.example.com/v1").is_none());
    assert_eq!(
        kuorum_rest::finalize_deleted_crds(&app.state.cluster, &clock, Duration::from_secs(5)).await.unwrap(),
        0
    );
}
