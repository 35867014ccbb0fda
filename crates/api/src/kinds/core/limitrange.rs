//! LimitRange (core/v1): per-namespace bounds on what containers, pods and claims ask
//! for. A `Container` item's defaults fill in from its `max` and `min`; validation keeps
//! `min <= defaultRequest <= default <= max` per resource, one item per type, and names
//! resources as quotas do. No printer: `kubectl get limits` shows the name and creation.

use serde_json::{Map, Value};

use crate::kinds::core::quantity::{amount, resource_name};
use crate::kinds::{each, Object, Strategy};
use crate::registry::{core, ResourceDef, Scope};
use crate::validation::{is_qualified_name, BadValue, FieldError};

pub static DEF: ResourceDef =
    core("LimitRange", "limitranges", "limitrange", Scope::Namespaced, &["limits"], &[], &[], "LimitRangeList");

/// The limit types without a domain (`helper.IsStandardLimitRangeType`).
const STANDARD_TYPES: &[&str] = &["Pod", "Container", "PersistentVolumeClaim"];

pub struct LimitRange;

impl Strategy for LimitRange {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// `SetDefaults_LimitRangeItem`: for containers, the default limit falls back to the
    /// max, and the default request to the default limit, then to the min.
    fn defaults(&self, obj: &mut Object) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
        for item in each(spec, "limits") {
            if item.get("type").and_then(Value::as_str) != Some("Container") {
                continue;
            }
            let list = |item: &Object, key: &str| item.get(key).and_then(Value::as_object).cloned().unwrap_or_default();
            let (max, min) = (list(item, "max"), list(item, "min"));
            let mut default = list(item, "default");
            fill_missing(&mut default, &max);
            let mut default_request = list(item, "defaultRequest");
            fill_missing(&mut default_request, &default);
            fill_missing(&mut default_request, &min);
            // An empty list reads back as absent, as Go's omitempty writes it.
            for (key, l) in [("default", default), ("defaultRequest", default_request)] {
                if !l.is_empty() {
                    item.insert(key.into(), Value::Object(l));
                }
            }
        }
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let items = obj.get("spec").and_then(|s| s.get("limits")).and_then(Value::as_array);
        let mut types_seen: Vec<&str> = Vec::new();
        for (i, item) in items.into_iter().flatten().enumerate() {
            let path = format!("spec.limits[{i}]");
            let ty = item.get("type").and_then(Value::as_str).unwrap_or("");
            limit_type(ty, &format!("{path}.type"), &mut errs);
            if types_seen.contains(&ty) {
                errs.push(FieldError::duplicate(&format!("{path}.type"), BadValue::Raw(ty.into())));
            }
            types_seen.push(ty);
            validate_item(item, ty, &path, &mut errs);
        }
        errs
    }
}

/// Adds the entries of `from` that `to` lacks.
fn fill_missing(to: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (k, v) in from {
        to.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

/// `validateLimitRangeTypeName`: a qualified name, and a standard type without a domain.
fn limit_type(ty: &str, path: &str, errs: &mut Vec<FieldError>) {
    let msgs = is_qualified_name(ty);
    if !msgs.is_empty() {
        errs.extend(msgs.into_iter().map(|m| FieldError::invalid(path, ty, m)));
        return;
    }
    if !ty.contains('/') && !STANDARD_TYPES.contains(&ty) {
        errs.push(FieldError::invalid(path, ty, "must be a standard limit type or fully qualified"));
    }
}

/// One item's lists, and how each resource's amounts in them must be ordered.
fn validate_item(item: &Value, ty: &str, path: &str, errs: &mut Vec<FieldError>) {
    let list = |key: &str| item.get(key).and_then(Value::as_object);
    let mut keys: Vec<&String> = Vec::new();
    let mut names = |key: &str, errs: &mut Vec<FieldError>| {
        for k in list(key).into_iter().flat_map(|m| m.keys()) {
            resource_name(k, &format!("{path}.{key}[{k}]"), errs);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    };
    names("max", errs);
    names("min", errs);
    if ty == "Pod" {
        for key in ["default", "defaultRequest"] {
            if list(key).is_some_and(|m| !m.is_empty()) {
                errs.push(FieldError::forbidden(&format!("{path}.{key}"), "may not be specified when `type` is 'Pod'"));
            }
        }
    } else {
        names("default", errs);
        names("defaultRequest", errs);
    }
    if ty == "PersistentVolumeClaim"
        && !["min", "max"].iter().any(|l| list(l).is_some_and(|m| m.contains_key("storage")))
    {
        errs.push(FieldError::required(
            &format!("{path}.limits"),
            "either minimum or maximum storage value is required, but neither was provided",
        ));
    }
    names("maxLimitRequestRatio", errs);

    keys.sort();
    for k in keys {
        // A Pod item's defaults are refused above and take no part in the ordering.
        let get = |key: &str| {
            let skip = ty == "Pod" && key.starts_with("default");
            list(key).and_then(|m| m.get(k)).filter(|_| !skip).and_then(|v| Some((amount(v)?, shown(v))))
        };
        let (min, max, default, request) = (get("min"), get("max"), get("default"), get("defaultRequest"));
        let at = |key: &str| format!("{path}.{key}[{k}]");
        // Each pair that must be ordered, the field kube reports, and which of the two
        // amounts it shows as the bad value.
        let pairs = [
            (&min, &max, "min", Shown::Lower, "min value {lo} is greater than max value {hi}"),
            (
                &min,
                &request,
                "defaultRequest",
                Shown::Upper,
                "min value {lo} is greater than default request value {hi}",
            ),
            (
                &request,
                &max,
                "defaultRequest",
                Shown::Lower,
                "default request value {lo} is greater than max value {hi}",
            ),
            (
                &request,
                &default,
                "defaultRequest",
                Shown::Lower,
                "default request value {lo} is greater than default limit value {hi}",
            ),
            (&min, &default, "default", Shown::Lower, "min value {lo} is greater than default value {hi}"),
            (&default, &max, "default", Shown::Upper, "default value {lo} is greater than max value {hi}"),
        ];
        for (lower, upper, field, which, what) in pairs {
            if let (Some((lo, lo_s)), Some((hi, hi_s))) = (lower, upper) {
                if lo > hi {
                    let bad = if which == Shown::Lower { lo_s } else { hi_s };
                    errs.push(FieldError::invalid_value(
                        &at(field),
                        BadValue::Raw(bad.clone()),
                        what.replacen("{lo}", lo_s, 1).replacen("{hi}", hi_s, 1),
                    ));
                }
            }
        }
        if let Some((ratio, ratio_s)) = get("maxLimitRequestRatio") {
            if ratio < 1.0 {
                errs.push(FieldError::invalid_value(
                    &at("maxLimitRequestRatio"),
                    BadValue::Raw(ratio_s.clone()),
                    format!("ratio {ratio_s} is less than 1"),
                ));
            }
            if let (Some((lo, _)), Some((hi, _))) = (&min, &max) {
                let limit = hi / lo;
                if ratio > limit {
                    errs.push(FieldError::invalid_value(
                        &at("maxLimitRequestRatio"),
                        BadValue::Raw(ratio_s.clone()),
                        format!("ratio {ratio_s} is greater than max/min = {limit:.6}"),
                    ));
                }
            }
        }
        // Resources that cannot be overcommitted (extended ones, huge pages) take their
        // request at the limit (`helper.IsOvercommitAllowed`).
        let native = !k.contains('/') || k.contains("kubernetes.io/");
        let overcommit = native && !k.starts_with("hugepages-");
        if let (false, Some((d, d_s)), Some((r, r_s))) = (overcommit, &default, &request) {
            if d != r {
                errs.push(FieldError::invalid_value(
                    &at("defaultRequest"),
                    BadValue::Raw(r_s.clone()),
                    format!("default value {d_s} must equal to defaultRequest value {r_s} in {k}"),
                ));
            }
        }
    }
}

/// Which amount of an ordered pair an error shows.
#[derive(PartialEq, Eq)]
enum Shown {
    Lower,
    Upper,
}

/// A quantity as messages show it: the text the client sent.
fn shown(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn container_defaults_come_from_max_and_min() {
        let mut lr = obj(json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2", "memory": "1Gi"}, "min": {"cpu": "100m", "memory": "64Mi"},
             "default": {"memory": "512Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}}]}}));
        LimitRange.defaults(&mut lr);
        let c = &lr["spec"]["limits"][0];
        assert_eq!(c["default"], json!({"cpu": "2", "memory": "512Mi"}));
        assert_eq!(c["defaultRequest"], json!({"cpu": "2", "memory": "512Mi"}));
        assert!(lr["spec"]["limits"][1].get("default").is_none());
        assert!(LimitRange.validate(&lr, None).is_empty(), "{:?}", LimitRange.validate(&lr, None));
    }

    #[test]
    fn amounts_keep_their_order() {
        let lr = obj(json!({"spec": {"limits": [
            {"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}},
            {"type": "Container"},
            {"type": "Pod", "default": {"cpu": "1"}},
            {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}},
            {"type": "Bogus", "maxLimitRequestRatio": {"memory": "500m"}}]}}));
        let shown: Vec<String> = LimitRange.validate(&lr, None).iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "spec.limits[0].min[cpu]: Invalid value: 2: min value 2 is greater than max value 1",
                "spec.limits[1].type: Duplicate value: Container",
                "spec.limits[2].default: Forbidden: may not be specified when `type` is 'Pod'",
                "spec.limits[3].limits: Required value: either minimum or maximum storage value is required, but \
                 neither was provided",
                "spec.limits[4].type: Invalid value: \"Bogus\": must be a standard limit type or fully qualified",
                "spec.limits[4].maxLimitRequestRatio[memory]: Invalid value: 500m: ratio 500m is less than 1",
            ]
        );
    }
}
