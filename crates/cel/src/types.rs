//! Owns what the cost estimate and the type checks know of a value before it is seen:
//! its [`Type`], with the most elements, properties or characters it can have.
//!
//! A size no schema bounds is bounded by the request: a list of strings in a 3 MiB body
//! has at most 3 MiB / 3 elements (`"",`), as kube's estimator reckons it from each type's
//! smallest serialized form.

use std::collections::BTreeMap;

use crate::MAX_REQUEST_BYTES;

/// A value's type, with bounds on its size.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    /// Anything; no list, map or string in it is longer than `max`.
    Dyn {
        max: u64,
    },
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String {
        max: u64,
    },
    Bytes {
        max: u64,
    },
    Duration,
    Timestamp,
    List {
        elem: Box<Type>,
        max: u64,
    },
    /// A map with arbitrary keys (`additionalProperties`).
    Map {
        value: Box<Type>,
        max: u64,
    },
    /// An object with declared fields; `open` when unknown fields are kept too.
    Object {
        fields: BTreeMap<String, Type>,
        open: bool,
    },
    /// A value of one of kube's library types (`Quantity`, `URL`, `IP`, ...).
    Opaque(&'static str),
}

/// The bytes of the smallest JSON form of a value of type `t`, and a separator.
fn min_serialized(t: &Type) -> u64 {
    match t {
        Type::String { .. } | Type::Bytes { .. } => 3, // "",
        Type::Int | Type::Uint | Type::Double => 2,    // 0,
        Type::Bool => 5,                               // true,
        Type::Null => 5,                               // null,
        Type::Duration | Type::Timestamp => 3,
        Type::List { .. } => 3,
        Type::Map { .. } | Type::Object { .. } => 3,
        Type::Dyn { .. } | Type::Opaque(_) => 2,
    }
}

impl Type {
    /// Any value that fits in a request.
    pub fn dyn_any() -> Type {
        Type::Dyn { max: MAX_REQUEST_BYTES }
    }

    /// A string of at most `max` characters (unbounded: what fits in a request).
    pub fn string(max: Option<u64>) -> Type {
        Type::String { max: max.unwrap_or(MAX_REQUEST_BYTES) }
    }

    /// A list of at most `max` elements (unbounded: what fits in a request).
    pub fn list(elem: Type, max: Option<u64>) -> Type {
        let bound = MAX_REQUEST_BYTES / min_serialized(&elem);
        Type::List { elem: Box::new(elem), max: max.unwrap_or(bound).min(bound) }
    }

    /// A map of at most `max` entries (unbounded: what fits in a request).
    pub fn map(value: Type, max: Option<u64>) -> Type {
        // A key of at least one character: `"k":` and the value.
        let bound = MAX_REQUEST_BYTES / (4 + min_serialized(&value));
        Type::Map { value: Box::new(value), max: max.unwrap_or(bound).min(bound) }
    }

    pub fn object(fields: BTreeMap<String, Type>, open: bool) -> Type {
        Type::Object { fields, open }
    }

    /// The most elements, entries or characters a value of this type has (0 for scalars).
    pub fn max_size(&self) -> u64 {
        match self {
            Type::Dyn { max } | Type::String { max } | Type::Bytes { max } => *max,
            Type::List { max, .. } | Type::Map { max, .. } => *max,
            Type::Object { fields, open } => {
                if *open {
                    MAX_REQUEST_BYTES / 4
                } else {
                    fields.len() as u64
                }
            }
            _ => 0,
        }
    }

    /// The type of an element of a list, a map's values or a field (for iteration: a
    /// map's keys are strings).
    pub fn elem(&self) -> Type {
        match self {
            Type::List { elem, .. } => (**elem).clone(),
            Type::Map { .. } | Type::Object { .. } => Type::string(None),
            Type::Dyn { max } => Type::Dyn { max: *max },
            _ => Type::dyn_any(),
        }
    }

    /// The type CRD `schema` (a structural OpenAPI v3 schema) gives a value, as kube's
    /// `SchemaDeclType` makes it.
    pub fn from_schema(schema: &serde_json::Value) -> Type {
        let get_u64 = |k: &str| schema.get(k).and_then(serde_json::Value::as_u64);
        let flag = |k: &str| schema.get(k).and_then(serde_json::Value::as_bool) == Some(true);
        if flag("x-kubernetes-int-or-string") {
            return Type::Dyn { max: get_u64("maxLength").unwrap_or(MAX_REQUEST_BYTES) };
        }
        match schema.get("type").and_then(serde_json::Value::as_str) {
            Some("boolean") => Type::Bool,
            Some("integer") => Type::Int,
            Some("number") => Type::Double,
            Some("string") => match schema.get("format").and_then(serde_json::Value::as_str) {
                Some("byte") => Type::Bytes { max: get_u64("maxLength").unwrap_or(MAX_REQUEST_BYTES) },
                Some("duration") => Type::Duration,
                Some("date") | Some("date-time") => Type::Timestamp,
                _ => Type::string(get_u64("maxLength")),
            },
            Some("array") => {
                let items = schema.get("items").map(Type::from_schema).unwrap_or_else(Type::dyn_any);
                Type::list(items, get_u64("maxItems"))
            }
            Some("object") => {
                let props = schema.get("properties").and_then(serde_json::Value::as_object);
                let additional = schema.get("additionalProperties").filter(|a| a.is_object());
                if let (None, Some(a)) = (props, additional) {
                    return Type::map(Type::from_schema(a), get_u64("maxProperties"));
                }
                if props.is_none() && flag("x-kubernetes-preserve-unknown-fields") {
                    return Type::dyn_any();
                }
                let fields = props
                    .into_iter()
                    .flatten()
                    .map(|(k, s)| (k.clone(), Type::from_schema(s)))
                    .collect::<BTreeMap<_, _>>();
                let open = flag("x-kubernetes-preserve-unknown-fields") || flag("x-kubernetes-embedded-resource");
                Type::Object { fields, open }
            }
            _ => Type::dyn_any(),
        }
    }

    /// The type of `v` itself: any value with no list, map or string longer than the
    /// longest in `v`. Linear in `v`.
    pub fn of_value(v: &serde_json::Value) -> Type {
        let mut max = 0u64;
        let mut todo = vec![v];
        while let Some(v) = todo.pop() {
            match v {
                serde_json::Value::String(s) => max = max.max(s.chars().count() as u64),
                serde_json::Value::Array(items) => {
                    max = max.max(items.len() as u64);
                    todo.extend(items);
                }
                serde_json::Value::Object(m) => {
                    max = max.max(m.len() as u64);
                    todo.extend(m.values());
                }
                _ => {}
            }
        }
        Type::Dyn { max }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schemas_bound_sizes_and_requests_bound_the_rest() {
        let t = Type::from_schema(&json!({"type": "array", "maxItems": 10, "items": {"type": "string"}}));
        assert_eq!(t.max_size(), 10);
        let t = Type::from_schema(&json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(t.max_size(), MAX_REQUEST_BYTES / 3);
        let t = Type::from_schema(&json!({"type": "object", "properties": {"a": {"type": "integer"}}}));
        assert_eq!(t, Type::Object { fields: [("a".to_string(), Type::Int)].into_iter().collect(), open: false });
    }

    #[test]
    fn a_value_bounds_itself() {
        assert_eq!(Type::of_value(&json!({"a": [1, 2, 3], "b": "xy"})), Type::Dyn { max: 3 });
    }
}
