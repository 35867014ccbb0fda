//! Owns the mapping between JSON (what objects are) and CEL values, as kube's
//! `UnstructuredToVal` makes it: objects are maps with string keys, integers `int`,
//! other numbers `double`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::Value;

/// `v` as a CEL value. The depth of `v` is bounded by the decoder (every body is), so
/// the recursion is too.
pub fn to_cel(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::String(s) => Value::String(Arc::new(s.clone())),
        serde_json::Value::Array(items) => Value::List(Arc::new(items.iter().map(to_cel).collect())),
        serde_json::Value::Object(m) => {
            let map: HashMap<Key, Value> =
                m.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v))).collect();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

/// `v` as JSON, for what an expression builds (a message, a mutation); `None` for values
/// JSON has no form for (functions, opaque values, non-string map keys).
pub fn to_json(v: &Value) -> Option<serde_json::Value> {
    Some(match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::from(*i),
        Value::UInt(u) => serde_json::Value::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f).map(serde_json::Value::Number)?,
        Value::String(s) => serde_json::Value::String(s.to_string()),
        Value::List(items) => serde_json::Value::Array(items.iter().map(to_json).collect::<Option<_>>()?),
        Value::Map(m) => {
            // Sorted: a map's order is not defined, and what is written must not vary.
            let mut entries: Vec<(String, serde_json::Value)> = m
                .map
                .iter()
                .map(|(k, v)| match k {
                    Key::String(s) => Some((s.to_string(), to_json(v)?)),
                    _ => None,
                })
                .collect::<Option<_>>()?;
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().collect())
        }
        Value::Duration(d) => serde_json::Value::String(format!("{}s", d.num_milliseconds() as f64 / 1000.0)),
        Value::Timestamp(t) => serde_json::Value::String(t.to_rfc3339()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_goes_through_cel_and_back() {
        let v = json!({"a": [1, 2.5, "x", null, true], "b": {"c": -3}});
        assert_eq!(to_json(&to_cel(&v)), Some(v));
    }
}
