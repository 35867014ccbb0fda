//! ResourceQuota (core/v1): per-namespace limits on what its objects may use. Status
//! subresource (the quota controller's `hard` and `used`), empty on create; every amount
//! a non-negative quantity of a resource quotas know, counts whole; scopes known, not in
//! conflict, and fixed once set. Printed with `used/hard` per request and limit.

use serde_json::{json, Value};

use crate::kinds::core::quantity::{quota_resource_name, resource_value};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{core, ResourceDef, Scope, STATUS};
use crate::validation::{BadValue, FieldError};

pub static DEF: ResourceDef = core(
    "ResourceQuota",
    "resourcequotas",
    "resourcequota",
    Scope::Namespaced,
    &["quota"],
    &[],
    &[STATUS],
    "ResourceQuotaList",
);

const QUOTA_COLUMNS: &[Column] = &[
    NAME,
    col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
    col(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the \
         node.",
    ),
    AGE,
];

/// `helper.IsStandardResourceQuotaScope`.
const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

pub struct ResourceQuota;

impl Strategy for ResourceQuota {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// The quota controller fills in the status; a new quota has none.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({}));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        for (list, path) in
            [("/spec/hard", "spec.hard"), ("/status/hard", "status.hard"), ("/status/used", "status.used")]
        {
            // Sorted, so that errors come in one order (kube's map order is random).
            let mut amounts: Vec<(&String, &Value)> = obj_at(obj, list).into_iter().flatten().collect();
            amounts.sort_by_key(|(resource, _)| *resource);
            for (resource, q) in amounts {
                let at = format!("{path}[{resource}]");
                quota_resource_name(resource, &at, &mut errs);
                resource_value(resource, q, &at, &mut errs);
            }
            // The spec's scopes are checked right after its amounts, as kube orders them.
            if list == "/spec/hard" {
                scopes(obj, &mut errs);
            }
        }
        if let Some(old) = old {
            let set = |o: &Object| {
                let mut s: Vec<String> = scope_list(o).iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
                s.sort();
                s.dedup();
                s
            };
            if set(obj) != set(old) {
                let shown = obj.get("spec").and_then(|s| s.get("scopes")).cloned().unwrap_or(Value::Null);
                errs.push(FieldError::invalid_value("spec.scopes", BadValue::of_json(&shown), "field is immutable"));
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        QUOTA_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let (requests, limits) = usage_cells(obj);
        Row::plain(vec![name(obj).into(), requests.into(), limits.into(), age(obj, now).into()])
    }
}

fn obj_at<'a>(obj: &'a Object, ptr: &str) -> Option<&'a serde_json::Map<String, Value>> {
    let mut parts = ptr.trim_start_matches('/').split('/');
    let first = obj.get(parts.next()?)?;
    parts.try_fold(first, |v, p| v.get(p)).and_then(Value::as_object)
}

fn scope_list(obj: &Object) -> &[Value] {
    obj.get("spec").and_then(|s| s.get("scopes")).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// `validateResourceQuotaScopes`: known scopes, never both of a pair that excludes each
/// other; and the scope names of the scope selector.
fn scopes(obj: &Object, errs: &mut Vec<FieldError>) {
    let list = scope_list(obj);
    let shown = || BadValue::of_json(&Value::Array(list.to_vec()));
    let has = |s: &str| list.iter().any(|v| v.as_str() == Some(s));
    for scope in list {
        if !SCOPES.contains(&scope.as_str().unwrap_or("")) {
            errs.push(FieldError::invalid_value("spec.scopes", shown(), "unsupported scope"));
        }
    }
    for (a, b) in [("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")] {
        if has(a) && has(b) {
            errs.push(FieldError::invalid_value("spec.scopes", shown(), "conflicting scopes"));
        }
    }
    let exprs = obj.get("spec").and_then(|s| s.pointer("/scopeSelector/matchExpressions")).and_then(Value::as_array);
    for e in exprs.into_iter().flatten() {
        let name = str_at(e, "/scopeName");
        if !SCOPES.contains(&name) {
            // kube names the list, not the expression, in this path.
            errs.push(FieldError::invalid("spec.scopeSelector.matchExpressions.scopeName", name, "unsupported scope"));
        }
    }
}

/// `used/hard` for each resource of `status.hard`, sorted; `limits.*` in the second cell.
fn usage_cells(quota: &Value) -> (String, String) {
    let Some(hard) = quota.pointer("/status/hard").and_then(Value::as_object) else {
        return (String::new(), String::new());
    };
    let mut resources: Vec<&String> = hard.keys().collect();
    resources.sort();
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for r in resources {
        let text = |v: Option<&Value>| {
            v.map_or_else(|| "0".to_string(), |v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        };
        let used = quota.pointer("/status/used").and_then(|u| u.get(r.as_str()));
        let entry = format!("{r}: {}/{}", text(used), text(hard.get(r.as_str())));
        let is_limit = r.split_once('.').is_some_and(|(first, _)| first == "limits");
        if is_limit {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    (requests.join(", "), limits.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn amounts_scopes_and_names() {
        let q = obj(json!({"spec": {"hard": {"pods": "10", "requests.cpu": "-1", "bogus": "1"},
            "scopes": ["BestEffort", "NotBestEffort"]}}));
        let shown: Vec<String> = ResourceQuota.validate(&q, None).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "spec.hard[bogus]: Invalid value: bogus: must be a standard resource type or fully qualified",
                "spec.hard[requests.cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
                "spec.scopes: Invalid value: []interface {}{\"BestEffort\", \"NotBestEffort\"}: conflicting scopes",
            ]
        );
    }

    #[test]
    fn scopes_are_fixed_and_status_starts_empty() {
        let old = obj(json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}}));
        let mut new = old.clone();
        new["spec"]["scopes"] = json!(["NotBestEffort"]);
        assert_eq!(ResourceQuota.validate(&new, Some(&old))[0].field, "spec.scopes");
        let mut created = obj(json!({"status": {"used": {"pods": "3"}}}));
        ResourceQuota.prepare_for_create(&mut created, "2024-01-01T00:00:00Z");
        assert_eq!(created["status"], json!({}));
    }

    #[test]
    fn usage_splits_requests_from_limits() {
        let q = json!({"status": {"hard": {"limits.memory": "2Gi", "pods": "10", "requests.cpu": "1"},
            "used": {"pods": "3", "requests.cpu": "500m"}}});
        assert_eq!(
            usage_cells(&q),
            ("pods: 3/10, requests.cpu: 500m/1".to_string(), "limits.memory: 0/2Gi".to_string())
        );
        assert_eq!(usage_cells(&json!({})), (String::new(), String::new()));
    }
}
