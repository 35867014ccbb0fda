//! VolumeAttachment (storage.k8s.io/v1): cluster-scoped; status subresource, reset on
//! create; names its attacher (a CSI driver), exactly one source and a node; the spec is
//! fixed once created; printed with attacher, volume, node and whether it is attached.

use serde_json::{json, Value};

use super::checks::{csi_driver_name, shown};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{is_dns1123_subdomain, BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "storage.k8s.io",
    version: "v1",
    kind: "VolumeAttachment",
    plural: "volumeattachments",
    singular: "volumeattachment",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "VolumeAttachmentList",
    tracks_generation: false,
};

const VOLUME_ATTACHMENT_COLUMNS: &[Column] = &[
    NAME,
    // kube marks this column as a name too.
    Column {
        name: "Attacher",
        ty: "string",
        format: "name",
        description: "attacher indicates the name of the volume driver that MUST handle this request. This is the \
                      name returned by GetPluginName().",
        priority: 0,
    },
    col("PV", "string", "persistentVolumeName represents the name of the persistent volume to attach."),
    col("Node", "string", "nodeName represents the node that the volume should be attached to."),
    col(
        "Attached",
        "boolean",
        "attached indicates the volume is successfully attached. This field must only be set by the entity \
         completing the attach operation, i.e. the external-attacher.",
    ),
    AGE,
];

/// The most attachment metadata (keys and values) and error message a status may hold.
const MAX_METADATA_SIZE: usize = 256 * 1024;
const MAX_ERROR_MESSAGE: usize = 1024;
const SOURCE_MSG: &str = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";

pub struct VolumeAttachment;

impl Strategy for VolumeAttachment {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// Only the attacher reports attachment: a new one is not attached.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({"attached": false}));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let attacher = str_at(spec, "/attacher");
        if attacher.is_empty() {
            errs.push(FieldError::required("spec.attacher", ""));
        }
        let pv = spec.pointer("/source/persistentVolumeName").and_then(Value::as_str);
        let inline = spec.pointer("/source/inlineVolumeSpec").filter(|s| !s.is_null());
        match (pv, inline) {
            (None, None) => errs.push(FieldError::required("spec.source", SOURCE_MSG)),
            (Some(_), Some(_)) => errs.push(FieldError::forbidden("spec.source", SOURCE_MSG)),
            (Some(""), None) => errs.push(FieldError::required(
                "spec.source.persistentVolumeName",
                "must specify non empty persistentVolumeName",
            )),
            _ => {}
        }
        let node = str_at(spec, "/nodeName");
        for msg in is_dns1123_subdomain(node) {
            errs.push(FieldError::invalid("spec.nodeName", node, msg));
        }
        status_errors(obj.get("status").unwrap_or(&Value::Null), &mut errs);
        match old {
            // New attachments are held to the attacher being a CSI driver name and the
            // volume a PersistentVolume name.
            None => {
                csi_driver_name(attacher, "spec.attacher", &mut errs);
                if let Some(pv) = pv {
                    for msg in is_dns1123_subdomain(pv) {
                        errs.push(FieldError::invalid("spec.source.persistentVolumeName", pv, msg));
                    }
                }
            }
            Some(old) => {
                if obj.get("spec") != old.get("spec") {
                    errs.push(FieldError::invalid_value("spec", shown(obj.get("spec")), "field is immutable"));
                }
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        VOLUME_ATTACHMENT_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![
            name(obj).into(),
            str_at(obj, "/spec/attacher").into(),
            str_at(obj, "/spec/source/persistentVolumeName").into(),
            str_at(obj, "/spec/nodeName").into(),
            obj.pointer("/status/attached").and_then(Value::as_bool).unwrap_or(false).into(),
            age(obj, now).into(),
        ])
    }
}

/// The attacher's report: bounded metadata, bounded error messages, error codes not
/// negative.
fn status_errors(status: &Value, errs: &mut Vec<FieldError>) {
    let metadata = status.get("attachmentMetadata").and_then(Value::as_object);
    let size: usize = metadata.into_iter().flatten().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
    if size > MAX_METADATA_SIZE {
        errs.push(FieldError::too_long("status.attachmentMetadata", MAX_METADATA_SIZE as i64));
    }
    for field in ["attachError", "detachError"] {
        let Some(e) = status.get(field).filter(|e| e.is_object()) else { continue };
        if str_at(e, "/message").len() > MAX_ERROR_MESSAGE {
            // kube states the metadata limit here.
            errs.push(FieldError::too_long(&format!("status.{field}.message"), MAX_METADATA_SIZE as i64));
        }
        if let Some(code) = e.get("errorCode").and_then(Value::as_i64).filter(|c| *c < 0) {
            errs.push(FieldError::invalid_value(
                &format!("status.{field}.errorCode"),
                BadValue::Raw(code.to_string()),
                "must be between 0 and 2147483647, inclusive",
            ));
        }
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
    fn one_source_and_a_reset_status() {
        let mut va = obj(json!({"spec": {"attacher": "ebs.csi.aws.com", "nodeName": "node-1",
            "source": {"persistentVolumeName": "pv-1"}}, "status": {"attached": true}}));
        VolumeAttachment.prepare_for_create(&mut va, "");
        assert_eq!(va["status"], json!({"attached": false}));
        assert!(VolumeAttachment.validate(&va, None).is_empty());
        let va = obj(json!({"spec": {"attacher": "ebs.csi.aws.com", "nodeName": "node-1", "source": {}}}));
        assert_eq!(
            shown(&VolumeAttachment.validate(&va, None)),
            ["spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"]
        );
    }

    #[test]
    fn the_spec_is_fixed() {
        let old =
            obj(json!({"spec": {"attacher": "a.io", "nodeName": "n1", "source": {"persistentVolumeName": "pv"}}}));
        let new =
            obj(json!({"spec": {"attacher": "a.io", "nodeName": "n2", "source": {"persistentVolumeName": "pv"}}}));
        let errs = VolumeAttachment.validate(&new, Some(&old));
        assert_eq!((errs.len(), errs[0].field.as_str(), errs[0].detail.as_str()), (1, "spec", "field is immutable"));
        let row = VolumeAttachment.row(&Value::Object(new), 0);
        assert_eq!(&row.cells[1..5], [json!("a.io"), json!("pv"), json!("n2"), json!(false)]);
    }
}
