//! Response compression (`response-compression`): large complete responses are gzipped for
//! clients that send `Accept-Encoding: gzip`; small ones and watch streams are not.

mod common;

use std::io::Read;

use axum::body::Body;
use axum::http::{Method, StatusCode};
use common::app;
use serde_json::{json, Value};

#[tokio::test]
async fn large_lists_are_gzipped_when_asked() {
    let app = app().await;
    app.namespace("default").await;
    let url = "/api/v1/namespaces/default/configmaps";
    // 40 objects of 4 KiB: a list of about 160 KiB, above the 128 KiB threshold.
    for i in 0..40 {
        let r = app.post(url, json!({"metadata": {"name": format!("cm-{i}")}, "data": {"k": "x".repeat(4096)}})).await;
        assert_eq!(r.status, StatusCode::CREATED);
    }
    let gz = app.get_with(url, &[("accept-encoding", "gzip")]).await;
    assert_eq!(gz.status, StatusCode::OK);
    assert_eq!(gz.headers.get("content-encoding").map(|v| v.to_str().unwrap()), Some("gzip"));
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&gz.bytes[..]).read_to_end(&mut plain).unwrap();
    let list: Value = serde_json::from_slice(&plain).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 40);
    assert!(gz.bytes.len() * 10 < plain.len(), "{} compressed vs {} plain", gz.bytes.len(), plain.len());

    // Without Accept-Encoding the same list is sent as it is.
    let raw = app.get(url).await;
    assert!(raw.headers.get("content-encoding").is_none());
    assert_eq!(raw.bytes, plain);

    // A small object is not compressed even when the client accepts gzip.
    let one = app.get_with(&format!("{url}/cm-0?x=1"), &[("accept-encoding", "gzip")]).await;
    assert!(one.headers.get("content-encoding").is_none());
    assert_eq!(one.json()["metadata"]["name"], "cm-0");

    // A watch stream stays uncompressed, so each event is flushed as it comes.
    let r = app
        .request(
            Method::GET,
            &format!("{url}?watch=true&timeoutSeconds=1"),
            &[("accept-encoding", "gzip")],
            Body::empty(),
        )
        .await;
    assert!(r.headers.get("content-encoding").is_none());
    let first = r.bytes.split(|b| *b == b'\n').next().unwrap();
    assert_eq!(serde_json::from_slice::<Value>(first).unwrap()["type"], "ADDED");
}
