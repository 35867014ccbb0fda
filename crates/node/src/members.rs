//! `/kuorum/v1/members` and `/kuorum/v1/leader`: membership and leadership, for
//! `kuorum member ...` and operators.
//!
//! - `GET  /kuorum/v1/members`: the membership this node knows, with the leader and, on
//!   the leader, how far each member's log matches.
//! - `POST /kuorum/v1/members` `{"id": 4, "peerAddress": "10.0.0.4:6543"}`: adds a learner
//!   and answers once it has caught up with the log (by snapshot if the log it needs is
//!   purged). A learner receives everything but does not vote.
//! - `POST /kuorum/v1/members/{id}/promote`: makes a learner a voter (joint consensus).
//! - `DELETE /kuorum/v1/members/{id}`: removes a voter or a learner.
//! - `POST /kuorum/v1/leader` `{"id": 2}`: hands leadership to a voter and answers once it
//!   leads.
//!
//! Changes must be made on the leader: another node answers 421 Misdirected Request
//! with a Status naming the leader, and the CLI tries its next server.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use kuorum_api::ApiError;
use kuorum_raft::state_machine::StateMachine;
use kuorum_raft::types::Raft;
use kuorum_raft::Cluster;
use kuorum_rest::RestError;
use kuorum_store::ObjectEngine;
use openraft::async_runtime::WatchReceiver;
use openraft::{BasicNode, ChangeMembers};
use serde::Deserialize;
use serde_json::{json, Value};

/// How long a leadership transfer may take before it is reported as failed.
const TRANSFER_WAIT: Duration = Duration::from_secs(10);
/// How long an add waits for the learner to catch up before answering 504 (the learner
/// stays added and keeps catching up).
const CATCH_UP_WAIT: Duration = Duration::from_secs(120);

pub fn router<O: ObjectEngine>(raft: Raft<StateMachine<O>>, cluster: Cluster) -> Router {
    Router::new()
        .route("/kuorum/v1/members", get(list::<O>).post(add::<O>))
        .route("/kuorum/v1/members/{id}", axum::routing::delete(remove::<O>))
        .route("/kuorum/v1/members/{id}/promote", post(promote::<O>))
        .route("/kuorum/v1/leader", post(transfer::<O>))
        .layer(axum::Extension(cluster))
        .with_state(raft)
}

fn fail(e: ApiError) -> Response {
    RestError(e).into_response()
}

/// The leader this node knows. A leader whose removal committed still names itself in
/// openraft's `current_leader` (its vote) but is no longer in the Leader state; it leads
/// nothing then.
fn known_leader(m: &openraft::RaftMetrics<kuorum_raft::types::TypeConfig>) -> Option<u64> {
    m.current_leader.filter(|l| *l != m.id || m.state == openraft::ServerState::Leader)
}

/// The members as this node knows them.
fn members<O: ObjectEngine>(raft: &Raft<StateMachine<O>>) -> Value {
    let m = raft.metrics().borrow_watched().clone();
    let leader = known_leader(&m);
    let membership = m.membership_config.membership();
    let voters: BTreeSet<u64> = membership.voter_ids().collect();
    let matched = |id: u64| m.replication.as_ref().and_then(|r| r.get(&id)).and_then(|l| l.as_ref()).map(|l| l.index);
    let list: Vec<Value> = membership
        .nodes()
        .map(|(id, node)| {
            json!({
                "id": id,
                "peerAddress": node.addr,
                "role": if voters.contains(id) { "voter" } else { "learner" },
                "leader": leader == Some(*id),
                "matchedIndex": if *id == m.id { m.last_log_index } else { matched(*id) },
            })
        })
        .collect();
    json!({
        "node": m.id,
        "leader": leader,
        "term": m.current_term,
        "committedIndex": m.cluster_committed.map(|l| l.index),
        "members": list,
    })
}

/// The refusal of a change on a node that is not the leader (naming the leader), or
/// `None` on the leader.
fn not_leader<O: ObjectEngine>(raft: &Raft<StateMachine<O>>) -> Option<Response> {
    let m = raft.metrics().borrow_watched().clone();
    let leader = known_leader(&m);
    if leader == Some(m.id) {
        return None;
    }
    let who = match leader {
        Some(l) => format!("node {l} is"),
        None => "no leader is known".into(),
    };
    let mut resp = fail(ApiError::service_unavailable(format!(
        "node {} is not the leader ({who}); membership changes are made on the leader",
        m.id
    )));
    *resp.status_mut() = StatusCode::MISDIRECTED_REQUEST;
    Some(resp)
}

/// On the leader, with no joint membership left: `None` when a change may be proposed,
/// else the refusal.
///
/// A joint membership outlives the change that made it when its leader loses the
/// leadership between the two steps. openraft builds the next change on the joint's last
/// config, and a leader that is not in that config (the change was removing it) would
/// propose a membership without itself, then take the change's second step without being
/// a member: openraft asserts there (debug builds) and its state goes wrong (simulator
/// seed 239). So the pending change is finished first: its last config becomes the
/// membership, as its proposer meant, and a leader that thereby leaves answers 503 (the
/// next leader takes the request).
async fn ready_to_change<O: ObjectEngine>(raft: &Raft<StateMachine<O>>) -> Option<Response> {
    if let Some(r) = not_leader(raft) {
        return Some(r);
    }
    let (me, target) = {
        let m = raft.metrics().borrow_watched().clone();
        let configs = m.membership_config.membership().get_joint_config().clone();
        if configs.len() < 2 {
            return None;
        }
        (m.id, configs.last().cloned().unwrap_or_default())
    };
    let stays = target.contains(&me);
    if let Err(e) = raft.change_membership(ChangeMembers::ReplaceAllVoters(target), false).await {
        return Some(change_failed(e));
    }
    (!stays).then(|| {
        fail(ApiError::service_unavailable(format!(
            "node {me} finished a membership change that removed it and no longer leads; retry on the new leader"
        )))
    })
}

fn change_failed(e: impl std::fmt::Display) -> Response {
    let msg = e.to_string();
    if msg.contains("not found") || msg.contains("NotFound") {
        return fail(ApiError::bad_request(msg));
    }
    fail(ApiError::service_unavailable(format!("membership change failed: {msg}")))
}

async fn list<O: ObjectEngine>(State(raft): State<Raft<StateMachine<O>>>) -> Response {
    Json(members(&raft)).into_response()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddMember {
    id: u64,
    peer_address: String,
}

async fn add<O: ObjectEngine>(
    State(raft): State<Raft<StateMachine<O>>>,
    axum::Extension(cluster): axum::Extension<Cluster>,
    body: axum::body::Bytes,
) -> Response {
    let req: AddMember = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return fail(ApiError::bad_request(format!("expected {{\"id\": N, \"peerAddress\": \"host:port\"}}: {e}")))
        }
    };
    if req.id == 0 || req.peer_address.is_empty() {
        return fail(ApiError::bad_request("a member needs a positive id and a peer address"));
    }
    if let Some(r) = ready_to_change(&raft).await {
        return r;
    }
    let known = raft.metrics().borrow_watched().membership_config.membership().get_node(&req.id).cloned();
    if let Some(node) = known {
        if node.addr != req.peer_address {
            return fail(ApiError::bad_request(format!(
                "node {} is already a member at {}; remove it first to move it",
                req.id, node.addr
            )));
        }
    }
    // Until the node is added, the leader does not raise the data format (it would not
    // ask a node that is not a member yet).
    let format_held = cluster.hold_data_format().await;
    if let Some(refused) = reads_older_format(&cluster, req.id, &req.peer_address).await {
        return refused;
    }
    // openraft's blocking add answers once the learner is within its replication lag
    // threshold (5,000 entries by default), which a wiped node is at once: wait instead
    // until the learner holds the entry that added it.
    let added = raft.add_learner(req.id, BasicNode { addr: req.peer_address }, false).await;
    drop(format_held);
    match added {
        Ok(resp) => {
            let added_at = resp.log_id.index;
            let caught_up = raft
                .wait(Some(CATCH_UP_WAIT))
                .metrics(|m| learner_caught_up(m, req.id, added_at), "the learner caught up with its addition")
                .await;
            match caught_up {
                Ok(_) => (StatusCode::CREATED, Json(members(&raft))).into_response(),
                Err(_) => fail(ApiError::timeout(
                    &format!(
                        "node {} was added as a learner but has not caught up within {} s (is it running, at that \
                         peer address?); it keeps catching up: promote it once `kuorum member list` shows it matched",
                        req.id,
                        CATCH_UP_WAIT.as_secs()
                    ),
                    5,
                )),
            }
        }
        Err(e) => change_failed(e),
    }
}

/// The refusal of a node that reads an older data format than the cluster's (it could
/// not decode the log; kuorum_raft::format), or that does not say which it reads. At
/// format 1 every node reads the log, so none is asked.
async fn reads_older_format(cluster: &Cluster, id: u64, addr: &str) -> Option<Response> {
    // Caught up with the commit first: a raise committed by an earlier leader is applied.
    if let Err(e) = cluster.read_barrier(Duration::from_secs(5)).await {
        return Some(fail(ApiError::service_unavailable(format!("cannot add a member now: {e}"))));
    }
    let (format, _) = cluster.data_format();
    if format < 2 {
        return None;
    }
    match cluster.peer_data_format(addr, Duration::from_secs(5)).await {
        Ok(reads) if reads < format => Some(fail(ApiError::new(
            kuorum_api::status::Reason::Conflict,
            format!(
                "node {id} at {addr} runs a kuorum that reads data format {reads}; the cluster writes format \
                 {format}: upgrade it first"
            ),
        ))),
        Ok(_) => None,
        Err(e) => Some(fail(ApiError::service_unavailable(format!(
            "cannot ask node {id} at {addr} which data format it reads ({e}): start it (with --join) before adding it"
        )))),
    }
}

/// Whether learner `id` has the log up to `index`, or the wait is moot: this node no
/// longer leads (the new leader carries on), or the learner was removed meanwhile.
fn learner_caught_up(m: &openraft::RaftMetrics<kuorum_raft::types::TypeConfig>, id: u64, index: u64) -> bool {
    let Some(replication) = &m.replication else { return true };
    if m.membership_config.membership().get_node(&id).is_none() {
        return true;
    }
    replication.get(&id).and_then(|l| l.as_ref()).is_some_and(|l| l.index >= index)
}

async fn promote<O: ObjectEngine>(State(raft): State<Raft<StateMachine<O>>>, Path(id): Path<u64>) -> Response {
    if let Some(r) = ready_to_change(&raft).await {
        return r;
    }
    let learner = {
        let m = raft.metrics().borrow_watched().clone();
        let mem = m.membership_config.membership();
        let learner = mem.get_node(&id).is_some() && !mem.voter_ids().any(|v| v == id);
        learner
    };
    if !learner {
        return fail(ApiError::bad_request(format!("node {id} is not a learner of this cluster")));
    }
    match raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false).await {
        Ok(_) => Json(members(&raft)).into_response(),
        Err(e) => change_failed(e),
    }
}

async fn remove<O: ObjectEngine>(State(raft): State<Raft<StateMachine<O>>>, Path(id): Path<u64>) -> Response {
    if let Some(r) = ready_to_change(&raft).await {
        return r;
    }
    let (known, voter, voters) = {
        let m = raft.metrics().borrow_watched().clone();
        let mem = m.membership_config.membership();
        let facts = (mem.get_node(&id).is_some(), mem.voter_ids().any(|v| v == id), mem.voter_ids().count());
        facts
    };
    if !known {
        return fail(ApiError::bad_request(format!("node {id} is not a member of this cluster")));
    }
    if voter && voters == 1 {
        return fail(ApiError::bad_request("the last voter cannot be removed"));
    }
    let change = if voter {
        // `retain: false`: the removed voter leaves the cluster rather than staying a learner.
        ChangeMembers::RemoveVoters(BTreeSet::from([id]))
    } else {
        ChangeMembers::RemoveNodes(BTreeSet::from([id]))
    };
    match raft.change_membership(change, false).await {
        Ok(_) => Json(members(&raft)).into_response(),
        Err(e) => change_failed(e),
    }
}

#[derive(Deserialize)]
struct Transfer {
    id: u64,
}

async fn transfer<O: ObjectEngine>(State(raft): State<Raft<StateMachine<O>>>, body: axum::body::Bytes) -> Response {
    let req: Transfer = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return fail(ApiError::bad_request(format!("expected {{\"id\": N}}: {e}"))),
    };
    if let Some(r) = not_leader(&raft) {
        return r;
    }
    let voter = raft.metrics().borrow_watched().membership_config.membership().voter_ids().any(|v| v == req.id);
    if !voter {
        return fail(ApiError::bad_request(format!("node {} is not a voter", req.id)));
    }
    if let Err(e) = raft.trigger().transfer_leader(req.id).await {
        return fail(ApiError::internal(e));
    }
    let wanted = Some(req.id);
    let waited = raft.wait(Some(TRANSFER_WAIT)).metrics(|m| m.current_leader == wanted, "leadership transferred").await;
    match waited {
        Ok(_) => Json(members(&raft)).into_response(),
        Err(e) => fail(ApiError::timeout(&format!("node {} did not take over the leadership: {e}", req.id), 1)),
    }
}
