//! Owns what kube-apiserver's typed decoding refuses: the value a built-in kind's Go
//! struct cannot hold, with the message Go's JSON decoder (sigs.k8s.io/json) or the
//! type's own `UnmarshalJSON` gives, so that nothing is stored that a typed client could
//! not read back.
//!
//! ```text
//! labels: {"a": 1}      json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string
//! replicas: 1.5         json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32
//! cpu: "1.5.5"          quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'
//! ```
//!
//! [`crate::unknown::check_fields`] calls [`mismatch`] on every node of its one walk; the
//! checks here only read the value, and allocate only to describe a failure. A value that
//! decodes, it then rewrites as the Go type writes it back ([`canonical`]): times in UTC
//! to the second (`MicroTime`: the microsecond), quantities in their canonical form.

use base64::Engine;
use kuorum_api::quantity::{self, Quantity};
use serde_json::Value;

use crate::{Schema, Shape};

/// `resource.ErrFormatWrong`.
pub const QUANTITY_FORMAT_WRONG: &str = quantity::FORMAT_WRONG;
/// `resource.ErrNumeric`.
pub const QUANTITY_NUMERIC: &str = quantity::NUMERIC;
/// `resource.ErrSuffix`.
pub const QUANTITY_SUFFIX: &str = quantity::SUFFIX;

/// The Go type a schema node decodes into, as far as decoding can fail on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A struct: an object (or null).
    Struct,
    /// `map[string]T`: an object (or null).
    Map,
    /// `[]T`: an array (or null).
    List,
    Str,
    /// `[]byte`: a base64 string.
    Bytes,
    /// `metav1.Time` (RFC 3339) or, with `true`, `metav1.MicroTime` (six fraction digits).
    Time(bool),
    Bool,
    Int32,
    Int64,
    Float,
    /// `intstr.IntOrString`: a string or an int32.
    IntOrString,
    /// `resource.Quantity`: a number or a quantity string.
    Quantity,
    /// Anything (`runtime.RawExtension`, `FieldsV1`, a schema without a type).
    Any,
}

impl Kind {
    pub(crate) fn of(schema: Schema<'_>, shape: Shape) -> Kind {
        match shape {
            Shape::Struct => Kind::Struct,
            Shape::List => Kind::List,
            Shape::Map if schema.values().is_some() => Kind::Map,
            Shape::Map | Shape::Any => Kind::Any,
            Shape::Scalar => scalar(schema),
        }
    }
}

fn scalar(schema: Schema<'_>) -> Kind {
    if schema.ext("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return Kind::IntOrString;
    }
    if let Some(alts) = schema.keyword("oneOf").and_then(Value::as_array) {
        let has = |t: &str| alts.iter().any(|a| a.get("type").and_then(Value::as_str) == Some(t));
        return if has("integer") {
            Kind::IntOrString
        } else if has("number") {
            Kind::Quantity
        } else {
            Kind::Any
        };
    }
    let format = || schema.keyword("format").and_then(Value::as_str);
    match schema.keyword("type").and_then(Value::as_str) {
        Some("string") => match format() {
            Some("byte") => Kind::Bytes,
            Some("date-time") => Kind::Time(schema.definition_name().is_some_and(|n| n.ends_with(".MicroTime"))),
            _ => Kind::Str,
        },
        Some("boolean") => Kind::Bool,
        Some("integer") => match format() {
            Some("int32") => Kind::Int32,
            _ => Kind::Int64,
        },
        Some("number") => Kind::Float,
        _ => Kind::Any,
    }
}

/// Why a value cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    pub what: What,
    /// Whether decoding stops here (an error from a type's `UnmarshalJSON`), rather than
    /// being saved while decoding goes on (Go keeps the first saved one).
    pub hard: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum What {
    /// Go's `UnmarshalTypeError`: the value's JSON kind (`number`, `number 1.5`, `string`)
    /// and the Go type it cannot go into; the message names the field.
    Type { got: String, go_type: String },
    /// A message of its own.
    Message(String),
}

/// The JSON kind Go names in an `UnmarshalTypeError` (`number 1.5` for a number an integer
/// field cannot hold).
fn got(v: &Value, literal: bool) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if literal => format!("number {n}"),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn type_error(v: &Value, schema: Schema<'_>, hard: bool) -> Mismatch {
    Mismatch { what: What::Type { got: got(v, false), go_type: go_type(schema) }, hard }
}

fn fits_int(n: &serde_json::Number, min: i64, max: i64) -> bool {
    n.as_i64().is_some_and(|i| (min..=max).contains(&i))
}

/// What decoding `value` (not null: Go accepts null everywhere) into `schema`'s Go type
/// refuses, if anything. `kind` is [`Kind::of`] the schema.
pub(crate) fn mismatch(schema: Schema<'_>, kind: Kind, value: &Value) -> Option<Mismatch> {
    let soft =
        |go_type: &str| Mismatch { what: What::Type { got: got(value, false), go_type: go_type.into() }, hard: false };
    match (kind, value) {
        (_, Value::Null) | (Kind::Any, _) => None,
        (Kind::Struct | Kind::Map, Value::Object(_)) | (Kind::List, Value::Array(_)) => None,
        (Kind::Struct | Kind::Map | Kind::List, _) => Some(type_error(value, schema, false)),
        (Kind::Str, Value::String(_)) | (Kind::Bool, Value::Bool(_)) | (Kind::Float, Value::Number(_)) => None,
        (Kind::Str, _) => Some(soft("string")),
        (Kind::Bool, _) => Some(soft("bool")),
        (Kind::Float, _) => Some(soft("float64")),
        (Kind::Int32 | Kind::Int64, Value::Number(n)) => {
            let (min, max, name) = if kind == Kind::Int32 {
                (i64::from(i32::MIN), i64::from(i32::MAX), "int32")
            } else {
                (i64::MIN, i64::MAX, "int64")
            };
            (!fits_int(n, min, max))
                .then(|| Mismatch { what: What::Type { got: got(value, true), go_type: name.into() }, hard: false })
        }
        (Kind::Int32, _) => Some(soft("int32")),
        (Kind::Int64, _) => Some(soft("int64")),
        (Kind::Bytes, Value::String(s)) => check_base64(s).map(|m| Mismatch { what: What::Message(m), hard: false }),
        // Go decodes an array of numbers into a []byte too.
        (Kind::Bytes, Value::Array(_)) => None,
        (Kind::Bytes, _) => Some(soft("[]uint8")),
        // IntOrString decodes anything but a string as an int32, and returns its error.
        (Kind::IntOrString, Value::String(_)) => None,
        (Kind::IntOrString, Value::Number(n)) if fits_int(n, i64::from(i32::MIN), i64::from(i32::MAX)) => None,
        (Kind::IntOrString, _) => {
            Some(Mismatch { what: What::Type { got: got(value, true), go_type: "int32".into() }, hard: true })
        }
        // Any JSON number reads as a quantity; anything else but a string is not one.
        (Kind::Quantity, Value::Number(_)) => None,
        (Kind::Quantity, Value::String(s)) => {
            parse_quantity(s.trim()).err().map(|m| Mismatch { what: What::Message(m.into()), hard: true })
        }
        (Kind::Quantity, _) => Some(Mismatch { what: What::Message(QUANTITY_FORMAT_WRONG.into()), hard: true }),
        // Time decodes its JSON as a string, then parses it.
        (Kind::Time(micro), Value::String(s)) => {
            kuorum_api::time::parse(s, micro).err().map(|m| Mismatch { what: What::Message(m), hard: true })
        }
        (Kind::Time(_), _) => {
            Some(Mismatch { what: What::Type { got: got(value, false), go_type: "string".into() }, hard: true })
        }
    }
}

/// What kube-apiserver stores for `value`, which decodes into `kind` ([`mismatch`] found
/// nothing), where that differs from `value`: a time as `metav1.Time` (to the second) or
/// `MicroTime` (to the microsecond) writes it, in UTC, and Go's zero time as `null`; a
/// quantity (string or number) in its canonical form. Int-or-strings and everything else
/// are stored as sent.
pub(crate) fn canonical(kind: Kind, value: &Value) -> Option<Value> {
    let written = match (kind, value) {
        (Kind::Time(micro), Value::String(s)) => {
            let t = kuorum_api::time::parse(s, micro).ok()?;
            if t.is_zero() {
                return Some(Value::Null);
            }
            kuorum_api::time::format_instant(t, micro)?
        }
        (Kind::Quantity, Value::String(s)) => parse_quantity(s.trim()).ok()?.canonical(),
        // Go reads the number's text; serde_json keeps integers exactly and a float as its
        // shortest round-trip text.
        (Kind::Quantity, Value::Number(n)) => parse_quantity(&n.to_string()).ok()?.canonical(),
        _ => return None,
    };
    (value.as_str() != Some(written.as_str())).then_some(Value::String(written))
}

/// The Go package-qualified name of a definition: `io.k8s.api.core.v1.PodSpec` → `v1.PodSpec`.
fn go_name(definition: &str) -> String {
    let mut parts = definition.rsplit('.');
    let name = parts.next().unwrap_or(definition);
    match parts.next() {
        Some(pkg) => format!("{pkg}.{name}"),
        None => name.to_string(),
    }
}

/// The bare Go name of a struct's type (`PodSpec`), as an error names the struct holding a
/// field.
pub(crate) fn struct_name(schema: Schema<'_>) -> Option<&str> {
    schema.definition_name().map(|d| d.rsplit('.').next().unwrap_or(d))
}

/// The Go type `schema` decodes into, as `reflect.Type.String()` prints it
/// (`[]v1.Container`, `map[string]string`, `int32`).
pub(crate) fn go_type(schema: Schema<'_>) -> String {
    let named = || schema.definition_name().map(go_name);
    match Kind::of(schema, schema.shape()) {
        Kind::Struct => named().unwrap_or_else(|| "struct {}".into()),
        Kind::List => format!("[]{}", schema.items().map(go_type).unwrap_or_else(|| "interface {}".into())),
        Kind::Map => format!("map[string]{}", schema.values().map(go_type).unwrap_or_else(|| "interface {}".into())),
        Kind::Any => named().unwrap_or_else(|| "interface {}".into()),
        Kind::Str => "string".into(),
        Kind::Time(_) => named().unwrap_or_else(|| "string".into()),
        Kind::Bytes => "[]uint8".into(),
        Kind::Bool => "bool".into(),
        Kind::Int32 => "int32".into(),
        Kind::Int64 => "int64".into(),
        Kind::Float => "float64".into(),
        Kind::IntOrString => "intstr.IntOrString".into(),
        Kind::Quantity => "resource.Quantity".into(),
    }
}

// ---- Quantities ---------------------------------------------------------------------------

/// `s` read as a `resource.Quantity`, as `resource.ParseQuantity` reads it; the error it
/// gives if not. Linear in `s`. The one quantity parser is [`kuorum_api::quantity::parse`].
pub fn parse_quantity(s: &str) -> Result<Quantity, &'static str> {
    quantity::parse(s)
}

// ---- Bytes ---------------------------------------------------------------------------------

/// Whether `s` is standard, padded base64 as Go's `base64.StdEncoding` decodes it (line
/// breaks ignored); Go's error if not.
pub fn check_base64(s: &str) -> Option<String> {
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_allow_trailing_bits(true)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical),
    );
    let clean;
    let input = if s.contains(['\r', '\n']) {
        clean = s.replace(['\r', '\n'], "");
        clean.as_str()
    } else {
        s
    };
    let offset = match engine.decode(input) {
        Ok(_) => return None,
        Err(base64::DecodeError::InvalidByte(at, _)) | Err(base64::DecodeError::InvalidLastSymbol(at, _)) => at,
        Err(base64::DecodeError::InvalidLength(len)) => len - len % 4,
        Err(base64::DecodeError::InvalidPadding) if input.len() % 4 != 0 => input.len() - input.len() % 4,
        Err(base64::DecodeError::InvalidPadding) => input.find('=').unwrap_or(input.len()),
    };
    Some(format!("illegal base64 data at input byte {offset}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_kube_reads_them() {
        for ok in [
            "1", "0", "1Gi", "1.5Gi", "100m", "0.5", ".5", "1e3", "1E-2", "5E", "+1", "-1k", "1.", "12Mi", "1e+5",
            "3n", "0Ei", ".", "Gi",
        ] {
            assert!(parse_quantity(ok).is_ok(), "{ok}");
        }
        for (bad, err) in [
            ("", QUANTITY_FORMAT_WRONG),
            ("1.5.5Gi", QUANTITY_FORMAT_WRONG),
            ("abc", QUANTITY_FORMAT_WRONG),
            ("1 Gi", QUANTITY_FORMAT_WRONG),
            ("1Gi5x", QUANTITY_FORMAT_WRONG),
            ("true", QUANTITY_FORMAT_WRONG),
            ("1Gb", QUANTITY_FORMAT_WRONG),
            ("1ki", QUANTITY_SUFFIX),
            ("1e", QUANTITY_SUFFIX),
            ("+-1", QUANTITY_SUFFIX),
            ("1e99999999999999999999", QUANTITY_SUFFIX),
            ("Ei", QUANTITY_NUMERIC),
            ("e-10", QUANTITY_NUMERIC),
        ] {
            assert_eq!(parse_quantity(bad).err(), Some(err), "{bad}");
        }
    }

    #[test]
    fn base64_as_go_decodes_it() {
        assert_eq!(check_base64("aGVsbG8="), None);
        assert_eq!(check_base64("aGVs\nbG8="), None);
        assert_eq!(check_base64(""), None);
        assert_eq!(check_base64("not base64!").unwrap(), "illegal base64 data at input byte 3");
        assert_eq!(check_base64("aGVsbG8").unwrap(), "illegal base64 data at input byte 4");
    }
}
