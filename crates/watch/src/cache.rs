//! [`WatchCache`]: the current objects of one node at its applied resourceVersion, a
//! window of recent events, and the watchers fed from them.
//!
//! Invariants (each guarded by the one state lock):
//! - `rv` only grows, and equals the last applied index the state machine reported; the
//!   cache is updated after the state machine wrote the batch, so it never runs ahead.
//! - `events` ascend by rv, one per change; every change with rv > `oldest` is in
//!   `events`, so a watch from any rv >= `oldest` misses and repeats nothing.
//! - A watcher's queue receives events in rv order and a bookmark only after every event
//!   at or below its rv was queued: a bookmark never claims an rv it has not delivered.
//!
//! Worked example: the cache is at rv 12 with events 9..=12 and oldest 8. A watch from 10
//! is given events 11 and 12 at once, then live events from 13 on. A watch from 5 is
//! refused ([`TooOld`]): the client relists. After `compact(11)`, oldest is 11. A watch
//! whose replay holds more events than a watcher's queue is refused the same way.

use kuorum_mutation::{self as mutation, Mutation};
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;
// tokio's clock, not std's: under the simulator it is simulated time.
use tokio::time::Instant;

use bytes::Bytes;
use kuorum_store::apply::{Change, ChangeKind};

use crate::event::{Event, EventType, Obj};
use crate::filter::WatchFilter;
use crate::initial::{InitialState, Snapshot};
use crate::queue::{Queue, WatchReceiver};
use crate::window::Window;

/// Sizes of the cache and of each watcher's queue.
#[derive(Debug, Clone)]
pub struct CacheConfig {
    /// Events kept at most; older ones fall out of the window (and a watch from before
    /// them gets 410) even before compaction.
    pub max_events: usize,
    /// Bytes the window may keep beyond the current objects ([`crate::window`]): the
    /// versions changes replaced, deleted objects, watch lines, the events themselves. Older events
    /// fall out past it, as past `max_events`.
    pub max_event_bytes: usize,
    /// Items a watcher may have queued before it is cut off as too slow (16 bytes each:
    /// the events are shared). A watch from a resourceVersion gets its replay through
    /// the same queue, so this is also how many of its events back a watch can start:
    /// from further back it is refused as too old (410; the client relists).
    pub watcher_queue: usize,
    /// How often a watcher that asked for bookmarks gets one.
    pub bookmark_every: Duration,
}

/// 256 MiB: about 200,000 creates of 1 KiB objects (with their watch lines), 115,000
/// updates of them, or 125 rewrites of a 1 MiB object.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 256 << 20;

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            max_events: 200_000,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            watcher_queue: 4096,
            bookmark_every: Duration::from_secs(10),
        }
    }
}

/// What a watcher receives.
#[derive(Debug, Clone)]
pub enum WatchItem {
    /// An event, as seen through the watcher's filter.
    Event(EventType, Arc<Event>),
    /// Every event up to this rv has been delivered.
    Bookmark(u64),
}

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// Events with rv greater than this one.
    After(u64),
    /// The current state (returned as `initial`), then every event after it.
    Now,
}

/// A watch from an rv the window no longer covers, or from so far back that its replay
/// would not fit its queue (`oldest` is then the event it overflowed at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooOld {
    pub requested: u64,
    pub oldest: u64,
}

struct Watcher {
    filter: WatchFilter,
    /// Events at or below this rv were before the watch's start.
    after: u64,
    bookmarks: bool,
    last_bookmark: Instant,
    queue: Arc<Queue>,
    /// Events queued so far (the drop-event mutation counts them).
    sent: u64,
}

impl Drop for Watcher {
    /// However the cache lets go of a watcher (cut off, reset, unregistered), its stream
    /// ends once it has read what is queued.
    fn drop(&mut self) {
        self.queue.close();
    }
}

/// The last snapshots of collections taken for watches with initial events. One stays
/// valid while no object under its prefix changes, however far the rv moves; it is
/// held weakly, so it lives only as long as a watch still reads it.
struct SnapshotMemo {
    prefix: String,
    objects: Weak<[Arc<Obj>]>,
}

/// Snapshots remembered at most (distinct collections watched with initial events at
/// once); a forgotten one costs a new list of pointers, never a wrong answer.
const SNAPSHOT_MEMOS: usize = 16;

struct State {
    rv: u64,
    oldest: u64,
    objects: BTreeMap<String, Arc<Obj>>,
    /// The encoded size of `objects`' bytes, kept with every change to it.
    object_bytes: usize,
    events: Window,
    watchers: BTreeMap<u64, Watcher>,
    next_watcher: u64,
    snapshots: Vec<SnapshotMemo>,
    /// Prefixes whose objects are counted ([`WatchCache::counter`]); each count equals
    /// the number of keys in `objects` under its prefix whenever the lock is free.
    counted: Vec<Arc<PrefixCount>>,
}

/// How many objects a cache holds under one key prefix, kept by the cache with every
/// change and read without its lock: a caller that finds none skips a lookup it would
/// make on every request (admission configuration that is usually absent).
#[derive(Debug)]
pub struct PrefixCount {
    prefix: String,
    count: AtomicUsize,
}

impl PrefixCount {
    /// The objects under the prefix as of the last change the cache applied.
    pub fn get(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }
}

/// What a cache holds now (the memory gauges report it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSize {
    /// Current objects, and their encoded bytes.
    pub objects: usize,
    pub object_bytes: usize,
    /// Events in the window (their objects are shared with `objects` while current).
    pub events: usize,
    /// What the window keeps beyond the current objects ([`crate::window::weight`]).
    pub event_bytes: usize,
}

/// The watch cache of one node. Shared as `Arc<WatchCache>`.
pub struct WatchCache {
    config: CacheConfig,
    state: Mutex<State>,
    /// `state.watchers.len()` as of the last change to it, readable without the lock
    /// (streams read it per event to size their flush interval).
    watching: AtomicUsize,
}

/// What the watchers of a cache hold now: the cost of watches beyond the shared data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchersSize {
    pub watchers: usize,
    /// Items queued for all watchers together (each at most `watcher_queue`).
    pub queued: usize,
    /// Remembered collection snapshots still read by some watch, and their objects
    /// (pointers: the objects are the cache's own).
    pub snapshots: usize,
    pub snapshot_objects: usize,
}

/// A running watch. Dropping it unregisters the watcher.
pub struct Watch {
    pub rx: WatchReceiver,
    id: u64,
    cache: Weak<WatchCache>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(c) = self.cache.upgrade() {
            let mut s = c.lock();
            s.watchers.remove(&self.id);
            c.recount(&s);
        }
    }
}

/// A started watch: for [`WatchStart::Now`], the state it starts from.
pub struct WatchStarted {
    pub watch: Watch,
    /// The cache's rv when the watch was registered (the initial state's rv).
    pub rv: u64,
    /// For [`WatchStart::Now`]: the matching objects at `rv`, in key order, read from a
    /// snapshot shared with other watches of the collection (empty otherwise).
    pub initial: InitialState,
}

/// A page of a list served from the cache.
pub struct CacheList {
    /// The rv the list was read at.
    pub rv: u64,
    pub items: Vec<Arc<Obj>>,
    /// Whether objects under the prefix (matching or not) follow a full page.
    pub more: bool,
    /// How many objects under the prefix follow the last item (set when the page is full
    /// and the caller asked for the count).
    pub remaining: Option<usize>,
}

impl WatchCache {
    pub fn new(config: CacheConfig) -> Arc<WatchCache> {
        Arc::new(WatchCache {
            config,
            state: Mutex::new(State {
                rv: 0,
                oldest: 0,
                objects: BTreeMap::new(),
                object_bytes: 0,
                events: Window::default(),
                watchers: BTreeMap::new(),
                next_watcher: 1,
                snapshots: Vec::new(),
                counted: Vec::new(),
            }),
            watching: AtomicUsize::new(0),
        })
    }

    /// Publishes the watcher count; call with the lock held after changing `watchers`.
    fn recount(&self, s: &State) {
        self.watching.store(s.watchers.len(), Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces everything (start-up, snapshot install): `objects` are the state at `rv`;
    /// `changes` every change after `oldest` (ascending). Watchers are cut off: they
    /// resume from their last rv and are served from the new window if it covers it.
    pub fn reset(&self, rv: u64, oldest: u64, objects: Vec<(String, Bytes)>, changes: Vec<Change>) {
        let objects: BTreeMap<String, Arc<Obj>> =
            objects.into_iter().map(|(k, b)| (k.clone(), Obj::from_stored(k, b))).collect();
        // Each version held once: an event's object is the current object when it is the
        // current version, and its prev the object of the key's event before it (the
        // engine hands both over as copies of their own).
        let mut last: HashMap<String, Arc<Obj>> = HashMap::new();
        let mut events = Window::with_capacity(changes.len());
        for c in changes {
            let before = last.get(&c.key).cloned();
            let mut event = to_event(c, before);
            if let Some(current) = objects.get(&event.object.key).filter(|o| o.rv == event.rv) {
                event = Event::new(event.rv, event.kind, Arc::clone(current), event.prev.clone());
            }
            last.insert(event.object.key.clone(), Arc::clone(&event.object));
            events.push_back(event);
        }
        let mut oldest = oldest;
        while events.over(self.config.max_events, self.config.max_event_bytes) {
            if let Some(e) = events.pop_front() {
                oldest = e.rv;
            }
        }
        let mut s = self.lock();
        s.rv = rv;
        s.oldest = oldest.min(rv);
        s.object_bytes = objects.values().map(|o| o.bytes.len()).sum();
        s.objects = objects;
        s.events = events;
        s.watchers.clear();
        s.snapshots.clear();
        for c in &s.counted {
            c.count.store(count_under(&s.objects, &c.prefix, usize::MAX), Ordering::Release);
        }
        self.recount(&s);
    }

    /// The count of the objects under `prefix`, kept from now on (one per prefix: asking
    /// again gives the same counter). Each counted prefix costs every applied change a
    /// prefix comparison, so this is for a handful fixed at start-up.
    pub fn counter(&self, prefix: &str) -> Arc<PrefixCount> {
        let mut s = self.lock();
        if let Some(c) = s.counted.iter().find(|c| c.prefix == prefix) {
            return Arc::clone(c);
        }
        let count = count_under(&s.objects, prefix, usize::MAX);
        let c = Arc::new(PrefixCount { prefix: prefix.to_string(), count: AtomicUsize::new(count) });
        s.counted.push(Arc::clone(&c));
        c
    }

    /// The state machine applied everything up to `rv`, making `changes` (ascending rv).
    pub fn apply(&self, rv: u64, changes: Vec<Change>) {
        let mut guard = self.lock();
        let s = &mut *guard;
        for change in changes {
            if !s.snapshots.is_empty() {
                s.snapshots.retain(|m| !change.key.starts_with(&m.prefix) && m.objects.strong_count() > 0);
            }
            // One walk down the tree per change: the key's slot is read and written
            // through the same entry.
            let event = match s.objects.entry(change.key.clone()) {
                Entry::Occupied(mut slot) => {
                    let event = to_event(change, Some(slot.get().clone()));
                    let gone = match event.kind {
                        EventType::Deleted => {
                            count_change(&s.counted, slot.key(), -1);
                            slot.remove()
                        }
                        _ => {
                            s.object_bytes += event.object.bytes.len();
                            slot.insert(event.object.clone())
                        }
                    };
                    s.object_bytes -= gone.bytes.len();
                    event
                }
                Entry::Vacant(slot) => {
                    let event = to_event(change, None);
                    if event.kind != EventType::Deleted {
                        count_change(&s.counted, slot.key(), 1);
                        s.object_bytes += event.object.bytes.len();
                        slot.insert(event.object.clone());
                    }
                    event
                }
            };
            s.watchers.retain(|_, w| deliver(w, &event));
            s.events.push_back(event);
        }
        self.recount(s);
        while s.events.over(self.config.max_events, self.config.max_event_bytes) {
            if let Some(e) = s.events.pop_front() {
                s.oldest = e.rv;
            }
        }
        if rv > s.rv {
            s.rv = rv;
        }
    }

    /// How many objects and events the cache holds, and the objects' encoded bytes.
    pub fn size(&self) -> CacheSize {
        let s = self.lock();
        CacheSize {
            objects: s.objects.len(),
            object_bytes: s.object_bytes,
            events: s.events.len(),
            event_bytes: s.events.bytes(),
        }
    }

    /// History at or below `rv` is gone cluster-wide: watches from before it get 410.
    pub fn compact(&self, rv: u64) {
        let mut s = self.lock();
        let rv = rv.min(s.rv);
        while s.events.front().is_some_and(|e| e.rv <= rv) {
            s.events.pop_front();
        }
        if rv > s.oldest {
            s.oldest = rv;
        }
    }

    /// The applied rv the cache reflects.
    pub fn rv(&self) -> u64 {
        self.lock().rv
    }

    /// The lowest rv a watch can start after.
    pub fn oldest(&self) -> u64 {
        self.lock().oldest
    }

    /// What the watchers hold beyond the shared objects and events.
    pub fn watchers_size(&self) -> WatchersSize {
        let s = self.lock();
        let live: Vec<Snapshot> = s.snapshots.iter().filter_map(|m| m.objects.upgrade()).collect();
        WatchersSize {
            watchers: s.watchers.len(),
            queued: s.watchers.values().map(|w| w.queue.len()).sum(),
            snapshots: live.len(),
            snapshot_objects: live.iter().map(|o| o.len()).sum(),
        }
    }

    /// How many watches are registered (without taking the lock).
    pub fn watcher_count(&self) -> usize {
        self.watching.load(Ordering::Relaxed)
    }

    /// One object as the cache has it now, with the cache's rv.
    pub fn get(&self, key: &str) -> (u64, Option<Arc<Obj>>) {
        let s = self.lock();
        (s.rv, s.objects.get(key).cloned())
    }

    /// Matching objects after `start_after`, in key order, at most `limit` of them, with
    /// the count of the objects after a full page.
    pub fn list(&self, filter: &WatchFilter, start_after: Option<&str>, limit: usize) -> CacheList {
        self.page(filter, start_after, limit, true)
    }

    /// [`WatchCache::list`], counting what follows a full page only when `count` is set:
    /// the count walks every later key under the lock, which the later pages of a paged
    /// list need not do again.
    pub fn page(&self, filter: &WatchFilter, start_after: Option<&str>, limit: usize, count: bool) -> CacheList {
        let s = self.lock();
        let lower = match start_after {
            Some(a) if a >= filter.prefix.as_str() => Bound::Excluded(a.to_string()),
            _ => Bound::Included(filter.prefix.clone()),
        };
        // With an upper bound, the tree finds the range's ends and the loop touches no
        // key: each key's bytes are a cache miss of their own, 10,000 of them in a list
        // of 10,000 objects.
        let end = prefix_end(&filter.prefix);
        let exact = end.is_some();
        let upper = end.map_or(Bound::Unbounded, Bound::Excluded);
        let all = filter.selects_all();
        let mut items = Vec::new();
        let mut range = s.objects.range((lower, upper)).take_while(|(k, _)| exact || k.starts_with(&filter.prefix));
        for (_, o) in range.by_ref() {
            if all || filter.matches(o) {
                items.push(o.clone());
                if items.len() >= limit {
                    break;
                }
            }
        }
        let (more, remaining) = match items.len() >= limit {
            false => (false, None),
            true if count => {
                let n = range.count();
                (n > 0, Some(n))
            }
            true => (range.next().is_some(), None),
        };
        CacheList { rv: s.rv, items, more, remaining }
    }

    /// How many objects are under `prefix`, counted up to `max`: what a LIST of it will
    /// cost, estimated before it is served (API Priority and Fairness).
    pub fn count_up_to(&self, prefix: &str, max: usize) -> usize {
        count_under(&self.lock().objects, prefix, max)
    }

    /// Starts a watch. With [`WatchStart::After`], the window must cover the start.
    pub fn watch(
        self: &Arc<Self>,
        filter: WatchFilter,
        start: WatchStart,
        bookmarks: bool,
    ) -> Result<WatchStarted, TooOld> {
        let queue = Queue::new(self.config.watcher_queue);
        let mut guard = self.lock();
        let s = &mut *guard;
        let (after, initial) = match start {
            WatchStart::After(n) => {
                if n < s.oldest {
                    return Err(TooOld { requested: n, oldest: s.oldest });
                }
                (n, InitialState::none())
            }
            WatchStart::Now => (s.rv, InitialState::new(snapshot(s, &filter.prefix), &filter)),
        };
        let mut w =
            Watcher { filter, after, bookmarks, last_bookmark: Instant::now(), queue: Arc::clone(&queue), sent: 0 };
        // Replay the window after the start. A replay longer than the queue would cut the
        // watcher off before its first event, and its client, resuming from the same rv,
        // again, for ever: it is refused as too old instead, so the client relists.
        let first = s.events.first_after(after);
        for e in s.events.range(first..) {
            if !deliver(&mut w, e) {
                return Err(TooOld { requested: after, oldest: e.rv });
            }
        }
        let id = s.next_watcher;
        s.next_watcher += 1;
        let rv = s.rv;
        s.watchers.insert(id, w);
        self.recount(s);
        Ok(WatchStarted { watch: Watch { rx: WatchReceiver { queue }, id, cache: Arc::downgrade(self) }, rv, initial })
    }

    /// Sends a bookmark at the cache's rv to every watcher that asked for bookmarks and
    /// has had none for `bookmark_every` (call it on a timer).
    pub fn bookmark_tick(&self) {
        let now = Instant::now();
        let every = self.config.bookmark_every;
        let mut s = self.lock();
        let rv = if mutation::active(Mutation::EarlyBookmark) { s.rv + 5 } else { s.rv };
        s.watchers.retain(|_, w| {
            if !w.bookmarks || now.duration_since(w.last_bookmark) < every || rv <= w.after {
                return true;
            }
            w.last_bookmark = now;
            send(w, WatchItem::Bookmark(rv))
        });
        self.recount(&s);
    }
}

/// The event of `c`. `current` is the cache's version of the object before `c`: when it
/// is the version `c` replaced, the event shares it as `prev`, so the window holds each
/// version once and it is not parsed again for its resourceVersion.
fn to_event(c: Change, current: Option<Arc<Obj>>) -> Arc<Event> {
    let kind = match c.kind {
        ChangeKind::Added => EventType::Added,
        ChangeKind::Modified => EventType::Modified,
        ChangeKind::Deleted => EventType::Deleted,
    };
    let prev = c.prev.map(|p| match current {
        Some(cur) if cur.bytes == p => cur,
        _ => Obj::from_stored(c.key.clone(), p),
    });
    Event::new(c.rv, kind, Obj::new(c.key, c.rv, c.object), prev)
}

/// Queues `event` for `w` if it is after the watch's start and in its view. False if the
/// watcher is gone or too slow (it is then dropped: its stream ends, its client resumes).
fn deliver(w: &mut Watcher, event: &Arc<Event>) -> bool {
    if event.rv <= w.after {
        return true;
    }
    match w.filter.view(event) {
        Some(_) if mutation::active(Mutation::DropEvent) && bump(&mut w.sent) % 50 == 49 => true,
        Some(t) => send(w, WatchItem::Event(t, event.clone())),
        None => true,
    }
}

fn bump(n: &mut u64) -> u64 {
    *n += 1;
    *n - 1
}

fn send(w: &mut Watcher, item: WatchItem) -> bool {
    let queued = w.queue.push(item);
    if !queued {
        tracing::debug!("watcher too slow: cut off");
    }
    queued
}

/// The objects under `prefix` now: a remembered snapshot if none of them changed since
/// it was taken and a watch still reads it, else a new one (remembered).
fn snapshot(s: &mut State, prefix: &str) -> Snapshot {
    if let Some(objects) = s.snapshots.iter().find(|m| m.prefix == prefix).and_then(|m| m.objects.upgrade()) {
        return objects;
    }
    let upper = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
    let objects: Snapshot = s
        .objects
        .range::<str, _>((Bound::Included(prefix), upper.as_ref().map(String::as_str)))
        .take_while(|(k, _)| k.starts_with(prefix))
        .map(|(_, o)| o.clone())
        .collect();
    s.snapshots.retain(|m| m.prefix != prefix && m.objects.strong_count() > 0);
    if s.snapshots.len() >= SNAPSHOT_MEMOS {
        s.snapshots.remove(0);
    }
    s.snapshots.push(SnapshotMemo { prefix: prefix.to_string(), objects: Arc::downgrade(&objects) });
    objects
}

impl kuorum_store::ApplyObserver for WatchCache {
    fn applied(&self, rv: u64, changes: Vec<Change>, compacted: Option<u64>) {
        self.apply(rv, changes);
        if let Some(c) = compacted {
            self.compact(c);
        }
    }

    fn reset(&self, rv: u64, oldest: u64, objects: Vec<(String, Bytes)>, changes: Vec<Change>) {
        WatchCache::reset(self, rv, oldest, objects, changes);
    }
}

/// How many of `objects`' keys start with `prefix`, counted up to `max`.
fn count_under(objects: &BTreeMap<String, Arc<Obj>>, prefix: &str, max: usize) -> usize {
    let lower = Bound::Included(prefix.to_string());
    let upper = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
    objects.range((lower, upper)).take_while(|(k, _)| k.starts_with(prefix)).take(max).count()
}

/// Moves the counts of the prefixes `key` is under by `by` (a key added or removed).
fn count_change(counted: &[Arc<PrefixCount>], key: &str, by: isize) {
    for c in counted.iter().filter(|c| key.starts_with(&c.prefix)) {
        if by > 0 {
            c.count.fetch_add(1, Ordering::Release);
        } else {
            c.count.fetch_sub(1, Ordering::Release);
        }
    }
}

/// The least key above every key that starts with `prefix`, when a key of ASCII makes it
/// exact: `/registry/configmaps/default/` gives `/registry/configmaps/default0`. None
/// (no bound; the caller checks each key) otherwise.
fn prefix_end(prefix: &str) -> Option<String> {
    let (&last, head) = prefix.as_bytes().split_last()?;
    if last >= 0x7f {
        return None;
    }
    let mut end = head.to_vec();
    end.push(last + 1);
    String::from_utf8(end).ok()
}
