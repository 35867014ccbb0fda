//! DeviceClass (resource.k8s.io/v1): cluster-scoped, tracks generation; its selectors
//! need CEL expressions and each opaque config a driver and parameters; printed with
//! name and age.

use serde_json::Value;

use super::devices::{cel_selector, dns_subdomain};
use crate::kinds::common::at;
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "resource.k8s.io",
    version: "v1",
    kind: "DeviceClass",
    plural: "deviceclasses",
    singular: "deviceclass",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[],
    list_kind: "DeviceClassList",
    tracks_generation: true,
};

const CLASS_COLUMNS: &[Column] = &[NAME, AGE];

pub struct DeviceClass;

impl Strategy for DeviceClass {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for (i, s) in at(obj, "spec.selectors").and_then(Value::as_array).into_iter().flatten().enumerate() {
            cel_selector(s, &format!("spec.selectors[{i}]"), &mut errs);
        }
        for (i, c) in at(obj, "spec.config").and_then(Value::as_array).into_iter().flatten().enumerate() {
            opaque_config(c, &format!("spec.config[{i}]"), &mut errs);
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        CLASS_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), age(obj, now).into()])
    }
}

/// An opaque device configuration: a driver (DNS subdomain) and its parameters.
pub(crate) fn opaque_config(config: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(opaque) = config.get("opaque").filter(|o| o.is_object()) else {
        errs.push(FieldError::required(&format!("{path}.opaque"), ""));
        return;
    };
    let driver = opaque.get("driver").and_then(Value::as_str).unwrap_or("");
    dns_subdomain(driver, &format!("{path}.opaque.driver"), errs);
    if opaque.get("parameters").is_none_or(Value::is_null) {
        errs.push(FieldError::required(&format!("{path}.opaque.parameters"), ""));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_and_configs_are_complete() {
        let obj = json!({"spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}, {}],
            "config": [{"opaque": {"driver": "gpu.example.com"}}]}});
        let errs = DeviceClass.validate(obj.as_object().unwrap(), None);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["spec.selectors[1].cel", "spec.config[0].opaque.parameters"]);
    }
}
