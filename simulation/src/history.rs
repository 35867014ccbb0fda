//! Owns what the simulated clients saw: every operation with its call and return time
//! on one logical clock, and every watch session with the events it delivered. The
//! checkers read only this and the replay (what the nodes applied); nothing here knows
//! how the cluster works inside.
//!
//! Worked example: client 2 updates `configmaps/default/k3` on node 1 with precondition
//! RV 40 and value 17; the call is stamped 812 and the 200 reply (object at RV 57) is
//! stamped 815:
//! `Op { client: 2, node: 1, kind: Update { key: "configmaps/default/k3", value: 17,
//! precondition: 40 }, call: 812, ret: 815, outcome: Written { rv: 57 } }`.
//! Had the reply never come, `ret` would be `u64::MAX` and the outcome `Unknown`;
//! `check::k4_settle` then decides from the replicated logs whether value 17 was written.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A key as the checkers name it: `resource/namespace/name`.
pub type Key = String;

/// A value id: every create and update writes a value no other write uses, so a state
/// says which write produced it.
pub type ValueId = u64;

/// How a read chose its resourceVersion (the spec's get/list semantics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadMode {
    /// RV unset: linearizable.
    MostRecent,
    /// RV "0": any state the node has.
    Any,
    /// RV N with resourceVersionMatch=NotOlderThan (or a plain N on a list).
    NotOlderThan(u64),
    /// RV N with resourceVersionMatch=Exact.
    Exact(u64),
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OpKind {
    Create {
        key: Key,
        value: ValueId,
    },
    /// A PUT with `metadata.resourceVersion = precondition`.
    Update {
        key: Key,
        value: ValueId,
        precondition: u64,
    },
    /// A DELETE with `preconditions.resourceVersion = precondition`.
    Delete {
        key: Key,
        precondition: u64,
    },
    Get {
        key: Key,
        mode: ReadMode,
    },
    /// A list of one resource in one namespace (`resource/namespace/` is the prefix).
    List {
        prefix: String,
        mode: ReadMode,
    },
}

impl OpKind {
    pub fn is_write(&self) -> bool {
        matches!(self, OpKind::Create { .. } | OpKind::Update { .. } | OpKind::Delete { .. })
    }

    pub fn key(&self) -> Option<&str> {
        match self {
            OpKind::Create { key, .. }
            | OpKind::Update { key, .. }
            | OpKind::Delete { key, .. }
            | OpKind::Get { key, .. } => Some(key),
            OpKind::List { .. } => None,
        }
    }
}

/// One object as a read returned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Seen {
    /// The object's `metadata.resourceVersion` (its last modification).
    pub mod_rv: u64,
    pub value: ValueId,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A write took effect at `rv` (create/update: the object's new RV; delete: the RV of
    /// the deletion).
    Written { rv: u64 },
    /// A get found the object.
    Found(Seen),
    /// A list: its `metadata.resourceVersion` and its items by key.
    Listed { rv: u64, items: BTreeMap<Key, Seen> },
    /// 404: the object (get, update, delete) is absent.
    NotFound,
    /// 409 Conflict on a resourceVersion precondition.
    Conflict,
    /// 409 AlreadyExists on create.
    AlreadyExists,
    /// 410 Gone: the requested RV is compacted.
    Gone,
    /// 504 "Too large resource version": the node did not reach the RV in time.
    TooLarge,
    /// A definite refusal that changed nothing (400/422/429, a 503 before proposing).
    Refused(u16),
    /// No answer (timeout, connection lost, 5xx after proposing): a write may or may not
    /// have happened; `ret` is `u64::MAX`.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Op {
    pub client: u32,
    /// The node the request was sent to.
    pub node: u64,
    pub kind: OpKind,
    /// Logical time the request was sent.
    pub call: u64,
    /// Logical time the reply arrived; `u64::MAX` for [`Outcome::Unknown`].
    pub ret: u64,
    pub outcome: Outcome,
}

/// Where a watch session started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatchStart {
    /// `resourceVersion=N`: every change after N (after a list at N, or a resume).
    After(u64),
    /// `sendInitialEvents=true&resourceVersionMatch=NotOlderThan` with RV unset: the
    /// current state as ADDED events, then a bookmark marking their end, then changes.
    InitialEvents,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WatchItem {
    /// A change; `seen.mod_rv` is the event's resourceVersion.
    Event {
        kind: EventType,
        key: Key,
        seen: Seen,
    },
    Bookmark {
        rv: u64,
        initial_end: bool,
    },
    /// An ERROR event with this code (410: start RV compacted; 504: RV not reached).
    Error {
        code: u16,
    },
}

/// One watch request and what came back on it, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WatchSession {
    /// Which watcher (a list-then-watch loop that resumes across nodes).
    pub watcher: u32,
    /// The session's number within its watcher.
    pub seq: u32,
    pub node: u64,
    pub prefix: String,
    pub start: WatchStart,
    /// The node that issued the RV this session resumes from (None: a list on this node
    /// or initial events); a resume on another node is what W10 is about.
    pub rv_from_node: Option<u64>,
    pub call: u64,
    pub items: Vec<WatchItem>,
    /// The session ended by the watcher hanging up (a stall or a planned switch), with
    /// the node closing it, or not at all before the run ended.
    pub ended: SessionEnd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionEnd {
    ClosedByServer,
    ClosedByClient,
    Open,
}

/// The shared recorder: a logical clock and the two logs. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    clock: Arc<AtomicU64>,
    ops: Arc<Mutex<Vec<Op>>>,
    sessions: Arc<Mutex<Vec<WatchSession>>>,
}

impl Recorder {
    /// The next logical instant; every call and return gets its own, so no two tie.
    pub fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst) + 1
    }

    pub fn op(&self, op: Op) {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).push(op);
    }

    /// Records a session as it opens; its items follow as they arrive, so a session
    /// still open when the run ends is recorded too.
    pub fn session_start(&self, s: WatchSession) -> usize {
        let mut g = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        g.push(s);
        g.len() - 1
    }

    pub fn session_item(&self, idx: usize, item: WatchItem) {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())[idx].items.push(item);
    }

    pub fn session_end(&self, idx: usize, end: SessionEnd) {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())[idx].ended = end;
    }

    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn sessions(&self) -> Vec<WatchSession> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
