//! The commands that travel through the Raft log, and what applying one answers.
//!
//! Everything that could differ between replicas (uid, creationTimestamp, a generated
//! name) is already in the object when the command is proposed: apply adds only what
//! follows from the log itself, the resourceVersion (the entry's index).

use bytes::Bytes;
pub use kuorum_api::kinds::Finalizing;
use serde::{Deserialize, Serialize};

/// Checks made at apply time, against the stored object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Precondition {
    /// The object's resourceVersion must equal this.
    pub resource_version: Option<u64>,
    /// The object's uid must equal this.
    pub uid: Option<String>,
}

/// One replicated change. `object` is the full JSON of the object to store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    /// Store a new object. Fails if the key exists, or if `namespace` is given and that
    /// namespace does not exist or is terminating.
    Create { key: String, namespace: Option<String>, object: Bytes },
    /// Replace an existing object, keeping its uid, creationTimestamp and deletion marks.
    /// An update that leaves an object marked for deletion without finalizers
    /// (`finalizing` says which lists count beside `metadata.finalizers`) removes it,
    /// unless its graceful deletion is pending (`deletionGracePeriodSeconds` above 0), as
    /// kube's `shouldDeleteDuringUpdate`.
    Update {
        key: String,
        object: Bytes,
        precondition: Precondition,
        #[serde(default)]
        finalizing: Finalizing,
    },
    /// Delete an object. One with finalizers (`metadata.finalizers`, or a list
    /// `finalizing` names, as a namespace's `spec.finalizers`) is only marked:
    /// `deletionTimestamp` is set to `deletion_timestamp` (decided by the proposer), with
    /// what `finalizing` sets on marking, and it stays until an update removes its last
    /// finalizer. Otherwise it is removed.
    Delete {
        key: String,
        precondition: Precondition,
        #[serde(default)]
        deletion_timestamp: Option<String>,
        #[serde(default)]
        finalizing: Finalizing,
    },
    /// Mark an object for graceful deletion (kube's `BeforeDelete`): `deletionTimestamp`
    /// and `deletionGracePeriodSeconds` become the proposer's (a first mark, or a shorter
    /// grace period), the generation, if any, moves on at the first mark, and what
    /// `finalizing` sets on marking is set. The object stays, finalizers or not, until a
    /// `Delete` removes it. The proposer decided on the version it read, so
    /// `precondition` carries it.
    MarkDeleting {
        key: String,
        precondition: Precondition,
        deletion_timestamp: String,
        grace_period_seconds: i64,
        #[serde(default)]
        finalizing: Finalizing,
    },
    /// Forget history older than `rv` (proposed by the leader on a timer, so every node
    /// compacts at the same point of the log).
    Compact { rv: u64 },
    /// Does nothing; used to move the log forward (tests, barriers).
    Noop,
    // Data format 2. bincode numbers variants by their position, so the variants above
    // keep the bytes of format 1 and new ones only ever go below. A node that reads
    // format 1 only cannot decode these: they are proposed once the cluster's data
    // format is 2 (see `RaiseFormat`).
    /// `command`, with the id of the client request that proposed it: the proposer finds
    /// the outcome of an attempt whose answer it lost by the id, in what it applies.
    Identified { request: RequestId, command: Box<Command> },
    /// The cluster's data format becomes `format` (never lower): proposed by a leader once
    /// every member said it reads it. From the entry on, proposers may use it.
    RaiseFormat { format: u32 },
}

/// The data format this code reads and writes: 1 is every release before formats were
/// numbered; 2 adds [`Command::Identified`] and [`Command::RaiseFormat`].
pub const DATA_FORMAT: u32 = 2;

/// Names one client request across the attempts to replicate it: the proposing node and
/// a number it does not reuse (it starts from a random point at every start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RequestId {
    pub node: u64,
    pub seq: u64,
}

impl Command {
    pub fn key(&self) -> Option<&str> {
        match self {
            Command::Create { key, .. }
            | Command::Update { key, .. }
            | Command::Delete { key, .. }
            | Command::MarkDeleting { key, .. } => Some(key),
            Command::Identified { command, .. } => command.key(),
            Command::Noop | Command::Compact { .. } | Command::RaiseFormat { .. } => None,
        }
    }

    /// The command itself, without the request id a format-2 entry adds.
    pub fn unwrapped(&self) -> &Command {
        match self {
            Command::Identified { command, .. } => command.unwrapped(),
            other => other,
        }
    }

    /// The id of the request that proposed it, if it carries one.
    pub fn request(&self) -> Option<RequestId> {
        match self {
            Command::Identified { request, .. } => Some(*request),
            _ => None,
        }
    }
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Create { key, .. } => write!(f, "create {key}"),
            Command::Update { key, precondition, .. } => write!(f, "update {key} {precondition:?}"),
            Command::Delete { key, precondition, .. } => write!(f, "delete {key} {precondition:?}"),
            Command::MarkDeleting { key, grace_period_seconds, .. } => {
                write!(f, "mark deleting {key} grace {grace_period_seconds}s")
            }
            Command::Compact { rv } => write!(f, "compact {rv}"),
            Command::Noop => write!(f, "noop"),
            Command::Identified { request, command } => {
                write!(f, "{command} (request {}/{})", request.node, request.seq)
            }
            Command::RaiseFormat { format } => write!(f, "raise data format to {format}"),
        }
    }
}

/// Why a command changed nothing. Each maps to one Kubernetes Status in the REST layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum WriteError {
    #[error("not found")]
    NotFound,
    #[error("already exists")]
    AlreadyExists,
    /// The resourceVersion precondition failed (the object was modified).
    #[error("resourceVersion conflict")]
    Conflict,
    /// The uid precondition failed.
    #[error("uid precondition failed: wanted {wanted}, object has {actual}")]
    UidMismatch { wanted: String, actual: String },
    #[error("namespace {0} not found")]
    NamespaceNotFound(String),
    #[error("namespace {0} is terminating")]
    NamespaceTerminating(String),
    /// The stored or proposed bytes were not a JSON object (never expected).
    #[error("invalid object: {0}")]
    InvalidObject(String),
}

/// What applying one command answers: the object as stored (for a delete, as it was,
/// with the deleting resourceVersion), or why nothing changed.
pub type WriteResult = Result<Bytes, WriteError>;
