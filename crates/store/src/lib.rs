//! kuorum's storage layer: what is stored and how it changes, never where.
//!
//! - [`engine`]: the two storage traits, [`LogEngine`] (the Raft log and its small
//!   metadata) and [`ObjectEngine`] (Kubernetes objects by key). Neither names a backend.
//! - [`memory`]: the in-memory engines the simulator uses. Their `sync` moves writes from
//!   pending to durable and [`memory::MemoryLogEngine::crash`] drops what is pending.
//! - [`command`] and [`apply`]: the replicated commands and the pure function that applies
//!   one to the object store (preconditions are checked here, at apply); [`splice`] reads
//!   and sets `metadata` members in an object's JSON text without parsing it into a tree.
//! - [`conformance`]: the suite every engine implementation must pass.
//!
//! The RocksDB engines live in `kuorum-store-rocks`, so this crate and the simulator stay
//! free of RocksDB.

pub mod apply;
pub mod command;
pub mod conformance;
pub mod engine;
pub mod keys;
pub mod memory;
pub mod splice;

pub use apply::{apply_command, changes_since, ApplyObserver, ApplyOutcome, Change, ChangeKind};
pub use command::{Command, Finalizing, Precondition, RequestId, WriteError, WriteResult, DATA_FORMAT};
pub use engine::{DumpPart, DumpParts, FrozenObjects, LogEngine, ObjectBatch, ObjectEngine, StoreError, StoreResult};
