//! Owns what a custom resource's schema (a CRD version's `openAPIV3Schema`) does to its
//! objects, as kube-apiserver's apiextensions server does it:
//!
//! - [`resource_schema`]: the schema objects are checked against: `apiVersion`, `kind` and
//!   `metadata` (the built-in ObjectMeta) declared at the root and in every
//!   `x-kubernetes-embedded-resource`, so that pruning ([`crate::unknown`]), field
//!   ownership and defaulting treat them as they do a built-in kind's.
//! - [`apply_defaults`]: each absent field's `default`; a `null` where the schema does not
//!   allow one is defaulted, or dropped when there is no default.
//! - [`validate`]: the OpenAPI checks kube-openapi makes (type, nullable,
//!   int-or-string, enum, required, minimum/maximum, multipleOf, minLength/maxLength,
//!   pattern, minItems/maxItems, min/maxProperties, basic string formats), and an embedded
//!   resource's `apiVersion` and `kind`, each a field error with kube's path and message:
//!
//! ```text
//! {"spec": {"replicas": "3"}}   schema spec.replicas: {type: integer}
//!   -> spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"
//! ```
//!
//! - [`definitions`]: the kind's and its list's definitions served in `/openapi/v3`.

use std::collections::HashMap;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::{Mutex, OnceLock};

use kuorum_api::validation::{go_float, BadValue, FieldError};
use serde_json::{json, Map, Number, Value};

use crate::Schemas;

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const SCHEMA_PREFIX: &str = "#/components/schemas/";

/// The fields every resource has besides what its schema says.
const RESOURCE_META: &[&str] = &["apiVersion", "kind", "metadata"];

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

fn is_resource(s: &Value) -> bool {
    flag(s, "x-kubernetes-embedded-resource")
}

/// The description the built-in kinds give `field` of their root.
fn meta_description(field: &str) -> Value {
    Schemas::builtin()
        .named("io.k8s.api.core.v1.ConfigMap")
        .and_then(|cm| cm.property(field))
        .and_then(|p| p.description())
        .map(Value::from)
        .unwrap_or(Value::Null)
}

/// `schema` as objects are checked against it: `apiVersion` and `kind` declared strings and
/// `metadata` the built-in ObjectMeta at the root and in every embedded resource, and an
/// object that declares neither properties nor additional properties (nor preserves
/// unknown fields) declared empty, so that everything in it is pruned, as kube-apiserver
/// prunes it. A missing schema is an object that keeps whatever it is given.
pub fn resource_schema(schema: &Value) -> Value {
    let mut root = if schema.is_object() {
        schema.clone()
    } else {
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    };
    close_empty_objects(&mut root);
    let meta = Schemas::builtin().inlined(OBJECT_META).unwrap_or_else(|| json!({"type": "object"}));
    declare_resource_meta(&mut root, &meta);
    root
}

/// Gives `properties: {}` to every object node that says nothing of its fields.
fn close_empty_objects(node: &mut Value) {
    let Value::Object(m) = node else { return };
    let says_nothing = m.get("type").and_then(Value::as_str) == Some("object")
        && !m.contains_key("properties")
        && !m.contains_key("additionalProperties")
        && m.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) != Some(true);
    if says_nothing {
        m.insert("properties".into(), json!({}));
    }
    for (key, child) in m.iter_mut() {
        match (key.as_str(), child) {
            ("properties", Value::Object(props)) => props.values_mut().for_each(close_empty_objects),
            ("items" | "additionalProperties", child) => close_empty_objects(child),
            _ => {}
        }
    }
}

fn declare_resource_meta(node: &mut Value, meta: &Value) {
    let Value::Object(m) = node else { return };
    let props = m.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(props) = props {
        for field in ["apiVersion", "kind"] {
            let mut s = json!({"type": "string"});
            s["description"] = meta_description(field);
            props.insert(field.into(), s);
        }
        props.insert("metadata".into(), meta.clone());
    }
    m.entry("type").or_insert_with(|| json!("object"));
    embed_resources_below(node, meta);
}

/// Declares resource metadata in every embedded resource under `node` (not `node` itself).
fn embed_resources_below(node: &mut Value, meta: &Value) {
    let Value::Object(m) = node else { return };
    for (key, child) in m.iter_mut() {
        match key.as_str() {
            "properties" => {
                if let Value::Object(props) = child {
                    for (name, p) in props.iter_mut() {
                        if RESOURCE_META.contains(&name.as_str()) && p == meta {
                            continue;
                        }
                        visit_schema(p, meta);
                    }
                }
            }
            "items" | "additionalProperties" => visit_schema(child, meta),
            _ => {}
        }
    }
}

fn visit_schema(node: &mut Value, meta: &Value) {
    if is_resource(node) {
        declare_resource_meta(node, meta);
    } else {
        embed_resources_below(node, meta);
    }
}

// ---- Defaults -------------------------------------------------------------------------

/// Fills in `value`'s absent fields from the `default`s of `schema` (a [`resource_schema`]),
/// top-down, so a defaulted object gets its own fields' defaults too. A `null` in a field
/// that is not `nullable` counts as absent, and is dropped when there is no default, as
/// kube-apiserver prunes it.
pub fn apply_defaults(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(m) => {
            let props = schema.get("properties").and_then(Value::as_object);
            if let Some(props) = props {
                for (key, ps) in props {
                    match m.get(key) {
                        None => {
                            if let Some(d) = ps.get("default") {
                                m.insert(key.clone(), d.clone());
                            }
                        }
                        Some(Value::Null) if !flag(ps, "nullable") => match ps.get("default") {
                            Some(d) => {
                                m.insert(key.clone(), d.clone());
                            }
                            None => {
                                m.shift_remove(key);
                            }
                        },
                        Some(_) => {}
                    }
                }
            }
            let extra = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, child) in m.iter_mut() {
                if let Some(s) = props.and_then(|p| p.get(key)).or(extra) {
                    apply_defaults(s, child);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items").filter(|i| i.is_object()) {
                for item in items {
                    apply_defaults(s, item);
                }
            }
        }
        _ => {}
    }
}

// ---- Validation -----------------------------------------------------------------------

/// The errors of `object` against `schema` (a [`resource_schema`]), in the order
/// kube-openapi finds them; the resource metadata (`apiVersion`, `kind`, `metadata`) is
/// left to the server's own checks, as kube-apiserver does.
pub fn validate(schema: &Value, object: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    node(schema, object, "", true, &mut errs);
    errs
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The JSON type name kube-openapi gives a decoded value.
fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn node(s: &Value, v: &Value, path: &str, resource: bool, errs: &mut Vec<FieldError>) {
    if !type_matches(s, v, path, errs) || v.is_null() {
        return;
    }
    match v {
        Value::String(x) => string(s, x, path, errs),
        Value::Number(n) => number(s, n, path, errs),
        Value::Array(items) => array(s, items, path, errs),
        _ => {}
    }
    enumeration(s, v, path, errs);
    if let Value::Object(m) = v {
        object(s, m, path, resource || is_resource(s), errs);
    }
}

/// The type check, first of all: a mismatch is the node's only error.
fn type_matches(s: &Value, v: &Value, path: &str, errs: &mut Vec<FieldError>) -> bool {
    let types: Vec<&str> = if flag(s, "x-kubernetes-int-or-string") {
        vec!["integer", "string"]
    } else {
        match s.get("type").and_then(Value::as_str) {
            Some(t) if !t.is_empty() => vec![t],
            _ => return true,
        }
    };
    let actual = type_of(v);
    let ok = match actual {
        "null" => flag(s, "nullable"),
        "integer" => types.contains(&"integer") || types.contains(&"number"),
        // An integral float (`1.0`) is an integer.
        "number" => {
            types.contains(&"number") || (types.contains(&"integer") && v.as_f64().is_some_and(|f| f == f.trunc()))
        }
        other => types.contains(&other),
    };
    if !ok {
        errs.push(FieldError::type_invalid(
            path,
            BadValue::Str(actual.into()),
            format!("{path} in body must be of type {}: {actual:?}", types.join(",")),
        ));
    }
    ok
}

fn string(s: &Value, x: &str, path: &str, errs: &mut Vec<FieldError>) {
    let len = x.chars().count() as i64;
    if let Some(max) = s.get("maxLength").and_then(Value::as_i64) {
        if len > max {
            errs.push(FieldError::too_long(path, max));
        }
    }
    if let Some(min) = s.get("minLength").and_then(Value::as_i64) {
        if len < min {
            errs.push(FieldError::invalid(path, x, format!("{path} in body should be at least {min} chars long")));
        }
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str) {
        if matches_pattern(pattern, x) == Some(false) {
            errs.push(FieldError::invalid(path, x, format!("{path} in body should match '{pattern}'")));
        }
    }
    if let Some(format) = s.get("format").and_then(Value::as_str) {
        if !format_ok(format, x) {
            errs.push(FieldError::type_invalid(
                path,
                BadValue::Str(x.into()),
                format!("{path} in body must be of type {format}: {x:?}"),
            ));
        }
    }
}

/// The `pattern`s of a CRD version's schema (at `path`) that are not valid regular
/// expressions, as kube-apiserver refuses them when the CRD is written.
pub fn invalid_patterns(schema: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut todo = vec![(schema, path.to_string())];
    while let Some((node, path)) = todo.pop() {
        if let Some(p) = node.get("pattern").and_then(Value::as_str) {
            if let Err(e) = regex::Regex::new(p) {
                let why = e.to_string().lines().last().unwrap_or("").trim().to_string();
                errs.push(FieldError::invalid(
                    &format!("{path}.pattern"),
                    p,
                    format!("must be a valid regular expression, but isn't: {why}"),
                ));
            }
        }
        for (key, child) in node.get("properties").and_then(Value::as_object).into_iter().flatten() {
            todo.push((child, format!("{path}.properties[{key}]")));
        }
        for key in ["items", "additionalProperties"] {
            if let Some(child) = node.get(key).filter(|c| c.is_object()) {
                todo.push((child, format!("{path}.{key}")));
            }
        }
    }
    errs.sort_by(|a, b| a.field.cmp(&b.field));
    errs
}

/// Whether `x` matches `pattern` (unanchored, as Go's `regexp.MatchString`); `None` when
/// the pattern does not compile (which CRD validation would have refused). Compiled
/// patterns are kept: every write of a kind checks the same few.
fn matches_pattern(pattern: &str, x: &str) -> Option<bool> {
    static COMPILED: OnceLock<Mutex<HashMap<String, Option<regex::Regex>>>> = OnceLock::new();
    let mut cache = COMPILED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() > 1024 {
        cache.clear();
    }
    let re = cache.entry(pattern.to_string()).or_insert_with(|| regex::Regex::new(pattern).ok());
    re.as_ref().map(|re| re.is_match(x))
}

/// The string formats kube-apiserver validates; others are accepted as they are.
fn format_ok(format: &str, x: &str) -> bool {
    let all = |s: &str, f: fn(char) -> bool| !s.is_empty() && s.chars().all(f);
    let hex = |c: char| c.is_ascii_hexdigit();
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let date = |d: &str| {
        let p: Vec<&str> = d.split('-').collect();
        p.len() == 3 && digits(p[0], 4) && digits(p[1], 2) && digits(p[2], 2)
    };
    match format {
        "date" => date(x),
        "date-time" | "datetime" => {
            let Some((d, t)) = x.split_once(['T', 't', ' ']) else { return false };
            let clock = t.trim_end_matches(['Z', 'z']);
            let clock = clock.split(['+', '-']).next().unwrap_or("");
            let hms: Vec<&str> = clock.split('.').next().unwrap_or("").split(':').collect();
            date(d) && hms.len() == 3 && hms.iter().all(|p| digits(p, 2)) && t.len() > clock.len()
        }
        "uuid" | "uuid3" | "uuid4" | "uuid5" => {
            let compact: String = x.chars().filter(|c| *c != '-').collect();
            compact.len() == 32 && all(&compact, hex) && x.len() - compact.len() <= 4
        }
        "byte" => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD.decode(x).is_ok()
        }
        "ipv4" => x.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => x.parse::<Ipv6Addr>().is_ok(),
        "cidr" => x.split_once('/').is_some_and(|(ip, bits)| {
            let bits = bits.parse::<u8>().ok();
            match (ip.parse::<Ipv4Addr>(), ip.parse::<Ipv6Addr>(), bits) {
                (Ok(_), _, Some(b)) => b <= 32,
                (_, Ok(_), Some(b)) => b <= 128,
                _ => false,
            }
        }),
        "hostname" => {
            x.len() <= 255
                && x.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                })
        }
        "email" => x.split_once('@').is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.')),
        "mac" => {
            let parts: Vec<&str> = x.split([':', '-']).collect();
            matches!(parts.len(), 6 | 8 | 20) && parts.iter().all(|p| p.len() == 2 && all(p, hex))
        }
        _ => true,
    }
}

/// A bound as kube-openapi prints it: an integer against integer data, else Go's `%v`.
fn bound(b: f64, data_is_int: bool) -> String {
    if data_is_int && b == b.trunc() && b.abs() < 9.2e18 {
        (b as i64).to_string()
    } else {
        go_float(b)
    }
}

fn number(s: &Value, n: &Number, path: &str, errs: &mut Vec<FieldError>) {
    let Some(x) = n.as_f64() else { return };
    let is_int = n.is_i64() || n.is_u64();
    let value = || BadValue::of_json(&Value::Number(n.clone()));
    if let Some(m) = s.get("multipleOf").and_then(Value::as_f64).filter(|m| *m > 0.0) {
        let q = x / m;
        if (q - q.round()).abs() > 1e-9 {
            errs.push(FieldError::invalid_value(
                path,
                value(),
                format!("{path} in body should be a multiple of {}", bound(m, is_int)),
            ));
        }
    }
    if let Some(max) = s.get("maximum").and_then(Value::as_f64) {
        let exclusive = flag(s, "exclusiveMaximum");
        if x > max || (exclusive && x == max) {
            let how = if exclusive { "less than" } else { "less than or equal to" };
            errs.push(FieldError::invalid_value(
                path,
                value(),
                format!("{path} in body should be {how} {}", bound(max, is_int)),
            ));
        }
    }
    if let Some(min) = s.get("minimum").and_then(Value::as_f64) {
        let exclusive = flag(s, "exclusiveMinimum");
        if x < min || (exclusive && x == min) {
            let how = if exclusive { "greater than" } else { "greater than or equal to" };
            errs.push(FieldError::invalid_value(
                path,
                value(),
                format!("{path} in body should be {how} {}", bound(min, is_int)),
            ));
        }
    }
}

fn array(s: &Value, items: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    if let Some(item_schema) = s.get("items").filter(|i| i.is_object()) {
        for (i, item) in items.iter().enumerate() {
            node(item_schema, item, &format!("{path}[{i}]"), false, errs);
        }
    }
    let n = items.len() as i64;
    if let Some(min) = s.get("minItems").and_then(Value::as_i64) {
        if n < min {
            errs.push(FieldError::invalid_value(
                path,
                BadValue::Raw(n.to_string()),
                format!("{path} in body should have at least {min} items"),
            ));
        }
    }
    if let Some(max) = s.get("maxItems").and_then(Value::as_i64) {
        if n > max {
            errs.push(FieldError::too_many(path, n, max));
        }
    }
}

/// Equal as JSON values, numbers by value (`1` is `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn enumeration(s: &Value, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(allowed) = s.get("enum").and_then(Value::as_array) else { return };
    if allowed.is_empty() || allowed.iter().any(|a| same(a, v)) {
        return;
    }
    let shown: Vec<String> =
        allowed.iter().map(|a| a.as_str().map(str::to_string).unwrap_or_else(|| a.to_string())).collect();
    errs.push(FieldError::not_supported_value(path, BadValue::of_json(v), &shown));
}

fn object(s: &Value, m: &Map<String, Value>, path: &str, resource: bool, errs: &mut Vec<FieldError>) {
    let n = m.len() as i64;
    if let Some(max) = s.get("maxProperties").and_then(Value::as_i64) {
        if n > max {
            errs.push(FieldError::too_many(path, n, max));
        }
    }
    if let Some(min) = s.get("minProperties").and_then(Value::as_i64) {
        if n < min {
            errs.push(FieldError::invalid_value(
                path,
                BadValue::Raw(n.to_string()),
                format!("{path} in body should have at least {min} properties"),
            ));
        }
    }
    let skip = |key: &str| resource && RESOURCE_META.contains(&key);
    // An embedded resource says what it is.
    if resource && !path.is_empty() {
        for key in ["apiVersion", "kind"] {
            match m.get(key) {
                None => errs.push(FieldError::required(&child_path(path, key), "must not be empty")),
                Some(Value::String(v)) if v.is_empty() => {
                    errs.push(FieldError::invalid(&child_path(path, key), v, "must not be empty"))
                }
                Some(Value::String(_)) => {}
                Some(v) => errs.push(FieldError::invalid_value(
                    &child_path(path, key),
                    BadValue::of_json(v),
                    "must be a string",
                )),
            }
        }
    }
    for key in s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
        if !m.contains_key(key) && !skip(key) {
            errs.push(FieldError::required(&child_path(path, key), ""));
        }
    }
    let props = s.get("properties").and_then(Value::as_object);
    let extra = s.get("additionalProperties").filter(|a| a.is_object());
    for (key, child) in m {
        if skip(key) {
            continue;
        }
        if let Some(ps) = props.and_then(|p| p.get(key)).or(extra) {
            node(ps, child, &child_path(path, key), false, errs);
        }
    }
}

// ---- OpenAPI definitions ----------------------------------------------------------------

/// The definition name of a custom kind, as kube-apiserver publishes it: the group's
/// labels reversed, then the version and kind (`stable.example.com`, `v1`, `CronTab` ->
/// `com.example.stable.v1.CronTab`).
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// The kind's and its list's definitions for `/openapi/v3`, from the version's
/// `openAPIV3Schema`: the schema with `apiVersion`, `kind` and `metadata` (a reference to
/// ObjectMeta) declared, and a list of them, each with its `x-kubernetes-group-version-kind`.
pub fn definitions(group: &str, version: &str, kind: &str, list_kind: &str, schema: &Value) -> Map<String, Value> {
    let name = definition_name(group, version, kind);
    let mut object = if schema.is_object() { schema.clone() } else { json!({"type": "object"}) };
    if let Value::Object(o) = &mut object {
        let props = o.entry("properties").or_insert_with(|| json!({}));
        if let Value::Object(props) = props {
            for field in ["apiVersion", "kind"] {
                props.insert(field.into(), json!({"description": meta_description(field), "type": "string"}));
            }
            props.insert(
                "metadata".into(),
                json!({"description": meta_description("metadata"),
                       "allOf": [{"$ref": format!("{SCHEMA_PREFIX}{OBJECT_META}")}]}),
            );
        }
        o.entry("type").or_insert_with(|| json!("object"));
        o.insert("x-kubernetes-group-version-kind".into(), json!([{"group": group, "kind": kind, "version": version}]));
    }
    let list = json!({
        "description": format!("{list_kind} is a list of {kind}"),
        "required": ["items"],
        "type": "object",
        "properties": {
            "apiVersion": {"description": meta_description("apiVersion"), "type": "string"},
            "kind": {"description": meta_description("kind"), "type": "string"},
            "items": {
                "description": format!(
                    "List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                    kind.to_lowercase()
                ),
                "type": "array",
                "items": {"$ref": format!("{SCHEMA_PREFIX}{name}")},
            },
            "metadata": {
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "allOf": [{"$ref": format!("{SCHEMA_PREFIX}{LIST_META}")}],
            },
        },
        "x-kubernetes-group-version-kind": [{"group": group, "kind": list_kind, "version": version}],
    });
    let mut out = Map::new();
    out.insert(name.clone(), object);
    out.insert(definition_name(group, version, list_kind), list);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unknown::prune_unknown_fields;
    use crate::{Schema, Shape};

    fn crontab() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "required": ["cronSpec"], "properties": {
                "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                "image": {"type": "string", "minLength": 2, "maxLength": 5},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.5},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "port": {"x-kubernetes-int-or-string": true},
                "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
                "when": {"type": "string", "format": "date-time"},
                "note": {"type": "string", "nullable": true},
                "opts": {"type": "object", "default": {}, "properties": {"depth": {"type": "integer", "default": 3}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                             "properties": {"spec": {"type": "object"}}}}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}})
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::to_string).collect()
    }

    #[test]
    fn resource_metadata_is_declared_at_the_root_and_in_embedded_resources() {
        let s = resource_schema(&crontab());
        let root = Schema::standalone(&s);
        assert_eq!(root.property("metadata").unwrap().property("labels").unwrap().shape(), Shape::Map);
        assert_eq!(root.property("kind").unwrap().shape(), Shape::Scalar);
        let template = root.property("spec").unwrap().property("template").unwrap();
        assert!(template.property("metadata").unwrap().property("name").is_some());
        let mut obj = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "a", "bogus": 1},
            "spec": {"cronSpec": "* * * * *", "extra": 1, "free": {"any": {"thing": 1}},
                     "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "x": 1}, "spec": {}, "y": 2}},
            "unknown": true});
        let pruned = prune_unknown_fields(Schema::standalone(&s), &mut obj);
        assert_eq!(pruned, ["metadata.bogus", "spec.extra", "spec.template.metadata.x", "spec.template.y", "unknown"]);
        assert_eq!(obj["spec"]["free"], json!({"any": {"thing": 1}}));
        // An object schema that says nothing of its fields keeps none of them.
        let closed = resource_schema(&json!({"type": "object", "properties": {"spec": {"type": "object"},
            "list": {"type": "array", "items": {"type": "object"}}}}));
        let mut obj = json!({"spec": {"a": 1}, "list": [{"b": 2}], "c": 3});
        assert_eq!(prune_unknown_fields(Schema::standalone(&closed), &mut obj), ["spec.a", "list[0].b", "c"]);
        assert_eq!(obj, json!({"spec": {}, "list": [{}]}));
        // A CRD without a schema keeps everything but unknown metadata.
        let any = resource_schema(&Value::Null);
        let mut obj = json!({"spec": {"a": 1}, "metadata": {"name": "x", "nope": 1}});
        assert_eq!(prune_unknown_fields(Schema::standalone(&any), &mut obj), ["metadata.nope"]);
    }

    #[test]
    fn defaults_fill_absent_fields_top_down() {
        let s = resource_schema(&crontab());
        let mut obj = json!({"spec": {"cronSpec": "x", "mode": "b", "image": null, "note": null}});
        apply_defaults(&s, &mut obj);
        assert_eq!(
            obj["spec"],
            json!({"cronSpec": "x", "mode": "b", "note": null, "replicas": 1, "opts": {"depth": 3}}),
            "absent and null fields defaulted, a non-nullable null without default dropped"
        );
    }

    #[test]
    fn validation_speaks_kube_openapi() {
        let s = resource_schema(&crontab());
        let ok = json!({"apiVersion": "x/v1", "kind": "CronTab", "metadata": {"name": "a"},
            "spec": {"cronSpec": "*/5 * * * *", "image": "nginx", "replicas": 3.0, "port": "http", "tags": ["a"],
                     "when": "2026-01-02T03:04:05Z", "note": null, "labels": {"a": "b"}}});
        assert!(validate(&s, &ok).is_empty(), "{:?}", messages(&validate(&s, &ok)));
        let bad = json!({"metadata": {"name": 7}, "spec": {
            "image": "x", "replicas": "3", "ratio": 1.5, "mode": "c", "port": true, "tags": [],
            "when": "yesterday", "labels": {"a": "long"}, "opts": {"depth": 1.5}}});
        assert_eq!(
            messages(&validate(&s, &bad)),
            [
                "spec.cronSpec: Required value",
                "spec.image: Invalid value: \"x\": spec.image in body should be at least 2 chars long",
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5",
                "spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\"",
                "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
                "spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\"",
                "spec.labels.a: Too long: may not be more than 3 bytes",
                "spec.opts.depth: Invalid value: \"number\": spec.opts.depth in body must be of type integer: \"number\"",
            ]
        );
        let more = json!({"spec": {"cronSpec": "nope", "replicas": 0, "tags": ["a", "b", 3], "image": "toolong"}});
        assert_eq!(
            messages(&validate(&s, &more)),
            [
                "spec.cronSpec: Invalid value: \"nope\": spec.cronSpec in body should match \
                 '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'",
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
                "spec.tags[2]: Invalid value: \"integer\": spec.tags[2] in body must be of type string: \"integer\"",
                "spec.tags: Too many: 3: must have at most 2 items",
                "spec.image: Too long: may not be more than 5 bytes",
            ]
        );
        let embedded = json!({"spec": {"cronSpec": "* * * * *", "template": {"kind": "", "spec": {}}}});
        assert_eq!(
            messages(&validate(&s, &embedded)),
            [
                "spec.template.apiVersion: Required value: must not be empty",
                "spec.template.kind: Invalid value: \"\": must not be empty",
            ]
        );
        let null = json!({"spec": {"cronSpec": "* * * * *", "tags": [null]}});
        assert_eq!(
            messages(&validate(&s, &null)),
            ["spec.tags[0]: Invalid value: \"null\": spec.tags[0] in body must be of type string: \"null\""]
        );
    }

    #[test]
    fn patterns_must_compile() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z"},
            "b": {"type": "array", "items": {"type": "string", "pattern": "^ok$"}}}});
        let errs = invalid_patterns(&schema, "spec.versions[0].schema.openAPIV3Schema");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.versions[0].schema.openAPIV3Schema.properties[a].pattern");
        assert!(errs[0].detail.starts_with("must be a valid regular expression, but isn't: "), "{}", errs[0].detail);
        assert!(invalid_patterns(&crontab(), "x").is_empty());
    }

    #[test]
    fn formats() {
        for (f, good, bad) in [
            ("date", "2026-11-21", "2026-1-21"),
            ("date-time", "2026-11-21T23:45:28.5+01:00", "2026-11-21"),
            ("uuid", "0e1b1d2c-3f4a-4b5c-8d6e-7f8091a2b3c4", "0e1b1d2c"),
            ("byte", "aGVsbG8=", "not base64!"),
            ("ipv4", "10.0.0.1", "10.0.0.256"),
            ("ipv6", "fe80::1", "fe80:::1"),
            ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
            ("hostname", "a-b.example.com", "-a.example.com"),
            ("email", "a@example.com", "a.example.com"),
            ("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b"),
            ("whatever", "anything", ""),
        ] {
            assert!(format_ok(f, good), "{f} {good}");
            assert!(f == "whatever" || !format_ok(f, bad), "{f} {bad}");
        }
    }

    #[test]
    fn published_definitions() {
        let defs = definitions("stable.example.com", "v1", "CronTab", "CronTabList", &crontab());
        let names: Vec<&String> = defs.keys().collect();
        assert_eq!(names, ["com.example.stable.v1.CronTab", "com.example.stable.v1.CronTabList"]);
        let kind = &defs["com.example.stable.v1.CronTab"];
        assert_eq!(
            kind["x-kubernetes-group-version-kind"],
            json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
        );
        assert_eq!(
            kind["properties"]["metadata"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(kind["properties"]["apiVersion"]["description"].as_str().unwrap().starts_with("APIVersion defines"));
        assert_eq!(kind["properties"]["spec"]["properties"]["replicas"]["maximum"], 10);
        let list = &defs["com.example.stable.v1.CronTabList"];
        assert_eq!(list["properties"]["items"]["items"]["$ref"], "#/components/schemas/com.example.stable.v1.CronTab");
        assert_eq!(list["x-kubernetes-group-version-kind"][0]["kind"], "CronTabList");
    }
}
