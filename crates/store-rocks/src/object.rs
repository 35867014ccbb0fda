//! The object store (the applied state) in RocksDB.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use kuorum_store::engine::{ObjectDump, ObjectWrite};
use kuorum_store::{ObjectBatch, ObjectEngine, StoreResult};
use rocksdb::{DBRawIterator, ReadOptions, WriteBatch};

use crate::db::{blocking, err, Shared, CF_HISTORY, CF_OBJECTS, CF_OBJECT_META};
use crate::RocksStore;

/// A key past every UTF-8 string: no UTF-8 text holds the byte 0xff, so every key of
/// ours sorts below it. The end of "everything" for a range deletion.
const PAST_ALL_KEYS: [u8; 1] = [0xff];

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
fn history_key(key: &str, rv: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 9);
    k.extend_from_slice(key.as_bytes());
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

fn history_value(value: &Option<Bytes>) -> Vec<u8> {
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

/// Reads every version the iterator yields from its first key on.
fn collect_history(mut it: DBRawIterator<'_>) -> StoreResult<Vec<ObjectWrite>> {
    it.seek_to_first();
    let mut out = Vec::new();
    while let Some((raw, value)) = it.item() {
        let (key, rv) = split_history_key(raw)?;
        out.push(ObjectWrite { key: decode_key(key)?, rv, value: decode_history_value(value) });
        it.next();
    }
    it.status().map_err(|e| err("read history", e))?;
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

/// The applied state: column families `objects` (storage key → object bytes) and
/// `object_meta`. Cloning shares the same database.
///
/// A batch is one RocksDB `WriteBatch` (atomic, also across the families), written to
/// the memtables without the WAL; `sync` flushes the memtables to table files.
/// `restore` is one `WriteBatch` written through the WAL and fsynced.
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
}

impl ObjectEngine for RocksObjectEngine {
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
        // Applied in order, so a later write of the same key in the batch wins.
        for w in &batch.objects {
            match &w.value {
                Some(v) => wb.put_cf(objects, w.key.as_bytes(), v),
                None => wb.delete_cf(objects, w.key.as_bytes()),
            }
            wb.put_cf(history, history_key(&w.key, w.rv), history_value(&w.value));
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
        let cf = self.shared.cf(CF_OBJECTS)?;
        let value = self.shared.db.get_pinned_cf(cf, key.as_bytes()).map_err(|e| err("read object", e))?;
        Ok(value.map(|v| Bytes::copy_from_slice(&v)))
    }

    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> StoreResult<Vec<(String, Bytes)>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        // The smallest key after `start_after` is `start_after` followed by a zero byte.
        let mut it = self.iter_in_prefix(CF_OBJECTS, prefix, start_after, 0)?;
        let mut out = Vec::new();
        while let Some((key, value)) = it.item() {
            if out.len() >= limit || !key.starts_with(prefix.as_bytes()) {
                break;
            }
            out.push((decode_key(key)?, Bytes::copy_from_slice(value)));
            it.next();
        }
        it.status().map_err(|e| err("scan objects", e))?;
        Ok(out)
    }

    fn get_at(&self, key: &str, rv: u64) -> StoreResult<Option<Bytes>> {
        let cf = self.shared.cf(CF_HISTORY)?;
        let mut it = self.shared.db.raw_iterator_cf(cf);
        it.seek_for_prev(history_key(key, rv));
        let found = match it.item() {
            Some((raw, value)) => {
                let (k, _) = split_history_key(raw)?;
                if k == key.as_bytes() {
                    decode_history_value(value)
                } else {
                    None
                }
            }
            None => None,
        };
        it.status().map_err(|e| err("read history", e))?;
        Ok(found)
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
        // Past every version of `start_after`: its key followed by the byte after zero.
        let mut it = self.iter_in_prefix(CF_HISTORY, prefix, start_after, 1)?;
        let mut out = Vec::new();
        // The key whose versions are being read, and its newest value at or below `rv`.
        let mut current: Option<(Vec<u8>, Option<Bytes>)> = None;
        while let Some((raw, value)) = it.item() {
            let (key, version) = split_history_key(raw)?;
            if !key.starts_with(prefix.as_bytes()) {
                break;
            }
            if current.as_ref().is_some_and(|(k, _)| k.as_slice() != key) {
                if let Some((k, Some(v))) = current.take() {
                    out.push((decode_key(&k)?, v));
                    if out.len() >= limit {
                        return Ok(out);
                    }
                }
                current = None;
            }
            if current.is_none() {
                current = Some((key.to_vec(), None));
            }
            if version <= rv {
                if let Some((_, best)) = current.as_mut() {
                    *best = decode_history_value(value);
                }
            }
            it.next();
        }
        it.status().map_err(|e| err("scan history", e))?;
        if let Some((k, Some(v))) = current {
            out.push((decode_key(&k)?, v));
        }
        Ok(out)
    }

    fn history_after(&self, after: u64) -> StoreResult<Vec<ObjectWrite>> {
        let cf = self.shared.cf(CF_HISTORY)?;
        let mut all = collect_history(self.shared.db.raw_iterator_cf(cf))?;
        all.retain(|w| w.rv > after);
        all.sort_by(|a, b| (a.rv, &a.key).cmp(&(b.rv, &b.key)));
        Ok(all)
    }

    async fn compact(&self, rv: u64) -> StoreResult<()> {
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let cf = shared.cf(CF_HISTORY)?;
            let mut wb = WriteBatch::default();
            let mut it = shared.db.raw_iterator_cf(cf);
            it.seek_to_first();
            // Versions of the current key at or below `rv`, oldest first: all but the newest
            // go, and the newest too if it is a deletion.
            let mut key: Vec<u8> = Vec::new();
            let mut old: Vec<(Vec<u8>, bool)> = Vec::new();
            let flush = |old: &mut Vec<(Vec<u8>, bool)>, wb: &mut WriteBatch| {
                if let Some((newest, live)) = old.pop() {
                    for (raw, _) in old.drain(..) {
                        wb.delete_cf(cf, raw);
                    }
                    if !live {
                        wb.delete_cf(cf, newest);
                    }
                }
            };
            while let Some((raw, value)) = it.item() {
                let (k, version) = split_history_key(raw)?;
                if k != key.as_slice() {
                    flush(&mut old, &mut wb);
                    key = k.to_vec();
                }
                if version <= rv {
                    old.push((raw.to_vec(), value.first() == Some(&1)));
                }
                it.next();
            }
            it.status().map_err(|e| err("compact history", e))?;
            flush(&mut old, &mut wb);
            drop(it);
            shared.write_unlogged(wb)
        })
        .await
    }

    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let cf = self.shared.cf(CF_OBJECT_META)?;
        let value = self.shared.db.get_pinned_cf(cf, key.as_bytes()).map_err(|e| err("read object meta", e))?;
        Ok(value.map(|v| Bytes::copy_from_slice(&v)))
    }

    fn dump(&self) -> StoreResult<ObjectDump> {
        let objects_cf = self.shared.cf(CF_OBJECTS)?;
        let meta_cf = self.shared.cf(CF_OBJECT_META)?;
        // One snapshot for both families: a batch is either wholly in it or not at all,
        // so the dumped metadata (the applied log id) matches the dumped objects.
        let snapshot = self.shared.db.snapshot();
        let history_cf = self.shared.cf(CF_HISTORY)?;
        let objects = collect_all(snapshot.raw_iterator_cf(objects_cf), "dump objects")?;
        let history = collect_history(snapshot.raw_iterator_cf(history_cf))?;
        let meta = collect_all(snapshot.raw_iterator_cf(meta_cf), "dump object meta")?;
        Ok(ObjectDump { objects, history, meta })
    }

    async fn restore(&self, dump: ObjectDump) -> StoreResult<()> {
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let objects = shared.cf(CF_OBJECTS)?;
            let meta = shared.cf(CF_OBJECT_META)?;
            let history = shared.cf(CF_HISTORY)?;
            // One batch: the old state is cleared and the new one written atomically,
            // and after a crash either the whole old or the whole new state is there.
            let mut wb = WriteBatch::default();
            wb.delete_range_cf(objects, &[][..], &PAST_ALL_KEYS[..]);
            wb.delete_range_cf(meta, &[][..], &PAST_ALL_KEYS[..]);
            wb.delete_range_cf(history, &[][..], &PAST_ALL_KEYS[..]);
            for (key, value) in &dump.objects {
                wb.put_cf(objects, key.as_bytes(), value);
            }
            for w in &dump.history {
                wb.put_cf(history, history_key(&w.key, w.rv), history_value(&w.value));
            }
            for (key, value) in &dump.meta {
                wb.put_cf(meta, key.as_bytes(), value);
            }
            shared.write_synced(wb)
        })
        .await
    }
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
