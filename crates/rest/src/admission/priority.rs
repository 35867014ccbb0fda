//! `Priority`: a new pod's `spec.priority` (and `preemptionPolicy`) come from the
//! PriorityClass its `priorityClassName` names (403 when there is none), or from the
//! `globalDefault` class (the lowest valued, if a race made two), else 0. A pod that
//! gives another value itself is refused, as kube's plugin does; an update keeps them.

use serde_json::Value;

use super::{cached, cached_list, Attributes};
use crate::object::Object;
use kuorum_api::ApiError;

const GROUP: &str = "scheduling.k8s.io";
const PLURAL: &str = "priorityclasses";
const PREEMPT: &str = "PreemptLowerPriority";

pub(crate) fn admit(a: &Attributes, obj: &mut Object) -> Result<(), ApiError> {
    if !a.is("", "pods") {
        return Ok(());
    }
    if let Some(old) = a.old {
        // Validation forbids changing them; what the update left out is kept.
        let old_spec = old.get("spec").and_then(Value::as_object);
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            for field in ["priority", "preemptionPolicy"] {
                if let (None, Some(v)) = (spec.get(field), old_spec.and_then(|s| s.get(field))) {
                    spec.insert(field.into(), v.clone());
                }
            }
        }
        return Ok(());
    }
    let named = spec_str(obj, "priorityClassName").filter(|n| !n.is_empty()).map(str::to_string);
    let class = match &named {
        Some(name) => Some(
            cached(a.st, GROUP, PLURAL, None, name)
                .ok_or_else(|| a.forbidden(obj, &format!("no PriorityClass with name {name} was found")))?,
        ),
        None => cached_list(&a.st.cache, GROUP, PLURAL, None)
            .into_iter()
            .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
            .min_by_key(|c| c.get("value").and_then(Value::as_i64).unwrap_or(0)),
    };
    let priority = class.as_ref().and_then(|c| c.get("value")).and_then(Value::as_i64).unwrap_or(0);
    // A class without a policy (and no class) preempts lower priorities, kube's default.
    let policy = class.as_ref().and_then(|c| c.get("preemptionPolicy")).and_then(Value::as_str).unwrap_or(PREEMPT);
    let policy = Some(policy.to_string());
    let given = obj.get("spec").and_then(|s| s.get("priority")).and_then(Value::as_i64);
    if let Some(given) = given.filter(|g| *g != priority) {
        let why = format!("the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name");
        return Err(a.forbidden(obj, &why));
    }
    let given_policy = spec_str(obj, "preemptionPolicy").map(str::to_string);
    if let (Some(p), Some(g)) = (&policy, &given_policy) {
        if p != g {
            let why = format!("the string value of PreemptionPolicy ({g}) must not be provided in pod spec; priority admission controller computed {p} from the given PriorityClass name");
            return Err(a.forbidden(obj, &why));
        }
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    if let (None, Some(c)) = (&named, &class) {
        if let Some(name) = c.get("metadata").and_then(|m| m.get("name")) {
            spec.insert("priorityClassName".into(), name.clone());
        }
    }
    spec.insert("priority".into(), Value::from(priority));
    if let Some(p) = policy {
        spec.insert("preemptionPolicy".into(), Value::from(p));
    }
    Ok(())
}

/// A string field of the pod's spec.
fn spec_str<'a>(obj: &'a Object, field: &str) -> Option<&'a str> {
    obj.get("spec").and_then(|s| s.get(field)).and_then(Value::as_str)
}
