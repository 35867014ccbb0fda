//! Reads `resource.Quantity` values (`"1Gi"`, `"500m"`, `"1e3"`, a JSON number) with the
//! one quantity parser ([`crate::quantity`]) and checks resource lists as kube's core validation does: non-negative and positive
//! amounts, whole numbers for countable resources, and resource names (standard ones or
//! qualified). Syntax errors never reach here: typed decoding refuses a malformed
//! quantity with 400 before validation runs, so a value that does not read is skipped.
//!
//! Amounts are compared as `f64`, exact for every amount a cluster writes (whole numbers
//! below 2^53 and their milli fractions).

use serde_json::Value;

use crate::validation::{is_qualified_name, BadValue, FieldError, NON_NEGATIVE};

/// `isNotPositiveErrorMsg`.
pub(super) const NOT_POSITIVE: &str = "must be greater than zero";
/// `isNotIntegerErrorMsg`.
const NOT_INTEGER: &str = "must be an integer";

/// The amount a quantity stands for, or `None` when `v` is not one.
pub(super) fn amount(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse(s.trim()),
        _ => None,
    }
}

/// The amount `s` stands for, read by kube's own parser ([`crate::quantity`]).
fn parse(s: &str) -> Option<f64> {
    crate::quantity::parse(s).ok().map(|q| q.as_f64())
}

/// The quantity at `v` as its error shows it: the text a client sent.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `ValidateNonnegativeQuantity`: a negative amount at `path`.
pub(super) fn non_negative(v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if amount(v).is_some_and(|a| a < 0.0) {
        errs.push(FieldError::invalid(path, &shown(v), NON_NEGATIVE));
    }
}

/// `ValidatePositiveQuantityValue`: an amount at `path` that is not above zero. Whether
/// it found one.
pub(super) fn positive(v: &Value, path: &str, errs: &mut Vec<FieldError>) -> bool {
    let bad = amount(v).is_some_and(|a| a <= 0.0);
    if bad {
        errs.push(FieldError::invalid(path, &shown(v), NOT_POSITIVE));
    }
    bad
}

/// `ValidateResourceQuantityValue`: non-negative, and whole for a countable resource.
pub(super) fn resource_value(resource: &str, v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    non_negative(v, path, errs);
    // MilliValue rounds up, so a whole number of millis that is not of units fails.
    let not_whole = amount(v).is_some_and(|a| (a * 1000.0).ceil() % 1000.0 != 0.0);
    if is_integer_resource(resource) && not_whole {
        errs.push(FieldError::invalid_value(path, BadValue::Raw(shown(v)), NOT_INTEGER));
    }
}

/// Resources kube counts in whole units (`helper.IsIntegerResourceName`): the object
/// counts of quotas and extended resources.
fn is_integer_resource(name: &str) -> bool {
    const COUNTS: &[&str] = &[
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    ];
    COUNTS.contains(&name) || is_extended_resource(name)
}

/// `helper.IsExtendedResourceName`: a domain-prefixed name outside `kubernetes.io` that
/// reads as a qualified name once quota's `requests.` is put before it.
fn is_extended_resource(name: &str) -> bool {
    !is_native_resource(name)
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// Names without a domain, and those of `kubernetes.io`.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Compute and storage names every resource list may hold (`standardResources`).
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
    "configmaps",
];

/// What a quota may limit without a domain (`standardQuotaResources`).
const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_huge_pages(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// `validateResourceName`: a qualified name, and a standard one when it has no domain.
pub(super) fn resource_name(name: &str, path: &str, errs: &mut Vec<FieldError>) -> bool {
    let msgs = is_qualified_name(name);
    let ok = msgs.is_empty();
    for msg in msgs {
        errs.push(FieldError::invalid(path, name, msg));
    }
    if ok && !name.contains('/') && !STANDARD_RESOURCES.contains(&name) && !is_huge_pages(name) {
        errs.push(FieldError::invalid_value(
            path,
            BadValue::Raw(name.into()),
            "must be a standard resource type or fully qualified",
        ));
        return false;
    }
    ok
}

/// `ValidateResourceQuotaResourceName`: a resource name a quota can count.
pub(super) fn quota_resource_name(name: &str, path: &str, errs: &mut Vec<FieldError>) {
    let before = errs.len();
    resource_name(name, path, errs);
    let is_standard = STANDARD_QUOTA_RESOURCES.contains(&name) || is_huge_pages(name);
    if errs.len() == before && !name.contains('/') && !is_standard {
        errs.push(FieldError::invalid_value(path, BadValue::Raw(name.into()), "must be a standard resource for quota"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn amounts_read_as_kube_reads_them() {
        for (q, want) in [
            (json!("1Gi"), 1073741824.0),
            (json!("500m"), 0.5),
            (json!("1e3"), 1000.0),
            (json!("1E"), 1e18),
            (json!("1.5k"), 1500.0),
            (json!("-2"), -2.0),
            (json!(3), 3.0),
            (json!(".5"), 0.5),
        ] {
            assert_eq!(amount(&q), Some(want), "{q}");
        }
        assert_eq!(amount(&json!("1ki")), None);
        assert_eq!(amount(&json!(true)), None);
    }

    #[test]
    fn counts_are_whole_and_nothing_is_negative() {
        let mut errs = Vec::new();
        resource_value("pods", &json!("1500m"), "spec.hard[pods]", &mut errs);
        resource_value("cpu", &json!("1500m"), "spec.hard[cpu]", &mut errs);
        resource_value("example.com/gpu", &json!("0.5"), "spec.hard[example.com/gpu]", &mut errs);
        resource_value("memory", &json!("-1Gi"), "spec.hard[memory]", &mut errs);
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "spec.hard[pods]: Invalid value: 1500m: must be an integer",
                "spec.hard[example.com/gpu]: Invalid value: 0.5: must be an integer",
                "spec.hard[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0",
            ]
        );
    }

    #[test]
    fn quota_names_are_standard_or_qualified() {
        let mut errs = Vec::new();
        for name in ["requests.cpu", "count/deployments.apps", "requests.hugepages-2Mi", "example.com/foo"] {
            quota_resource_name(name, "spec.hard", &mut errs);
        }
        assert!(errs.is_empty(), "{errs:?}");
        quota_resource_name("storage", "spec.hard[storage]", &mut errs);
        quota_resource_name("bogus", "spec.hard[bogus]", &mut errs);
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "spec.hard[storage]: Invalid value: storage: must be a standard resource for quota",
                "spec.hard[bogus]: Invalid value: bogus: must be a standard resource type or fully qualified",
            ]
        );
    }
}
