//! RocksDB implementations of kuorum's storage traits: [`RocksLogEngine`] (the Raft log,
//! a [`kuorum_store::LogEngine`]) and [`RocksObjectEngine`] (the applied state, a
//! [`kuorum_store::ObjectEngine`]).
//!
//! The binary uses the object engine only; its Raft log is `kuorum-store-file`'s segment
//! files, which cost a node far less under writes (no memtable, no flush, no compaction
//! of entries that are soon purged). The log engine stays: it passes the same suites and
//! is the comparison point for that choice.
//!
//! # One database, one directory
//!
//! Both engines live in one RocksDB instance ([`RocksStore`]) with four column families:
//!
//! | family        | key                         | value        |
//! |---------------|-----------------------------|--------------|
//! | `log`         | log index, u64 big-endian   | entry bytes  |
//! | `log_meta`    | name (vote, committed, ...) | bytes        |
//! | `objects`     | storage key (UTF-8)         | object bytes |
//! | `object_meta` | name (applied log id, ...)  | bytes        |
//!
//! Why one: a node has one data directory, and the four families share one write-ahead
//! log, so there is one fsync stream rather than two competing for the disk. The log's
//! fsync (on every append) then also makes the object writes before it durable, which is
//! harmless: the object store only promises durability after its own `sync`, and more is
//! fine. It also orders the two stores: a durable log write (say a purge after a
//! snapshot) implies that every object batch written before it is durable (RocksDB
//! recovers a prefix of the one WAL, and syncs closed WALs before flushing a family).
//! Each engine can still be opened on a directory of its own
//! ([`RocksLogEngine::open`], [`RocksObjectEngine::open`]), but a directory can be open
//! once at a time (RocksDB locks it): to use both engines from one directory, call
//! [`RocksStore::open`] and take both engines from it.
//!
//! # Durability
//!
//! - Appends, truncations, purges and object batches are WAL writes without an fsync:
//!   readable at once, durable after the next `sync` of either engine, in the order they
//!   were made (the WAL is one ordered file, so a durable write implies every write
//!   before it is durable too).
//! - `sync` is `flush_wal(true)` (an fsync of the WAL), with group commit: callers that
//!   arrive while an fsync is running wait for it, and those whose writes it did not
//!   cover share the next one.
//! - `put_meta` (the vote, the committed id) and `restore` are synced writes: durable on
//!   return, together with every write before them.
//! - Opening syncs the WAL once, so writes a crashed process left unsynced in the page
//!   cache are durable before the node builds anything on them.
//!
//! Blocking RocksDB calls in the async methods run on tokio's blocking pool
//! (`spawn_blocking`), so these engines need a tokio runtime; point reads and scans are
//! direct.

mod db;
mod log;
mod object;

use std::path::Path;
use std::sync::Arc;

use kuorum_store::StoreResult;

pub use crate::log::RocksLogEngine;
pub use crate::object::RocksObjectEngine;

/// One RocksDB database holding both the Raft log and the object store. Cheap to clone;
/// the database closes when the store and every engine taken from it are dropped.
#[derive(Clone)]
pub struct RocksStore {
    shared: Arc<db::Shared>,
}

impl std::fmt::Debug for RocksStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksStore").field("path", &self.shared.path()).finish()
    }
}

impl RocksStore {
    /// Opens the database in `path`, creating the directory and the column families if
    /// they are missing.
    pub fn open(path: &Path) -> StoreResult<Self> {
        Ok(RocksStore { shared: db::Shared::open(path)? })
    }

    /// The Raft log in this database.
    pub fn log_engine(&self) -> RocksLogEngine {
        RocksLogEngine::new(Arc::clone(&self.shared))
    }

    /// The object store in this database.
    pub fn object_engine(&self) -> RocksObjectEngine {
        RocksObjectEngine::new(Arc::clone(&self.shared))
    }

    /// The directory the database lives in.
    pub fn path(&self) -> &Path {
        self.shared.path()
    }

    /// How many WAL fsyncs (syncs and synced writes) were made since the database was
    /// opened, not counting the one at open.
    pub fn fsync_count(&self) -> u64 {
        self.shared.fsync_count()
    }
}
