//! ControllerRevision (apps/v1): a snapshot of a workload's template, written by the
//! DaemonSet and StatefulSet controllers: `data` must be a JSON object and never changes,
//! `revision` is not negative; printed with its controlling owner and revision.

use serde_json::Value;

use crate::kinds::common::non_negative;
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{grouped, ResourceDef, Scope};
use crate::validation::{BadValue, FieldError};

pub static DEF: ResourceDef = grouped(
    "apps",
    "ControllerRevision",
    "controllerrevisions",
    "controllerrevision",
    Scope::Namespaced,
    "ControllerRevisionList",
);

const CONTROLLER_REVISION_COLUMNS: &[Column] = &[
    NAME,
    col("Controller", "string", "Controller of the object"),
    col("Revision", "string", "Revision indicates the revision of the state represented by Data."),
    AGE,
];

pub struct ControllerRevision;

impl Strategy for ControllerRevision {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// `revision` not negative; on create, `data` a JSON object; on update, `data` as it
    /// was.
    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        non_negative(obj, "revision", &mut errs);
        let data = obj.get("data").filter(|d| !d.is_null());
        match old {
            None => match data {
                None => errs.push(FieldError::required("data", "data is mandatory")),
                Some(Value::Object(_)) => {}
                Some(_) => errs.push(FieldError::required("data", "data must be a valid JSON object")),
            },
            Some(old) => {
                let old_data = old.get("data").filter(|d| !d.is_null());
                if data != old_data {
                    errs.push(FieldError::invalid_value(
                        "data",
                        BadValue::of_json(data.unwrap_or(&Value::Null)),
                        "field is immutable",
                    ));
                }
            }
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        CONTROLLER_REVISION_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        Row::plain(vec![
            name(obj).into(),
            controller(obj).into(),
            int_at(obj, "/revision").into(),
            age(obj, now).into(),
        ])
    }
}

/// The controlling owner as `kind.group/name` in lower case (`daemonset.apps/agent`),
/// or `<none>`.
fn controller(obj: &Value) -> String {
    let owners = arr_at(obj, "/metadata/ownerReferences");
    let Some(owner) = owners.iter().find(|o| o.get("controller").and_then(Value::as_bool) == Some(true)) else {
        return "<none>".into();
    };
    let group = str_at(owner, "/apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
    let kind = match (str_at(owner, "/kind"), group) {
        ("", _) => return str_at(owner, "/name").to_string(),
        (kind, "") => kind.to_string(),
        (kind, group) => format!("{kind}.{group}"),
    };
    format!("{}/{}", kind.to_lowercase(), str_at(owner, "/name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_is_an_object_that_never_changes() {
        let obj = |v: Value| v.as_object().unwrap().clone();
        let rev = obj(json!({"revision": 1, "data": {"spec": {}}}));
        assert!(ControllerRevision.validate(&rev, None).is_empty());
        let shown =
            |o: &Object, old| ControllerRevision.validate(o, old).iter().map(|e| e.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shown(&obj(json!({"revision": -1})), None),
            [
                "revision: Invalid value: -1: must be greater than or equal to 0",
                "data: Required value: data is mandatory"
            ]
        );
        assert_eq!(shown(&obj(json!({"data": [1]})), None), ["data: Required value: data must be a valid JSON object"]);
        assert_eq!(shown(&obj(json!({"revision": 2, "data": {"spec": {"x": 1}}})), Some(&rev)).len(), 1);
        assert!(shown(&obj(json!({"revision": 2, "data": {"spec": {}}})), Some(&rev)).is_empty());
    }

    #[test]
    fn rows_name_the_controller() {
        let rev = json!({"metadata": {"name": "agent-5d4f", "ownerReferences": [
            {"apiVersion": "v1", "kind": "Pod", "name": "p"},
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "controller": true}]}, "revision": 3});
        let cells = ControllerRevision.row(&rev, 0).cells;
        assert_eq!(cells[1..3], [json!("daemonset.apps/agent"), json!(3)]);
        assert_eq!(ControllerRevision.row(&json!({}), 0).cells[1], "<none>");
    }
}
