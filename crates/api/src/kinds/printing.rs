//! Owns what every kind's Table printer is made of, as kube-apiserver's
//! `pkg/printers` holds it: the column definition, the row, the cells the printers of many
//! kinds share (name, age, label and selector strings, container lists) and
//! apimachinery's `HumanDuration`. Each kind's columns and cells live in its own file
//! ([`super::Strategy::columns`], [`super::Strategy::row`]); kinds without a printer get the
//! default convertor's `Name` / `Created At` ([`DEFAULT_COLUMNS`], [`default_row`]).
//!
//! The descriptions are the Go types' SwaggerDoc strings kube-apiserver uses (Kubernetes
//! 1.37), the same text as the OpenAPI descriptions in crates/schema/k8s/definitions.json.

use serde_json::{json, Map, Value};

use crate::time::unix_seconds;

/// One column of a Table (`metav1.TableColumnDefinition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    /// An OpenAPI type: `string`, `integer`, `date`, ...
    pub ty: &'static str,
    /// `name` for the column that holds the object's name, else empty.
    pub format: &'static str,
    pub description: &'static str,
    /// 0: always shown; 1: only with `-o wide`.
    pub priority: u8,
}

pub const fn col(name: &'static str, ty: &'static str, description: &'static str) -> Column {
    Column { name, ty, format: "", description, priority: 0 }
}

pub const fn wide(name: &'static str, ty: &'static str, description: &'static str) -> Column {
    Column { name, ty, format: "", description, priority: 1 }
}

// The descriptions are the Go types' SwaggerDoc strings kube-apiserver uses (Kubernetes
// 1.37), the same text as the OpenAPI descriptions in crates/schema/k8s/definitions.json.

pub const NAME_DOC: &str =
    "Name must be unique within a namespace. Is required when creating resources, although some \
     resources may allow a client to request the generation of an appropriate name automatically. Name is primarily \
     intended for creation idempotence and configuration definition. Cannot be updated. More info: \
     https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
pub const CREATED_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was \
     created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set \
     this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for \
     lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
pub const CONTAINERS_DOC: &str = "Names of each container in the template.";
pub const IMAGES_DOC: &str = "Images referenced by each container in the template.";

pub const NAME: Column = Column { name: "Name", ty: "string", format: "name", description: NAME_DOC, priority: 0 };
pub const AGE: Column = col("Age", "string", CREATED_DOC);

/// The default convertor's columns (kinds without a printer).
pub const DEFAULT_COLUMNS: &[Column] = &[NAME, col("Created At", "date", CREATED_DOC)];

impl Column {
    /// The column as a Table's `columnDefinitions` entry.
    pub fn to_json(&self) -> Value {
        json!({"name": self.name, "type": self.ty, "format": self.format, "description": self.description,
               "priority": self.priority})
    }
}

/// One row's cells (one per column) and its conditions (a finished pod is `Completed`).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub cells: Vec<Value>,
    pub conditions: Option<Value>,
}

impl Row {
    /// A row without conditions.
    pub fn plain(cells: Vec<Value>) -> Row {
        Row { cells, conditions: None }
    }
}

/// The default convertor's row: the name and the creation time.
pub fn default_row(obj: &Value) -> Row {
    let created = unix_seconds(str_at(obj, "/metadata/creationTimestamp")).unwrap_or(ZERO_TIME);
    Row::plain(vec![name(obj).into(), crate::time::format(created).into()])
}

/// Go's zero `time.Time` in Unix seconds (`0001-01-01T00:00:00Z`).
pub const ZERO_TIME: i64 = -62_135_596_800;

pub fn name(obj: &Value) -> &str {
    str_at(obj, "/metadata/name")
}

pub fn age(obj: &Value, now: i64) -> String {
    since(str_at(obj, "/metadata/creationTimestamp"), now)
}

pub fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

pub fn int_of(v: Option<&Value>) -> i64 {
    v.and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))).unwrap_or(0)
}

pub fn int_at(v: &Value, ptr: &str) -> i64 {
    int_of(v.pointer(ptr))
}

pub fn arr_at<'a>(v: &'a Value, ptr: &str) -> &'a [Value] {
    v.pointer(ptr).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

pub fn obj_len(v: &Value, ptr: &str) -> usize {
    v.pointer(ptr).and_then(Value::as_object).map_or(0, Map::len)
}

pub fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

pub fn or_none(s: &str) -> String {
    non_empty(s).unwrap_or("<none>").to_string()
}

/// `labels.FormatLabels`: `k=v,...` sorted by key, or `<none>`.
pub fn format_labels(map: Option<&Value>) -> String {
    let Some(m) = map.and_then(Value::as_object).filter(|m| !m.is_empty()) else {
        return "<none>".into();
    };
    let mut pairs: Vec<(&str, &str)> = m.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))).collect();
    pairs.sort();
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: requirements sorted by key; `""` for
/// no selector or an empty one; `<invalid>` for a selector that does not convert.
pub fn label_selector_string(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|s| s.is_object()) else {
        return String::new();
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for e in sel.get("matchExpressions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
        let key = str_at(e, "/key");
        let mut values: Vec<&str> = arr_at(e, "/values").iter().filter_map(Value::as_str).collect();
        values.sort_unstable();
        let text = match str_at(e, "/operator") {
            "In" | "NotIn" if values.is_empty() => return "<invalid>".into(),
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" | "DoesNotExist" if !values.is_empty() => return "<invalid>".into(),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<invalid>".into(),
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    reqs.into_iter().map(|(_, t)| t).collect::<Vec<_>>().join(",")
}

/// Container names and images, each joined with `,` (`layoutContainerCells`).
pub fn container_cells(containers: &[Value]) -> (String, String) {
    let names: Vec<&str> = containers.iter().map(|c| str_at(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_at(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// How long ago `timestamp` (RFC 3339) was at `now`, as [`human_duration`]; `<unknown>`
/// for a missing (zero) time.
pub fn since(timestamp: &str, now: i64) -> String {
    match unix_seconds(timestamp) {
        Some(t) => human_duration(now - t),
        None => "<unknown>".into(),
    }
}

/// apimachinery's `duration.HumanDuration` for a whole number of seconds: about two
/// significant figures ("5s", "3m2s", "15m", "4h5m", "10h", "2d3h", "40d", "2y10d", "9y").
/// Slightly negative (clock skew of a second) is "0s", more is "<invalid>".
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 60 * 2 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{dy}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}
