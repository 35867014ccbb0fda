//! `DefaultIngressClass`: a new Ingress that names no class (no `spec.ingressClassName`
//! and no `kubernetes.io/ingress.class` annotation) gets the default IngressClass, the one
//! annotated `ingressclass.kubernetes.io/is-default-class: "true"` (the newest, then the
//! first by name, when several are).

use serde_json::Value;

use super::{newest_default, Attributes};
use crate::object::{self, Object};

const DEFAULT_ANNOTATIONS: &[&str] = &["ingressclass.kubernetes.io/is-default-class"];
const CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

pub(crate) fn admit(a: &Attributes, obj: &mut Object) {
    if !a.creates("networking.k8s.io", "ingresses") {
        return;
    }
    let annotated = object::meta(obj).and_then(|m| m.get("annotations")).and_then(|a| a.get(CLASS_ANNOTATION));
    let named = obj.get("spec").and_then(|s| s.get("ingressClassName")).is_some_and(|v| !v.is_null());
    if annotated.is_some() || named {
        return;
    }
    let Some(class) = newest_default(a.st, "networking.k8s.io", "ingressclasses", DEFAULT_ANNOTATIONS) else {
        return;
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("ingressClassName".into(), Value::from(class));
    }
}
