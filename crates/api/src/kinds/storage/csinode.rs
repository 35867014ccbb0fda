//! CSINode (storage.k8s.io/v1): cluster-scoped, named like its Node; status subresource
//! (as kube 1.37 lists it); each driver named like a CSI driver, once, with a node ID and
//! qualified topology keys; a driver's entry is fixed once registered (but for its
//! allocatable count); printed with how many drivers it has.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::checks::{csi_driver_name, shown};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{is_qualified_name, BadValue, FieldError, NON_NEGATIVE};

pub static DEF: ResourceDef = ResourceDef {
    group: "storage.k8s.io",
    version: "v1",
    kind: "CSINode",
    plural: "csinodes",
    singular: "csinode",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "CSINodeList",
    tracks_generation: false,
};

const CSI_NODE_COLUMNS: &[Column] =
    &[NAME, col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"), AGE];

/// The longest node ID a new driver entry may have; entries stored with longer IDs (up to
/// the newer limit) stay acceptable.
const NODE_ID_MAX: usize = 192;
const NODE_ID_LONGER_MAX: usize = 256;

pub struct CSINode;

impl Strategy for CSINode {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let drivers = drivers_of(obj);
        let old_drivers = old.map(drivers_of).unwrap_or_default();
        let long_ids = old_drivers.iter().any(|d| str_at(d, "/nodeID").len() > NODE_ID_MAX);
        let max_id = if long_ids { NODE_ID_LONGER_MAX } else { NODE_ID_MAX };
        let mut names = HashSet::new();
        for (i, driver) in drivers.iter().enumerate() {
            let path = format!("spec.drivers[{i}]");
            let name = str_at(driver, "/name");
            csi_driver_name(name, &format!("{path}.name"), &mut errs);
            let node_id = str_at(driver, "/nodeID");
            if node_id.is_empty() {
                errs.push(FieldError::required(&format!("{path}.nodeID"), ""));
            }
            if node_id.len() > max_id {
                errs.push(FieldError::invalid(
                    &format!("{path}.nodeID"),
                    node_id,
                    format!("must be {max_id} characters or less"),
                ));
            }
            if let Some(count) = driver.pointer("/allocatable/count").and_then(Value::as_i64).filter(|c| *c < 0) {
                errs.push(FieldError::invalid_value(
                    &format!("{path}.allocatable.count"),
                    BadValue::Raw(count.to_string()),
                    NON_NEGATIVE,
                ));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(&format!("{path}.name"), BadValue::Str(name.into())));
            }
            let mut keys = HashSet::new();
            for key in arr_at(driver, "/topologyKeys").iter().map(|k| k.as_str().unwrap_or("")) {
                if key.is_empty() {
                    errs.push(FieldError::required(&path, ""));
                }
                if !keys.insert(key) {
                    errs.push(FieldError::duplicate(&path, BadValue::Str(key.into())));
                }
                for msg in is_qualified_name(key) {
                    errs.push(FieldError::invalid(&path, key, msg));
                }
            }
        }
        // A registered driver's entry changes only in its allocatable count. Names are
        // unique (a second entry of a name is refused above), so each old entry is
        // compared with the first new entry of its name: linear in the drivers.
        let mut by_name: HashMap<&str, &Value> = HashMap::new();
        for driver in &drivers {
            by_name.entry(str_at(driver, "/name")).or_insert(*driver);
        }
        for old_driver in &old_drivers {
            if let Some(driver) = by_name.get(str_at(old_driver, "/name")) {
                let (new_entry, old_entry) = (without_allocatable(driver), without_allocatable(old_driver));
                if new_entry != old_entry {
                    errs.push(FieldError::invalid_value("spec.drivers", shown(Some(&new_entry)), "field is immutable"));
                }
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        CSI_NODE_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![name(obj).into(), (arr_at(obj, "/spec/drivers").len() as i64).into(), age(obj, now).into()])
    }
}

fn drivers_of(obj: &Object) -> Vec<&Value> {
    obj.get("spec").and_then(|s| s.get("drivers")).and_then(Value::as_array).into_iter().flatten().collect()
}

fn without_allocatable(driver: &Value) -> Value {
    let mut d = driver.clone();
    if let Some(m) = d.as_object_mut() {
        m.remove("allocatable");
    }
    d
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
    fn drivers_are_named_once_with_node_ids() {
        let node = obj(json!({"spec": {"drivers": [
            {"name": "ebs.csi.aws.com", "nodeID": "i-1", "topologyKeys": ["topology.ebs.csi.aws.com/zone"]},
            {"name": "ebs.csi.aws.com", "nodeID": ""}]}}));
        assert_eq!(
            shown(&CSINode.validate(&node, None)),
            ["spec.drivers[1].nodeID: Required value", r#"spec.drivers[1].name: Duplicate value: "ebs.csi.aws.com""#,]
        );
    }

    #[test]
    fn a_registered_driver_changes_only_its_count() {
        let old = obj(json!({"spec": {"drivers": [{"name": "d.io", "nodeID": "n1", "allocatable": {"count": 10}}]}}));
        let count = obj(json!({"spec": {"drivers": [{"name": "d.io", "nodeID": "n1", "allocatable": {"count": 5}}]}}));
        assert!(CSINode.validate(&count, Some(&old)).is_empty());
        let moved = obj(json!({"spec": {"drivers": [{"name": "d.io", "nodeID": "n2"}]}}));
        let errs = CSINode.validate(&moved, Some(&old));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.drivers");
        let row = CSINode.row(&Value::Object(old), 0);
        assert_eq!(row.cells[1], 1);
    }
}
