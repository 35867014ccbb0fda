//! Objects and events as the cache shares them: one [`Obj`] per stored version, shared
//! by the current state, lists and events; one [`Event`] per change, whose encoded watch
//! line is built once per event type and then shared by every watcher.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{Map, Value};

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// One version of one object: its storage key, resourceVersion and stored JSON bytes
/// (which carry kind and apiVersion). Parsed lazily, once, for selectors.
#[derive(Debug)]
pub struct Obj {
    pub key: String,
    pub rv: u64,
    pub bytes: Bytes,
    parsed: OnceLock<Option<Value>>,
    /// The serving layer's memo: a nonzero tag of a form these bytes are known to be
    /// served in as they are (kuorum-rest tags with the address of an interned resource
    /// definition), 0 while none is known. It caches a pure function of the bytes and
    /// the tag, so a lost or overwritten memo costs a recomputation, never a wrong
    /// answer; and it sits beside the count a list takes on the object anyway, so a
    /// list of 10,000 cached objects does not read the head of each one's bytes first.
    served_as: AtomicUsize,
    /// What selectors read of the object, taken from its JSON the first time a selector
    /// asks: its labels and the field paths asked so far (at most the kind's selectable
    /// fields). Not the parsed JSON: that is several times the bytes, and one LIST with
    /// a selector would keep it for every object of the collection.
    selectable: Mutex<Option<Box<Selectable>>>,
}

/// The labels and field texts of an object, as selectors read them.
#[derive(Debug)]
pub struct Selectable {
    pub labels: Option<Map<String, Value>>,
    /// Each path asked and its text ([`kuorum_api::selector::field_text`]).
    fields: Vec<(Box<str>, String)>,
}

impl Selectable {
    /// The text at `path`, `""` when it was not asked for.
    pub fn field(&self, path: &str) -> String {
        self.fields.iter().find(|(p, _)| &**p == path).map(|(_, t)| t.clone()).unwrap_or_default()
    }

    fn has(&self, path: &str) -> bool {
        self.fields.iter().any(|(p, _)| &**p == path)
    }
}

impl Obj {
    pub fn new(key: String, rv: u64, bytes: Bytes) -> Arc<Obj> {
        Arc::new(Obj {
            key,
            rv,
            bytes,
            parsed: OnceLock::new(),
            served_as: AtomicUsize::new(0),
            selectable: Mutex::new(None),
        })
    }

    /// Builds an object from stored bytes, reading its resourceVersion from them. Only
    /// that field is decoded and nothing is kept: a cache loaded at start or after a
    /// snapshot install once held every object's parsed JSON beside its bytes, twice the
    /// memory of a cache filled by applies.
    pub fn from_stored(key: String, bytes: Bytes) -> Arc<Obj> {
        #[derive(serde::Deserialize)]
        struct Head<'a> {
            #[serde(borrow)]
            metadata: Option<MetaHead<'a>>,
        }
        #[derive(serde::Deserialize)]
        struct MetaHead<'a> {
            #[serde(rename = "resourceVersion", borrow)]
            resource_version: Option<std::borrow::Cow<'a, str>>,
        }
        let rv = serde_json::from_slice::<Head<'_>>(&bytes)
            .ok()
            .and_then(|h| h.metadata?.resource_version?.parse().ok())
            .unwrap_or(0);
        Obj::new(key, rv, bytes)
    }

    /// Whether the memo says the bytes serve as they are in the form tagged `tag`.
    pub fn served_as(&self, tag: usize) -> bool {
        tag != 0 && self.served_as.load(Ordering::Relaxed) == tag
    }

    /// Remembers that the bytes serve as they are in the form tagged `tag`.
    pub fn set_served_as(&self, tag: usize) {
        self.served_as.store(tag, Ordering::Relaxed);
    }

    /// The object as JSON (None if the stored bytes are not JSON, never expected), parsed
    /// once and kept as long as the object: for the few objects read on every request
    /// (RBAC roles and bindings, CRDs). Objects of large collections use
    /// [`Obj::parse`] or [`Obj::with_selectable`].
    pub fn value(&self) -> Option<&Value> {
        self.parsed.get_or_init(|| serde_json::from_slice(&self.bytes).ok()).as_ref()
    }

    /// The object as JSON, parsed for the caller and not kept (unless [`Obj::value`]
    /// kept it already).
    pub fn parse(&self) -> Option<Value> {
        match self.parsed.get() {
            Some(v) => v.clone(),
            None => serde_json::from_slice(&self.bytes).ok(),
        }
    }

    /// `f` of the object's labels and the texts of `paths`, read from its JSON once per
    /// path ([`Obj::selectable`]); None if the bytes are not a JSON object.
    pub fn with_selectable<'a, R>(
        &self,
        paths: impl Iterator<Item = &'a str> + Clone,
        f: impl FnOnce(&Selectable) -> R,
    ) -> Option<R> {
        let mut memo = self.selectable.lock().unwrap_or_else(|e| e.into_inner());
        let complete = memo.as_ref().is_some_and(|s| paths.clone().all(|p| s.has(p)));
        if !complete {
            let parsed;
            let v = match self.parsed.get() {
                Some(v) => v.as_ref(),
                None => {
                    parsed = serde_json::from_slice::<Value>(&self.bytes).ok();
                    parsed.as_ref()
                }
            };
            let v = v.filter(|v| v.is_object())?;
            let s = memo.get_or_insert_with(|| {
                Box::new(Selectable { labels: v["metadata"]["labels"].as_object().cloned(), fields: Vec::new() })
            });
            for p in paths {
                if !s.has(p) {
                    s.fields.push((p.into(), kuorum_api::selector::field_text(v, p)));
                }
            }
        }
        memo.as_deref().map(f)
    }
}

/// One change to one object, at `rv`.
#[derive(Debug)]
pub struct Event {
    pub rv: u64,
    pub kind: EventType,
    /// The object after the change (for a deletion: its last state, at `rv`).
    pub object: Arc<Obj>,
    /// The object before the change, if it existed.
    pub prev: Option<Arc<Obj>>,
    /// The encoded watch line per event type (a filtered watcher may see a MODIFIED as
    /// an ADDED or a DELETED), built on first use.
    lines: [OnceLock<Bytes>; 3],
}

impl Event {
    pub fn new(rv: u64, kind: EventType, object: Arc<Obj>, prev: Option<Arc<Obj>>) -> Arc<Event> {
        Arc::new(Event { rv, kind, object, prev, lines: Default::default() })
    }

    /// `{"type":"...","object":{...}}\n` for this event's object, encoded once per type.
    pub fn line(&self, t: EventType) -> Bytes {
        self.lines[t.slot()].get_or_init(|| event_line(t.as_str(), &self.object.bytes)).clone()
    }
}

/// One watch event line: `{"type":TYPE,"object":OBJECT}` and a newline. `object` must
/// be one line of JSON (stored objects are compact JSON).
pub fn event_line(event_type: &str, object: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(object.len() + event_type.len() + 24);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(event_type.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(object);
    b.put_slice(b"}\n");
    b.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_single_line_json() {
        let o = Obj::from_stored(
            "/k".into(),
            Bytes::from_static(br#"{"kind":"ConfigMap","metadata":{"resourceVersion":"7"}}"#),
        );
        assert_eq!(o.rv, 7);
        let e = Event::new(7, EventType::Modified, o, None);
        let line = e.line(EventType::Added);
        assert!(line.ends_with(b"\n") && !line[..line.len() - 1].contains(&b'\n'));
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["type"], "ADDED");
        assert_eq!(v["object"]["metadata"]["resourceVersion"], "7");
        assert_eq!(e.line(EventType::Added).as_ptr(), line.as_ptr(), "encoded once, then shared");
    }

    #[test]
    fn selectors_keep_what_they_read_not_the_json() {
        let bytes = br#"{"metadata":{"name":"p","labels":{"app":"web"}},"spec":{"nodeName":"n1"},"data":{"k":"big"}}"#;
        let o = Obj::new("/registry/core/pods/default/p".into(), 3, Bytes::from_static(bytes));
        let read = |paths: &[&str]| {
            o.with_selectable(paths.iter().copied(), |s| {
                (s.labels.as_ref().map(|l| l["app"].clone()), paths.iter().map(|p| s.field(p)).collect::<Vec<_>>())
            })
        };
        assert_eq!(read(&["spec.nodeName"]), Some((Some(json!("web")), vec!["n1".to_string()])));
        assert_eq!(read(&["metadata.name", "spec.missing"]), Some((Some(json!("web")), vec!["p".into(), "".into()])));
        assert!(o.parsed.get().is_none(), "the JSON is not kept");
        let s = o.selectable.lock().unwrap();
        assert_eq!(s.as_ref().unwrap().fields.len(), 3, "each path read once");
        drop(s);
        let not_json = Obj::new("/k".into(), 1, Bytes::from_static(b"[1]"));
        assert_eq!(not_json.with_selectable(std::iter::empty(), |_| ()), None);
    }

    #[test]
    fn a_stored_object_reads_its_resource_version_and_keeps_no_parse() {
        let stored = |json: &'static str| Obj::from_stored("/k".into(), Bytes::from_static(json.as_bytes()));
        let o = stored(r#"{"kind":"ConfigMap","data":{"a":"b"},"metadata":{"name":"x","resourceVersion":"42"}}"#);
        assert_eq!(o.rv, 42);
        assert!(
            o.parsed.get().is_none(),
            "the object's JSON is parsed when a selector needs it, not kept from loading"
        );
        assert_eq!(o.value().unwrap()["metadata"]["name"], "x");
        assert_eq!(stored(r#"{"metadata":{"resourceVersion":"4\u0032"}}"#).rv, 42, "an escaped value");
        assert_eq!(stored(r#"{"metadata":{"name":"x"}}"#).rv, 0);
        assert_eq!(stored(r#"{"kind":"x"}"#).rv, 0);
        assert_eq!(stored("not json").rv, 0);
    }
}
