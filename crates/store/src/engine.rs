//! The storage traits. Each engine owns one kind of data:
//!
//! - [`LogEngine`]: the Raft log (entries by index, opaque bytes) plus a few small
//!   metadata values (vote, committed, last purged). Appends are buffered until
//!   [`LogEngine::sync`]; metadata writes are durable when they return.
//! - [`ObjectEngine`]: the applied state: objects by key, and metadata (the last applied
//!   log id, the membership). A batch is applied atomically: after a crash either all of
//!   it or none of it is there, so "applied index" and "objects" never disagree.
//!
//! Writes are async so an engine that blocks on disk (RocksDB) moves that work off the
//! runtime, while the in-memory engine (the simulator's) never leaves it.

use std::future::Future;

use bytes::Bytes;

/// What an engine reports when it cannot do what it was asked. Storage errors are fatal
/// to a Raft node, so this carries a message and nothing to match on.
#[derive(Debug, thiserror::Error)]
#[error("storage: {0}")]
pub struct StoreError(pub String);

impl StoreError {
    pub fn new(msg: impl std::fmt::Display) -> Self {
        StoreError(msg.to_string())
    }
}

impl From<StoreError> for std::io::Error {
    fn from(e: StoreError) -> Self {
        std::io::Error::other(e.0)
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// The Raft log: an ordered run of entries with no holes, `first..=last`.
pub trait LogEngine: Send + Sync + 'static {
    /// Appends entries (ascending, contiguous with the current last index). They are
    /// readable at once but durable only after the next [`LogEngine::sync`] returns.
    fn append(&self, entries: Vec<(u64, Bytes)>) -> impl Future<Output = StoreResult<()>> + Send;

    /// Makes every append so far durable (an fsync of the log).
    fn sync(&self) -> impl Future<Output = StoreResult<()>> + Send;

    /// Removes every entry with index >= `index` (a follower's conflicting suffix).
    fn truncate_from(&self, index: u64) -> impl Future<Output = StoreResult<()>> + Send;

    /// Removes every entry with index <= `index` (covered by a snapshot).
    fn purge_upto(&self, index: u64) -> impl Future<Output = StoreResult<()>> + Send;

    /// Entries with `start <= index < end`, ascending; missing ones are simply absent.
    fn read_range(&self, start: u64, end: u64) -> StoreResult<Vec<(u64, Bytes)>>;

    /// The highest index in the log, if any.
    fn last_entry(&self) -> StoreResult<Option<(u64, Bytes)>>;

    /// Writes a metadata value; durable when this returns.
    fn put_meta(&self, key: &str, value: Bytes) -> impl Future<Output = StoreResult<()>> + Send;

    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>>;
}

/// One version of one object, as the log decided it: `value` is the object after the
/// change at `rv`, or `None` if `rv` deleted it.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectWrite {
    pub key: String,
    pub rv: u64,
    pub value: Option<Bytes>,
}

/// One atomic change to the object store.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ObjectBatch {
    /// Versioned writes in log order (ascending `rv`). Each one becomes the key's current
    /// value and is kept in its history until compaction.
    pub objects: Vec<ObjectWrite>,
    /// Metadata to write in the same atomic batch (e.g. the last applied log id).
    pub meta: Vec<(String, Bytes)>,
}

impl ObjectBatch {
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.meta.is_empty()
    }
}

/// A consistent copy of everything in an object store: what a Raft snapshot carries.
/// History travels too, so a node restored from a snapshot can still answer reads and
/// resume watches inside the compaction window.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ObjectDump {
    pub objects: Vec<(String, Bytes)>,
    /// Every retained version, ascending by key then `rv`.
    pub history: Vec<ObjectWrite>,
    pub meta: Vec<(String, Bytes)>,
}

/// The applied state as it was at one point, kept aside by [`ObjectEngine::freeze`].
/// Whatever it holds (memory, files) is released when it is dropped.
pub trait FrozenObjects: Send + Sync + 'static {
    /// A metadata value as it was at the frozen point.
    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>>;

    /// Everything as it was at the frozen point: what [`ObjectEngine::dump`] answered then.
    fn dump(&self) -> StoreResult<ObjectDump>;
}

/// The value of `key` in a list of metadata pairs (a dump's, a frozen state's).
pub fn meta_value(meta: &[(String, Bytes)], key: &str) -> Option<Bytes> {
    meta.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
}

/// A dump is its own frozen state (the in-memory engine's).
impl FrozenObjects for ObjectDump {
    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        Ok(meta_value(&self.meta, key))
    }

    fn dump(&self) -> StoreResult<ObjectDump> {
        Ok(self.clone())
    }
}

/// The applied state: Kubernetes objects by key with their recent history (MVCC), plus
/// metadata.
///
/// Worked example of the history: `/a` written at 3, 5, deleted at 8, written at 9.
/// `get_at("/a", 4)` is the value of 3, `get_at("/a", 8)` is none, `get("/a")` is the
/// value of 9. After `compact(6)` the versions 3 is gone (5 still answers reads at 6 and
/// 7), and `get_at("/a", 4)` is no longer answerable (callers refuse rv < compacted).
pub trait ObjectEngine: Send + Sync + 'static {
    /// What [`ObjectEngine::freeze`] sets aside.
    type Frozen: FrozenObjects;

    /// Applies a batch atomically. Readers see all of it or none of it. Durable after the
    /// next [`ObjectEngine::sync`] (the Raft log already holds what is needed to redo it).
    fn write(&self, batch: ObjectBatch) -> impl Future<Output = StoreResult<()>> + Send;

    /// Makes every write so far durable.
    fn sync(&self) -> impl Future<Output = StoreResult<()>> + Send;

    /// The current value of `key`.
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>>;

    /// Current values of the keys starting with `prefix` and greater than `start_after`,
    /// ascending, at most `limit` of them.
    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> StoreResult<Vec<(String, Bytes)>>;

    /// The value `key` had at `rv` (its newest version with version <= `rv`).
    fn get_at(&self, key: &str, rv: u64) -> StoreResult<Option<Bytes>>;

    /// As [`ObjectEngine::scan`], at `rv`.
    fn scan_at(
        &self,
        prefix: &str,
        rv: u64,
        start_after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, Bytes)>>;

    /// Every retained version with version > `after`, ascending by `rv` then key.
    fn history_after(&self, after: u64) -> StoreResult<Vec<ObjectWrite>>;

    /// Forgets the versions no read at `rv` or later can need: for each key, every version
    /// older than its newest version <= `rv`, and that one too if it is a deletion.
    fn compact(&self, rv: u64) -> impl Future<Output = StoreResult<()>> + Send;

    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>>;

    /// A consistent copy of all objects, history and metadata, taken at one point.
    fn dump(&self) -> StoreResult<ObjectDump>;

    /// Sets the current state aside, as it is at one point, to be dumped later: what a
    /// Raft snapshot stands for until a peer needs its data. Taking it copies no data
    /// into memory where the engine can avoid it (RocksDB keeps it on disk, as
    /// hard links to its table files), and writes after it do not change it.
    fn freeze(&self) -> impl Future<Output = StoreResult<Self::Frozen>> + Send;

    /// Replaces everything with `dump`, atomically and durably (snapshot install).
    fn restore(&self, dump: ObjectDump) -> impl Future<Output = StoreResult<()>> + Send;
}
