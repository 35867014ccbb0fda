//! Event (core/v1, also the stored form of events.k8s.io/v1 Events): kube's legacy
//! event rules (namespaces agree; an event with an `eventTime` names its reporter, action
//! and reason); selectable by its involved object, reason, source and type; printed as
//! `kubectl get events` shows it.

use serde_json::Value;

use crate::kinds::common::{at, str_at as str_of};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{core, ResourceDef, Scope};
use crate::validation::{is_dns1123_subdomain, is_qualified_name, FieldError};

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

    fn field_path(&self, label: &str) -> Option<&'static str> {
        (label == "source").then_some(SOURCE_PATH)
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        legacy_errors(obj)
    }

    fn columns(&self) -> &'static [Column] {
        EVENT_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(event_cells(obj, now))
    }
}

/// The `source` field label: the source's component, else the reporting controller.
pub(crate) const SOURCE_PATH: &str = "source.component|reportingComponent";

/// `ReportingInstanceLengthLimit`, `ActionLengthLimit`, `ReasonLengthLimit`.
const SHORT_FIELD_LIMIT: usize = 128;
/// `NoteLengthLimit`.
const NOTE_LIMIT: usize = 1024;

/// kube's `legacyValidateEvent`, which every event passes whatever version it is written
/// through. Fields are named as kube's internal Event names them (`reportingController`
/// is the stored `reportingComponent`).
pub(crate) fn legacy_errors(e: &Object) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let namespace = str_of(e, "metadata.namespace");
    let involved_namespace = str_of(e, "involvedObject.namespace");
    let mismatch =
        || FieldError::invalid("involvedObject.namespace", involved_namespace, "does not match event.namespace");
    if at(e, "eventTime").is_none() {
        let agrees = if involved_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_namespace
        };
        if !agrees {
            errs.push(mismatch());
        }
    } else {
        if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
            errs.push(mismatch());
        }
        let controller = str_of(e, "reportingComponent");
        if controller.is_empty() {
            errs.push(FieldError::required("reportingController", ""));
        }
        for m in is_qualified_name(controller) {
            errs.push(FieldError::invalid("reportingController", controller, m));
        }
        for (field, stored) in [("reportingInstance", "reportingInstance"), ("action", "action"), ("reason", "reason")]
        {
            let v = str_of(e, stored);
            if v.is_empty() {
                errs.push(FieldError::required(field, ""));
            }
            if v.len() > SHORT_FIELD_LIMIT {
                errs.push(FieldError::invalid(field, "", format!("can have at most {SHORT_FIELD_LIMIT} characters")));
            }
        }
        if str_of(e, "message").len() > NOTE_LIMIT {
            errs.push(FieldError::invalid("message", "", format!("can have at most {NOTE_LIMIT} characters")));
        }
    }
    for m in is_dns1123_subdomain(namespace) {
        errs.push(FieldError::invalid("namespace", namespace, m));
    }
    errs
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
