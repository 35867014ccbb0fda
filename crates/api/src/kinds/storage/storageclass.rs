//! StorageClass (storage.k8s.io/v1): cluster-scoped, no spec (its fields are top-level);
//! `reclaimPolicy` defaults to Delete and `volumeBindingMode` to Immediate; the
//! provisioner is required; provisioner, parameters, reclaim policy and binding mode are
//! fixed once created; printed with a ` (default)` mark on the default class.

use serde_json::{json, Value};

use super::checks::{annotated_default, parameters, provisioner, same_parameters};
use crate::kinds::common::{immutable, one_of};
use crate::kinds::printing::*;
use crate::kinds::{set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "storage.k8s.io",
    version: "v1",
    kind: "StorageClass",
    plural: "storageclasses",
    singular: "storageclass",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &["sc"],
    categories: &[],
    subresources: &[],
    list_kind: "StorageClassList",
    tracks_generation: false,
};

const STORAGE_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col("Provisioner", "string", "provisioner indicates the type of the provisioner."),
    col(
        "ReclaimPolicy",
        "string",
        "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage \
         class. Defaults to Delete.",
    ),
    col(
        "VolumeBindingMode",
        "string",
        "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, \
         VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling \
         feature.",
    ),
    col("AllowVolumeExpansion", "string", "allowVolumeExpansion shows whether the storage class allow volume expand."),
    AGE,
];

/// The annotations that make a class the cluster's default.
const DEFAULT_CLASS: &[&str] =
    &["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"];

pub struct StorageClass;

impl Strategy for StorageClass {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        set_default(obj, "reclaimPolicy", json!("Delete"));
        set_default(obj, "volumeBindingMode", json!("Immediate"));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        provisioner(obj, "provisioner", &mut errs);
        parameters(obj, true, &mut errs);
        if obj.get("reclaimPolicy").and_then(Value::as_str) != Some("") {
            one_of(obj, "reclaimPolicy", &["Delete", "Retain"], &mut errs);
        }
        match obj.get("volumeBindingMode").and_then(Value::as_str) {
            None => errs.push(FieldError::required("volumeBindingMode", "")),
            Some(_) => one_of(obj, "volumeBindingMode", &["Immediate", "WaitForFirstConsumer"], &mut errs),
        }
        let Some(old) = old else { return errs };
        let changed = |f: &str| obj.get(f) != old.get(f);
        if !same_parameters(obj, old) {
            errs.push(FieldError::forbidden("parameters", "updates to parameters are forbidden."));
        }
        if changed("provisioner") {
            errs.push(FieldError::forbidden("provisioner", "updates to provisioner are forbidden."));
        }
        if changed("reclaimPolicy") {
            errs.push(FieldError::forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."));
        }
        immutable(obj, Some(old), "volumeBindingMode", &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        STORAGE_CLASS_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let mut shown_name = name(obj).to_string();
        if annotated_default(obj, DEFAULT_CLASS) {
            shown_name.push_str(" (default)");
        }
        Row::plain(vec![
            shown_name.into(),
            str_at(obj, "/provisioner").into(),
            non_empty(str_at(obj, "/reclaimPolicy")).unwrap_or("Delete").into(),
            non_empty(str_at(obj, "/volumeBindingMode")).unwrap_or("Immediate").into(),
            obj.get("allowVolumeExpansion").and_then(Value::as_bool).unwrap_or(false).into(),
            age(obj, now).into(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn policies_default_and_the_provisioner_is_required() {
        let mut sc = obj(json!({"metadata": {"name": "fast"}}));
        StorageClass.defaults(&mut sc);
        assert_eq!((&sc["reclaimPolicy"], &sc["volumeBindingMode"]), (&json!("Delete"), &json!("Immediate")));
        assert_eq!(shown(&StorageClass.validate(&sc, None)), ["provisioner: Required value"]);
        let sc =
            obj(json!({"provisioner": "ebs.csi.aws.com", "reclaimPolicy": "Recycle", "volumeBindingMode": "Later"}));
        assert_eq!(
            shown(&StorageClass.validate(&sc, None)),
            [
                r#"reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain""#,
                r#"volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer""#,
            ]
        );
    }

    #[test]
    fn provisioner_and_parameters_are_fixed() {
        let old = obj(json!({"provisioner": "a.io/x", "parameters": {"type": "gp3"},
            "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}));
        let new = obj(json!({"provisioner": "b.io/x", "parameters": {"type": "io2"},
            "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true}));
        assert_eq!(
            shown(&StorageClass.validate(&new, Some(&old))),
            [
                "parameters: Forbidden: updates to parameters are forbidden.",
                "provisioner: Forbidden: updates to provisioner are forbidden.",
                "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
                r#"volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable"#,
            ]
        );
        let labels_only = obj(json!({"provisioner": "a.io/x", "parameters": {"type": "gp3"},
            "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate", "allowVolumeExpansion": true}));
        assert!(StorageClass.validate(&labels_only, Some(&old)).is_empty());
    }

    #[test]
    fn the_default_class_is_marked() {
        let sc = json!({"metadata": {"name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "x.io/y"});
        let row = StorageClass.row(&sc, 0);
        assert_eq!(
            &row.cells[..5],
            [json!("standard (default)"), json!("x.io/y"), json!("Delete"), json!("Immediate"), json!(false)]
        );
    }
}
