//! What one watcher or list wants: a key prefix (the collection) and label and field
//! selectors. A change is seen through a filter as kube-apiserver does: an object that
//! stops matching arrives as DELETED, one that starts matching as ADDED.

use kuorum_api::selector::{FieldSelector, LabelSelector};

use crate::event::{Event, EventType, Obj};

#[derive(Debug, Clone)]
pub struct WatchFilter {
    pub prefix: String,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl WatchFilter {
    /// Everything under `prefix`.
    pub fn prefix(prefix: impl Into<String>) -> WatchFilter {
        WatchFilter { prefix: prefix.into(), labels: LabelSelector(Vec::new()), fields: FieldSelector(Vec::new()) }
    }

    /// Whether no selector narrows the prefix.
    pub fn selects_all(&self) -> bool {
        self.labels.0.is_empty() && self.fields.0.is_empty()
    }

    /// Whether `obj` is in this watcher's view.
    pub fn matches(&self, obj: &Obj) -> bool {
        if !obj.key.starts_with(&self.prefix) {
            return false;
        }
        if self.selects_all() {
            return true;
        }
        obj.with_selectable(self.fields.paths(), |s| {
            self.labels.matches(s.labels.as_ref()) && self.fields.matches_by(|path| s.field(path))
        })
        .unwrap_or(false)
    }

    /// How `event` looks through this filter, if it is seen at all.
    pub fn view(&self, event: &Event) -> Option<EventType> {
        if !event.object.key.starts_with(&self.prefix) {
            return None;
        }
        if self.selects_all() {
            return Some(event.kind);
        }
        let now = self.matches(&event.object);
        let before = event.prev.as_ref().is_some_and(|p| self.matches(p));
        match (event.kind, before, now) {
            (EventType::Added, _, true) => Some(EventType::Added),
            (EventType::Deleted, true, _) | (EventType::Deleted, _, true) => Some(EventType::Deleted),
            (EventType::Modified, true, true) => Some(EventType::Modified),
            (EventType::Modified, false, true) => Some(EventType::Added),
            (EventType::Modified, true, false) => Some(EventType::Deleted),
            _ => None,
        }
    }
}
