//! PersistentVolume (core/v1): a piece of storage in the cluster, cluster-scoped, with a
//! status subresource. Created `Pending` with its phase transition time; the reclaim
//! policy defaults to `Retain` and the volume mode to `Filesystem`; needs access modes,
//! a positive `storage` capacity and exactly one volume source, which is then fixed.
//! Printed with its capacity, modes, policy, phase and claim.

use serde_json::{json, Value};

use crate::kinds::core::quantity::positive;
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{core, ResourceDef, Scope, STATUS};
use crate::validation::{is_dns1123_subdomain, BadValue, FieldError};

pub static DEF: ResourceDef = core(
    "PersistentVolume",
    "persistentvolumes",
    "persistentvolume",
    Scope::Cluster,
    &["pv"],
    &[],
    &[STATUS],
    "PersistentVolumeList",
);

const PV_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Capacity",
        "string",
        "capacity is the description of the persistent volume's resources and capacity. More info: \
         https://kubernetes.io/docs/concepts/storage/persistent-volumes#capacity",
    ),
    col(
        "Access Modes",
        "string",
        "accessModes contains all ways the volume can be mounted. More info: \
         https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes",
    ),
    col(
        "Reclaim Policy",
        "string",
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim. \
         Valid options are Retain (default for manually created PersistentVolumes), Delete (default for dynamically \
         provisioned PersistentVolumes), and Recycle (deprecated). Recycle must be supported by the volume plugin \
         underlying this PersistentVolume. More info: \
         https://kubernetes.io/docs/concepts/storage/persistent-volumes#reclaiming",
    ),
    col(
        "Status",
        "string",
        "phase indicates if a volume is available, bound to a claim, or released by a claim. More info: \
         https://kubernetes.io/docs/concepts/storage/persistent-volumes#phase",
    ),
    col(
        "Claim",
        "string",
        "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim. Expected \
         to be non-nil when bound. claim.VolumeName is the authoritative bind between PV and PVC. More info: \
         https://kubernetes.io/docs/concepts/storage/persistent-volumes#binding",
    ),
    col("StorageClass", "string", "StorageClass of the pv"),
    col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
    col(
        "Reason",
        "string",
        "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy \
         display in the CLI.",
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block \
         state. Value of Filesystem is implied when not included in spec.",
    ),
];

/// `supportedAccessModes`, sorted.
const ACCESS_MODES: &[&str] = &["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"];
/// `supportedVolumeModes`, sorted.
pub(crate) const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];
const RECLAIM_POLICIES: &[&str] = &["Delete", "Recycle", "Retain"];

/// The volume sources a volume may name (exactly one), in kube's order of checking, each
/// with the name its "more than 1 volume type" error gives it (`None`: never refused).
const SOURCES: &[(&str, Option<&str>)] = &[
    ("hostPath", Some("hostPath")),
    ("gcePersistentDisk", Some("gcePersistentDisk")),
    ("awsElasticBlockStore", Some("awsElasticBlockStore")),
    ("glusterfs", Some("glusterfs")),
    ("flocker", Some("flocker")),
    ("nfs", Some("nfs")),
    ("rbd", Some("rbd")),
    ("quobyte", Some("quobyte")),
    ("cephfs", Some("cephFS")),
    ("iscsi", Some("iscsi")),
    ("cinder", Some("cinder")),
    ("fc", Some("fc")),
    ("flexVolume", None),
    ("azureFile", Some("azureFile")),
    ("vsphereVolume", Some("vsphereVolume")),
    ("photonPersistentDisk", Some("photonPersistentDisk")),
    ("portworxVolume", Some("portworxVolume")),
    ("azureDisk", Some("azureDisk")),
    ("scaleIO", Some("scaleIO")),
    ("local", Some("local")),
    ("storageos", Some("storageos")),
    ("csi", Some("csi")),
];

pub struct PersistentVolume;

impl Strategy for PersistentVolume {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = child(obj, "spec") {
            set_default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
            set_default(spec, "volumeMode", json!("Filesystem"));
            if let Some(host_path) = child(spec, "hostPath") {
                set_default(host_path, "type", json!(""));
            }
        }
        if let Some(status) = child(obj, "status") {
            set_default(status, "phase", json!("Pending"));
        }
    }

    /// A new volume is `Pending` since now, whatever status it was sent with.
    fn prepare_for_create(&self, obj: &mut Object, now: &str) {
        obj.insert("status".into(), json!({"phase": "Pending", "lastPhaseTransitionTime": now}));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let empty = Object::new();
        let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
        volume_spec(spec, &mut errs);
        if let Some(old_spec) = old.map(|o| o.get("spec").and_then(Value::as_object).unwrap_or(&empty)) {
            if !SOURCES.iter().all(|(k, _)| spec.get(*k) == old_spec.get(*k)) {
                errs.push(FieldError::forbidden(
                    "spec.persistentvolumesource",
                    "spec.persistentvolumesource is immutable after creation",
                ));
            }
            if spec.get("volumeMode") != old_spec.get("volumeMode") {
                // kube reports the path without its `spec.`.
                errs.push(FieldError::invalid_value(
                    "volumeMode",
                    BadValue::of_json(spec.get("volumeMode").unwrap_or(&Value::Null)),
                    "field is immutable",
                ));
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        PV_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(pv_cells(obj, now))
    }
}

/// `ValidatePersistentVolumeSpec` for a stored volume.
fn volume_spec(spec: &Object, errs: &mut Vec<FieldError>) {
    let modes = spec.get("accessModes").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if modes.is_empty() {
        errs.push(FieldError::required("spec.accessModes", ""));
    }
    access_modes(modes, "spec.accessModes", errs);

    let capacity = spec.get("capacity").and_then(Value::as_object);
    let capacity_len = capacity.map_or(0, |c| c.len());
    if capacity_len == 0 {
        errs.push(FieldError::required("spec.capacity", ""));
    }
    if !capacity.is_some_and(|c| c.contains_key("storage")) || capacity_len > 1 {
        let shown = BadValue::of_json(spec.get("capacity").unwrap_or(&Value::Null));
        errs.push(FieldError::not_supported_value("spec.capacity", shown, &["storage"]));
    }
    for (resource, q) in capacity.into_iter().flatten() {
        positive(q, &format!("spec.capacity[{resource}]"), errs);
    }

    if let Some(policy) = spec.get("persistentVolumeReclaimPolicy").and_then(Value::as_str).filter(|p| !p.is_empty()) {
        if !RECLAIM_POLICIES.contains(&policy) {
            errs.push(FieldError::not_supported("spec.persistentVolumeReclaimPolicy", policy, RECLAIM_POLICIES));
        }
    }

    let mut sources = 0;
    for (key, refused_as) in SOURCES {
        let Some(source) = spec.get(*key).filter(|s| s.is_object()) else { continue };
        match refused_as {
            Some(as_name) if sources > 0 => {
                errs.push(FieldError::forbidden(&format!("spec.{as_name}"), "may not specify more than 1 volume type"));
                continue;
            }
            _ => sources += 1,
        }
        volume_source(key, source, spec, errs);
    }
    if sources == 0 {
        errs.push(FieldError::required("spec", "must specify a volume type"));
    }

    let class = spec.get("storageClassName").and_then(Value::as_str).unwrap_or("");
    for msg in if class.is_empty() { Vec::new() } else { is_dns1123_subdomain(class) } {
        errs.push(FieldError::invalid("spec.storageClassName", class, msg));
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str) {
        if !VOLUME_MODES.contains(&mode) {
            errs.push(FieldError::not_supported("spec.volumeMode", mode, VOLUME_MODES));
        }
    }
    if let Some(vac) = spec.get("volumeAttributesClassName").and_then(Value::as_str) {
        if vac.is_empty() {
            errs.push(FieldError::required("spec.volumeAttributesClassName", "an empty string is disallowed"));
        }
        for msg in if vac.is_empty() { Vec::new() } else { is_dns1123_subdomain(vac) } {
            errs.push(FieldError::invalid("spec.volumeAttributesClassName", vac, msg));
        }
        if !spec.get("csi").is_some_and(Value::is_object) {
            errs.push(FieldError::required("spec.csi", "has to be specified when using volumeAttributesClassName"));
        }
    }
}

/// The fields of the common volume sources that name where the storage is.
fn volume_source(key: &str, source: &Value, spec: &Object, errs: &mut Vec<FieldError>) {
    let required = |field: &str, errs: &mut Vec<FieldError>| {
        if str_at(source, &format!("/{field}")).is_empty() {
            errs.push(FieldError::required(&format!("spec.{key}.{field}"), ""));
        }
    };
    match key {
        "hostPath" | "local" => required("path", errs),
        "nfs" => {
            required("server", errs);
            required("path", errs);
            let path = str_at(source, "/path");
            if !path.starts_with('/') {
                errs.push(FieldError::invalid("spec.nfs.path", path, "must be an absolute path"));
            }
        }
        "csi" => {
            required("driver", errs);
            required("volumeHandle", errs);
        }
        _ => {}
    }
    if key == "local" && !spec.get("nodeAffinity").and_then(|a| a.get("required")).is_some_and(Value::is_object) {
        errs.push(FieldError::required("spec.nodeAffinity", "Local volume requires node affinity"));
    }
}

/// Access modes kube knows, `ReadWriteOncePod` alone.
pub(crate) fn access_modes(modes: &[Value], path: &str, errs: &mut Vec<FieldError>) {
    let (mut once_pod, mut others) = (false, false);
    for mode in modes {
        let mode = mode.as_str().unwrap_or("");
        if !ACCESS_MODES.contains(&mode) {
            errs.push(FieldError::not_supported(path, mode, ACCESS_MODES));
        } else if mode == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            others = true;
        }
    }
    if once_pod && others {
        errs.push(FieldError::forbidden(path, "may not use ReadWriteOncePod with other access modes"));
    }
}

/// `helper.GetAccessModesAsString`: `RWO,ROX,RWX,RWOP`, each once, in that order.
pub(crate) fn access_modes_cell(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"), ("ReadWriteOncePod", "RWOP")]
        .iter()
        .filter(|(mode, _)| has(mode))
        .map(|(_, short)| *short)
        .collect::<Vec<_>>()
        .join(",")
}

/// The storage class of a volume or claim: the beta annotation first, then the field.
pub(crate) fn storage_class(obj: &Value) -> &str {
    obj.pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
        .unwrap_or_else(|| str_at(obj, "/spec/storageClassName"))
}

fn pv_cells(pv: &Value, now: i64) -> Vec<Value> {
    use crate::kinds::core::persistentvolumeclaim::{non_empty_or_unset, quantity_text};
    let claim = match pv.pointer("/spec/claimRef").filter(|c| c.is_object()) {
        Some(c) => format!("{}/{}", str_at(c, "/namespace"), str_at(c, "/name")),
        None => String::new(),
    };
    let deleting = pv.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    let phase = if deleting { "Terminating" } else { str_at(pv, "/status/phase") };
    vec![
        name(pv).into(),
        pv.pointer("/spec/capacity/storage").map_or_else(|| "0".into(), quantity_text).into(),
        access_modes_cell(arr_at(pv, "/spec/accessModes")).into(),
        str_at(pv, "/spec/persistentVolumeReclaimPolicy").into(),
        phase.into(),
        claim.into(),
        storage_class(pv).into(),
        non_empty_or_unset(pv.pointer("/spec/volumeAttributesClassName")).into(),
        str_at(pv, "/status/reason").into(),
        age(pv, now).into(),
        non_empty_or_unset(pv.pointer("/spec/volumeMode")).into(),
    ]
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
    fn a_volume_has_one_source_and_a_storage_capacity() {
        let pv = obj(json!({"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi", "cpu": "1"},
            "persistentVolumeReclaimPolicy": "Keep", "hostPath": {"path": "/data"}, "nfs": {"server": "x", "path": "/"}}}));
        assert_eq!(
            shown(&PersistentVolume.validate(&pv, None)),
            [
                "spec.capacity: Unsupported value: map[string]interface {}{\"cpu\":\"1\", \"storage\":\"1Gi\"}: \
                 supported values: \"storage\"",
                "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \
                 \"Recycle\", \"Retain\"",
                "spec.nfs: Forbidden: may not specify more than 1 volume type",
            ]
        );
        assert_eq!(
            shown(&PersistentVolume.validate(&obj(json!({"spec": {"local": {"path": ""}}})), None)),
            [
                "spec.accessModes: Required value",
                "spec.capacity: Required value",
                "spec.capacity: Unsupported value: \"null\": supported values: \"storage\"",
                "spec.local.path: Required value",
                "spec.nodeAffinity: Required value: Local volume requires node affinity",
            ]
        );
    }

    #[test]
    fn created_pending_since_now_and_retained() {
        let mut pv = obj(json!({"spec": {"hostPath": {"path": "/d"}}, "status": {"phase": "Bound"}}));
        PersistentVolume.defaults(&mut pv);
        PersistentVolume.prepare_for_create(&mut pv, "2024-01-01T00:00:00Z");
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pv["spec"]["hostPath"]["type"], "");
        assert_eq!(pv["status"], json!({"phase": "Pending", "lastPhaseTransitionTime": "2024-01-01T00:00:00Z"}));
    }

    #[test]
    fn the_source_is_fixed() {
        let old = obj(json!({"spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"},
            "hostPath": {"path": "/a"}, "volumeMode": "Filesystem"}}));
        let mut new = old.clone();
        new["spec"]["hostPath"]["path"] = json!("/b");
        new["spec"]["capacity"]["storage"] = json!("2Gi");
        assert_eq!(
            shown(&PersistentVolume.validate(&new, Some(&old))),
            ["spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"]
        );
    }

    #[test]
    fn cells_as_kubectl_shows_them() {
        let pv = json!({"metadata": {"name": "pv-1"}, "spec": {"capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "manual"},
            "status": {"phase": "Bound"}});
        let cells = pv_cells(&pv, 0);
        assert_eq!(
            cells[..9],
            [
                json!("pv-1"),
                json!("5Gi"),
                json!("RWO,RWX"),
                json!("Retain"),
                json!("Bound"),
                json!("default/data"),
                json!("manual"),
                json!("<unset>"),
                json!("")
            ]
        );
        assert_eq!(cells[10], json!("<unset>"));
    }
}
