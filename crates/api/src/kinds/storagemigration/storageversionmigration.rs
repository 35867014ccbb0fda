//! StorageVersionMigration (storagemigration.k8s.io/v1): cluster-scoped, status
//! subresource; names the resource to migrate, which never changes; created without
//! status; printed with the resource as `resource.group`.

use serde_json::{json, Value};

use crate::kinds::common::{immutable, str_at as field_str};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "storagemigration.k8s.io",
    version: "v1",
    kind: "StorageVersionMigration",
    plural: "storageversionmigrations",
    singular: "storageversionmigration",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "StorageVersionMigrationList",
    tracks_generation: false,
};

/// kube prints no Age. (Its Name column lacks the `name` format; kuorum's Tables mark
/// every name column.)
const MIGRATION_COLUMNS: &[Column] = &[NAME, col("Resource", "string", "Fully qualified resource to migrate")];

pub struct StorageVersionMigration;

impl Strategy for StorageVersionMigration {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// The migration controller owns the status.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({}));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if field_str(obj, "spec.resource.resource").is_empty() {
            errs.push(FieldError::required("spec.resource.resource", "resource is required"));
        }
        immutable(obj, old, "spec.resource", &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        MIGRATION_COLUMNS
    }

    fn row(&self, obj: &Value, _now: i64) -> Row {
        let (resource, group) = (str_at(obj, "/spec/resource/resource"), str_at(obj, "/spec/resource/group"));
        let qualified = if group.is_empty() { resource.to_string() } else { format!("{resource}.{group}") };
        Row::plain(vec![name(obj).into(), qualified.into()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_resource_is_required_and_fixed() {
        let errs = StorageVersionMigration.validate(&obj(json!({"spec": {"resource": {"group": "apps"}}})), None);
        assert_eq!(errs[0].to_string(), "spec.resource.resource: Required value: resource is required");
        let old = obj(json!({"spec": {"resource": {"group": "apps", "resource": "deployments"}}}));
        let new = obj(json!({"spec": {"resource": {"group": "apps", "resource": "statefulsets"}}}));
        assert_eq!(StorageVersionMigration.validate(&new, Some(&old))[0].field, "spec.resource");
    }

    #[test]
    fn printed_as_resource_dot_group() {
        let row = StorageVersionMigration.row(
            &json!({"metadata": {"name": "m"}, "spec": {"resource":
            {"group": "apps", "resource": "deployments"}}}),
            0,
        );
        assert_eq!(row.cells, [json!("m"), json!("deployments.apps")]);
        let core = json!({"spec": {"resource": {"group": "", "resource": "secrets"}}});
        assert_eq!(StorageVersionMigration.row(&core, 0).cells[1], json!("secrets"));
    }
}
