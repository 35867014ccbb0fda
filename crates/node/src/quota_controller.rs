//! Owns ResourceQuota status, as kube-controller-manager's resourcequota controller: on
//! the leader, every [`EVERY`], each quota's `status.hard` becomes its `spec.hard` and its
//! `status.used` what the objects of its namespace use now (counted from this node's
//! cache by `kuorum_rest::admission::resource_quota`). Admission charges a new object to
//! `status.used` before storing it; this loop gives back what deleted objects (and
//! charges whose object was never stored) used. A lower count is written only when two
//! passes in a row counted the same, so a charge whose object is on its way to the log is
//! not taken back under it. Each write is on condition of the quota's version: a charge
//! that lands first wins, and the next pass counts again.

use std::collections::BTreeMap;
use std::time::Duration;

use kuorum_rest::admission::resource_quota::{self, Usage};
use kuorum_rest::RestState;
use kuorum_store::{Command, Precondition};

pub const EVERY: Duration = Duration::from_secs(2);

pub async fn run(st: RestState) {
    // What each quota counted a pass ago, by key.
    let mut last: BTreeMap<String, Usage> = BTreeMap::new();
    loop {
        tokio::time::sleep(EVERY).await;
        if st.cluster.leader() != Some(st.cluster.node_id()) {
            last.clear();
            continue;
        }
        let mut now = BTreeMap::new();
        for quota in resource_quota::all_quotas(&st) {
            let key = resource_quota::key_of(&quota);
            let (counted, write) = resource_quota::recount(&st, &quota, last.get(&key));
            now.insert(key.clone(), counted);
            let Some(updated) = write else { continue };
            let rv = quota
                .get("metadata")
                .and_then(|m| m.get("resourceVersion"))
                .and_then(|v| v.as_str())
                .and_then(|v| v.parse().ok());
            let cmd = Command::Update {
                key: key.clone(),
                object: serde_json::to_vec(&updated).unwrap_or_default().into(),
                precondition: Precondition { resource_version: rv, uid: None },
                finalizing: Default::default(),
            };
            match st.cluster.write(cmd, Duration::from_secs(5)).await {
                Ok(Ok(_)) => tracing::debug!(key, "quota status counted"),
                Ok(Err(e)) => tracing::debug!(key, "quota status moved on: {e}"),
                Err(e) => tracing::debug!(key, "quota status: {e}"),
            }
        }
        last = now;
    }
}
