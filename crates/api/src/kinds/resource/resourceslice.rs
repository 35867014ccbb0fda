//! ResourceSlice (resource.k8s.io/v1): cluster-scoped, tracks generation; a driver's
//! devices in a pool: the driver a DNS subdomain, the pool named with a positive slice
//! count, exactly one of node name, node selector, all nodes or per-device selection,
//! devices named by unique DNS labels; selectable by node, driver and pool; printed with
//! them.

use std::collections::HashSet;

use serde_json::Value;

use super::devices::{dns_label, dns_subdomain};
use crate::kinds::common::{at, str_at as field_str};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::{BadValue, FieldError, NON_NEGATIVE};

pub static DEF: ResourceDef = ResourceDef {
    group: "resource.k8s.io",
    version: "v1",
    kind: "ResourceSlice",
    plural: "resourceslices",
    singular: "resourceslice",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[],
    list_kind: "ResourceSliceList",
    tracks_generation: true,
};

/// The fields that say which nodes reach the pool; exactly one is set.
const NODE_FIELDS: &[&str] = &["nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection"];

const NODE_DOC: &str = "NodeName identifies the node which provides the resources in this pool. A field selector can be used to list only ResourceSlice objects belonging to a certain node.\n\nThis field can be used to limit access from nodes to ResourceSlices with the same node name. It also indicates to autoscalers that adding new nodes of the same type as some old node might also make new resources available.\n\nExactly one of NodeName, NodeSelector, AllNodes, and PerDeviceNodeSelection must be set. This field is immutable.";
const DRIVER_DOC: &str = "Driver identifies the DRA driver providing the capacity information. A field selector can be used to list only ResourceSlice objects with a certain driver name.\n\nMust be a DNS subdomain and should end with a DNS domain owned by the vendor of the driver. It should use only lower case characters. This field is immutable.";
const POOL_DOC: &str = "Name is used to identify the pool. For node-local devices, this is often the node name, but this is not required. A field selector can be used to list only ResourceSlice objects belonging to a certain pool.\n\nIt must not be longer than 253 characters and must consist of one or more DNS sub-domains separated by slashes. This field is immutable.";

const SLICE_COLUMNS: &[Column] =
    &[NAME, col("Node", "string", NODE_DOC), col("Driver", "string", DRIVER_DOC), col("Pool", "string", POOL_DOC), AGE];

pub struct ResourceSlice;

impl Strategy for ResourceSlice {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        dns_subdomain(field_str(obj, "spec.driver"), "spec.driver", &mut errs);
        let pool = field_str(obj, "spec.pool.name");
        if pool.is_empty() {
            errs.push(FieldError::required("spec.pool.name", ""));
        }
        if let Some(g) = at(obj, "spec.pool.generation").and_then(Value::as_i64).filter(|g| *g < 0) {
            errs.push(FieldError::invalid_value("spec.pool.generation", BadValue::Raw(g.to_string()), NON_NEGATIVE));
        }
        let count = at(obj, "spec.pool.resourceSliceCount").and_then(Value::as_i64).unwrap_or(0);
        if count <= 0 {
            errs.push(FieldError::invalid_value(
                "spec.pool.resourceSliceCount",
                BadValue::Raw(count.to_string()),
                "must be greater than zero",
            ));
        }
        // `false` and `""` count as unset.
        let set: Vec<&str> = NODE_FIELDS
            .iter()
            .copied()
            .filter(|f| match at(obj, &format!("spec.{f}")) {
                None | Some(Value::Bool(false)) => false,
                Some(Value::String(s)) => !s.is_empty(),
                Some(_) => true,
            })
            .collect();
        match set.len() {
            0 => errs.push(FieldError::required(
                "spec",
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
            )),
            1 => {}
            _ => errs.push(FieldError::invalid_value(
                "spec",
                BadValue::Raw(format!("{{{}}}", set.iter().map(|f| format!("{f:?}")).collect::<Vec<_>>().join(", "))),
                "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but \
                 multiple fields are set",
            )),
        }
        let mut names = HashSet::new();
        for (i, d) in at(obj, "spec.devices").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let path = format!("spec.devices[{i}].name");
            let name = d.get("name").and_then(Value::as_str).unwrap_or("");
            dns_label(name, &path, &mut errs);
            if !name.is_empty() && !names.insert(name) {
                errs.push(FieldError::duplicate(&path, BadValue::Str(name.into())));
            }
        }
        errs
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.nodeName", "spec.driver", "spec.pool.name"]
    }

    fn columns(&self) -> &'static [Column] {
        SLICE_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![
            name(obj).into(),
            str_at(obj, "/spec/nodeName").into(),
            str_at(obj, "/spec/driver").into(),
            str_at(obj, "/spec/pool/name").into(),
            age(obj, now).into(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(spec: Value) -> Vec<String> {
        let obj = json!({"spec": spec});
        ResourceSlice.validate(obj.as_object().unwrap(), None).into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn slices_have_one_node_scope_and_unique_devices() {
        let pool = json!({"name": "node-1", "generation": 1, "resourceSliceCount": 1});
        assert!(fields(json!({"driver": "gpu.example.com", "pool": pool, "nodeName": "node-1",
            "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}))
        .is_empty());
        assert_eq!(
            fields(json!({"driver": "gpu.example.com", "pool": pool, "nodeName": "node-1", "allNodes": true,
                "devices": [{"name": "gpu-0"}, {"name": "gpu-0"}]})),
            ["spec", "spec.devices[1].name"]
        );
        assert_eq!(
            fields(json!({"driver": "", "pool": {"name": "p", "resourceSliceCount": 0}, "allNodes": true})),
            ["spec.driver", "spec.pool.resourceSliceCount"]
        );
    }
}
