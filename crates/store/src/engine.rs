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

/// One piece of a dump, as a snapshot is streamed: a frozen state is read, sent and
/// restored part by part, so no side holds the whole state encoded at once.
///
/// Worked example: `/a` written at 3 and 5, `/b` written at 4 and deleted at 6. The
/// dump's history is `/a`@3, `/a`@5, `/b`@4, `/b`@6 (deleted); its parts are
/// `Meta(..)`, `Objects([("/a", 5, ..)])`, `History([/a@3, /b@4, /b@6])`: each current
/// object with its rv, then the versions that are not current.
#[derive(Debug, Clone, PartialEq)]
pub enum DumpPart {
    Meta(Vec<(String, Bytes)>),
    /// Current objects as (key, rv of the current version, value), ascending by key.
    Objects(Vec<(String, u64, Bytes)>),
    /// Superseded versions and deletions, ascending by key then `rv`.
    History(Vec<ObjectWrite>),
}

impl DumpPart {
    /// Roughly how many bytes one item of a part carries.
    pub fn size_of_item(key: &str, value: Option<&[u8]>) -> usize {
        key.len() + 16 + value.map_or(0, |v| v.len())
    }
}

impl ObjectDump {
    /// The dump as parts of about `part_bytes` each (a part goes over by at most one
    /// item): the metadata, then the objects, then the history that is not current.
    pub fn into_parts(self, part_bytes: usize) -> Vec<DumpPart> {
        let mut newest: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
        for w in &self.history {
            let rv = newest.entry(w.key.as_str()).or_insert(w.rv);
            *rv = (*rv).max(w.rv);
        }
        let mut parts = vec![DumpPart::Meta(self.meta.clone())];
        // Parts carry keys in ascending order (an engine may write them straight into a
        // sorted file); a dump's objects need not come sorted.
        let mut objects: Vec<&(String, Bytes)> = self.objects.iter().collect();
        objects.sort_by(|a, b| a.0.cmp(&b.0));
        let mut run = PartRun::new(part_bytes);
        for (key, value) in objects {
            let rv = newest.get(key.as_str()).copied().unwrap_or(0);
            let size = DumpPart::size_of_item(key, Some(value));
            parts.extend(run.add(size, (key.clone(), rv, value.clone())).map(DumpPart::Objects));
        }
        parts.extend(run.rest().map(DumpPart::Objects));
        let live: std::collections::HashSet<&str> = self.objects.iter().map(|(k, _)| k.as_str()).collect();
        let mut history = self.history.clone();
        history.sort_by(|a, b| (&a.key, a.rv).cmp(&(&b.key, b.rv)));
        let mut run = PartRun::new(part_bytes);
        for w in history {
            let current =
                w.value.is_some() && live.contains(w.key.as_str()) && newest.get(w.key.as_str()) == Some(&w.rv);
            if !current {
                let size = DumpPart::size_of_item(&w.key, w.value.as_deref());
                parts.extend(run.add(size, w).map(DumpPart::History));
            }
        }
        parts.extend(run.rest().map(DumpPart::History));
        parts
    }

    /// The dump the parts came from (what [`ObjectDump::into_parts`] split).
    pub fn from_parts(parts: impl IntoIterator<Item = StoreResult<DumpPart>>) -> StoreResult<ObjectDump> {
        let mut dump = ObjectDump::default();
        for part in parts {
            match part? {
                DumpPart::Meta(meta) => dump.meta.extend(meta),
                DumpPart::Objects(objects) => {
                    for (key, rv, value) in objects {
                        // rv 0 is no version: an object that came without history.
                        if rv > 0 {
                            dump.history.push(ObjectWrite { key: key.clone(), rv, value: Some(value.clone()) });
                        }
                        dump.objects.push((key, value));
                    }
                }
                DumpPart::History(history) => dump.history.extend(history),
            }
        }
        dump.objects.sort_by(|a, b| a.0.cmp(&b.0));
        dump.history.sort_by(|a, b| (&a.key, a.rv).cmp(&(&b.key, b.rv)));
        Ok(dump)
    }
}

/// Items gathered into one part until it holds `part_bytes`.
pub struct PartRun<T> {
    part_bytes: usize,
    bytes: usize,
    items: Vec<T>,
}

impl<T> PartRun<T> {
    pub fn new(part_bytes: usize) -> Self {
        PartRun { part_bytes, bytes: 0, items: Vec::new() }
    }

    /// Adds an item of about `size` bytes and returns the items of a part that is full.
    pub fn add(&mut self, size: usize, item: T) -> Option<Vec<T>> {
        self.items.push(item);
        self.bytes += size;
        if self.bytes >= self.part_bytes {
            self.bytes = 0;
            return Some(std::mem::take(&mut self.items));
        }
        None
    }

    /// What is left, if anything.
    pub fn rest(&mut self) -> Option<Vec<T>> {
        self.bytes = 0;
        (!self.items.is_empty()).then(|| std::mem::take(&mut self.items))
    }
}

/// The applied state as it was at one point, kept aside by [`ObjectEngine::freeze`].
/// Whatever it holds (memory, files) is released when it is dropped.
pub trait FrozenObjects: Send + Sync + 'static {
    /// A metadata value as it was at the frozen point.
    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>>;

    /// Everything as it was at the frozen point: what [`ObjectEngine::dump`] answered then.
    fn dump(&self) -> StoreResult<ObjectDump>;

    /// The same as [`FrozenObjects::dump`], in parts of about `part_bytes` each, handed to
    /// `each` in the order of [`ObjectDump::into_parts`]; stops at the first error of
    /// `each`. Blocking. An engine that keeps its state on disk reads it part by part.
    fn dump_parts(&self, part_bytes: usize, each: &mut dyn FnMut(DumpPart) -> StoreResult<()>) -> StoreResult<()> {
        self.dump()?.into_parts(part_bytes).into_iter().try_for_each(each)
    }

    /// Whether reading it waits on I/O, so that an async caller reads it on a blocking
    /// thread. The in-memory engine's state is read inline: the simulator runs every
    /// host on one thread, and its runs stay deterministic only if nothing leaves it.
    fn reads_block(&self) -> bool {
        true
    }
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

    fn reads_block(&self) -> bool {
        false
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

    /// Replaces everything with what the parts hold (a snapshot's, in the order of
    /// [`ObjectDump::into_parts`]), atomically and durably: after a crash the old state
    /// or the new one is there. The parts may be read from disk as they are consumed
    /// (blocking); an error from them leaves the old state.
    fn restore_parts(&self, parts: DumpParts) -> impl Future<Output = StoreResult<()>> + Send;

    /// Replaces everything with `dump`, as [`ObjectEngine::restore_parts`] does.
    fn restore(&self, dump: ObjectDump) -> impl Future<Output = StoreResult<()>> + Send {
        self.restore_parts(Box::new(dump.into_parts(1 << 20).into_iter().map(Ok)))
    }

    /// Where a snapshot arriving from a peer may be kept on disk until it is restored
    /// (beside the engine's own files), or `None` to keep it in memory.
    fn spool_dir(&self) -> Option<std::path::PathBuf> {
        None
    }

    /// The memory the engine holds beside the data it returns, by part (RocksDB:
    /// `memtables`, `block_cache`, `table_readers`), in bytes, for the node's memory
    /// gauges. Engines that keep everything in plain memory report nothing.
    fn memory(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// The parts [`ObjectEngine::restore_parts`] consumes.
pub type DumpParts = Box<dyn Iterator<Item = StoreResult<DumpPart>> + Send>;
