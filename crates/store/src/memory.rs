//! In-memory engines: the simulator's storage, and the reference the RocksDB engines are
//! held to by the conformance suite.
//!
//! Each engine keeps two copies of its state: `visible` (what reads see) and `durable`
//! (what survives a crash), plus the writes made since the last sync, in order. `sync`
//! replays those writes onto `durable`; `crash` throws them away and makes `visible` a
//! copy of `durable` again. A test harness keeps the engine (an `Arc` inside) outside the
//! node it crashes, exactly as a disk outlives a process.
//!
//! Worked example: append 1,2 → sync → append 3 → crash → the log is 1,2.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;

use crate::engine::{DumpParts, LogEngine, ObjectBatch, ObjectDump, ObjectEngine, ObjectWrite, StoreResult};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep going with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Clone)]
enum LogOp {
    Append(Vec<(u64, Bytes)>),
    TruncateFrom(u64),
    PurgeUpto(u64),
}

#[derive(Debug, Default, Clone)]
struct LogState {
    entries: BTreeMap<u64, Bytes>,
    meta: BTreeMap<String, Bytes>,
}

impl LogState {
    fn apply(&mut self, op: &LogOp) {
        match op {
            LogOp::Append(es) => {
                for (i, b) in es {
                    self.entries.insert(*i, b.clone());
                }
            }
            LogOp::TruncateFrom(i) => {
                self.entries.split_off(i);
            }
            LogOp::PurgeUpto(i) => {
                self.entries = self.entries.split_off(&(i + 1));
            }
        }
    }
}

#[derive(Debug, Default)]
struct LogInner {
    visible: LogState,
    durable: LogState,
    /// Writes since the last sync, in the order they were made.
    pending: Vec<LogOp>,
    syncs: u64,
}

/// The simulator's Raft log. Cloning shares the same "disk".
#[derive(Debug, Default, Clone)]
pub struct MemoryLogEngine {
    inner: Arc<Mutex<LogInner>>,
}

impl MemoryLogEngine {
    pub fn new() -> Self {
        Self::default()
    }

    /// A simulated power loss: everything not yet synced is gone.
    pub fn crash(&self) {
        let mut g = lock(&self.inner);
        g.pending.clear();
        g.visible = g.durable.clone();
    }

    /// A new, empty disk in place of this one (an operator replacing a node's data
    /// directory); only the sync counter stays.
    pub fn wipe(&self) {
        let mut g = lock(&self.inner);
        *g = LogInner { syncs: g.syncs, ..LogInner::default() };
    }

    /// How many syncs were made (for tests and coverage counters).
    pub fn sync_count(&self) -> u64 {
        lock(&self.inner).syncs
    }

    fn op(&self, op: LogOp) {
        let mut g = lock(&self.inner);
        g.visible.apply(&op);
        g.pending.push(op);
    }
}

impl LogEngine for MemoryLogEngine {
    async fn append(&self, entries: Vec<(u64, Bytes)>) -> StoreResult<()> {
        self.op(LogOp::Append(entries));
        Ok(())
    }

    async fn sync(&self) -> StoreResult<()> {
        let mut g = lock(&self.inner);
        let pending = std::mem::take(&mut g.pending);
        for op in &pending {
            g.durable.apply(op);
        }
        g.syncs += 1;
        Ok(())
    }

    async fn truncate_from(&self, index: u64) -> StoreResult<()> {
        self.op(LogOp::TruncateFrom(index));
        Ok(())
    }

    async fn purge_upto(&self, index: u64) -> StoreResult<()> {
        self.op(LogOp::PurgeUpto(index));
        Ok(())
    }

    fn read_range(&self, start: u64, end: u64) -> StoreResult<Vec<(u64, Bytes)>> {
        if start >= end {
            return Ok(Vec::new());
        }
        let g = lock(&self.inner);
        Ok(g.visible.entries.range(start..end).map(|(i, b)| (*i, b.clone())).collect())
    }

    fn last_entry(&self) -> StoreResult<Option<(u64, Bytes)>> {
        let g = lock(&self.inner);
        Ok(g.visible.entries.last_key_value().map(|(i, b)| (*i, b.clone())))
    }

    async fn put_meta(&self, key: &str, value: Bytes) -> StoreResult<()> {
        // Metadata writes are durable on return, and they also make durable every log
        // write before them (one fsync covers the whole write-ahead log).
        let mut g = lock(&self.inner);
        let pending = std::mem::take(&mut g.pending);
        for op in &pending {
            g.durable.apply(op);
        }
        g.visible.meta.insert(key.to_string(), value.clone());
        g.durable.meta.insert(key.to_string(), value);
        g.syncs += 1;
        Ok(())
    }

    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        Ok(lock(&self.inner).visible.meta.get(key).cloned())
    }
}

/// Versions of one key: rv → value (`None` = deleted at that rv).
type Versions = BTreeMap<u64, Option<Bytes>>;

#[derive(Debug, Default, Clone)]
struct ObjectState {
    objects: BTreeMap<String, Bytes>,
    history: BTreeMap<String, Versions>,
    meta: BTreeMap<String, Bytes>,
}

#[derive(Debug, Clone)]
enum ObjectOp {
    Write(ObjectBatch),
    Compact(u64),
}

impl ObjectState {
    fn apply(&mut self, op: &ObjectOp) {
        match op {
            ObjectOp::Write(batch) => {
                for w in &batch.objects {
                    match &w.value {
                        Some(v) => self.objects.insert(w.key.clone(), v.clone()),
                        None => self.objects.remove(&w.key),
                    };
                    self.history.entry(w.key.clone()).or_default().insert(w.rv, w.value.clone());
                }
                for (k, v) in &batch.meta {
                    self.meta.insert(k.clone(), v.clone());
                }
            }
            ObjectOp::Compact(rv) => {
                self.history.retain(|_, versions| {
                    let keep_from = versions.range(..=*rv).next_back().map(|(v, val)| (*v, val.is_some()));
                    if let Some((v, live)) = keep_from {
                        *versions = versions.split_off(&v);
                        if !live {
                            versions.remove(&v);
                        }
                    }
                    !versions.is_empty()
                });
            }
        }
    }
}

#[derive(Debug, Default)]
struct ObjectInner {
    visible: ObjectState,
    durable: ObjectState,
    pending: Vec<ObjectOp>,
}

/// The simulator's object store. Cloning shares the same "disk".
#[derive(Debug, Default, Clone)]
pub struct MemoryObjectEngine {
    inner: Arc<Mutex<ObjectInner>>,
}

impl MemoryObjectEngine {
    pub fn new() -> Self {
        Self::default()
    }

    /// A simulated power loss: every batch not yet synced is gone.
    pub fn crash(&self) {
        let mut g = lock(&self.inner);
        g.pending.clear();
        g.visible = g.durable.clone();
    }

    /// A new, empty disk in place of this one (an operator replacing a node's data directory).
    pub fn wipe(&self) {
        *lock(&self.inner) = ObjectInner::default();
    }

    fn op(&self, op: ObjectOp) {
        let mut g = lock(&self.inner);
        g.visible.apply(&op);
        g.pending.push(op);
    }
}

fn range_from<'a, V>(
    map: &'a BTreeMap<String, V>,
    prefix: &str,
    start_after: Option<&str>,
) -> impl Iterator<Item = (&'a String, &'a V)> + 'a {
    use std::ops::Bound;
    let lower = match start_after {
        Some(s) if s >= prefix => Bound::Excluded(s.to_string()),
        _ => Bound::Included(prefix.to_string()),
    };
    let prefix = prefix.to_string();
    map.range((lower, Bound::Unbounded)).take_while(move |(k, _)| k.starts_with(&prefix))
}

impl ObjectEngine for MemoryObjectEngine {
    /// A copy: the simulator's states are small.
    type Frozen = ObjectDump;

    async fn write(&self, batch: ObjectBatch) -> StoreResult<()> {
        self.op(ObjectOp::Write(batch));
        Ok(())
    }

    async fn sync(&self) -> StoreResult<()> {
        let mut g = lock(&self.inner);
        let pending = std::mem::take(&mut g.pending);
        for op in &pending {
            g.durable.apply(op);
        }
        Ok(())
    }

    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        Ok(lock(&self.inner).visible.objects.get(key).cloned())
    }

    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> StoreResult<Vec<(String, Bytes)>> {
        let g = lock(&self.inner);
        Ok(range_from(&g.visible.objects, prefix, start_after)
            .take(limit)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    fn get_at(&self, key: &str, rv: u64) -> StoreResult<Option<Bytes>> {
        let g = lock(&self.inner);
        Ok(g.visible.history.get(key).and_then(|vs| vs.range(..=rv).next_back()).and_then(|(_, v)| v.clone()))
    }

    fn scan_at(
        &self,
        prefix: &str,
        rv: u64,
        start_after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, Bytes)>> {
        let g = lock(&self.inner);
        Ok(range_from(&g.visible.history, prefix, start_after)
            .filter_map(|(k, vs)| vs.range(..=rv).next_back().and_then(|(_, v)| v.clone()).map(|v| (k.clone(), v)))
            .take(limit)
            .collect())
    }

    fn history_after(&self, after: u64) -> StoreResult<Vec<ObjectWrite>> {
        let g = lock(&self.inner);
        let mut out: Vec<ObjectWrite> = g
            .visible
            .history
            .iter()
            .flat_map(|(k, vs)| {
                vs.range(after + 1..).map(move |(rv, v)| ObjectWrite { key: k.clone(), rv: *rv, value: v.clone() })
            })
            .collect();
        out.sort_by(|a, b| (a.rv, &a.key).cmp(&(b.rv, &b.key)));
        Ok(out)
    }

    async fn compact(&self, rv: u64) -> StoreResult<()> {
        self.op(ObjectOp::Compact(rv));
        Ok(())
    }

    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        Ok(lock(&self.inner).visible.meta.get(key).cloned())
    }

    fn dump(&self) -> StoreResult<ObjectDump> {
        let g = lock(&self.inner);
        Ok(ObjectDump {
            objects: g.visible.objects.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            history: g
                .visible
                .history
                .iter()
                .flat_map(|(k, vs)| {
                    vs.iter().map(move |(rv, v)| ObjectWrite { key: k.clone(), rv: *rv, value: v.clone() })
                })
                .collect(),
            meta: g.visible.meta.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        })
    }

    async fn freeze(&self) -> StoreResult<ObjectDump> {
        self.dump()
    }

    async fn restore_parts(&self, parts: DumpParts) -> StoreResult<()> {
        let dump = ObjectDump::from_parts(parts)?;
        let mut history: BTreeMap<String, Versions> = BTreeMap::new();
        for w in dump.history {
            history.entry(w.key).or_default().insert(w.rv, w.value);
        }
        let state =
            ObjectState { objects: dump.objects.into_iter().collect(), history, meta: dump.meta.into_iter().collect() };
        let mut g = lock(&self.inner);
        g.pending.clear();
        g.visible = state.clone();
        g.durable = state;
        Ok(())
    }
}
