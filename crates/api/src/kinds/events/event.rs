//! Event at events.k8s.io/v1: the same objects as core/v1 Events under other field names
//! (`regarding`, `note`, `reportingController`, `deprecated*`), stored as core Events, so
//! a watch on either version sees writes through the other. Writes through this version
//! also pass kube's strict rules: an `eventTime`, a known `type`, no legacy fields set,
//! and an event that does not change once written but for its series.

use serde_json::Value;

use crate::kinds::common::{at, str_at};
use crate::kinds::converted::ServedAs;
use crate::kinds::core::event::{Event, SOURCE_PATH};
use crate::kinds::Object;
use crate::registry::{ResourceDef, Scope};
use crate::validation::{BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    short_names: &["ev"],
    ..crate::registry::grouped("events.k8s.io", "Event", "events", "event", Scope::Namespaced, "EventList")
};

pub static EVENT: ServedAs = ServedAs {
    def: &DEF,
    stored: &Event,
    to_stored,
    from_stored,
    defaults: |_| {},
    validate,
    selectable_fields: &[
        "reason",
        "regarding.kind",
        "regarding.namespace",
        "regarding.name",
        "regarding.uid",
        "regarding.apiVersion",
        "regarding.resourceVersion",
        "regarding.fieldPath",
        "reportingController",
        "source",
        "type",
    ],
    field_paths: &[
        ("regarding.kind", "involvedObject.kind"),
        ("regarding.namespace", "involvedObject.namespace"),
        ("regarding.name", "involvedObject.name"),
        ("regarding.uid", "involvedObject.uid"),
        ("regarding.apiVersion", "involvedObject.apiVersion"),
        ("regarding.resourceVersion", "involvedObject.resourceVersion"),
        ("regarding.fieldPath", "involvedObject.fieldPath"),
        ("reportingController", "reportingComponent"),
        ("source", SOURCE_PATH),
    ],
};

/// This version's field names and the stored (core) ones; every other field is the same.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn to_stored(obj: &mut Object) {
    rename(obj, RENAMED.iter().map(|&(ours, stored)| (ours, stored)));
}

fn from_stored(obj: &mut Object) {
    rename(obj, RENAMED.iter().map(|&(ours, stored)| (stored, ours)));
}

/// Renames fields in place, keeping their place among the others.
fn rename<'a>(obj: &mut Object, pairs: impl Iterator<Item = (&'a str, &'a str)> + Clone) {
    if !pairs.clone().any(|(from, _)| obj.contains_key(from)) {
        return;
    }
    *obj = std::mem::take(obj)
        .into_iter()
        .map(|(k, v)| match pairs.clone().find(|(from, _)| *from == k) {
            Some((_, to)) => (to.to_string(), v),
            None => (k, v),
        })
        .collect();
}

/// kube's `ValidateEventCreate`/`ValidateEventUpdate` for events.k8s.io/v1, on the stored
/// form, fields named as kube's internal Event names them.
fn validate(e: &Object, old: Option<&Object>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match old {
        None => {
            series_errors(e, &mut errs);
            if at(e, "eventTime").is_none() {
                errs.push(FieldError::required("eventTime", ""));
            }
            let ty = str_at(e, "type");
            if ty != "Normal" && ty != "Warning" {
                errs.push(FieldError::invalid("type", "", format!("has invalid value: {ty}")));
            }
            for field in ["firstTimestamp", "lastTimestamp"] {
                if at(e, field).is_some() {
                    errs.push(FieldError::invalid(field, "", "needs to be unset"));
                }
            }
            if at(e, "count").and_then(Value::as_i64).is_some_and(|c| c != 0) {
                errs.push(FieldError::invalid("count", "", "needs to be unset"));
            }
            if !str_at(e, "source.component").is_empty() || !str_at(e, "source.host").is_empty() {
                errs.push(FieldError::invalid("source", "", "needs to be unset"));
            }
        }
        Some(old) => {
            if at(e, "series") != at(old, "series") {
                series_errors(e, &mut errs);
            }
            for (field, stored) in [
                ("involvedObject", "involvedObject"),
                ("reason", "reason"),
                ("message", "message"),
                ("source", "source"),
                ("firstTimestamp", "firstTimestamp"),
                ("lastTimestamp", "lastTimestamp"),
                ("count", "count"),
                ("type", "type"),
                ("eventTime", "eventTime"),
                ("action", "action"),
                ("related", "related"),
                ("reportingController", "reportingComponent"),
                ("reportingInstance", "reportingInstance"),
            ] {
                let (new_v, old_v) = (at(e, stored), at(old, stored));
                if new_v != old_v {
                    let shown = BadValue::of_json(new_v.unwrap_or(&Value::Null));
                    errs.push(FieldError::invalid_value(field, shown, "field is immutable"));
                }
            }
        }
    }
    errs
}

/// `validateV1EventSeries`.
fn series_errors(e: &Object, errs: &mut Vec<FieldError>) {
    if at(e, "series").is_none() {
        return;
    }
    if at(e, "series.count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errs.push(FieldError::invalid("series.count", "", "should be at least 2"));
    }
    if at(e, "series.lastObservedTime").is_none() {
        errs.push(FieldError::required("series.lastObservedTime", ""));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Strategy;
    use serde_json::json;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn new_event() -> Object {
        obj(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "eventTime": "2026-11-27T08:00:00.000000Z", "reportingController": "example.com/scheduler",
            "reportingInstance": "scheduler-1", "action": "Binding", "reason": "Scheduled",
            "regarding": {"kind": "Pod", "name": "web", "namespace": "default"},
            "note": "bound to node-1", "type": "Normal"}))
    }

    #[test]
    fn fields_are_renamed_both_ways_and_nothing_else_changes() {
        let mut e = new_event();
        let sent = e.clone();
        to_stored(&mut e);
        assert_eq!(e["involvedObject"]["name"], json!("web"));
        assert_eq!(e["message"], json!("bound to node-1"));
        assert_eq!(e["reportingComponent"], json!("example.com/scheduler"));
        assert!(!e.contains_key("regarding") && !e.contains_key("note"));
        from_stored(&mut e);
        assert_eq!(e, sent);
        assert_eq!(e.keys().collect::<Vec<_>>(), sent.keys().collect::<Vec<_>>());
    }

    #[test]
    fn a_new_event_passes_and_the_strict_rules_name_internal_fields() {
        let e = new_event();
        assert_eq!(EVENT.validate(&e, None), vec![]);
        let mut bad = e.clone();
        bad.remove("eventTime");
        bad.insert("deprecatedCount".into(), json!(3));
        bad.insert("type".into(), json!("Info"));
        let fields: Vec<String> = EVENT.validate(&bad, None).into_iter().map(|e| e.field).collect();
        assert!(fields.contains(&"eventTime".to_string()), "{fields:?}");
        assert!(fields.contains(&"count".to_string()), "{fields:?}");
        assert!(fields.contains(&"type".to_string()), "{fields:?}");
        // An eventTime makes the reporter required by the legacy rules too.
        let mut anonymous = e.clone();
        anonymous.remove("reportingController");
        let errs = EVENT.validate(&anonymous, None);
        assert!(errs.iter().all(|e| e.field == "reportingController"), "{errs:?}");
        assert!(errs.iter().any(|e| e.to_string().contains("Required value")), "{errs:?}");
    }

    #[test]
    fn an_event_changes_only_in_its_series() {
        let e = new_event();
        let mut next = e.clone();
        next.insert("series".into(), json!({"count": 2, "lastObservedTime": "2026-11-27T08:01:00.000000Z"}));
        assert_eq!(EVENT.validate(&next, Some(&e)), vec![]);
        next.insert("note".into(), json!("changed"));
        let fields: Vec<String> = EVENT.validate(&next, Some(&e)).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, vec!["message".to_string()]);
    }

    #[test]
    fn field_labels_read_the_stored_fields() {
        assert_eq!(EVENT.field_path("regarding.name"), Some("involvedObject.name"));
        assert_eq!(EVENT.field_path("reason"), None);
        let mut stored = new_event();
        to_stored(&mut stored);
        let sel = crate::selector::FieldSelector::parse(
            "regarding.name=web,source=example.com/scheduler",
            EVENT.selectable_fields(),
        )
        .unwrap()
        .reading(|l| EVENT.field_path(l));
        assert!(sel.matches(&Value::Object(stored)));
    }
}
