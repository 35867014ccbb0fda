//! The object store (the applied state) in RocksDB.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use kuorum_store::engine::ObjectDump;
use kuorum_store::{ObjectBatch, ObjectEngine, StoreResult};
use rocksdb::{DBRawIterator, ReadOptions, WriteBatch};

use crate::db::{blocking, err, Shared, CF_OBJECTS, CF_OBJECT_META};
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
/// A batch is one RocksDB `WriteBatch` (atomic, also across the two families), written
/// without an fsync; `sync` fsyncs the WAL. `restore` is one synced `WriteBatch`.
#[derive(Clone)]
pub struct RocksObjectEngine {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RocksObjectEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksObjectEngine")
            .field("path", &self.shared.path())
            .finish()
    }
}

impl RocksObjectEngine {
    /// Opens (creating it if needed) a database at `path` and returns its object store.
    /// The database also holds (empty) log column families; to use both engines from
    /// one directory, open it once with [`RocksStore::open`].
    pub fn open(path: &Path) -> StoreResult<Self> {
        Ok(RocksStore::open(path)?.object_engine())
    }

    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RocksObjectEngine { shared }
    }

    /// How many WAL fsyncs the database has made since it was opened (shared with the
    /// log engine of the same [`RocksStore`]).
    pub fn fsync_count(&self) -> u64 {
        self.shared.fsync_count()
    }
}

impl ObjectEngine for RocksObjectEngine {
    async fn write(&self, batch: ObjectBatch) -> StoreResult<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let objects = shared.cf(CF_OBJECTS)?;
            let meta = shared.cf(CF_OBJECT_META)?;
            let mut wb = WriteBatch::default();
            // Applied in order, so a later write of the same key in the batch wins.
            for (key, value) in &batch.objects {
                match value {
                    Some(v) => wb.put_cf(objects, key.as_bytes(), v),
                    None => wb.delete_cf(objects, key.as_bytes()),
                }
            }
            for (key, value) in &batch.meta {
                wb.put_cf(meta, key.as_bytes(), value);
            }
            shared.write(wb)
        })
        .await
    }

    async fn sync(&self) -> StoreResult<()> {
        self.shared.sync().await
    }

    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let cf = self.shared.cf(CF_OBJECTS)?;
        let value = self
            .shared
            .db
            .get_pinned_cf(cf, key.as_bytes())
            .map_err(|e| err("read object", e))?;
        Ok(value.map(|v| Bytes::copy_from_slice(&v)))
    }

    fn scan(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, Bytes)>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let cf = self.shared.cf(CF_OBJECTS)?;
        // The first key to look at: the prefix itself, or the smallest key after
        // `start_after` (which is `start_after` followed by a zero byte).
        let from: Vec<u8> = match start_after {
            Some(after) if after >= prefix => {
                let mut k = after.as_bytes().to_vec();
                k.push(0);
                k
            }
            _ => prefix.as_bytes().to_vec(),
        };
        let mut opts = ReadOptions::default();
        if let Some(end) = prefix_end(prefix.as_bytes()) {
            opts.set_iterate_upper_bound(end);
        }
        let mut it = self.shared.db.raw_iterator_cf_opt(cf, opts);
        it.seek(&from);
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

    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let cf = self.shared.cf(CF_OBJECT_META)?;
        let value = self
            .shared
            .db
            .get_pinned_cf(cf, key.as_bytes())
            .map_err(|e| err("read object meta", e))?;
        Ok(value.map(|v| Bytes::copy_from_slice(&v)))
    }

    fn dump(&self) -> StoreResult<ObjectDump> {
        let objects_cf = self.shared.cf(CF_OBJECTS)?;
        let meta_cf = self.shared.cf(CF_OBJECT_META)?;
        // One snapshot for both families: a batch is either wholly in it or not at all,
        // so the dumped metadata (the applied log id) matches the dumped objects.
        let snapshot = self.shared.db.snapshot();
        let objects = collect_all(snapshot.raw_iterator_cf(objects_cf), "dump objects")?;
        let meta = collect_all(snapshot.raw_iterator_cf(meta_cf), "dump object meta")?;
        Ok(ObjectDump { objects, meta })
    }

    async fn restore(&self, dump: ObjectDump) -> StoreResult<()> {
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let objects = shared.cf(CF_OBJECTS)?;
            let meta = shared.cf(CF_OBJECT_META)?;
            // One batch: the old state is cleared and the new one written atomically,
            // and after a crash either the whole old or the whole new state is there.
            let mut wb = WriteBatch::default();
            wb.delete_range_cf(objects, &[][..], &PAST_ALL_KEYS[..]);
            wb.delete_range_cf(meta, &[][..], &PAST_ALL_KEYS[..]);
            for (key, value) in &dump.objects {
                wb.put_cf(objects, key.as_bytes(), value);
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
