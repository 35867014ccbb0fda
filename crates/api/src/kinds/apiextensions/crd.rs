//! CustomResourceDefinition (apiextensions.k8s.io/v1): tracks generation; status
//! subresource; kube-apiserver's defaults for names and conversion ([`crate::crd`]) and its
//! validation. What needs more than the object (the status kuorum's instant naming gives
//! it, the `pattern`s of its schemas, the custom resources it serves) is the REST layer's.

use serde_json::Value;

use crate::crd::{self, GROUP, PLURAL};
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: GROUP,
    version: "v1",
    kind: "CustomResourceDefinition",
    plural: PLURAL,
    singular: "customresourcedefinition",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &["crd", "crds"],
    categories: &["api-extensions"],
    subresources: &[STATUS],
    list_kind: "CustomResourceDefinitionList",
    tracks_generation: true,
};

pub struct CustomResourceDefinition;

impl Strategy for CustomResourceDefinition {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        crd::set_defaults(obj);
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let old = old.map(|o| Value::Object(o.clone()));
        crd::validate(&Value::Object(obj.clone()), old.as_ref())
    }
}
