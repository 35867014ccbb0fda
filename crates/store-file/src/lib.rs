//! The Raft log in append-only segment files: [`FileLogEngine`], a
//! [`kuorum_store::LogEngine`] with no database under it.
//!
//! # Why not a RocksDB column family
//!
//! A Raft log is written once at its end, read back soon after (replication, apply) and
//! dropped from its start. In RocksDB every entry was also a memtable insert, a second
//! copy in a table file at the next flush, and a range deletion compacted away later;
//! under creates that was a third of RocksDB's work on each node. Here an entry is one
//! `write` into the page cache, one shared `fdatasync`, and a file removal when its
//! segment is purged. The object store stays in RocksDB, with its own (unsynced) WAL:
//! it is rebuilt from this log after a crash, and it is synced before any snapshot lets
//! openraft purge the log.
//!
//! # On disk
//!
//! One directory: segment files `<first index, 20 digits>.log`, each a run of
//! [records](record) with consecutive indexes, and `meta` (the vote and the first live
//! index, replaced whole; see [`meta`]).

mod log;
mod meta;
mod record;

pub use crate::log::{FileLogEngine, FileLogOptions};
