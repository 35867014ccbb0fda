//! `LimitRanger`: a new pod takes its namespace's LimitRanges' `Container` defaults — a
//! container's missing limits from `default`, missing requests from `defaultRequest` —
//! noted in the `kubernetes.io/limit-ranger` annotation as kube words it, then must keep
//! within each range's `Container` and `Pod` `min`/`max` (403 with kube's messages).
//! Pods are only checked on create: their containers' resources do not change after.

use kuorum_api::ApiError;
use serde_json::{json, Map, Value};

use super::resource_quota::{self, amount, Usage};
use super::{cached_list, containers_mut, Attributes};
use crate::object::Object;

const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// Mutating: the ranges' `Container` defaults.
pub(crate) fn admit(a: &Attributes, obj: &mut Object) {
    if !a.creates("", "pods") || !a.st.configured.any("", "limitranges") {
        return;
    }
    for range in &cached_list(&a.st.cache, "", "limitranges", Some(a.namespace())) {
        set_defaults(range, obj);
    }
}

/// Validating: the ranges' bounds.
pub(crate) fn validate(a: &Attributes, obj: &Object) -> Result<(), ApiError> {
    if !a.creates("", "pods") || !a.st.configured.any("", "limitranges") {
        return Ok(());
    }
    // The first range a pod breaks refuses it, with all it breaks there.
    for range in &cached_list(&a.st.cache, "", "limitranges", Some(a.namespace())) {
        let mut errs: Vec<String> = Vec::new();
        for item in items(range) {
            check(item, obj, &mut errs);
        }
        errs.dedup();
        match errs.len() {
            0 => continue,
            1 => return Err(a.forbidden(obj, &errs[0])),
            // kube's `utilerrors.NewAggregate`.
            _ => return Err(a.forbidden(obj, &format!("[{}]", errs.join(", ")))),
        }
    }
    Ok(())
}

/// The range's limit items.
fn items(range: &Object) -> impl Iterator<Item = &Map<String, Value>> {
    range
        .get("spec")
        .and_then(|s| s.get("limits"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
}

/// The resource list at `field` of a limit item, or of a container's `resources`.
fn list<'a>(of: &'a Map<String, Value>, field: &str) -> Option<&'a Map<String, Value>> {
    of.get(field).and_then(Value::as_object)
}

/// kube's `mergePodResourceRequirements` with the range's `Container` defaults.
fn set_defaults(range: &Object, pod: &mut Object) {
    let (mut limits, mut requests) = (Map::new(), Map::new());
    for item in items(range).filter(|i| i.get("type").and_then(Value::as_str) == Some("Container")) {
        limits.extend(list(item, "default").cloned().unwrap_or_default());
        requests.extend(list(item, "defaultRequest").cloned().unwrap_or_default());
    }
    if limits.is_empty() && requests.is_empty() {
        return;
    }
    let mut notes = Vec::new();
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        const KINDS: [(&[&str], &str); 2] = [(&["containers"], "container"), (&["initContainers"], "init container")];
        for (field, what) in KINDS {
            for c in containers_mut(spec, field) {
                let name = c.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                let resources = c.entry("resources").or_insert_with(|| json!({}));
                let Some(resources) = resources.as_object_mut() else { continue };
                let set_requests = fill(resources, "requests", &requests);
                let set_limits = fill(resources, "limits", &limits);
                if !set_requests.is_empty() {
                    notes.push(format!("{} request for {what} {name}", set_requests.join(", ")));
                }
                if !set_limits.is_empty() {
                    notes.push(format!("{} limit for {what} {name}", set_limits.join(", ")));
                }
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    let meta = crate::object::meta_mut(pod);
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    let text = format!("LimitRanger plugin set: {}", notes.join("; "));
    annotations.as_object_mut().expect("made an object above").insert(ANNOTATION.into(), Value::from(text));
}

/// Sets what `defaults` has that `resources[field]` lacks; the names set, sorted.
fn fill(resources: &mut Map<String, Value>, field: &str, defaults: &Map<String, Value>) -> Vec<String> {
    if defaults.is_empty() {
        return Vec::new();
    }
    let target = resources.entry(field).or_insert_with(|| json!({}));
    if !target.is_object() {
        *target = json!({});
    }
    let target = target.as_object_mut().expect("made an object above");
    let mut set = Vec::new();
    for (k, v) in defaults {
        if !target.contains_key(k) {
            target.insert(k.clone(), v.clone());
            set.push(k.clone());
        }
    }
    set.sort();
    set
}

/// A limit item's quantity as kube prints it.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => kuorum_api::quantity::parse(s.trim()).map(|q| q.canonical()).unwrap_or_else(|_| s.clone()),
        other => other.to_string(),
    }
}

/// kube's `PodValidateLimitFunc` for one limit item: each container (for `Container`) or
/// the pod's total (for `Pod`: kube's `PodRequests`/`PodLimits` without overhead) within
/// `min`/`max`.
fn check(item: &Map<String, Value>, pod: &Object, errs: &mut Vec<String>) {
    let as_amounts = |l: Option<&Value>| -> Usage {
        l.and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| amount(v).map(|a| (k.clone(), a)))
            .collect()
    };
    match item.get("type").and_then(Value::as_str).unwrap_or("") {
        "Container" => {
            let containers = ["initContainers", "containers"]
                .iter()
                .filter_map(|f| pod.get("spec").and_then(|s| s.get(*f)).and_then(Value::as_array))
                .flatten();
            for c in containers {
                let resources = c.get("resources");
                let requests = as_amounts(resources.and_then(|r| r.get("requests")));
                let limits = as_amounts(resources.and_then(|r| r.get("limits")));
                bounds(item, "Container", &requests, &limits, errs);
            }
        }
        "Pod" => {
            let requests = resource_quota::pod_resources(pod, "requests", false);
            let limits = resource_quota::pod_resources(pod, "limits", false);
            bounds(item, "Pod", &requests, &limits, errs);
        }
        _ => {}
    }
}

/// kube's `minConstraint` and `maxConstraint` for one container or pod (amounts in
/// thousandths).
fn bounds(item: &Map<String, Value>, what: &str, requests: &Usage, limits: &Usage, errs: &mut Vec<String>) {
    for (resource, min) in list(item, "min").into_iter().flatten() {
        let Some(min_amount) = amount(min) else { continue };
        let shown = |v: i128| resource_quota::format_amount(resource, v);
        match (requests.get(resource), limits.get(resource)) {
            (None, _) => {
                errs.push(format!("minimum {resource} usage per {what} is {}.  No request is specified", text(min)))
            }
            (Some(r), _) if *r < min_amount => {
                errs.push(format!("minimum {resource} usage per {what} is {}, but request is {}", text(min), shown(*r)))
            }
            (_, Some(l)) if *l < min_amount => {
                errs.push(format!("minimum {resource} usage per {what} is {}, but limit is {}", text(min), shown(*l)))
            }
            _ => {}
        }
    }
    for (resource, max) in list(item, "max").into_iter().flatten() {
        let Some(max_amount) = amount(max) else { continue };
        let shown = |v: i128| resource_quota::format_amount(resource, v);
        match (limits.get(resource), requests.get(resource)) {
            (None, _) => {
                errs.push(format!("maximum {resource} usage per {what} is {}.  No limit is specified", text(max)))
            }
            (Some(l), _) if *l > max_amount => {
                errs.push(format!("maximum {resource} usage per {what} is {}, but limit is {}", text(max), shown(*l)))
            }
            (_, Some(r)) if *r > max_amount => {
                errs.push(format!("maximum {resource} usage per {what} is {}, but request is {}", text(max), shown(*r)))
            }
            _ => {}
        }
    }
}
