//! The watch cache of one node: what every read and every watch is served from.
//!
//! It holds the current objects at the applied resourceVersion ([`cache::WatchCache`]),
//! indexed by storage key so a collection is one range scan, and a window of recent
//! events in resourceVersion order. It is fed by the node's own state machine, after each
//! applied batch is written, with the changes in log order: so it is never ahead of the
//! local state machine, and it has one event per change ([`event`]). Watchers
//! ([`cache::Watch`]) get events through a bounded queue each; one that falls behind is
//! cut off instead of holding the others back ([`filter`] decides what each one sees).

pub mod cache;
pub mod event;
pub mod filter;

pub use cache::{CacheConfig, CacheList, CacheSize, TooOld, Watch, WatchCache, WatchItem, WatchStart, WatchStarted};
pub use event::{event_line, Event, EventType, Obj};
pub use filter::WatchFilter;
