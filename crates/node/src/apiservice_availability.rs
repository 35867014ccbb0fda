//! Owns APIService availability, as kube-aggregator's available-condition controller: on
//! the leader, every [`EVERY`], each APIService backed by a Service is checked
//! ([`kuorum_rest::aggregator::check`]: the Service, its endpoints, and an answer to its
//! group-version's discovery) and its `Available` condition written when it changed.
//! Every node proxies to it only while the condition is True, so all nodes agree.

use std::time::Duration;

use kuorum_rest::admission::cached_list;
use kuorum_rest::RestState;
use serde_json::{json, Value};

pub const EVERY: Duration = Duration::from_secs(2);

pub async fn run(st: RestState) {
    loop {
        tokio::time::sleep(EVERY).await;
        if st.cluster.leader() != Some(st.cluster.node_id()) {
            continue;
        }
        for apiservice in cached_list(&st.cache, "apiregistration.k8s.io", "apiservices", None) {
            if !apiservice.get("spec").and_then(|s| s.get("service")).is_some_and(Value::is_object) {
                continue;
            }
            let (up, reason, message) = kuorum_rest::aggregator::check(&st, &apiservice).await;
            let status = if up { "True" } else { "False" };
            let conditions = apiservice.get("status").and_then(|s| s.get("conditions")).and_then(Value::as_array);
            let current = conditions.into_iter().flatten().find(|c| c["type"] == "Available");
            if current
                .is_some_and(|c| c["status"] == status && c["reason"] == reason && c["message"] == message.as_str())
            {
                continue;
            }
            let changed = current.is_none_or(|c| c["status"] != status);
            let since = match current {
                Some(c) if !changed => c["lastTransitionTime"].clone(),
                _ => json!(st.clock.now_rfc3339()),
            };
            let mut updated = Value::Object(apiservice.clone());
            updated["status"] = json!({"conditions": [{"type": "Available", "status": status, "reason": reason,
                "message": message, "lastTransitionTime": since}]});
            crate::status_write::write(
                &st,
                "apiregistration.k8s.io",
                "apiservices",
                &updated,
                "APIService availability",
            )
            .await;
        }
    }
}
