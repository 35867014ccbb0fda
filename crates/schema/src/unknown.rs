//! Owns unknown-field detection: the fields of an object that its schema does not know,
//! as kube-apiserver names them for `fieldValidation` (`spec.containers[0].imagee`).

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::Value;

use crate::{Schema, Shape};

/// The paths of the fields in `value` that `schema` does not declare, in document order.
///
/// ```text
/// {"spec": {"replicas": 1, "replica": 2, "template": {"spec": {"containers": [{"imagee": "x"}]}}}}
///   -> ["spec.replica", "spec.template.spec.containers[0].imagee"]
/// ```
pub fn unknown_fields(schema: Schema<'_>, value: &Value) -> Vec<String> {
    let mut copy = value.clone();
    prune_unknown_fields(schema, &mut copy)
}

/// Removes the fields `schema` does not declare from `value`, as decoding into
/// kube-apiserver's typed objects drops them, and returns their paths.
pub fn prune_unknown_fields(schema: Schema<'_>, value: &mut Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(schema, value, &mut String::new(), &mut out);
    out
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn walk(schema: Schema<'_>, value: &mut Value, path: &mut String, out: &mut Vec<String>) {
    match (schema.shape(), value) {
        (Shape::Struct, Value::Object(map)) => {
            let mut unknown = Vec::new();
            for (key, child) in map.iter_mut() {
                let len = path.len();
                push_key(path, key);
                match schema.property(key).or_else(|| schema.values()) {
                    Some(s) => walk(s, child, path, out),
                    None if schema.preserves_unknown_fields() => {}
                    None => {
                        out.push(path.clone());
                        unknown.push(key.clone());
                    }
                }
                path.truncate(len);
            }
            for key in unknown {
                map.shift_remove(&key);
            }
        }
        (Shape::Map, Value::Object(map)) => {
            if let Some(s) = schema.values() {
                for (key, child) in map.iter_mut() {
                    let len = path.len();
                    push_key(path, key);
                    walk(s, child, path, out);
                    path.truncate(len);
                }
            }
        }
        (Shape::List, Value::Array(items)) => {
            if let Some(s) = schema.items() {
                for (i, child) in items.iter_mut().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(s, child, path, out);
                    path.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// The paths of keys that appear twice in one JSON object of `body` (which serde_json would
/// silently collapse to the last), in document order; empty when `body` is not JSON.
///
/// Runs on every JSON write body, so it only reads: keys are borrowed from `body` (unless
/// escaped), and a path is written out only for a duplicate.
pub fn duplicate_fields(body: &[u8]) -> Vec<String> {
    let mut scan = DupScan { path: Vec::new(), out: Vec::new() };
    let mut de = serde_json::Deserializer::from_slice(body);
    let _ = serde::de::DeserializeSeed::deserialize(&mut scan, &mut de);
    scan.out
}

/// Objects with more keys than this are checked with a hash set, smaller ones by a scan.
const SCAN_KEYS: usize = 16;

/// One step of the path to the value being read.
enum Step<'de> {
    Key(Cow<'de, str>),
    Index(usize),
}

/// Walks any JSON value, recording repeated keys.
struct DupScan<'de> {
    /// Where the walk is: the keys and indexes from the root.
    path: Vec<Step<'de>>,
    out: Vec<String>,
}

impl DupScan<'_> {
    fn record(&mut self) {
        let mut path = String::new();
        for step in &self.path {
            match step {
                Step::Key(k) => push_key(&mut path, k),
                Step::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        self.out.push(path);
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for &mut DupScan<'de> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for &mut DupScan<'de> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for i in 0.. {
            self.path.push(Step::Index(i));
            let more = seq.next_element_seed(&mut *self)?.is_some();
            self.path.pop();
            if !more {
                break;
            }
        }
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: Vec<Cow<'de, str>> = Vec::new();
        let mut many: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let repeated = if seen.len() < SCAN_KEYS {
                let repeated = seen.contains(&key);
                seen.push(key.clone());
                repeated
            } else {
                if many.is_empty() {
                    many.extend(seen.iter().cloned());
                }
                !many.insert(key.clone())
            };
            self.path.push(Step::Key(key));
            if repeated {
                self.record();
            }
            map.next_value_seed(&mut *self)?;
            self.path.pop();
        }
        Ok(())
    }
}

/// An object's key, borrowed from the body unless it has escapes.
struct KeySeed;

impl<'de> serde::de::DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(s))
    }
    fn visit_str<E>(self, s: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Schemas;
    use serde_json::json;

    #[test]
    fn names_every_unknown_field_with_its_path() {
        let s = Schemas::builtin();
        let deploy = s.kind("apps", "v1", "Deployment").unwrap();
        let obj = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"a": "b"}, "bogus": 1},
            "spec": {"replicas": 1, "replica": 2, "selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "imagee": "x"}]}}}});
        assert_eq!(
            unknown_fields(deploy, &obj),
            vec!["metadata.bogus", "spec.replica", "spec.template.spec.containers[1].imagee"]
        );
    }

    #[test]
    fn known_objects_and_free_maps_have_none() {
        let s = Schemas::builtin();
        let cm = s.kind("", "v1", "ConfigMap").unwrap();
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "annotations": {"any.key/x": "v"}},
            "data": {"whatever": "v"}, "immutable": false});
        assert!(unknown_fields(cm, &obj).is_empty());
        assert_eq!(unknown_fields(cm, &json!({"dat": {}})), vec!["dat"]);
    }

    #[test]
    fn preserved_fields_are_never_unknown() {
        let root = json!({"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
        let s = Schema::standalone(&root);
        assert!(unknown_fields(s, &json!({"spec": {"a": {"b": 1}}})).is_empty());
        assert_eq!(unknown_fields(s, &json!({"spec": {}, "x": 1})), vec!["x"]);
    }

    #[test]
    fn pruning_removes_exactly_the_unknown_fields() {
        let s = Schemas::builtin();
        let cm = s.kind("", "v1", "ConfigMap").unwrap();
        let mut obj = json!({"metadata": {"name": "x", "bogus": 1}, "data": {"a": "b"}, "dat": 2});
        assert_eq!(prune_unknown_fields(cm, &mut obj), vec!["metadata.bogus", "dat"]);
        assert_eq!(obj, json!({"metadata": {"name": "x"}, "data": {"a": "b"}}));
    }

    #[test]
    fn duplicate_keys_are_found_at_every_depth() {
        let body = br#"{"a": 1, "b": {"c": 1, "c": 2}, "l": [{"x": 1, "x": 1}], "a": 2}"#;
        assert_eq!(duplicate_fields(body), vec!["b.c", "l[0].x", "a"]);
        assert!(duplicate_fields(br#"{"a": {"a": 1}}"#).is_empty());
        assert!(duplicate_fields(b"not json").is_empty());
    }

    #[test]
    fn duplicate_keys_are_found_in_large_objects_and_escaped_keys() {
        let mut body = String::from("{");
        for i in 0..40 {
            body.push_str(&format!("\"k{i}\": {i}, "));
        }
        body.push_str(r#""k3": 0, "k39": {"\u0061": 1, "a": 2}}"#);
        assert_eq!(duplicate_fields(body.as_bytes()), vec!["k3", "k39", "k39.a"]);
        assert_eq!(duplicate_fields(br#"[{"a": [1, {"b": 1, "b": 2}]}]"#), vec!["[0].a[1].b"]);
    }
}
