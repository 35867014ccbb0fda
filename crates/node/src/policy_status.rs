//! Owns ValidatingAdmissionPolicies' `status`, as kube-controller-manager's
//! validatingadmissionpolicy-status controller keeps it: on the leader, every [`EVERY`], a
//! policy whose `status.observedGeneration` is behind its `metadata.generation` is type
//! checked ([`kuorum_rest::admission_policy::type_check`]) and gets
//! `status.observedGeneration` and `status.typeChecking` (`expressionWarnings` when any).

use std::time::Duration;

use kuorum_rest::admission::cached_list;
use kuorum_rest::admission_policy::type_check;
use kuorum_rest::RestState;
use serde_json::{json, Value};

pub const EVERY: Duration = Duration::from_secs(1);

const GROUP: &str = "admissionregistration.k8s.io";

pub async fn run(st: RestState) {
    loop {
        tokio::time::sleep(EVERY).await;
        if st.cluster.leader() != Some(st.cluster.node_id()) {
            continue;
        }
        for policy in cached_list(&st.cache, GROUP, "validatingadmissionpolicies", None) {
            let policy = Value::Object(policy);
            let Some(updated) = with_status(&policy) else { continue };
            crate::status_write::write(&st, GROUP, "validatingadmissionpolicies", &updated, "policy type checking")
                .await;
        }
    }
}

/// `policy` with its status for its generation, or `None` when it has it already.
fn with_status(policy: &Value) -> Option<Value> {
    let generation = policy.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
    if policy.pointer("/status/observedGeneration").and_then(Value::as_i64) >= Some(generation) {
        return None;
    }
    let warnings = type_check(policy);
    let type_checking = if warnings.is_empty() { json!({}) } else { json!({"expressionWarnings": warnings}) };
    let mut updated = policy.clone();
    let mut status = policy.get("status").and_then(Value::as_object).cloned().unwrap_or_default();
    status.insert("observedGeneration".into(), json!(generation));
    status.insert("typeChecking".into(), type_checking);
    updated["status"] = Value::Object(status);
    Some(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_is_checked_once_per_generation() {
        let policy = json!({"metadata": {"name": "p", "generation": 2}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "object.dat.size() < 3"}]}});
        let checked = with_status(&policy).unwrap();
        assert_eq!(checked["status"]["observedGeneration"], 2);
        let w = &checked["status"]["typeChecking"]["expressionWarnings"][0];
        assert_eq!(w["fieldRef"], "spec.validations[0].expression");
        assert_eq!(w["warning"], "/v1, Kind=ConfigMap: undefined field 'dat'\n");
        assert!(with_status(&checked).is_none(), "already at its generation");
    }
}
