//! CSIStorageCapacity (storage.k8s.io/v1): namespaced, no spec; names the storage class
//! it reports for (a class name) and the nodes it applies to (a label selector), both
//! fixed once created; a capacity that is not negative; printed with class and capacity
//! (kube prints no age).

use serde_json::Value;

use super::checks::shown;
use crate::kinds::common::label_selector;
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::{is_dns1123_subdomain, BadValue, FieldError, NON_NEGATIVE};

pub static DEF: ResourceDef = ResourceDef {
    group: "storage.k8s.io",
    version: "v1",
    kind: "CSIStorageCapacity",
    plural: "csistoragecapacities",
    singular: "csistoragecapacity",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[],
    list_kind: "CSIStorageCapacityList",
    tracks_generation: false,
};

const CSI_STORAGE_CAPACITY_COLUMNS: &[Column] = &[
    NAME,
    col(
        "StorageClassName",
        "string",
        "storageClassName represents the name of the StorageClass that the reported capacity applies to. It must \
         meet the same requirements as the name of a StorageClass object (non-empty, DNS subdomain). If that \
         object no longer exists, the CSIStorageCapacity object is obsolete and should be removed by its \
         creator. This field is immutable.",
    ),
    col(
        "Capacity",
        "string",
        "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest \
         with topology and parameters that match the previous fields.\n\nThe semantic is currently (CSI spec \
         1.2) defined as: The available capacity, in bytes, of the storage that can be used to provision \
         volumes. If not set, that information is currently unavailable.",
    ),
];

pub struct CSIStorageCapacity;

impl Strategy for CSIStorageCapacity {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(sel) = obj.get("nodeTopology").filter(|s| s.is_object()) {
            label_selector(sel, "nodeTopology", &mut errs);
        }
        let class = obj.get("storageClassName").and_then(Value::as_str).unwrap_or("");
        for msg in is_dns1123_subdomain(class) {
            errs.push(FieldError::invalid("storageClassName", class, msg));
        }
        if let Some(capacity) = obj.get("capacity") {
            if is_negative_quantity(capacity) {
                errs.push(FieldError::invalid_value("capacity", BadValue::of_json(capacity), NON_NEGATIVE));
            }
        }
        let Some(old) = old else { return errs };
        let topology = |o: &Object| o.get("nodeTopology").filter(|t| !t.is_null()).cloned();
        if topology(obj) != topology(old) {
            errs.push(FieldError::invalid_value("nodeTopology", shown(obj.get("nodeTopology")), "field is immutable"));
        }
        if obj.get("storageClassName") != old.get("storageClassName") {
            errs.push(FieldError::invalid("storageClassName", class, "field is immutable"));
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        CSI_STORAGE_CAPACITY_COLUMNS
    }

    fn row(&self, obj: &Value, _now: i64) -> Row {
        let capacity = match obj.get("capacity") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => "<unset>".to_string(),
        };
        Row::plain(vec![name(obj).into(), str_at(obj, "/storageClassName").into(), capacity.into()])
    }
}

/// A quantity below zero: a number, or a string with a leading `-` and a non-zero digit.
fn is_negative_quantity(q: &Value) -> bool {
    match q {
        Value::Number(n) => n.as_f64().is_some_and(|f| f < 0.0),
        Value::String(s) => {
            let mantissa = s.trim().split(|c: char| c.is_ascii_alphabetic()).next().unwrap_or("");
            mantissa.starts_with('-') && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
        }
        _ => false,
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
    fn class_and_capacity() {
        let c = obj(json!({"storageClassName": "fast", "capacity": "-1Gi",
            "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}}));
        assert_eq!(
            shown(&CSIStorageCapacity.validate(&c, None)),
            [r#"capacity: Invalid value: "-1Gi": must be greater than or equal to 0"#]
        );
        let old = obj(json!({"storageClassName": "slow"}));
        let c = obj(json!({"storageClassName": "fast", "capacity": "10Gi"}));
        assert_eq!(
            shown(&CSIStorageCapacity.validate(&c, Some(&old))),
            [r#"storageClassName: Invalid value: "fast": field is immutable"#]
        );
        let row = CSIStorageCapacity.row(&json!({"metadata": {"name": "csisc-1"}, "storageClassName": "fast"}), 0);
        assert_eq!(row.cells, [json!("csisc-1"), json!("fast"), json!("<unset>")]);
    }
}
