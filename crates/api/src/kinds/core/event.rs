//! Event (core/v1): selectable by its involved object, reason, source and type; printed
//! as `kubectl get events` shows it.

use serde_json::Value;

use crate::kinds::printing::*;
use crate::kinds::Strategy;
use crate::registry::{core, ResourceDef, Scope};

pub static DEF: ResourceDef = core("Event", "events", "event", Scope::Namespaced, &["ev"], &[], &[], "EventList");

const EVENT_COLUMNS: &[Column] = &[
    col("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
    col("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
    col(
        "Reason",
        "string",
        "This should be a short, machine understandable string that gives the reason for the transition into the \
         object's current status.",
    ),
    col("Object", "string", "The object that this event is about."),
    wide(
        "Subobject",
        "string",
        "If referring to a piece of an object instead of an entire object, this string should contain a valid \
         JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object \
         reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \
         \"name\" refers to the name of the container that triggered the event) or if no container name is specified \
         \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some \
         well-defined way of referencing a part of an object.",
    ),
    wide("Source", "string", "The component reporting this event. Should be a short machine understandable string."),
    col("Message", "string", "A human-readable description of the status of this operation."),
    wide(
        "First Seen",
        "string",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    ),
    wide("Count", "string", "The number of times this event has occurred."),
    Column { name: "Name", ty: "string", format: "name", description: NAME_DOC, priority: 1 },
];

pub struct Event;

impl Strategy for Event {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ]
    }

    fn columns(&self) -> &'static [Column] {
        EVENT_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(event_cells(obj, now))
    }
}

fn event_cells(e: &Value, now: i64) -> Vec<Value> {
    let first = match non_empty(str_at(e, "/firstTimestamp")) {
        Some(t) => since(t, now),
        None => since(str_at(e, "/eventTime"), now),
    };
    let mut last = match non_empty(str_at(e, "/lastTimestamp")) {
        Some(t) => since(t, now),
        None => first.clone(),
    };
    let mut count = int_at(e, "/count");
    if let Some(series) = e.get("series").filter(|s| s.is_object()) {
        last = since(str_at(series, "/lastObservedTime"), now);
        count = int_at(series, "/count");
    } else if count == 0 {
        // Singleton events of the new API have no count.
        count = 1;
    }
    let kind = str_at(e, "/involvedObject/kind").to_lowercase();
    let target = match non_empty(str_at(e, "/involvedObject/name")) {
        Some(n) => format!("{kind}/{n}"),
        None => kind,
    };
    let component = non_empty(str_at(e, "/source/component")).unwrap_or(str_at(e, "/reportingComponent"));
    let instance = non_empty(str_at(e, "/source/host")).unwrap_or(str_at(e, "/reportingInstance"));
    let source = if instance.is_empty() { component.to_string() } else { format!("{component}, {instance}") };
    vec![
        last.into(),
        str_at(e, "/type").into(),
        str_at(e, "/reason").into(),
        target.into(),
        str_at(e, "/involvedObject/fieldPath").into(),
        source.into(),
        str_at(e, "/message").trim().into(),
        first.into(),
        count.into(),
        name(e).into(),
    ]
}
