//! The object store (the applied state) in RocksDB.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use kuorum_store::engine::{meta_value, DumpPart, DumpParts, ObjectDump, ObjectWrite, PartRun};
use kuorum_store::{FrozenObjects, ObjectBatch, ObjectEngine, StoreResult};
use rocksdb::{DBRawIterator, ReadOptions, WriteBatch, WriteOptions, DB};

use crate::db::{blocking, cf, err, open_checkpoint, Shared, CF_HISTORY, CF_OBJECTS, CF_OBJECT_META};
use crate::install::{self, InstallUntil};
use crate::RocksStore;

/// A key past every UTF-8 string: no UTF-8 text holds the byte 0xff, so every key of
/// ours sorts below it. The end of "everything" for a range deletion.
pub(crate) const PAST_ALL_KEYS: [u8; 1] = [0xff];

/// The smallest byte string greater than every string that starts with `prefix`, if
/// there is one (there is none for an empty prefix or one made of 0xff bytes only).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

fn decode_key(key: &[u8]) -> StoreResult<String> {
    String::from_utf8(key.to_vec()).map_err(|e| err("object key is not UTF-8", e))
}

/// The history key of one version: the storage key, a zero byte (no storage key holds
/// one, so all versions of a key sort together and before any longer key), the rv.
pub(crate) fn history_key(key: impl AsRef<[u8]>, rv: u64) -> Vec<u8> {
    let key = key.as_ref();
    let mut k = Vec::with_capacity(key.len() + 9);
    k.extend_from_slice(key);
    k.push(0);
    k.extend_from_slice(&rv.to_be_bytes());
    k
}

fn split_history_key(raw: &[u8]) -> StoreResult<(&[u8], u64)> {
    if raw.len() < 9 || raw[raw.len() - 9] != 0 {
        return Err(err("history key", "malformed"));
    }
    let (key, rest) = raw.split_at(raw.len() - 9);
    let rv = u64::from_be_bytes(rest[1..].try_into().expect("8 bytes"));
    Ok((key, rv))
}

pub(crate) fn history_value(value: Option<&[u8]>) -> Vec<u8> {
    match value {
        Some(v) => {
            let mut out = Vec::with_capacity(v.len() + 1);
            out.push(1);
            out.extend_from_slice(v);
            out
        }
        None => vec![0],
    }
}

fn decode_history_value(raw: &[u8]) -> Option<Bytes> {
    match raw.first() {
        Some(1) => Some(Bytes::copy_from_slice(&raw[1..])),
        _ => None,
    }
}

/// The `objects` value of a version: its rv (u64 big-endian), then the object bytes.
/// The rv tells reads at an older rv to look in the history instead.
pub(crate) fn object_value(rv: u64, object: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(object.len() + 8);
    out.extend_from_slice(&rv.to_be_bytes());
    out.extend_from_slice(object);
    out
}

fn split_object_value(raw: &[u8]) -> StoreResult<(u64, &[u8])> {
    if raw.len() < 8 {
        return Err(err("object value", "shorter than its rv"));
    }
    let (rv, object) = raw.split_at(8);
    Ok((u64::from_be_bytes(rv.try_into().expect("8 bytes")), object))
}

/// The `object_meta` key naming the layout of the families (not part of a dump: it
/// describes this database, not the state). Absent in a database written before the
/// history held only superseded versions; `RocksStore::open` migrates those.
pub(crate) const META_FORMAT: &str = "\0format";
/// The layout this code reads and writes: objects hold the current version with its rv,
/// the history every older version and every deletion.
pub(crate) const FORMAT_SUPERSEDED: &[u8] = b"2";

/// Reads every version the iterator yields from its first key on whose rv `keep` takes,
/// copying only those.
fn collect_history(mut it: DBRawIterator<'_>, keep: impl Fn(u64) -> bool) -> StoreResult<Vec<ObjectWrite>> {
    it.seek_to_first();
    let mut out = Vec::new();
    while let Some((raw, value)) = it.item() {
        let (key, rv) = split_history_key(raw)?;
        if keep(rv) {
            out.push(ObjectWrite { key: decode_key(key)?, rv, value: decode_history_value(value) });
        }
        it.next();
    }
    it.status().map_err(|e| err("read history", e))?;
    Ok(out)
}

/// Every current version whose rv `keep` takes, as (key, rv, object), in key order.
fn collect_current(mut it: DBRawIterator<'_>, keep: impl Fn(u64) -> bool) -> StoreResult<Vec<ObjectWrite>> {
    it.seek_to_first();
    let mut out = Vec::new();
    while let Some((key, raw)) = it.item() {
        let (rv, object) = split_object_value(raw)?;
        if keep(rv) {
            out.push(ObjectWrite { key: decode_key(key)?, rv, value: Some(Bytes::copy_from_slice(object)) });
        }
        it.next();
    }
    it.status().map_err(|e| err("read objects", e))?;
    Ok(out)
}

/// Reads every pair the iterator yields from its first key on.
fn collect_all(mut it: DBRawIterator<'_>, what: &str) -> StoreResult<Vec<(String, Bytes)>> {
    it.seek_to_first();
    let mut out = Vec::new();
    while let Some((key, value)) = it.item() {
        out.push((decode_key(key)?, Bytes::copy_from_slice(value)));
        it.next();
    }
    it.status().map_err(|e| err(what, e))?;
    Ok(out)
}

/// The state's metadata: every `object_meta` pair but the layout marker.
fn collect_meta(it: DBRawIterator<'_>) -> StoreResult<Vec<(String, Bytes)>> {
    let mut meta = collect_all(it, "read object meta")?;
    meta.retain(|(key, _)| key != META_FORMAT && key != install::META_INSTALLING);
    Ok(meta)
}

/// Everything in `db`, read at one point: a batch is either wholly in it or not at all,
/// so the dumped metadata (the applied log id) matches the dumped objects.
fn dump_db(db: &DB) -> StoreResult<ObjectDump> {
    let snapshot = db.snapshot();
    let current = collect_current(snapshot.raw_iterator_cf(cf(db, CF_OBJECTS)?), |_| true)?;
    let mut history = collect_history(snapshot.raw_iterator_cf(cf(db, CF_HISTORY)?), |_| true)?;
    let meta = collect_meta(snapshot.raw_iterator_cf(cf(db, CF_OBJECT_META)?))?;
    let objects = current.iter().map(|w| (w.key.clone(), w.value.clone().unwrap_or_default())).collect();
    // A dump's history is every version, the current ones included.
    history.extend(current);
    history.sort_by(|a, b| (&a.key, a.rv).cmp(&(&b.key, b.rv)));
    Ok(ObjectDump { objects, history, meta })
}

/// The object store as it was when [`ObjectEngine::freeze`] was called: a RocksDB
/// checkpoint (hard links to the table files, on disk, not in memory) and its metadata.
/// The checkpoint is opened only to be dumped, and removed when this is dropped.
#[derive(Debug)]
pub struct RocksFrozen {
    dir: PathBuf,
    meta: Vec<(String, Bytes)>,
}

impl RocksFrozen {
    /// The checkpoint's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl FrozenObjects for RocksFrozen {
    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        Ok(meta_value(&self.meta, key))
    }

    fn dump(&self) -> StoreResult<ObjectDump> {
        dump_db(&open_checkpoint(&self.dir)?)
    }

    /// Reads the checkpoint family by family, a part at a time: the objects family holds
    /// each current version with its rv, the history family the rest, in the order the
    /// parts want.
    fn dump_parts(&self, part_bytes: usize, each: &mut dyn FnMut(DumpPart) -> StoreResult<()>) -> StoreResult<()> {
        let db = open_checkpoint(&self.dir)?;
        each(DumpPart::Meta(self.meta.clone()))?;

        let mut it = db.raw_iterator_cf(cf(&db, CF_OBJECTS)?);
        it.seek_to_first();
        let mut run = PartRun::new(part_bytes);
        while let Some((key, raw)) = it.item() {
            let (rv, object) = split_object_value(raw)?;
            let key = decode_key(key)?;
            let size = DumpPart::size_of_item(&key, Some(object));
            if let Some(full) = run.add(size, (key, rv, Bytes::copy_from_slice(object))) {
                each(DumpPart::Objects(full))?;
            }
            it.next();
        }
        it.status().map_err(|e| err("read objects", e))?;
        if let Some(rest) = run.rest() {
            each(DumpPart::Objects(rest))?;
        }

        let mut it = db.raw_iterator_cf(cf(&db, CF_HISTORY)?);
        it.seek_to_first();
        let mut run = PartRun::new(part_bytes);
        while let Some((raw, value)) = it.item() {
            let (key, rv) = split_history_key(raw)?;
            let w = ObjectWrite { key: decode_key(key)?, rv, value: decode_history_value(value) };
            let size = DumpPart::size_of_item(&w.key, w.value.as_deref());
            if let Some(full) = run.add(size, w) {
                each(DumpPart::History(full))?;
            }
            it.next();
        }
        it.status().map_err(|e| err("read history", e))?;
        if let Some(rest) = run.rest() {
            each(DumpPart::History(rest))?;
        }
        Ok(())
    }
}

impl Drop for RocksFrozen {
    fn drop(&mut self) {
        // Failing leaves disk held until the database is next opened, which clears it.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The applied state: column families `objects` (storage key → object bytes) and
/// `object_meta`. Cloning shares the same database.
///
/// A batch is one RocksDB `WriteBatch` (atomic, also across the families), written to
/// the memtables without the WAL; `sync` flushes the memtables to table files.
/// `restore` writes the new state to table files and ingests them (see `install`).
#[derive(Clone)]
pub struct RocksObjectEngine {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RocksObjectEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksObjectEngine").field("path", &self.shared.path()).finish()
    }
}

impl RocksObjectEngine {
    /// Opens (creating it if needed) a database at `path` and returns its object store.
    /// The database also holds (empty) log column families; to use both engines from
    /// one directory, open it once with [`RocksStore::open`].
    pub fn open(path: &Path) -> StoreResult<Self> {
        Ok(RocksStore::open(path)?.object_engine())
    }

    /// An iterator over family `cf` bounded to keys starting with `prefix`, positioned at
    /// the prefix itself or, with `start_after`, at `start_after` followed by `sep` (the
    /// first key of the family that can follow it).
    fn iter_in_prefix(
        &self,
        cf: &str,
        prefix: &str,
        start_after: Option<&str>,
        sep: u8,
    ) -> StoreResult<DBRawIterator<'_>> {
        let from: Vec<u8> = match start_after {
            Some(after) if after >= prefix => {
                let mut k = after.as_bytes().to_vec();
                k.push(sep);
                k
            }
            _ => prefix.as_bytes().to_vec(),
        };
        let mut opts = ReadOptions::default();
        if let Some(end) = prefix_end(prefix.as_bytes()) {
            opts.set_iterate_upper_bound(end);
        }
        let mut it = self.shared.db.raw_iterator_cf_opt(self.shared.cf(cf)?, opts);
        it.seek(&from);
        Ok(it)
    }

    /// `restore_parts`, stopped midway as a crash would stop it (see
    /// [`InstallUntil`]); for tests of what opening the database then finishes.
    #[doc(hidden)]
    pub async fn restore_parts_until(&self, parts: DumpParts, until: InstallUntil) -> StoreResult<()> {
        let shared = Arc::clone(&self.shared);
        blocking(move || install::install(&shared, parts, until)).await
    }

    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RocksObjectEngine { shared }
    }

    /// How many WAL fsyncs the database has made since it was opened (shared with the
    /// log engine of the same [`RocksStore`]).
    pub fn fsync_count(&self) -> u64 {
        self.shared.fsync_count()
    }

    /// How many times `sync` flushed the memtables since the database was opened.
    pub fn flush_count(&self) -> u64 {
        self.shared.flush_count()
    }

    /// The current version of `key` as (rv, object bytes), as the database holds it.
    fn current(&self, key: &[u8]) -> StoreResult<Option<(u64, Bytes)>> {
        let cf = self.shared.cf(CF_OBJECTS)?;
        let Some(raw) = self.shared.db.get_pinned_cf(cf, key).map_err(|e| err("read object", e))? else {
            return Ok(None);
        };
        let (rv, object) = split_object_value(&raw)?;
        Ok(Some((rv, Bytes::copy_from_slice(object))))
    }

    /// The newest history entry of `key` at or below `rv`: `Some(None)` for a deletion,
    /// `None` if the history holds no version of `key` that old.
    fn in_history(&self, key: &[u8], rv: u64) -> StoreResult<Option<Option<Bytes>>> {
        let cf = self.shared.cf(CF_HISTORY)?;
        let mut it = self.shared.db.raw_iterator_cf(cf);
        it.seek_for_prev(history_key(key, rv));
        let found = match it.item() {
            Some((raw, value)) if split_history_key(raw)?.0 == key => Some(decode_history_value(value)),
            _ => None,
        };
        it.status().map_err(|e| err("read history", e))?;
        Ok(found)
    }
}

impl ObjectEngine for RocksObjectEngine {
    type Frozen = RocksFrozen;

    async fn write(&self, batch: ObjectBatch) -> StoreResult<()> {
        if batch.is_empty() {
            return Ok(());
        }
        // Unlogged, so written in place (see `Shared::write`).
        let shared = &self.shared;
        let objects = shared.cf(CF_OBJECTS)?;
        let meta = shared.cf(CF_OBJECT_META)?;
        let history = shared.cf(CF_HISTORY)?;
        let mut wb = WriteBatch::default();
        // Keys this batch already wrote, with their last write in it: a later write of
        // the same key supersedes that, not what the database holds.
        let mut written: HashMap<&str, &ObjectWrite> = HashMap::new();
        for w in &batch.objects {
            // The version being replaced moves to the history. A create (nothing to
            // replace, the common write) is one insert, into `objects` only.
            match written.get(w.key.as_str()) {
                Some(earlier) => {
                    if let Some(object) = &earlier.value {
                        wb.put_cf(history, history_key(&w.key, earlier.rv), history_value(Some(object)));
                    }
                }
                None => {
                    let stored =
                        shared.db.get_pinned_cf(objects, w.key.as_bytes()).map_err(|e| err("read object", e))?;
                    if let Some(raw) = stored {
                        let (rv, object) = split_object_value(&raw)?;
                        wb.put_cf(history, history_key(&w.key, rv), history_value(Some(object)));
                    }
                }
            }
            match &w.value {
                Some(v) => wb.put_cf(objects, w.key.as_bytes(), object_value(w.rv, v)),
                None => {
                    wb.delete_cf(objects, w.key.as_bytes());
                    wb.put_cf(history, history_key(&w.key, w.rv), history_value(None));
                }
            }
            written.insert(&w.key, w);
        }
        for (key, value) in &batch.meta {
            wb.put_cf(meta, key.as_bytes(), value);
        }
        shared.write_unlogged(wb)
    }

    async fn sync(&self) -> StoreResult<()> {
        self.shared.flush().await
    }

    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let _reading = self.shared.reading();
        Ok(self.current(key.as_bytes())?.map(|(_, object)| object))
    }

    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> StoreResult<Vec<(String, Bytes)>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let _reading = self.shared.reading();
        // The smallest key after `start_after` is `start_after` followed by a zero byte.
        let mut it = self.iter_in_prefix(CF_OBJECTS, prefix, start_after, 0)?;
        let mut out = Vec::new();
        while let Some((key, raw)) = it.item() {
            if out.len() >= limit || !key.starts_with(prefix.as_bytes()) {
                break;
            }
            let (_, object) = split_object_value(raw)?;
            out.push((decode_key(key)?, Bytes::copy_from_slice(object)));
            it.next();
        }
        it.status().map_err(|e| err("scan objects", e))?;
        Ok(out)
    }

    fn get_at(&self, key: &str, rv: u64) -> StoreResult<Option<Bytes>> {
        let _reading = self.shared.reading();
        match self.current(key.as_bytes())? {
            Some((current, object)) if current <= rv => Ok(Some(object)),
            _ => Ok(self.in_history(key.as_bytes(), rv)?.flatten()),
        }
    }

    fn scan_at(
        &self,
        prefix: &str,
        rv: u64,
        start_after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, Bytes)>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let _reading = self.shared.reading();
        // Two walks in step over the same keys: the current versions, and the history
        // (past every version of `start_after`: its key followed by the byte after zero).
        let mut current = self.iter_in_prefix(CF_OBJECTS, prefix, start_after, 0)?;
        let mut older = self.iter_in_prefix(CF_HISTORY, prefix, start_after, 1)?;
        let mut out = Vec::new();
        loop {
            let next_current = current.key().filter(|k| k.starts_with(prefix.as_bytes()));
            let next_older = match older.key() {
                Some(raw) => Some(split_history_key(raw)?.0).filter(|k| k.starts_with(prefix.as_bytes())),
                None => None,
            };
            let key: Vec<u8> = match (next_current, next_older) {
                (None, None) => break,
                (Some(c), None) => c.to_vec(),
                (None, Some(o)) => o.to_vec(),
                (Some(c), Some(o)) => c.min(o).to_vec(),
            };
            // The key's value at `rv`: its current version if that is old enough, else
            // its newest history entry at or below `rv` (every history entry of a key is
            // older than its current version).
            let mut now: Option<Bytes> = None;
            if let Some((_, raw)) = current.item().filter(|(k, _)| *k == key.as_slice()) {
                let (version, object) = split_object_value(raw)?;
                if version <= rv {
                    now = Some(Bytes::copy_from_slice(object));
                }
                current.next();
            }
            let mut then: Option<Bytes> = None;
            while let Some((raw, value)) = older.item() {
                let (k, version) = split_history_key(raw)?;
                if k != key.as_slice() {
                    break;
                }
                if now.is_none() && version <= rv {
                    then = decode_history_value(value);
                }
                older.next();
            }
            if let Some(object) = now.or(then) {
                out.push((decode_key(&key)?, object));
                if out.len() >= limit {
                    break;
                }
            }
        }
        current.status().map_err(|e| err("scan objects", e))?;
        older.status().map_err(|e| err("scan history", e))?;
        Ok(out)
    }

    fn history_after(&self, after: u64) -> StoreResult<Vec<ObjectWrite>> {
        let _reading = self.shared.reading();
        // Filtered as read: after a snapshot install the watch cache asks for the window
        // above the compaction point, and copying every object first doubled the peak.
        let mut all = collect_history(self.shared.db.raw_iterator_cf(self.shared.cf(CF_HISTORY)?), |rv| rv > after)?;
        all.extend(collect_current(self.shared.db.raw_iterator_cf(self.shared.cf(CF_OBJECTS)?), |rv| rv > after)?);
        all.sort_by(|a, b| (a.rv, &a.key).cmp(&(b.rv, &b.key)));
        Ok(all)
    }

    async fn compact(&self, rv: u64) -> StoreResult<()> {
        let me = self.clone();
        blocking(move || {
            let shared = &me.shared;
            let cf = shared.cf(CF_HISTORY)?;
            let mut wb = WriteBatch::default();
            let mut it = shared.db.raw_iterator_cf(cf);
            it.seek_to_first();
            // Versions of the current key at or below `rv`, oldest first: all but the newest
            // go, and the newest too if it is a deletion, or if the key's current version
            // (which is newer than all of them) is at or below `rv` as well.
            let mut key: Vec<u8> = Vec::new();
            let mut old: Vec<(Vec<u8>, bool)> = Vec::new();
            let flush = |key: &[u8], old: &mut Vec<(Vec<u8>, bool)>, wb: &mut WriteBatch| -> StoreResult<()> {
                if let Some((newest, live)) = old.pop() {
                    for (raw, _) in old.drain(..) {
                        wb.delete_cf(cf, raw);
                    }
                    let superseded_by_current = live && me.current(key)?.is_some_and(|(current, _)| current <= rv);
                    if !live || superseded_by_current {
                        wb.delete_cf(cf, newest);
                    }
                }
                Ok(())
            };
            while let Some((raw, value)) = it.item() {
                let (k, version) = split_history_key(raw)?;
                if k != key.as_slice() {
                    flush(&key, &mut old, &mut wb)?;
                    key = k.to_vec();
                }
                if version <= rv {
                    old.push((raw.to_vec(), value.first() == Some(&1)));
                }
                it.next();
            }
            it.status().map_err(|e| err("compact history", e))?;
            flush(&key, &mut old, &mut wb)?;
            drop(it);
            shared.write_unlogged(wb)
        })
        .await
    }

    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let _reading = self.shared.reading();
        let cf = self.shared.cf(CF_OBJECT_META)?;
        let value = self.shared.db.get_pinned_cf(cf, key.as_bytes()).map_err(|e| err("read object meta", e))?;
        Ok(value.map(|v| Bytes::copy_from_slice(&v)))
    }

    fn dump(&self) -> StoreResult<ObjectDump> {
        let _reading = self.shared.reading();
        dump_db(&self.shared.db)
    }

    async fn freeze(&self) -> StoreResult<RocksFrozen> {
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let dir = shared.checkpoint()?;
            // Owned from here: an error below still removes the directory.
            let mut frozen = RocksFrozen { dir, meta: Vec::new() };
            let db = open_checkpoint(&frozen.dir)?;
            frozen.meta = collect_meta(db.raw_iterator_cf(cf(&db, CF_OBJECT_META)?))?;
            Ok(frozen)
        })
        .await
    }

    async fn restore_parts(&self, parts: DumpParts) -> StoreResult<()> {
        self.restore_parts_until(parts, InstallUntil::Done).await
    }

    fn spool_dir(&self) -> Option<PathBuf> {
        Some(self.shared.spool_dir())
    }

    fn memory(&self) -> Vec<(&'static str, u64)> {
        self.shared.memory()
    }
}

/// Brings a database to the current layout, once, when it is opened: a fresh one is
/// marked; one written before the history held only superseded versions has each
/// object's current version moved out of the history (its rv onto the object's value).
/// One synced batch, so a crash leaves the old layout or the new one.
pub(crate) fn migrate(shared: &Shared) -> StoreResult<()> {
    let meta = shared.cf(CF_OBJECT_META)?;
    let format = shared.db.get_pinned_cf(meta, META_FORMAT.as_bytes()).map_err(|e| err("read format", e))?;
    if format.as_deref() == Some(FORMAT_SUPERSEDED) {
        return Ok(());
    }
    if let Some(other) = format {
        return Err(err("open", format!("unknown object layout {:?}", String::from_utf8_lossy(&other))));
    }
    let objects = shared.cf(CF_OBJECTS)?;
    let history = shared.cf(CF_HISTORY)?;
    let mut wb = WriteBatch::default();
    let mut it = shared.db.raw_iterator_cf(objects);
    it.seek_to_first();
    while let Some((key, object)) = it.item() {
        // The current version is the key's newest history entry.
        let mut h = shared.db.raw_iterator_cf(history);
        h.seek_for_prev(history_key(key, u64::MAX));
        let rv = match h.key() {
            Some(raw) if split_history_key(raw)?.0 == key => {
                let rv = split_history_key(raw)?.1;
                wb.delete_cf(history, raw);
                rv
            }
            _ => 0,
        };
        h.status().map_err(|e| err("migrate history", e))?;
        wb.put_cf(objects, key, object_value(rv, object));
        it.next();
    }
    it.status().map_err(|e| err("migrate objects", e))?;
    drop(it);
    wb.put_cf(meta, META_FORMAT.as_bytes(), FORMAT_SUPERSEDED);
    // Synced, but not counted with the engines' fsyncs: it is part of opening.
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    shared.db.write_opt(wb, &wo).map_err(|e| err("migrate", e))
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_is_the_next_prefix() {
        assert_eq!(prefix_end(b"/a/"), Some(b"/a0".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
