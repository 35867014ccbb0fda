//! rbac.authorization.k8s.io/v1: Role, ClusterRole, RoleBinding, ClusterRoleBinding.
//! Their names are any URL path segment (`system:discovery`); roles are validated as
//! kube-apiserver's RBAC strategy does (rules name verbs and resources or URLs), bindings
//! too (a roleRef cannot change). The escalation check, which needs the authorizer's view
//! of the writer, is the REST layer's.

use serde_json::Value;

use crate::kinds::{Object, Strategy};
use crate::rbac::{validate_binding, validate_role};
use crate::registry::{grouped, ResourceDef, Scope, RBAC_GROUP};
use crate::validation::{FieldError, NameRule};

pub static CLUSTER_ROLE_BINDING_DEF: ResourceDef = grouped(
    RBAC_GROUP,
    "ClusterRoleBinding",
    "clusterrolebindings",
    "clusterrolebinding",
    Scope::Cluster,
    "ClusterRoleBindingList",
);
pub static CLUSTER_ROLE_DEF: ResourceDef =
    grouped(RBAC_GROUP, "ClusterRole", "clusterroles", "clusterrole", Scope::Cluster, "ClusterRoleList");
pub static ROLE_BINDING_DEF: ResourceDef =
    grouped(RBAC_GROUP, "RoleBinding", "rolebindings", "rolebinding", Scope::Namespaced, "RoleBindingList");
pub static ROLE_DEF: ResourceDef = grouped(RBAC_GROUP, "Role", "roles", "role", Scope::Namespaced, "RoleList");

/// A role or a binding of one scope.
pub struct Rbac {
    def: &'static ResourceDef,
    is_role: bool,
}

pub static CLUSTER_ROLE_BINDING: Rbac = Rbac { def: &CLUSTER_ROLE_BINDING_DEF, is_role: false };
pub static CLUSTER_ROLE: Rbac = Rbac { def: &CLUSTER_ROLE_DEF, is_role: true };
pub static ROLE_BINDING: Rbac = Rbac { def: &ROLE_BINDING_DEF, is_role: false };
pub static ROLE: Rbac = Rbac { def: &ROLE_DEF, is_role: true };

impl Strategy for Rbac {
    fn def(&self) -> &'static ResourceDef {
        self.def
    }

    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let new = Value::Object(obj.clone());
        if self.is_role {
            validate_role(&new, self.def.namespaced())
        } else {
            validate_binding(&new, old.map(|o| Value::Object(o.clone())).as_ref(), self.def.namespaced())
        }
    }
}

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&CLUSTER_ROLE_BINDING, &CLUSTER_ROLE, &ROLE_BINDING, &ROLE];
