//! Kubernetes protobuf bodies (`application/vnd.kubernetes.protobuf`) of the built-in kinds
//! kuorum serves, to and from their JSON form.
//!
//! A body is the magic `k8s\0` followed by a protobuf `runtime.Unknown` whose `typeMeta` names
//! the object's apiVersion and kind and whose `raw` holds the object encoded as its message in
//! Kubernetes' `generated.proto` files. Those files are vendored under `proto/` (see README.md),
//! compiled by `build.rs` into a descriptor set, and walked at run time with prost-reflect: no
//! per-kind code. The JSON mapping follows the Go codecs: proto field names are the JSON
//! names (checked against the OpenAPI schemas by a test), embedded Go structs (`json:",inline"`)
//! are flattened, and a handful of apimachinery types have their own JSON form (`Time`,
//! `MicroTime`, `Duration`, `IntOrString`, `Quantity`, `FieldsV1`, `RawExtension`, `Verbs`);
//! `bytes` are base64, 64-bit integers JSON numbers. `src/mapping.rs` has the details.
//!
//! Watch streams ([`encode_watch_event`], [`decode_watch_event`]) use the Go stream framing:
//! each event is a 4-byte big-endian length and a bare `meta.v1.WatchEvent` (no envelope),
//! whose `object.raw` is the object's own enveloped body.

mod gotime;
mod mapping;

use kuorum_api::registry::KUBELET_SUBRESOURCES;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value as PValue};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The protobuf media type (content negotiation, `Content-Type`).
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The protobuf stream media type of watches (`;stream=watch` as Go's codecs announce it).
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The four bytes every enveloped body starts with.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// Nested envelopes (a `RawExtension` holding an enveloped object) decoded at most this deep.
const MAX_ENVELOPE_DEPTH: usize = 4;

/// Why a protobuf body could not be turned into JSON. The REST layer answers 400 with the
/// message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("protobuf body does not start with the k8s\\0 magic prefix")]
    NoMagic,
    #[error("protobuf envelope (runtime.Unknown) is malformed: {0}")]
    Envelope(String),
    #[error("protobuf envelope has no {0}")]
    MissingTypeMeta(&'static str),
    #[error("protobuf envelope has contentEncoding {0:?}, which is not supported")]
    ContentEncoding(String),
    #[error("protobuf envelope has contentType {0:?}, which is not supported")]
    ContentType(String),
    #[error("protobuf bodies of {api_version}, Kind={kind} are not supported")]
    UnsupportedKind { api_version: String, kind: String },
    #[error("malformed protobuf {kind}: {message}")]
    Malformed { kind: String, message: String },
    #[error("{kind} {path}: {message}")]
    Invalid { kind: String, path: String, message: String },
}

/// Why a JSON object could not be turned into a protobuf body: kinds without a protobuf form
/// (the REST layer then answers JSON, or 406), or JSON that does not fit the kind's schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("object has no {0}")]
    MissingTypeMeta(&'static str),
    #[error("{api_version}, Kind={kind} has no protobuf encoding here")]
    UnsupportedKind { api_version: String, kind: String },
    #[error("{kind} {path}: {message}")]
    Invalid { kind: String, path: String, message: String },
}

/// The protobuf package of a group's messages in `proto/`: `api.<first label>` (`apps`,
/// `rbac.authorization.k8s.io` -> `api.rbac`), but for the groups of the aggregator and
/// the apiextensions server, which live elsewhere.
fn package_of(group: &str) -> String {
    match group {
        "" => "api.core".into(),
        "apiregistration.k8s.io" => "kube_aggregator.pkg.apis.apiregistration".into(),
        "apiextensions.k8s.io" => "apiextensions_apiserver.pkg.apis.apiextensions".into(),
        g => format!("api.{}", g.split('.').next().unwrap_or(g)),
    }
}

/// The kinds with a protobuf form: (apiVersion, kind) -> message full name in `proto/`.
/// Every built-in kind of the registry and its list whose message the vendored protos
/// have (kinds newer than them are served as JSON only), the kinds its subresources take
/// (`autoscaling/v1` Scale, policy/v1 Eviction, TokenRequest), Status,
/// and DeleteOptions under every served group version (client-go sends its own).
pub(crate) fn kinds() -> &'static HashMap<(String, String), String> {
    static KINDS: OnceLock<HashMap<(String, String), String>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let mut out = HashMap::new();
        let mut add = |api_version: String, kind: &str, full_name: String| {
            if message(&full_name).is_some() {
                out.insert((api_version, kind.to_string()), full_name);
            }
        };
        for def in kuorum_api::registry::resources() {
            let package = format!("{}.{}", package_of(def.group), def.version);
            add(def.api_version(), def.kind, format!("{package}.{}", def.kind));
            add(def.api_version(), def.list_kind, format!("{package}.{}", def.list_kind));
            add(def.api_version(), "DeleteOptions", META_DELETE_OPTIONS.into());
            // What a subresource takes and answers when it is another kind: Scale,
            // Eviction, TokenRequest (kubectl create token sends it in protobuf); not the
            // kubelet's options, which no body carries here.
            let bodies = def.subresources.iter().filter(|s| !KUBELET_SUBRESOURCES.contains(&s.name));
            for (group, version, kind) in bodies.filter_map(|s| s.response) {
                let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
                add(api_version, kind, format!("{}.{version}.{kind}", package_of(group)));
            }
        }
        add("autoscaling/v1".into(), "Scale", "api.autoscaling.v1.Scale".into());
        add("autoscaling/v1".into(), "DeleteOptions", META_DELETE_OPTIONS.into());
        // Status is unversioned ("v1" in every group); meta.k8s.io/v1 is accepted too.
        add("v1".into(), "Status", META_STATUS.into());
        add("meta.k8s.io/v1".into(), "Status", META_STATUS.into());
        add("meta.k8s.io/v1".into(), "DeleteOptions", META_DELETE_OPTIONS.into());
        out
    })
}

const META_STATUS: &str = "apimachinery.pkg.apis.meta.v1.Status";
const META_DELETE_OPTIONS: &str = "apimachinery.pkg.apis.meta.v1.DeleteOptions";
const RUNTIME_UNKNOWN: &str = "apimachinery.pkg.runtime.Unknown";
const META_WATCH_EVENT: &str = "apimachinery.pkg.apis.meta.v1.WatchEvent";

/// The descriptor set `build.rs` compiled from `proto/`.
pub(crate) fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/k8s.fds"))[..])
            .expect("the descriptor set built from proto/ decodes")
    })
}

fn message(full_name: &str) -> Option<MessageDescriptor> {
    pool().get_message_by_name(full_name)
}

fn message_for(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    kinds().get(&(api_version.to_string(), kind.to_string())).and_then(|m| message(m))
}

/// Whether objects of this apiVersion and kind have a protobuf form here.
pub fn supports(api_version: &str, kind: &str) -> bool {
    message_for(api_version, kind).is_some()
}

/// Decodes an enveloped body: (apiVersion, kind, the object as JSON, with `kind` and
/// `apiVersion` set).
pub fn decode(body: &[u8]) -> Result<(String, String, Value), DecodeError> {
    decode_at(body, 0)
}

fn decode_at(body: &[u8], depth: usize) -> Result<(String, String, Value), DecodeError> {
    let rest = body.strip_prefix(&MAGIC[..]).ok_or(DecodeError::NoMagic)?;
    let unknown_desc = message(RUNTIME_UNKNOWN).ok_or_else(|| DecodeError::Envelope("no descriptor".into()))?;
    let unknown = DynamicMessage::decode(unknown_desc, rest).map_err(|e| DecodeError::Envelope(e.to_string()))?;
    let type_meta = match unknown.get_field_by_name("typeMeta").as_deref() {
        Some(PValue::Message(m)) if unknown.has_field_by_name("typeMeta") => m.clone(),
        _ => return Err(DecodeError::MissingTypeMeta("typeMeta")),
    };
    let api_version = string_field(&type_meta, "apiVersion");
    let kind = string_field(&type_meta, "kind");
    if kind.is_empty() {
        return Err(DecodeError::MissingTypeMeta("kind"));
    }
    if api_version.is_empty() {
        return Err(DecodeError::MissingTypeMeta("apiVersion"));
    }
    let encoding = string_field(&unknown, "contentEncoding");
    if !encoding.is_empty() {
        return Err(DecodeError::ContentEncoding(encoding));
    }
    let raw = match unknown.get_field_by_name("raw").as_deref() {
        Some(PValue::Bytes(b)) => b.clone(),
        _ => Default::default(),
    };
    let content_type = string_field(&unknown, "contentType");
    let mut object = match content_type.as_str() {
        "" | MEDIA_TYPE => {
            let desc = message_for(&api_version, &kind)
                .ok_or_else(|| DecodeError::UnsupportedKind { api_version: api_version.clone(), kind: kind.clone() })?;
            let msg = DynamicMessage::decode(desc, raw.as_ref())
                .map_err(|e| DecodeError::Malformed { kind: kind.clone(), message: e.to_string() })?;
            let ctx = mapping::DecodeContext { depth };
            mapping::message_to_json(&msg, &ctx).map_err(|e| DecodeError::Invalid {
                kind: kind.clone(),
                path: e.path(),
                message: e.message,
            })?
        }
        "application/json" => serde_json::from_slice(&raw)
            .map_err(|e| DecodeError::Malformed { kind: kind.clone(), message: e.to_string() })?,
        other => return Err(DecodeError::ContentType(other.to_string())),
    };
    let Value::Object(fields) = &mut object else {
        return Err(DecodeError::Malformed { kind, message: "not an object".into() });
    };
    let mut out = Map::with_capacity(fields.len() + 2);
    out.insert("kind".into(), Value::String(kind.clone()));
    out.insert("apiVersion".into(), Value::String(api_version.clone()));
    for (k, v) in std::mem::take(fields) {
        if k != "kind" && k != "apiVersion" {
            out.insert(k, v);
        }
    }
    if kind.ends_with("List") && !out.contains_key("items") {
        // An empty list has no items on the wire; Go's `items` has no omitempty.
        out.insert("items".into(), Value::Array(Vec::new()));
    }
    Ok((api_version, kind, Value::Object(out)))
}

/// Encodes a JSON object (with `apiVersion` and `kind`) into an enveloped body. Fields the
/// kind's message does not have are left out, like Go's decoder drops unknown JSON fields.
pub fn encode(object: &Value) -> Result<Vec<u8>, EncodeError> {
    let fields = object.as_object().ok_or(EncodeError::NotAnObject)?;
    let api_version = fields
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(EncodeError::MissingTypeMeta("apiVersion"))?;
    let kind = fields
        .get("kind")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(EncodeError::MissingTypeMeta("kind"))?;
    let desc = message_for(api_version, kind)
        .ok_or_else(|| EncodeError::UnsupportedKind { api_version: api_version.to_string(), kind: kind.to_string() })?;
    let msg = mapping::json_to_message(&desc, object).map_err(|e| EncodeError::Invalid {
        kind: kind.to_string(),
        path: e.path(),
        message: e.message,
    })?;
    Ok(envelope(api_version, kind, &msg.unwrap_or_else(|| DynamicMessage::new(desc)).encode_to_vec()))
}

/// `k8s\0` + `runtime.Unknown{typeMeta{apiVersion, kind}, raw}`.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    // Unknown and TypeMeta are tiny and fixed; encode them by hand rather than through the pool.
    let mut type_meta = Vec::with_capacity(api_version.len() + kind.len() + 4);
    prost::encoding::string::encode(1, &api_version.to_string(), &mut type_meta);
    prost::encoding::string::encode(2, &kind.to_string(), &mut type_meta);
    let mut out = Vec::with_capacity(4 + type_meta.len() + raw.len() + 12);
    out.extend_from_slice(&MAGIC);
    prost::encoding::bytes::encode(1, &type_meta, &mut out);
    prost::encoding::bytes::encode(2, &raw.to_vec(), &mut out);
    out
}

fn string_field(msg: &DynamicMessage, name: &str) -> String {
    match msg.get_field_by_name(name).as_deref() {
        Some(PValue::String(s)) => s.clone(),
        _ => String::new(),
    }
}

/// One watch event as a protobuf stream frame: a 4-byte big-endian length, then a bare
/// `meta.v1.WatchEvent{type, object: RawExtension{raw: <the object's enveloped body>}}`, as
/// Go's protobuf stream serializer writes it. `event_type` is ADDED, MODIFIED, DELETED,
/// BOOKMARK or ERROR (with a Status object).
pub fn encode_watch_event(event_type: &str, object: &Value) -> Result<Vec<u8>, EncodeError> {
    let body = encode(object)?;
    let mut object_ext = Vec::with_capacity(body.len() + 6);
    prost::encoding::bytes::encode(1, &body, &mut object_ext);
    let mut event = Vec::with_capacity(object_ext.len() + event_type.len() + 12);
    prost::encoding::string::encode(1, &event_type.to_string(), &mut event);
    prost::encoding::bytes::encode(2, &object_ext, &mut event);
    let len = u32::try_from(event.len()).map_err(|_| EncodeError::Invalid {
        kind: "WatchEvent".into(),
        path: String::new(),
        message: "event larger than 4 GiB".into(),
    })?;
    let mut frame = Vec::with_capacity(4 + event.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&event);
    Ok(frame)
}

/// Decodes one watch frame's payload (after its 4-byte length): (event type, the object as
/// JSON).
pub fn decode_watch_event(frame: &[u8]) -> Result<(String, Value), DecodeError> {
    let desc = message(META_WATCH_EVENT).ok_or_else(|| DecodeError::Envelope("no descriptor".into()))?;
    let event = DynamicMessage::decode(desc, frame)
        .map_err(|e| DecodeError::Malformed { kind: "WatchEvent".into(), message: e.to_string() })?;
    let event_type = string_field(&event, "type");
    let raw = match event.get_field_by_name("object").as_deref() {
        Some(PValue::Message(m)) => match m.get_field_by_name("raw").as_deref() {
            Some(PValue::Bytes(b)) => b.clone(),
            _ => Default::default(),
        },
        _ => Default::default(),
    };
    let (_, _, object) = decode_at(&raw, 1)?;
    Ok((event_type, object))
}

/// Splits a protobuf watch stream buffer into its first frame's payload and the bytes after it;
/// `None` while the frame is incomplete.
pub fn split_watch_frame(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_be_bytes(buf.get(..4)?.try_into().ok()?) as usize;
    let end = 4usize.checked_add(len)?;
    let payload = buf.get(4..end)?;
    Some((payload, &buf[end..]))
}

/// Decodes a body nested in a `RawExtension` (one level deeper than its container).
pub(crate) fn decode_nested(body: &[u8], depth: usize) -> Result<Value, String> {
    if depth >= MAX_ENVELOPE_DEPTH {
        return Err("envelopes nested too deeply".into());
    }
    decode_at(body, depth + 1).map(|(_, _, v)| v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
