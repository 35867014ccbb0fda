//! ResourceClaim (resource.k8s.io/v1): namespaced, status subresource; its device
//! requests default to one device each and need a class; the spec never changes; created
//! unallocated; printed with its state (pending, allocated, reserved, deleted).

use serde_json::{json, Value};

use super::devices::{claim_defaults, validate_claim};
use crate::kinds::common::{at, immutable};
use crate::kinds::printing::*;
use crate::kinds::{child, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "resource.k8s.io",
    version: "v1",
    kind: "ResourceClaim",
    plural: "resourceclaims",
    singular: "resourceclaim",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "ResourceClaimList",
    tracks_generation: false,
};

const CLAIM_COLUMNS: &[Column] =
    &[NAME, col("State", "string", "A summary of the current state (allocated, pending, reserved, etc.)."), AGE];

pub struct ResourceClaim;

impl Strategy for ResourceClaim {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(devices) = child(obj, "spec").and_then(|s| child(s, "devices")) {
            claim_defaults(devices);
        }
    }

    /// The scheduler allocates and reserves; a new claim is neither.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({}));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_claim(at(obj, "spec.devices"), "spec.devices", &mut errs);
        immutable(obj, old, "spec", &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        CLAIM_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), claim_state(obj).into(), age(obj, now).into()])
    }
}

/// `resourceClaimState`: deleted, then pending or allocated (and reserved).
fn claim_state(obj: &Value) -> String {
    let deleted = !str_at(obj, "/metadata/deletionTimestamp").is_empty();
    let mut states = Vec::new();
    if deleted {
        states.push("deleted");
    }
    if obj.pointer("/status/allocation").is_none_or(Value::is_null) {
        if !deleted {
            states.push("pending");
        }
    } else {
        states.push("allocated");
        if !arr_at(obj, "/status/reservedFor").is_empty() {
            states.push("reserved");
        }
    }
    states.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_summarises_allocation() {
        assert_eq!(claim_state(&json!({})), "pending");
        assert_eq!(claim_state(&json!({"status": {"allocation": {}}})), "allocated");
        assert_eq!(
            claim_state(&json!({"status": {"allocation": {}, "reservedFor": [{"name": "p"}]}})),
            "allocated,reserved"
        );
        assert_eq!(claim_state(&json!({"metadata": {"deletionTimestamp": "2024-01-01T00:00:00Z"}})), "deleted");
    }

    #[test]
    fn spec_is_immutable() {
        let o = |v: Value| v.as_object().unwrap().clone();
        let old = o(json!({"spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c",
            "allocationMode": "All"}}]}}}));
        let new = o(json!({"spec": {"devices": {"requests": [{"name": "b", "exactly": {"deviceClassName": "c",
            "allocationMode": "All"}}]}}}));
        assert_eq!(ResourceClaim.validate(&new, Some(&old))[0].field, "spec");
    }
}
