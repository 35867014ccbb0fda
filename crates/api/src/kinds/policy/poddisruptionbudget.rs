//! PodDisruptionBudget (policy/v1): tracks generation; status subresource; created with a
//! zero status; at most one of minAvailable and maxUnavailable, each a count or a
//! percentage; a valid selector (its spec may change, as policy/v1 allows); printed with
//! both bounds and the disruptions allowed.

use serde_json::{json, Value};

use crate::kinds::apps::workload::int_or_percent;
use crate::kinds::common::{at, label_selector, one_of};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "policy",
    version: "v1",
    kind: "PodDisruptionBudget",
    plural: "poddisruptionbudgets",
    singular: "poddisruptionbudget",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &["pdb"],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "PodDisruptionBudgetList",
    tracks_generation: true,
};

const PDB_COLUMNS: &[Column] = &[
    NAME,
    col("Min Available", "string", "The minimum number of pods that must be available."),
    col("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
    AGE,
];

pub struct PodDisruptionBudget;

impl Strategy for PodDisruptionBudget {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert(
            "status".into(),
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}),
        );
    }

    /// kube's `ValidatePodDisruptionBudgetSpec`.
    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let (Some(_), Some(_)) = (at(obj, "spec.minAvailable"), at(obj, "spec.maxUnavailable")) {
            errs.push(FieldError::invalid_value(
                "spec",
                BadValue::of_json(at(obj, "spec").unwrap_or(&Value::Null)),
                "minAvailable and maxUnavailable cannot be both set",
            ));
        }
        int_or_percent(obj, "spec.minAvailable", &mut errs);
        int_or_percent(obj, "spec.maxUnavailable", &mut errs);
        if let Some(selector) = at(obj, "spec.selector") {
            label_selector(selector, "spec.selector", &mut errs);
        }
        one_of(obj, "spec.unhealthyPodEvictionPolicy", &["AlwaysAllow", "IfHealthyBudget"], &mut errs);
        errs
    }

    fn columns(&self) -> &'static [Column] {
        PDB_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        // An IntOrString prints as its number or its percentage.
        let bound = |ptr| match obj.pointer(ptr).filter(|v| !v.is_null()) {
            Some(Value::String(s)) => s.clone(),
            Some(v) => int_of(Some(v)).to_string(),
            None => "N/A".into(),
        };
        Row::plain(vec![
            name(obj).into(),
            bound("/spec/minAvailable").into(),
            bound("/spec/maxUnavailable").into(),
            int_at(obj, "/status/disruptionsAllowed").into(),
            age(obj, now).into(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn one_bound_a_count_or_a_percentage() {
        let ok = obj(json!({"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}}));
        assert!(PodDisruptionBudget.validate(&ok, None).is_empty());
        let both =
            obj(json!({"spec": {"minAvailable": 1, "maxUnavailable": "120%", "unhealthyPodEvictionPolicy": "Never"}}));
        let shown: Vec<String> = PodDisruptionBudget.validate(&both, None).iter().map(|e| e.to_string()).collect();
        assert_eq!(shown, [
            "spec: Invalid value: map[string]interface {}{\"maxUnavailable\":\"120%\", \"minAvailable\":1, \"unhealthyPodEvictionPolicy\":\"Never\"}: minAvailable and maxUnavailable cannot be both set",
            "spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"120%\"}: must not be greater than 100%",
            "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
        ]);
    }

    #[test]
    fn created_with_a_zero_status_and_printed_with_both_bounds() {
        let mut pdb = obj(json!({"metadata": {"name": "web"}, "spec": {"maxUnavailable": 1}}));
        PodDisruptionBudget.prepare_for_create(&mut pdb, "");
        assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
        let cells = PodDisruptionBudget.row(&Value::Object(pdb), 0).cells;
        assert_eq!(cells[1..4], [json!("N/A"), json!("1"), json!(0)]);
    }
}
