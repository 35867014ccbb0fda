//! Path elements: how structured-merge-diff names one step from a node to a child.
//!
//! - a struct or map field (`.name`, FieldsV1 `f:name`),
//! - an element of a `list-type: map` list by its key fields (`[name="c"]`, `k:{"name":"c"}`),
//! - an element of a `list-type: set` list by its value (`[="a"]`, `v:"a"`),
//! - an index (`[0]`, `i:0`; only read from stored entries, never produced here).
//!
//! Elements are totally ordered as structured-merge-diff orders them (fields, then keys, then
//! values, then indexes), which is the order FieldsV1 objects and conflict lists come in.

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Value};

/// One step of a field path.
#[derive(Debug, Clone)]
pub(crate) enum PathElement {
    /// A field of a struct or a key of a map.
    Field(String),
    /// A list-map element, by its key fields sorted by name.
    Key(Vec<(String, Value)>),
    /// A set element, by its value.
    Value(Value),
    /// A list index.
    Index(usize),
}

/// A path from the object's root.
pub(crate) type Path = Vec<PathElement>;

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The FieldsV1 key of this element: `f:name`, `k:{"a":1}`, `v:"x"`, `i:0`.
    pub(crate) fn to_fields_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut m = Map::new();
                for (k, v) in fields {
                    m.insert(k.clone(), v.clone());
                }
                format!("k:{}", Value::Object(m))
            }
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a FieldsV1 key. `Ok(None)` for a key of an unknown type (skipped, as
    /// structured-merge-diff skips them), `Err` for a malformed one.
    pub(crate) fn from_fields_key(key: &str) -> Result<Option<PathElement>, String> {
        let b = key.as_bytes();
        if b.len() < 2 {
            return Err(format!("key must be 2 characters long: {key:?}"));
        }
        if b[1] != b':' {
            return Err(format!("missing colon: {key:?}"));
        }
        let rest = &key[2..];
        match b[0] {
            b'f' => Ok(Some(PathElement::Field(rest.to_string()))),
            b'v' => serde_json::from_str::<Value>(rest)
                .map(|v| Some(PathElement::Value(v)))
                .map_err(|e| format!("parsing {key:?}: {e}")),
            b'k' => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(m)) => {
                    let mut fields: Vec<(String, Value)> = m.into_iter().collect();
                    fields.sort_by(|a, b| a.0.cmp(&b.0));
                    Ok(Some(PathElement::Key(fields)))
                }
                Ok(_) => Err(format!("parsing {key:?}: expected an object")),
                Err(e) => Err(format!("parsing {key:?}: {e}")),
            },
            b'i' => {
                rest.parse::<usize>().map(|i| Some(PathElement::Index(i))).map_err(|e| format!("parsing {key:?}: {e}"))
            }
            _ => Ok(None),
        }
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_field_lists(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// Lexical order of two key field lists: name, then value, element by element; a prefix first.
fn compare_field_lists(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        match an.cmp(bn).then_with(|| compare_values(av, bv)) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    a.len().cmp(&b.len())
}

/// structured-merge-diff's total order of values: numbers (ints and floats compared
/// numerically), then strings, booleans, lists, maps, null. `Equal` is deep equality with
/// `1 == 1.0`.
pub(crate) fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                match compare_values(p, q) {
                    Ordering::Equal => {}
                    o => return o,
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let mut xk: Vec<&String> = x.keys().collect();
            let mut yk: Vec<&String> = y.keys().collect();
            xk.sort();
            yk.sort();
            for (p, q) in xk.iter().zip(&yk) {
                match p.cmp(q).then_with(|| compare_values(&x[*p], &y[*q])) {
                    Ordering::Equal => {}
                    o => return o,
                }
            }
            xk.len().cmp(&yk.len())
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => rank(a).cmp(&rank(b)),
    }
}

fn compare_numbers(x: &serde_json::Number, y: &serde_json::Number) -> Ordering {
    let int = |n: &serde_json::Number| n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from));
    match (int(x), int(y)) {
        (Some(a), Some(b)) => a.cmp(&b),
        _ => {
            let (a, b) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            a.partial_cmp(&b).unwrap_or(Ordering::Equal)
        }
    }
}

/// Deep equality of two values, numbers compared numerically.
pub(crate) fn values_equal(a: &Value, b: &Value) -> bool {
    compare_values(a, b) == Ordering::Equal
}

/// A value as structured-merge-diff prints it in a path (`value.ToString`): strings quoted,
/// numbers and booleans bare, lists `[a,b]`, maps `k=v` run together.
fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => format!("[{}]", items.iter().map(value_to_string).collect::<Vec<_>>().join(",")),
        Value::Object(m) => m.iter().map(|(k, v)| format!("{k}={}", value_to_string(v))).collect::<String>(),
    }
}

impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={}", value_to_string(v))).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", value_to_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path as structured-merge-diff prints it: `.spec.containers[name="c"].image`.
pub(crate) fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(pairs: &[(&str, Value)]) -> PathElement {
        PathElement::Key(pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
    }

    #[test]
    fn fields_keys_round_trip() {
        let cases = [
            (PathElement::Field("image".into()), "f:image"),
            (
                key(&[("containerPort", json!(80)), ("protocol", json!("TCP"))]),
                r#"k:{"containerPort":80,"protocol":"TCP"}"#,
            ),
            (PathElement::Value(json!("example.com/fin")), r#"v:"example.com/fin""#),
            (PathElement::Index(3), "i:3"),
        ];
        for (pe, s) in cases {
            assert_eq!(pe.to_fields_key(), s);
            assert_eq!(PathElement::from_fields_key(s).unwrap().unwrap(), pe);
        }
        // Key fields are sorted on the way in.
        assert_eq!(
            PathElement::from_fields_key(r#"k:{"protocol":"TCP","containerPort":80}"#).unwrap().unwrap(),
            key(&[("containerPort", json!(80)), ("protocol", json!("TCP"))])
        );
        assert!(PathElement::from_fields_key("x:whatever").unwrap().is_none());
        assert!(PathElement::from_fields_key("f").is_err());
        assert!(PathElement::from_fields_key("k:[1]").is_err());
    }

    #[test]
    fn display_and_order() {
        let p = vec![
            PathElement::Field("spec".into()),
            PathElement::Field("ports".into()),
            key(&[("port", json!(80)), ("protocol", json!("TCP"))]),
            PathElement::Field("name".into()),
        ];
        assert_eq!(path_string(&p), r#".spec.ports[port=80,protocol="TCP"].name"#);
        assert_eq!(PathElement::Value(json!("a")).to_string(), r#"[="a"]"#);
        let mut v = [
            PathElement::Index(0),
            PathElement::Value(json!("b")),
            key(&[("name", json!("a"))]),
            PathElement::Field("z".into()),
            PathElement::Value(json!(2)),
            PathElement::Field("a".into()),
        ];
        v.sort();
        let shown: Vec<String> = v.iter().map(PathElement::to_fields_key).collect();
        assert_eq!(shown, ["f:a", "f:z", r#"k:{"name":"a"}"#, "v:2", r#"v:"b""#, "i:0"]);
        assert!(values_equal(&json!(1), &json!(1.0)));
        assert!(!values_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }
}
