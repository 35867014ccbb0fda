//! The history window: the events of the latest changes, oldest first, and what they
//! hold beyond the cache's current objects.
//!
//! A window bounded by count and time alone is not bounded in memory: a client that
//! rewrites a 1 MiB object makes every event keep a 1 MiB old version, so 200,000 events
//! could hold 200 GB. [`Window::bytes`] counts what only the window keeps (each event's
//! own struct, the version its change replaced, a deleted object's last state, and the
//! watch line a watcher encodes from it, kept with the event for the other watchers), and
//! the cache trims the window to a byte budget as well. Objects that are current are
//! shared with the cache and not counted.

use std::collections::VecDeque;
use std::ops::RangeFrom;
use std::sync::Arc;

use crate::event::{Event, EventType};

/// What an event costs beyond the objects it points to: the `Event` (its cached watch
/// lines included), its `Arc`, the queue slot, and the allocator's rounding.
pub const EVENT_OVERHEAD: usize = 256;

/// The bytes only the window keeps of `e` (an upper bound: a deleted object's last
/// state may share its buffer with the version before it, and an event no one watches
/// has no line). The line is counted from the start: it is encoded after the event is
/// in the window, when a watcher's stream first sends it.
pub fn weight(e: &Event) -> usize {
    let replaced = e.prev.as_ref().map_or(0, |p| p.bytes.len());
    let deleted = if e.kind == EventType::Deleted { e.object.bytes.len() } else { 0 };
    let line = e.object.bytes.len() + LINE_FRAME;
    EVENT_OVERHEAD + replaced + deleted + line
}

/// What a watch line adds to its object: `{"type":"MODIFIED","object":` ... `}\n`.
const LINE_FRAME: usize = 32;

#[derive(Default)]
pub struct Window {
    /// Ascending by rv.
    events: VecDeque<Arc<Event>>,
    /// Invariant: the sum of [`weight`] over `events`.
    bytes: usize,
}

impl Window {
    pub fn with_capacity(n: usize) -> Window {
        Window { events: VecDeque::with_capacity(n), bytes: 0 }
    }

    pub fn push_back(&mut self, e: Arc<Event>) {
        self.bytes += weight(&e);
        self.events.push_back(e);
    }

    pub fn pop_front(&mut self) -> Option<Arc<Event>> {
        let e = self.events.pop_front()?;
        self.bytes -= weight(&e);
        Some(e)
    }

    pub fn front(&self) -> Option<&Arc<Event>> {
        self.events.front()
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// What only the window keeps, in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether the window is over either budget.
    pub fn over(&self, max_events: usize, max_bytes: usize) -> bool {
        self.events.len() > max_events || self.bytes > max_bytes
    }

    /// The position of the first event with rv above `rv`.
    pub fn first_after(&self, rv: u64) -> usize {
        self.events.partition_point(|e| e.rv <= rv)
    }

    pub fn range(&self, r: RangeFrom<usize>) -> impl Iterator<Item = &Arc<Event>> {
        self.events.range(r)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::event::Obj;

    fn obj(rv: u64, len: usize) -> Arc<Obj> {
        Obj::new("k".into(), rv, Bytes::from(vec![b' '; len]))
    }

    #[test]
    fn the_overhead_covers_an_event_and_its_arc() {
        assert!(std::mem::size_of::<Event>() + 16 <= EVENT_OVERHEAD, "{}", std::mem::size_of::<Event>());
    }

    #[test]
    fn the_window_counts_replaced_and_deleted_versions_only() {
        let mut w = Window::default();
        let line = 1000 + LINE_FRAME;
        w.push_back(Event::new(1, EventType::Added, obj(1, 1000), None));
        assert_eq!(w.bytes(), EVENT_OVERHEAD + line, "a new object is the cache's, its line the window's");
        let line_for = |e: &Event| e.line(EventType::Added).len();
        assert!(line_for(&Event::new(1, EventType::Added, obj(1, 1000), None)) <= line, "the frame covers a line");
        w.push_back(Event::new(2, EventType::Modified, obj(2, 1000), Some(obj(1, 1000))));
        assert_eq!(w.bytes(), 2 * (EVENT_OVERHEAD + line) + 1000, "the replaced version is the window's");
        w.push_back(Event::new(3, EventType::Deleted, obj(3, 1000), Some(obj(2, 1000))));
        let all = 3 * (EVENT_OVERHEAD + line) + 3000;
        assert_eq!(w.bytes(), all);
        assert!(w.over(2, usize::MAX) && w.over(3, all - 1) && !w.over(3, all));
        assert_eq!(w.first_after(1), 1);
        w.pop_front();
        w.pop_front();
        assert_eq!(w.bytes(), EVENT_OVERHEAD + line + 2000);
        w.pop_front();
        assert_eq!((w.bytes(), w.len()), (0, 0));
    }
}
