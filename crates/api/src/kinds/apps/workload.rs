//! What the apps workloads (ReplicaSet, StatefulSet, DaemonSet) share beyond
//! `kinds::common`, as kube's `pkg/apis/apps/validation` and printers hold it: a pod
//! template that must restart `Always` and run without a deadline, int-or-percent fields
//! (also the PodDisruptionBudget's), and a selector cell as `metav1.FormatLabelSelector`
//! prints it.

use serde_json::{Map, Value};

use crate::kinds::common::{at, pod_spec};
use crate::kinds::printing::label_selector_string;
use crate::kinds::Object;
use crate::validation::{BadValue, FieldError, NON_NEGATIVE};

/// apimachinery's `IsValidPercent` message.
const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  \
                           or '93%', regex used for validation is '[0-9]+%')";

/// A template's pod spec as a controller of always-running pods needs it (kube's
/// `ValidatePodTemplateSpecForReplicaSet` and the DaemonSet/StatefulSet equivalents): the
/// pod spec basics, `restartPolicy: Always` and no `activeDeadlineSeconds`. `kind` names
/// the kind in the deadline message (`ReplicaSet`).
pub(crate) fn always_running_template(obj: &Object, kind: &str, errs: &mut Vec<FieldError>) {
    pod_spec(obj, "spec.template.spec", errs);
    // pod_spec_defaults makes an absent policy `Always`, as kube's defaulting does.
    if let Some(policy) = at(obj, "spec.template.spec.restartPolicy").and_then(Value::as_str) {
        if policy != "Always" {
            errs.push(FieldError::not_supported("spec.template.spec.restartPolicy", policy, &["Always"]));
        }
    }
    if at(obj, "spec.template.spec.activeDeadlineSeconds").is_some() {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}

/// The value at `path` as Go's `%#v` prints an `intstr.IntOrString` in an error.
pub(crate) fn int_or_string_value(v: &Value) -> BadValue {
    BadValue::Raw(match v.as_str() {
        Some(s) => format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{s:?}}}"),
        None => format!("intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}", v.as_i64().unwrap_or(0)),
    })
}

/// The number an int-or-percent means (`getIntOrPercentValue`): the percentage of a valid
/// percent string, an integer as is, anything else 0.
pub(crate) fn int_or_percent_value(v: &Value) -> i64 {
    match v.as_str() {
        Some(s) => s.strip_suffix('%').filter(|n| is_digits(n)).or(Some(s)).and_then(|n| n.parse().ok()).unwrap_or(0),
        None => v.as_i64().unwrap_or(0),
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// An int-or-percent at `path` that is negative, a malformed percentage or over 100%
/// (kube's `ValidatePositiveIntOrPercent` then `IsNotMoreThan100Percent`). Absent is fine.
pub(crate) fn int_or_percent(obj: &Object, path: &str, errs: &mut Vec<FieldError>) {
    let Some(v) = at(obj, path) else { return };
    match v.as_str() {
        Some(s) => match s.strip_suffix('%').filter(|n| is_digits(n)) {
            None => errs.push(FieldError::invalid_value(path, int_or_string_value(v), PERCENT_MSG)),
            Some(n) if n.parse::<u64>().is_ok_and(|n| n > 100) => {
                errs.push(FieldError::invalid_value(path, int_or_string_value(v), "must not be greater than 100%"))
            }
            Some(_) => {}
        },
        None => {
            if let Some(n) = v.as_i64().filter(|n| *n < 0) {
                errs.push(FieldError::invalid_value(path, BadValue::Raw(n.to_string()), NON_NEGATIVE));
            }
        }
    }
}

/// A `metav1.LabelSelector` as `metav1.FormatLabelSelector` prints it: `<none>` when it
/// selects by nothing, `<error>` when it does not convert.
pub(crate) fn selector_cell(sel: Option<&Value>) -> String {
    match label_selector_string(sel).as_str() {
        "" => "<none>".into(),
        "<invalid>" => "<error>".into(),
        s => s.into(),
    }
}

/// `spec` without the fields an update may change: what must stay as it was.
pub(crate) fn spec_without(obj: &Object, mutable: &[&str]) -> Map<String, Value> {
    let mut spec = obj.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
    spec.retain(|k, v| !mutable.contains(&k.as_str()) && !v.is_null());
    spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(v: Value, path: &str) -> Vec<String> {
        let mut errs = Vec::new();
        int_or_percent(v.as_object().unwrap(), path, &mut errs);
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn int_or_percent_as_kube_checks_it() {
        assert!(shown(json!({"a": "25%"}), "a").is_empty());
        assert!(shown(json!({"a": 0}), "a").is_empty());
        assert_eq!(shown(json!({"a": -1}), "a"), ["a: Invalid value: -1: must be greater than or equal to 0"]);
        assert_eq!(
            shown(json!({"a": "150%"}), "a"),
            [r#"a: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%"#]
        );
        assert!(shown(json!({"a": "half"}), "a")[0].ends_with("regex used for validation is '[0-9]+%')"));
        assert_eq!(int_or_percent_value(&json!("30%")), 30);
        assert_eq!(int_or_percent_value(&json!("3")), 3);
        assert_eq!(int_or_percent_value(&json!(2)), 2);
    }

    #[test]
    fn selector_cells() {
        assert_eq!(selector_cell(None), "<none>");
        assert_eq!(selector_cell(Some(&json!({}))), "<none>");
        assert_eq!(selector_cell(Some(&json!({"matchLabels": {"app": "web"}}))), "app=web");
    }
}
