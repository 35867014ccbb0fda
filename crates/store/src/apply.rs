//! Applying commands: a pure function of (state, index, command).
//!
//! [`BatchApplier`] applies a run of log entries on top of an [`ObjectEngine`], keeping
//! the not-yet-written changes in an overlay so each entry sees the ones before it, then
//! hands back one atomic [`ObjectBatch`]. Preconditions are checked here and only here:
//! two writers racing through different nodes are ordered by the log, and the second one
//! meets the first one's resourceVersion.
//!
//! Worked example: the object `/registry/core/configmaps/default/a` is at RV 7. Entries
//! 9 and 10 both carry `Update{precondition: rv=7}`. Entry 9 applies (RV becomes 9);
//! entry 10 sees RV 9 in the overlay and answers `Conflict`.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::command::{Command, Precondition, WriteError, WriteResult};
use crate::engine::{ObjectBatch, ObjectEngine, StoreResult};
use crate::keys;

/// One change an applied command made, in log order: what the watch cache consumes.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub key: String,
    pub rv: u64,
    /// The object after the change; `None` for a deletion.
    pub object: Option<Bytes>,
    /// The object before the change (with its old resourceVersion), if it existed.
    pub prev: Option<Bytes>,
}

/// The result of applying one command.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyOutcome {
    pub result: WriteResult,
    pub changes: Vec<Change>,
}

/// Applies commands over an engine, batching their writes.
pub struct BatchApplier<'e, E: ObjectEngine> {
    engine: &'e E,
    /// Writes made by this batch, not yet in the engine: `None` is a deletion.
    overlay: BTreeMap<String, Option<Bytes>>,
    /// The same writes in the order they were made.
    order: Vec<String>,
}

impl<'e, E: ObjectEngine> BatchApplier<'e, E> {
    pub fn new(engine: &'e E) -> Self {
        Self {
            engine,
            overlay: BTreeMap::new(),
            order: Vec::new(),
        }
    }

    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        match self.overlay.get(key) {
            Some(v) => Ok(v.clone()),
            None => self.engine.get(key),
        }
    }

    fn put(&mut self, key: &str, value: Option<Bytes>) {
        if self.overlay.insert(key.to_string(), value).is_none() {
            self.order.push(key.to_string());
        }
    }

    /// Keys of every live object in `namespace`, from the engine and this batch.
    fn keys_in_namespace(&self, namespace: &str) -> StoreResult<Vec<String>> {
        let mut keys: BTreeMap<String, ()> = BTreeMap::new();
        for (k, _) in self.engine.scan("/registry/", None, usize::MAX)? {
            if keys::namespace_of(&k) == Some(namespace) {
                keys.insert(k, ());
            }
        }
        for (k, v) in &self.overlay {
            if keys::namespace_of(k) == Some(namespace) {
                if v.is_some() {
                    keys.insert(k.clone(), ());
                } else {
                    keys.remove(k);
                }
            }
        }
        Ok(keys.into_keys().collect())
    }

    /// Applies one command as log entry `index`.
    pub fn apply(&mut self, index: u64, cmd: &Command) -> StoreResult<ApplyOutcome> {
        let mut changes = Vec::new();
        let result = self.apply_inner(index, cmd, &mut changes)?;
        Ok(ApplyOutcome { result, changes })
    }

    fn apply_inner(
        &mut self,
        index: u64,
        cmd: &Command,
        changes: &mut Vec<Change>,
    ) -> StoreResult<WriteResult> {
        match cmd {
            Command::Noop => Ok(Ok(Bytes::new())),
            Command::Create {
                key,
                namespace,
                object,
            } => {
                if let Some(ns) = namespace {
                    match self.get(&keys::namespace_key(ns))? {
                        None => return Ok(Err(WriteError::NamespaceNotFound(ns.clone()))),
                        Some(nsobj) if is_terminating(&nsobj) => {
                            return Ok(Err(WriteError::NamespaceTerminating(ns.clone())))
                        }
                        Some(_) => {}
                    }
                }
                if self.get(key)?.is_some() {
                    return Ok(Err(WriteError::AlreadyExists));
                }
                let mut obj = match parse_object(object) {
                    Ok(o) => o,
                    Err(e) => return Ok(Err(e)),
                };
                set_resource_version(&mut obj, index);
                let bytes = to_bytes(&obj);
                self.put(key, Some(bytes.clone()));
                changes.push(Change {
                    key: key.clone(),
                    rv: index,
                    object: Some(bytes.clone()),
                    prev: None,
                });
                Ok(Ok(bytes))
            }
            Command::Update {
                key,
                object,
                precondition,
            } => {
                let Some(old_bytes) = self.get(key)? else {
                    return Ok(Err(WriteError::NotFound));
                };
                let old = match parse_object(&old_bytes) {
                    Ok(o) => o,
                    Err(e) => return Ok(Err(e)),
                };
                if let Err(e) = check_precondition(&old, precondition) {
                    return Ok(Err(e));
                }
                let mut obj = match parse_object(object) {
                    Ok(o) => o,
                    Err(e) => return Ok(Err(e)),
                };
                carry_system_fields(&old, &mut obj);
                if same_apart_from_rv(&old, &obj) {
                    // Nothing changes: kube-apiserver skips the write and answers the
                    // stored object with its old resourceVersion.
                    return Ok(Ok(old_bytes));
                }
                bump_generation(&old, &mut obj);
                set_resource_version(&mut obj, index);
                let bytes = to_bytes(&obj);
                self.put(key, Some(bytes.clone()));
                changes.push(Change {
                    key: key.clone(),
                    rv: index,
                    object: Some(bytes.clone()),
                    prev: Some(old_bytes),
                });
                Ok(Ok(bytes))
            }
            Command::Delete { key, precondition } => {
                let Some(old_bytes) = self.get(key)? else {
                    return Ok(Err(WriteError::NotFound));
                };
                let mut old = match parse_object(&old_bytes) {
                    Ok(o) => o,
                    Err(e) => return Ok(Err(e)),
                };
                if let Err(e) = check_precondition(&old, precondition) {
                    return Ok(Err(e));
                }
                // A namespace takes its contents with it.
                if let Some(ns) = namespace_name_of_key(key) {
                    for k in self.keys_in_namespace(&ns)? {
                        let prev = self.get(&k)?;
                        self.put(&k, None);
                        changes.push(Change {
                            key: k,
                            rv: index,
                            object: None,
                            prev,
                        });
                    }
                }
                self.put(key, None);
                changes.push(Change {
                    key: key.clone(),
                    rv: index,
                    object: None,
                    prev: Some(old_bytes),
                });
                set_resource_version(&mut old, index);
                Ok(Ok(to_bytes(&old)))
            }
        }
    }

    /// The writes of every command applied so far, with `meta`, as one atomic batch.
    pub fn into_batch(self, meta: Vec<(String, Bytes)>) -> ObjectBatch {
        let BatchApplier {
            mut overlay, order, ..
        } = self;
        let objects = order
            .into_iter()
            .map(|k| {
                let v = overlay.remove(&k).flatten();
                (k, v)
            })
            .collect();
        ObjectBatch { objects, meta }
    }
}

/// Applies a single command and writes it: the convenience the tests use.
pub async fn apply_command<E: ObjectEngine>(
    engine: &E,
    index: u64,
    cmd: &Command,
) -> StoreResult<ApplyOutcome> {
    let mut applier = BatchApplier::new(engine);
    let outcome = applier.apply(index, cmd)?;
    engine.write(applier.into_batch(Vec::new())).await?;
    Ok(outcome)
}

fn namespace_name_of_key(key: &str) -> Option<String> {
    key.strip_prefix("/registry/core/namespaces/")
        .filter(|n| !n.contains('/'))
        .map(str::to_string)
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
    let entry = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("metadata is an object")
}

fn meta_str<'a>(obj: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    metadata(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
}

/// The resourceVersion stored in an object, if it has a numeric one.
pub fn resource_version_of(obj: &Map<String, Value>) -> Option<u64> {
    meta_str(obj, "resourceVersion").and_then(|s| s.parse().ok())
}

fn set_resource_version(obj: &mut Map<String, Value>, rv: u64) {
    metadata_mut(obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
}

fn is_terminating(nsobj: &[u8]) -> bool {
    parse_object(nsobj)
        .map(|o| metadata(&o).is_some_and(|m| m.contains_key("deletionTimestamp")))
        .unwrap_or(false)
}

fn check_precondition(old: &Map<String, Value>, p: &Precondition) -> Result<(), WriteError> {
    if let Some(uid) = &p.uid {
        let actual = meta_str(old, "uid").unwrap_or_default();
        if actual != uid {
            return Err(WriteError::UidMismatch {
                wanted: uid.clone(),
                actual: actual.to_string(),
            });
        }
    }
    if let Some(rv) = p.resource_version {
        if resource_version_of(old) != Some(rv) {
            return Err(WriteError::Conflict);
        }
    }
    Ok(())
}

/// uid and creationTimestamp belong to the stored object; an update never changes them.
fn carry_system_fields(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let old_meta = metadata(old).cloned().unwrap_or_default();
    let meta = metadata_mut(new);
    for field in ["uid", "creationTimestamp"] {
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

/// metadata.generation counts changes of the desired state (`spec`).
fn bump_generation(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let Some(old_gen) = metadata(old)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
    else {
        return;
    };
    if old.get("spec") != new.get("spec") {
        metadata_mut(new).insert("generation".into(), Value::from(old_gen + 1));
    }
}
