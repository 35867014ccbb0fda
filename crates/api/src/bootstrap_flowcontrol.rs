//! kube-apiserver's default API Priority and Fairness configuration: the
//! PriorityLevelConfigurations and FlowSchemas every cluster starts with, mandatory
//! (`exempt`, `catch-all`) and suggested (`system`, `node-high`, `leader-election`,
//! `workload-high`, `workload-low`, `global-default` and the schemas that lead to them).
//!
//! The configuration is data (`bootstrap_flowcontrol/*.json`, from kube's
//! `apiserver/pkg/apis/flowcontrol/bootstrap/default.go`, unchanged from 1.34 to 1.37).
//! [`reconcile`] is kube's ensurer: a mandatory object's spec is always put back; a
//! suggested one's only while it is annotated `apf.kubernetes.io/autoupdate-spec: "true"`
//! (or, without the annotation, while nobody has changed it: generation 1); [`unwanted`]
//! names the annotated objects that are no longer part of the configuration.

use serde_json::{json, Value};

const PRIORITY_LEVELS: &str = include_str!("bootstrap_flowcontrol/priority-level-configurations.json");
const FLOW_SCHEMAS: &str = include_str!("bootstrap_flowcontrol/flow-schemas.json");

pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
pub const AUTOUPDATE: &str = "apf.kubernetes.io/autoupdate-spec";

/// One bootstrap object: its resource (`prioritylevelconfigurations`, `flowschemas`),
/// whether it is mandatory, and the object.
pub struct Bootstrap {
    pub resource: &'static str,
    pub mandatory: bool,
    pub object: Value,
}

fn of(resource: &'static str, text: &str) -> Vec<Bootstrap> {
    // The files are part of the build; a malformed one fails the tests below.
    let parsed: Value = serde_json::from_str(text).unwrap_or_default();
    let mut out = Vec::new();
    for (list, mandatory) in [("mandatory", true), ("suggested", false)] {
        for o in parsed.get(list).and_then(Value::as_array).into_iter().flatten() {
            let mut object = o.clone();
            object["metadata"]["generation"] = json!(1);
            out.push(Bootstrap { resource, mandatory, object });
        }
    }
    out
}

/// Every bootstrap object: the priority levels first, as the schemas name them.
pub fn configuration() -> Vec<Bootstrap> {
    let mut out = of("prioritylevelconfigurations", PRIORITY_LEVELS);
    out.extend(of("flowschemas", FLOW_SCHEMAS));
    out
}

/// The value of an object's auto-update annotation, when it reads as a boolean (as Go's
/// `strconv.ParseBool`).
fn autoupdate(obj: &Value) -> Option<bool> {
    let v = obj.get("metadata")?.get("annotations")?.get(AUTOUPDATE)?.as_str()?;
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// kube's ensurer for a stored bootstrap object and the configuration's `wanted`: the
/// object to write (spec put back, annotation set), or `None` when it is as it should be.
pub fn reconcile(stored: &Value, wanted: &Value, mandatory: bool) -> Option<Value> {
    let auto = mandatory
        || autoupdate(stored)
            .unwrap_or_else(|| stored.pointer("/metadata/generation").and_then(Value::as_i64) == Some(1));
    let annotate = autoupdate(stored) != Some(auto);
    let respec = auto && stored.get("spec") != wanted.get("spec");
    if !annotate && !respec {
        return None;
    }
    let mut out = stored.clone();
    if annotate {
        let meta = &mut out["metadata"];
        if !meta["annotations"].is_object() {
            meta["annotations"] = json!({});
        }
        meta["annotations"][AUTOUPDATE] = json!(auto.to_string());
    }
    if respec {
        out["spec"] = wanted.get("spec").cloned().unwrap_or(Value::Null);
    }
    Some(out)
}

/// Whether a stored object of a bootstrap resource is one kube would delete: annotated for
/// auto-update and not (any more) part of the configuration.
pub fn unwanted(stored: &Value, resource: &str) -> bool {
    let name = stored.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    autoupdate(stored) == Some(true)
        && !configuration().iter().any(|b| b.resource == resource && b.object["metadata"]["name"] == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_reads_and_every_schema_names_a_level() {
        let all = configuration();
        let names = |resource: &str, mandatory: bool| -> Vec<String> {
            all.iter()
                .filter(|b| b.resource == resource && b.mandatory == mandatory)
                .map(|b| b.object["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(names("prioritylevelconfigurations", true), ["catch-all", "exempt"]);
        assert_eq!(names("flowschemas", true), ["exempt", "catch-all"]);
        assert_eq!(names("prioritylevelconfigurations", false).len(), 6);
        assert_eq!(names("flowschemas", false).len(), 9);
        let levels = names("prioritylevelconfigurations", true)
            .into_iter()
            .chain(names("prioritylevelconfigurations", false))
            .collect::<Vec<_>>();
        for b in all.iter().filter(|b| b.resource == "flowschemas") {
            let level = b.object["spec"]["priorityLevelConfiguration"]["name"].as_str().unwrap();
            assert!(levels.iter().any(|l| l == level), "{}", b.object);
            assert_eq!(b.object["kind"], "FlowSchema");
            assert_eq!(b.object["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
        }
    }

    #[test]
    fn mandatory_specs_come_back_and_suggested_ones_only_when_annotated() {
        let wanted = json!({"metadata": {"name": "x", "annotations": {AUTOUPDATE: "true"}}, "spec": {"a": 1}});
        let changed = json!({"metadata": {"name": "x", "generation": 2, "annotations": {AUTOUPDATE: "false"}},
                             "spec": {"a": 2}});
        assert_eq!(reconcile(&changed, &wanted, false), None, "opted out");
        let back = reconcile(&changed, &wanted, true).unwrap();
        assert_eq!((&back["spec"], &back["metadata"]["annotations"][AUTOUPDATE]), (&json!({"a": 1}), &json!("true")));
        assert_eq!(reconcile(&back, &wanted, true), None);
        let annotated = json!({"metadata": {"name": "x", "generation": 3, "annotations": {AUTOUPDATE: "true"}},
                               "spec": {"a": 2}});
        assert_eq!(reconcile(&annotated, &wanted, false).unwrap()["spec"], json!({"a": 1}));
        // No annotation: kept up to date while untouched (generation 1), else left and marked.
        let untouched = json!({"metadata": {"name": "x", "generation": 1}, "spec": {"a": 2}});
        assert_eq!(reconcile(&untouched, &wanted, false).unwrap()["spec"], json!({"a": 1}));
        let edited = json!({"metadata": {"name": "x", "generation": 2}, "spec": {"a": 2}});
        let marked = reconcile(&edited, &wanted, false).unwrap();
        assert_eq!(
            (&marked["spec"], &marked["metadata"]["annotations"][AUTOUPDATE]),
            (&json!({"a": 2}), &json!("false"))
        );
    }

    #[test]
    fn only_annotated_leftovers_are_unwanted() {
        let old = json!({"metadata": {"name": "workload-leader-election", "annotations": {AUTOUPDATE: "true"}}});
        assert!(unwanted(&old, "flowschemas"));
        let mine = json!({"metadata": {"name": "mine"}});
        assert!(!unwanted(&mine, "flowschemas"));
        let kept = json!({"metadata": {"name": "global-default", "annotations": {AUTOUPDATE: "true"}}});
        assert!(!unwanted(&kept, "flowschemas"));
    }
}
