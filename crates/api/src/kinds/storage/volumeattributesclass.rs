//! VolumeAttributesClass (storage.k8s.io/v1): cluster-scoped, no spec; a driver name and
//! at least one parameter, both fixed once created; printed with its driver and a
//! ` (default)` mark on the default class.

use serde_json::Value;

use super::checks::{annotated_default, parameters, provisioner, same_parameters};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "storage.k8s.io",
    version: "v1",
    kind: "VolumeAttributesClass",
    plural: "volumeattributesclasses",
    singular: "volumeattributesclass",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &["vac"],
    categories: &[],
    subresources: &[],
    list_kind: "VolumeAttributesClassList",
    tracks_generation: false,
};

const VOLUME_ATTRIBUTES_CLASS_COLUMNS: &[Column] =
    &[NAME, col("DriverName", "string", "driverName is the name of the CSI driver This field is immutable."), AGE];

/// The annotation that makes a class its driver's default.
const DEFAULT_CLASS: &[&str] = &["volumeattributesclass.alpha.kubernetes.io/is-default-class"];

pub struct VolumeAttributesClass;

impl Strategy for VolumeAttributesClass {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(old) = old {
            if obj.get("driverName") != old.get("driverName") {
                errs.push(FieldError::forbidden("driverName", "updates to driverName are forbidden."));
            }
            if !same_parameters(obj, old) {
                errs.push(FieldError::forbidden("parameters", "updates to parameters are forbidden."));
            }
        }
        provisioner(obj, "driverName", &mut errs);
        parameters(obj, false, &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        VOLUME_ATTRIBUTES_CLASS_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let mut shown_name = name(obj).to_string();
        if annotated_default(obj, DEFAULT_CLASS) {
            shown_name.push_str(" (default)");
        }
        Row::plain(vec![shown_name.into(), str_at(obj, "/driverName").into(), age(obj, now).into()])
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn parameters_are_required_and_fixed() {
        let vac = obj(json!({"driverName": "pd.csi.storage.gke.io"}));
        assert_eq!(
            shown(&VolumeAttributesClass.validate(&vac, None)),
            ["parameters: Required value: must contain at least one key/value pair"]
        );
        let old = obj(json!({"driverName": "a.io", "parameters": {"iops": "3000"}}));
        let new = obj(json!({"driverName": "a.io", "parameters": {"iops": "6000"}}));
        assert_eq!(
            shown(&VolumeAttributesClass.validate(&new, Some(&old))),
            ["parameters: Forbidden: updates to parameters are forbidden."]
        );
    }
}
