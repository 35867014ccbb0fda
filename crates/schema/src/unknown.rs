//! Owns the one walk a write makes over an object against its schema ([`check_fields`]):
//! the fields the schema does not know, as kube-apiserver names them for
//! `fieldValidation` (`spec.containers[0].imagee`), pruned; the first value the kind's
//! Go type cannot hold ([`crate::decode`]), which kube-apiserver's typed decoding refuses;
//! and the typed values Go writes back differently, rewritten as kube-apiserver stores
//! them (`"1000m"` → `"1"`, `"2026-01-02T03:04:05.1+02:00"` → `"2026-01-02T01:04:05Z"`).
//!
//! Only what kube-apiserver decodes into Go types is rewritten: all of a built-in kind,
//! and a custom resource's root `metadata` (which it round-trips through `ObjectMeta`);
//! the rest of a custom resource is unstructured there, and stored as sent.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Write;

use serde_json::Value;

use crate::{decode, Schema, Schemas, Shape};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

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
    check_fields(schema, value, Typing::Off).unknown
}

/// Which values a [`check_fields`] walk checks against the Go types kube-apiserver decodes
/// objects into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typing<'k> {
    /// None: pruning only.
    Off,
    /// All of them: a built-in kind, whose schema is its Go types'.
    Builtin,
    /// Only the root's `metadata`, as the built-in ObjectMeta: a custom resource of kind
    /// `kind`, whose other fields its own schema's validation checks.
    Metadata { kind: &'k str },
}

/// What a [`check_fields`] walk found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checked {
    /// The paths of the fields the schema does not declare (now removed), in document order.
    pub unknown: Vec<String>,
    /// Why the object does not decode into its kind's Go type, in the words of
    /// kube-apiserver's decoder (`json: cannot unmarshal number into Go struct field
    /// ObjectMeta.metadata.labels of type string`), if it does not.
    pub decode_error: Option<String>,
}

/// One walk over `value` against `schema`: removes the fields it does not declare, and,
/// as `typing` says, finds the first value its Go type cannot hold, as decoding into
/// kube-apiserver's typed objects would (which then refuses the object), and rewrites the
/// typed times and quantities that decode in the form their Go types write
/// ([`decode::canonical`]). Linear in `value`; allocates only for what it reports or
/// rewrites.
pub fn check_fields(schema: Schema<'_>, value: &mut Value, typing: Typing<'_>) -> Checked {
    let object_meta = match typing {
        Typing::Metadata { .. } => Schemas::builtin().named(OBJECT_META),
        _ => None,
    };
    let mut w = Walk {
        path: String::new(),
        go_path: String::new(),
        unknown: Vec::new(),
        saved: None,
        fatal: None,
        object_meta,
    };
    match typing {
        Typing::Off => w.walk(schema, value, false, ""),
        Typing::Builtin => w.walk(schema, value, true, decode::struct_name(schema).unwrap_or("")),
        Typing::Metadata { kind } => w.walk(schema, value, false, kind),
    }
    Checked { unknown: w.unknown, decode_error: w.fatal.or(w.saved) }
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// The state of one [`check_fields`] walk.
struct Walk {
    /// Where the walk is, as fieldValidation names a field (`spec.containers[0].image`).
    path: String,
    /// Where the walk is, as Go's decoder names a field: struct fields only, no indexes or
    /// map keys (`spec.containers.image`).
    go_path: String,
    unknown: Vec<String>,
    /// The first type error Go's decoder would save and go on after.
    saved: Option<String>,
    /// The error Go's decoder would stop at (a type's own `UnmarshalJSON`'s).
    fatal: Option<String>,
    /// For a custom resource: the built-in ObjectMeta, which types its root's `metadata`.
    object_meta: Option<Schema<'static>>,
}

impl Walk {
    fn record(&mut self, e: decode::Mismatch, owner: &str) {
        if self.fatal.is_some() || (!e.hard && self.saved.is_some()) {
            return;
        }
        let message = match e.what {
            decode::What::Type { got, go_type } => {
                format!("json: cannot unmarshal {got} into Go struct field {owner}.{} of type {go_type}", self.go_path)
            }
            decode::What::Message(m) => m,
        };
        if e.hard {
            self.fatal = Some(message);
        } else {
            self.saved = Some(message);
        }
    }

    /// `owner` is the bare Go name of the innermost struct holding the value.
    fn walk<'a>(&mut self, schema: Schema<'a>, value: &mut Value, typed: bool, owner: &'a str) {
        let shape = schema.shape();
        // Once decoding has stopped, only pruning goes on.
        let typed = typed && self.fatal.is_none();
        if typed {
            let kind = decode::Kind::of(schema, shape);
            if let Some(e) = decode::mismatch(schema, kind, value) {
                self.record(e, owner);
                return;
            }
            if let Some(written) = decode::canonical(kind, value) {
                *value = written;
            }
        }
        match (shape, value) {
            (Shape::Struct, Value::Object(map)) => {
                let inner = if typed { decode::struct_name(schema).unwrap_or(owner) } else { owner };
                let mut unknown = Vec::new();
                for (key, child) in map.iter_mut() {
                    let (len, go_len) = (self.path.len(), self.go_path.len());
                    // A custom resource's own metadata is typed as the built-in ObjectMeta.
                    let object_meta = if len == 0 && key == "metadata" { self.object_meta } else { None };
                    push_key(&mut self.path, key);
                    match object_meta.or_else(|| schema.property(key)).or_else(|| schema.values()) {
                        Some(s) => {
                            let typed = typed || object_meta.is_some();
                            if typed {
                                push_key(&mut self.go_path, key);
                            }
                            self.walk(s, child, typed, inner);
                        }
                        None if schema.preserves_unknown_fields() => {}
                        None => {
                            self.unknown.push(self.path.clone());
                            unknown.push(key.clone());
                        }
                    }
                    self.path.truncate(len);
                    self.go_path.truncate(go_len);
                }
                if !unknown.is_empty() {
                    // One pass: removing keys one at a time shifts the rest each time,
                    // quadratic in a body of many unknown fields.
                    let unknown: HashSet<String> = unknown.into_iter().collect();
                    map.retain(|key, _| !unknown.contains(key));
                }
            }
            (Shape::Map, Value::Object(map)) => {
                if let Some(s) = schema.values() {
                    for (key, child) in map.iter_mut() {
                        let len = self.path.len();
                        push_key(&mut self.path, key);
                        self.walk(s, child, typed, owner);
                        self.path.truncate(len);
                    }
                }
            }
            (Shape::List, Value::Array(items)) => {
                if let Some(s) = schema.items() {
                    for (i, child) in items.iter_mut().enumerate() {
                        let len = self.path.len();
                        let _ = write!(self.path, "[{i}]");
                        self.walk(s, child, typed, owner);
                        self.path.truncate(len);
                    }
                }
            }
            _ => {}
        }
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
                Step::Index(i) => {
                    let _ = write!(path, "[{i}]");
                }
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

    /// `patch` merged into `target` (objects key by key, anything else replaced).
    fn merge(target: &mut Value, patch: Value) {
        match (target, patch) {
            (Value::Object(t), Value::Object(p)) => {
                for (k, v) in p {
                    merge(t.entry(k).or_insert(Value::Null), v);
                }
            }
            (t, p) => *t = p,
        }
    }

    fn decode_error(group: &str, kind: &str, mut obj: Value) -> Option<String> {
        let schema = Schemas::builtin().kind(group, "v1", kind).unwrap();
        check_fields(schema, &mut obj, Typing::Builtin).decode_error
    }

    fn deployment(spec: Value) -> Value {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}}}});
        merge(&mut d["spec"], spec);
        d
    }

    #[test]
    fn values_go_cannot_decode_are_named_as_go_names_them() {
        let cm = |meta: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta});
        assert_eq!(
            decode_error("", "ConfigMap", cm(json!({"name": "x", "labels": {"a": 1}}))).unwrap(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
        );
        assert_eq!(
            decode_error("", "ConfigMap", cm(json!({"name": "x", "labels": {"a": true}}))).unwrap(),
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of type string"
        );
        assert_eq!(
            decode_error("", "ConfigMap", cm(json!({"name": "x", "labels": {"a": {"b": "c"}}}))).unwrap(),
            "json: cannot unmarshal object into Go struct field ObjectMeta.metadata.labels of type string"
        );
        assert_eq!(
            decode_error("", "ConfigMap", cm(json!({"name": "x", "labels": ["a"]}))).unwrap(),
            "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"
        );
        assert_eq!(
            decode_error("", "ConfigMap", json!({"metadata": {"name": 7}})).unwrap(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.name of type string"
        );
        assert_eq!(
            decode_error("", "ConfigMap", json!({"metadata": "x"})).unwrap(),
            "json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta"
        );
        assert_eq!(
            decode_error("", "ConfigMap", json!({"data": {"a": 1}, "immutable": "yes"})).unwrap(),
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string",
            "the first error in document order"
        );

        let apps = |spec: Value| decode_error("apps", "Deployment", deployment(spec));
        for (replicas, got) in [
            (json!(1.5), "number 1.5"),
            (json!("3"), "string"),
            (json!(2147483648u64), "number 2147483648"),
            (json!(-2147483649i64), "number -2147483649"),
            (json!(true), "bool"),
        ] {
            assert_eq!(
                apps(json!({"replicas": replicas})).unwrap(),
                format!("json: cannot unmarshal {got} into Go struct field DeploymentSpec.spec.replicas of type int32")
            );
        }
        assert_eq!(apps(json!({"replicas": -1})), None, "-1 decodes; validation refuses it");
        assert_eq!(apps(json!({"replicas": 2147483647})), None);
        assert_eq!(
            apps(json!({"template": {"spec": {"containers": {"name": "c"}}}})).unwrap(),
            "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container"
        );
        assert_eq!(
            apps(json!({"template": {"spec": {"containers": ["c"]}}})).unwrap(),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.template.spec.containers of type v1.Container"
        );
        assert_eq!(
            apps(json!({"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 4294967296u64}]}]}}}))
                .unwrap(),
            "json: cannot unmarshal number 4294967296 into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32"
        );
        assert_eq!(
            apps(json!({"template": {"spec": {"terminationGracePeriodSeconds": 1e3}}})).unwrap(),
            "json: cannot unmarshal number 1000.0 into Go struct field PodSpec.spec.template.spec.terminationGracePeriodSeconds of type int64"
        );
        assert_eq!(
            apps(json!({"strategy": {"rollingUpdate": {"maxSurge": true}}})).unwrap(),
            "json: cannot unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32"
        );
        assert_eq!(apps(json!({"strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}})), None);
        let resources = |q: Value| {
            apps(json!({"template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": q}}}]}}}))
        };
        for ok in [json!("500m"), json!("1.5Gi"), json!(2), json!(0.5), json!(" 1 "), json!(null)] {
            assert_eq!(resources(ok.clone()), None, "{ok}");
        }
        for bad in [json!("1.5.5Gi"), json!(""), json!(true), json!({"a": 1}), json!("1Gb")] {
            assert_eq!(resources(bad.clone()).as_deref(), Some(decode::QUANTITY_FORMAT_WRONG), "{bad}");
        }
        assert_eq!(resources(json!("1ki")).as_deref(), Some(decode::QUANTITY_SUFFIX));
    }

    #[test]
    fn decoding_stops_at_a_type_s_own_error_and_keeps_the_first_other() {
        // A quantity's error stops decoding, and wins over a type error saved before it.
        let pod = json!({"metadata": {"labels": {"a": 1}}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"memory": "lots"}}, "image": 5}]}});
        assert_eq!(decode_error("", "Pod", pod).as_deref(), Some(decode::QUANTITY_FORMAT_WRONG));
        let pod = json!({"metadata": {"labels": {"a": 1}, "annotations": {"b": 2}}});
        assert_eq!(
            decode_error("", "Pod", pod).unwrap(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
        );
    }

    #[test]
    fn nulls_and_free_values_decode() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": null, "annotations": {"a": null},
            "creationTimestamp": null, "managedFields": [{"manager": "m", "operation": "Update", "fieldsV1": {"f:data": {}},
                "time": "2026-01-02T03:04:05Z"}]},
            "spec": {"containers": [{"name": "c", "image": "i", "args": null, "resources": {"limits": {"cpu": null}}}],
                     "nodeSelector": null, "securityContext": null}});
        assert_eq!(decode_error("", "Pod", pod), None);
        let secret =
            json!({"metadata": {"name": "s"}, "data": {"k": "aGVsbG8="}, "stringData": {"x": "y"}, "type": "Opaque"});
        assert_eq!(decode_error("", "Secret", secret), None);
        assert_eq!(
            decode_error("", "Secret", json!({"data": {"k": "not base64!"}})).unwrap(),
            "illegal base64 data at input byte 3"
        );
        assert_eq!(
            decode_error("", "Pod", json!({"metadata": {"creationTimestamp": "yesterday"}})).unwrap(),
            r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#
        );
        assert_eq!(
            decode_error("", "Pod", json!({"metadata": {"creationTimestamp": 5}})).unwrap(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"
        );
        let lease = Schemas::builtin().kind("coordination.k8s.io", "v1", "Lease").unwrap();
        let mut l = json!({"spec": {"renewTime": "2026-01-02T03:04:05.000000Z", "leaseDurationSeconds": 15}});
        assert_eq!(check_fields(lease, &mut l, Typing::Builtin).decode_error, None);
        let mut l = json!({"spec": {"renewTime": "2026-01-02T03:04:05Z"}});
        assert!(check_fields(lease, &mut l, Typing::Builtin)
            .decode_error
            .unwrap()
            .ends_with(r#"cannot parse "Z" as ".000000""#));
    }

    #[test]
    fn typed_times_and_quantities_are_stored_as_go_writes_them() {
        let s = Schemas::builtin();
        let pod = s.kind("", "v1", "Pod").unwrap();
        let mut obj = json!({"metadata": {"name": "p", "creationTimestamp": "2026-01-02T03:04:05.5+02:00",
                "deletionTimestamp": "0001-01-01T01:00:00+01:00", "managedFields": [{"manager": "m", "time": null}]},
            "spec": {"containers": [{"name": "c", "image": "i",
                "resources": {"limits": {"cpu": "1000m", "memory": "0.5Gi", "example.com/gpu": "+1"},
                              "requests": {"cpu": 0.5, "memory": 2, "ephemeral-storage": " 1e3 "}},
                "ports": [{"containerPort": 80}], "livenessProbe": {"httpGet": {"port": "http"}}}],
                "overhead": {"cpu": "1.0"}},
            "status": {"startTime": "2026-01-02T03:04:05Z"}});
        assert_eq!(check_fields(pod, &mut obj, Typing::Builtin).decode_error, None);
        assert_eq!(obj["metadata"]["creationTimestamp"], "2026-01-02T01:04:05Z");
        assert_eq!(obj["metadata"]["deletionTimestamp"], Value::Null, "Go's zero time is written as null");
        assert_eq!(obj["metadata"]["managedFields"][0]["time"], Value::Null);
        let c = &obj["spec"]["containers"][0];
        assert_eq!(c["resources"]["limits"], json!({"cpu": "1", "memory": "512Mi", "example.com/gpu": "+1"}));
        assert_eq!(c["resources"]["requests"], json!({"cpu": "500m", "memory": "2", "ephemeral-storage": "1e3"}));
        assert_eq!(c["livenessProbe"]["httpGet"]["port"], "http", "int-or-string as sent");
        assert_eq!(obj["spec"]["overhead"]["cpu"], "1");
        assert_eq!(obj["status"]["startTime"], "2026-01-02T03:04:05Z");

        let lease = s.kind("coordination.k8s.io", "v1", "Lease").unwrap();
        let mut l = json!({"spec": {"renewTime": "2026-01-02T03:04:05.123456+02:00",
            "acquireTime": "2026-01-02T03:04:05.000000-00:30", "leaseDurationSeconds": 15}});
        assert_eq!(check_fields(lease, &mut l, Typing::Builtin).decode_error, None);
        assert_eq!(l["spec"]["renewTime"], "2026-01-02T01:04:05.123456Z");
        assert_eq!(l["spec"]["acquireTime"], "2026-01-02T03:34:05.000000Z");

        let event = s.kind("", "v1", "Event").unwrap();
        let mut e = json!({"eventTime": "2026-01-02T03:04:05.000001+01:00", "lastTimestamp": "2026-01-02T03:04:05.9-01:00",
            "firstTimestamp": null, "series": {"count": 2, "lastObservedTime": "2026-01-02T03:04:05.123456Z"}});
        assert_eq!(check_fields(event, &mut e, Typing::Builtin).decode_error, None);
        assert_eq!(e["eventTime"], "2026-01-02T02:04:05.000001Z");
        assert_eq!(e["lastTimestamp"], "2026-01-02T04:04:05Z");
        assert_eq!(e["firstTimestamp"], Value::Null);
        assert_eq!(e["series"]["lastObservedTime"], "2026-01-02T03:04:05.123456Z", "canonical already");

        let mut d = deployment(json!({"strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}));
        let before = d.clone();
        let deploy = s.kind("apps", "v1", "Deployment").unwrap();
        assert_eq!(check_fields(deploy, &mut d, Typing::Builtin).decode_error, None);
        assert_eq!(d, before, "nothing to rewrite");
    }

    #[test]
    fn values_are_rewritten_only_where_typed_and_valid() {
        let s = Schemas::builtin();
        let pod = s.kind("", "v1", "Pod").unwrap();
        let sent = json!({"metadata": {"creationTimestamp": "2026-01-02T03:04:05+02:00"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1000m"}}}]}});
        let mut obj = sent.clone();
        assert!(check_fields(pod, &mut obj, Typing::Off).unknown.is_empty());
        assert_eq!(obj, sent, "pruning alone rewrites nothing");
        // A refused value is left as sent.
        let mut obj = json!({"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1000m", "memory": "1Gb"}}}]}});
        assert!(check_fields(pod, &mut obj, Typing::Builtin).decode_error.is_some());
        assert_eq!(obj["spec"]["containers"][0]["resources"]["limits"]["memory"], "1Gb");
        // A time whose UTC year has no four digits is kept as sent rather than written as
        // Go would (`-0001-...`), which nothing could read back.
        let mut obj = json!({"metadata": {"creationTimestamp": "0000-01-01T00:00:00+01:00"}});
        assert_eq!(check_fields(pod, &mut obj, Typing::Builtin).decode_error, None);
        assert_eq!(obj["metadata"]["creationTimestamp"], "0000-01-01T00:00:00+01:00");

        // A custom resource: its metadata is ObjectMeta (kube round-trips it), the rest as sent.
        let root = crate::custom::resource_schema(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "at": {"type": "string", "format": "date-time"}, "cpu": {"type": "string"},
                "size": {"x-kubernetes-int-or-string": true}}}}}));
        let cr = Schema::standalone(&root);
        let mut obj = json!({"metadata": {"name": "a", "creationTimestamp": "2026-01-02T03:04:05.5+02:00"},
            "spec": {"at": "2026-01-02T03:04:05.5+02:00", "cpu": "1000m", "size": "0.5Gi"}});
        assert_eq!(check_fields(cr, &mut obj, Typing::Metadata { kind: "CronTab" }).decode_error, None);
        assert_eq!(obj["metadata"]["creationTimestamp"], "2026-01-02T01:04:05Z");
        assert_eq!(obj["spec"], json!({"at": "2026-01-02T03:04:05.5+02:00", "cpu": "1000m", "size": "0.5Gi"}));
    }

    #[test]
    fn custom_resources_type_only_their_metadata() {
        let root = crate::custom::resource_schema(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}));
        let s = Schema::standalone(&root);
        let mut obj =
            json!({"metadata": {"name": "a", "labels": {"a": 1}, "bogus": 1}, "spec": {"replicas": "x", "y": 1}});
        let checked = check_fields(s, &mut obj, Typing::Metadata { kind: "CronTab" });
        assert_eq!(
            checked.decode_error.unwrap(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
        );
        assert_eq!(checked.unknown, ["metadata.bogus", "spec.y"]);
        let mut obj = json!({"metadata": 5, "spec": {"replicas": "x"}});
        assert_eq!(
            check_fields(s, &mut obj, Typing::Metadata { kind: "CronTab" }).decode_error.unwrap(),
            "json: cannot unmarshal number into Go struct field CronTab.metadata of type v1.ObjectMeta"
        );
        let mut obj = json!({"metadata": {"name": "a"}, "spec": {"replicas": "x"}});
        assert_eq!(check_fields(s, &mut obj, Typing::Metadata { kind: "CronTab" }).decode_error, None);
        assert_eq!(check_fields(s, &mut obj, Typing::Off), Checked::default());
    }
}
