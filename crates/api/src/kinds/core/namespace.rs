//! Namespace (core/v1): cluster-scoped, named by a DNS-1123 label, no deletecollection;
//! created Active with the `kubernetes` finalizer and the `kubernetes.io/metadata.name`
//! label; kept Active by updates (the namespace lifecycle, not clients, ends it);
//! `default`, `kube-system` and `kube-public` are never deleted.

use serde_json::{json, Value};

use crate::kinds::printing::*;
use crate::kinds::{with_part_of, Finalizing, Object, Strategy};
use crate::registry::{core, ResourceDef, Scope, SubresourceDef, STATUS};
use crate::validation::NameRule;
use crate::ApiError;

/// Namespaces cannot be deleted as a collection.
const VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];

pub static DEF: ResourceDef = ResourceDef {
    verbs: VERBS,
    ..core("Namespace", "namespaces", "namespace", Scope::Cluster, &["ns"], &[], &[FINALIZE, STATUS], "NamespaceList")
};

/// `PUT namespaces/<name>/finalize`: the namespace lifecycle's write of `spec.finalizers`.
const FINALIZE: SubresourceDef = SubresourceDef { name: "finalize", response: None, verbs: &["update"] };

/// Namespaces kube-apiserver never lets go.
pub const UNDELETABLE: &[&str] = &["default", "kube-system", "kube-public"];

const NAMESPACE_COLUMNS: &[Column] = &[NAME, col("Status", "string", "The status of the namespace"), AGE];

pub struct Namespace;

impl Strategy for Namespace {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Dns1123Label
    }

    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).map(str::to_string);
        if let Some(name) = name {
            let meta = obj.entry("metadata").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                let labels = meta.entry("labels").or_insert_with(|| json!({}));
                if !labels.is_object() {
                    *labels = json!({});
                }
                if let Value::Object(l) = labels {
                    l.insert("kubernetes.io/metadata.name".into(), Value::from(name));
                }
            }
        }
        let spec = obj.entry("spec").or_insert_with(|| json!({}));
        if !spec.is_object() {
            *spec = json!({});
        }
        if let Value::Object(spec) = spec {
            let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
            if !finalizers.is_array() {
                *finalizers = json!([]);
            }
            if let Value::Array(f) = finalizers {
                if !f.iter().any(|v| v == "kubernetes") {
                    f.push(Value::from("kubernetes"));
                }
            }
        }
        obj.insert("status".into(), json!({"phase": "Active"}));
    }

    fn prepare_for_update(&self, obj: &mut Object) {
        if !obj.get("status").is_some_and(Value::is_object) {
            obj.insert("status".into(), json!({"phase": "Active"}));
        }
        if !obj.get("spec").is_some_and(Value::is_object) {
            obj.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
        }
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["status.phase"]
    }

    fn columns(&self) -> &'static [Column] {
        NAMESPACE_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), str_at(obj, "/status/phase").into(), age(obj, now).into()])
    }

    fn write_subresource(&self, name: &str, old: &Object, new: &Object) -> Option<Object> {
        (name == "finalize").then(|| with_part_of(old, new, &["spec", "finalizers"]))
    }

    fn check_delete(&self, name: &str) -> Result<(), ApiError> {
        if UNDELETABLE.contains(&name) {
            return Err(ApiError::namespace_undeletable(name));
        }
        Ok(())
    }

    /// The lifecycle's `kubernetes` finalizer holds a deleted namespace (Terminating)
    /// until the namespace controller has emptied it.
    fn finalizing(&self) -> Finalizing {
        Finalizing {
            held_by: vec!["/spec/finalizers".into()],
            on_mark: vec![("/status/phase".into(), "Terminating".into())],
        }
    }
}
