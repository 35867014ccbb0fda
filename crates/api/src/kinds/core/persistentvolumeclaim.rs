//! PersistentVolumeClaim (core/v1): a request for storage. Status subresource; created
//! `Pending` (status reset), `volumeMode` defaults to `Filesystem`; needs access modes and
//! a positive storage request; its spec is fixed once created but for binding it to a
//! volume and resizing a bound claim. Printed with its volume, capacity and class.

use serde_json::{json, Value};

use crate::kinds::common::label_selector;
use crate::kinds::core::persistentvolume::{access_modes, access_modes_cell, storage_class, VOLUME_MODES};
use crate::kinds::core::quantity::{amount, positive, resource_value};
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{core, ResourceDef, Scope, STATUS};
use crate::validation::{is_dns1123_subdomain, BadValue, FieldError};

pub static DEF: ResourceDef = core(
    "PersistentVolumeClaim",
    "persistentvolumeclaims",
    "persistentvolumeclaim",
    Scope::Namespaced,
    &["pvc"],
    &[],
    &[STATUS],
    "PersistentVolumeClaimList",
);

const PVC_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", "phase represents the current phase of PersistentVolumeClaim."),
    col("Volume", "string", "volumeName is the binding reference to the PersistentVolume backing this claim."),
    col("Capacity", "string", "capacity represents the actual resources of the underlying volume."),
    col(
        "Access Modes",
        "string",
        "accessModes contains the actual access modes the volume backing the PVC has. More info: \
         https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
    ),
    col("StorageClass", "string", "StorageClass of the pvc"),
    col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not \
         included in claim spec.",
    ),
];

pub struct PersistentVolumeClaim;

impl Strategy for PersistentVolumeClaim {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = child(obj, "spec") {
            set_default(spec, "volumeMode", json!("Filesystem"));
        }
        if let Some(status) = child(obj, "status") {
            set_default(status, "phase", json!("Pending"));
        }
    }

    /// A new claim has no status yet but its phase (`Pending`, the default of an empty one).
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({"phase": "Pending"}));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let empty = Object::new();
        let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
        claim_spec(spec, "spec", &mut errs);
        if let Some(old) = old {
            let old_spec = old.get("spec").and_then(Value::as_object).unwrap_or(&empty);
            claim_update(obj, spec, old, old_spec, &mut errs);
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        PVC_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(pvc_cells(obj, now))
    }
}

/// `ValidatePersistentVolumeClaimSpec` at `path`.
pub(crate) fn claim_spec(spec: &Object, path: &str, errs: &mut Vec<FieldError>) {
    let modes = spec.get("accessModes").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if modes.is_empty() {
        errs.push(FieldError::required(&format!("{path}.accessModes"), "at least 1 access mode is required"));
    }
    if let Some(sel) = spec.get("selector").filter(|s| s.is_object()) {
        label_selector(sel, &format!("{path}.selector"), errs);
    }
    access_modes(modes, &format!("{path}.accessModes"), errs);
    // kube names the request `resources[storage]`, not `resources.requests[storage]`.
    let storage_path = format!("{path}.resources[storage]");
    match spec.get("resources").and_then(|r| r.get("requests")).and_then(|r| r.get("storage")) {
        None => errs.push(FieldError::required(&storage_path, "")),
        Some(q) => {
            if !positive(q, &storage_path, errs) {
                resource_value("storage", q, &storage_path, errs);
            }
        }
    }
    for field in ["storageClassName", "volumeAttributesClassName"] {
        let class = spec.get(field).and_then(Value::as_str).unwrap_or("");
        for msg in if class.is_empty() { Vec::new() } else { is_dns1123_subdomain(class) } {
            errs.push(FieldError::invalid(&format!("{path}.{field}"), class, msg));
        }
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str) {
        if !VOLUME_MODES.contains(&mode) {
            errs.push(FieldError::not_supported(&format!("{path}.volumeMode"), mode, VOLUME_MODES));
        }
    }
    for field in ["dataSource", "dataSourceRef"] {
        if let Some(source) = spec.get(field).filter(|s| s.is_object()) {
            data_source(source, &format!("{path}.{field}"), errs);
        }
    }
}

/// `validateDataSource`: a named, typed object; without a group, another claim.
fn data_source(source: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for field in ["name", "kind"] {
        if str_at(source, &format!("/{field}")).is_empty() {
            errs.push(FieldError::required(&format!("{path}.{field}"), ""));
        }
    }
    let kind = str_at(source, "/kind");
    let group = str_at(source, "/apiGroup");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        errs.push(FieldError::invalid(
            path,
            kind,
            "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ));
    }
    for msg in if group.is_empty() { Vec::new() } else { is_dns1123_subdomain(group) } {
        errs.push(FieldError::invalid(&format!("{path}.apiGroup"), group, msg));
    }
}

/// `ValidatePersistentVolumeClaimUpdate`: the spec is fixed but for binding an unbound
/// claim to a volume, a bound claim's storage request and its attributes class; the
/// request never shrinks below what the volume has.
fn claim_update(obj: &Object, spec: &Object, old: &Object, old_spec: &Object, errs: &mut Vec<FieldError>) {
    let bound = obj.get("status").and_then(|s| s.get("phase")).and_then(Value::as_str) == Some("Bound");
    let comparable = |s: &Object, other: &Object| {
        let mut s = s.clone();
        s.remove("volumeAttributesClassName");
        if old_spec.get("volumeName").and_then(Value::as_str).unwrap_or("").is_empty() {
            s.remove("volumeName");
        }
        if bound {
            let other_storage = other.get("resources").and_then(|r| r.get("requests")).and_then(|r| r.get("storage"));
            if let Some(requests) =
                s.get_mut("resources").and_then(|r| r.get_mut("requests")).and_then(Value::as_object_mut)
            {
                match other_storage {
                    Some(v) => requests.insert("storage".into(), v.clone()),
                    None => requests.remove("storage"),
                };
            }
        }
        s
    };
    if comparable(spec, old_spec) != comparable(old_spec, old_spec) {
        errs.push(FieldError::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let storage =
        |s: &Object| s.get("resources").and_then(|r| r.get("requests")).and_then(|r| r.get("storage")).and_then(amount);
    let capacity = old.get("status").and_then(|s| s.get("capacity")).and_then(|c| c.get("storage")).and_then(amount);
    if let (Some(new), Some(before)) = (storage(spec), storage(old_spec)) {
        // Shrinking is allowed down to (not onto) what the volume already has.
        if new < before && new <= capacity.unwrap_or(0.0) {
            errs.push(FieldError::forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            ));
        }
    }
    if spec.get("volumeMode") != old_spec.get("volumeMode") {
        // kube reports the path without its `spec.` (`ValidateImmutableField(..., "volumeMode")`).
        errs.push(FieldError::invalid_value(
            "volumeMode",
            BadValue::of_json(spec.get("volumeMode").unwrap_or(&Value::Null)),
            "field is immutable",
        ));
    }
}

fn pvc_cells(pvc: &Value, now: i64) -> Vec<Value> {
    let deleting = pvc.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    let phase = if deleting { "Terminating" } else { str_at(pvc, "/status/phase") };
    let volume = str_at(pvc, "/spec/volumeName");
    // Capacity and access modes are the bound volume's: blank until there is one.
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        let capacity = pvc.pointer("/status/capacity/storage").map_or_else(|| "0".into(), quantity_text);
        (capacity, access_modes_cell(arr_at(pvc, "/status/accessModes")))
    };
    vec![
        name(pvc).into(),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        storage_class(pvc).into(),
        non_empty_or_unset(pvc.pointer("/spec/volumeAttributesClassName")).into(),
        age(pvc, now).into(),
        non_empty_or_unset(pvc.pointer("/spec/volumeMode")).into(),
    ]
}

/// A quantity as it is stored.
pub(crate) fn quantity_text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// An optional string field, `<unset>` when absent (a set empty string shows as is).
pub(crate) fn non_empty_or_unset(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).map_or_else(|| "<unset>".to_string(), str::to_string)
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
    fn a_claim_needs_modes_and_storage() {
        let pvc = obj(json!({"spec": {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "Sometimes"],
            "resources": {"requests": {"storage": "0"}}, "volumeMode": "Raw"}}));
        assert_eq!(
            shown(&PersistentVolumeClaim.validate(&pvc, None)),
            [
                "spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \
                 \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
                "spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
                "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
            ]
        );
        assert_eq!(
            shown(&PersistentVolumeClaim.validate(&obj(json!({"spec": {}})), None)),
            [
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value"
            ]
        );
    }

    #[test]
    fn created_pending_with_a_filesystem() {
        let mut pvc = obj(json!({"spec": {"accessModes": ["ReadWriteOnce"]}, "status": {"phase": "Bound"}}));
        PersistentVolumeClaim.defaults(&mut pvc);
        PersistentVolumeClaim.prepare_for_create(&mut pvc, "2024-01-01T00:00:00Z");
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pvc["status"], json!({"phase": "Pending"}));
    }

    #[test]
    fn the_spec_is_fixed_but_for_binding_and_resizing() {
        let old = obj(json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}));
        let mut bind = old.clone();
        bind["spec"]["volumeName"] = json!("pv-1");
        assert!(PersistentVolumeClaim.validate(&bind, Some(&old)).is_empty());
        let mut modes = old.clone();
        modes["spec"]["accessModes"] = json!(["ReadOnlyMany"]);
        assert_eq!(PersistentVolumeClaim.validate(&modes, Some(&old))[0].field, "spec");
        let mut resize = old.clone();
        resize["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
        assert_eq!(PersistentVolumeClaim.validate(&resize, Some(&old))[0].field, "spec");
        resize["status"]["phase"] = json!("Bound");
        assert!(PersistentVolumeClaim.validate(&resize, Some(&old)).is_empty());
    }

    #[test]
    fn capacity_shows_once_bound() {
        let pvc = json!({"metadata": {"name": "data"}, "spec": {"storageClassName": "fast"},
            "status": {"phase": "Pending"}});
        let cells = pvc_cells(&pvc, 0);
        assert_eq!(cells[1..7], [json!("Pending"), json!(""), json!(""), json!(""), json!("fast"), json!("<unset>")]);
        let bound = json!({"metadata": {"name": "data", "annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "spec": {"volumeName": "pv-1", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}});
        let cells = pvc_cells(&bound, 0);
        assert_eq!(cells[2..6], [json!("pv-1"), json!("10Gi"), json!("RWO,RWX"), json!("old")]);
        assert_eq!(cells[8], json!("Filesystem"));
    }
}
