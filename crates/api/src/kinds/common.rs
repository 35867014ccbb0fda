//! Owns the validation rules many kinds share, with kube-apiserver's messages: required
//! fields, immutable fields, names that must be DNS names, enum values, label selectors
//! and a selector matching its template's labels, and a pod template's basics (the rules
//! of `apps`, `batch` and core workload kinds). A rule one kind alone has lives in that
//! kind's file.

use serde_json::Value;

use crate::kinds::Object;
use crate::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value, validate_labels, BadValue,
    FieldError, NON_NEGATIVE,
};

/// The value at a dotted path (`spec.template.metadata.labels`) of `obj`.
pub fn at<'a>(obj: &'a Object, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut v = obj.get(parts.next()?)?;
    for p in parts {
        v = v.get(p)?;
    }
    Some(v).filter(|v| !v.is_null())
}

/// The string at `path`, `""` when absent.
pub fn str_at<'a>(obj: &'a Object, path: &str) -> &'a str {
    at(obj, path).and_then(Value::as_str).unwrap_or("")
}

/// `Required value` at `path` when the field is absent, null, `""`, `[]` or `{}`.
pub fn required(obj: &Object, path: &str, errs: &mut Vec<FieldError>) -> bool {
    let present = match at(obj, path) {
        None => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
        Some(_) => true,
    };
    if !present {
        errs.push(FieldError::required(path, ""));
    }
    present
}

/// `field is immutable` when `path` differs between `obj` and `old` (kube's
/// `ValidateImmutableField`; absent and null are the same).
pub fn immutable(obj: &Object, old: Option<&Object>, path: &str, errs: &mut Vec<FieldError>) {
    let Some(old) = old else { return };
    let (new_v, old_v) = (at(obj, path), at(old, path));
    if new_v != old_v {
        errs.push(FieldError::invalid_value(
            path,
            BadValue::of_json(new_v.unwrap_or(&Value::Null)),
            "field is immutable",
        ));
    }
}

/// A value of `path` not among `allowed` (absent is fine: defaults or `required` handle it).
pub fn one_of(obj: &Object, path: &str, allowed: &[&str], errs: &mut Vec<FieldError>) {
    if let Some(v) = at(obj, path).and_then(Value::as_str) {
        if !allowed.contains(&v) {
            errs.push(FieldError::not_supported(path, v, allowed));
        }
    }
}

/// A negative integer at `path`.
pub fn non_negative(obj: &Object, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(n) = at(obj, path).and_then(Value::as_i64).filter(|n| *n < 0) {
        errs.push(FieldError::invalid_value(path, BadValue::Raw(n.to_string()), NON_NEGATIVE));
    }
}

/// The string at `path` when it is not a DNS-1123 subdomain (an object name a field
/// refers to).
pub fn dns_subdomain(obj: &Object, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(v) = at(obj, path).and_then(Value::as_str) {
        for msg in is_dns1123_subdomain(v) {
            errs.push(FieldError::invalid(path, v, msg));
        }
    }
}

/// The string at `path` when it is not a DNS-1123 label.
pub fn dns_label(obj: &Object, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(v) = at(obj, path).and_then(Value::as_str) {
        for msg in is_dns1123_label(v) {
            errs.push(FieldError::invalid(path, v, msg));
        }
    }
}

/// The errors of a `metav1.LabelSelector` at `path` (kube's `ValidateLabelSelector`):
/// `matchLabels` as labels, each expression's key a qualified name, its operator known,
/// `In`/`NotIn` with values and `Exists`/`DoesNotExist` without.
pub fn label_selector(sel: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        errs.extend(validate_labels(m, &format!("{path}.matchLabels")));
    }
    let exprs = sel.get("matchExpressions").and_then(Value::as_array);
    for (i, e) in exprs.into_iter().flatten().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        for msg in is_qualified_name(key) {
            errs.push(FieldError::invalid(&format!("{p}.key"), key, msg));
        }
        let values = e.get("values").and_then(Value::as_array).map_or(0, Vec::len);
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" | "NotIn" if values == 0 => errs.push(FieldError::required(
                &format!("{p}.values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if values > 0 => errs.push(FieldError::forbidden(
                &format!("{p}.values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.push(FieldError::invalid(&format!("{p}.operator"), other, "not a valid selector operator")),
        }
        for (j, v) in e.get("values").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let v = v.as_str().unwrap_or("");
            for msg in is_valid_label_value(v) {
                errs.push(FieldError::invalid(&format!("{p}.values[{j}]"), v, msg));
            }
        }
    }
}

/// Whether a `metav1.LabelSelector` selects an object with `labels`.
pub fn selector_matches(sel: &Value, labels: Option<&Value>) -> bool {
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let match_labels = sel.get("matchLabels").and_then(Value::as_object);
    if !match_labels.into_iter().flatten().all(|(k, v)| label(k) == v.as_str()) {
        return false;
    }
    let exprs = sel.get("matchExpressions").and_then(Value::as_array);
    exprs.into_iter().flatten().all(|e| {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let mut values = e.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => label(key).is_some_and(|l| values.any(|v| v == l)),
            "NotIn" => label(key).is_none_or(|l| !values.any(|v| v == l)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        }
    })
}

/// Whether a `metav1.LabelSelector` has neither labels nor expressions.
pub fn selector_is_empty(sel: &Value) -> bool {
    let n = |k: &str| sel.get(k).map_or(0, |v| v.as_object().map_or(0, |m| m.len()) + v.as_array().map_or(0, Vec::len));
    n("matchLabels") + n("matchExpressions") == 0
}

/// A workload's `spec.selector` (at `spec`) against its `spec.template`, as apps and
/// batch validation checks them: required, not empty, valid, and matching the template's
/// labels (`` `selector` does not match template `labels` ``).
pub fn selector_and_template(obj: &Object, spec: &str, kind_lower: &str, errs: &mut Vec<FieldError>) {
    let Some(sel) = at(obj, &format!("{spec}.selector")) else {
        errs.push(FieldError::required(&format!("{spec}.selector"), ""));
        return;
    };
    if selector_is_empty(sel) {
        errs.push(FieldError::invalid_value(
            &format!("{spec}.selector"),
            BadValue::of_json(sel),
            format!("empty selector is invalid for {kind_lower}"),
        ));
        return;
    }
    label_selector(sel, &format!("{spec}.selector"), errs);
    let labels = at(obj, &format!("{spec}.template.metadata.labels"));
    if !selector_matches(sel, labels) {
        errs.push(FieldError::invalid_value(
            &format!("{spec}.template.metadata.labels"),
            BadValue::of_json(labels.unwrap_or(&Value::Null)),
            "`selector` does not match template `labels`",
        ));
    }
}

/// The basics of a pod spec at `path` that every pod and pod template gets: at least one
/// container, each named (a DNS label, unique) and with an image, ports in range.
pub fn pod_spec(obj: &Object, path: &str, errs: &mut Vec<FieldError>) {
    let Some(spec) = at(obj, path).and_then(Value::as_object) else {
        errs.push(FieldError::required(path, ""));
        return;
    };
    let containers = spec.get("containers").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if containers.is_empty() {
        errs.push(FieldError::required(&format!("{path}.containers"), ""));
    }
    let mut names = std::collections::HashSet::new();
    for list in ["initContainers", "containers"] {
        for (i, c) in spec.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let p = format!("{path}.{list}[{i}]");
            match c.get("name").and_then(Value::as_str).unwrap_or("") {
                "" => errs.push(FieldError::required(&format!("{p}.name"), "")),
                name => {
                    for msg in is_dns1123_label(name) {
                        errs.push(FieldError::invalid(&format!("{p}.name"), name, msg));
                    }
                    if !names.insert(name.to_string()) {
                        errs.push(FieldError::duplicate(&format!("{p}.name"), BadValue::Str(name.into())));
                    }
                }
            }
            if c.get("image").and_then(Value::as_str).unwrap_or("").is_empty() && list == "containers" {
                errs.push(FieldError::required(&format!("{p}.image"), ""));
            }
        }
    }
    crate::kinds::core::pod::container_ports(spec, path, errs);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn selectors_match_templates_as_kube_checks_them() {
        let ok = obj(json!({"spec": {"selector": {"matchLabels": {"app": "a"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]},
            "template": {"metadata": {"labels": {"app": "a", "tier": "y"}}}}}));
        let mut errs = Vec::new();
        selector_and_template(&ok, "spec", "deployment", &mut errs);
        assert!(errs.is_empty(), "{:?}", shown(&errs));

        let bad = obj(json!({"spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}}}}));
        selector_and_template(&bad, "spec", "deployment", &mut errs);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.template.metadata.labels");
        assert!(errs[0].detail.contains("does not match template"));

        let mut errs = Vec::new();
        selector_and_template(&obj(json!({"spec": {"selector": {}}})), "spec", "deployment", &mut errs);
        assert_eq!(
            shown(&errs),
            ["spec.selector: Invalid value: map[string]interface {}{}: empty selector is invalid for deployment"]
        );
        let mut errs = Vec::new();
        selector_and_template(&obj(json!({"spec": {}})), "spec", "deployment", &mut errs);
        assert_eq!(shown(&errs), ["spec.selector: Required value"]);
    }

    #[test]
    fn expressions_follow_their_operator() {
        let mut errs = Vec::new();
        label_selector(
            &json!({"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]},
                {"key": "c", "operator": "Near"}]}),
            "spec.selector",
            &mut errs,
        );
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.selector.matchExpressions[0].values",
                "spec.selector.matchExpressions[1].values",
                "spec.selector.matchExpressions[2].operator"
            ]
        );
        assert!(selector_matches(&json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}), None));
        assert!(!selector_matches(
            &json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
            Some(&json!({}))
        ));
    }

    #[test]
    fn pod_specs_need_named_containers_with_images() {
        let mut errs = Vec::new();
        pod_spec(
            &obj(
                json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a"}, {"image": "y"}]}}}}),
            ),
            "spec.template.spec",
            &mut errs,
        );
        assert_eq!(
            shown(&errs),
            [
                "spec.template.spec.containers[1].name: Duplicate value: \"a\"",
                "spec.template.spec.containers[1].image: Required value",
                "spec.template.spec.containers[2].name: Required value",
            ]
        );
        let mut errs = Vec::new();
        pod_spec(&obj(json!({"spec": {}})), "spec.template.spec", &mut errs);
        assert_eq!(shown(&errs), ["spec.template.spec: Required value"]);
        immutable(&obj(json!({"spec": {"a": 1}})), Some(&obj(json!({"spec": {"a": 2}}))), "spec.a", &mut errs);
        assert_eq!(errs[1].to_string(), "spec.a: Invalid value: 1: field is immutable");
    }
}
