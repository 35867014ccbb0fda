//! The watch cache of one node: what every read and every watch is served from.
//!
//! It holds the current objects at the applied resourceVersion ([`cache::WatchCache`]),
//! indexed by storage key so a collection is one range scan, and a window of recent
//! events in resourceVersion order, bounded by count, time and bytes ([`window`]). It is fed by the node's own state machine, after each
//! applied batch is written, with the changes in log order: so it is never ahead of the
//! local state machine, and it has one event per change ([`event`]). Watchers
//! ([`cache::Watch`]) get events through a bounded queue each ([`queue`]); one that falls
//! behind is cut off, its queue freed, instead of holding the others back or the node's
//! memory ([`filter`] decides what each one sees). A watch that starts with the current
//! state reads it from a snapshot of the collection shared with the other watches that
//! start from the same state, one object at a time as its client takes them
//! ([`initial`]): watches cost the node a few hundred bytes each, not a copy of what
//! they watch.

pub mod cache;
pub mod event;
pub mod filter;
pub mod initial;
pub mod queue;
pub mod window;

pub use cache::{
    CacheConfig, CacheList, CacheSize, PrefixCount, TooOld, Watch, WatchCache, WatchItem, WatchStart, WatchStarted,
    WatchersSize,
};
pub use event::{event_line, Event, EventType, Obj};
pub use filter::WatchFilter;
pub use initial::{InitialState, Snapshot};
pub use queue::{TryRecvError, WatchReceiver};
