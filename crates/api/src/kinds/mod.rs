//! Owns what is special about each built-in kind, one file per kind (or per group of
//! kinds that share everything), as kube-apiserver's `pkg/registry/<group>/<kind>/
//! strategy.go` and its printers hold it: the registry entry, the rule for names, the
//! defaults, what the server fills in on create and update, validation, the fields it can
//! be selected by, its Table columns and cells, where its scale lives, and what may not be
//! deleted.
//!
//! The verb handlers reach a kind only through [`Strategy`], found by (group, kind) with
//! [`builtin`]; they never match on kind names. A custom resource has no strategy here:
//! its CRD says what is special about it, so a custom kind named `Pod` or `Namespace`
//! inherits nothing from the built-in one.
//!
//! Adding a kind: a file under its group's folder with a `ResourceDef` and a `Strategy`
//! (every method has the generic default), and one line in that folder's `KINDS` (its
//! place there is its place in discovery: by version, then plural). Its OpenAPI schema comes from
//! `scripts/gen-schemas.py`'s roots, its protobuf form from its group's `generated.proto`.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::registry::ResourceDef;
use crate::validation::{FieldError, NameRule};
use crate::ApiError;

pub mod allocation;
pub mod common;
pub mod converted;
pub mod printing;

mod admissionregistration;
mod apiextensions;
mod apiregistration;
mod apps;
mod authn;
mod autoscaling;
mod batch;
mod certificates;
mod coordination;
mod core;
mod discovery;
mod events;
mod flowcontrol;
mod networking;
mod node;
mod policy;
mod rbac;
mod resource;
mod scheduling;
mod storage;
mod storagemigration;

pub use printing::{Column, Row};

/// A JSON object, as the verbs hold one.
pub type Object = Map<String, Value>;

/// What deleting an object of a kind means beyond `metadata.finalizers`, as the store
/// applies it: carried by the commands, so that the replicated apply decides it the same
/// way on every node without knowing kinds (a namespace's lifecycle, for one).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Finalizing {
    /// JSON pointers of the lists that hold a deletion back while not empty, beside
    /// `metadata.finalizers` (a namespace's `/spec/finalizers`).
    pub held_by: Vec<String>,
    /// What marking an object for deletion also sets: (JSON pointer, text) (a
    /// namespace's `/status/phase`, `Terminating`).
    pub on_mark: Vec<(String, String)>,
}

/// Where a kind with a `scale` subresource keeps what the `autoscaling/v1` Scale shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleOf {
    /// Path of the desired replicas, as a CRD's `specReplicasPath` (`.spec.replicas`).
    pub spec_replicas: &'static str,
    /// What an absent desired count reads as (kube's default for the kind).
    pub default_replicas: i64,
    /// Path of the observed replicas (`.status.replicas`).
    pub status_replicas: &'static str,
    /// Path of the pod selector (`.spec.selector`).
    pub selector: &'static str,
    /// Whether the selector is a plain label map (ReplicationController) rather than a
    /// `LabelSelector`.
    pub selector_is_map: bool,
}

/// What is special about one built-in kind. Every method but [`Strategy::def`] has the
/// behaviour of a kind with nothing special about it.
pub trait Strategy: Sync + 'static {
    /// The kind's registry entry: names, scope, verbs, subresources, categories.
    fn def(&self) -> &'static ResourceDef;

    /// The rule `metadata.name` (and a `generateName` prefix) must follow.
    fn name_rule(&self) -> NameRule {
        NameRule::Dns1123Subdomain
    }

    /// Fills in kube's defaults (its `SetDefaults_*`) where a field is absent; runs on
    /// every create, update and patch. Nothing a client set changes.
    fn defaults(&self, _obj: &mut Object) {}

    /// What the server sets on create whatever the client sent (kube's
    /// `PrepareForCreate`): a new object's status, a namespace's finalizer. `now` is the
    /// create's timestamp, as `metadata.creationTimestamp` has it.
    fn prepare_for_create(&self, _obj: &mut Object, _now: &str) {}

    /// What the server keeps on every update of the object itself (kube's
    /// `PrepareForUpdate`), before the status/spec split.
    fn prepare_for_update(&self, _obj: &mut Object) {}

    /// The kind's validation of `obj` (replacing `old`, none on create), beyond what
    /// every object gets (metadata, names): kube's `Validate`/`ValidateUpdate`.
    fn validate(&self, _obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        Vec::new()
    }

    /// The fields besides `metadata.name`/`metadata.namespace` a field selector may
    /// name, each read at its dotted path.
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[]
    }

    /// The columns of the kind's Tables (every column, `-o wide` ones included).
    fn columns(&self) -> &'static [Column] {
        printing::DEFAULT_COLUMNS
    }

    /// One object's Table row, ages measured at `now` (Unix seconds).
    fn row(&self, obj: &Value, _now: i64) -> Row {
        printing::default_row(obj)
    }

    /// Where the kind's `scale` subresource reads and writes, if it has one.
    fn scale(&self) -> Option<ScaleOf> {
        None
    }

    /// A write to the subresource `name` (other than `status` and `scale`) of an object
    /// stored as `old`: the object to store, which takes from `new` only the part the
    /// subresource writes (a namespace's finalizers, a pod's ephemeral containers, a CSR's
    /// conditions). `None` when the kind has no such subresource.
    fn write_subresource(&self, _name: &str, _old: &Object, _new: &Object) -> Option<Object> {
        None
    }

    /// Refuses deleting the object named `name` (the namespaces a cluster cannot lose).
    fn check_delete(&self, _name: &str) -> Result<(), ApiError> {
        Ok(())
    }

    /// What holds a deletion of the kind's objects back beside `metadata.finalizers`, and
    /// what marking one for deletion sets; the proposer puts it in the update and delete
    /// commands, whose apply knows no kinds.
    fn finalizing(&self) -> Finalizing {
        Finalizing::default()
    }

    /// kube's `CheckGracefulDelete`: how many seconds a delete of `obj` waits before the
    /// object goes, given what the request asked for (`requested`); `None` for a kind
    /// whose objects go at once. Above 0, a delete only marks the object
    /// (`deletionTimestamp` that far ahead) and a later delete with 0 removes it.
    fn grace_period(&self, _obj: &Object, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// What the kind's objects hold from the cluster's pools (a Service's cluster IP and
    /// node ports), which the verbs claim before writing and free after deleting.
    fn allocating(&self) -> Option<&dyn allocation::Allocating> {
        None
    }

    /// The kind objects of this version are stored as, when it is another one: kube stores
    /// a resource once, at one version, and serves every other version by converting
    /// (autoscaling/v1 HorizontalPodAutoscalers are stored as autoscaling/v2 ones,
    /// events.k8s.io Events as core Events). Such a version validates, prints and selects
    /// through the stored kind, on the stored form, as kube does on its internal one.
    fn stored_as(&self) -> Option<&'static dyn Strategy> {
        None
    }

    /// Converts an object of this version to the stored kind's form (type meta aside).
    /// Whatever the stored form has no field for is kept where [`Strategy::from_stored`]
    /// finds it again, so that a write through this version loses nothing.
    fn to_stored(&self, _obj: &mut Object) {}

    /// Converts a stored object to this version (type meta aside).
    fn from_stored(&self, _obj: &mut Object) {}

    /// Where, in the stored object, the selectable field `label` is read: `None` for its
    /// own dotted path. A path may name alternatives, `a.b|c`: the first that is not empty.
    fn field_path(&self, _label: &str) -> Option<&'static str> {
        None
    }
}

/// Every group's kinds, groups in kube-apiserver's discovery order. Each group's folder
/// lists its kinds (`KINDS`), by version, then plural.
static GROUPS: &[&[&dyn Strategy]] = &[
    core::KINDS,
    apiregistration::KINDS,
    apps::KINDS,
    events::KINDS,
    authn::KINDS,
    autoscaling::KINDS,
    batch::KINDS,
    certificates::KINDS,
    networking::KINDS,
    policy::KINDS,
    rbac::KINDS,
    storage::KINDS,
    admissionregistration::KINDS,
    apiextensions::KINDS,
    scheduling::KINDS,
    coordination::KINDS,
    node::KINDS,
    discovery::KINDS,
    flowcontrol::KINDS,
    resource::KINDS,
    storagemigration::KINDS,
];

/// Every built-in kind, in discovery order.
pub fn all() -> &'static [&'static dyn Strategy] {
    static ALL: OnceLock<Vec<&'static dyn Strategy>> = OnceLock::new();
    ALL.get_or_init(|| GROUPS.iter().flat_map(|g| g.iter().copied()).collect())
}

/// The strategy of the built-in kind `kind` of `group`, if there is one: of the kind it
/// is stored as, when it is converted.
pub fn builtin(group: &str, kind: &str) -> Option<&'static dyn Strategy> {
    let s = all().iter().copied().find(|s| s.def().group == group && s.def().kind == kind)?;
    Some(s.stored_as().unwrap_or(s))
}

/// The registry entry objects served as `def` are stored under: the stored kind's when
/// `def`'s version is converted ([`Strategy::stored_as`]), else `def` itself.
pub fn storage_def(def: &'static ResourceDef) -> &'static ResourceDef {
    of(def).and_then(|s| s.stored_as()).map_or(def, |s| s.def())
}

/// The strategy of objects served as `def`: a built-in resource's, or none for a custom
/// resource (whose definition is never one of the built-in ones: a CRD cannot take a
/// group/version kuorum serves built in). Called per Table row, so the registry's own
/// `&'static` entries are found by address first.
pub fn of(def: &ResourceDef) -> Option<&'static dyn Strategy> {
    let all = all();
    all.iter().copied().find(|s| std::ptr::eq(s.def(), def)).or_else(|| all.iter().copied().find(|s| s.def() == def))
}

/// Sets `key` to `value` when absent (or null): a default never changes what a client set.
pub(crate) fn set_default(m: &mut Object, key: &str, value: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), value);
    }
}

/// The object at `key`, if it is one.
pub(crate) fn child<'a>(m: &'a mut Object, key: &str) -> Option<&'a mut Object> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// `old` with the value at `path` (an object's keys, outermost first) taken from `new`
/// (removed when `new` has none): what a subresource that writes one part stores.
pub(crate) fn with_part_of(old: &Object, new: &Object, path: &[&str]) -> Object {
    let mut out = old.clone();
    let Some((last, parents)) = path.split_last() else { return out };
    let mut from = Some(new);
    for p in parents {
        from = from.and_then(|m| m.get(*p)).and_then(Value::as_object);
    }
    let value = from.and_then(|m| m.get(*last)).cloned();
    let mut to = &mut out;
    for p in parents {
        let entry = to.entry(p.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        to = entry.as_object_mut().expect("made an object above");
    }
    match value {
        Some(v) => to.insert(last.to_string(), v),
        None => to.remove(*last),
    };
    out
}

/// The objects of the array at `key`.
pub(crate) fn each<'a>(m: &'a mut Object, key: &str) -> impl Iterator<Item = &'a mut Object> {
    m.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_found_by_group_and_kind_only() {
        for s in all() {
            let d = s.def();
            // A converted version is found as the kind it is stored as.
            let stored = s.stored_as().map_or(d, |s| s.def());
            assert!(std::ptr::eq(builtin(d.group, d.kind).unwrap().def(), stored), "{}", d.kind);
            assert!(std::ptr::eq(of(d).unwrap().def(), d));
            assert!(std::ptr::eq(storage_def(d), stored));
        }
        // A custom kind named like a built-in one gets nothing from it.
        assert!(builtin("example.com", "Pod").is_none());
        let custom = ResourceDef { group: "example.com", ..*builtin("", "Pod").unwrap().def() };
        assert!(of(&custom).is_none());
    }

    #[test]
    fn columns_and_rows_agree() {
        let obj = serde_json::json!({"metadata": {"name": "x", "creationTimestamp": "2020-01-01T00:00:00Z"}});
        for s in all() {
            assert_eq!(s.row(&obj, 1_600_000_000).cells.len(), s.columns().len(), "{}", s.def().kind);
        }
    }

    fn kind_of(kind: &str) -> &'static dyn Strategy {
        all().iter().copied().find(|s| s.def().kind == kind).unwrap()
    }

    #[test]
    fn name_rules_per_kind() {
        assert_eq!(kind_of("Namespace").name_rule(), NameRule::Dns1123Label);
        assert_eq!(kind_of("Service").name_rule(), NameRule::Dns1035Label);
        for k in ["ConfigMap", "Secret", "Pod", "Node", "Deployment", "Lease", "Event", "ServiceAccount"] {
            assert_eq!(kind_of(k).name_rule(), NameRule::Dns1123Subdomain);
        }
        for k in ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"] {
            assert_eq!(kind_of(k).name_rule(), NameRule::PathSegment);
        }
    }

    #[test]
    fn numeric_ranges_of_built_in_kinds() {
        use serde_json::json;
        let obj = |v: serde_json::Value| v.as_object().unwrap().clone();
        let shown =
            |kind: &str, v| kind_of(kind).validate(&obj(v), None).iter().map(|e| e.to_string()).collect::<Vec<_>>();
        assert!(shown(
            "Deployment",
            json!({"spec": {"replicas": 0, "template": {"spec": {"containers": [
            {"name": "c", "ports": [{"containerPort": 1}, {"containerPort": 65535, "hostPort": 0}]}]}}}})
        )
        .is_empty());
        assert_eq!(
            shown("Deployment", json!({"spec": {"replicas": -1, "revisionHistoryLimit": -2, "template": {"spec": {
                "initContainers": [{"ports": [{"containerPort": 0}]}],
                "containers": [{"ports": [{"containerPort": 80, "hostPort": 70000}]}]}}}})),
            [
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
                "spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
                "spec.template.spec.initContainers[0].ports[0].containerPort: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.template.spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ]
        );
        assert_eq!(
            shown("Pod", json!({"spec": {"containers": [{"ports": [{"containerPort": 65536}]}]}})),
            ["spec.containers[0].ports[0].containerPort: Invalid value: 65536: must be between 1 and 65535, inclusive"]
        );
        assert_eq!(
            shown(
                "Service",
                json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "targetPort": "http", "nodePort": 0}, {"port": 81, "targetPort": 0},
                {"port": 0, "targetPort": 70000, "nodePort": -1}]}})
            ),
            [
                "spec.ports[2].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[2].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.ports[2].nodePort: Invalid value: -1: must be between 1 and 65535, inclusive",
            ]
        );
        assert!(shown("ConfigMap", json!({"spec": {"replicas": -1}})).is_empty());
    }
}
