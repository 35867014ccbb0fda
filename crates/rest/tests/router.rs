//! The REST router end to end over a real single-node cluster: every route, every verb,
//! and every error code with its exact reason and message.

mod common;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::{app, rv, NOW};
use kuorum_api::discovery::AGGREGATED_CONTENT_TYPE;
use serde_json::{json, Value};

const KUBECTL_DISCOVERY_ACCEPT: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

// ---- Discovery and fixed endpoints ----------------------------------------------------

#[tokio::test]
async fn version_and_health() {
    let app = app().await;
    for path in ["/version", "/version/"] {
        let r = app.get(path).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.content_type(), "application/json");
        let v = r.json();
        assert_eq!((v["major"].as_str(), v["minor"].as_str()), (Some("1"), Some("37")));
        assert_eq!(v["gitVersion"], "v1.37.0-kuorum");
        assert_eq!(v["platform"], "linux/amd64");
    }
    for path in ["/healthz", "/livez"] {
        let r = app.get(path).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.bytes, b"ok");
    }
    // Not ready until the system namespaces are applied here.
    let r = app.get("/readyz").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(String::from_utf8_lossy(&r.bytes).contains("system-namespaces"));
    for ns in ["default", "kube-system", "kube-public"] {
        app.namespace(ns).await;
    }
    let r = app.get("/readyz").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.bytes, b"ok");
    // Nor while a start hook runs (the node's bootstrap roles and bindings).
    app.state.start_hooks.started("rbac/bootstrap-roles");
    let r = app.get("/readyz").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(String::from_utf8_lossy(&r.bytes).contains("[-]poststarthook/rbac/bootstrap-roles failed"));
    app.state.start_hooks.finished("rbac/bootstrap-roles");
    assert_eq!(app.get("/readyz").await.status, StatusCode::OK);
    let r = app.request(Method::POST, "/version", &[], Body::empty()).await;
    r.status_of(405, "MethodNotAllowed", "the server does not allow this method on the requested resource");
    let r = app.get("/nothing/here").await;
    r.status_of(404, "NotFound", "the server could not find the requested resource");
}

#[tokio::test]
async fn aggregated_discovery_has_the_exact_content_type() {
    let app = app().await;
    let r = app.get_with("/api?timeout=32s", &[("accept", KUBECTL_DISCOVERY_ACCEPT)]).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.content_type(), AGGREGATED_CONTENT_TYPE);
    assert_eq!(r.headers.get("vary").unwrap(), "Accept");
    let v = r.json();
    assert_eq!(v["kind"], "APIGroupDiscoveryList");
    assert_eq!(v["apiVersion"], "apidiscovery.k8s.io/v2");
    assert_eq!(v["items"].as_array().unwrap().len(), 1);
    assert_eq!(v["items"][0]["metadata"], json!({}));
    let resources = v["items"][0]["versions"][0]["resources"].as_array().unwrap();
    let cm = resources.iter().find(|r| r["resource"] == "configmaps").unwrap();
    assert_eq!(cm["shortNames"], json!(["cm"]));

    let r = app.get_with("/apis?timeout=32s", &[("accept", KUBECTL_DISCOVERY_ACCEPT)]).await;
    assert_eq!(r.content_type(), AGGREGATED_CONTENT_TYPE);
    let v = r.json();
    let names: Vec<_> = v["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].clone()).collect();
    let want: Vec<&str> = kuorum_api::registry::groups().into_iter().map(|(g, _)| g).collect();
    assert_eq!(names, want, "kube-apiserver's group order");
    assert_eq!(names[0], "apiregistration.k8s.io");
}

#[tokio::test]
async fn legacy_discovery() {
    let app = app().await;
    let r = app.get_with("/api", &[("accept", "application/json, */*"), ("host", "10.1.2.3:6443")]).await;
    assert_eq!(r.content_type(), "application/json");
    assert_eq!(
        r.json(),
        json!({"kind":"APIVersions","versions":["v1"],
               "serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"10.1.2.3:6443"}]})
    );
    let r = app.get("/apis").await;
    assert_eq!(r.json()["kind"], "APIGroupList");
    let groups = r.json()["groups"].as_array().unwrap().clone();
    let apps = groups.iter().find(|g| g["name"] == "apps").unwrap();
    assert_eq!(apps["preferredVersion"], json!({"groupVersion":"apps/v1","version":"v1"}));
    let r = app.get("/api/v1").await;
    let v = r.json();
    assert_eq!((v["kind"].as_str(), v["groupVersion"].as_str()), (Some("APIResourceList"), Some("v1")));
    assert!(v["resources"].as_array().unwrap().iter().any(|r| r["name"] == "namespaces/status"));
    let r = app.get("/apis/apps/v1").await;
    let v = r.json();
    assert_eq!(v["groupVersion"], "apps/v1");
    assert!(v["resources"].as_array().unwrap().iter().any(|r| r["name"] == "deployments/scale"));
    assert_eq!(app.get("/apis/coordination.k8s.io/v1").await.json()["resources"][0]["name"], "leases");
    assert_eq!(app.get("/apis/apps").await.json()["kind"], "APIGroup");
    app.get("/apis/batch/v2").await.status_of(404, "NotFound", "the server could not find the requested resource");
    app.get("/apis/example.com").await.status_of(404, "NotFound", "the server could not find the requested resource");
    app.get_with("/api/v1", &[("accept", "application/vnd.kubernetes.protobuf")]).await.status_of(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json",
    );
}

// ---- Namespaces -----------------------------------------------------------------------

#[tokio::test]
async fn namespaces_are_created_active_and_protected() {
    let app = app().await;
    let ns = app.namespace("default").await;
    assert_eq!(ns["kind"], "Namespace");
    assert_eq!(ns["apiVersion"], "v1");
    assert_eq!(ns["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(ns["status"], json!({"phase": "Active"}));
    assert_eq!(ns["metadata"]["labels"], json!({"kubernetes.io/metadata.name": "default"}));
    assert_eq!(ns["metadata"]["creationTimestamp"], NOW);
    assert_eq!(ns["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(ns["metadata"].get("namespace").is_none());
    assert!(ns["metadata"].get("generation").is_none());
    assert!(rv(&ns) > 0);

    let got = app.get("/api/v1/namespaces/default").await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.json(), ns);

    app.namespace("kube-system").await;
    let list = app.get("/api/v1/namespaces").await.json();
    assert_eq!(list["kind"], "NamespaceList");
    let names: Vec<_> = list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].clone()).collect();
    assert_eq!(names, [json!("default"), json!("kube-system")]);

    for name in ["default", "kube-system", "kube-public"] {
        app.delete(&format!("/api/v1/namespaces/{name}")).await.status_of(
            403,
            "Forbidden",
            &format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted"),
        );
    }

    app.post("/api/v1/namespaces", json!({"metadata": {"name": "a.b"}})).await.status_of(
        422,
        "Invalid",
        "Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": a lowercase RFC 1123 label must \
         consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric \
         character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    );
}

#[tokio::test]
async fn deleting_a_namespace_marks_it_terminating() {
    // The namespace's `kubernetes` finalizer holds it: it is marked Terminating and the
    // node's namespace controller (not running in this router test) empties and removes it.
    let app = app().await;
    app.namespace("team").await;
    app.configmap("team", "a").await;
    let r = app.delete("/api/v1/namespaces/team").await;
    assert_eq!(r.status, StatusCode::OK);
    let ns = r.json();
    assert_eq!(ns["metadata"]["name"], "team");
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(ns["metadata"]["deletionTimestamp"], NOW);
    let again = app.get("/api/v1/namespaces/team").await.json();
    assert_eq!(again["status"]["phase"], "Terminating", "deletion is recorded");
    assert_eq!(
        app.get("/api/v1/namespaces/team/configmaps/a").await.status,
        StatusCode::OK,
        "contents wait for the controller"
    );
}

#[tokio::test]
async fn creating_in_a_missing_or_terminating_namespace() {
    let app = app().await;
    let r = app.post("/api/v1/namespaces/nope/configmaps", json!({"metadata": {"name": "a"}})).await;
    let v = r.status_of(404, "NotFound", "namespaces \"nope\" not found");
    assert_eq!(v["details"], json!({"name": "nope", "kind": "namespaces"}));

    app.namespace("going").await;
    let r = app.delete("/api/v1/namespaces/going").await;
    assert_eq!(r.status, StatusCode::OK, "{}", String::from_utf8_lossy(&r.bytes));
    app.post("/api/v1/namespaces/going/configmaps", json!({"metadata": {"name": "a"}})).await.status_of(
        403,
        "Forbidden",
        "configmaps \"a\" is forbidden: unable to create new content in namespace going because it is being terminated",
    );
}

// ---- Create ---------------------------------------------------------------------------

#[tokio::test]
async fn create_fills_in_what_the_server_owns() {
    let app = app().await;
    app.namespace("default").await;
    let r = app
        .post(
            "/api/v1/namespaces/default/configmaps",
            json!({"metadata": {"name": "a", "resourceVersion": "999", "uid": "mine", "generation": 7},
                   "data": {"k": "v"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.content_type(), "application/json");
    let cm = r.json();
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["apiVersion"], "v1");
    assert_eq!(cm["metadata"]["namespace"], "default");
    assert_eq!(cm["metadata"]["creationTimestamp"], NOW);
    assert_ne!(cm["metadata"]["uid"], "mine");
    assert_ne!(cm["metadata"]["resourceVersion"], "999");
    assert!(cm["metadata"].get("generation").is_none());
    assert_eq!(cm["data"], json!({"k": "v"}));

    // Python sends no Content-Type at all; kube-rs sends a trailing "?".
    let body = Body::from(r#"{"metadata":{"name":"b"}}"#);
    let r = app.request(Method::POST, "/api/v1/namespaces/default/configmaps?", &[], body).await;
    assert_eq!(r.status, StatusCode::CREATED);

    // apiVersion and kind may be given, and must then match.
    let r = app
        .post(
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);

    // Deployments track generation and are named with their group in errors.
    let r = app
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let d = r.json();
    assert_eq!((d["apiVersion"].as_str(), d["kind"].as_str()), (Some("apps/v1"), Some("Deployment")));
    assert_eq!(d["metadata"]["generation"], 1);
    app.post("/apis/apps/v1/namespaces/default/deployments", json!({"metadata": {"name": "web"}})).await.status_of(
        409,
        "AlreadyExists",
        "deployments.apps \"web\" already exists",
    );

    // Cluster-scoped kinds drop a namespace in the body.
    let r = app.post("/api/v1/nodes", json!({"metadata": {"name": "n1", "namespace": "default"}})).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert!(r.json()["metadata"].get("namespace").is_none());
    assert_eq!(app.get("/api/v1/nodes/n1").await.json()["metadata"]["name"], "n1");

    // Leases in their own group.
    let r =
        app.post("/apis/coordination.k8s.io/v1/namespaces/default/leases", json!({"metadata": {"name": "l"}})).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.json()["apiVersion"], "coordination.k8s.io/v1");
}

#[tokio::test]
async fn generate_name_appends_a_suffix() {
    let app = app().await;
    app.namespace("default").await;
    let mut names = Vec::new();
    for _ in 0..3 {
        let r = app.post("/api/v1/namespaces/default/configmaps", json!({"metadata": {"generateName": "web-"}})).await;
        assert_eq!(r.status, StatusCode::CREATED);
        let v = r.json();
        let name = v["metadata"]["name"].as_str().unwrap().to_string();
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        assert_eq!(v["metadata"]["generateName"], "web-");
        names.push(name);
    }
    names.dedup();
    assert_eq!(names.len(), 3);
    // An update keeps generateName like any other field.
    let url = format!("/api/v1/namespaces/default/configmaps/{}", names[0]);
    let mut cm = app.get(&url).await.json();
    cm["data"] = json!({"x": "y"});
    assert_eq!(app.put(&url, cm).await.json()["metadata"]["generateName"], "web-");
    let long = "p".repeat(80);
    let r = app.post("/api/v1/namespaces/default/configmaps", json!({"metadata": {"generateName": long}})).await;
    assert_eq!(r.json()["metadata"]["name"].as_str().unwrap().len(), 63);
}

#[tokio::test]
async fn create_rejects_bad_requests() {
    let app = app().await;
    app.namespace("default").await;
    let cms = "/api/v1/namespaces/default/configmaps";

    let v = app.post(cms, json!({"metadata": {"name": "Bad_Name"}})).await.status_of(
        422,
        "Invalid",
        "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 \
         subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an \
         alphanumeric character (e.g. 'example.com', regex used for validation is \
         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    );
    assert_eq!(v["details"]["name"], "Bad_Name");
    assert_eq!(v["details"]["kind"], "ConfigMap");
    assert_eq!(v["details"]["causes"][0]["reason"], "FieldValueInvalid");
    assert_eq!(v["details"]["causes"][0]["field"], "metadata.name");

    let v = app.post(cms, json!({"data": {}})).await.status_of(
        422,
        "Invalid",
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required",
    );
    assert_eq!(v["details"]["causes"][0]["reason"], "FieldValueRequired");

    app.post("/api/v1/namespaces/default/services", json!({"metadata": {"name": "1svc"}})).await.status_of(
        422,
        "Invalid",
        "Service \"1svc\" is invalid: metadata.name: Invalid value: \"1svc\": a DNS-1035 label must consist of lower \
         case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric \
         character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    );

    app.post(cms, json!({"metadata": {"name": "a", "namespace": "other"}})).await.status_of(
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
    );
    app.post(cms, json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "a"}})).await.status_of(
        400,
        "BadRequest",
        "the API version in the data (apps/v1) does not match the expected API version (v1)",
    );
    app.post(cms, json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}})).await.status_of(
        400,
        "BadRequest",
        "the kind in the data (Secret) does not match the expected kind (ConfigMap)",
    );

    for body in ["{", "not json", "[1,2]", "\"s\"", ""] {
        let r = app.request(Method::POST, cms, &[("content-type", "application/json")], Body::from(body)).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(r.json()["reason"], "BadRequest");
    }
    let r = app.request(Method::POST, cms, &[], Body::from(r#"{"metadata":{"name":7}}"#)).await;
    assert_eq!(r.json()["code"], 400);

    let accepted = "the body of the request was in an unknown format - accepted media types include: \
                    application/json, application/yaml, application/vnd.kubernetes.protobuf";
    for ct in ["text/plain", "application/cbor", "application/merge-patch+json"] {
        app.request(Method::POST, cms, &[("content-type", ct)], Body::from("{}")).await.status_of(
            415,
            "UnsupportedMediaType",
            accepted,
        );
    }
    // A protobuf body that is not one is a 400, as is YAML that is not an object.
    let r = app
        .request(Method::POST, cms, &[("content-type", "application/vnd.kubernetes.protobuf")], Body::from("{}"))
        .await;
    assert_eq!(r.json()["code"], 400);
    let r = app.request(Method::POST, cms, &[("content-type", "application/yaml")], Body::from("- a\n- b\n")).await;
    assert_eq!(r.json()["code"], 400);
    let r = app
        .request(
            Method::POST,
            cms,
            &[("content-type", "application/yaml")],
            Body::from("metadata:\n  name: from-yaml\ndata:\n  k: v\n"),
        )
        .await;
    assert_eq!((r.status.as_u16(), r.json()["data"]["k"].as_str()), (201, Some("v")));

    let big = format!(r#"{{"metadata":{{"name":"big"}},"data":{{"k":"{}"}}}}"#, "x".repeat(3 * 1024 * 1024));
    let r = app.request(Method::POST, cms, &[("content-type", "application/json")], Body::from(big)).await;
    r.status_of(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728");

    // A list asked for in protobuf alone is answered in protobuf (crates/rest/tests/protobuf.rs).
    let r = app.get_with(cms, &[("accept", "application/vnd.kubernetes.protobuf")]).await;
    assert_eq!((r.status.as_u16(), r.content_type()), (200, "application/vnd.kubernetes.protobuf"));
    app.get_with(cms, &[("accept", "text/html")]).await.status_of(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json",
    );

    // Not created by any of the above (only the YAML one).
    let names: Vec<Value> =
        app.get(cms).await.json()["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].clone()).collect();
    assert_eq!(names, [json!("from-yaml")]);
}

#[tokio::test]
async fn dry_run_create_stores_nothing() {
    let app = app().await;
    app.namespace("default").await;
    let r = app.post("/api/v1/namespaces/default/configmaps?dryRun=All", json!({"metadata": {"name": "a"}})).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.json()["metadata"]["name"], "a");
    app.get("/api/v1/namespaces/default/configmaps/a").await.status_of(404, "NotFound", "configmaps \"a\" not found");
    let r = app.post("/api/v1/namespaces/default/configmaps?dryRun=Some", json!({"metadata": {"name": "a"}})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

// ---- Get and list ---------------------------------------------------------------------

#[tokio::test]
async fn get_and_list() {
    let app = app().await;
    app.namespace("default").await;
    app.namespace("other").await;
    let b = app.configmap("default", "b").await;
    let a = app.configmap("default", "a").await;
    app.configmap("other", "c").await;

    let got = app.get("/api/v1/namespaces/default/configmaps/b").await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.json(), b);
    let v = app.get("/api/v1/namespaces/default/configmaps/zz").await.status_of(
        404,
        "NotFound",
        "configmaps \"zz\" not found",
    );
    assert_eq!(v["details"], json!({"name": "zz", "kind": "configmaps"}));
    app.get("/apis/apps/v1/namespaces/default/deployments/zz").await.status_of(
        404,
        "NotFound",
        "deployments.apps \"zz\" not found",
    );

    let list = app.get("/api/v1/namespaces/default/configmaps?&limit=500&").await;
    assert_eq!(list.status, StatusCode::OK);
    let list = list.json();
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["items"], json!([a.clone(), b.clone()]));
    assert!(rv(&list) >= rv(&a).max(rv(&b)));

    let all = app.get("/api/v1/configmaps").await.json();
    let names: Vec<_> = all["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].clone()).collect();
    assert_eq!(names, [json!("a"), json!("b"), json!("c")]);
    for item in all["items"].as_array().unwrap() {
        assert_eq!((item["kind"].as_str(), item["apiVersion"].as_str()), (Some("ConfigMap"), Some("v1")));
    }

    let empty = app.get("/apis/apps/v1/namespaces/default/deployments").await.json();
    assert_eq!(empty["kind"], "DeploymentList");
    assert_eq!(empty["apiVersion"], "apps/v1");
    assert_eq!(empty["items"], json!([]));

    // The status subresource reads as the object.
    assert_eq!(
        app.get("/api/v1/namespaces/default").await.json(),
        app.get("/api/v1/namespaces/default/status").await.json()
    );
}

#[tokio::test]
async fn read_consistency_follows_resource_version() {
    let app = app().await;
    app.namespace("default").await;
    let cm = app.configmap("default", "a").await;
    let at = rv(&cm);

    for q in ["", "?resourceVersion=0", &format!("?resourceVersion={at}"), "?resourceVersion=1"] {
        let r = app.get(&format!("/api/v1/namespaces/default/configmaps{q}")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}");
        assert!(rv(&r.json()) >= at, "{q}");
        let r = app.get(&format!("/api/v1/namespaces/default/configmaps/a{q}")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}");
    }
    let r = app.get("/api/v1/namespaces/default/configmaps?resourceVersion=0&resourceVersionMatch=NotOlderThan").await;
    assert_eq!(r.status, StatusCode::OK);

    let far = at + 1_000_000;
    let current = app.state.cluster.applied_index();
    let r = app.get(&format!("/api/v1/namespaces/default/configmaps?resourceVersion={far}")).await;
    let v = r.status_of(504, "Timeout", &format!("Timeout: Too large resource version: {far}, current: {current}"));
    assert_eq!(r.headers.get("retry-after").unwrap(), "1");
    assert_eq!(v["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
    assert_eq!(v["details"]["retryAfterSeconds"], 1);

    app.get("/api/v1/namespaces/default/configmaps?resourceVersion=abc").await.status_of(
        400,
        "BadRequest",
        "invalid resource version: \"abc\"",
    );
    app.get("/api/v1/namespaces/default/configmaps/a?resourceVersion=abc").await.status_of(
        400,
        "BadRequest",
        "invalid resource version: \"abc\"",
    );
    let r = app.get("/api/v1/namespaces/default/configmaps?resourceVersionMatch=NotOlderThan").await;
    assert_eq!(r.json()["code"], 422);
}

// ---- Update ---------------------------------------------------------------------------

#[tokio::test]
async fn update_with_and_without_preconditions() {
    let app = app().await;
    app.namespace("default").await;
    let url = "/api/v1/namespaces/default/configmaps/a";
    let mut cm = app.configmap("default", "a").await;
    let first = rv(&cm);

    cm["data"] = json!({"k": "v2"});
    let r = app.put(url, cm.clone()).await;
    assert_eq!(r.status, StatusCode::OK);
    let updated = r.json();
    assert!(rv(&updated) > first);
    assert_eq!(updated["data"], json!({"k": "v2"}));
    assert_eq!(updated["metadata"]["uid"], cm["metadata"]["uid"]);
    assert_eq!(updated["metadata"]["creationTimestamp"], NOW);

    // The same body again carries a stale resourceVersion.
    let v = app.put(url, cm.clone()).await.status_of(
        409,
        "Conflict",
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes \
         to the latest version and try again",
    );
    assert_eq!(v["details"], json!({"name": "a", "kind": "configmaps"}));

    // Without a resourceVersion the update is unconditional.
    let mut blind = json!({"metadata": {"name": "a"}, "data": {"k": "v3"}});
    let r = app.put(url, blind.clone()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["data"], json!({"k": "v3"}));
    assert_eq!(r.json()["metadata"]["uid"], cm["metadata"]["uid"]);

    blind["metadata"]["uid"] = json!("someone-else");
    let uid = cm["metadata"]["uid"].as_str().unwrap();
    app.put(url, blind).await.status_of(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on configmaps \"a\": Precondition failed: UID in precondition: \
             someone-else, UID in object meta: {uid}"
        ),
    );

    app.put(url, json!({"metadata": {"name": "b"}})).await.status_of(
        400,
        "BadRequest",
        "the name of the object (b) does not match the name on the URL (a)",
    );
    app.put(url, json!({"metadata": {"name": "a", "namespace": "x"}})).await.status_of(
        400,
        "BadRequest",
        "the namespace of the object (x) does not match the namespace on the URL (default)",
    );
    app.put("/api/v1/namespaces/default/configmaps/missing", json!({"metadata": {"name": "missing"}})).await.status_of(
        404,
        "NotFound",
        "configmaps \"missing\" not found",
    );
    app.request(Method::PUT, url, &[("content-type", "application/merge-patch+json")], Body::from("{}"))
        .await
        .status_of(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json, \
             application/yaml, application/vnd.kubernetes.protobuf",
        );
    let r = app.put(&format!("{url}?dryRun=All"), json!({"metadata": {"name": "a"}, "data": {"dry": "run"}})).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.json()["data"], json!({"dry": "run"}));
    assert_eq!(app.get(url).await.json()["data"], json!({"k": "v3"}));
}

#[tokio::test]
async fn spec_changes_bump_generation() {
    let app = app().await;
    app.namespace("default").await;
    let url = "/apis/apps/v1/namespaces/default/deployments/web";
    let r = app
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 1}}),
        )
        .await;
    let mut d = r.json();
    d["spec"]["replicas"] = json!(3);
    let d2 = app.put(url, d.clone()).await.json();
    assert_eq!(d2["metadata"]["generation"], 2);
    let mut d3 = d2.clone();
    d3["metadata"]["labels"] = json!({"a": "b"});
    let d3 = app.put(url, d3).await.json();
    assert_eq!(d3["metadata"]["generation"], 2);
    app.put(url, d).await.status_of(
        409,
        "Conflict",
        "Operation cannot be fulfilled on deployments.apps \"web\": the object has been modified; please apply your \
         changes to the latest version and try again",
    );
}

// ---- Delete ---------------------------------------------------------------------------

#[tokio::test]
async fn delete_with_options_and_preconditions() {
    let app = app().await;
    app.namespace("default").await;
    let url = "/api/v1/namespaces/default/configmaps/a";
    let cm = app.configmap("default", "a").await;
    let uid = cm["metadata"]["uid"].as_str().unwrap().to_string();
    let at = rv(&cm);

    app.send(Method::DELETE, url, json!({"preconditions": {"uid": "nope"}})).await.status_of(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on configmaps \"a\": Precondition failed: UID in precondition: nope, UID \
             in object meta: {uid}"
        ),
    );
    app.send(Method::DELETE, url, json!({"preconditions": {"resourceVersion": "1"}})).await.status_of(
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on configmaps \"a\": the ResourceVersion in the precondition (1) does \
             not match the ResourceVersion in record ({at}). The object might have been modified"
        ),
    );
    let r = app.send(Method::DELETE, &format!("{url}?dryRun=All"), json!({})).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(app.get(url).await.status, StatusCode::OK);

    // kube-rs sends {}, kubectl a propagation policy; both with application/json.
    let r = app
        .send(
            Method::DELETE,
            url,
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background",
                                          "preconditions": {"uid": uid, "resourceVersion": at.to_string()}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let gone = r.json();
    assert_eq!(gone["kind"], "ConfigMap");
    assert_eq!(gone["metadata"]["name"], "a");
    assert!(rv(&gone) > at);
    app.get(url).await.status_of(404, "NotFound", "configmaps \"a\" not found");
    app.delete(url).await.status_of(404, "NotFound", "configmaps \"a\" not found");

    // Python: no body, no Content-Type.
    app.configmap("default", "b").await;
    let r = app.delete("/api/v1/namespaces/default/configmaps/b").await;
    assert_eq!(r.status, StatusCode::OK);
    let r = app.request(Method::DELETE, url, &[("content-type", "application/json")], Body::from("{")).await;
    assert_eq!(r.json()["reason"], "BadRequest");
}

// ---- Routing errors -------------------------------------------------------------------

#[tokio::test]
async fn unknown_resources_and_methods() {
    let app = app().await;
    app.namespace("default").await;
    let nf = "the server could not find the requested resource";
    for path in [
        "/api/v1/foos",
        "/api/v1/namespaces/default/foos",
        "/apis/apps/v1/configmaps",
        "/apis/apps/v2/deployments",
        "/api/v1/configmaps/a",
        "/api/v1/namespaces/default/configmaps/a/b/c",
    ] {
        app.get(path).await.status_of(404, "NotFound", nf);
    }
    let na = "the server does not allow this method on the requested resource";
    app.post("/api/v1/namespaces/default/configmaps/a", json!({})).await.status_of(405, "MethodNotAllowed", na);
    app.post("/api/v1/configmaps", json!({"metadata": {"name": "a"}})).await.status_of(405, "MethodNotAllowed", na);
    app.put("/api/v1/namespaces/default/configmaps", json!({})).await.status_of(405, "MethodNotAllowed", na);
    // A PATCH must name a patch type.
    app.send(Method::PATCH, "/api/v1/namespaces/default/configmaps/a", json!({})).await.status_of(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: \
         application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, \
         application/apply-patch+yaml",
    );
    // watch=false (or anything ParseBool reads as false) is a list.
    assert_eq!(app.get("/api/v1/namespaces/default/configmaps?watch=false").await.json()["kind"], "ConfigMapList");
    assert_eq!(app.get("/api/v1/namespaces/default/configmaps?watch=0").await.json()["kind"], "ConfigMapList");
    app.get("/api/v1/namespaces/default/configmaps/a%2E%2E/").await;
    let r = app.get("/api/v1/namespaces/default/configmaps/%2E%2E").await;
    assert_eq!(r.json()["reason"], "BadRequest");
}

#[tokio::test]
async fn list_selectors() {
    let app = app().await;
    app.namespace("default").await;
    app.namespace("other").await;
    let cms = "/api/v1/namespaces/default/configmaps";
    for (name, app_label) in [("a", "web"), ("b", "db"), ("c", "web")] {
        let r = app.post(cms, json!({"metadata": {"name": name, "labels": {"app": app_label}}})).await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    app.configmap("other", "a").await;
    let names = |v: serde_json::Value| -> Vec<String> {
        v["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(app.get(&format!("{cms}?labelSelector=app%3Dweb")).await.json()), ["a", "c"]);
    assert_eq!(names(app.get(&format!("{cms}?labelSelector=app+in+(db,x)")).await.json()), ["b"]);
    assert_eq!(names(app.get(&format!("{cms}?labelSelector=app!%3Dweb")).await.json()), ["b"]);
    assert_eq!(names(app.get(&format!("{cms}?fieldSelector=metadata.name%3Da")).await.json()), ["a"]);
    let all = app.get("/api/v1/configmaps?fieldSelector=metadata.name%3Da,metadata.namespace%3Dother").await.json();
    assert_eq!(all["items"].as_array().unwrap().len(), 1);
    assert_eq!(all["items"][0]["metadata"]["namespace"], "other");
    app.get(&format!("{cms}?fieldSelector=spec.nodeName%3Dx")).await.status_of(
        400,
        "BadRequest",
        "field label not supported: spec.nodeName",
    );
    let r = app.get(&format!("{cms}?labelSelector=a+b+c")).await;
    assert_eq!(r.json()["reason"], "BadRequest");
}
