//! The Raft log in RocksDB.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use kuorum_store::{LogEngine, StoreResult};
use rocksdb::{ReadOptions, WriteBatch};

use crate::db::{blocking, err, Shared, CF_LOG, CF_LOG_META};
use crate::RocksStore;

/// A key past every 8-byte index key (bytewise, a longer key of 0xff sorts after
/// `u64::MAX` big-endian), the open end of "everything from here on".
const PAST_LAST_INDEX: [u8; 9] = [0xff; 9];

fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

fn decode_index(key: &[u8]) -> StoreResult<u64> {
    let bytes: [u8; 8] = key.try_into().map_err(|_| err("log", format!("a log key has {} bytes, not 8", key.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

/// The Raft log: column family `log` (u64 big-endian index → entry bytes) and
/// `log_meta`. Cloning shares the same database.
///
/// Appends, truncations and purges are plain WAL writes, readable at once; `sync` fsyncs
/// the WAL, which makes all of them durable in the order they were made. `put_meta` is a
/// synced write and so also makes every earlier log write durable.
#[derive(Clone)]
pub struct RocksLogEngine {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RocksLogEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksLogEngine").field("path", &self.shared.path()).finish()
    }
}

impl RocksLogEngine {
    /// Opens (creating it if needed) a database at `path` and returns its log. The
    /// database also holds (empty) object-store column families; to use both engines
    /// from one directory, open it once with [`RocksStore::open`].
    pub fn open(path: &Path) -> StoreResult<Self> {
        Ok(RocksStore::open(path)?.log_engine())
    }

    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        RocksLogEngine { shared }
    }

    /// How many WAL fsyncs the database has made since it was opened (shared with the
    /// object engine of the same [`RocksStore`]).
    pub fn fsync_count(&self) -> u64 {
        self.shared.fsync_count()
    }
}

impl LogEngine for RocksLogEngine {
    async fn append(&self, entries: Vec<(u64, Bytes)>) -> StoreResult<()> {
        if entries.is_empty() {
            return Ok(());
        }
        // Unsynced, so written in place (see `Shared::write`); `sync` makes it durable.
        let cf = self.shared.cf(CF_LOG)?;
        let mut batch = WriteBatch::default();
        for (index, entry) in &entries {
            batch.put_cf(cf, index_key(*index), entry);
        }
        self.shared.write(batch)
    }

    async fn sync(&self) -> StoreResult<()> {
        self.shared.sync().await
    }

    async fn truncate_from(&self, index: u64) -> StoreResult<()> {
        // Not synced here: the WAL is ordered, so the sync that makes the next append
        // durable makes this deletion durable first.
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let cf = shared.cf(CF_LOG)?;
            let mut batch = WriteBatch::default();
            batch.delete_range_cf(cf, &index_key(index)[..], &PAST_LAST_INDEX[..]);
            shared.write(batch)
        })
        .await
    }

    async fn purge_upto(&self, index: u64) -> StoreResult<()> {
        let shared = Arc::clone(&self.shared);
        blocking(move || {
            let cf = shared.cf(CF_LOG)?;
            let end: Vec<u8> = match index.checked_add(1) {
                Some(next) => index_key(next).to_vec(),
                None => PAST_LAST_INDEX.to_vec(),
            };
            let mut batch = WriteBatch::default();
            batch.delete_range_cf(cf, &[][..], &end[..]);
            shared.write(batch)
        })
        .await
    }

    fn read_range(&self, start: u64, end: u64) -> StoreResult<Vec<(u64, Bytes)>> {
        if start >= end {
            return Ok(Vec::new());
        }
        let cf = self.shared.cf(CF_LOG)?;
        let mut opts = ReadOptions::default();
        opts.set_iterate_upper_bound(index_key(end).to_vec());
        let mut it = self.shared.db.raw_iterator_cf_opt(cf, opts);
        it.seek(index_key(start));
        let mut out = Vec::new();
        while let Some((key, value)) = it.item() {
            out.push((decode_index(key)?, Bytes::copy_from_slice(value)));
            it.next();
        }
        it.status().map_err(|e| err("read log", e))?;
        Ok(out)
    }

    fn last_entry(&self) -> StoreResult<Option<(u64, Bytes)>> {
        let cf = self.shared.cf(CF_LOG)?;
        let mut it = self.shared.db.raw_iterator_cf(cf);
        it.seek_to_last();
        let last = match it.item() {
            Some((key, value)) => Some((decode_index(key)?, Bytes::copy_from_slice(value))),
            None => None,
        };
        it.status().map_err(|e| err("read last log entry", e))?;
        Ok(last)
    }

    async fn put_meta(&self, key: &str, value: Bytes) -> StoreResult<()> {
        let shared = Arc::clone(&self.shared);
        let key = key.to_owned();
        blocking(move || {
            let cf = shared.cf(CF_LOG_META)?;
            let mut batch = WriteBatch::default();
            batch.put_cf(cf, key.as_bytes(), &value);
            shared.write_synced(batch)
        })
        .await
    }

    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let cf = self.shared.cf(CF_LOG_META)?;
        let value = self.shared.db.get_pinned_cf(cf, key.as_bytes()).map_err(|e| err("read log meta", e))?;
        Ok(value.map(|v| Bytes::copy_from_slice(&v)))
    }
}
