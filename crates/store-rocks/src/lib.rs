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
//! Both engines live in one RocksDB instance ([`RocksStore`]) with five column families:
//!
//! | family        | key                         | value        |
//! |---------------|-----------------------------|--------------|
//! | `log`         | log index, u64 big-endian   | entry bytes  |
//! | `log_meta`    | name (vote, committed, ...) | bytes        |
//! | `objects`     | storage key (UTF-8)         | rv (u64 BE) + object bytes |
//! | `object_meta` | name (applied log id, ...)  | bytes        |
//! | `history`     | storage key, 0, rv (u64 BE) | tag + object |
//!
//! `objects` holds each key's current version; `history` every older version still
//! retained and every deletion. A create is then one insert, into `objects`; an update
//! moves the replaced version to `history` (the engine reads it first, and the read
//! almost always hits the memtable, since the apply has just read it too).
//!
//! Why one: a node has one data directory, and one RocksDB instance to tune, flush
//! and compact. Each engine can still be opened on a directory of its own
//! ([`RocksLogEngine::open`], [`RocksObjectEngine::open`]), but a directory can be open
//! once at a time (RocksDB locks it): to use both engines from one directory, call
//! [`RocksStore::open`] and take both engines from it.
//!
//! # Durability
//!
//! - Log appends, truncations and purges are WAL writes without an fsync: readable at
//!   once, durable after the next log `sync`, in the order they were made (the WAL is
//!   one ordered file, so a durable write implies every write before it is durable too).
//!   `sync` is `flush_wal(true)` (an fsync of the WAL), with group commit: callers that
//!   arrive while an fsync is running wait for it, and those whose writes it did not
//!   cover share the next one.
//! - Object batches and compactions skip the WAL: the Raft log already holds every one
//!   of them, and the state machine redoes from it whatever a crash lost, so logging
//!   them again would only cost (a second copy of each object into the page cache, its
//!   checksum, and disk bandwidth beside the log's fdatasync). They are durable after the
//!   next object `sync`, which flushes the memtables to table files. Flushes are atomic
//!   across the families (`atomic_flush`), so what a crash leaves is the state after
//!   some batch: objects, history and the applied log id agree.
//! - `put_meta` (the vote, the committed id) is a synced WAL write: durable on return,
//!   together with every WAL write before it.
//! - `restore` (installing a snapshot or a backup) writes the new state to table files
//!   and ingests them, family by family, behind a synced mark that opening the database
//!   resolves: durable on return, and all old or all new after a crash (`install.rs`).
//! - `freeze` (what a Raft snapshot stands for) makes a RocksDB checkpoint in
//!   `checkpoints/` inside the database's directory: the memtables are flushed and the
//!   table files hard-linked, so it holds disk, not memory, and it is opened and read
//!   only when a peer needs the snapshot. Dropping the frozen state removes it; opening
//!   the database removes any a previous process left.
//! - Opening syncs the WAL once, so log writes a crashed process left unsynced in the
//!   page cache are durable before the node builds anything on them.
//!
//! Blocking RocksDB calls in the async methods run on tokio's blocking pool
//! (`spawn_blocking`), so these engines need a tokio runtime; point reads and scans are
//! direct.

mod db;
mod install;
mod log;
mod object;

use std::path::Path;
use std::sync::Arc;

use kuorum_store::StoreResult;

pub use crate::db::MemoryBudget;
pub use crate::install::InstallUntil;
pub use crate::log::RocksLogEngine;
pub use crate::object::{RocksFrozen, RocksObjectEngine};

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
        RocksStore::open_within(path, MemoryBudget::default())
    }

    /// [`RocksStore::open`], with RocksDB's memory held to `budget`.
    pub fn open_within(path: &Path, budget: MemoryBudget) -> StoreResult<Self> {
        let shared = db::Shared::open(path, budget)?;
        install::resume(&shared)?;
        object::migrate(&shared)?;
        Ok(RocksStore { shared })
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

    /// How many times the object store's `sync` flushed the memtables since the database
    /// was opened.
    pub fn flush_count(&self) -> u64 {
        self.shared.flush_count()
    }
}
