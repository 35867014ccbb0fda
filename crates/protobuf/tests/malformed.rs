//! Malformed bodies and JSON that does not fit: errors, never panics.

use kuorum_protobuf::{
    decode, decode_watch_event, encode, split_watch_frame, supports, DecodeError, EncodeError, MAGIC,
};
use serde_json::json;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// `k8s\0` + Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding, contentType}, by hand.
fn envelope(api_version: &str, kind: &str, raw: &[u8], encoding: &str, content_type: &str) -> Vec<u8> {
    let mut type_meta = Vec::new();
    prost::encoding::string::encode(1, &api_version.to_string(), &mut type_meta);
    prost::encoding::string::encode(2, &kind.to_string(), &mut type_meta);
    let mut out = MAGIC.to_vec();
    prost::encoding::bytes::encode(1, &type_meta, &mut out);
    prost::encoding::bytes::encode(2, &raw.to_vec(), &mut out);
    prost::encoding::string::encode(3, &encoding.to_string(), &mut out);
    prost::encoding::string::encode(4, &content_type.to_string(), &mut out);
    out
}

#[test]
fn no_magic() {
    assert_eq!(decode(b""), Err(DecodeError::NoMagic));
    assert_eq!(decode(b"k8s"), Err(DecodeError::NoMagic));
    assert_eq!(decode(br#"{"kind":"ConfigMap"}"#), Err(DecodeError::NoMagic));
    let body = fixture("kubectl-create-configmap.bin");
    assert_eq!(decode(&body[4..]), Err(DecodeError::NoMagic));
}

#[test]
fn empty_envelope() {
    assert_eq!(decode(&MAGIC), Err(DecodeError::MissingTypeMeta("typeMeta")));
    assert_eq!(decode(&envelope("v1", "", b"", "", "")), Err(DecodeError::MissingTypeMeta("kind")));
    assert_eq!(decode(&envelope("", "ConfigMap", b"", "", "")), Err(DecodeError::MissingTypeMeta("apiVersion")));
}

#[test]
fn unknown_kinds() {
    let err = decode(&envelope("v1", "Widget", b"", "", "")).unwrap_err();
    assert_eq!(err, DecodeError::UnsupportedKind { api_version: "v1".into(), kind: "Widget".into() });
    assert_eq!(err.to_string(), "protobuf bodies of v1, Kind=Widget are not supported");
    assert!(matches!(decode(&envelope("apps/v1", "ConfigMap", b"", "", "")), Err(DecodeError::UnsupportedKind { .. })));
    assert!(matches!(decode(&envelope("v2", "Pod", b"", "", "")), Err(DecodeError::UnsupportedKind { .. })));
    assert!(!supports("v1", "Widget") && !supports("", "Pod") && !supports("batch/v2", "Job"));
    assert!(supports("batch/v1", "Job") && !supports("storagemigration.k8s.io/v1", "StorageVersionMigration"));
    // An empty raw is a valid empty object.
    let (_, _, object) = decode(&envelope("v1", "ConfigMap", b"", "", "")).unwrap();
    assert_eq!(object, json!({"kind": "ConfigMap", "apiVersion": "v1"}));
}

#[test]
fn content_encoding_and_type() {
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", b"x", "gzip", "")),
        Err(DecodeError::ContentEncoding("gzip".into()))
    );
    assert_eq!(
        decode(&envelope("v1", "ConfigMap", b"x", "", "application/yaml")),
        Err(DecodeError::ContentType("application/yaml".into()))
    );
    // A JSON raw (contentType application/json) is taken as is.
    let (_, _, object) =
        decode(&envelope("v1", "Widget", br#"{"metadata":{"name":"w"}}"#, "", "application/json")).unwrap();
    assert_eq!(object, json!({"kind": "Widget", "apiVersion": "v1", "metadata": {"name": "w"}}));
    assert!(matches!(
        decode(&envelope("v1", "Widget", b"{", "", "application/json")),
        Err(DecodeError::Malformed { .. })
    ));
}

#[test]
fn every_truncation_is_an_error_or_a_prefix_object() {
    for name in ["kubectl-create-deployment.bin", "kubectl-create-service-nodeport.bin", "kubectl-create-configmap.bin"]
    {
        let body = fixture(name);
        for len in 0..body.len() {
            // Must not panic; almost every cut is an error (a cut at a field boundary of the
            // envelope can still decode).
            let _ = decode(&body[..len]);
        }
        assert!(decode(&body[..body.len() - 1]).is_err(), "{name}");
        assert!(decode(&body[..body.len() / 2]).is_err(), "{name}");
    }
}

#[test]
fn corrupt_raw_object() {
    // Raw that is not a valid message: a length running past the end, a bad wire type.
    for raw in [&[0x0a, 0x7f, 0x01][..], &[0x0f], &[0x0a, 0x02, 0x0a, 0x05], &[0xff; 11]] {
        let err = decode(&envelope("v1", "Pod", raw, "", "")).unwrap_err();
        assert!(matches!(err, DecodeError::Malformed { .. }), "{raw:?}: {err}");
    }
    // FieldsV1 that is not JSON: metadata(1){managedFields(17){fieldsV1(7){Raw(1): "{"}}}.
    let fields_v1 = [0x0a, 0x01, b'{'];
    let mut entry = vec![0x3a, fields_v1.len() as u8];
    entry.extend(fields_v1);
    let mut meta = vec![0x8a, 0x01, entry.len() as u8];
    meta.extend(entry);
    let mut raw = vec![0x0a, meta.len() as u8];
    raw.extend(meta);
    let err = decode(&envelope("v1", "ConfigMap", &raw, "", "")).unwrap_err();
    assert!(matches!(&err, DecodeError::Invalid { path, .. } if path == "metadata.managedFields[0].fieldsV1"), "{err}");
}

/// Deterministic garbage and bit flips: no panics.
#[test]
fn fuzz_no_panics() {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let seeds: Vec<Vec<u8>> =
        ["kubectl-create-deployment.bin", "kubectl-create-secret.bin", "kubectl-create-service-clusterip.bin"]
            .iter()
            .map(|n| fixture(n))
            .collect();
    for i in 0..3000 {
        let mut body = seeds[i % seeds.len()].clone();
        for _ in 0..(1 + next() % 4) {
            let at = 4 + (next() as usize) % (body.len() - 4);
            body[at] ^= 1 << (next() % 8);
        }
        let _ = decode(&body);
        let _ = decode_watch_event(&body[4..]);
        let mut garbage = MAGIC.to_vec();
        garbage.extend((0..(next() % 64)).map(|_| next() as u8));
        let _ = decode(&garbage);
        let _ = decode_watch_event(&garbage[4..]);
        let _ = split_watch_frame(&garbage);
    }
}

#[test]
fn encode_errors() {
    assert_eq!(encode(&json!([1])), Err(EncodeError::NotAnObject));
    assert_eq!(encode(&json!({"kind": "ConfigMap"})), Err(EncodeError::MissingTypeMeta("apiVersion")));
    assert_eq!(encode(&json!({"apiVersion": "v1"})), Err(EncodeError::MissingTypeMeta("kind")));
    assert_eq!(
        encode(&json!({"apiVersion": "batch/v2", "kind": "Job"})),
        Err(EncodeError::UnsupportedKind { api_version: "batch/v2".into(), kind: "Job".into() })
    );
    let bad = |object: serde_json::Value| match encode(&object) {
        Err(EncodeError::Invalid { path, message, .. }) => format!("{path}: {message}"),
        other => panic!("{object}: {other:?}"),
    };
    assert_eq!(
        bad(
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "a", "ports": [{"containerPort": "80"}]}]}})
        ),
        "spec.containers[0].ports[0].containerPort: expected a 32-bit integer, got string \"80\""
    );
    assert_eq!(
        bad(
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "a", "ports": [{"containerPort": 1.5}]}]}})
        ),
        "spec.containers[0].ports[0].containerPort: expected a 32-bit integer, got number 1.5"
    );
    assert_eq!(
        bad(json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}})),
        "data[\"k\"]: not base64: Invalid symbol 32, offset 3."
    );
    assert_eq!(
        bad(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"creationTimestamp": "yesterday"}})),
        "metadata.creationTimestamp: parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\""
    );
    assert_eq!(
        bad(json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80, "targetPort": true}]}})),
        "spec.ports[0].targetPort: expected an integer or a string, got a boolean"
    );
    assert_eq!(
        bad(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"})),
        "metadata: expected an object, got a string"
    );
    assert_eq!(
        bad(json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": {"name": "a"}}})),
        "spec.containers: expected an array, got an object"
    );
    assert_eq!(
        bad(json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 4_294_967_296_i64}})),
        "spec.replicas: expected a 32-bit integer, got number 4294967296"
    );
    // Unknown fields are left out, not errors (Go drops unknown JSON fields too).
    let body = encode(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "shardInfo": {}}, "extra": 1}),
    )
    .unwrap();
    assert_eq!(decode(&body).unwrap().2, json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}}));
}
