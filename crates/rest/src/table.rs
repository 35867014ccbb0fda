//! The `meta.k8s.io` Table representation of objects, as kube-apiserver serves it to
//! `kubectl get` (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), and the
//! PartialObjectMetadata(List) views of the metadata-only clients.
//!
//! A built-in kind's columns and cells are its strategy's (`kuorum_api::kinds`, after
//! kube-apiserver's printers, which the server always runs with `Wide: true`: every
//! column, including the `priority: 1` ones that kubectl shows only with `-o wide`). A custom resource gets `Name`
//! and its version's `additionalPrinterColumns` (`Age` when it has none), each cell read
//! at the column's simple JSONPath (`.spec.replicas`, `.status.items[0].name`) and typed as
//! the column says, as the apiextensions server's table convertor does. Ages are
//! [`human_duration`]s from the node's clock.
//!
//! A Table carries `metadata.resourceVersion` (the list's, or the object's), `continue`
//! and `remainingItemCount` from the list, and per row the object as `includeObject` asks:
//! `Metadata` (default) a PartialObjectMetadata, `Object` the whole object, `None` null.
//! In a watch, only the first event's Table has `columnDefinitions`; later ones send
//! `null`, as kube-apiserver does to save bandwidth (kubectl reuses the last columns).

use kuorum_api::kinds::printing::{self, human_duration, name, str_at, Column, Row, CREATED_DOC, NAME};
use kuorum_api::kinds::{self};
use kuorum_api::time::unix_seconds;
use kuorum_api::{ApiError, Reason, ResourceDef};
use serde_json::{json, Map, Value};

use crate::custom::CustomRef;
use crate::negotiate::MetaVersion;
use crate::object::{parse_stored, to_served};
use crate::query::Query;
use crate::target::Target;

// ---- Columns and rows of built-in kinds: each kind's strategy ----------------------------

/// The columns of `def`'s Tables: its kind's, or the default convertor's.
pub(crate) fn columns(def: &ResourceDef) -> &'static [Column] {
    kinds::of(def).map_or(printing::DEFAULT_COLUMNS, |s| s.columns())
}

/// The row of `obj` (an object of `def`), with ages measured at `now` (Unix seconds).
pub(crate) fn row(def: &ResourceDef, obj: &Value, now: i64) -> Row {
    match kinds::of(def) {
        Some(s) => s.row(obj, now),
        None => printing::default_row(obj),
    }
}

fn column_json(c: &Column) -> Value {
    c.to_json()
}

// ---- Custom resources --------------------------------------------------------------------

/// The column definitions of a custom resource's Tables: `Name`, then its version's
/// printer columns, or the `Age` column kube-apiserver serves when there are none.
fn custom_columns(c: &CustomRef) -> Vec<Value> {
    let mut out = vec![column_json(&NAME)];
    if c.columns().is_empty() {
        out.push(json!({"name": "Age", "type": "date", "format": "", "description": CREATED_DOC, "priority": 0}));
    }
    for col in c.columns() {
        out.push(json!({"name": col.name, "type": col.column_type, "format": col.format,
                        "description": col.description, "priority": col.priority}));
    }
    out
}

/// The cells of a custom resource's row.
fn custom_cells(c: &CustomRef, obj: &Value, now: i64) -> Vec<Value> {
    let mut cells = vec![Value::from(name(obj))];
    if c.columns().is_empty() {
        cells.push(cell("date", json_path(obj, ".metadata.creationTimestamp"), now));
    }
    for col in c.columns() {
        cells.push(cell(&col.column_type, json_path(obj, &col.json_path), now));
    }
    cells
}

/// The value at a simple JSONPath: `.a.b`, with list indexes (`.a[0].b`); braces, as in
/// `{.a.b}`, are allowed.
pub(crate) fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim();
    let path = path.strip_prefix('{').and_then(|p| p.strip_suffix('}')).unwrap_or(path);
    let mut v = obj;
    for seg in path.split('.').filter(|s| !s.is_empty()) {
        let (field, indexes) = match seg.find('[') {
            Some(i) => (&seg[..i], &seg[i..]),
            None => (seg, ""),
        };
        if !field.is_empty() {
            v = v.get(field)?;
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            v = v.get(index.strip_suffix(']')?.parse::<usize>().ok()?)?;
        }
    }
    Some(v)
}

/// One cell of a custom resource's column of `column_type` (the apiextensions table
/// convertor's `cellForJSONValue`): `null` when the value is missing or not of the type; a
/// `string` column prints any value; a `date` column is the age of the timestamp.
fn cell(column_type: &str, v: Option<&Value>, now: i64) -> Value {
    let Some(v) = v.filter(|v| !v.is_null()) else { return Value::Null };
    match (column_type, v) {
        ("string", Value::String(_)) => v.clone(),
        ("string", _) => Value::from(v.to_string()),
        ("integer", Value::Number(n)) => {
            n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map_or(Value::Null, Value::from)
        }
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(_)) => v.clone(),
        ("date", Value::String(ts)) => match unix_seconds(ts) {
            Some(t) => Value::from(human_duration(now - t)),
            None => Value::from("<invalid>"),
        },
        _ => Value::Null,
    }
}

// ---- Table options ---------------------------------------------------------------------

/// What a row carries as its `object` (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum IncludeObject {
    /// A PartialObjectMetadata with the object's metadata (the default).
    #[default]
    Metadata,
    /// `null`.
    None,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// `includeObject` from the query (400 for anything but Metadata, None, Object or
    /// empty, with kube-apiserver's message).
    pub(crate) fn from_query(q: &Query) -> Result<IncludeObject, ApiError> {
        match q.get("includeObject").unwrap_or("") {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(ApiError::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {other:?}: must be \
                 'Metadata', 'Object', 'None', or empty"
            ))),
        }
    }
}

/// The list metadata a Table or PartialObjectMetadataList carries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListMeta {
    pub resource_version: String,
    pub continue_token: Option<String>,
    pub remaining: Option<usize>,
}

impl ListMeta {
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        if !self.resource_version.is_empty() {
            m.insert("resourceVersion".into(), self.resource_version.clone().into());
        }
        if let Some(c) = self.continue_token.as_ref().filter(|c| !c.is_empty()) {
            m.insert("continue".into(), c.clone().into());
        }
        if let Some(r) = self.remaining {
            m.insert("remainingItemCount".into(), r.into());
        }
        Value::Object(m)
    }
}

// ---- Tables and partial metadata -------------------------------------------------------

/// How a read turns objects of one resource into Tables.
#[derive(Debug, Clone)]
pub(crate) struct TableView {
    pub def: &'static ResourceDef,
    pub version: MetaVersion,
    pub include: IncludeObject,
    /// The CRD version of a custom resource, whose printer columns the Tables have.
    pub custom: Option<CustomRef>,
}

impl TableView {
    /// The view a request on `t` asks for: `version` of meta.k8s.io, its `includeObject`
    /// (400 if invalid), the target's printer columns.
    pub(crate) fn for_request(t: &Target, version: MetaVersion, q: &Query) -> Result<TableView, ApiError> {
        Ok(TableView { def: t.def, version, include: IncludeObject::from_query(q)?, custom: t.custom.clone() })
    }

    /// The Table of a page of a list (stored bytes of each item).
    pub(crate) fn list(&self, meta: &ListMeta, items: &[impl AsRef<[u8]>], now: i64) -> Result<Vec<u8>, ApiError> {
        let objs = items.iter().map(|b| parse_stored(b.as_ref()).map(Value::Object)).collect::<Result<Vec<_>, _>>()?;
        Ok(self.encode(meta.to_json(), &objs.iter().collect::<Vec<_>>(), true, now))
    }

    /// The Table of one object, with `metadata.resourceVersion` the object's; without
    /// column definitions when `headers` is false (watch events after the first).
    pub(crate) fn object(&self, obj: &Value, headers: bool, now: i64) -> Vec<u8> {
        let rv = str_at(obj, "/metadata/resourceVersion");
        let meta = ListMeta { resource_version: rv.to_string(), ..Default::default() };
        self.encode(meta.to_json(), &[obj], headers, now)
    }

    fn encode(&self, meta: Value, objs: &[&Value], headers: bool, now: i64) -> Vec<u8> {
        let columns = match (&self.custom, headers) {
            (_, false) => Value::Null,
            (Some(c), true) => Value::Array(custom_columns(c)),
            (None, true) => Value::Array(columns(self.def).iter().map(column_json).collect()),
        };
        let rows: Vec<Value> = objs
            .iter()
            .map(|obj| {
                let r = match &self.custom {
                    Some(c) => Row { cells: custom_cells(c, obj, now), conditions: None },
                    None => row(self.def, obj, now),
                };
                let mut out = Map::new();
                out.insert("cells".into(), Value::Array(r.cells));
                if let Some(c) = r.conditions {
                    out.insert("conditions".into(), c);
                }
                let object = match self.include {
                    IncludeObject::Metadata => partial(self.version, obj),
                    IncludeObject::None => Value::Null,
                    IncludeObject::Object => match obj {
                        Value::Object(o) => {
                            let mut o = o.clone();
                            to_served(&mut o, self.def);
                            Value::Object(o)
                        }
                        other => (*other).clone(),
                    },
                };
                out.insert("object".into(), object);
                Value::Object(out)
            })
            .collect();
        let mut table = Map::new();
        table.insert("kind".into(), "Table".into());
        table.insert("apiVersion".into(), self.version.api_version().into());
        table.insert("metadata".into(), meta);
        table.insert("columnDefinitions".into(), columns);
        table.insert("rows".into(), Value::Array(rows));
        serde_json::to_vec(&table).unwrap_or_default()
    }
}

/// `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{..}}`.
pub(crate) fn partial(version: MetaVersion, obj: &Value) -> Value {
    let meta = obj.get("metadata").filter(|m| m.is_object()).cloned().unwrap_or_else(|| Value::Object(Map::new()));
    json!({"kind": "PartialObjectMetadata", "apiVersion": version.api_version(), "metadata": meta})
}

/// One object as PartialObjectMetadata.
pub(crate) fn partial_object(version: MetaVersion, bytes: &[u8]) -> Result<Vec<u8>, ApiError> {
    let obj = Value::Object(parse_stored(bytes)?);
    Ok(serde_json::to_vec(&partial(version, &obj)).unwrap_or_default())
}

/// A page of a list as PartialObjectMetadataList.
pub(crate) fn partial_list(
    version: MetaVersion,
    meta: &ListMeta,
    items: &[impl AsRef<[u8]>],
) -> Result<Vec<u8>, ApiError> {
    let items = items
        .iter()
        .map(|b| parse_stored(b.as_ref()).map(|o| partial(version, &Value::Object(o))))
        .collect::<Result<Vec<_>, _>>()?;
    let mut list = Map::new();
    list.insert("kind".into(), "PartialObjectMetadataList".into());
    list.insert("apiVersion".into(), version.api_version().into());
    list.insert("metadata".into(), meta.to_json());
    list.insert("items".into(), Value::Array(items));
    Ok(serde_json::to_vec(&list).unwrap_or_default())
}

/// The Go type kube-apiserver names in its 406 for a mismatched PartialObjectMetadata
/// request: the internal type, e.g. `*core.ConfigMapList`, `*apps.Deployment`.
fn go_type(def: &ResourceDef, list: bool) -> String {
    let package = if def.group.is_empty() { "core" } else { def.group.split('.').next().unwrap_or(def.group) };
    format!("*{package}.{}", if list { def.list_kind } else { def.kind })
}

/// 406 for PartialObjectMetadata asked of a list.
pub(crate) fn partial_of_list(def: &ResourceDef) -> ApiError {
    ApiError::new(
        Reason::NotAcceptable,
        format!("you requested PartialObjectMetadata, but the requested object is a list ({})", go_type(def, true)),
    )
}

/// 406 for PartialObjectMetadataList asked of one object.
pub(crate) fn partial_list_of_object(def: &ResourceDef) -> ApiError {
    ApiError::new(
        Reason::NotAcceptable,
        format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type(def, false)
        ),
    )
}

/// What a watch sends as each event's object instead of the object itself.
pub(crate) enum WatchView {
    /// A Table with one row; column definitions only in the first event.
    Table { view: TableView, clock: std::sync::Arc<dyn kuorum_api::seams::Clock>, headers_sent: bool },
    /// A PartialObjectMetadata.
    Partial(MetaVersion),
}

impl WatchView {
    /// The object of one event, encoded.
    pub(crate) fn encode(&mut self, obj: &Value) -> Vec<u8> {
        match self {
            WatchView::Table { view, clock, headers_sent } => {
                let out = view.object(obj, !*headers_sent, clock.now_unix_seconds());
                *headers_sent = true;
                out
            }
            WatchView::Partial(v) => serde_json::to_vec(&partial(*v, obj)).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use kuorum_api::registry::lookup;

    const NOW: i64 = 1_795_304_728; // 2026-11-21T23:45:28Z

    fn def(group: &str, plural: &str) -> &'static ResourceDef {
        lookup(group, "v1", plural).unwrap_or_else(|| panic!("{group}/{plural}"))
    }

    #[test]
    fn simple_json_paths_and_typed_cells() {
        let o = json!({"spec": {"replicas": 3, "ratio": 0.5, "on": true, "name": "x", "items": [{"n": "a"}, {"n": "b"}]},
                       "metadata": {"creationTimestamp": "2026-11-21T23:40:28Z"}});
        assert_eq!(json_path(&o, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(json_path(&o, "{.spec.items[1].n}"), Some(&json!("b")));
        assert_eq!(json_path(&o, ".spec.items[2].n"), None);
        assert_eq!(json_path(&o, ".spec.nope"), None);
        assert_eq!(cell("integer", json_path(&o, ".spec.replicas"), NOW), json!(3));
        assert_eq!(cell("integer", json_path(&o, ".spec.ratio"), NOW), json!(0));
        assert_eq!(cell("number", json_path(&o, ".spec.replicas"), NOW), json!(3.0));
        assert_eq!(cell("string", json_path(&o, ".spec.replicas"), NOW), json!("3"));
        assert_eq!(cell("string", json_path(&o, ".spec.name"), NOW), json!("x"));
        assert_eq!(cell("boolean", json_path(&o, ".spec.on"), NOW), json!(true));
        assert_eq!(cell("boolean", json_path(&o, ".spec.name"), NOW), Value::Null);
        assert_eq!(cell("date", json_path(&o, ".metadata.creationTimestamp"), NOW), json!("5m"));
        assert_eq!(cell("date", json_path(&o, ".spec.name"), NOW), json!("<invalid>"));
        assert_eq!(cell("string", None, NOW), Value::Null);
    }

    #[test]
    fn default_columns_for_other_kinds() {
        let mut other = *def("", "configmaps");
        other.kind = "Widget";
        let r = row(&other, &json!({"metadata": {"name": "w", "creationTimestamp": "2026-11-21T23:45:28Z"}}), NOW);
        assert_eq!(r.cells, vec![json!("w"), json!("2026-11-21T23:45:28Z")]);
        assert_eq!(row(&other, &json!({"metadata": {"name": "w"}}), NOW).cells[1], json!("0001-01-01T00:00:00Z"));
        assert_eq!(
            columns(&other).iter().map(|c| (c.name, c.ty)).collect::<Vec<_>>(),
            [("Name", "string"), ("Created At", "date")]
        );
    }

    #[test]
    fn tables_carry_metadata_rows_and_objects() {
        let cm = def("", "configmaps");
        let stored = Bytes::from_static(
            br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"7","creationTimestamp":"2026-11-21T23:45:00Z","labels":{"app":"x"}},"data":{"k":"v"}}"#,
        );
        let meta = ListMeta { resource_version: "9".into(), continue_token: Some("tok".into()), remaining: Some(4) };
        let view = TableView { def: cm, version: MetaVersion::V1, include: IncludeObject::Metadata, custom: None };
        let t: Value = serde_json::from_slice(&view.list(&meta, std::slice::from_ref(&stored), NOW).unwrap()).unwrap();
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "9", "continue": "tok", "remainingItemCount": 4}));
        assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 3);
        assert_eq!(t["rows"][0]["cells"], json!(["a", 1, "28s"]));
        assert_eq!(
            t["rows"][0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": {"name": "a", "namespace": "default", "resourceVersion": "7",
                                "creationTimestamp": "2026-11-21T23:45:00Z", "labels": {"app": "x"}}})
        );
        assert!(t["rows"][0].get("conditions").is_none());
        let keys: Vec<&String> = t.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["kind", "apiVersion", "metadata", "columnDefinitions", "rows"]);

        let view = TableView { def: cm, version: MetaVersion::V1beta1, include: IncludeObject::None, custom: None };
        let t: Value = serde_json::from_slice(&view.list(&ListMeta::default(), &[] as &[Bytes], NOW).unwrap()).unwrap();
        assert_eq!(
            (t["apiVersion"].clone(), t["metadata"].clone(), t["rows"].clone()),
            (json!("meta.k8s.io/v1beta1"), json!({}), json!([]))
        );

        let obj: Value =
            serde_json::from_slice(br#"{"metadata":{"name":"b","resourceVersion":"3"},"data":{}}"#).unwrap();
        let view = TableView { def: cm, version: MetaVersion::V1, include: IncludeObject::Object, custom: None };
        let t: Value = serde_json::from_slice(&view.object(&obj, false, NOW)).unwrap();
        assert_eq!(t["metadata"], json!({"resourceVersion": "3"}));
        assert_eq!(t["columnDefinitions"], Value::Null);
        assert_eq!(
            t["rows"][0]["object"],
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "b", "resourceVersion": "3"}, "data": {}})
        );
        let view = TableView { def: cm, version: MetaVersion::V1, include: IncludeObject::None, custom: None };
        let t: Value = serde_json::from_slice(&view.object(&obj, true, NOW)).unwrap();
        assert_eq!(t["rows"][0]["object"], Value::Null);
    }

    #[test]
    fn include_object_values() {
        let q = |s: &str| Query::parse(Some(s));
        assert_eq!(IncludeObject::from_query(&q("")).unwrap(), IncludeObject::Metadata);
        assert_eq!(IncludeObject::from_query(&q("includeObject=")).unwrap(), IncludeObject::Metadata);
        assert_eq!(IncludeObject::from_query(&q("includeObject=None")).unwrap(), IncludeObject::None);
        assert_eq!(IncludeObject::from_query(&q("includeObject=Object")).unwrap(), IncludeObject::Object);
        let e = IncludeObject::from_query(&q("includeObject=object")).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "Unable to convert to Table as requested: includeObject: Invalid value: \"object\": must be 'Metadata', \
             'Object', 'None', or empty"
        );
    }

    #[test]
    fn partial_metadata_views() {
        let stored = Bytes::from_static(br#"{"kind":"Lease","metadata":{"name":"l","uid":"u"},"spec":{}}"#);
        let p: Value = serde_json::from_slice(&partial_object(MetaVersion::V1, &stored).unwrap()).unwrap();
        assert_eq!(
            p,
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "l", "uid": "u"}})
        );
        let meta = ListMeta { resource_version: "5".into(), ..Default::default() };
        let l: Value = serde_json::from_slice(&partial_list(MetaVersion::V1beta1, &meta, &[stored]).unwrap()).unwrap();
        assert_eq!(l["kind"], "PartialObjectMetadataList");
        assert_eq!(l["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(l["metadata"], json!({"resourceVersion": "5"}));
        assert_eq!(l["items"][0]["kind"], "PartialObjectMetadata");
        assert_eq!(l["items"][0]["metadata"]["name"], "l");
        let lease = def("coordination.k8s.io", "leases");
        assert_eq!(
            partial_of_list(def("", "configmaps")).message,
            "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
        );
        let e = partial_list_of_object(lease);
        assert_eq!((e.code, e.reason.as_str()), (406, "NotAcceptable"));
        assert_eq!(
            e.message,
            "you requested PartialObjectMetadataList, but the requested object is not a list (*coordination.Lease)"
        );
    }

    #[test]
    fn watch_tables_send_columns_once() {
        struct Fixed;
        impl kuorum_api::seams::Clock for Fixed {
            fn now_unix_seconds(&self) -> i64 {
                NOW
            }
        }
        let view = TableView {
            def: def("", "configmaps"),
            version: MetaVersion::V1,
            include: IncludeObject::Metadata,
            custom: None,
        };
        let mut w = WatchView::Table { view, clock: std::sync::Arc::new(Fixed), headers_sent: false };
        let obj = json!({"metadata": {"name": "a", "resourceVersion": "12"}, "data": {"x": "y"}});
        let first: Value = serde_json::from_slice(&w.encode(&obj)).unwrap();
        let second: Value = serde_json::from_slice(&w.encode(&obj)).unwrap();
        assert_eq!(first["columnDefinitions"].as_array().unwrap().len(), 3);
        assert_eq!(second["columnDefinitions"], Value::Null);
        for t in [&first, &second] {
            assert_eq!(t["metadata"]["resourceVersion"], "12");
            assert_eq!(t["rows"].as_array().unwrap().len(), 1);
            assert_eq!(t["rows"][0]["cells"], json!(["a", 1, "<unknown>"]));
        }
        let mut p = WatchView::Partial(MetaVersion::V1);
        let v: Value = serde_json::from_slice(&p.encode(&obj)).unwrap();
        assert_eq!(v["kind"], "PartialObjectMetadata");
    }
}
