//! `DefaultStorageClass`: a new PersistentVolumeClaim that names no class (no
//! `spec.storageClassName`, not even `""`, and no beta class annotation) gets the default
//! StorageClass, the one annotated `storageclass.kubernetes.io/is-default-class: "true"`
//! (the newest, then the first by name, when several are).

use serde_json::Value;

use super::{newest_default, Attributes};
use crate::object::{self, Object};

const DEFAULT_ANNOTATIONS: &[&str] =
    &["storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"];
const BETA_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

pub(crate) fn admit(a: &Attributes, obj: &mut Object) {
    if !a.creates("", "persistentvolumeclaims") {
        return;
    }
    let annotated = object::meta(obj).and_then(|m| m.get("annotations")).and_then(|a| a.get(BETA_CLASS_ANNOTATION));
    let named = obj.get("spec").and_then(|s| s.get("storageClassName")).is_some_and(|v| !v.is_null());
    if annotated.is_some() || named {
        return;
    }
    let Some(class) = newest_default(a.st, "storage.k8s.io", "storageclasses", DEFAULT_ANNOTATIONS) else { return };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("storageClassName".into(), Value::from(class));
    }
}
