//! managedFields: who owns which field of an object, server-side apply and its conflicts.
//!
//! This is kube-apiserver's field manager (`k8s.io/apimachinery/pkg/util/managedfields/internal`,
//! formerly `k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager`) over structured-merge-diff
//! (`sigs.k8s.io/structured-merge-diff`), on JSON values and kuorum's [`Schema`]:
//!
//! - [`update`]: a create, PUT, or JSON/merge/strategic PATCH by a manager. The manager's
//!   `Update` entry gets every field the write added or changed; those fields are taken from
//!   every other entry; removed fields leave every entry; empty entries are dropped.
//! - [`apply`]: server-side apply. The applied configuration is merged into the object; its
//!   field set becomes the manager's `Apply` entry; fields the manager applied before and no
//!   longer applies are removed unless someone else owns them; a field owned by another manager
//!   whose value the apply changes is a [`Conflict`], unless `force` moves it to the applier.
//!
//! # managedFields entries
//!
//! `{"manager", "operation": "Apply"|"Update", "apiVersion", "time", "fieldsType": "FieldsV1",
//! "fieldsV1", "subresource"}`. An `Apply` entry is identified by (manager, subresource) and
//! carries the apiVersion of its last apply; an `Update` entry by (manager, apiVersion,
//! subresource). Entries are sorted as kube-apiserver sorts them: `Apply` before `Update`, then
//! by time (seconds), manager, apiVersion, subresource. An entry's time is the time of the last
//! write that changed the object through it; an apply that changes nothing in the object does
//! not touch it (so a new applier that only shares values gets an entry without `time`, as in
//! kube). At most 10 `Update` entries are kept: the oldest are merged into `ancient-changes`.
//!
//! FieldsV1: `f:<field>` for struct fields and map keys, `k:{"name":"c"}` for a list-map
//! element (its key fields, sorted), `v:<json>` for a set element, `".": {}` first in the object
//! of a node owned as a whole that also has owned fields under it, `{}` for a leaf. Atomic lists
//! and maps are leaves. What a write owns (structured-merge-diff's `ToFieldSet` and `Compare`):
//! every leaf it sets; every list element as a node; for an apply, map keys and fields the
//! schema does not declare as nodes (`f:labels` has no `"."`, `f:app` under it is a leaf); for an
//! update, every map or list element that did not exist before as a node (so a created
//! ConfigMap's updater owns `f:data: {".": {}, "f:key": {}}`).
//!
//! Never owned (kube's `stripMetaManager`): `apiVersion`, `kind`, `metadata` itself and
//! `metadata.{name, namespace, creationTimestamp, selfLink, uid, clusterName, generation,
//! managedFields, resourceVersion}`. Beyond those, a caller may pass [`Options::ignored`]: the
//! "reset fields" of kube's registry strategies (`status` for the main resource of a kind with a
//! status subresource, `spec` and e.g. `metadata.labels` for a `status` subresource). They are
//! left out of every change set and of the applier's set; resetting their values in the stored
//! object is the caller's job (kube's strategies do it in `PrepareForUpdate`).
//!
//! # Client-supplied managedFields (update only)
//!
//! As kube's `decodeLiveOrNew`: on a subresource write the stored entries are used, whatever the
//! request says. Otherwise an empty list `[]` (or a list of one empty entry `[{}]`) resets the
//! tracking; a list that decodes to at least one entry replaces the stored entries; an absent,
//! `null` or undecodable list keeps the stored ones. When, after that, an existing object has no
//! entries at all, the update is not tracked (kube's `skipNonAppliedManager`): a reset strips
//! managedFields entirely (kube's integration test `TestClearManagedFieldsWithUpdateEmptyList`;
//! the website's remark that `[]` does not reset is outdated). An apply to an object without
//! entries first gives all of its fields to an `Update` entry named `before-first-apply`.
//!
//! # Deviations from kube-apiserver
//!
//! - One field layout for every apiVersion of a kind: entries recorded at another apiVersion are
//!   compared as they are, not converted.
//! - Objects are JSON, not Go structs: on create, kube compares with an empty Go object whose
//!   non-pointer struct fields (`spec`, `spec.template`, ...) already exist, so those are not
//!   owned as nodes; here they are (`f:spec: {".": {}, ...}`), as kube does for custom resources.
//! - Schema-change reconciliation (entries written when a field was atomic, read when it is
//!   granular, or the reverse) is not done.
//!
//! # kubectl
//!
//! As kube's `lastAppliedManager` / `lastAppliedUpdater`, for the manager `kubectl` only: an
//! apply whose conflicts are all fields of the object's
//! `kubectl.kubernetes.io/last-applied-configuration` annotation (of the same apiVersion) whose
//! live values are still the annotation's is forced (upgrading from client-side apply); and
//! after an apply the annotation, if the object has one, is rewritten to the applied
//! configuration.
//!
//! # Custom resources
//!
//! With a CRD version's schema ([`Schema::standalone`]), `apiVersion` and `kind` are known
//! strings and `metadata` is the built-in ObjectMeta when the schema does not describe them, as
//! kube-apiserver builds custom resources' apply schema; `x-kubernetes-preserve-unknown-fields`
//! subtrees have granular maps (their keys owned as nodes) and atomic lists.

mod path;
mod set;
mod typed;

use std::collections::BTreeMap;
use std::fmt;

use kuorum_schema::Schema;
use serde_json::{Map, Value};

use crate::path::{path_string, values_equal, PathElement};
use crate::set::Set;
use crate::typed::{Comparison, Ty, TypeError};

/// Who is writing: manager name, the apiVersion the request used, the subresource (`""` or
/// `"status"`/`"scale"`), and the time (RFC 3339, `"2026-11-22T05:40:00Z"`), which the caller
/// supplies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Writer<'a> {
    /// The `fieldManager` (kube defaults it from the user agent); `""` is recorded as `unknown`.
    pub manager: &'a str,
    pub api_version: &'a str,
    pub subresource: &'a str,
    pub time: &'a str,
}

/// Extra knobs of [`update_with`] and [`apply_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// Paths (field names joined by `.`, e.g. `"status"`, `"metadata.labels"`) no manager owns
    /// through this endpoint: kube's per-strategy `GetResetFields`.
    pub ignored: &'a [&'a str],
}

/// The operation of a managedFields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// A field an apply would change that another manager owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The owner's manager name.
    pub manager: String,
    /// The apiVersion of the owner's entry.
    pub api_version: String,
    /// structured-merge-diff's path: `.data.key`, `.spec.containers[name="c"].image`.
    pub field: String,
    /// The owner's operation: only `Update` owners are shown with `using <apiVersion>`.
    pub operation: Operation,
    /// The owner's subresource (`""` for the main resource).
    pub subresource: String,
}

impl Conflict {
    /// How kube-apiserver names the owner (`printManager`): `"m" using v1` for an update,
    /// `"m"` for an applier, with ` with subresource "status"` after the name when there is one.
    fn owner(&self) -> String {
        let mut s = quote(&self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {}", quote(&self.subresource));
        }
        match self.operation {
            Operation::Update => format!("{s} using {}", self.api_version),
            Operation::Apply => s,
        }
    }

    /// The StatusCause message: `conflict with "m" using v1`. (Its `field` is [`Conflict::field`]
    /// and its `reason` `FieldManagerConflict`.)
    pub fn cause_message(&self) -> String {
        format!("conflict with {}", self.owner())
    }

    fn identity(&self) -> ManagerId {
        ManagerId {
            manager: self.manager.clone(),
            operation: self.operation,
            api_version: if self.operation == Operation::Update { self.api_version.clone() } else { String::new() },
            subresource: self.subresource.clone(),
        }
    }
}

/// Why an apply failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyError {
    /// Fields owned by other managers with different values (409, reason `Conflict`).
    Conflicts(Vec<Conflict>),
    /// The configuration cannot be applied: a list-map element without its key, duplicate
    /// keys, a field the schema does not declare, managedFields in the configuration, a
    /// mismatched apiVersion (422 here; kube answers some of these with 400 or 500).
    Invalid(String),
}

impl ApplyError {
    /// The Status message kube-apiserver sends: `Apply failed with 1 conflict: conflict with
    /// "m" using v1: .data.key`; for several, `Apply failed with N conflicts: ` then, per owner
    /// (sorted), `conflicts with "m" using v1:` and one `- <path>` line per field, joined by
    /// newlines.
    pub fn message(&self) -> String {
        match self {
            ApplyError::Invalid(m) => m.clone(),
            ApplyError::Conflicts(cs) if cs.len() == 1 => {
                format!("Apply failed with 1 conflict: conflict with {}: {}", cs[0].owner(), cs[0].field)
            }
            ApplyError::Conflicts(cs) => {
                let mut groups: BTreeMap<String, (String, Vec<&str>)> = BTreeMap::new();
                for c in cs {
                    let g = groups.entry(c.identity().identifier()).or_insert_with(|| (c.owner(), Vec::new()));
                    g.1.push(&c.field);
                }
                let mut lines = Vec::new();
                for (owner, fields) in groups.values() {
                    lines.push(format!("conflicts with {owner}:"));
                    lines.extend(fields.iter().map(|f| format!("- {f}")));
                }
                format!("Apply failed with {} conflicts: {}", cs.len(), lines.join("\n"))
            }
        }
    }
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for ApplyError {}

/// Why an update's managedFields could not be computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldManagerError {
    /// The object is not a JSON object.
    Invalid(String),
}

impl fmt::Display for FieldManagerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldManagerError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for FieldManagerError {}

/// An Update operation (create, PUT, or JSON/merge/strategic PATCH) by `w`: `old` is the stored
/// object (None on create), `new` the object about to be stored. Returns `new` with
/// metadata.managedFields updated (see the crate documentation for the rules, including
/// client-supplied managedFields).
///
/// Like kube's `UpdateNoErrors`, a `new` whose fields cannot be typed (a list-map element
/// without its key) is not an error here: it gets `old`'s managedFields unchanged, and rejecting
/// it is validation's job. The only error is a `new` that is not a JSON object.
pub fn update(schema: Schema<'_>, old: Option<&Value>, new: Value, w: &Writer<'_>) -> Result<Value, FieldManagerError> {
    update_with(schema, old, new, w, &Options::default())
}

/// [`update`] with [`Options`].
pub fn update_with(
    schema: Schema<'_>,
    old: Option<&Value>,
    mut new: Value,
    w: &Writer<'_>,
    opts: &Options<'_>,
) -> Result<Value, FieldManagerError> {
    if !new.is_object() {
        return Err(FieldManagerError::Invalid("the object must be a JSON object".to_string()));
    }
    let ctx = Ctx::new(schema, w, opts);
    let old_mf = old.and_then(managed_fields_of).cloned();
    let new_mf = managed_fields_of(&new).cloned();
    let stored = || Managed::decode(old_mf.as_ref()).unwrap_or_default();
    let mut managed = if !w.subresource.is_empty() {
        stored()
    } else if is_reset(new_mf.as_ref()) {
        Managed::default()
    } else {
        match Managed::decode(new_mf.as_ref()) {
            Ok(m) if !m.fields.is_empty() => m,
            _ => stored(),
        }
    };
    set_managed_fields(&mut new, None);
    if managed.fields.is_empty() && old.is_some() {
        return Ok(new);
    }
    let live = old.map(without_managed_fields).unwrap_or_else(|| Value::Object(Map::new()));
    if update_core(&ctx, &live, &new, &mut managed, w.manager).is_err() {
        set_managed_fields(&mut new, old_mf);
        return Ok(new);
    }
    managed.cap_update_managers(MAX_UPDATE_MANAGERS);
    set_managed_fields(&mut new, managed.encode());
    Ok(new)
}

/// A mutating admission policy's apply configuration `patch` merged into `live`, as kube's
/// `ApplyStructuredMergeDiff` merges it: maps and structs field by field, keyed lists
/// (`list-type: map`) element by key, sets by value, and no fields owned. A patch that sets
/// an atomic list, map or struct is refused (kube's `may not mutate atomic arrays, maps or
/// structs`), as is one the schema cannot type.
pub fn merge_apply_configuration(schema: Schema<'_>, live: &Value, patch: &Value) -> Result<Value, String> {
    let ty = Ty::root(schema);
    typed::validate(ty, patch, true)
        .map_err(|e| format!("failed to convert patch object to typed object: {}", typed::errors_string(&e)))?;
    let atomics = typed::atomics(ty, patch);
    if !atomics.is_empty() {
        return Err(format!(
            "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            atomics.join(", ")
        ));
    }
    typed::validate(ty, live, false)
        .map_err(|e| format!("failed to convert original object to typed object: {}", typed::errors_string(&e)))?;
    typed::merge(ty, live, patch).map_err(|e| format!("failed to merge patch: {}", typed::errors_string(&e)))
}

/// Server-side apply of `config` (the applied configuration, already decoded to JSON; it has
/// apiVersion/kind/metadata.name) to `live` (None → this apply creates the object). Returns the
/// object to store (with managedFields), or the conflicts. `force` takes the conflicting fields
/// from their owners.
pub fn apply(
    schema: Schema<'_>,
    live: Option<&Value>,
    config: &Value,
    w: &Writer<'_>,
    force: bool,
) -> Result<Value, ApplyError> {
    apply_with(schema, live, config, w, force, &Options::default())
}

/// [`apply`] with [`Options`].
pub fn apply_with(
    schema: Schema<'_>,
    live: Option<&Value>,
    config: &Value,
    w: &Writer<'_>,
    force: bool,
    opts: &Options<'_>,
) -> Result<Value, ApplyError> {
    let ctx = Ctx::new(schema, w, opts);
    if !config.is_object() {
        return Err(ApplyError::Invalid("the applied configuration must be a JSON object".to_string()));
    }
    if config.pointer("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApplyError::Invalid("metadata.managedFields must be nil".to_string()));
    }
    if let Some(v) = config.get("apiVersion").and_then(Value::as_str) {
        if !w.api_version.is_empty() && v != w.api_version {
            return Err(ApplyError::Invalid(format!(
                "Incorrect version specified in apply patch. Specified patch version: {v}, expected: {}",
                w.api_version
            )));
        }
    }
    let live = match live {
        Some(v) if v.is_object() => v.clone(),
        Some(_) => return Err(ApplyError::Invalid("the live object must be a JSON object".to_string())),
        None => Value::Object(Map::new()),
    };
    let managed = Managed::decode(managed_fields_of(&live))
        .map_err(|e| ApplyError::Invalid(format!("failed to decode managed fields: {e}")))?;
    let live = without_managed_fields(&live);
    typed::validate(ctx.ty, config, true).map_err(|e| invalid("failed to create typed patch object", &e))?;
    typed::validate(ctx.ty, &live, false).map_err(|e| invalid("failed to create typed live object", &e))?;

    let mut result = apply_core(&ctx, &live, config, managed.clone(), w, force);
    // kube's lastAppliedManager: kubectl's first server-side applies may take, without
    // --force-conflicts, the fields its client-side apply annotation says it set last, as long
    // as their live values are still those.
    if w.manager == KUBECTL {
        if let Err(CoreError::Conflicts(c)) = &result {
            if let Some(allowed) = allowed_conflicts_from_last_applied(&ctx, &live) {
                let remaining: BTreeMap<ManagerId, (Set, String)> = c
                    .iter()
                    .filter_map(|(id, (set, v))| {
                        let d = set.difference(&allowed);
                        (!d.is_empty()).then(|| (id.clone(), (d, v.clone())))
                    })
                    .collect();
                result = if remaining.is_empty() {
                    apply_core(&ctx, &live, config, managed, w, true)
                } else {
                    Err(CoreError::Conflicts(remaining))
                };
            }
        }
    }
    let (mut out, managed) = match result {
        Ok(r) => r,
        Err(CoreError::Type(what, e)) => return Err(invalid(what, &e)),
        Err(CoreError::Conflicts(c)) => return Err(ApplyError::Conflicts(conflicts_list(c))),
    };
    if w.manager == KUBECTL {
        sync_last_applied(&mut out, config);
    }
    set_managed_fields(&mut out, managed.encode());
    Ok(out)
}

enum CoreError {
    Type(&'static str, Vec<TypeError>),
    Conflicts(BTreeMap<ManagerId, (Set, String)>),
}

/// The apply path below kube's lastApplied wrappers: skipNonApplied (`before-first-apply`),
/// structured-merge-diff's `Updater.Apply` (merge, prune, conflicts), stripMeta, and the time of
/// an apply that changed the object. Returns the object (without managedFields) and the entries.
fn apply_core(
    ctx: &Ctx<'_>,
    live: &Value,
    config: &Value,
    mut managed: Managed,
    w: &Writer<'_>,
    force: bool,
) -> Result<(Value, Managed), CoreError> {
    if managed.fields.is_empty() {
        update_core(ctx, &Value::Object(Map::new()), live, &mut managed, BEFORE_FIRST_APPLY)
            .map_err(|e| CoreError::Type("failed to create manager for existing fields", e))?;
    }
    let id = ManagerId::new(w.manager, Operation::Apply, "", w.subresource);
    let merged = typed::merge(ctx.ty, live, config).map_err(|e| CoreError::Type("failed to merge config", e))?;
    let last = managed.fields.get(&id).map(|vs| vs.set.clone());
    let set = typed::field_set(ctx.ty, config).recursive_difference(&ctx.ignored);
    managed.fields.insert(id.clone(), VersionedSet { set, api_version: ctx.version.clone(), applied: true });
    let merged = prune(ctx, merged, &managed.fields, last);
    match updater_update(ctx, live, &merged, &mut managed.fields, &id, force) {
        Ok(_) => {}
        Err(UpdateFailure::Type(e)) => return Err(CoreError::Type("failed to compare objects", e)),
        Err(UpdateFailure::Conflicts(c)) => return Err(CoreError::Conflicts(c)),
    }
    if let Some(vs) = managed.fields.get_mut(&id) {
        vs.set = vs.set.difference(strip_set());
        if vs.set.is_empty() {
            managed.fields.remove(&id);
        }
    }
    if values_equal(live, &merged) {
        Ok((live.clone(), managed))
    } else {
        managed.times.insert(id, ctx.time.clone());
        Ok((merged, managed))
    }
}

/// The fields of the last-applied annotation whose live values are still the annotation's
/// (kube's `allowedConflictsFromLastApplied`); None when there is no usable annotation.
fn allowed_conflicts_from_last_applied(ctx: &Ctx<'_>, live: &Value) -> Option<Set> {
    let text = live.get("metadata")?.get("annotations")?.get(LAST_APPLIED)?.as_str()?;
    let last_applied: Value = serde_json::from_str(text).ok().filter(Value::is_object)?;
    if last_applied.get("apiVersion").and_then(Value::as_str) != Some(ctx.version.as_str()) {
        return None;
    }
    typed::validate(ctx.ty, &last_applied, true).ok()?;
    let set = typed::field_set(ctx.ty, &last_applied);
    let cmp = typed::compare(ctx.ty, &last_applied, live).ok()?;
    Some(set.difference(&cmp.modified).difference(&cmp.added).difference(&cmp.removed))
}

/// kube's lastAppliedUpdater: after kubectl's server-side apply, an existing last-applied
/// annotation is rewritten to the applied configuration (as Go's encoder writes it: sorted keys,
/// HTML-safe escapes, a final newline), or dropped if that makes the annotations too large.
fn sync_last_applied(out: &mut Value, config: &Value) {
    let has = out
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(LAST_APPLIED))
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    if !has {
        return;
    }
    let mut applied = config.clone();
    if let Some(a) = applied.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) {
        a.remove(LAST_APPLIED);
    }
    let text = go_json(&applied);
    let Some(annotations) = out.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut) else { return };
    annotations.insert(LAST_APPLIED.to_string(), Value::String(text));
    let size: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        annotations.remove(LAST_APPLIED);
    }
}

/// JSON as Go's `encoding/json` Encoder writes an unstructured object.
fn go_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            v => v.clone(),
        }
    }
    let mut s = sorted(v)
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029");
    s.push('\n');
    s
}

const KUBECTL: &str = "kubectl";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

const MAX_UPDATE_MANAGERS: usize = 10;
const BEFORE_FIRST_APPLY: &str = "before-first-apply";
const ANCIENT_CHANGES: &str = "ancient-changes";

fn invalid(what: &str, errs: &[TypeError]) -> ApplyError {
    ApplyError::Invalid(format!("{what}: {}", typed::errors_string(errs)))
}

/// A string quoted as Go's `%q` quotes it (JSON escaping, which agrees for printable text).
fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// What one write needs to know besides the objects.
struct Ctx<'a> {
    ty: Ty<'a>,
    ignored: Set,
    version: String,
    subresource: String,
    time: String,
}

impl<'a> Ctx<'a> {
    fn new(schema: Schema<'a>, w: &Writer<'_>, opts: &Options<'_>) -> Ctx<'a> {
        let mut ignored = Set::new();
        for p in opts.ignored {
            let path: Vec<PathElement> =
                p.split('.').filter(|s| !s.is_empty()).map(|s| PathElement::Field(s.to_string())).collect();
            ignored.insert(&path);
        }
        Ctx {
            ty: Ty::root(schema),
            ignored,
            version: w.api_version.to_string(),
            subresource: w.subresource.to_string(),
            time: w.time.to_string(),
        }
    }
}

/// The identity of a managedFields entry (kube's manager identifier, `BuildManagerIdentifier`):
/// an Apply entry has no apiVersion in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ManagerId {
    manager: String,
    operation: Operation,
    api_version: String,
    subresource: String,
}

impl ManagerId {
    fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> ManagerId {
        ManagerId {
            manager: if manager.is_empty() { "unknown".to_string() } else { manager.to_string() },
            operation,
            api_version: if operation == Operation::Update { api_version.to_string() } else { String::new() },
            subresource: subresource.to_string(),
        }
    }

    /// The placeholder kube's `managedFieldsUpdater` runs an update under, so that the
    /// manager's own earlier fields are treated like anyone else's. No decoded entry has an
    /// empty apiVersion, so it cannot collide.
    fn current_operation() -> ManagerId {
        ManagerId {
            manager: "current-operation".to_string(),
            operation: Operation::Update,
            api_version: String::new(),
            subresource: String::new(),
        }
    }

    /// The identifier's JSON, as kube marshals it: what conflicts are sorted by.
    fn identifier(&self) -> String {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), Value::String(self.manager.clone()));
        }
        m.insert("operation".into(), Value::String(self.operation.as_str().into()));
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        }
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), Value::String(self.subresource.clone()));
        }
        Value::Object(m).to_string()
    }
}

#[derive(Debug, Clone)]
struct VersionedSet {
    set: Set,
    api_version: String,
    applied: bool,
}

/// The decoded managedFields: each entry's fields, and the times of those that have one.
#[derive(Debug, Clone, Default)]
struct Managed {
    fields: BTreeMap<ManagerId, VersionedSet>,
    times: BTreeMap<ManagerId, String>,
}

impl Managed {
    /// Decodes metadata.managedFields as kube's `DecodeManagedFields` does (any bad entry fails
    /// the whole list; a later entry with the same identity wins).
    fn decode(v: Option<&Value>) -> Result<Managed, String> {
        let entries = match v {
            None | Some(Value::Null) => return Ok(Managed::default()),
            Some(Value::Array(a)) => a,
            Some(_) => return Err("managedFields must be a list".to_string()),
        };
        let mut m = Managed::default();
        for (i, e) in entries.iter().enumerate() {
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
            let operation = match s("operation") {
                "Apply" => Operation::Apply,
                "Update" => Operation::Update,
                _ => return Err("operation must be `Apply` or `Update`".to_string()),
            };
            if s("apiVersion").is_empty() {
                return Err("apiVersion must not be empty".to_string());
            }
            match s("fieldsType") {
                "FieldsV1" => {}
                "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
                t => return Err(format!("invalid fieldsType {} in managed fields entry {i}", quote(t))),
            }
            let set = match e.get("fieldsV1") {
                None | Some(Value::Null) => Set::new(),
                Some(f) => Set::from_fields_v1(f).map_err(|err| format!("error decoding set: {err}"))?,
            };
            let id = ManagerId {
                manager: s("manager").to_string(),
                operation,
                api_version: if operation == Operation::Update { s("apiVersion").to_string() } else { String::new() },
                subresource: s("subresource").to_string(),
            };
            match e.get("time").and_then(Value::as_str) {
                Some(t) => m.times.insert(id.clone(), t.to_string()),
                None => m.times.remove(&id),
            };
            let vs =
                VersionedSet { set, api_version: s("apiVersion").to_string(), applied: operation == Operation::Apply };
            m.fields.insert(id, vs);
        }
        Ok(m)
    }

    /// The managedFields list, sorted as kube sorts it; None when there are no entries.
    fn encode(&self) -> Option<Value> {
        if self.fields.is_empty() {
            return None;
        }
        let mut entries: Vec<(Operation, i64, &ManagerId, &VersionedSet)> = self
            .fields
            .iter()
            .map(|(id, vs)| {
                let op = if vs.applied { Operation::Apply } else { id.operation };
                // Only an order among several entries needs the time read (most objects
                // have one manager).
                let secs = match self.fields.len() {
                    1 => 0,
                    _ => self.times.get(id).and_then(|t| kuorum_api::time::unix_seconds(t)).unwrap_or(0),
                };
                (op, secs, id, vs)
            })
            .collect();
        entries.sort_by(|a, b| {
            (a.0, a.1, &a.2.manager, &a.3.api_version, &a.2.subresource).cmp(&(
                b.0,
                b.1,
                &b.2.manager,
                &b.3.api_version,
                &b.2.subresource,
            ))
        });
        let list = entries
            .into_iter()
            .map(|(op, _, id, vs)| {
                let mut e = Map::new();
                e.insert("manager".into(), Value::String(id.manager.clone()));
                e.insert("operation".into(), Value::String(op.as_str().into()));
                e.insert("apiVersion".into(), Value::String(vs.api_version.clone()));
                if let Some(t) = self.times.get(id) {
                    e.insert("time".into(), Value::String(t.clone()));
                }
                e.insert("fieldsType".into(), Value::String("FieldsV1".into()));
                e.insert("fieldsV1".into(), vs.set.to_fields_v1());
                if !id.subresource.is_empty() {
                    e.insert("subresource".into(), Value::String(id.subresource.clone()));
                }
                Value::Object(e)
            })
            .collect();
        Some(Value::Array(list))
    }

    /// kube's `capManagersManager`: while there are more than `max` Update entries, the oldest
    /// are merged, per apiVersion, into an `ancient-changes` entry.
    fn cap_update_managers(&mut self, max: usize) {
        let mut updaters: Vec<ManagerId> =
            self.fields.iter().filter(|(_, vs)| !vs.applied).map(|(id, _)| id.clone()).collect();
        if updaters.len() <= max {
            return;
        }
        let secs =
            |m: &Managed, id: &ManagerId| m.times.get(id).and_then(|t| kuorum_api::time::unix_seconds(t)).unwrap_or(0);
        updaters.sort_by(|a, b| secs(self, a).cmp(&secs(self, b)).then_with(|| a.identifier().cmp(&b.identifier())));
        let mut first_of_version: BTreeMap<String, ManagerId> = BTreeMap::new();
        let mut length = updaters.len();
        for id in updaters {
            if length <= max {
                break;
            }
            let Some(vs) = self.fields.get(&id).cloned() else { continue };
            let time = self.times.get(&id).cloned();
            let bucket = ManagerId::new(ANCIENT_CHANGES, Operation::Update, &vs.api_version, "");
            match first_of_version.get(&vs.api_version) {
                Some(first) => {
                    if !self.fields.contains_key(&bucket) {
                        if let Some(s) = self.fields.remove(first) {
                            self.fields.insert(bucket.clone(), s);
                        }
                    }
                    let union = match self.fields.get(&bucket) {
                        Some(b) => vs.set.union(&b.set),
                        None => vs.set.clone(),
                    };
                    self.fields.insert(bucket.clone(), VersionedSet { set: union, ..vs });
                    self.fields.remove(&id);
                    length -= 1;
                    match time {
                        Some(t) => self.times.insert(bucket, t),
                        None => self.times.remove(&bucket),
                    };
                }
                None => {
                    first_of_version.insert(vs.api_version.clone(), id);
                }
            }
        }
    }
}

/// Fields no entry ever keeps (kube's `stripMetaManager`).
fn strip_set() -> &'static Set {
    static STRIP: std::sync::OnceLock<Set> = std::sync::OnceLock::new();
    STRIP.get_or_init(|| {
        let mut s = Set::new();
        let f = |n: &str| PathElement::Field(n.to_string());
        s.insert(&[f("apiVersion")]);
        s.insert(&[f("kind")]);
        s.insert(&[f("metadata")]);
        for n in [
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        ] {
            s.insert(&[f("metadata"), f(n)]);
        }
        s
    })
}

fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

fn without_managed_fields(obj: &Value) -> Value {
    let mut v = obj.clone();
    set_managed_fields(&mut v, None);
    v
}

/// Sets metadata.managedFields, or removes it for None (kube omits an empty list).
fn set_managed_fields(obj: &mut Value, mf: Option<Value>) {
    let Some(o) = obj.as_object_mut() else { return };
    match mf {
        Some(mf) => {
            let meta = o.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("managedFields".to_string(), mf);
            }
        }
        None => {
            if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
        }
    }
}

/// kube's `isResetManagedFields`: an empty list, or a list of one empty entry.
fn is_reset(mf: Option<&Value>) -> bool {
    match mf {
        Some(Value::Array(a)) if a.is_empty() => true,
        // A zero ManagedFieldsEntry: no field set (`fieldsV1: {}` is set).
        Some(Value::Array(a)) if a.len() == 1 => {
            a[0].as_object().is_some_and(|e| e.values().all(|v| v.is_null() || v.as_str() == Some("")))
        }
        _ => false,
    }
}

enum UpdateFailure {
    Type(Vec<TypeError>),
    Conflicts(BTreeMap<ManagerId, (Set, String)>),
}

/// structured-merge-diff's `Updater.update`: compares `old` with `new`; the fields each other
/// manager owns among the added or modified ones are conflicts (an error unless `force`, which
/// takes them away); removed fields leave every other manager; empty entries go.
fn updater_update(
    ctx: &Ctx<'_>,
    old: &Value,
    new: &Value,
    managers: &mut BTreeMap<ManagerId, VersionedSet>,
    workflow: &ManagerId,
    force: bool,
) -> Result<Comparison, UpdateFailure> {
    let cmp = typed::compare(ctx.ty, old, new).map_err(UpdateFailure::Type)?.exclude(&ctx.ignored);
    // What the others may conflict on; a create (or a first update) has no others.
    let changed = if managers.keys().any(|id| id != workflow) { cmp.modified.union(&cmp.added) } else { Set::new() };
    let mut conflicts = BTreeMap::new();
    for (id, vs) in managers.iter() {
        if id == workflow {
            continue;
        }
        let c = vs.set.intersection(&changed);
        if !c.is_empty() {
            conflicts.insert(id.clone(), (c, vs.api_version.clone()));
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(UpdateFailure::Conflicts(conflicts));
    }
    for (id, vs) in managers.iter_mut() {
        if id == workflow {
            continue;
        }
        if let Some((c, _)) = conflicts.get(id) {
            vs.set = std::mem::take(&mut vs.set).into_difference(c);
        }
        if !cmp.removed.is_empty() {
            vs.set = std::mem::take(&mut vs.set).into_difference(&cmp.removed);
        }
    }
    managers.retain(|_, vs| !vs.set.is_empty());
    Ok(cmp)
}

/// The update path below kube's capManagers: structured-merge-diff's `Updater.Update` under the
/// `current-operation` placeholder, stripMeta, then `managedFieldsUpdater` folding the result
/// into the manager's Update entry and stamping its time (only when it took something).
fn update_core(
    ctx: &Ctx<'_>,
    live: &Value,
    new: &Value,
    managed: &mut Managed,
    manager: &str,
) -> Result<(), Vec<TypeError>> {
    let cur = ManagerId::current_operation();
    let cmp = match updater_update(ctx, live, new, &mut managed.fields, &cur, true) {
        Ok(c) => c,
        Err(UpdateFailure::Type(e)) => return Err(e),
        Err(UpdateFailure::Conflicts(_)) => unreachable!("forced updates have no conflicts"),
    };
    let set = cmp.modified.into_union(cmp.added).into_recursive_difference(&ctx.ignored).into_difference(strip_set());
    managed.fields.remove(&cur);
    if set.is_empty() {
        return Ok(());
    }
    let id = ManagerId::new(manager, Operation::Update, &ctx.version, &ctx.subresource);
    let set = match managed.fields.get(&id) {
        Some(prev) => set.into_union(prev.set.clone()),
        None => set,
    };
    managed.fields.insert(id.clone(), VersionedSet { set, api_version: ctx.version.clone(), applied: false });
    managed.times.insert(id, ctx.time.clone());
    Ok(())
}

/// structured-merge-diff's `prune`: removes from `merged` what the applier applied last time
/// (`last`), does not apply now, and nobody else owns; fields owned by no one that were not in
/// the last applied set stay.
fn prune(ctx: &Ctx<'_>, merged: Value, managers: &BTreeMap<ManagerId, VersionedSet>, last: Option<Set>) -> Value {
    let Some(last) = last.filter(|s| !s.is_empty()) else { return merged };
    let ensure = |s: &Set| typed::ensure_named_fields_are_members(ctx.ty, s);
    let fields = |v: &Value| ensure(&typed::field_set(ctx.ty, v));
    let last = ensure(&last);
    let merged_fields = fields(&merged);
    let pruned = typed::remove_items(ctx.ty, &merged, &last);
    // Add back what anyone (the applier's new set included) owns.
    let owned = ensure(&managers.values().fold(Set::new(), |acc, vs| acc.union(&vs.set)));
    let keep = fields(&pruned).union(&owned);
    let pruned = typed::remove_items(ctx.ty, &merged, &merged_fields.difference(&keep));
    // Only remove what was in the last applied set (not, e.g., fields nobody owns).
    let remove = merged_fields.difference(&fields(&pruned)).intersection(&last);
    typed::remove_items(ctx.ty, &merged, &remove)
}

/// The conflicts, by owner in identifier order, each owner's fields in set order.
fn conflicts_list(conflicts: BTreeMap<ManagerId, (Set, String)>) -> Vec<Conflict> {
    let mut owners: Vec<(String, ManagerId, Set, String)> =
        conflicts.into_iter().map(|(id, (set, v))| (id.identifier(), id, set, v)).collect();
    owners.sort_by(|a, b| a.0.cmp(&b.0));
    owners
        .into_iter()
        .flat_map(|(_, id, set, api_version)| {
            set.paths()
                .into_iter()
                .map(|p| Conflict {
                    manager: id.manager.clone(),
                    api_version: api_version.clone(),
                    field: path_string(&p),
                    operation: id.operation,
                    subresource: id.subresource.clone(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_lists() {
        use serde_json::json;
        assert!(is_reset(Some(&json!([]))));
        assert!(is_reset(Some(&json!([{}]))));
        assert!(is_reset(Some(&json!([{"manager": "", "time": null}]))));
        assert!(!is_reset(Some(&json!([{"manager": "m"}]))));
        assert!(!is_reset(Some(&json!([{"fieldsV1": {}}]))));
        assert!(!is_reset(None));
        assert!(!is_reset(Some(&json!(null))));
    }
}
