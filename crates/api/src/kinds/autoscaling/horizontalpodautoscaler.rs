//! HorizontalPodAutoscaler (autoscaling/v2, kube's preferred and storage version; v1 is
//! converted to it, `horizontalpodautoscaler_v1.rs`): tracks generation; status
//! subresource; defaults for minReplicas, the 80% CPU metric and scaling behavior; each
//! metric needs its one source and a valid target; printed with its reference and targets.

use serde_json::{json, Value};

use crate::kinds::common::at;
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{is_dns1123_label, is_valid_path_segment_name, BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "autoscaling",
    version: "v2",
    kind: "HorizontalPodAutoscaler",
    plural: "horizontalpodautoscalers",
    singular: "horizontalpodautoscaler",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &["hpa"],
    categories: &["all"],
    subresources: &[STATUS],
    list_kind: "HorizontalPodAutoscalerList",
    tracks_generation: true,
};

/// The columns' descriptions are the autoscaling/v2 SwaggerDoc strings.
const HPA_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Reference",
        "string",
        "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be \
         collected, as well as to actually change the replica count.",
    ),
    col(
        "Targets",
        "string",
        "metrics contains the specifications for which to use to calculate the desired replica count (the maximum \
         replica count across all metrics will be used).  The desired replica count is calculated multiplying the \
         ratio between the target value and the current value by the current number of pods.  Ergo, metrics used \
         must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for \
         more information about how each type of metric must respond. If not set, the default metric will be set \
         to 80% average CPU utilization.",
    ),
    col(
        "MinPods",
        "string",
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It \
         defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and \
         at least one Object or External metric is configured.  Scaling is active as long as at least one metric \
         value is available.",
    ),
    col(
        "MaxPods",
        "string",
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot \
         be less that minReplicas.",
    ),
    col(
        "Replicas",
        "string",
        "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the \
         autoscaler.",
    ),
    AGE,
];

/// kube's `MaxPeriodSeconds` and `MaxStabilizationWindowSeconds`.
const MAX_PERIOD_SECONDS: i64 = 1800;
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;

/// Sorted, as kube lists supported values.
const METRIC_SOURCE_TYPES: &[&str] = &["ContainerResource", "External", "Object", "Pods", "Resource"];
const SELECT_POLICIES: &[&str] = &["Disabled", "Max", "Min"];
const POLICY_TYPES: &[&str] = &["Percent", "Pods"];

/// The metric sources, in the order kube checks them; only the first one present is
/// validated.
const SOURCES: &[(&str, &str)] = &[
    ("object", "Object"),
    ("external", "External"),
    ("pods", "Pods"),
    ("resource", "Resource"),
    ("containerResource", "ContainerResource"),
];

pub struct HorizontalPodAutoscaler;

impl Strategy for HorizontalPodAutoscaler {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// `SetDefaults_HorizontalPodAutoscaler` of autoscaling/v2.
    fn defaults(&self, obj: &mut Object) {
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "minReplicas", json!(1));
        // No metrics (absent, null or empty) means 80% average CPU utilization.
        if spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            spec.insert(
                "metrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]),
            );
        }
        // A behavior, once set, gets both directions filled in, field by field.
        if let Some(behavior) = child(spec, "behavior") {
            set_default(behavior, "scaleUp", json!({}));
            if let Some(up) = child(behavior, "scaleUp") {
                set_default(up, "stabilizationWindowSeconds", json!(0));
                set_default(up, "selectPolicy", json!("Max"));
                set_default(
                    up,
                    "policies",
                    json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                           {"type": "Percent", "value": 100, "periodSeconds": 15}]),
                );
            }
            // Scale-down's window stays unset: the controller manager's flag decides it.
            set_default(behavior, "scaleDown", json!({}));
            if let Some(down) = child(behavior, "scaleDown") {
                set_default(down, "selectPolicy", json!("Max"));
                set_default(down, "policies", json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]));
            }
        }
    }

    /// A create cannot set status (an empty status still shows `desiredReplicas: 0`).
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({"desiredReplicas": 0}));
    }

    /// kube's `validateHorizontalPodAutoscalerSpec`. `minReplicas: 0` needs the
    /// HPAScaleToZero gate (off), except on an update of an autoscaler that has it already.
    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let empty = Object::new();
        let spec = at(obj, "spec").and_then(Value::as_object).unwrap_or(&empty);
        let old_min = old.and_then(|o| at(o, "spec.minReplicas")).and_then(Value::as_i64);
        let min_lower_bound = if old_min == Some(0) { 0 } else { 1 };

        let min = spec.get("minReplicas").and_then(Value::as_i64);
        let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
        if let Some(min) = min.filter(|m| *m < min_lower_bound) {
            errs.push(FieldError::invalid_value(
                "spec.minReplicas",
                BadValue::Raw(min.to_string()),
                format!("must be greater than or equal to {min_lower_bound}"),
            ));
        }
        if max < 1 {
            errs.push(FieldError::invalid_value(
                "spec.maxReplicas",
                BadValue::Raw(max.to_string()),
                "must be greater than 0",
            ));
        }
        if min.is_some_and(|min| max < min) {
            errs.push(FieldError::invalid_value(
                "spec.maxReplicas",
                BadValue::Raw(max.to_string()),
                "must be greater than or equal to `minReplicas`",
            ));
        }
        object_reference(spec.get("scaleTargetRef"), "spec.scaleTargetRef", &mut errs);
        metrics(spec, min, &mut errs);
        if let Some(behavior) = spec.get("behavior").filter(|b| b.is_object()) {
            for direction in ["scaleUp", "scaleDown"] {
                if let Some(rules) = behavior.get(direction).filter(|r| r.is_object()) {
                    scaling_rules(rules, &format!("spec.behavior.{direction}"), &mut errs);
                }
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        HPA_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let reference =
            format!("{}/{}", str_at(obj, "/spec/scaleTargetRef/kind"), str_at(obj, "/spec/scaleTargetRef/name"));
        let min_pods = obj
            .pointer("/spec/minReplicas")
            .filter(|m| !m.is_null())
            .map_or_else(|| "<unset>".to_string(), |m| int_of(Some(m)).to_string());
        Row::plain(vec![
            name(obj).into(),
            reference.into(),
            targets(arr_at(obj, "/spec/metrics"), arr_at(obj, "/status/currentMetrics")).into(),
            min_pods.into(),
            int_at(obj, "/spec/maxReplicas").into(),
            int_at(obj, "/status/currentReplicas").into(),
            age(obj, now).into(),
        ])
    }
}

/// kube's `ValidateCrossVersionObjectReference`: kind and name required, each a valid
/// path segment.
fn object_reference(r: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) {
    for field in ["kind", "name"] {
        let value = r.and_then(|r| r.get(field)).and_then(Value::as_str).unwrap_or("");
        let p = format!("{path}.{field}");
        if value.is_empty() {
            errs.push(FieldError::required(&p, ""));
        }
        for msg in is_valid_path_segment_name(value).into_iter().filter(|_| !value.is_empty()) {
            errs.push(FieldError::invalid(&p, value, msg));
        }
    }
}

/// Each metric; scaling to zero needs an Object or External metric.
fn metrics(spec: &Object, min: Option<i64>, errs: &mut Vec<FieldError>) {
    let list = spec.get("metrics").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    for (i, m) in list.iter().enumerate() {
        metric(m, &format!("spec.metrics[{i}]"), errs);
    }
    let scales_on_objects =
        list.iter().any(|m| matches!(m.get("type").and_then(Value::as_str), Some("Object" | "External")));
    if min == Some(0) && !scales_on_objects {
        errs.push(FieldError::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
}

/// kube's `validateMetricSpec`: a supported type, and exactly the source it names.
fn metric(m: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    if ty.is_empty() {
        errs.push(FieldError::required(&format!("{path}.type"), "must specify a metric source type"));
    }
    // kube reports an unsupported type twice (set check and switch); one error says it.
    if !METRIC_SOURCE_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(&format!("{path}.type"), ty, METRIC_SOURCE_TYPES));
    }
    let present: Vec<&str> =
        SOURCES.iter().map(|(field, _)| *field).filter(|f| m.get(*f).is_some_and(Value::is_object)).collect();
    if let Some(first) = present.first() {
        let src = &m[*first];
        let p = format!("{path}.{first}");
        match *first {
            "object" => object_source(src, &p, errs),
            "external" => external_source(src, &p, errs),
            "pods" => pods_source(src, &p, errs),
            "resource" => resource_source(src, &p, false, errs),
            _ => resource_source(src, &p, true, errs),
        }
    }
    let expected = SOURCES.iter().find(|(_, t)| *t == ty).map(|(field, _)| *field);
    if let Some(expected) = expected.filter(|e| !present.contains(e)) {
        errs.push(FieldError::required(
            &format!("{path}.{expected}"),
            "must populate information for the given metric source",
        ));
    }
    if present.len() != 1 {
        for other in present.iter().filter(|f| Some(**f) != expected) {
            errs.push(FieldError::forbidden(&format!("{path}.{other}"), "must populate the given metric source only"));
        }
    }
}

fn object_source(src: &Value, path: &str, errs: &mut Vec<FieldError>) {
    object_reference(src.get("describedObject"), &format!("{path}.describedObject"), errs);
    metric_identifier(src, path, errs);
    let target = metric_target(src, path, errs);
    if !target.has("value") && !target.has("averageValue") {
        errs.push(FieldError::required(
            &format!("{path}.target.averageValue"),
            "must set either a target value or averageValue",
        ));
    }
}

fn external_source(src: &Value, path: &str, errs: &mut Vec<FieldError>) {
    metric_identifier(src, path, errs);
    let target = metric_target(src, path, errs);
    match (target.has("value"), target.has("averageValue")) {
        (false, false) => errs.push(FieldError::required(
            &format!("{path}.target.averageValue"),
            "must set either a target value for metric or a per-pod target",
        )),
        (true, true) => errs.push(FieldError::forbidden(
            &format!("{path}.target.value"),
            "may not set both a target value for metric and a per-pod target",
        )),
        _ => {}
    }
}

fn pods_source(src: &Value, path: &str, errs: &mut Vec<FieldError>) {
    metric_identifier(src, path, errs);
    if !metric_target(src, path, errs).has("averageValue") {
        errs.push(FieldError::required(
            &format!("{path}.target.averageValue"),
            "must specify a positive target averageValue",
        ));
    }
}

/// A Resource source, or a ContainerResource one (which also names its container).
fn resource_source(src: &Value, path: &str, container: bool, errs: &mut Vec<FieldError>) {
    if src.get("name").and_then(Value::as_str).unwrap_or("").is_empty() {
        errs.push(FieldError::required(&format!("{path}.name"), "must specify a resource name"));
    }
    if container {
        let name = src.get("container").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            errs.push(FieldError::required(&format!("{path}.container"), "must specify a container"));
        }
        for msg in is_dns1123_label(name).into_iter().filter(|_| !name.is_empty()) {
            errs.push(FieldError::invalid(&format!("{path}.container"), name, msg));
        }
    }
    let target = metric_target(src, path, errs);
    match (target.has("averageUtilization"), target.has("averageValue")) {
        (false, false) => errs.push(FieldError::required(
            &format!("{path}.target.averageUtilization"),
            "must set either a target raw value or a target utilization",
        )),
        (true, true) => errs.push(FieldError::forbidden(
            &format!("{path}.target.averageValue"),
            "may not set both a target raw value and a target utilization",
        )),
        _ => {}
    }
}

/// kube's `validateMetricIdentifier` of `<path>.metric`.
fn metric_identifier(src: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let name = src.pointer("/metric/name").and_then(Value::as_str).unwrap_or("");
    let p = format!("{path}.metric.name");
    if name.is_empty() {
        errs.push(FieldError::required(&p, "must specify a metric name"));
    }
    for msg in is_valid_path_segment_name(name).into_iter().filter(|_| !name.is_empty()) {
        errs.push(FieldError::invalid(&p, name, msg));
    }
}

/// The fields a metric target sets.
struct Target<'a>(Option<&'a Value>);

impl Target<'_> {
    fn has(&self, field: &str) -> bool {
        self.0.and_then(|t| t.get(field)).is_some_and(|v| !v.is_null())
    }
}

/// kube's `validateMetricTarget` of `<path>.target`: a known type, positive values.
fn metric_target<'a>(src: &'a Value, path: &str, errs: &mut Vec<FieldError>) -> Target<'a> {
    let target = src.get("target").filter(|t| t.is_object());
    let p = format!("{path}.target");
    let ty = target.and_then(|t| t.get("type")).and_then(Value::as_str).unwrap_or("");
    if ty.is_empty() {
        errs.push(FieldError::required(&format!("{p}.type"), "must specify a metric target type"));
    }
    if !["Utilization", "Value", "AverageValue"].contains(&ty) {
        errs.push(FieldError::invalid(&format!("{p}.type"), ty, "must be either Utilization, Value, or AverageValue"));
    }
    for field in ["value", "averageValue"] {
        if let Some(q) = target.and_then(|t| t.get(field)).filter(|q| !q.is_null() && !is_positive_quantity(q)) {
            errs.push(FieldError::invalid_value(
                &format!("{p}.{field}"),
                BadValue::Raw(quantity_text(q)),
                "must be positive",
            ));
        }
    }
    if let Some(u) = target.and_then(|t| t.get("averageUtilization")).and_then(Value::as_i64).filter(|u| *u < 1) {
        errs.push(FieldError::invalid_value(
            &format!("{p}.averageUtilization"),
            BadValue::Raw(u.to_string()),
            "must be greater than 0",
        ));
    }
    Target(target)
}

/// kube's `validateScalingRules` of one direction of `spec.behavior`.
fn scaling_rules(rules: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if let Some(w) = rules.get("stabilizationWindowSeconds").and_then(Value::as_i64) {
        let p = format!("{path}.stabilizationWindowSeconds");
        if w < 0 {
            errs.push(FieldError::invalid_value(
                &p,
                BadValue::Raw(w.to_string()),
                "must be greater than or equal to zero",
            ));
        }
        if w > MAX_STABILIZATION_WINDOW_SECONDS {
            errs.push(FieldError::invalid_value(
                &p,
                BadValue::Raw(w.to_string()),
                format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(select) = rules.get("selectPolicy").and_then(Value::as_str).filter(|s| !SELECT_POLICIES.contains(s)) {
        errs.push(FieldError::not_supported(&format!("{path}.selectPolicy"), select, SELECT_POLICIES));
    }
    let policies = rules.get("policies").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    if policies.is_empty() {
        errs.push(FieldError::required(&format!("{path}.policies"), "must specify at least one Policy"));
    }
    for (i, policy) in policies.iter().enumerate() {
        let p = format!("{path}.policies[{i}]");
        let ty = policy.get("type").and_then(Value::as_str).unwrap_or("");
        if !POLICY_TYPES.contains(&ty) {
            errs.push(FieldError::not_supported(&format!("{p}.type"), ty, POLICY_TYPES));
        }
        let value = int_of(policy.get("value"));
        if value <= 0 {
            errs.push(FieldError::invalid_value(
                &format!("{p}.value"),
                BadValue::Raw(value.to_string()),
                "must be greater than zero",
            ));
        }
        let period = int_of(policy.get("periodSeconds"));
        if period <= 0 {
            errs.push(FieldError::invalid_value(
                &format!("{p}.periodSeconds"),
                BadValue::Raw(period.to_string()),
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD_SECONDS {
            errs.push(FieldError::invalid_value(
                &format!("{p}.periodSeconds"),
                BadValue::Raw(period.to_string()),
                format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
}

/// A quantity as stored (a string, or a bare number).
fn quantity_text(q: &Value) -> String {
    q.as_str().map_or_else(|| q.to_string(), str::to_string)
}

/// Whether a quantity is above zero (`Sign() == 1`): no leading `-` and a non-zero digit
/// in its number part.
fn is_positive_quantity(q: &Value) -> bool {
    match q {
        Value::Number(n) => n.as_f64().is_some_and(|f| f > 0.0),
        Value::String(s) => {
            let s = s.trim();
            // The number ends where the suffix (or exponent) starts.
            let number = s.split(|c: char| c.is_ascii_alphabetic()).next().unwrap_or("");
            !number.starts_with('-') && number.bytes().any(|b| (b'1'..=b'9').contains(&b))
        }
        _ => false,
    }
}

/// kube's `formatHPAMetrics`: each metric's `current/target`, the first two shown.
fn targets(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    const SHOWN: usize = 2;
    let q = |v: &Value, ptr: &str| v.pointer(ptr).filter(|q| !q.is_null()).map(quantity_text);
    // Go's nil `*Quantity` prints as `<nil>`.
    let or_nil = |q: Option<String>| q.unwrap_or_else(|| "<nil>".into());
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let status = statuses.get(i);
            let current = |source: &str, ptr: &str| {
                status.and_then(|s| s.get(source)).filter(|s| !s.is_null()).map(|s| or_nil(q(s, ptr)))
            };
            let unknown = |c: Option<String>| c.unwrap_or_else(|| "<unknown>".into());
            match str_at(spec, "/type") {
                ty @ ("External" | "Object") => {
                    let source = if ty == "External" { "/external" } else { "/object" };
                    let field = &source[1..];
                    let src = spec.pointer(source).unwrap_or(&Value::Null);
                    if let Some(avg) = q(src, "/target/averageValue") {
                        // Only a current average counts for an average target.
                        let c = status
                            .and_then(|s| s.get(field))
                            .filter(|s| !s.is_null())
                            .and_then(|s| q(s, "/current/averageValue"));
                        format!("{}/{avg} (avg)", unknown(c))
                    } else {
                        format!("{}/{}", unknown(current(field, "/current/value")), or_nil(q(src, "/target/value")))
                    }
                }
                "Pods" => format!(
                    "{}/{}",
                    unknown(current("pods", "/current/averageValue")),
                    or_nil(q(spec, "/pods/target/averageValue"))
                ),
                ty @ ("Resource" | "ContainerResource") => {
                    let field = if ty == "Resource" { "resource" } else { "containerResource" };
                    let src = spec.get(field).unwrap_or(&Value::Null);
                    let resource = str_at(src, "/name");
                    if let Some(avg) = q(src, "/target/averageValue") {
                        format!("{resource}: {}/{avg}", unknown(current(field, "/current/averageValue")))
                    } else {
                        let c = status
                            .and_then(|s| s.get(field))
                            .and_then(|s| s.pointer("/current/averageUtilization"))
                            .filter(|u| !u.is_null())
                            .map(|u| format!("{}%", int_of(Some(u))));
                        let target = src
                            .pointer("/target/averageUtilization")
                            .filter(|u| !u.is_null())
                            .map_or_else(|| "<auto>".to_string(), |u| format!("{}%", int_of(Some(u))));
                        format!("{resource}: {}/{target}", unknown(c))
                    }
                }
                _ => "<unknown type>".into(),
            }
        })
        .collect();
    let shown = list[..list.len().min(SHOWN)].join(", ");
    if list.len() > SHOWN {
        format!("{shown} + {} more...", list.len() - SHOWN)
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn minimal() -> Object {
        obj(json!({"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5}}))
    }

    #[test]
    fn defaults_give_one_replica_and_cpu_at_80_percent() {
        let mut hpa = minimal();
        HorizontalPodAutoscaler.defaults(&mut hpa);
        assert_eq!(hpa["spec"]["minReplicas"], 1);
        assert_eq!(
            hpa["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}])
        );
        assert!(hpa["spec"].get("behavior").is_none());
        assert!(HorizontalPodAutoscaler.validate(&hpa, None).is_empty());
    }

    #[test]
    fn a_behavior_gets_both_directions_filled_in() {
        let mut hpa = minimal();
        hpa["spec"]["behavior"] = json!({"scaleDown": {"stabilizationWindowSeconds": 60}});
        HorizontalPodAutoscaler.defaults(&mut hpa);
        assert_eq!(
            hpa["spec"]["behavior"],
            json!({
                "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]}
            })
        );
    }

    #[test]
    fn replicas_and_reference_are_checked() {
        let hpa = obj(json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "a/b"},
            "minReplicas": 0, "maxReplicas": 0, "metrics": [{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}}]}}));
        assert_eq!(
            shown(&HorizontalPodAutoscaler.validate(&hpa, None)),
            [
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.maxReplicas: Invalid value: 0: must be greater than 0",
                "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'",
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
            ]
        );
        // An autoscaler that already scales to zero may keep doing so.
        let mut ok = hpa.clone();
        ok["spec"]["maxReplicas"] = json!(3);
        ok["spec"]["scaleTargetRef"]["name"] = json!("web");
        ok["spec"]["metrics"][0] = json!({"type": "External", "external": {"metric": {"name": "queue"},
            "target": {"type": "AverageValue", "averageValue": "30"}}});
        assert!(HorizontalPodAutoscaler.validate(&ok, Some(&ok)).is_empty());
        let mut errs = HorizontalPodAutoscaler.validate(&minimal(), None);
        let mut too_few = minimal();
        too_few["spec"]["minReplicas"] = json!(6);
        errs.extend(HorizontalPodAutoscaler.validate(&too_few, None));
        assert_eq!(
            shown(&errs),
            ["spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"]
        );
    }

    #[test]
    fn each_metric_needs_its_source_and_a_valid_target() {
        let mut hpa = minimal();
        hpa["spec"]["metrics"] = json!([
            {"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Percent", "averageValue": "-1Mi"}}},
            {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "svc"},
                "metric": {"name": "rps"}, "target": {"type": "Value", "averageUtilization": 0}}},
            {"type": "Cpu"},
        ]);
        assert_eq!(
            shown(&HorizontalPodAutoscaler.validate(&hpa, None)),
            [
                "spec.metrics[0].pods: Required value: must populate information for the given metric source",
                "spec.metrics[1].resource.target.type: Invalid value: \"Percent\": must be either Utilization, Value, or AverageValue",
                "spec.metrics[1].resource.target.averageValue: Invalid value: -1Mi: must be positive",
                "spec.metrics[2].object.target.averageUtilization: Invalid value: 0: must be greater than 0",
                "spec.metrics[2].object.target.averageValue: Required value: must set either a target value or averageValue",
                "spec.metrics[3].type: Unsupported value: \"Cpu\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            ]
        );
    }

    #[test]
    fn scaling_policies_are_checked() {
        let mut hpa = minimal();
        hpa["spec"]["behavior"] = json!({"scaleUp": {"stabilizationWindowSeconds": 4000, "selectPolicy": "Avg",
            "policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]}, "scaleDown": {"policies": []}});
        assert_eq!(
            shown(&HorizontalPodAutoscaler.validate(&hpa, None)),
            [
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
                "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Avg\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800",
                "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
            ]
        );
    }

    #[test]
    fn rows_show_reference_and_targets_as_kubectl_does() {
        let mut hpa = minimal();
        hpa.insert("metadata".into(), json!({"name": "web", "creationTimestamp": "2020-01-01T00:00:00Z"}));
        HorizontalPodAutoscaler.defaults(&mut hpa);
        HorizontalPodAutoscaler.prepare_for_create(&mut hpa, "2020-01-01T00:00:00Z");
        let row = HorizontalPodAutoscaler.row(&Value::Object(hpa.clone()), 1_577_836_800 + 90);
        assert_eq!(
            row.cells,
            [
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: <unknown>/80%"),
                json!("1"),
                json!(5),
                json!(0),
                json!("90s")
            ]
        );

        let specs = [
            json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}),
            json!({"type": "Object", "object": {"target": {"type": "AverageValue", "averageValue": "10"}}}),
            json!({"type": "Pods", "pods": {"target": {"type": "AverageValue", "averageValue": "1k"}}}),
        ];
        let statuses =
            [json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 42}}})];
        assert_eq!(targets(&specs, &statuses), "cpu: 42%/60%, <unknown>/10 (avg) + 1 more...");
        assert_eq!(targets(&[], &[]), "<none>");
        let unset = obj(json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}}}));
        assert_eq!(HorizontalPodAutoscaler.row(&Value::Object(unset), 0).cells[3], json!("<unset>"));
    }
}
