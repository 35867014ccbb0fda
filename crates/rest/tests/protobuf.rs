//! Protobuf on the wire (`protobuf-encoding`): request bodies in the `k8s\0` envelope, and
//! answers in protobuf when the client prefers it, through the router.

mod common;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::app;
use serde_json::json;

const PB: &str = "application/vnd.kubernetes.protobuf";
const PB_FIRST: &str = "application/vnd.kubernetes.protobuf,application/json";

#[tokio::test]
async fn protobuf_in_and_out() {
    let app = app().await;
    app.namespace("default").await;
    let url = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pb"}, "data": {"a": "1"}});
    let body = kuorum_protobuf::encode(&cm).unwrap();

    // Created from a protobuf body, answered in protobuf.
    let r = app.request(Method::POST, url, &[("content-type", PB), ("accept", PB_FIRST)], Body::from(body)).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.content_type(), PB);
    let (api_version, kind, created) = kuorum_protobuf::decode(&r.bytes).unwrap();
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMap"));
    assert_eq!(created["data"], json!({"a": "1"}));
    assert!(created["metadata"]["uid"].is_string());

    // Get and list, also with protobuf alone in Accept.
    for accept in [PB_FIRST, PB] {
        let r = app.get_with(&format!("{url}/pb"), &[("accept", accept)]).await;
        assert_eq!((r.status, r.content_type()), (StatusCode::OK, PB), "{accept}");
        assert_eq!(kuorum_protobuf::decode(&r.bytes).unwrap().2["metadata"]["name"], "pb");
    }
    let r = app.get_with(url, &[("accept", PB_FIRST)]).await;
    let (_, kind, list) = kuorum_protobuf::decode(&r.bytes).unwrap();
    assert_eq!(kind, "ConfigMapList");
    assert_eq!(list["items"][0]["data"]["a"], "1");

    // Errors are Status objects in protobuf too.
    let r = app.get_with(&format!("{url}/missing"), &[("accept", PB_FIRST)]).await;
    assert_eq!((r.status, r.content_type()), (StatusCode::NOT_FOUND, PB));
    let (_, kind, status) = kuorum_protobuf::decode(&r.bytes).unwrap();
    assert_eq!((kind.as_str(), &status["code"], &status["reason"]), ("Status", &json!(404), &json!("NotFound")));

    // JSON first, or a Table, or a watch: JSON as before.
    let r =
        app.get_with(&format!("{url}/pb"), &[("accept", "application/json,application/vnd.kubernetes.protobuf")]).await;
    assert_eq!(r.content_type(), "application/json");
    let r = app
        .get_with(
            url,
            &[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/vnd.kubernetes.protobuf")],
        )
        .await;
    assert_eq!(r.json()["kind"], "Table");
    let r = app
        .request(Method::GET, &format!("{url}?watch=true&timeoutSeconds=1"), &[("accept", PB_FIRST)], Body::empty())
        .await;
    assert!(r.content_type().starts_with("application/json"), "{}", r.content_type());
}
