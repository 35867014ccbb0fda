//! PriorityClass (scheduling.k8s.io/v1): cluster-scoped, no spec, generation 1 from
//! create; `preemptionPolicy` defaults to PreemptLowerPriority; names with the `system-`
//! prefix are reserved for the two system classes and values above one billion for
//! them; value and preemption policy are fixed once created; printed with value, default
//! flag and preemption policy.

use serde_json::{json, Value};

use crate::kinds::common::immutable;
use crate::kinds::printing::*;
use crate::kinds::{set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::FieldError;

pub static DEF: ResourceDef = ResourceDef {
    group: "scheduling.k8s.io",
    version: "v1",
    kind: "PriorityClass",
    plural: "priorityclasses",
    singular: "priorityclass",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &["pc"],
    categories: &[],
    subresources: &[],
    list_kind: "PriorityClassList",
    tracks_generation: true,
};

const PRIORITY_CLASS_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Value",
        "integer",
        "value represents the integer value of this priority class. This is the actual priority that pods \
         receive when they have the name of this class in their pod spec.",
    ),
    col(
        "Global-Default",
        "boolean",
        "globalDefault specifies whether this PriorityClass should be considered as the default priority for \
         pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. \
         However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the \
         smallest value of such global default PriorityClasses will be used as the default priority.",
    ),
    AGE,
    col(
        "PreemptionPolicy",
        "string",
        "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, \
         PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
    ),
];

const SYSTEM_PREFIX: &str = "system-";
/// The highest value a class outside the system ones may have.
const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// The system classes kube creates, with their values (neither is the global default).
const SYSTEM_CLASSES: &[(&str, i64)] = &[
    ("system-node-critical", 2 * HIGHEST_USER_DEFINABLE_PRIORITY + 1000),
    ("system-cluster-critical", 2 * HIGHEST_USER_DEFINABLE_PRIORITY),
];
const PREEMPTION_POLICIES: &[&str] = &["PreemptLowerPriority", "Never"];

pub struct PriorityClass;

impl Strategy for PriorityClass {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        set_default(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let name = obj.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
        let value = obj.get("value").and_then(Value::as_i64).unwrap_or(0);
        let global_default = obj.get("globalDefault").and_then(Value::as_bool).unwrap_or(false);
        if name.starts_with(SYSTEM_PREFIX) {
            if let Err(why) = known_system_class(name, value, global_default) {
                errs.push(FieldError::forbidden(
                    "metadata.name",
                    format!(
                        "priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. \
                         error: {why}"
                    ),
                ));
            }
        } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
            errs.push(FieldError::forbidden(
                "value",
                format!("maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"),
            ));
        }
        match obj.get("preemptionPolicy").and_then(Value::as_str) {
            Some("") => errs.push(FieldError::required("preemptionPolicy", "")),
            Some(p) if !PREEMPTION_POLICIES.contains(&p) => {
                errs.push(FieldError::not_supported("preemptionPolicy", p, PREEMPTION_POLICIES))
            }
            _ => {}
        }
        if let Some(old) = old {
            if old.get("value").and_then(Value::as_i64).unwrap_or(0) != value {
                errs.push(FieldError::forbidden("value", "may not be changed in an update."));
            }
            immutable(obj, Some(old), "preemptionPolicy", &mut errs);
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        PRIORITY_CLASS_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![
            name(obj).into(),
            int_at(obj, "/value").into(),
            obj.get("globalDefault").and_then(Value::as_bool).unwrap_or(false).into(),
            age(obj, now).into(),
            str_at(obj, "/preemptionPolicy").into(),
        ])
    }
}

/// `IsKnownSystemPriorityClass`: one of the system classes, with its value, not the
/// global default.
fn known_system_class(name: &str, value: i64, global_default: bool) -> Result<(), String> {
    let Some((_, want)) = SYSTEM_CLASSES.iter().find(|(n, _)| *n == name) else {
        return Err(format!("{name} is not a known system priority class"));
    };
    if value != *want {
        return Err(format!("value of {name} PriorityClass must be {want}"));
    }
    if global_default {
        return Err(format!("globalDefault of {name} PriorityClass must be false"));
    }
    Ok(())
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

    #[test]
    fn the_system_prefix_is_reserved() {
        let pc = obj(json!({"metadata": {"name": "system-critical"}, "value": 100}));
        assert_eq!(
            shown(&PriorityClass.validate(&pc, None)),
            ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. \
              error: system-critical is not a known system priority class"]
        );
        let pc = obj(json!({"metadata": {"name": "system-node-critical"}, "value": 2000001000}));
        assert!(PriorityClass.validate(&pc, None).is_empty());
        let pc = obj(json!({"metadata": {"name": "high"}, "value": 1000000001}));
        assert_eq!(
            shown(&PriorityClass.validate(&pc, None)),
            ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
        );
    }

    #[test]
    fn preemption_defaults_and_value_is_fixed() {
        let mut pc = obj(json!({"metadata": {"name": "high"}, "value": 1000}));
        PriorityClass.defaults(&mut pc);
        assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
        let mut new = pc.clone();
        new.insert("value".into(), json!(2000));
        new.insert("preemptionPolicy".into(), json!("Never"));
        assert_eq!(
            shown(&PriorityClass.validate(&new, Some(&pc))),
            [
                "value: Forbidden: may not be changed in an update.",
                r#"preemptionPolicy: Invalid value: "Never": field is immutable"#,
            ]
        );
        let row = PriorityClass.row(&Value::Object(new), 0);
        assert_eq!((&row.cells[1], &row.cells[2], &row.cells[4]), (&json!(2000), &json!(false), &json!("Never")));
    }
}
