//! HorizontalPodAutoscaler at autoscaling/v1: stored as autoscaling/v2 and converted as
//! kube converts it. v1 has one target, `targetCPUUtilizationPercentage`; every other
//! metric, the current metrics, the conditions and the behavior travel in kube's
//! round-trip annotations (`autoscaling.alpha.kubernetes.io/...`, in v1's own metric
//! form), so a write through v1 loses nothing a v2 client set.

use serde_json::{json, Map, Value};

use crate::kinds::autoscaling::horizontalpodautoscaler::{HorizontalPodAutoscaler, DEF as V2};
use crate::kinds::converted::ServedAs;
use crate::kinds::{child, set_default, Object};
use crate::registry::ResourceDef;

pub static DEF: ResourceDef = ResourceDef { version: "v1", ..V2 };

pub static HPA_V1: ServedAs = ServedAs {
    def: &DEF,
    stored: &HorizontalPodAutoscaler,
    to_stored,
    from_stored,
    defaults,
    validate: |_, _| Vec::new(),
    selectable_fields: &[],
    field_paths: &[],
};

/// `autoscaling.MetricSpecsAnnotation`: the metrics other than the CPU utilization target.
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// `autoscaling.MetricStatusesAnnotation`: every current metric.
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// `autoscaling.HorizontalPodAutoscalerConditionsAnnotation`.
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// `autoscaling.BehaviorSpecsAnnotation`.
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
/// What v1 means by no target at all (`autoscaling.DefaultCPUUtilization`).
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// autoscaling/v1's `SetDefaults_HorizontalPodAutoscaler`.
fn defaults(obj: &mut Object) {
    if let Some(spec) = child(obj, "spec") {
        set_default(spec, "minReplicas", json!(1));
    }
}

fn is_cpu_resource(m: &Value) -> bool {
    m["type"] == "Resource" && m["resource"]["name"] == "cpu"
}

/// A quantity field Go always writes: its value, or the zero quantity.
fn quantity(v: &Value) -> Value {
    if v.is_null() {
        json!("0")
    } else {
        v.clone()
    }
}

/// An object of the given fields, the null ones left out (Go's `omitempty`).
fn fields<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.to_string(), v)).collect())
}

fn metric_identifier(name: &Value, selector: &Value) -> Value {
    fields([("name", name.clone()), ("selector", selector.clone())])
}

/// A target of `type` with the values given.
fn target(ty: &str, value: &Value, average_value: &Value, average_utilization: &Value) -> Value {
    fields([
        ("type", json!(ty)),
        ("value", value.clone()),
        ("averageValue", average_value.clone()),
        ("averageUtilization", average_utilization.clone()),
    ])
}

/// A v2 `MetricSpec` in v1's annotation form.
fn metric_spec_to_v1(m: &Value) -> Value {
    let ty = m["type"].as_str().unwrap_or_default();
    let source = match ty {
        "Object" => {
            let o = &m["object"];
            fields([
                ("target", o["describedObject"].clone()),
                ("metricName", o["metric"]["name"].clone()),
                ("targetValue", quantity(&o["target"]["value"])),
                ("selector", o["metric"]["selector"].clone()),
                ("averageValue", o["target"]["averageValue"].clone()),
            ])
        }
        "Pods" => {
            let p = &m["pods"];
            fields([
                ("metricName", p["metric"]["name"].clone()),
                ("targetAverageValue", quantity(&p["target"]["averageValue"])),
                ("selector", p["metric"]["selector"].clone()),
            ])
        }
        "Resource" | "ContainerResource" => {
            let r = if ty == "Resource" { &m["resource"] } else { &m["containerResource"] };
            fields([
                ("name", r["name"].clone()),
                ("targetAverageUtilization", r["target"]["averageUtilization"].clone()),
                ("targetAverageValue", r["target"]["averageValue"].clone()),
                ("container", r["container"].clone()),
            ])
        }
        "External" => {
            let e = &m["external"];
            fields([
                ("metricName", e["metric"]["name"].clone()),
                ("metricSelector", e["metric"]["selector"].clone()),
                ("targetValue", e["target"]["value"].clone()),
                ("targetAverageValue", e["target"]["averageValue"].clone()),
            ])
        }
        _ => Value::Null,
    };
    with_source(ty, source)
}

/// A v1 annotation `MetricSpec` in v2's form.
fn metric_spec_to_v2(m: &Value) -> Value {
    let ty = m["type"].as_str().unwrap_or_default();
    let source = match ty {
        "Object" => {
            let o = &m["object"];
            let kind = if o["averageValue"].is_null() { "Value" } else { "AverageValue" };
            fields([
                ("describedObject", o["target"].clone()),
                ("target", target(kind, &quantity(&o["targetValue"]), &o["averageValue"], &Value::Null)),
                ("metric", metric_identifier(&o["metricName"], &o["selector"])),
            ])
        }
        "Pods" => {
            let p = &m["pods"];
            fields([
                ("metric", metric_identifier(&p["metricName"], &p["selector"])),
                ("target", target("AverageValue", &Value::Null, &quantity(&p["targetAverageValue"]), &Value::Null)),
            ])
        }
        "Resource" | "ContainerResource" => {
            let r = if ty == "Resource" { &m["resource"] } else { &m["containerResource"] };
            let utilization = &r["targetAverageUtilization"];
            let kind = if utilization.is_null() { "AverageValue" } else { "Utilization" };
            fields([
                ("name", r["name"].clone()),
                ("target", target(kind, &Value::Null, &r["targetAverageValue"], utilization)),
                ("container", r["container"].clone()),
            ])
        }
        "External" => {
            let e = &m["external"];
            let kind = if e["targetValue"].is_null() { "AverageValue" } else { "Value" };
            fields([
                ("metric", metric_identifier(&e["metricName"], &e["metricSelector"])),
                ("target", target(kind, &e["targetValue"], &e["targetAverageValue"], &Value::Null)),
            ])
        }
        _ => Value::Null,
    };
    with_source(ty, source)
}

/// A v2 `MetricStatus` in v1's annotation form.
fn metric_status_to_v1(m: &Value) -> Value {
    let ty = m["type"].as_str().unwrap_or_default();
    let source = match ty {
        "Object" => {
            let o = &m["object"];
            fields([
                ("target", o["describedObject"].clone()),
                ("metricName", o["metric"]["name"].clone()),
                ("currentValue", quantity(&o["current"]["value"])),
                ("selector", o["metric"]["selector"].clone()),
                ("averageValue", o["current"]["averageValue"].clone()),
            ])
        }
        "Pods" => {
            let p = &m["pods"];
            fields([
                ("metricName", p["metric"]["name"].clone()),
                ("currentAverageValue", quantity(&p["current"]["averageValue"])),
                ("selector", p["metric"]["selector"].clone()),
            ])
        }
        "Resource" | "ContainerResource" => {
            let r = if ty == "Resource" { &m["resource"] } else { &m["containerResource"] };
            fields([
                ("name", r["name"].clone()),
                ("currentAverageUtilization", r["current"]["averageUtilization"].clone()),
                ("currentAverageValue", quantity(&r["current"]["averageValue"])),
                ("container", r["container"].clone()),
            ])
        }
        "External" => {
            let e = &m["external"];
            fields([
                ("metricName", e["metric"]["name"].clone()),
                ("metricSelector", e["metric"]["selector"].clone()),
                ("currentValue", quantity(&e["current"]["value"])),
                ("currentAverageValue", e["current"]["averageValue"].clone()),
            ])
        }
        _ => Value::Null,
    };
    with_source(ty, source)
}

/// A v1 annotation `MetricStatus` in v2's form.
fn metric_status_to_v2(m: &Value) -> Value {
    let ty = m["type"].as_str().unwrap_or_default();
    let current = |value: &Value, average: &Value, utilization: &Value| {
        fields([
            ("value", value.clone()),
            ("averageValue", average.clone()),
            ("averageUtilization", utilization.clone()),
        ])
    };
    let source = match ty {
        "Object" => {
            let o = &m["object"];
            fields([
                ("metric", metric_identifier(&o["metricName"], &o["selector"])),
                ("current", current(&quantity(&o["currentValue"]), &o["averageValue"], &Value::Null)),
                ("describedObject", o["target"].clone()),
            ])
        }
        "Pods" => {
            let p = &m["pods"];
            fields([
                ("metric", metric_identifier(&p["metricName"], &p["selector"])),
                ("current", current(&Value::Null, &quantity(&p["currentAverageValue"]), &Value::Null)),
            ])
        }
        "Resource" | "ContainerResource" => {
            let r = if ty == "Resource" { &m["resource"] } else { &m["containerResource"] };
            fields([
                ("name", r["name"].clone()),
                (
                    "current",
                    current(&Value::Null, &quantity(&r["currentAverageValue"]), &r["currentAverageUtilization"]),
                ),
                ("container", r["container"].clone()),
            ])
        }
        "External" => {
            let e = &m["external"];
            fields([
                ("metric", metric_identifier(&e["metricName"], &e["metricSelector"])),
                ("current", current(&quantity(&e["currentValue"]), &e["currentAverageValue"], &Value::Null)),
            ])
        }
        _ => Value::Null,
    };
    with_source(ty, source)
}

/// `{"type": ty, "<source field of ty>": source}`.
fn with_source(ty: &str, source: Value) -> Value {
    let field = match ty {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "External" => "external",
        _ => return json!({"type": ty}),
    };
    let mut m = Map::new();
    m.insert("type".into(), json!(ty));
    m.insert(field.into(), source);
    Value::Object(m)
}

fn annotations(obj: &mut Object) -> &mut Map<String, Value> {
    let meta = obj.entry("metadata").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    let a = meta.as_object_mut().expect("an object").entry("annotations").or_insert_with(|| json!({}));
    if !a.is_object() {
        *a = json!({});
    }
    a.as_object_mut().expect("an object")
}

/// Removes the annotation `key`, parsed as JSON (`None` if absent or not JSON).
fn take_annotation(obj: &mut Object, key: &str) -> Option<Value> {
    let text = annotations(obj).remove(key)?;
    serde_json::from_str(text.as_str()?).ok()
}

/// Drops an `annotations` map left empty, as Go omits it.
fn drop_empty_annotations(obj: &mut Object) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta.get("annotations").and_then(Value::as_object).is_some_and(Map::is_empty) {
            meta.remove("annotations");
        }
    }
}

fn set_annotation(obj: &mut Object, key: &str, value: &Value) {
    annotations(obj).insert(key.into(), Value::String(value.to_string()));
}

/// autoscaling/v1 to the stored autoscaling/v2 form.
fn to_stored(obj: &mut Object) {
    let other_metrics = take_annotation(obj, METRICS);
    let current_metrics = take_annotation(obj, CURRENT_METRICS);
    let conditions = take_annotation(obj, CONDITIONS);
    let behavior = take_annotation(obj, BEHAVIOR);
    drop_empty_annotations(obj);

    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let mut metrics: Vec<Value> = other_metrics
        .as_ref()
        .and_then(Value::as_array)
        .map_or(Vec::new(), |ms| ms.iter().map(metric_spec_to_v2).collect());
    if let Some(cpu) = spec.get("targetCPUUtilizationPercentage").filter(|v| !v.is_null()) {
        metrics.push(json!({"type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}}}));
    }
    if metrics.is_empty() {
        // v1 without a target meant 80% CPU; v2 says so.
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}));
    }
    let behavior = behavior.filter(|b| b.as_object().is_some_and(|m| !m.is_empty()));
    let new_spec = fields([
        ("scaleTargetRef", spec["scaleTargetRef"].clone()),
        ("minReplicas", spec["minReplicas"].clone()),
        ("maxReplicas", spec["maxReplicas"].clone()),
        ("metrics", Value::Array(metrics)),
        ("behavior", behavior.unwrap_or(Value::Null)),
    ]);
    obj.insert("spec".into(), new_spec);

    if let Some(status) = obj.get("status").filter(|s| s.is_object()).cloned() {
        let current = match current_metrics.as_ref().and_then(Value::as_array) {
            Some(ms) => Value::Array(ms.iter().map(metric_status_to_v2).collect()),
            None => match status.get("currentCPUUtilizationPercentage").filter(|v| !v.is_null()) {
                Some(cpu) => json!([{"type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": cpu}}}]),
                None => Value::Null,
            },
        };
        let new_status = fields([
            ("observedGeneration", status["observedGeneration"].clone()),
            ("lastScaleTime", status["lastScaleTime"].clone()),
            ("currentReplicas", status["currentReplicas"].clone()),
            ("desiredReplicas", status["desiredReplicas"].clone()),
            ("currentMetrics", current),
            ("conditions", conditions.unwrap_or(Value::Null)),
        ]);
        obj.insert("status".into(), new_status);
    }
}

/// The stored autoscaling/v2 form to autoscaling/v1.
fn from_stored(obj: &mut Object) {
    // Only the annotations this conversion writes carry round-trip data.
    for key in [METRICS, CURRENT_METRICS, CONDITIONS, BEHAVIOR] {
        annotations(obj).remove(key);
    }
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let metrics = spec["metrics"].as_array().cloned().unwrap_or_default();
    let cpu_target =
        metrics.iter().find(|m| is_cpu_resource(m)).map(|m| m["resource"]["target"]["averageUtilization"].clone());
    let other: Vec<Value> = metrics
        .iter()
        .filter(|m| !(is_cpu_resource(m) && !m["resource"]["target"]["averageUtilization"].is_null()))
        .map(metric_spec_to_v1)
        .collect();
    if !other.is_empty() {
        set_annotation(obj, METRICS, &Value::Array(other));
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        set_annotation(obj, BEHAVIOR, behavior);
    }
    obj.insert(
        "spec".into(),
        fields([
            ("scaleTargetRef", spec["scaleTargetRef"].clone()),
            ("minReplicas", spec["minReplicas"].clone()),
            ("maxReplicas", spec["maxReplicas"].clone()),
            ("targetCPUUtilizationPercentage", cpu_target.unwrap_or(Value::Null)),
        ]),
    );

    if let Some(status) = obj.get("status").filter(|s| s.is_object()).cloned() {
        let current = status["currentMetrics"].as_array().cloned().unwrap_or_default();
        let cpu_current = current
            .iter()
            .find(|m| is_cpu_resource(m) && !m["resource"]["current"]["averageUtilization"].is_null())
            .map(|m| m["resource"]["current"]["averageUtilization"].clone());
        if !current.is_empty() {
            set_annotation(obj, CURRENT_METRICS, &Value::Array(current.iter().map(metric_status_to_v1).collect()));
        }
        if let Some(conditions) = status["conditions"].as_array().filter(|c| !c.is_empty()) {
            set_annotation(obj, CONDITIONS, &Value::Array(conditions.clone()));
        }
        obj.insert(
            "status".into(),
            fields([
                ("observedGeneration", status["observedGeneration"].clone()),
                ("lastScaleTime", status["lastScaleTime"].clone()),
                ("currentReplicas", quantity_int(&status["currentReplicas"])),
                ("desiredReplicas", quantity_int(&status["desiredReplicas"])),
                ("currentCPUUtilizationPercentage", cpu_current.unwrap_or(Value::Null)),
            ]),
        );
    }
    drop_empty_annotations(obj);
}

/// An int32 Go always writes (`currentReplicas`, `desiredReplicas`): its value, or 0.
fn quantity_int(v: &Value) -> Value {
    if v.is_null() {
        json!(0)
    } else {
        v.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Strategy;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_cpu_target_is_v2s_cpu_utilization_metric_and_back() {
        let mut o = obj(json!({"metadata": {"name": "web"}, "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 60}}));
        let sent = o.clone();
        to_stored(&mut o);
        assert_eq!(
            o["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 60}}}])
        );
        from_stored(&mut o);
        assert_eq!(o, sent);
    }

    #[test]
    fn no_target_is_80_percent_cpu() {
        let mut o = obj(json!({"metadata": {"name": "web"}, "spec": {"maxReplicas": 5}}));
        to_stored(&mut o);
        assert_eq!(o["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], json!(80));
    }

    #[test]
    fn what_v1_cannot_say_survives_a_round_trip_through_v1() {
        let v2 = obj(json!({"metadata": {"name": "web", "annotations": {"team": "a"}}, "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
            "metrics": [
                {"type": "Pods", "pods": {"metric": {"name": "qps"},
                    "target": {"type": "AverageValue", "averageValue": "10"}}},
                {"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "External", "external": {"metric": {"name": "queue"},
                    "target": {"type": "Value", "value": "30"}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}},
            "status": {"currentReplicas": 2, "desiredReplicas": 3,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageValue": "200m", "averageUtilization": 40}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}]}}));
        let mut v1 = v2.clone();
        from_stored(&mut v1);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], json!(50));
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], json!(40));
        let other: Value = serde_json::from_str(v1["metadata"]["annotations"][METRICS].as_str().unwrap()).unwrap();
        assert_eq!(other[0], json!({"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}));
        assert_eq!(v1["metadata"]["annotations"]["team"], json!("a"));
        let mut back = v1.clone();
        to_stored(&mut back);
        // The CPU target comes back after the others, as kube puts it.
        let metrics = back["spec"]["metrics"].as_array().unwrap();
        assert_eq!(metrics.len(), 3);
        assert_eq!(metrics[0], v2["spec"]["metrics"][0]);
        assert_eq!(metrics[1], v2["spec"]["metrics"][2]);
        assert_eq!(metrics[2], v2["spec"]["metrics"][1]);
        assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
        assert_eq!(back["status"], v2["status"]);
        assert_eq!(back["metadata"], v2["metadata"]);
    }

    #[test]
    fn validation_names_the_stored_fields_as_kube_does() {
        let created = obj(json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                "targetCPUUtilizationPercentage": 0}}));
        let errs = HPA_V1.validate(&created, None);
        assert!(errs.iter().any(|e| e.field == "spec.metrics[0].resource.target.averageUtilization"), "{errs:?}");
    }
}
