//! Object JSON helpers shared by the verbs: decoding a request body into a JSON object,
//! type meta (apiVersion/kind) checks, metadata access, storage keys, and the small
//! parameters every write takes (resourceVersion, dryRun).

use axum::http::{header, HeaderMap};
use bytes::Bytes;
use kuorum_api::kinds;
use kuorum_api::{ApiError, ResourceDef};
use kuorum_store::keys::ObjectKey;
use serde_json::{Map, Value};

use crate::query::Query;
use crate::yaml_limits::{self, MAX_NESTING};

pub(crate) type Object = Map<String, Value>;

/// The metadata fields that must be strings when present.
const STRING_META: &[&str] = &["name", "generateName", "namespace", "resourceVersion", "uid"];

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The media types a request body may have (in a 415's list).
pub(crate) const BODY_TYPES: &[&str] = &["application/json", "application/yaml", kuorum_protobuf::MEDIA_TYPE];

/// How a request body is encoded, from its Content-Type (none means JSON, as the Python
/// client sends it; anything else is 415).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFormat {
    Json,
    Yaml,
    Protobuf,
}

impl BodyFormat {
    pub(crate) fn of(headers: &HeaderMap) -> Result<BodyFormat, ApiError> {
        let Some(value) = headers.get(header::CONTENT_TYPE) else {
            return Ok(BodyFormat::Json);
        };
        let value = value.to_str().map_err(|_| ApiError::unsupported_media_type(BODY_TYPES))?;
        let essence = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match essence.as_str() {
            "" | "application/json" => Ok(BodyFormat::Json),
            "application/yaml" => Ok(BodyFormat::Yaml),
            kuorum_protobuf::MEDIA_TYPE => Ok(BodyFormat::Protobuf),
            _ => Err(ApiError::unsupported_media_type(BODY_TYPES)),
        }
    }
}

/// Decodes a request body of any accepted format into a JSON object whose metadata is
/// well formed (400 if not). A protobuf body's envelope supplies apiVersion and kind.
pub(crate) fn decode_as(format: BodyFormat, body: &[u8]) -> Result<Object, ApiError> {
    match format {
        BodyFormat::Json => decode(body),
        BodyFormat::Yaml => {
            let value = decode_yaml(body, "the request body")?;
            decode(&serde_json::to_vec(&value).unwrap_or_default())
        }
        BodyFormat::Protobuf => {
            let (api_version, kind, mut value) = kuorum_protobuf::decode(body)
                .map_err(|e| ApiError::bad_request(format!("the request body is not a valid protobuf object: {e}")))?;
            if let Value::Object(o) = &mut value {
                o.insert("apiVersion".into(), Value::from(api_version));
                o.insert("kind".into(), Value::from(kind));
            }
            decode(&serde_json::to_vec(&value).unwrap_or_default())
        }
    }
}

/// Bodies above this size are decoded on the blocking pool rather than on the runtime
/// that serves every other request (a 3 MiB YAML body takes tens of milliseconds).
const DECODE_INLINE_MAX: usize = 64 * 1024;

/// [`decode_as`], off the async workers for a large body when the runtime has a blocking
/// pool to spare (the multi-threaded one of `kuorum serve`; not the simulator's).
pub(crate) async fn decode_body(format: BodyFormat, body: Bytes) -> Result<Object, ApiError> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if body.len() <= DECODE_INLINE_MAX || Handle::current().runtime_flavor() != RuntimeFlavor::MultiThread {
        return decode_as(format, &body);
    }
    tokio::task::spawn_blocking(move || decode_as(format, &body))
        .await
        .unwrap_or_else(|e| Err(ApiError::internal(format!("decoding the request body: {e}"))))
}

/// Decodes a YAML body into a JSON value, refusing one that nests deeper than
/// [`MAX_NESTING`] or whose aliases expand past [`yaml_limits::max_values`] before it is
/// decoded (see [`crate::yaml_limits`]). `what` names the body in the error.
pub(crate) fn decode_yaml(body: &[u8], what: &str) -> Result<Value, ApiError> {
    match yaml_limits::check(body, MAX_NESTING, yaml_limits::max_values(body.len())) {
        Ok(()) => {}
        Err(yaml_limits::Exceeded::Nesting) => {
            return Err(ApiError::bad_request(format!(
                "{what} is not valid YAML: it nests deeper than {MAX_NESTING} levels"
            )))
        }
        Err(yaml_limits::Exceeded::Aliasing) => {
            return Err(ApiError::bad_request(format!(
                "{what} is not valid YAML: document contains excessive aliasing"
            )))
        }
    }
    serde_yaml_ng::from_slice(body).map_err(|e| ApiError::bad_request(format!("{what} is not valid YAML: {e}")))
}

/// Decodes a request body into a JSON object whose metadata is well formed (400 if not).
pub(crate) fn decode(body: &[u8]) -> Result<Object, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body is empty; expected a JSON object"));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))?;
    let Value::Object(mut obj) = value else {
        return Err(ApiError::bad_request(format!(
            "json: cannot unmarshal {} into Go value of type struct: the request body must be a JSON object",
            json_type(&value)
        )));
    };
    match obj.get("metadata") {
        None | Some(Value::Object(_)) => {}
        Some(Value::Null) => {
            obj.remove("metadata");
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {} into Go struct field .metadata of type v1.ObjectMeta",
                json_type(other)
            )))
        }
    }
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        for field in STRING_META {
            match meta.get(*field) {
                Some(Value::Null) => {
                    meta.remove(*field);
                }
                Some(Value::String(_)) | None => {}
                Some(other) => {
                    return Err(ApiError::bad_request(format!(
                        "json: cannot unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type string",
                        json_type(other)
                    )))
                }
            }
        }
    }
    for field in ["apiVersion", "kind"] {
        match obj.get(field) {
            Some(Value::String(_)) | None => {}
            Some(Value::Null) => {
                obj.remove(field);
            }
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "json: cannot unmarshal {} into Go struct field .{field} of type string",
                    json_type(other)
                )))
            }
        }
    }
    Ok(obj)
}

/// Checks that the body's apiVersion and kind (when given) are the URL's, and fills in
/// the missing ones.
pub(crate) fn check_type_meta(obj: &mut Object, def: &ResourceDef) -> Result<(), ApiError> {
    let expected = def.api_version();
    match obj.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != expected => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            )))
        }
        _ => {}
    }
    match obj.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != def.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                def.kind
            )))
        }
        _ => {}
    }
    set_type_meta(obj, def);
    Ok(())
}

/// Puts `kind` and `apiVersion` first, as kube-apiserver encodes objects.
pub(crate) fn set_type_meta(obj: &mut Object, def: &ResourceDef) {
    if obj.get("kind").and_then(Value::as_str) == Some(def.kind)
        && obj.get("apiVersion").and_then(Value::as_str) == Some(def.api_version().as_str())
    {
        return;
    }
    let mut out = Map::new();
    out.insert("kind".into(), Value::from(def.kind));
    out.insert("apiVersion".into(), Value::from(def.api_version()));
    for (k, v) in std::mem::take(obj) {
        if k != "kind" && k != "apiVersion" {
            out.insert(k, v);
        }
    }
    *obj = out;
}

/// An object's bytes as served: as stored, or (for bytes stored without `def`'s type meta)
/// read as `def` serves them ([`to_served`]).
pub(crate) fn served_bytes(bytes: &Bytes, def: &ResourceDef) -> Result<Bytes, ApiError> {
    if has_type_meta(bytes, def) {
        return Ok(bytes.clone());
    }
    Ok(Bytes::from(to_vec(&parse_served(bytes, def)?)))
}

/// Stored bytes parsed and read as `def` serves them ([`to_served`]).
pub(crate) fn parse_served(bytes: &[u8], def: &ResourceDef) -> Result<Object, ApiError> {
    let mut obj = parse_stored(bytes)?;
    to_served(&mut obj, def);
    Ok(obj)
}

/// A stored object as `def` serves it: converted from the kind it is stored as when
/// `def`'s version is a converted one ([`kinds::Strategy::stored_as`]), and with `def`'s type
/// meta (a custom resource stored at another version of its CRD only changes apiVersion).
pub(crate) fn to_served(obj: &mut Object, def: &ResourceDef) {
    if let Some(s) = kinds::of(def) {
        if let Some(stored) = s.stored_as() {
            if obj.get("apiVersion").and_then(Value::as_str) == Some(stored.def().api_version().as_str()) {
                s.from_stored(obj);
            }
        }
    }
    set_type_meta(obj, def);
}

/// Whether stored bytes already start with `def`'s type meta, in kube-apiserver's order
/// (`{"kind":"K","apiVersion":"V",`) or in the one kubectl and most clients send
/// (`{"apiVersion":"V","kind":"K",`), which the store keeps. Such bytes are served as
/// they are; anything else is parsed and re-encoded for every list item and every
/// watcher's event. A custom resource stored at another version of its CRD has the
/// storage version's `apiVersion` and is re-encoded.
pub(crate) fn has_type_meta(bytes: &[u8], def: &ResourceDef) -> bool {
    let kind_first = || {
        let r = strip_kind(bytes.strip_prefix(br#"{"kind":""#.as_slice())?, def)?;
        strip_api_version(r.strip_prefix(br#"","apiVersion":""#.as_slice())?, def)
    };
    let api_version_first = || {
        let r = strip_api_version(bytes.strip_prefix(br#"{"apiVersion":""#.as_slice())?, def)?;
        strip_kind(r.strip_prefix(br#"","kind":""#.as_slice())?, def)
    };
    kind_first().or_else(api_version_first).is_some_and(|rest| rest.starts_with(b"\""))
}

fn strip_kind<'a>(r: &'a [u8], def: &ResourceDef) -> Option<&'a [u8]> {
    r.strip_prefix(def.kind.as_bytes())
}

fn strip_api_version<'a>(r: &'a [u8], def: &ResourceDef) -> Option<&'a [u8]> {
    let r =
        if def.group.is_empty() { r } else { r.strip_prefix(def.group.as_bytes())?.strip_prefix(b"/".as_slice())? };
    r.strip_prefix(def.version.as_bytes())
}

/// Parses bytes the store holds (500 if they are not a JSON object).
pub(crate) fn parse_stored(bytes: &[u8]) -> Result<Object, ApiError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(ApiError::internal("stored object is not a JSON object")),
        Err(e) => Err(ApiError::internal(format!("stored object is not valid JSON: {e}"))),
    }
}

pub(crate) fn to_vec(obj: &Object) -> Vec<u8> {
    serde_json::to_vec(obj).unwrap_or_default()
}

pub(crate) fn meta(obj: &Object) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// The metadata object, created if missing.
pub(crate) fn meta_mut(obj: &mut Object) -> &mut Map<String, Value> {
    let entry = obj.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(m) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// A string metadata field; empty counts as absent.
pub(crate) fn meta_str<'a>(obj: &'a Object, field: &str) -> Option<&'a str> {
    meta(obj).and_then(|m| m.get(field)).and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// An object written to an object's URL: its name must be the URL's, and it lives in the
/// URL's namespace (a different one is 400; cluster-scoped objects have none).
pub(crate) fn place_at_url(obj: &mut Object, name: &str, namespace: Option<&str>) -> Result<(), ApiError> {
    let body_name = meta_str(obj, "name").unwrap_or("");
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    match (namespace, meta_str(obj, "namespace")) {
        (Some(url), Some(ns)) if ns != url => Err(ApiError::bad_request(format!(
            "the namespace of the object ({ns}) does not match the namespace on the URL ({url})"
        ))),
        (Some(url), _) => {
            meta_mut(obj).insert("namespace".into(), Value::from(url));
            Ok(())
        }
        (None, _) => {
            meta_mut(obj).remove("namespace");
            Ok(())
        }
    }
}

/// The storage key of one object.
pub(crate) fn key(def: &ResourceDef, namespace: Option<&str>, name: &str) -> String {
    ObjectKey { group: def.group, resource: def.plural, namespace, name }.encode()
}

/// A resourceVersion given by a client: empty is none; otherwise a log index (400 if not).
pub(crate) fn parse_rv(rv: Option<&str>) -> Result<Option<u64>, ApiError> {
    match rv {
        None | Some("") => Ok(None),
        Some(s) => {
            s.parse::<u64>().map(Some).map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}")))
        }
    }
}

/// Whether `dryRun=All` was asked for (in the query or a DeleteOptions body).
pub(crate) fn dry_run<'a>(values: impl Iterator<Item = &'a str>) -> Result<bool, ApiError> {
    let mut dry = false;
    for v in values {
        match v {
            "All" => dry = true,
            "" => {}
            other => {
                return Err(ApiError::bad_request(format!(
                    "invalid dry run option {other:?}: supported values are \"All\""
                )))
            }
        }
    }
    Ok(dry)
}

/// `dryRun` from the query string.
pub(crate) fn query_dry_run(q: &Query) -> Result<bool, ApiError> {
    dry_run(q.get_all("dryRun"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuorum_api::registry::lookup;
    use serde_json::json;

    #[test]
    fn type_meta_is_recognized_per_version() {
        let cm = lookup("", "v1", "configmaps").unwrap();
        assert!(has_type_meta(br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{}}"#, cm));
        assert!(!has_type_meta(br#"{"metadata":{},"kind":"ConfigMap","apiVersion":"v1"}"#, cm));
        // kubectl's order, kept by the store.
        assert!(has_type_meta(br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#, cm));
        assert!(!has_type_meta(br#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{}}"#, cm));
        assert!(!has_type_meta(br#"{"apiVersion":"v1beta1","kind":"ConfigMap","metadata":{}}"#, cm));
        assert!(!has_type_meta(br#"{"apiVersion":"v1","metadata":{},"kind":"ConfigMap"}"#, cm));
        let d = lookup("apps", "v1", "deployments").unwrap();
        assert!(has_type_meta(br#"{"kind":"Deployment","apiVersion":"apps/v1","spec":{}}"#, d));
        assert!(!has_type_meta(br#"{"kind":"Deployment","apiVersion":"apps/v1beta1","spec":{}}"#, d));
        assert!(!has_type_meta(br#"{"kind":"Deployment","apiVersion":"apps/v10","spec":{}}"#, d));
        assert!(has_type_meta(br#"{"apiVersion":"apps/v1","kind":"Deployment","spec":{}}"#, d));
        assert!(!has_type_meta(br#"{"apiVersion":"apps/v1beta1","kind":"Deployment","spec":{}}"#, d));
        assert!(!has_type_meta(br#"{"apiVersion":"v1","kind":"Deployment","spec":{}}"#, d));
        let stored = Bytes::from_static(br#"{"kind":"Deployment","apiVersion":"apps/v1beta1","spec":{}}"#);
        assert_eq!(
            &served_bytes(&stored, d).unwrap()[..],
            br#"{"kind":"Deployment","apiVersion":"apps/v1","spec":{}}"#
        );
        // Bytes with the type meta are served as they are, not parsed and encoded again.
        let stored = Bytes::from_static(br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#);
        let served = served_bytes(&stored, cm).unwrap();
        assert_eq!(served.as_ptr(), stored.as_ptr(), "the same buffer");
    }

    #[test]
    fn decode_rejects_what_kube_rejects() {
        assert_eq!(decode(b"").unwrap_err().code, 400);
        assert_eq!(decode(b"{").unwrap_err().code, 400);
        assert_eq!(decode(b"[]").unwrap_err().code, 400);
        assert_eq!(decode(br#"{"metadata":"x"}"#).unwrap_err().code, 400);
        let e = decode(br#"{"metadata":{"name":5}}"#).unwrap_err();
        assert!(e.message.contains("metadata.name of type string"), "{}", e.message);
        let o = decode(br#"{"metadata":{"name":"a","namespace":null}}"#).unwrap();
        assert_eq!(meta_str(&o, "name"), Some("a"));
        assert_eq!(meta_str(&o, "namespace"), None);
    }

    #[test]
    fn type_meta_is_checked_and_filled() {
        let cm = lookup("", "v1", "configmaps").unwrap();
        let mut o = decode(br#"{"data":{}}"#).unwrap();
        check_type_meta(&mut o, cm).unwrap();
        assert_eq!(Value::Object(o), json!({"kind":"ConfigMap","apiVersion":"v1","data":{}}));
        let mut o = decode(br#"{"apiVersion":"apps/v1","kind":"ConfigMap"}"#).unwrap();
        let e = check_type_meta(&mut o, cm).unwrap_err();
        assert_eq!(e.message, "the API version in the data (apps/v1) does not match the expected API version (v1)");
        let mut o = decode(br#"{"apiVersion":"v1","kind":"Secret"}"#).unwrap();
        assert_eq!(check_type_meta(&mut o, cm).unwrap_err().code, 400);
    }

    #[test]
    fn write_parameters() {
        assert_eq!(parse_rv(None).unwrap(), None);
        assert_eq!(parse_rv(Some("")).unwrap(), None);
        assert_eq!(parse_rv(Some("12")).unwrap(), Some(12));
        assert_eq!(parse_rv(Some("x")).unwrap_err().code, 400);
        assert!(dry_run(["All"].into_iter()).unwrap());
        assert!(!dry_run([].into_iter()).unwrap());
        assert_eq!(dry_run(["Some"].into_iter()).unwrap_err().code, 400);
    }
}
