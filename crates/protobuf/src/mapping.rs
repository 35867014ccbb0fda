//! The JSON form of Kubernetes protobuf messages, as Go's codecs give it.
//!
//! - A field's JSON name is its proto name (go-to-protobuf names proto fields after the JSON
//!   tags; `tests::schema_agreement` checks every field of the served kinds against the OpenAPI
//!   schemas).
//! - Embedded Go structs (`json:",inline"`) are message fields in protobuf; their fields are
//!   flattened into the containing JSON object ([`INLINE`]).
//! - `bytes` are standard base64 with padding; 64-bit integers are JSON numbers; `map<K, V>`
//!   is an object (keys sorted on output, as Go's encoder sorts them).
//! - Special messages ([`Special`]): `meta.v1.Time` is RFC 3339 in seconds, `MicroTime` RFC
//!   3339 with six fractional digits (both UTC, `Z`; the zero time — an empty message — is
//!   left out), `Duration` Go's duration string ("1h0m0s"), `IntOrString` a number or a
//!   string, `resource.Quantity` its string, `FieldsV1` the JSON it holds, `RawExtension` the
//!   JSON it holds (or, holding an enveloped protobuf body, that object decoded), `Verbs` a
//!   string array.
//!
//! Decoding keeps every field present on the wire (proto2 presence: Go writes pointer fields
//! only when set and value fields always), with one exception: empty singular strings are
//! left out, as `omitempty` would (and "" means unset for every string field of these kinds),
//! so a kubectl body does not carry `generateName: ""` or `resourceVersion: ""`. Zero numbers
//! and `false` stay: they may be pointer fields whose zero matters (`replicas: 0`,
//! `automountServiceAccountToken: false`). Unknown fields (from newer clients) are dropped.
//!
//! Encoding sets what the JSON has; `null` is unset; keys the message does not know (status
//! fields of newer Kubernetes versions, `apiVersion`/`kind`) are left out, as Go's JSON decoder
//! drops unknown fields. A value of the wrong JSON type is an error naming its path.

use crate::gotime;
use base64::Engine as _;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value as PValue,
};
use serde_json::{Map, Number, Value};
use std::collections::HashMap;

/// Message fields that are Go embedded structs, flattened in JSON: (message, field).
pub const INLINE: &[(&str, &str)] = &[
    ("api.core.v1.Volume", "volumeSource"),
    ("api.core.v1.PersistentVolumeSpec", "persistentVolumeSource"),
    ("api.core.v1.Probe", "handler"),
    ("api.core.v1.EphemeralContainer", "ephemeralContainerCommon"),
    ("api.core.v1.ConfigMapEnvSource", "localObjectReference"),
    ("api.core.v1.ConfigMapKeySelector", "localObjectReference"),
    ("api.core.v1.ConfigMapProjection", "localObjectReference"),
    ("api.core.v1.ConfigMapVolumeSource", "localObjectReference"),
    ("api.core.v1.SecretEnvSource", "localObjectReference"),
    ("api.core.v1.SecretKeySelector", "localObjectReference"),
    ("api.core.v1.SecretProjection", "localObjectReference"),
    ("api.admissionregistration.v1.NamedRuleWithOperations", "ruleWithOperations"),
    ("api.admissionregistration.v1.RuleWithOperations", "rule"),
    ("api.networking.v1.IngressRule", "ingressRuleValue"),
    ("api.resource.v1.DeviceClassConfiguration", "deviceConfiguration"),
    ("api.resource.v1.DeviceClaimConfiguration", "deviceConfiguration"),
    ("api.resource.v1.DeviceAllocationConfiguration", "deviceConfiguration"),
];

/// Proto fields go-to-protobuf named after the Go field rather than its JSON tag:
/// (message, proto name, JSON name).
const RENAMED: &[(&str, &str, &str)] = &[
    ("api.admissionregistration.v1.MutatingWebhookConfiguration", "Webhooks", "webhooks"),
    ("api.admissionregistration.v1.ValidatingWebhookConfiguration", "Webhooks", "webhooks"),
    ("api.admissionregistration.v1.Validation", "Expression", "expression"),
    ("api.admissionregistration.v1.Variable", "Name", "name"),
    ("api.admissionregistration.v1.Variable", "Expression", "expression"),
    ("api.networking.v1.IngressClassParametersReference", "aPIGroup", "apiGroup"),
    ("api.authentication.v1.BoundObjectReference", "uID", "uid"),
];

/// A field's JSON name: its proto name (go-to-protobuf names fields after the JSON tags),
/// but for the few in [`RENAMED`].
pub(crate) fn json_name(field: &FieldDescriptor) -> &str {
    let name = field.name();
    if name.starts_with(|c: char| c.is_ascii_uppercase()) || matches!(name, "aPIGroup" | "uID") {
        let parent = field.parent_message().full_name();
        if let Some((_, _, json)) = RENAMED.iter().find(|(m, f, _)| *m == parent && *f == name) {
            return json;
        }
    }
    name
}

/// The field of `desc` whose JSON name is `key`.
fn field_named(desc: &MessageDescriptor, key: &str) -> Option<FieldDescriptor> {
    desc.get_field_by_name(key).or_else(|| desc.fields().find(|f| json_name(f) == key))
}

/// Messages with a JSON form of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    Time,
    MicroTime,
    Duration,
    IntOrString,
    Quantity,
    FieldsV1,
    RawExtension,
    Verbs,
}

impl Special {
    pub fn of(desc: &MessageDescriptor) -> Option<Special> {
        Some(match desc.full_name() {
            "apimachinery.pkg.apis.meta.v1.Time" => Special::Time,
            "apimachinery.pkg.apis.meta.v1.MicroTime" => Special::MicroTime,
            "apimachinery.pkg.apis.meta.v1.Duration" => Special::Duration,
            "apimachinery.pkg.apis.meta.v1.FieldsV1" => Special::FieldsV1,
            // A string list in a message of its own, as JSON shows it: a plain array.
            "apimachinery.pkg.apis.meta.v1.Verbs"
            | "api.authentication.v1.ExtraValue"
            | "api.authorization.v1.ExtraValue"
            | "api.certificates.v1.ExtraValue" => Special::Verbs,
            "apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
            "apimachinery.pkg.api.resource.Quantity" => Special::Quantity,
            "apimachinery.pkg.runtime.RawExtension" => Special::RawExtension,
            _ => return None,
        })
    }
}

/// Whether this field is a Go embedded struct, flattened in JSON.
pub fn is_inline(field: &FieldDescriptor) -> bool {
    let parent = field.parent_message();
    INLINE.iter().any(|(m, f)| *m == parent.full_name() && *f == field.name())
}

/// A mapping error and where (innermost path segment last once built).
#[derive(Debug)]
pub struct MapError {
    pub message: String,
    /// Path segments, innermost first (pushed while unwinding).
    segments: Vec<String>,
}

impl MapError {
    fn new(message: impl Into<String>) -> Self {
        MapError { message: message.into(), segments: Vec::new() }
    }

    fn at(mut self, segment: impl Into<String>) -> Self {
        self.segments.push(segment.into());
        self
    }

    /// The JSON path, e.g. `spec.containers[0].ports[1].containerPort`.
    pub fn path(&self) -> String {
        let mut out = String::new();
        for s in self.segments.iter().rev() {
            if !s.starts_with('[') && !out.is_empty() {
                out.push('.');
            }
            out.push_str(s);
        }
        if out.is_empty() {
            out.push_str("(object)");
        }
        out
    }
}

type Result<T> = std::result::Result<T, MapError>;

pub(crate) struct DecodeContext {
    /// Envelope nesting depth (RawExtensions holding enveloped bodies).
    pub depth: usize,
}

// ---------------------------------------------------------------------------------------------
// protobuf -> JSON

/// The JSON form of a decoded message (`null` for an empty Time/MicroTime).
pub(crate) fn message_to_json(msg: &DynamicMessage, ctx: &DecodeContext) -> Result<Value> {
    Ok(message_value(msg, ctx)?.unwrap_or(Value::Null))
}

/// `None`: nothing to write (the zero Time).
fn message_value(msg: &DynamicMessage, ctx: &DecodeContext) -> Result<Option<Value>> {
    if let Some(special) = Special::of(&msg.descriptor()) {
        return special_to_json(special, msg, ctx);
    }
    let mut obj = Map::new();
    fill_object(msg, &mut obj, ctx)?;
    Ok(Some(Value::Object(obj)))
}

fn fill_object(msg: &DynamicMessage, obj: &mut Map<String, Value>, ctx: &DecodeContext) -> Result<()> {
    for (field, value) in msg.fields() {
        if is_inline(&field) {
            if let PValue::Message(inner) = value {
                fill_object(inner, obj, ctx)?;
            }
            continue;
        }
        if let Some(json) = field_to_json(&field, value, ctx).map_err(|e| e.at(field.name()))? {
            obj.insert(json_name(&field).to_string(), json);
        }
    }
    Ok(())
}

fn field_to_json(field: &FieldDescriptor, value: &PValue, ctx: &DecodeContext) -> Result<Option<Value>> {
    if field.is_map() {
        let PValue::Map(entries) = value else { return Err(MapError::new("expected a map")) };
        let entry = field.kind();
        let value_kind = entry
            .as_message()
            .map(|m| m.map_entry_value_field().kind())
            .ok_or_else(|| MapError::new("map without entry"))?;
        let mut keys: Vec<&MapKey> = entries.keys().collect();
        keys.sort();
        let mut obj = Map::with_capacity(keys.len());
        for key in keys {
            let name = map_key_string(key);
            let v = scalar_or_message(&value_kind, &entries[key], ctx).map_err(|e| e.at(format!("[{name:?}]")))?;
            obj.insert(name, v.unwrap_or(Value::Null));
        }
        return Ok(Some(Value::Object(obj)));
    }
    if field.is_list() {
        let PValue::List(items) = value else { return Err(MapError::new("expected a list")) };
        let kind = field.kind();
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            out.push(scalar_or_message(&kind, item, ctx).map_err(|e| e.at(format!("[{i}]")))?.unwrap_or(Value::Null));
        }
        return Ok(Some(Value::Array(out)));
    }
    if let PValue::String(s) = value {
        if s.is_empty() {
            return Ok(None);
        }
    }
    scalar_or_message(&field.kind(), value, ctx)
}

fn map_key_string(key: &MapKey) -> String {
    match key {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}

fn scalar_or_message(kind: &Kind, value: &PValue, ctx: &DecodeContext) -> Result<Option<Value>> {
    Ok(Some(match value {
        PValue::Bool(b) => Value::Bool(*b),
        PValue::I32(n) => Value::from(*n),
        PValue::I64(n) => Value::from(*n),
        PValue::U32(n) => Value::from(*n),
        PValue::U64(n) => Value::from(*n),
        PValue::EnumNumber(n) => Value::from(*n),
        PValue::F32(f) => float(f64::from(*f))?,
        PValue::F64(f) => float(*f)?,
        PValue::String(s) => Value::String(s.clone()),
        PValue::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        PValue::Message(m) => return message_value(m, ctx),
        PValue::List(_) | PValue::Map(_) => {
            return Err(MapError::new(format!("unexpected nested list or map for {kind:?}")));
        }
    }))
}

fn float(f: f64) -> Result<Value> {
    Number::from_f64(f).map(Value::Number).ok_or_else(|| MapError::new(format!("{f} has no JSON form")))
}

fn get<'a>(msg: &'a DynamicMessage, name: &str) -> Option<std::borrow::Cow<'a, PValue>> {
    msg.get_field_by_name(name)
}

fn get_i64(msg: &DynamicMessage, name: &str) -> Option<i64> {
    if !msg.has_field_by_name(name) {
        return None;
    }
    get(msg, name).and_then(|v| match v.as_ref() {
        PValue::I64(n) => Some(*n),
        PValue::I32(n) => Some(i64::from(*n)),
        _ => None,
    })
}

fn get_string(msg: &DynamicMessage, name: &str) -> String {
    match get(msg, name).as_deref() {
        Some(PValue::String(s)) => s.clone(),
        _ => String::new(),
    }
}

fn get_bytes(msg: &DynamicMessage, name: &str) -> Vec<u8> {
    match get(msg, name).as_deref() {
        Some(PValue::Bytes(b)) => b.to_vec(),
        _ => Vec::new(),
    }
}

fn special_to_json(special: Special, msg: &DynamicMessage, ctx: &DecodeContext) -> Result<Option<Value>> {
    match special {
        Special::Time | Special::MicroTime => {
            let seconds = get_i64(msg, "seconds");
            let nanos = get_i64(msg, "nanos");
            if seconds.is_none() && nanos.is_none() {
                // Go marshals the zero time as an empty message.
                return Ok(None);
            }
            let seconds = seconds.unwrap_or(0);
            let s = if special == Special::Time {
                // Go's Time.Unmarshal keeps only the seconds.
                gotime::format_time(seconds)
            } else {
                let nanos = u32::try_from(nanos.unwrap_or(0)).map_err(|_| MapError::new("negative nanos"))?;
                gotime::format_micro_time(seconds, nanos)
            };
            s.map(|s| Some(Value::String(s))).ok_or_else(|| MapError::new(format!("time out of range: {seconds}s")))
        }
        Special::Duration => Ok(Some(Value::String(gotime::format_duration(get_i64(msg, "duration").unwrap_or(0))))),
        Special::IntOrString => {
            if get_i64(msg, "type") == Some(1) {
                Ok(Some(Value::String(get_string(msg, "strVal"))))
            } else {
                Ok(Some(Value::from(get_i64(msg, "intVal").unwrap_or(0))))
            }
        }
        Special::Quantity => Ok(Some(Value::String(get_string(msg, "string")))),
        Special::FieldsV1 => {
            let raw = get_bytes(msg, "Raw");
            if raw.is_empty() {
                return Ok(Some(Value::Object(Map::new())));
            }
            serde_json::from_slice(&raw).map(Some).map_err(|e| MapError::new(format!("fieldsV1 is not JSON: {e}")))
        }
        Special::RawExtension => {
            let raw = get_bytes(msg, "raw");
            if raw.is_empty() {
                return Ok(Some(Value::Null));
            }
            if raw.starts_with(&crate::MAGIC) {
                return crate::decode_nested(&raw, ctx.depth).map(Some).map_err(MapError::new);
            }
            serde_json::from_slice(&raw).map(Some).map_err(|e| MapError::new(format!("raw extension is not JSON: {e}")))
        }
        Special::Verbs => match get(msg, "items").as_deref() {
            Some(PValue::List(items)) => Ok(Some(Value::Array(
                items.iter().map(|v| Value::String(v.as_str().unwrap_or_default().to_string())).collect(),
            ))),
            _ => Ok(Some(Value::Array(Vec::new()))),
        },
    }
}

// ---------------------------------------------------------------------------------------------
// JSON -> protobuf

/// The message for a JSON value; `None` when the value means "unset" (`null`).
pub(crate) fn json_to_message(desc: &MessageDescriptor, json: &Value) -> Result<Option<DynamicMessage>> {
    if json.is_null() {
        return Ok(None);
    }
    if let Some(special) = Special::of(desc) {
        return special_from_json(special, desc, json);
    }
    let Value::Object(obj) = json else {
        return Err(MapError::new(format!("expected an object, got {}", type_name(json))));
    };
    let mut msg = DynamicMessage::new(desc.clone());
    fill_message(&mut msg, obj)?;
    Ok(Some(msg))
}

fn fill_message(msg: &mut DynamicMessage, obj: &Map<String, Value>) -> Result<()> {
    let desc = msg.descriptor();
    for (key, value) in obj {
        let Some(field) = field_named(&desc, key) else { continue };
        if is_inline(&field) || value.is_null() {
            continue;
        }
        if let Some(v) = json_to_field(&field, value).map_err(|e| e.at(key.clone()))? {
            msg.set_field(&field, v);
        }
    }
    for field in desc.fields().filter(is_inline) {
        let Some(inner_desc) = field.kind().as_message().cloned() else { continue };
        let mut inner = DynamicMessage::new(inner_desc);
        fill_message(&mut inner, obj)?;
        if inner.fields().next().is_some() {
            msg.set_field(&field, PValue::Message(inner));
        }
    }
    Ok(())
}

fn json_to_field(field: &FieldDescriptor, json: &Value) -> Result<Option<PValue>> {
    if field.is_map() {
        let Value::Object(obj) = json else {
            return Err(MapError::new(format!("expected an object, got {}", type_name(json))));
        };
        let entry = field.kind();
        let entry = entry.as_message().ok_or_else(|| MapError::new("map without entry"))?;
        let key_kind = entry.map_entry_key_field().kind();
        let value_kind = entry.map_entry_value_field().kind();
        let mut map = HashMap::with_capacity(obj.len());
        for (k, v) in obj {
            let key = map_key(&key_kind, k).map_err(|e| e.at(format!("[{k:?}]")))?;
            let value = match json_to_value(&value_kind, v).map_err(|e| e.at(format!("[{k:?}]")))? {
                Some(value) => value,
                None => PValue::default_value(&value_kind),
            };
            map.insert(key, value);
        }
        return Ok(Some(PValue::Map(map)));
    }
    if field.is_list() {
        let Value::Array(items) = json else {
            return Err(MapError::new(format!("expected an array, got {}", type_name(json))));
        };
        let kind = field.kind();
        let mut list = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let value = match json_to_value(&kind, item).map_err(|e| e.at(format!("[{i}]")))? {
                Some(value) => value,
                None => PValue::default_value(&kind),
            };
            list.push(value);
        }
        return Ok(Some(PValue::List(list)));
    }
    json_to_value(&field.kind(), json)
}

fn map_key(kind: &Kind, key: &str) -> Result<MapKey> {
    let bad = || MapError::new(format!("map key {key:?} is not a {kind:?}"));
    Ok(match kind {
        Kind::String => MapKey::String(key.to_string()),
        Kind::Bool => MapKey::Bool(key.parse().map_err(|_| bad())?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => MapKey::I32(key.parse().map_err(|_| bad())?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => MapKey::I64(key.parse().map_err(|_| bad())?),
        Kind::Uint32 | Kind::Fixed32 => MapKey::U32(key.parse().map_err(|_| bad())?),
        Kind::Uint64 | Kind::Fixed64 => MapKey::U64(key.parse().map_err(|_| bad())?),
        _ => return Err(bad()),
    })
}

/// `None`: the value means unset.
fn json_to_value(kind: &Kind, json: &Value) -> Result<Option<PValue>> {
    if json.is_null() {
        return Ok(None);
    }
    let mismatch = |want: &str| MapError::new(format!("expected {want}, got {}", describe(json)));
    Ok(Some(match kind {
        Kind::Bool => PValue::Bool(json.as_bool().ok_or_else(|| mismatch("a boolean"))?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            PValue::I32(json.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(|| mismatch("a 32-bit integer"))?)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            PValue::I64(json.as_i64().ok_or_else(|| mismatch("an integer"))?)
        }
        Kind::Uint32 | Kind::Fixed32 => PValue::U32(
            json.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| mismatch("an unsigned 32-bit integer"))?,
        ),
        Kind::Uint64 | Kind::Fixed64 => PValue::U64(json.as_u64().ok_or_else(|| mismatch("an unsigned integer"))?),
        Kind::Float => PValue::F32(json.as_f64().ok_or_else(|| mismatch("a number"))? as f32),
        Kind::Double => PValue::F64(json.as_f64().ok_or_else(|| mismatch("a number"))?),
        Kind::String => PValue::String(json.as_str().ok_or_else(|| mismatch("a string"))?.to_string()),
        Kind::Bytes => {
            let s = json.as_str().ok_or_else(|| mismatch("a base64 string"))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s)
                .map_err(|e| MapError::new(format!("not base64: {e}")))?;
            PValue::Bytes(bytes.into())
        }
        Kind::Enum(_) => PValue::EnumNumber(
            json.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(|| mismatch("an enum number"))?,
        ),
        Kind::Message(desc) => match json_to_message(desc, json)? {
            Some(m) => PValue::Message(m),
            None => return Ok(None),
        },
    }))
}

fn set(msg: &mut DynamicMessage, name: &str, value: PValue) -> Result<()> {
    msg.try_set_field_by_name(name, value).map_err(|e| MapError::new(format!("setting {name}: {e:?}")))
}

fn special_from_json(special: Special, desc: &MessageDescriptor, json: &Value) -> Result<Option<DynamicMessage>> {
    let mut msg = DynamicMessage::new(desc.clone());
    let mismatch = |want: &str| MapError::new(format!("expected {want}, got {}", describe(json)));
    match special {
        Special::Time | Special::MicroTime => {
            let s = json.as_str().ok_or_else(|| mismatch("an RFC 3339 time string"))?;
            let kuorum_api::time::Instant { secs: seconds, nanos } =
                kuorum_api::time::parse(s, false).map_err(MapError::new)?;
            set(&mut msg, "seconds", PValue::I64(seconds))?;
            if nanos != 0 {
                let nanos = i32::try_from(nanos).map_err(|_| MapError::new("nanos out of range"))?;
                set(&mut msg, "nanos", PValue::I32(nanos))?;
            }
        }
        Special::Duration => {
            let s = json.as_str().ok_or_else(|| mismatch("a duration string"))?;
            let d = gotime::parse_duration(s).ok_or_else(|| MapError::new(format!("{s:?} is not a duration")))?;
            set(&mut msg, "duration", PValue::I64(d))?;
        }
        Special::IntOrString => match json {
            Value::String(s) => {
                set(&mut msg, "type", PValue::I64(1))?;
                set(&mut msg, "strVal", PValue::String(s.clone()))?;
            }
            Value::Number(_) => {
                let n =
                    json.as_i64().and_then(|n| i32::try_from(n).ok()).ok_or_else(|| mismatch("a 32-bit integer"))?;
                set(&mut msg, "type", PValue::I64(0))?;
                set(&mut msg, "intVal", PValue::I32(n))?;
            }
            _ => return Err(mismatch("an integer or a string")),
        },
        Special::Quantity => {
            let s = match json {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err(mismatch("a quantity string")),
            };
            set(&mut msg, "string", PValue::String(s))?;
        }
        Special::FieldsV1 => {
            let raw = serde_json::to_vec(json).map_err(|e| MapError::new(e.to_string()))?;
            set(&mut msg, "Raw", PValue::Bytes(raw.into()))?;
        }
        Special::RawExtension => {
            let raw = serde_json::to_vec(json).map_err(|e| MapError::new(e.to_string()))?;
            set(&mut msg, "raw", PValue::Bytes(raw.into()))?;
        }
        Special::Verbs => {
            let Value::Array(items) = json else { return Err(mismatch("an array of strings")) };
            let mut list = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let s = item.as_str().ok_or_else(|| MapError::new("expected a string").at(format!("[{i}]")))?;
                list.push(PValue::String(s.to_string()));
            }
            set(&mut msg, "items", PValue::List(list))?;
        }
    }
    Ok(Some(msg))
}

fn type_name(json: &Value) -> &'static str {
    match json {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn describe(json: &Value) -> String {
    match json {
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.len() <= 64 => format!("string {s:?}"),
        other => type_name(other).to_string(),
    }
}
