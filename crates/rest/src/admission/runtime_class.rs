//! `RuntimeClass`: a new pod that names a `runtimeClassName` runs under that RuntimeClass
//! (403 when there is none): it gets the class's `overhead.podFixed` as `spec.overhead`
//! (403 when it gives another), the class's `scheduling.nodeSelector` merged into its own
//! (403 on a key with another value) and the class's tolerations added to its own. A pod
//! that gives an overhead its class does not define is refused.

use kuorum_api::quantity;
use kuorum_api::ApiError;
use serde_json::{json, Map, Value};

use super::{cached, Attributes};
use crate::object::Object;

const GROUP: &str = "node.k8s.io";
const PLURAL: &str = "runtimeclasses";

/// The RuntimeClass a new pod names: `Ok(None)` for a pod that names none (and for any
/// other write), 403 when it names one that does not exist.
fn class_of(a: &Attributes, pod: &Object) -> Result<Option<Object>, ApiError> {
    if !a.creates("", "pods") {
        return Ok(None);
    }
    let Some(name) = pod.get("spec").and_then(|s| s.get("runtimeClassName")).and_then(Value::as_str) else {
        return Ok(None);
    };
    cached(a.st, GROUP, PLURAL, None, name)
        .map(Some)
        .ok_or_else(|| a.forbidden(pod, &format!("pod rejected: RuntimeClass {name:?} not found")))
}

pub(crate) fn admit(a: &Attributes, pod: &mut Object) -> Result<(), ApiError> {
    let Some(class) = class_of(a, pod)? else { return Ok(()) };
    let fixed = class.get("overhead").and_then(|o| o.get("podFixed")).filter(|v| !v.is_null()).cloned();
    let scheduling = class.get("scheduling").and_then(Value::as_object).cloned().unwrap_or_default();
    let given = pod.get("spec").and_then(|s| s.get("overhead")).filter(|v| !v.is_null()).cloned();
    if let Some(fixed) = &fixed {
        if given.as_ref().is_some_and(|g| !same_resources(g, fixed)) {
            return Err(a.forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"));
        }
    }
    let selector = scheduling.get("nodeSelector").and_then(Value::as_object).cloned().unwrap_or_default();
    let spec_selector = pod.get("spec").and_then(|s| s.get("nodeSelector")).and_then(Value::as_object);
    for (key, value) in &selector {
        if let Some(own) = spec_selector.and_then(|s| s.get(key)).filter(|own| *own != value) {
            let (v, o) = (value.as_str().unwrap_or(""), own.as_str().unwrap_or(""));
            let why = format!(
                "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {v}; pod.spec.nodeSelector[{key}] = {o}"
            );
            return Err(a.forbidden(pod, &why));
        }
    }
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    if let Some(fixed) = fixed {
        spec.insert("overhead".into(), fixed);
    }
    if !selector.is_empty() {
        let own = spec.entry("nodeSelector").or_insert_with(|| json!({}));
        if !own.is_object() {
            *own = json!({});
        }
        if let Some(own) = own.as_object_mut() {
            own.extend(selector);
        }
    }
    let tolerations = scheduling.get("tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    if !tolerations.is_empty() {
        let own = spec.entry("tolerations").or_insert_with(|| json!([]));
        if !own.is_array() {
            *own = json!([]);
        }
        if let Some(own) = own.as_array_mut() {
            merge_tolerations(own, tolerations);
        }
    }
    Ok(())
}

/// kube's `validateOverhead`, after the kind's validation: the pod's overhead is its
/// class's, or it has none.
pub(crate) fn validate(a: &Attributes, pod: &Object) -> Result<(), ApiError> {
    if !a.creates("", "pods") {
        return Ok(());
    }
    let class = class_of(a, pod)?;
    let fixed = class.as_ref().and_then(|c| c.get("overhead")).and_then(|o| o.get("podFixed")).filter(|v| !v.is_null());
    let given = pod.get("spec").and_then(|s| s.get("overhead")).filter(|v| !v.is_null());
    match (fixed, given) {
        (Some(f), Some(g)) if same_resources(f, g) => Ok(()),
        (Some(_), _) => {
            Err(a.forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
        }
        (None, Some(_)) => {
            Err(a.forbidden(pod, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"))
        }
        (None, None) => Ok(()),
    }
}

/// Two resource lists name the same quantities (`1` and `1000m` are the same, as kube's
/// semantic equality has it).
fn same_resources(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return a == b };
    let amount = |v: &Value| v.as_str().and_then(|s| quantity::parse(s).ok()).and_then(|q| q.milli());
    a.len() == b.len()
        && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v == w || amount(v).is_some_and(|m| Some(m) == amount(w))))
}

/// Adds to `own` each of `more` it does not already hold (kube's `MergeTolerations`
/// leaves out a toleration another one covers; kuorum only leaves out equal ones).
fn merge_tolerations(own: &mut Vec<Value>, more: Vec<Value>) {
    let norm = |t: &Value| -> Map<String, Value> {
        t.as_object()
            .map(|m| m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    };
    for t in more {
        if !own.iter().any(|o| norm(o) == norm(&t)) {
            own.push(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overheads_compare_as_quantities() {
        assert!(same_resources(&json!({"cpu": "1", "memory": "1Gi"}), &json!({"cpu": "1000m", "memory": "1024Mi"})));
        assert!(!same_resources(&json!({"cpu": "1"}), &json!({"cpu": "2"})));
        assert!(!same_resources(&json!({"cpu": "1"}), &json!({"cpu": "1", "memory": "1Gi"})));
    }

    #[test]
    fn tolerations_merge_once() {
        let mut own = vec![json!({"key": "a", "operator": "Exists"})];
        merge_tolerations(
            &mut own,
            vec![json!({"key": "a", "operator": "Exists", "value": null}), json!({"key": "b", "operator": "Exists"})],
        );
        assert_eq!(own, vec![json!({"key": "a", "operator": "Exists"}), json!({"key": "b", "operator": "Exists"})]);
    }
}
