//! Owns the membership changes of a run: an operator that removes members and adds them
//! back while the traffic and the faults go on, through the `/kuorum/v1/members` API
//! that `kuorum member` uses. A node whose removal committed is replaced the way an
//! operator replaces a dead one: its disks are wiped, it starts in join mode, it is added
//! as a learner (the add answers once it has caught up, by snapshot if the log it needs
//! is purged) and then promoted to voter. A 3-node cluster goes 3 → 2 → 3, a 5-node
//! one 5 → 4 → 3 → 4 → 5, in whatever order the seed draws. After the faults stop every
//! removed node is added back, so the liveness checks (R2, W12) cover it too.
//!
//! The operator runs inside the simulation (a turmoil client); wiping disks needs the
//! simulation itself, so the operator asks for it here and the driver does it between
//! steps ([`MemberOps::take_wipes`]).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kuorum_api::seams::{Entropy, SplitMix64};
use serde_json::{json, Value};

use crate::client::{request_within, Dial};
use crate::cluster::{host_name, PEER_PORT};

/// What the operator did, for the coverage table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemberCounts {
    /// Removals the leader confirmed (committed).
    pub removed: u64,
    /// Nodes wiped and started in join mode.
    pub wiped: u64,
    /// Learners added (caught up) and promoted.
    pub added: u64,
    pub promoted: u64,
}

#[derive(Debug, Default)]
struct Shared {
    /// Nodes to wipe and restart in join mode, asked by the operator, done by the driver.
    wipe_asked: Vec<u64>,
    /// How many wipes the driver has done, per node.
    wipes_done: std::collections::BTreeMap<u64, u64>,
    counts: MemberCounts,
}

/// The operator's side and the driver's side of one run's membership changes.
#[derive(Debug, Clone, Default)]
pub struct MemberOps(Arc<Mutex<Shared>>);

/// When the operator acts.
#[derive(Debug, Clone, Copy)]
pub struct OperatorPlan {
    pub nodes: u64,
    pub seed: u64,
    /// Changes are made until then; after it, removed nodes are only added back.
    pub fault_phase: Duration,
    /// The operator gives up adding nodes back after this (the liveness checks then fail).
    pub give_up_at: Duration,
}

impl MemberOps {
    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The wipes asked for since the last call (the driver's side).
    pub fn take_wipes(&self) -> Vec<u64> {
        std::mem::take(&mut self.lock().wipe_asked)
    }

    /// The driver wiped node `id` and started it in join mode.
    pub fn wiped(&self, id: u64) {
        let mut g = self.lock();
        *g.wipes_done.entry(id).or_default() += 1;
        g.counts.wiped += 1;
    }

    pub fn counts(&self) -> MemberCounts {
        self.lock().counts
    }

    fn wipes_of(&self, id: u64) -> u64 {
        self.lock().wipes_done.get(&id).copied().unwrap_or(0)
    }

    /// Runs the operator until every node is a voter again after the fault phase.
    pub async fn operate(self, plan: OperatorPlan, dial: Arc<dyn Dial>) {
        let rng = SplitMix64::new(plan.seed ^ 0x3E3B_E125_0F_C0DE);
        let pick = |n: u64| rng.next_u64() % n.max(1);
        // The fewest voters the operator leaves: a majority of the original cluster.
        let min_voters = plan.nodes / 2 + 1;
        let all: BTreeSet<u64> = (1..=plan.nodes).collect();
        // Nodes whose removal the leader confirmed: safe to wipe (they vote in no
        // configuration that can still decide anything).
        let mut removal_committed: BTreeSet<u64> = BTreeSet::new();
        loop {
            let now = turmoil::elapsed();
            let changing = now < plan.fault_phase;
            if now >= plan.give_up_at {
                return;
            }
            let pause = if changing { 2_000 + pick(4_000) } else { 300 };
            tokio::time::sleep(Duration::from_millis(pause)).await;
            let Some(view) = leader_view(dial.as_ref(), plan.nodes).await else { continue };
            if !changing && view.voters == all {
                return;
            }
            if let Some(&learner) = view.learners.iter().next() {
                let path = format!("/kuorum/v1/members/{learner}/promote");
                if ok(request_within(Duration::from_secs(10), dial.as_ref(), view.leader, "POST", &path, None).await) {
                    self.lock().counts.promoted += 1;
                }
                continue;
            }
            let absent: Vec<u64> = all.iter().copied().filter(|id| !view.nodes.contains(id)).collect();
            if !absent.is_empty() && (!changing || view.voters.len() as u64 <= min_voters || pick(2) == 0) {
                let id = absent[pick(absent.len() as u64) as usize];
                if removal_committed.remove(&id) {
                    self.wipe(id).await;
                }
                let body = json!({"id": id, "peerAddress": format!("{}:{PEER_PORT}", host_name(id))});
                let r = request_within(
                    Duration::from_secs(20),
                    dial.as_ref(),
                    view.leader,
                    "POST",
                    "/kuorum/v1/members",
                    Some(&body),
                )
                .await;
                if ok(r) {
                    self.lock().counts.added += 1;
                }
                continue;
            }
            if changing && view.voters.len() as u64 > min_voters {
                let voters: Vec<u64> = view.voters.iter().copied().collect();
                let id = voters[pick(voters.len() as u64) as usize];
                let path = format!("/kuorum/v1/members/{id}");
                if ok(request_within(Duration::from_secs(10), dial.as_ref(), view.leader, "DELETE", &path, None).await)
                {
                    removal_committed.insert(id);
                    self.lock().counts.removed += 1;
                }
            }
        }
    }

    /// Asks the driver to wipe node `id` and waits until it has.
    pub async fn wipe(&self, id: u64) {
        let before = self.wipes_of(id);
        self.lock().wipe_asked.push(id);
        while self.wipes_of(id) == before {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn ok(r: Option<crate::client::Reply>) -> bool {
    r.is_some_and(|r| (200..300).contains(&r.status))
}

/// The membership as a node that says it leads reports it.
#[derive(Debug, Clone)]
pub struct LeaderView {
    pub leader: u64,
    /// Voters and learners.
    pub nodes: BTreeSet<u64>,
    pub voters: BTreeSet<u64>,
    pub learners: BTreeSet<u64>,
}

/// Asks nodes `1..=nodes` in turn for the membership; the first that says it leads answers.
pub async fn leader_view(dial: &dyn Dial, nodes: u64) -> Option<LeaderView> {
    for id in 1..=nodes {
        let Some(r) = request_within(Duration::from_secs(2), dial, id, "GET", "/kuorum/v1/members", None).await else {
            continue;
        };
        if r.status != 200 || r.body["leader"].as_u64() != Some(id) {
            continue;
        }
        let members = r.body["members"].as_array().cloned().unwrap_or_default();
        let with_role = |role: &str| -> BTreeSet<u64> {
            members.iter().filter(|m| m["role"] == role).filter_map(|m: &Value| m["id"].as_u64()).collect()
        };
        let voters = with_role("voter");
        let learners = with_role("learner");
        return Some(LeaderView { leader: id, nodes: voters.union(&learners).copied().collect(), voters, learners });
    }
    None
}

/// Replaces member `id` step by step, for a driver outside the simulation (the
/// real-process chaos test): [`remove_member`], then the caller wipes and restarts the
/// node in join mode, then [`add_member`].
///
/// Removes `id` through the leader, retrying until a leader confirms it (200) or, after
/// an attempt whose answer was lost, no longer knows it (400 "not a member"). Answers
/// whether that happened within `within`.
pub async fn remove_member(dial: &dyn Dial, nodes: u64, id: u64, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if let Some(view) = leader_view(dial, nodes).await {
            let path = format!("/kuorum/v1/members/{id}");
            match request_within(Duration::from_secs(10), dial, view.leader, "DELETE", &path, None).await {
                Some(r) if r.status == 200 => return true,
                Some(r) if r.status == 400 && !view.nodes.contains(&id) => return true,
                _ => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    false
}

/// Adds `id` (at `peer_address`) as a learner, waits for it to catch up and promotes it,
/// retrying through leader changes; answers whether it is a voter within `within`.
pub async fn add_member(dial: &dyn Dial, nodes: u64, id: u64, peer_address: &str, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < deadline {
        if let Some(view) = leader_view(dial, nodes).await {
            if view.voters.contains(&id) {
                return true;
            }
            if view.learners.contains(&id) {
                let path = format!("/kuorum/v1/members/{id}/promote");
                let _ = request_within(Duration::from_secs(30), dial, view.leader, "POST", &path, None).await;
            } else {
                let body = json!({"id": id, "peerAddress": peer_address});
                let add = request_within(
                    Duration::from_secs(60),
                    dial,
                    view.leader,
                    "POST",
                    "/kuorum/v1/members",
                    Some(&body),
                );
                let _ = add.await;
            }
            continue;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    false
}
