//! The `meta.k8s.io` Table representation of objects, as kube-apiserver serves it to
//! `kubectl get` (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), and the
//! PartialObjectMetadata(List) views of the metadata-only clients.
//!
//! Columns and cells follow kube-apiserver's printers (`pkg/printers/internalversion/
//! printers.go`), which the server always runs with `Wide: true`: every column, including
//! the `priority: 1` ones that kubectl shows only with `-o wide`. Kinds without a printer
//! get the default convertor's `Name` / `Created At` columns. A custom resource gets `Name`
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
use crate::object::{parse_stored, set_type_meta};
use crate::query::Query;
use crate::route::Target;

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
                            set_type_meta(&mut o, self.def);
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
    use kuorum_api::kinds::printing::{label_selector_string, since, NAME_DOC, ZERO_TIME};
    use kuorum_api::registry::lookup;

    const NOW: i64 = 1_795_304_728; // 2026-11-21T23:45:28Z

    fn def(group: &str, plural: &str) -> &'static ResourceDef {
        lookup(group, "v1", plural).unwrap_or_else(|| panic!("{group}/{plural}"))
    }

    fn cells(group: &str, plural: &str, obj: Value) -> Vec<Value> {
        let d = def(group, plural);
        let r = row(d, &obj, NOW);
        assert_eq!(r.cells.len(), columns(d).len(), "one cell per column for {plural}");
        r.cells
    }

    fn ago(secs: i64) -> String {
        kuorum_api::time::format(NOW - secs)
    }

    #[test]
    fn human_durations_match_apimachinery() {
        for (secs, want) in [
            (-5, "<invalid>"),
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (5, "5s"),
            (119, "119s"),
            (120, "2m"),
            (182, "3m2s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (4 * 3600 + 5 * 60, "4h5m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 59 * 60, "47h"),
            (48 * 3600, "2d"),
            (51 * 3600, "2d3h"),
            (7 * 86400 + 23 * 3600, "7d23h"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            (740 * 86400, "2y10d"),
            (8 * 365 * 86400, "8y"),
            (20 * 365 * 86400 + 100 * 86400, "20y"),
        ] {
            assert_eq!(human_duration(secs), want, "{secs}s");
        }
    }

    #[test]
    fn ages_read_times_as_go_does() {
        // The zero time kube writes for "never" reads as such (kuorum_api::time has the rest).
        assert_eq!(unix_seconds("0001-01-01T00:00:00Z"), Some(ZERO_TIME));
        assert_eq!(since("", NOW), "<unknown>");
        assert_eq!(since(&ago(3 * 60 + 2), NOW), "3m2s");
    }

    #[test]
    fn configmap_secret_serviceaccount_namespace_lease() {
        let cm = json!({"metadata": {"name": "cfg", "creationTimestamp": ago(5)},
                        "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(cells("", "configmaps", cm), vec![json!("cfg"), json!(3), json!("5s")]);
        assert_eq!(
            cells("", "configmaps", json!({"metadata": {"name": "e"}})),
            vec![json!("e"), json!(0), json!("<unknown>")]
        );

        let s = json!({"metadata": {"name": "tls", "creationTimestamp": ago(4 * 3600)},
                       "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(cells("", "secrets", s), vec![json!("tls"), json!("kubernetes.io/tls"), json!(2), json!("4h")]);
        let s = json!({"metadata": {"name": "o"}, "data": {"a": ""}, "stringData": {"a": "x", "b": "y"}});
        assert_eq!(cells("", "secrets", s)[1..3], [json!("Opaque"), json!(2)]);

        let sa =
            json!({"metadata": {"name": "default", "creationTimestamp": ago(3 * 86400)}, "secrets": [{"name": "t"}]});
        assert_eq!(cells("", "serviceaccounts", sa), vec![json!("default"), json!(1), json!("3d")]);

        let ns =
            json!({"metadata": {"name": "kube-system", "creationTimestamp": ago(59)}, "status": {"phase": "Active"}});
        assert_eq!(cells("", "namespaces", ns), vec![json!("kube-system"), json!("Active"), json!("59s")]);

        let lease =
            json!({"metadata": {"name": "l", "creationTimestamp": ago(600)}, "spec": {"holderIdentity": "node-1"}});
        assert_eq!(cells("coordination.k8s.io", "leases", lease), vec![json!("l"), json!("node-1"), json!("10m")]);
        let lease = json!({"metadata": {"name": "l"}, "spec": {}});
        assert_eq!(cells("coordination.k8s.io", "leases", lease)[1], json!(""));
    }

    #[test]
    fn pod_ready_status_restarts() {
        let pod = json!({
            "metadata": {"name": "web-1", "creationTimestamp": ago(3600)},
            "spec": {"nodeName": "n1", "containers": [{"name": "app"}, {"name": "sidecar"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}], "conditions": [{"type": "Ready", "status": "False"}],
                "containerStatuses": [
                    {"name": "app", "ready": true, "restartCount": 3, "state": {"running": {}},
                     "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(125)}}},
                    {"name": "sidecar", "ready": false, "restartCount": 0, "state": {"running": {}}}
                ]}
        });
        assert_eq!(
            cells("", "pods", pod),
            vec![
                json!("web-1"),
                json!("1/2"),
                json!("Running"),
                json!("3 (2m5s ago)"),
                json!("60m"),
                json!("10.0.0.7"),
                json!("n1"),
                json!("<none>"),
                json!("<none>")
            ]
        );

        // No status yet: Pending (what kube-apiserver stores), nothing ready, no restarts.
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}});
        let c = cells("", "pods", pod);
        assert_eq!(c[1..5], [json!("0/1"), json!("Pending"), json!("0"), json!("<unknown>")]);
        assert_eq!(c[5..], [json!("<none>"), json!("<none>"), json!("<none>"), json!("<none>")]);

        // Waiting reason wins; restarts without a termination time have no "ago".
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "a", "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        assert_eq!(cells("", "pods", pod)[1..4], [json!("0/1"), json!("CrashLoopBackOff"), json!("5")]);

        // Init containers: the first unfinished one decides.
        let pod = json!({"metadata": {"name": "p"},
            "spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                {"name": "i2", "state": {"running": {}}}]}});
        assert_eq!(cells("", "pods", pod)[2], json!("Init:1/2"));
        let pod = json!({"metadata": {"name": "p"},
            "spec": {"initContainers": [{"name": "i1"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "restartCount": 2, "state": {"terminated": {"exitCode": 3}}}]}});
        assert_eq!(cells("", "pods", pod)[2..4], [json!("Init:ExitCode:3"), json!("2")]);

        // A restartable (sidecar) init container counts in READY's total.
        let pod = json!({"metadata": {"name": "p"},
            "spec": {"initContainers": [{"name": "s", "restartPolicy": "Always"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
                "initContainerStatuses": [{"name": "s", "started": true, "ready": true, "state": {"running": {}}}],
                "containerStatuses": [{"name": "a", "ready": true, "state": {"running": {}}}]}});
        assert_eq!(cells("", "pods", pod)[1..3], [json!("2/2"), json!("Running")]);

        // Terminating, Completed (with its row condition), scheduling gates, readiness gates.
        let pod = json!({"metadata": {"name": "p", "deletionTimestamp": ago(1)}, "spec": {"containers": []},
                         "status": {"phase": "Running"}});
        assert_eq!(cells("", "pods", pod)[2], json!("Terminating"));
        let d = def("", "pods");
        let done = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]},
            "status": {"phase": "Succeeded", "containerStatuses": [
                {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        let r = row(d, &done, NOW);
        assert_eq!(r.cells[1..3], [json!("0/1"), json!("Completed")]);
        assert_eq!(r.conditions.unwrap()[0]["reason"], "Succeeded");
        let gated = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}],
            "readinessGates": [{"conditionType": "x"}, {"conditionType": "y"}]},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}, {"type": "x", "status": "True"}]}});
        let c = cells("", "pods", gated);
        assert_eq!((c[2].clone(), c[8].clone()), (json!("SchedulingGated"), json!("1/2")));
    }

    #[test]
    fn deployment_ready_and_wide_columns() {
        let d = json!({
            "metadata": {"name": "web", "creationTimestamp": ago(2 * 86400 + 3 * 3600)},
            "spec": {"replicas": 3,
                     "selector": {"matchLabels": {"app": "web", "tier": "fe"},
                                  "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]},
                     "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                                          {"name": "log", "image": "busybox"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
        });
        assert_eq!(
            cells("apps", "deployments", d),
            vec![
                json!("web"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("2d3h"),
                json!("nginx,log"),
                json!("nginx:1.27,busybox"),
                json!("app=web,env in (dev,prod),tier=fe")
            ]
        );
        // No status, no replicas (defaulted to 1), no selector.
        let d = json!({"metadata": {"name": "x"}, "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}}});
        assert_eq!(cells("apps", "deployments", d)[1..4], [json!("0/1"), json!(0), json!(0)]);
        assert_eq!(
            label_selector_string(Some(&json!({"matchExpressions": [{"key": "k", "operator": "Bad"}]}))),
            "<invalid>"
        );
        assert_eq!(
            label_selector_string(Some(&json!({"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]}))),
            "!k"
        );
        assert_eq!(label_selector_string(Some(&json!({}))), "");
    }

    #[test]
    fn service_ports_and_ips() {
        let svc = json!({"metadata": {"name": "web", "creationTimestamp": ago(30)},
            "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                     "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443}], "selector": {"app": "web", "a": "b"}}});
        assert_eq!(
            cells("", "services", svc),
            vec![
                json!("web"),
                json!("ClusterIP"),
                json!("10.96.0.10"),
                json!("<none>"),
                json!("80/TCP,443/TCP"),
                json!("30s"),
                json!("a=b,app=web")
            ]
        );
        let np = json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "externalIPs": ["1.2.3.4"],
                         "ports": [{"port": 53, "nodePort": 30053, "protocol": "UDP"}]}});
        assert_eq!(
            cells("", "services", np)[1..5],
            [json!("NodePort"), json!("<none>"), json!("1.2.3.4"), json!("53:30053/UDP")]
        );
        let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer"}, "status": {}});
        assert_eq!(cells("", "services", lb)[3..5], [json!("<pending>"), json!("<none>")]);
        let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer"},
                        "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}, {"ip": "5.6.7.8"}]}}});
        assert_eq!(cells("", "services", lb)[3], json!("5.6.7.8,lb.example.com"));
        let en =
            json!({"metadata": {"name": "en"}, "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
        assert_eq!(cells("", "services", en)[3], json!("db.example.com"));
    }

    #[test]
    fn node_status_roles_and_info() {
        let node = json!({"metadata": {"name": "n1", "creationTimestamp": ago(8 * 86400),
                                       "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge",
                                                  "node-role.kubernetes.io/": "x"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "192.168.1.5"}],
                       "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "Debian GNU/Linux 13"}}});
        assert_eq!(
            cells("", "nodes", node),
            vec![
                json!("n1"),
                json!("Ready,SchedulingDisabled"),
                json!("control-plane,edge"),
                json!("8d"),
                json!("v1.37.0"),
                json!("192.168.1.5"),
                json!("<none>"),
                json!("Debian GNU/Linux 13"),
                json!("<unknown>"),
                json!("<unknown>")
            ]
        );
        let c = cells("", "nodes", json!({"metadata": {"name": "n2"}}));
        assert_eq!(c[1..3], [json!("Unknown"), json!("<none>")]);
        let c = cells(
            "",
            "nodes",
            json!({"metadata": {"name": "n3"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}),
        );
        assert_eq!(c[1], json!("NotReady"));
    }

    #[test]
    fn event_columns() {
        let e = json!({"metadata": {"name": "web.17a", "creationTimestamp": ago(100)},
            "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
            "reason": "Pulled", "message": "  Successfully pulled image\n", "type": "Normal",
            "source": {"component": "kubelet", "host": "n1"},
            "firstTimestamp": ago(300), "lastTimestamp": ago(100), "count": 4});
        assert_eq!(
            cells("", "events", e),
            vec![
                json!("100s"),
                json!("Normal"),
                json!("Pulled"),
                json!("pod/web"),
                json!("spec.containers{app}"),
                json!("kubelet, n1"),
                json!("Successfully pulled image"),
                json!("5m"),
                json!(4),
                json!("web.17a")
            ]
        );
        // The events.k8s.io shape: eventTime, series, reporting controller; no count.
        let e = json!({"metadata": {"name": "x"}, "involvedObject": {"kind": "Node"}, "eventTime": "2026-11-21T23:45:00.000000Z",
                       "reportingComponent": "scheduler", "series": {"count": 7, "lastObservedTime": ago(2)}});
        let c = cells("", "events", e);
        assert_eq!((c[0].clone(), c[3].clone(), c[5].clone()), (json!("2s"), json!("node"), json!("scheduler")));
        assert_eq!((c[7].clone(), c[8].clone()), (json!("28s"), json!(7)));
        let e = json!({"metadata": {"name": "y"}, "involvedObject": {"kind": "Pod", "name": "p"}});
        let c = cells("", "events", e);
        assert_eq!((c[0].clone(), c[7].clone(), c[8].clone()), (json!("<unknown>"), json!("<unknown>"), json!(1)));
    }

    #[test]
    fn column_definitions_match_kube() {
        let names = |plural: &str, group: &str| -> Vec<(&str, u8)> {
            columns(def(group, plural)).iter().map(|c| (c.name, c.priority)).collect()
        };
        assert_eq!(names("configmaps", ""), vec![("Name", 0), ("Data", 0), ("Age", 0)]);
        assert_eq!(
            names("deployments", "apps"),
            vec![
                ("Name", 0),
                ("Ready", 0),
                ("Up-to-date", 0),
                ("Available", 0),
                ("Age", 0),
                ("Containers", 1),
                ("Images", 1),
                ("Selector", 1)
            ]
        );
        assert_eq!(
            names("pods", "")[..5].iter().map(|c| c.0).collect::<Vec<_>>(),
            ["Name", "Ready", "Status", "Restarts", "Age"]
        );
        assert_eq!(
            names("events", "").iter().filter(|c| c.1 == 0).map(|c| c.0).collect::<Vec<_>>(),
            ["Last Seen", "Type", "Reason", "Object", "Message"]
        );
        for d in kuorum_api::registry::resources() {
            let cols = columns(d);
            assert_eq!(cols.iter().filter(|c| c.format == "name").count(), 1, "{}", d.kind);
            assert!(cols.iter().all(|c| !c.description.is_empty()), "{}", d.kind);
        }
        let cm = def("", "configmaps");
        assert_eq!(
            column_json(&columns(cm)[0]),
            json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DOC, "priority": 0})
        );
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

/// Get, list and watch through the router, over a real single-node cluster.
#[cfg(test)]
mod router_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::{Method, Request, StatusCode};
    use axum::Router;
    use http_body_util::BodyExt;
    use kuorum_api::seams::{Clock, SplitMix64};
    use serde_json::{json, Value};
    use tower::ServiceExt;

    use crate::{router, RestState};

    const KUBECTL_GET: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;\
                               g=meta.k8s.io,application/json";
    const METADATA_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;\
                                 v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    const METADATA: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,\
                            application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

    /// A clock that the test moves.
    struct TestClock(std::sync::atomic::AtomicI64);

    impl Clock for TestClock {
        fn now_unix_seconds(&self) -> i64 {
            self.0.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    async fn app() -> (Router, Arc<TestClock>) {
        let cache = kuorum_watch::WatchCache::new(kuorum_watch::CacheConfig::default());
        let cluster = kuorum_raft::testing::single_node_observed(Some(cache.clone())).await;
        let clock = Arc::new(TestClock(1_795_304_728.into()));
        let state = RestState::new(cluster, cache, clock.clone(), Arc::new(SplitMix64::new(7)));
        let app = router(state);
        create(&app, "/api/v1/namespaces", json!({"metadata": {"name": "default"}})).await;
        (app, clock)
    }

    async fn call(
        app: &Router,
        method: Method,
        uri: &str,
        accept: Option<&str>,
        body: Option<Value>,
    ) -> axum::response::Response {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        let body = match body {
            Some(b) => {
                req = req.header("content-type", "application/json");
                Body::from(serde_json::to_vec(&b).unwrap())
            }
            None => Body::empty(),
        };
        app.clone().oneshot(req.body(body).unwrap()).await.unwrap()
    }

    async fn get(app: &Router, uri: &str, accept: &str) -> (StatusCode, String, Value) {
        let resp = call(app, Method::GET, uri, Some(accept), None).await;
        let status = resp.status();
        let ct = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)));
        (status, ct, v)
    }

    async fn create(app: &Router, uri: &str, obj: Value) -> Value {
        let resp = call(app, Method::POST, uri, None, Some(obj)).await;
        assert_eq!(resp.status(), StatusCode::CREATED);
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap()
    }

    /// Reads whole lines from a watch body until `n` lines or the wait ends.
    async fn lines(body: &mut Body, n: usize, wait: Duration) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut buf = Vec::new();
        let mut out = Vec::new();
        while out.len() < n {
            while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=pos).collect();
                out.push(serde_json::from_slice(&line[..line.len() - 1]).unwrap());
            }
            if out.len() >= n {
                break;
            }
            match tokio::time::timeout_at(deadline, body.frame()).await {
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        buf.extend_from_slice(&data);
                    }
                }
                _ => break,
            }
        }
        out
    }

    #[tokio::test]
    async fn get_and_list_as_tables() {
        let (app, clock) = app().await;
        let cms = "/api/v1/namespaces/default/configmaps";
        let a =
            create(&app, cms, json!({"metadata": {"name": "a", "labels": {"app": "x"}}, "data": {"k": "v", "l": "w"}}))
                .await;
        create(&app, cms, json!({"metadata": {"name": "b"}})).await;
        clock.0.fetch_add(65, std::sync::atomic::Ordering::SeqCst);

        // kubectl get cm: a Table with the list's resourceVersion and one row per item.
        let (status, ct, plain) = get(&app, cms, "application/json").await;
        assert_eq!(
            (status, ct.as_str(), plain["kind"].as_str()),
            (StatusCode::OK, "application/json", Some("ConfigMapList"))
        );
        let (status, ct, t) = get(&app, &format!("{cms}?limit=500"), KUBECTL_GET).await;
        assert_eq!(status, StatusCode::OK, "{t}");
        assert_eq!(ct, "application/json;as=Table;v=v1;g=meta.k8s.io");
        assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")));
        assert!(t["metadata"]["resourceVersion"].as_str().unwrap().parse::<u64>().unwrap() >= 2, "{t}");
        let names: Vec<&str> =
            t["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Name", "Data", "Age"]);
        assert_eq!(t["rows"][0]["cells"], json!(["a", 2, "65s"]));
        assert_eq!(t["rows"][1]["cells"], json!(["b", 0, "65s"]));
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["rows"][0]["object"]["metadata"], a["metadata"]);

        // Paging carries continue and remainingItemCount.
        let (_, _, t) = get(&app, &format!("{cms}?limit=1"), KUBECTL_GET).await;
        assert_eq!(t["rows"].as_array().unwrap().len(), 1);
        assert!(t["metadata"]["continue"].as_str().is_some_and(|c| !c.is_empty()), "{t}");
        assert_eq!(t["metadata"]["remainingItemCount"], 1);
        let next = format!("{cms}?limit=1&continue={}", t["metadata"]["continue"].as_str().unwrap());
        let (_, _, t2) = get(&app, &next, KUBECTL_GET).await;
        assert_eq!(t2["rows"][0]["cells"][0], "b");

        // One object, v1beta1, each includeObject.
        let (status, ct, t) = get(&app, &format!("{cms}/a"), "application/json;as=Table;v=v1beta1;g=meta.k8s.io").await;
        assert_eq!((status, ct.as_str()), (StatusCode::OK, "application/json;as=Table;v=v1beta1;g=meta.k8s.io"));
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(t["metadata"]["resourceVersion"], a["metadata"]["resourceVersion"]);
        assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");
        let (_, _, t) = get(&app, &format!("{cms}/a?includeObject=Object"), KUBECTL_GET).await;
        assert_eq!(t["rows"][0]["object"], a);
        let (_, _, t) = get(&app, &format!("{cms}/a?includeObject=None"), KUBECTL_GET).await;
        assert_eq!(t["rows"][0]["object"], Value::Null);
        let (status, _, s) = get(&app, &format!("{cms}/a?includeObject=All"), KUBECTL_GET).await;
        assert_eq!((status, s["reason"].as_str()), (StatusCode::BAD_REQUEST, Some("BadRequest")));
        assert!(s["message"].as_str().unwrap().starts_with("Unable to convert to Table as requested: includeObject"));
        let (status, _, _) = get(&app, &format!("{cms}?includeObject=All"), KUBECTL_GET).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // The object is looked up first, as kube-apiserver does.
        let (status, _, _) = get(&app, &format!("{cms}/zz?includeObject=All"), KUBECTL_GET).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        // A deployment, and its status subresource, which reads as the object.
        let deploys = "/apis/apps/v1/namespaces/default/deployments";
        create(
            &app,
            deploys,
            json!({"metadata": {"name": "web"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}}),
        )
        .await;
        for uri in [deploys.to_string(), format!("{deploys}/web/status")] {
            let (status, _, t) = get(&app, &uri, KUBECTL_GET).await;
            assert_eq!(status, StatusCode::OK, "{t}");
            assert_eq!(
                t["rows"][0]["cells"],
                json!(["web", "0/3", 0, 0, "0s", "nginx", "nginx:1.27", "app=web"]),
                "{uri}"
            );
        }

        // Cluster-scoped kinds and other printers.
        let (_, _, t) = get(&app, "/api/v1/namespaces", KUBECTL_GET).await;
        let default = t["rows"].as_array().unwrap().iter().find(|r| r["cells"][0] == "default").expect("default ns");
        assert_eq!(default["cells"][1], "Active");
        assert_eq!(default["object"]["metadata"]["name"], "default");
    }

    #[tokio::test]
    async fn partial_object_metadata_and_refusals() {
        let (app, _) = app().await;
        let cms = "/api/v1/namespaces/default/configmaps";
        let a = create(&app, cms, json!({"metadata": {"name": "a"}, "data": {"k": "v"}})).await;

        let (status, ct, l) = get(&app, cms, METADATA_LIST).await;
        assert_eq!(status, StatusCode::OK, "{l}");
        assert_eq!(ct, "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io");
        assert_eq!(
            (l["kind"].as_str(), l["apiVersion"].as_str()),
            (Some("PartialObjectMetadataList"), Some("meta.k8s.io/v1"))
        );
        assert_eq!(
            l["items"][0],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": a["metadata"]})
        );
        assert!(l["metadata"]["resourceVersion"].is_string());

        let (status, ct, p) = get(&app, &format!("{cms}/a"), METADATA).await;
        assert_eq!(
            (status, ct.as_str()),
            (StatusCode::OK, "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io")
        );
        assert_eq!(
            p,
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": a["metadata"]})
        );

        let only = |k: &str| format!("application/json;as={k};g=meta.k8s.io;v=v1");
        let (status, _, s) = get(&app, cms, &only("PartialObjectMetadata")).await;
        assert_eq!((status, s["reason"].as_str()), (StatusCode::NOT_ACCEPTABLE, Some("NotAcceptable")));
        assert_eq!(
            s["message"],
            "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
        );
        let (status, _, s) = get(&app, &format!("{cms}/a"), &only("PartialObjectMetadataList")).await;
        assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(
            s["message"],
            "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
        );

        for bad in ["application/json;as=Table;v=v2;g=meta.k8s.io", "application/yaml;as=Table;v=v1;g=meta.k8s.io"] {
            let (status, ct, s) = get(&app, cms, bad).await;
            assert_eq!((status, ct.as_str()), (StatusCode::NOT_ACCEPTABLE, "application/json"), "{bad}");
            assert_eq!(s["message"], "only the following media types are accepted: application/json");
        }
    }

    #[tokio::test]
    async fn watch_events_are_one_row_tables() {
        let (app, _) = app().await;
        let cms = "/api/v1/namespaces/default/configmaps";
        create(&app, cms, json!({"metadata": {"name": "before"}})).await;
        let (_, _, t) = get(&app, &format!("{cms}?limit=500"), KUBECTL_GET).await;
        let rv = t["metadata"]["resourceVersion"].as_str().unwrap().to_string();

        // kubectl get -w: a watch from the list's resourceVersion with the Table Accept.
        let resp =
            call(&app, Method::GET, &format!("{cms}?resourceVersion={rv}&watch=true"), Some(KUBECTL_GET), None).await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], "application/json");
        let mut body = resp.into_body();
        let made = create(&app, cms, json!({"metadata": {"name": "w1"}, "data": {"a": "1"}})).await;
        create(&app, cms, json!({"metadata": {"name": "w2"}})).await;
        let del = call(&app, Method::DELETE, &format!("{cms}/w1"), None, None).await;
        assert_eq!(del.status(), StatusCode::OK);
        let events = lines(&mut body, 3, Duration::from_secs(10)).await;
        assert_eq!(events.len(), 3, "{events:?}");
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["ADDED", "ADDED", "DELETED"]);
        for (i, e) in events.iter().enumerate() {
            let t = &e["object"];
            assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")), "{e}");
            assert_eq!(t["rows"].as_array().unwrap().len(), 1, "{e}");
            assert!(t["metadata"]["resourceVersion"].as_str().unwrap().parse::<u64>().unwrap() > rv.parse().unwrap());
            // Column definitions only in the first event.
            assert_eq!(t["columnDefinitions"].is_array(), i == 0, "{e}");
            assert!(t.as_object().unwrap().contains_key("columnDefinitions"));
        }
        assert_eq!(events[0]["object"]["rows"][0]["cells"], json!(["w1", 1, "0s"]));
        assert_eq!(events[0]["object"]["metadata"]["resourceVersion"], made["metadata"]["resourceVersion"]);
        assert_eq!(events[2]["object"]["rows"][0]["cells"][0], "w1");
        drop(body);

        // A watch without a resourceVersion starts with the state, as Tables too.
        let resp =
            call(&app, Method::GET, &format!("{cms}?watch=true&includeObject=Object"), Some(KUBECTL_GET), None).await;
        let mut body = resp.into_body();
        let events = lines(&mut body, 2, Duration::from_secs(10)).await;
        let names: Vec<&str> = events.iter().map(|e| e["object"]["rows"][0]["cells"][0].as_str().unwrap()).collect();
        assert_eq!(names, ["before", "w2"]);
        assert_eq!(events[0]["object"]["rows"][0]["object"]["kind"], "ConfigMap");
        assert!(
            events[0]["object"]["columnDefinitions"].is_array() && events[1]["object"]["columnDefinitions"].is_null()
        );
        drop(body);

        // PartialObjectMetadata watches; a bad includeObject is refused before streaming.
        let resp = call(&app, Method::GET, &format!("{cms}?watch=true"), Some(METADATA), None).await;
        let mut body = resp.into_body();
        let events = lines(&mut body, 1, Duration::from_secs(10)).await;
        assert_eq!(events[0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(events[0]["object"]["metadata"]["name"], "before");
        let resp = call(&app, Method::GET, &format!("{cms}?watch=true&includeObject=x"), Some(KUBECTL_GET), None).await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

        // A plain JSON watch is unchanged.
        let resp = call(&app, Method::GET, &format!("{cms}?watch=true"), Some("application/json"), None).await;
        let mut body = resp.into_body();
        let events = lines(&mut body, 1, Duration::from_secs(10)).await;
        assert_eq!(events[0]["object"]["kind"], "ConfigMap");
    }
}
