//! Applying commands: a pure function of (state, index, command).
//!
//! [`BatchApplier`] applies a run of log entries on top of an [`ObjectEngine`], keeping
//! the not-yet-written changes in an overlay so each entry sees the ones before it, then
//! hands back one atomic [`ObjectBatch`]. Preconditions are checked here and only here:
//! two writers racing through different nodes are ordered by the log, and the second one
//! meets the first one's resourceVersion.
//!
//! Every entry changes at most one object, so every change has its own resourceVersion
//! and a watch that resumes from any resourceVersion misses and repeats nothing.
//!
//! Worked example: the object `/registry/core/configmaps/default/a` is at RV 7. Entries
//! 9 and 10 both carry `Update{precondition: rv=7}`. Entry 9 applies (RV becomes 9);
//! entry 10 sees RV 9 in the overlay and answers `Conflict`.

use kuorum_mutation::{self as mutation, Mutation};
use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::command::{Command, Finalizing, Precondition, WriteError, WriteResult};
use crate::engine::{ObjectBatch, ObjectEngine, ObjectWrite, StoreResult};
use crate::keys;
use crate::splice;

/// What a change did to its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

/// One change an applied command made: what the watch cache consumes.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub key: String,
    pub rv: u64,
    pub kind: ChangeKind,
    /// The object after the change; for a deletion, its last state with the deleting
    /// resourceVersion (what a DELETED watch event carries).
    pub object: Bytes,
    /// The object before the change, if it existed.
    pub prev: Option<Bytes>,
}

/// The result of applying one command.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyOutcome {
    pub result: WriteResult,
    /// At most one change (see the module docs).
    pub change: Option<Change>,
    /// Set when the command was a compaction: history below this rv is gone.
    pub compacted: Option<u64>,
}

/// Receives what the state machine applied, in log order: the watch cache.
pub trait ApplyObserver: Send + Sync + 'static {
    /// Everything up to `rv` is applied and written; `changes` are the changes it made
    /// (ascending rv); `compacted` is set if history at or below it was just forgotten.
    fn applied(&self, rv: u64, changes: Vec<Change>, compacted: Option<u64>);

    /// The state was replaced (start-up, snapshot install): `objects` at `rv`, and every
    /// change after `oldest`.
    fn reset(&self, rv: u64, oldest: u64, objects: Vec<(String, Bytes)>, changes: Vec<Change>);
}

/// Rebuilds the changes after `oldest` from an engine's history, as they were applied.
pub fn changes_since<E: ObjectEngine>(engine: &E, oldest: u64) -> StoreResult<Vec<Change>> {
    let mut last: BTreeMap<String, Option<Bytes>> = BTreeMap::new();
    let mut out = Vec::new();
    for w in engine.history_after(oldest)? {
        let prev = match last.get(&w.key) {
            Some(p) => p.clone(),
            None => engine.get_at(&w.key, oldest)?,
        };
        last.insert(w.key.clone(), w.value.clone());
        let change = match (w.value, prev) {
            (Some(object), None) => Change { key: w.key, rv: w.rv, kind: ChangeKind::Added, object, prev: None },
            (Some(object), Some(p)) => {
                Change { key: w.key, rv: w.rv, kind: ChangeKind::Modified, object, prev: Some(p) }
            }
            (None, Some(p)) => {
                let mut obj = match parse_object(&p) {
                    Ok(o) => o,
                    Err(_) => continue,
                };
                set_resource_version(&mut obj, w.rv);
                Change { key: w.key, rv: w.rv, kind: ChangeKind::Deleted, object: to_bytes(&obj), prev: Some(p) }
            }
            (None, None) => continue,
        };
        out.push(change);
    }
    Ok(out)
}

/// Ends `apply_inner` with the refusal if `$e` is a `WriteError` (the command changes
/// nothing; the entry is still applied).
macro_rules! refuse_on_err {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(refusal) => return Ok(Err(refusal)),
        }
    };
}

/// Applies commands over an engine, batching their writes.
pub struct BatchApplier<'e, E: ObjectEngine> {
    engine: &'e E,
    /// Current values written by this batch, not yet in the engine: `None` is a deletion.
    overlay: BTreeMap<String, Option<Bytes>>,
    /// The same writes, versioned, in log order.
    writes: Vec<ObjectWrite>,
    /// The highest compaction requested in this batch.
    compact: Option<u64>,
    /// The highest data format this batch raised the cluster to.
    raised_format: Option<u32>,
    /// The namespaces this batch's creates looked up, by name, as the overlay or the
    /// engine had them. Invariant: cleared by every write to a namespace key, so an entry
    /// is always what a fresh lookup would answer. The creates of one batch mostly share
    /// a namespace; each would otherwise read it from the engine and scan its text.
    namespaces: HashMap<String, NamespaceState>,
}

/// What a create needs to know of its namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NamespaceState {
    Missing,
    Active,
    Terminating,
}

impl<'e, E: ObjectEngine> BatchApplier<'e, E> {
    pub fn new(engine: &'e E) -> Self {
        Self {
            engine,
            overlay: BTreeMap::new(),
            writes: Vec::new(),
            compact: None,
            raised_format: None,
            namespaces: HashMap::new(),
        }
    }

    fn namespace(&mut self, name: &str) -> StoreResult<NamespaceState> {
        if let Some(state) = self.namespaces.get(name) {
            return Ok(*state);
        }
        let state = match self.get(&keys::namespace_key(name))? {
            None => NamespaceState::Missing,
            Some(ns) if is_terminating(&ns) => NamespaceState::Terminating,
            Some(_) => NamespaceState::Active,
        };
        self.namespaces.insert(name.to_string(), state);
        Ok(state)
    }

    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        match self.overlay.get(key) {
            Some(v) => Ok(v.clone()),
            None => self.engine.get(key),
        }
    }

    fn put(&mut self, key: &str, rv: u64, value: Option<Bytes>) {
        if key.starts_with(keys::NAMESPACES_PREFIX) {
            self.namespaces.clear();
        }
        self.overlay.insert(key.to_string(), value.clone());
        self.writes.push(ObjectWrite { key: key.to_string(), rv, value });
    }

    /// Records `obj` as changed by entry `index`: sets its resourceVersion, writes it (or,
    /// for a deletion, removes the key) and notes the change. Answers the bytes written
    /// (for a deletion, the object's last state at `index`).
    fn commit(
        &mut self,
        key: &str,
        index: u64,
        kind: ChangeKind,
        obj: &mut Map<String, Value>,
        prev: Option<Bytes>,
        change: &mut Option<Change>,
    ) -> Bytes {
        set_resource_version(obj, index);
        self.commit_bytes(key, index, kind, to_bytes(obj), prev, change)
    }

    /// [`Self::commit`] for bytes that already carry their resourceVersion.
    fn commit_bytes(
        &mut self,
        key: &str,
        index: u64,
        kind: ChangeKind,
        bytes: Bytes,
        prev: Option<Bytes>,
        change: &mut Option<Change>,
    ) -> Bytes {
        let stored = if kind == ChangeKind::Deleted { None } else { Some(bytes.clone()) };
        self.put(key, index, stored);
        *change = Some(Change { key: key.to_string(), rv: index, kind, object: bytes.clone(), prev });
        bytes
    }

    /// Applies one command as log entry `index`.
    pub fn apply(&mut self, index: u64, cmd: &Command) -> StoreResult<ApplyOutcome> {
        let mut change = None;
        let mut compacted = None;
        let result = self.apply_inner(index, cmd, &mut change, &mut compacted)?;
        Ok(ApplyOutcome { result, change, compacted })
    }

    fn apply_inner(
        &mut self,
        index: u64,
        cmd: &Command,
        change: &mut Option<Change>,
        compacted: &mut Option<u64>,
    ) -> StoreResult<WriteResult> {
        match cmd {
            Command::Noop => Ok(Ok(Bytes::new())),
            Command::Identified { command, .. } => self.apply_inner(index, command, change, compacted),
            Command::RaiseFormat { format } => {
                self.raised_format = self.raised_format.max(Some(*format));
                Ok(Ok(Bytes::new()))
            }
            Command::Compact { rv } => {
                // Never past what is applied: history at the newest version must stay.
                let rv = (*rv).min(index);
                self.compact = Some(self.compact.map_or(rv, |c| c.max(rv)));
                *compacted = Some(rv);
                Ok(Ok(Bytes::new()))
            }
            Command::Create { key, namespace, object } => {
                if let Some(ns) = namespace {
                    match self.namespace(ns)? {
                        NamespaceState::Missing => return Ok(Err(WriteError::NamespaceNotFound(ns.clone()))),
                        NamespaceState::Terminating => return Ok(Err(WriteError::NamespaceTerminating(ns.clone()))),
                        NamespaceState::Active => {}
                    }
                }
                if self.get(key)?.is_some() {
                    return Ok(Err(WriteError::AlreadyExists));
                }
                // The proposer's bytes, stamped in place; the tree only for odd ones.
                if let Some(stamped) = splice::with_resource_version(object, index) {
                    return Ok(Ok(self.commit_bytes(key, index, ChangeKind::Added, stamped.into(), None, change)));
                }
                let mut obj = refuse_on_err!(parse_object(object));
                Ok(Ok(self.commit(key, index, ChangeKind::Added, &mut obj, None, change)))
            }
            Command::Update { key, object, precondition, finalizing } => {
                let Some(old_bytes) = self.get(key)? else {
                    return Ok(Err(WriteError::NotFound));
                };
                let old = refuse_on_err!(parse_object(&old_bytes));
                refuse_on_err!(check_precondition(&old, precondition));
                let mut obj = refuse_on_err!(parse_object(object));
                carry_system_fields(&old, &mut obj);
                if same_apart_from_rv(&old, &obj) {
                    // Nothing changes: kube-apiserver skips the write and answers the
                    // stored object with its old resourceVersion.
                    return Ok(Ok(old_bytes));
                }
                bump_generation(&old, &mut obj);
                // Dropping the last finalizer of an object marked for deletion removes it,
                // unless its grace period still runs (it goes with a later delete).
                let kind = if is_marked_for_deletion(&obj) && !has_finalizers(&obj, finalizing) && !grace_pending(&obj)
                {
                    ChangeKind::Deleted
                } else {
                    ChangeKind::Modified
                };
                Ok(Ok(self.commit(key, index, kind, &mut obj, Some(old_bytes), change)))
            }
            Command::MarkDeleting { key, precondition, deletion_timestamp, grace_period_seconds, finalizing } => {
                let Some(old_bytes) = self.get(key)? else {
                    return Ok(Err(WriteError::NotFound));
                };
                let mut obj = refuse_on_err!(parse_object(&old_bytes));
                refuse_on_err!(check_precondition(&obj, precondition));
                let first = !is_marked_for_deletion(&obj);
                let meta = metadata_mut(&mut obj);
                meta.insert("deletionTimestamp".into(), Value::String(deletion_timestamp.clone()));
                meta.insert("deletionGracePeriodSeconds".into(), Value::from(*grace_period_seconds));
                if let (true, Some(g)) = (first, meta.get("generation").and_then(Value::as_i64)) {
                    meta.insert("generation".into(), Value::from(g + 1));
                }
                for (pointer, text) in &finalizing.on_mark {
                    set_pointer(&mut obj, pointer, Value::String(text.clone()));
                }
                Ok(Ok(self.commit(key, index, ChangeKind::Modified, &mut obj, Some(old_bytes), change)))
            }
            Command::Delete { key, precondition, deletion_timestamp, finalizing } => {
                let Some(old_bytes) = self.get(key)? else {
                    return Ok(Err(WriteError::NotFound));
                };
                let mut obj = refuse_on_err!(parse_object(&old_bytes));
                refuse_on_err!(check_precondition(&obj, precondition));
                if has_finalizers(&obj, finalizing) {
                    if is_marked_for_deletion(&obj) {
                        // Already being deleted: nothing changes.
                        return Ok(Ok(old_bytes));
                    }
                    let meta = metadata_mut(&mut obj);
                    meta.insert(
                        "deletionTimestamp".into(),
                        Value::String(deletion_timestamp.clone().unwrap_or_else(|| "1970-01-01T00:00:00Z".into())),
                    );
                    meta.insert("deletionGracePeriodSeconds".into(), Value::from(0));
                    for (pointer, text) in &finalizing.on_mark {
                        set_pointer(&mut obj, pointer, Value::String(text.clone()));
                    }
                    return Ok(Ok(self.commit(key, index, ChangeKind::Modified, &mut obj, Some(old_bytes), change)));
                }
                Ok(Ok(self.commit(key, index, ChangeKind::Deleted, &mut obj, Some(old_bytes), change)))
            }
        }
    }

    /// The compaction requested by this batch, if any (the caller compacts the engine
    /// after writing the batch).
    pub fn compaction(&self) -> Option<u64> {
        self.compact
    }

    /// The highest data format a `RaiseFormat` of this batch asked for, if any (the
    /// caller records it, if above the stored one).
    pub fn raised_format(&self) -> Option<u32> {
        self.raised_format
    }

    /// The writes of every command applied so far, with `meta`, as one atomic batch.
    pub fn into_batch(self, meta: Vec<(String, Bytes)>) -> ObjectBatch {
        ObjectBatch { objects: self.writes, meta }
    }
}

/// Applies a single command and writes it: the convenience the tests use.
pub async fn apply_command<E: ObjectEngine>(engine: &E, index: u64, cmd: &Command) -> StoreResult<ApplyOutcome> {
    let mut applier = BatchApplier::new(engine);
    let outcome = applier.apply(index, cmd)?;
    let compact = applier.compaction();
    engine.write(applier.into_batch(Vec::new())).await?;
    if let Some(rv) = compact {
        engine.compact(rv).await?;
    }
    Ok(outcome)
}

fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, WriteError> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(WriteError::InvalidObject("not a JSON object".into())),
        Err(e) => Err(WriteError::InvalidObject(e.to_string())),
    }
}

fn to_bytes(obj: &Map<String, Value>) -> Bytes {
    // Serializing a Map of Values cannot fail.
    Bytes::from(serde_json::to_vec(obj).unwrap_or_default())
}

fn metadata(obj: &Map<String, Value>) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

fn metadata_mut(obj: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let entry = obj.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("metadata is an object")
}

fn meta_str<'a>(obj: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    metadata(obj).and_then(|m| m.get(field)).and_then(Value::as_str)
}

/// The resourceVersion stored in an object, if it has a numeric one.
pub fn resource_version_of(obj: &Map<String, Value>) -> Option<u64> {
    meta_str(obj, "resourceVersion").and_then(|s| s.parse().ok())
}

fn set_resource_version(obj: &mut Map<String, Value>, rv: u64) {
    metadata_mut(obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
}

fn is_marked_for_deletion(obj: &Map<String, Value>) -> bool {
    metadata(obj).is_some_and(|m| m.contains_key("deletionTimestamp"))
}

/// The object's graceful deletion is under way: `deletionGracePeriodSeconds` above 0.
fn grace_pending(obj: &Map<String, Value>) -> bool {
    metadata(obj).and_then(|m| m.get("deletionGracePeriodSeconds")).and_then(Value::as_i64).is_some_and(|g| g > 0)
}

/// `metadata.finalizers`, or a list `finalizing` names (a namespace's `spec.finalizers`,
/// the namespace lifecycle's own finalizer `kubernetes`), is not empty.
fn has_finalizers(obj: &Map<String, Value>, finalizing: &Finalizing) -> bool {
    let nonempty = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    nonempty(metadata(obj).and_then(|m| m.get("finalizers")))
        || finalizing.held_by.iter().any(|p| nonempty(at_pointer(obj, p)))
}

/// The parts of a JSON pointer (`/spec/finalizers`), unescaped.
fn pointer_parts(pointer: &str) -> impl Iterator<Item = String> + '_ {
    pointer.split('/').skip(1).map(|p| p.replace("~1", "/").replace("~0", "~"))
}

/// The value at the JSON `pointer` of `obj`.
fn at_pointer<'a>(obj: &'a Map<String, Value>, pointer: &str) -> Option<&'a Value> {
    let mut parts = pointer_parts(pointer);
    let mut v = obj.get(&parts.next()?)?;
    for p in parts {
        v = v.get(&p)?;
    }
    Some(v)
}

/// Sets the value at the JSON `pointer` of `obj`, making the objects on the way (a value
/// that is not an object on the way is replaced by one).
fn set_pointer(obj: &mut Map<String, Value>, pointer: &str, value: Value) {
    let mut parts = pointer_parts(pointer).peekable();
    let mut at = obj;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            at.insert(part, value);
            return;
        }
        let next = at.entry(part).or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        at = next.as_object_mut().expect("an object");
    }
}

/// Checked for every create in a namespace, on every node: read from the text when it can be.
fn is_terminating(nsobj: &[u8]) -> bool {
    splice::metadata_has(nsobj, "deletionTimestamp")
        .unwrap_or_else(|| parse_object(nsobj).map(|o| is_marked_for_deletion(&o)).unwrap_or(false))
}

fn check_precondition(old: &Map<String, Value>, p: &Precondition) -> Result<(), WriteError> {
    if let Some(uid) = &p.uid {
        let actual = meta_str(old, "uid").unwrap_or_default();
        if actual != uid {
            return Err(WriteError::UidMismatch { wanted: uid.clone(), actual: actual.to_string() });
        }
    }
    if let Some(rv) = p.resource_version {
        if resource_version_of(old) != Some(rv) && !mutation::active(Mutation::SkipPrecondition) {
            return Err(WriteError::Conflict);
        }
    }
    Ok(())
}

/// uid, creationTimestamp and the deletion marks belong to the stored object; an update
/// never changes them.
fn carry_system_fields(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let old_meta = metadata(old).cloned().unwrap_or_default();
    let meta = metadata_mut(new);
    for field in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"] {
        match old_meta.get(field) {
            Some(v) => meta.insert(field.into(), v.clone()),
            None => meta.remove(field),
        };
    }
    if let Some(g) = old_meta.get("generation") {
        meta.insert("generation".into(), g.clone());
    }
}

fn same_apart_from_rv(old: &Map<String, Value>, new: &Map<String, Value>) -> bool {
    let strip = |o: &Map<String, Value>| {
        let mut o = o.clone();
        metadata_mut(&mut o).remove("resourceVersion");
        o
    };
    strip(old) == strip(new)
}

/// metadata.generation counts changes of the desired state: everything but `metadata`
/// and `status` (a Deployment's `spec`, a PodTemplate's `template`, a webhook
/// configuration's `webhooks`), as kube's strategies compare them.
fn bump_generation(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let Some(old_gen) = metadata(old).and_then(|m| m.get("generation")).and_then(Value::as_i64) else {
        return;
    };
    let desired = |o: &Map<String, Value>, k: &str| {
        !matches!(k, "metadata" | "status" | "apiVersion" | "kind") && o.contains_key(k)
    };
    let changed =
        old.keys().chain(new.keys()).any(|k| (desired(old, k) || desired(new, k)) && old.get(k) != new.get(k));
    if changed {
        metadata_mut(new).insert("generation".into(), Value::from(old_gen + 1));
    }
}
