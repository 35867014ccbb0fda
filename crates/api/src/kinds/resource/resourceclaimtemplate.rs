//! ResourceClaimTemplate (resource.k8s.io/v1): namespaced; the claim spec it stamps out
//! follows a claim's rules and defaults; the spec never changes; printed with name and
//! age.

use serde_json::Value;

use super::devices::{claim_defaults, validate_claim};
use crate::kinds::common::{at, immutable};
use crate::kinds::printing::*;
use crate::kinds::{child, Object, Strategy};
use crate::registry::{grouped, ResourceDef, Scope};
use crate::validation::FieldError;

pub static DEF: ResourceDef = grouped(
    "resource.k8s.io",
    "ResourceClaimTemplate",
    "resourceclaimtemplates",
    "resourceclaimtemplate",
    Scope::Namespaced,
    "ResourceClaimTemplateList",
);

const TEMPLATE_COLUMNS: &[Column] = &[NAME, AGE];

pub struct ResourceClaimTemplate;

impl Strategy for ResourceClaimTemplate {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        let devices = child(obj, "spec").and_then(|s| child(s, "spec")).and_then(|s| child(s, "devices"));
        if let Some(devices) = devices {
            claim_defaults(devices);
        }
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_claim(at(obj, "spec.spec.devices"), "spec.spec.devices", &mut errs);
        immutable(obj, old, "spec", &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        TEMPLATE_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), age(obj, now).into()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn template_requests_are_defaulted_and_checked() {
        let mut obj = json!({"spec": {"spec": {"devices": {"requests": [{"name": "gpu",
            "exactly": {"deviceClassName": "gpu.example.com"}}]}}}})
        .as_object()
        .unwrap()
        .clone();
        ResourceClaimTemplate.defaults(&mut obj);
        assert_eq!(obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"], 1);
        assert!(ResourceClaimTemplate.validate(&obj, None).is_empty());
        obj["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = json!(0);
        assert_eq!(
            ResourceClaimTemplate.validate(&obj, None)[0].to_string(),
            "spec.spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero"
        );
    }
}
