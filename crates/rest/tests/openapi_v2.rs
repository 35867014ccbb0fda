//! `GET /openapi/v2` through the router over a real single-node cluster: the Swagger 2.0
//! document in JSON and in gnostic's protobuf (as client-go's `OpenAPISchema()` asks for
//! it), a CRD's kind in it once the CRD is created, ETag and Last-Modified revalidation,
//! and 406 for an `Accept` it cannot satisfy.

mod common;

use axum::http::StatusCode;
use common::{app, App, Reply};
use kuorum_schema::openapi_v2::proto::{self, Message};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
/// What client-go's discovery client sends.
const CLIENT_GO_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// What kube-apiserver labels the protobuf answer with.
const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// A CronTab CRD: v1 with a schema (a nullable field, an int-or-string, an embedded
/// resource), v1beta1 keeping every field.
fn crontab_crd() -> Value {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["cronSpec", "note"], "properties": {
            "cronSpec": {"type": "string", "description": "the schedule, in cron format", "default": "* * * * *"},
            "note": {"type": "string", "nullable": true},
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                         "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema},
                 "subresources": {"status": {}}},
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    })
}

async fn create_crd(app: &App) {
    let r = app.post(CRDS, crontab_crd()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&r.bytes));
}

fn header<'a>(r: &'a Reply, name: &str) -> &'a str {
    r.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn decode(r: &Reply) -> proto::Document {
    proto::Document::decode(r.bytes.as_slice()).expect("a gnostic openapi_v2.Document")
}

fn path_names(doc: &proto::Document) -> Vec<String> {
    doc.paths.as_ref().unwrap().path.iter().map(|p| p.name.clone()).collect()
}

#[tokio::test]
async fn json_has_the_built_in_kinds_and_a_crd_once_it_is_created() {
    let app = app().await;
    let r = app.get("/openapi/v2").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(header(&r, "vary"), "Accept");
    assert_eq!(header(&r, "last-modified"), "Sat, 21 Nov 2026 23:45:28 GMT", "built at the node's clock");
    let before = header(&r, "etag").to_string();
    assert!(before.starts_with('"') && before.ends_with('"') && before.len() > 2, "{before}");
    let d = r.json();
    assert_eq!(d["swagger"], "2.0");
    assert_eq!(d["info"]["version"], "v1.37.0");
    assert_eq!(d["securityDefinitions"]["BearerToken"]["type"], "apiKey");
    let deployment = &d["definitions"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(deployment["x-kubernetes-group-version-kind"][0]["kind"], "Deployment");
    assert_eq!(deployment["properties"]["spec"]["$ref"], "#/definitions/io.k8s.api.apps.v1.DeploymentSpec");
    let patch = &d["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
    assert!(patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "fieldValidation" && p["in"] == "query"));
    assert!(d["definitions"].get("com.example.stable.v1.CronTab").is_none());

    app.namespace("default").await;
    create_crd(&app).await;
    let r = app.get_with("/openapi/v2", &[("accept", "application/json")]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_ne!(header(&r, "etag"), before, "a new document, a new ETag");
    let d = r.json();
    let ct = &d["definitions"]["com.example.stable.v1.CronTab"];
    assert_eq!(
        ct["x-kubernetes-group-version-kind"],
        json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
    );
    let spec = &ct["properties"]["spec"];
    assert_eq!(
        spec["properties"]["cronSpec"],
        json!({"description": "the schedule, in cron format", "type": "string"})
    );
    assert_eq!(spec["properties"]["note"], json!({}), "nullable: no type in v2");
    assert_eq!(spec["required"], json!(["cronSpec"]), "nor required");
    assert_eq!(spec["properties"]["port"], json!({"x-kubernetes-int-or-string": true}));
    let template = &spec["properties"]["template"];
    assert_eq!(
        template["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert_eq!(template["properties"]["spec"], json!({"x-kubernetes-preserve-unknown-fields": true}));
    assert_eq!(ct["properties"]["metadata"]["$ref"], "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
    assert_eq!(
        d["definitions"]["com.example.stable.v1beta1.CronTab"],
        json!({"type": "object", "x-kubernetes-group-version-kind":
            [{"group": "stable.example.com", "kind": "CronTab", "version": "v1beta1"}]})
    );
    let list = &d["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"]["get"];
    assert_eq!(list["operationId"], "listStableExampleComV1NamespacedCronTab");
    assert_eq!(list["responses"]["200"]["schema"]["$ref"], "#/definitions/com.example.stable.v1.CronTabList");
    let status = &d["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status"];
    assert_eq!(status["put"]["parameters"][0]["schema"]["$ref"], "#/definitions/com.example.stable.v1.CronTab");
    assert!(d["paths"].get("/apis/stable.example.com/v1beta1/crontabs").is_some());
    assert!(d["definitions"].get("io.k8s.api.apps.v1.Deployment").is_some(), "the built-in ones stay");
}

#[tokio::test]
async fn protobuf_decodes_to_the_same_document() {
    let app = app().await;
    app.namespace("default").await;
    create_crd(&app).await;
    let json = app.get("/openapi/v2").await;
    let d = json.json();
    for accept in [CLIENT_GO_PROTOBUF, PROTOBUF] {
        let r = app.get_with("/openapi/v2", &[("accept", accept)]).await;
        assert_eq!(r.status, StatusCode::OK, "{accept}");
        assert_eq!(r.content_type(), PROTOBUF);
        assert_eq!(header(&r, "etag"), header(&json, "etag"), "one ETag for both forms");
        assert_eq!(header(&r, "vary"), "Accept");
        let doc = decode(&r);
        assert_eq!(doc.swagger, "2.0");
        let want: Vec<String> = d["paths"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(path_names(&doc), want);
        assert!(want.iter().any(|p| p == "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"));
        let defs = &doc.definitions.as_ref().unwrap().additional_properties;
        assert_eq!(defs.len(), d["definitions"].as_object().unwrap().len());
        let ct = defs.iter().find(|n| n.name == "com.example.stable.v1.CronTab").expect("the CRD's kind");
        let gvk =
            ct.value.as_ref().unwrap().vendor_extension.iter().find(|e| e.name == "x-kubernetes-group-version-kind");
        let yaml = &gvk.unwrap().value.as_ref().unwrap().yaml;
        assert_eq!(
            serde_json::from_str::<Value>(yaml).unwrap(),
            json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
        );
        assert!(defs.iter().any(|n| n.name == "io.k8s.api.apps.v1.Deployment"));
    }
}

#[tokio::test]
async fn etags_and_dates_revalidate() {
    let app = app().await;
    let r = app.get("/openapi/v2").await;
    let etag = header(&r, "etag").to_string();
    let modified = header(&r, "last-modified").to_string();
    for headers in [
        vec![("if-none-match", etag.as_str())],
        vec![("if-none-match", etag.as_str()), ("accept", CLIENT_GO_PROTOBUF)],
        vec![("if-modified-since", modified.as_str())],
    ] {
        let r = app.get_with("/openapi/v2", &headers).await;
        assert_eq!(r.status, StatusCode::NOT_MODIFIED, "{headers:?}");
        assert!(r.bytes.is_empty());
        assert_eq!(header(&r, "etag"), etag);
        assert_eq!(header(&r, "vary"), "Accept");
        assert!(r.headers.get("last-modified").is_none(), "as Go's ServeContent: the ETag is enough");
    }
    // An older date, another ETag (which wins over any date): the document.
    for headers in [
        vec![("if-modified-since", "Fri, 20 Nov 2026 23:45:28 GMT")],
        vec![("if-none-match", "\"0123\""), ("if-modified-since", modified.as_str())],
    ] {
        let r = app.get_with("/openapi/v2", &headers).await;
        assert_eq!(r.status, StatusCode::OK, "{headers:?}");
        assert!(!r.bytes.is_empty());
    }
    // The CRD changes the document: the ETag held no longer matches.
    app.namespace("default").await;
    create_crd(&app).await;
    let r = app.get_with("/openapi/v2", &[("if-none-match", &etag), ("accept", CLIENT_GO_PROTOBUF)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(path_names(&decode(&r)).iter().any(|p| p.starts_with("/apis/stable.example.com/v1/")));
    let fresh = header(&r, "etag").to_string();
    let r = app.get_with("/openapi/v2", &[("if-none-match", &fresh)]).await;
    assert_eq!(r.status, StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn an_accept_it_cannot_satisfy_is_406() {
    let app = app().await;
    let r = app.get_with("/openapi/v2", &[("accept", "application/xml")]).await;
    let s = r.status_of(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
    );
    assert_eq!(s["kind"], "Status");
    assert_eq!(header(&r, "vary"), "Accept");
    // The OpenAPI v3 protobuf type is not v2's.
    let r =
        app.get_with("/openapi/v2", &[("accept", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf")]).await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    // A wildcard after it is JSON.
    let r = app.get_with("/openapi/v2", &[("accept", "application/xml, */*;q=0.1")]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(r.json()["swagger"], "2.0");
}
