//! The one RocksDB instance both engines live in, and the group-commit bookkeeping for
//! its write-ahead log.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kuorum_store::{StoreError, StoreResult};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, FlushOptions, Options,
    WriteBatch, WriteBufferManager, WriteOptions, DB,
};

/// Raft log entries: key = index as u64 big-endian, value = the entry bytes.
pub(crate) const CF_LOG: &str = "log";
/// The log's small metadata (vote, committed, last purged): key = name, value = bytes.
pub(crate) const CF_LOG_META: &str = "log_meta";
/// Objects, their current versions: key = the storage key (UTF-8), value = the version's
/// rv as u64 big-endian, then the object bytes.
pub(crate) const CF_OBJECTS: &str = "objects";
/// The object store's metadata (last applied log id, membership).
pub(crate) const CF_OBJECT_META: &str = "object_meta";
/// Object history (MVCC), every retained version but the current ones: key = storage
/// key, a zero byte, rv as u64 big-endian; value = a tag byte (1 = the object follows,
/// 0 = deleted at this rv) and the object bytes.
pub(crate) const CF_HISTORY: &str = "history";

const ALL_CFS: [&str; 5] = [CF_LOG, CF_LOG_META, CF_OBJECTS, CF_OBJECT_META, CF_HISTORY];

/// Bounds the write-ahead log on disk. With one WAL shared by four column families, a WAL
/// file can be deleted only once every family's data in it has been flushed to a table;
/// past this size RocksDB flushes the families holding the oldest WAL back.
const MAX_TOTAL_WAL_SIZE: u64 = 256 << 20;

pub(crate) fn err(context: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::new(format!("rocksdb: {context}: {e}"))
}

pub(crate) fn cf<'a>(db: &'a DB, name: &str) -> StoreResult<&'a ColumnFamily> {
    db.cf_handle(name).ok_or_else(|| err("column family", format!("{name} is missing")))
}

/// What RocksDB may hold in memory, for all its column families together
/// (`kuorum serve --storage-memtable-bytes`, `--storage-block-cache-bytes`). Without it
/// each family had its own memtables (two of 64 MiB) and its own 32 MiB block cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// Memtables, active and waiting to be flushed: past it the families are flushed
    /// (all at one point: atomic flush), and writes wait for the flush.
    pub memtables: usize,
    /// Data blocks read from table files, one LRU cache shared by every family.
    pub block_cache: usize,
}

impl Default for MemoryBudget {
    /// 128 MiB of memtables (a flush every ~45,000 creates of 1 KiB objects, as with one
    /// family's 64 MiB before) and a 64 MiB block cache (the watch cache serves reads;
    /// RocksDB's reads are a create's existence checks, history pages and snapshots).
    fn default() -> Self {
        MemoryBudget { memtables: 128 << 20, block_cache: 64 << 20 }
    }
}

/// The options of one column family: what it is opened with (`cache`: the block cache
/// the families share), and what table files written outside the database for it (an
/// installed snapshot) are built with (no cache).
pub(crate) fn family_options(name: &str, cache: Option<&Cache>) -> Options {
    let mut cf_opts = Options::default();
    cf_opts.set_compression_type(DBCompressionType::Lz4);
    let mut table = BlockBasedOptions::default();
    if let Some(cache) = cache {
        table.set_block_cache(cache);
    }
    if name == CF_OBJECTS {
        // Every create looks up its key, and a namespace's, on every node, and the
        // key is absent: a bloom filter over the memtable's keys answers that
        // without walking its skip list.
        cf_opts.set_memtable_prefix_bloom_ratio(0.05);
        cf_opts.set_memtable_whole_key_filtering(true);
        // And the table files' filters, once the key has been flushed out of
        // the memtable: without them an absent key is looked up in every level.
        table.set_bloom_filter(10.0, false);
    }
    cf_opts.set_block_based_table_factory(&table);
    cf_opts
}

/// Opens a checkpoint (see [`Shared::checkpoint`]) to read it. Blocking.
pub(crate) fn open_checkpoint(dir: &Path) -> StoreResult<DB> {
    DB::open_cf_for_read_only(&Options::default(), dir, ALL_CFS, false).map_err(|e| err("open checkpoint", e))
}

/// Runs blocking RocksDB work on tokio's blocking pool, so it never stalls the runtime.
pub(crate) async fn blocking<T, F>(f: F) -> StoreResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> StoreResult<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f).await.map_err(|e| err("blocking task", e))?
}

/// Group commit for one kind of durability step (an fsync of the WAL, a flush of the
/// memtables). Writes are counted once they have returned; a caller of `run` makes every
/// write counted before it durable, and callers queued behind a running step usually
/// find their writes covered by it and return without a step of their own.
#[derive(Default)]
struct GroupCommit {
    /// Writes that have returned.
    written: AtomicU64,
    /// A value of `written` such that every write counted up to it is durable.
    durable: AtomicU64,
    /// Steps taken.
    steps: AtomicU64,
    /// One step at a time.
    lock: tokio::sync::Mutex<()>,
}

impl GroupCommit {
    fn wrote(&self) {
        self.written.fetch_add(1, Ordering::SeqCst);
    }

    /// Records a step that covered every write counted up to `upto`.
    fn stepped(&self, upto: u64) {
        self.steps.fetch_add(1, Ordering::SeqCst);
        self.durable.fetch_max(upto, Ordering::SeqCst);
    }

    async fn run<F>(&self, step: F) -> StoreResult<()>
    where
        F: FnOnce() -> StoreResult<()> + Send + 'static,
    {
        let target = self.written.load(Ordering::SeqCst);
        if self.durable.load(Ordering::SeqCst) >= target {
            return Ok(());
        }
        let _guard = self.lock.lock().await;
        if self.durable.load(Ordering::SeqCst) >= target {
            return Ok(());
        }
        // Everything counted up to `upto` has returned, so the step below covers it
        // (and perhaps more, which only the next step counts).
        let upto = self.written.load(Ordering::SeqCst);
        blocking(step).await?;
        self.stepped(upto);
        Ok(())
    }
}

/// The database plus its two group commits: `wal` for writes through the WAL (durable
/// once it is fsynced), `memtables` for writes without it (durable once flushed).
pub(crate) struct Shared {
    pub(crate) db: DB,
    path: PathBuf,
    wal: GroupCommit,
    memtables: GroupCommit,
    /// Names the next checkpoint directory; unique while this process holds the database
    /// (opening clears every checkpoint a previous process left).
    checkpoints: AtomicU64,
    /// Reads of the object families hold it shared; an install holds it exclusively while
    /// it ingests its files one family after another, so no read sees objects of one
    /// state beside the history of another.
    install: RwLock<()>,
    /// The block cache every family reads through.
    cache: Cache,
}

/// Where checkpoints (frozen copies of the database) are made, inside its directory:
/// RocksDB keeps to the files it named itself and leaves a directory of ours alone.
const CHECKPOINT_DIR: &str = "checkpoints";
/// Where snapshots arriving from a peer are kept until they are restored, inside the
/// database's directory (the same disk as what they replace).
const SPOOL_DIR: &str = "incoming-snapshots";

impl Shared {
    pub(crate) fn open(path: &Path, budget: MemoryBudget) -> StoreResult<Arc<Self>> {
        std::fs::create_dir_all(path).map_err(|e| err("create directory", e))?;
        // Checkpoints belong to the process that made them (what it froze for its Raft
        // snapshot); one a crashed process left is only disk held.
        // Likewise a snapshot it was receiving: the leader sends it again.
        for dir in [CHECKPOINT_DIR, SPOOL_DIR] {
            match std::fs::remove_dir_all(path.join(dir)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(err("remove leftovers", e)),
                _ => {}
            }
        }

        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_compression_type(DBCompressionType::Lz4);
        opts.set_max_total_wal_size(MAX_TOTAL_WAL_SIZE);
        opts.set_keep_log_file_num(10);
        // Write table files and the WAL out to the disk a megabyte at a time, rather than
        // a whole flush at its end: a burst of tens of megabytes queues in front of the
        // Raft log's fdatasync, which sits on the path of every acknowledged write.
        opts.set_bytes_per_sync(1 << 20);
        opts.set_wal_bytes_per_sync(1 << 20);
        // Object writes skip the WAL (see `write_unlogged`), so after a crash only what
        // was flushed to table files is there. Flushing every family at one point keeps
        // that a prefix of the writes: objects, history and the applied log id agree.
        opts.set_atomic_flush(true);
        // Past the budget the families are flushed, and a write waits for a flush to free
        // memory rather than grow the memtables further.
        opts.set_write_buffer_manager(&WriteBufferManager::new_write_buffer_manager(budget.memtables, true));
        let cache = Cache::new_lru_cache(budget.block_cache);

        let cfs = ALL_CFS.iter().map(|name| ColumnFamilyDescriptor::new(*name, family_options(name, Some(&cache))));
        let db = DB::open_cf_descriptors(&opts, path, cfs).map_err(|e| err("open", e))?;

        // Whatever a previous process wrote without syncing may still sit in the page
        // cache, and recovery makes it visible again. Make it durable before anything is
        // built on it (a vote, an acknowledgement to a leader).
        db.flush_wal(true).map_err(|e| err("sync on open", e))?;

        Ok(Arc::new(Shared {
            db,
            path: path.to_path_buf(),
            wal: GroupCommit::default(),
            memtables: GroupCommit::default(),
            checkpoints: AtomicU64::new(0),
            install: RwLock::new(()),
            cache,
        }))
    }

    /// RocksDB's memory by part: what the memtables hold (the active ones and those
    /// waiting to be flushed) and the table files' index and filter blocks kept outside
    /// the cache, summed over the column families, and the block cache they share.
    pub(crate) fn memory(&self) -> Vec<(&'static str, u64)> {
        let summed = |property: &str| -> u64 {
            ALL_CFS
                .iter()
                .filter_map(|name| self.cf(name).ok())
                .filter_map(|cf| self.db.property_int_value_cf(cf, property).ok().flatten())
                .sum()
        };
        vec![
            ("memtables", summed("rocksdb.cur-size-all-mem-tables")),
            ("block_cache", self.cache.get_usage() as u64),
            ("table_readers", summed("rocksdb.estimate-table-readers-mem")),
        ]
    }

    /// Makes a checkpoint: a new directory holding the database as it is now, as hard
    /// links to the table files (RocksDB flushes the memtables first, atomically across
    /// the families). Later writes and compactions leave it as it is. Blocking.
    pub(crate) fn checkpoint(&self) -> StoreResult<PathBuf> {
        let parent = self.path.join(CHECKPOINT_DIR);
        std::fs::create_dir_all(&parent).map_err(|e| err("create checkpoint directory", e))?;
        let dir = parent.join(self.checkpoints.fetch_add(1, Ordering::SeqCst).to_string());
        let checkpoint = rocksdb::checkpoint::Checkpoint::new(&self.db).map_err(|e| err("checkpoint", e))?;
        checkpoint.create_checkpoint(&dir).map_err(|e| err("checkpoint", e))?;
        Ok(dir)
    }

    /// Held by a read of the object families while it reads (see `install`).
    pub(crate) fn reading(&self) -> RwLockReadGuard<'_, ()> {
        self.install.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Held by an install while it swaps the families' contents.
    pub(crate) fn installing(&self) -> RwLockWriteGuard<'_, ()> {
        self.install.write().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn spool_dir(&self) -> PathBuf {
        self.path.join(SPOOL_DIR)
    }

    pub(crate) fn fsync_count(&self) -> u64 {
        self.wal.steps.load(Ordering::SeqCst)
    }

    pub(crate) fn flush_count(&self) -> u64 {
        self.memtables.steps.load(Ordering::SeqCst)
    }

    pub(crate) fn cf(&self, name: &str) -> StoreResult<&ColumnFamily> {
        cf(&self.db, name)
    }

    /// Writes a batch to the memtable and the WAL file, without an fsync. Readable at
    /// once; durable after the next [`Shared::sync`].
    ///
    /// Callers run it in place on the async runtime, not on the blocking pool: without
    /// an fsync it returns in microseconds (a memtable insert and a write to the page
    /// cache), less than the two thread wake-ups of a hop to the pool, which on these
    /// VMs were a fifth of a node's CPU under paced writes. It can block for longer
    /// only in a RocksDB write stall (flushes far behind), which slows writes anyway.
    pub(crate) fn write(&self, batch: WriteBatch) -> StoreResult<()> {
        self.db.write(batch).map_err(|e| err("write", e))?;
        // Counted only now that it is in the WAL file: a sync that counts it and then
        // fsyncs the WAL covers this write.
        self.wal.wrote();
        Ok(())
    }

    /// Writes a batch to the memtables only, not to the WAL. Readable at once; durable
    /// after the next [`Shared::flush`], and lost in a crash before it (the process's
    /// own, not only the machine's).
    ///
    /// For the object store, whose every write the Raft log already holds: writing it to
    /// the WAL too would log each object a second time (a copy into the page cache, a
    /// checksum, and disk bandwidth next to the log's fdatasync), for a durability the
    /// state machine does not need, since it redoes from the log whatever it lost.
    pub(crate) fn write_unlogged(&self, batch: WriteBatch) -> StoreResult<()> {
        let mut wo = WriteOptions::default();
        wo.disable_wal(true);
        self.db.write_opt(batch, &wo).map_err(|e| err("write", e))?;
        self.memtables.wrote();
        Ok(())
    }

    /// Makes every unlogged write that returned before this call durable, by flushing
    /// every family's memtable to table files (atomically, see `open`). Concurrent
    /// callers share flushes as [`Shared::sync`] callers share fsyncs.
    pub(crate) async fn flush(self: &Arc<Self>) -> StoreResult<()> {
        let me = Arc::clone(self);
        self.memtables
            .run(move || {
                let cfs = ALL_CFS.iter().map(|name| me.cf(name)).collect::<StoreResult<Vec<_>>>()?;
                let mut fo = FlushOptions::default();
                fo.set_wait(true);
                me.db.flush_cfs_opt(&cfs, &fo).map_err(|e| err("flush", e))
            })
            .await
    }

    /// Writes a batch and fsyncs the WAL before returning. RocksDB syncs the whole WAL
    /// up to this record, so every write that returned before this one is durable too.
    pub(crate) fn write_synced(&self, batch: WriteBatch) -> StoreResult<()> {
        let covered = self.wal.written.load(Ordering::SeqCst);
        let mut wo = WriteOptions::default();
        wo.set_sync(true);
        self.db.write_opt(batch, &wo).map_err(|e| err("synced write", e))?;
        self.wal.stepped(covered);
        Ok(())
    }

    /// Makes every write that returned before this call durable. Concurrent callers
    /// share fsyncs: a caller whose writes were covered by an fsync that began after
    /// them returns without another.
    pub(crate) async fn sync(self: &Arc<Self>) -> StoreResult<()> {
        let me = Arc::clone(self);
        self.wal.run(move || me.db.flush_wal(true).map_err(|e| err("sync wal", e))).await
    }
}
