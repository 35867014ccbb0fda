//! Owns the `Dangling` condition of FlowSchemas, as kube-apiserver's flow-control
//! configuration controller keeps it: on the leader, every [`EVERY`], each FlowSchema whose
//! priority level exists is `Dangling: False` (reason `Found`), one whose level does not is
//! `True` (`NotFound`), in kube's words; `kubectl get flowschemas` prints it as
//! `MissingPL`. A write is on condition of the schema's version and only when the
//! condition changed; the transition time moves only when its status does.

use std::time::Duration;

use kuorum_rest::admission::cached_list;
use kuorum_rest::RestState;
use serde_json::{json, Map, Value};

pub const EVERY: Duration = Duration::from_secs(1);

const GROUP: &str = "flowcontrol.apiserver.k8s.io";

pub async fn run(st: RestState) {
    loop {
        tokio::time::sleep(EVERY).await;
        if st.cluster.leader() != Some(st.cluster.node_id()) {
            continue;
        }
        let levels: Vec<String> = cached_list(&st.cache, GROUP, "prioritylevelconfigurations", None)
            .iter()
            .filter_map(|l| l.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).map(String::from))
            .collect();
        for schema in cached_list(&st.cache, GROUP, "flowschemas", None) {
            let Some(updated) = with_condition(&schema, &levels, &st.clock.now_rfc3339()) else { continue };
            crate::status_write::write(&st, GROUP, "flowschemas", &updated, "FlowSchema Dangling condition").await;
        }
    }
}

/// `schema` with its `Dangling` condition as `levels` (the priority levels' names) make
/// it, or `None` when it already is.
fn with_condition(schema: &Map<String, Value>, levels: &[String], now: &str) -> Option<Value> {
    let level = schema.get("spec").and_then(|s| s.pointer("/priorityLevelConfiguration/name"));
    let level = level.and_then(Value::as_str).unwrap_or("");
    let (status, reason, message) = if levels.iter().any(|l| l == level) {
        (
            "False",
            "Found",
            format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} and it exists"),
        )
    } else {
        ("True", "NotFound", format!("This FlowSchema references the PriorityLevelConfiguration object named {level:?} but there is no such object"))
    };
    let conditions = schema.get("status").and_then(|s| s.get("conditions")).and_then(Value::as_array);
    let current = conditions.into_iter().flatten().find(|c| c["type"] == "Dangling");
    if current.is_some_and(|c| c["status"] == status && c["reason"] == reason && c["message"] == message.as_str()) {
        return None;
    }
    let since = match current {
        Some(c) if c["status"] == status => c["lastTransitionTime"].clone(),
        _ => json!(now),
    };
    let condition = json!({"type": "Dangling", "status": status, "lastTransitionTime": since, "reason": reason, "message": message});
    let mut others: Vec<Value> =
        conditions.into_iter().flatten().filter(|c| c["type"] != "Dangling").cloned().collect();
    others.push(condition);
    let mut updated = Value::Object(schema.clone());
    updated["status"] = json!({"conditions": others});
    Some(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(level: &str, status: Value) -> Map<String, Value> {
        json!({"metadata": {"name": "s"}, "spec": {"priorityLevelConfiguration": {"name": level}}, "status": status})
            .as_object()
            .unwrap()
            .clone()
    }

    #[test]
    fn dangling_follows_the_priority_level() {
        let levels = vec!["global-default".to_string()];
        let found = with_condition(&schema("global-default", json!({})), &levels, "T1").unwrap();
        let c = &found["status"]["conditions"][0];
        assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some("False"), Some("Found")));
        assert_eq!(
            c["message"],
            "This FlowSchema references the PriorityLevelConfiguration object named \"global-default\" and it exists"
        );
        assert_eq!(c["lastTransitionTime"], "T1");
        // Already so: nothing to write.
        assert!(with_condition(found.as_object().unwrap(), &levels, "T2").is_none());
        // The level goes: True, NotFound, a new transition time.
        let gone = with_condition(found.as_object().unwrap(), &[], "T3").unwrap();
        let c = &gone["status"]["conditions"][0];
        assert_eq!(
            (c["status"].as_str(), c["reason"].as_str(), c["lastTransitionTime"].as_str()),
            (Some("True"), Some("NotFound"), Some("T3"))
        );
        assert!(c["message"].as_str().unwrap().ends_with("but there is no such object"));
    }
}
