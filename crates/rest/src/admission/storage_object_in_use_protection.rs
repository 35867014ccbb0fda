//! `StorageObjectInUseProtection`: a new PersistentVolumeClaim gets the
//! `kubernetes.io/pvc-protection` finalizer and a new PersistentVolume
//! `kubernetes.io/pv-protection`, so deleting one a pod still uses (a claim bound to it)
//! only marks it; the protection controllers take the finalizer off when it is free
//! (kuorum-node runs them, as kube-controller-manager does).

use serde_json::Value;

use super::Attributes;
use crate::object::{self, Object};

pub const CLAIM_FINALIZER: &str = "kubernetes.io/pvc-protection";
pub const VOLUME_FINALIZER: &str = "kubernetes.io/pv-protection";

pub(crate) fn admit(a: &Attributes, obj: &mut Object) {
    let finalizer = if a.creates("", "persistentvolumeclaims") {
        CLAIM_FINALIZER
    } else if a.creates("", "persistentvolumes") {
        VOLUME_FINALIZER
    } else {
        return;
    };
    let meta = object::meta_mut(obj);
    let list = meta.entry("finalizers").or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    if let Some(list) = list.as_array_mut() {
        if !list.iter().any(|f| f == finalizer) {
            list.push(Value::from(finalizer));
        }
    }
}
