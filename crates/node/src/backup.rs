//! `GET /kuorum/v1/snapshot`: a backup of the cluster's state, taken on this node after
//! a linearizable read barrier (so it holds every write acknowledged before the request),
//! for `kuorum snapshot save`. The body is the backup file
//! ([`kuorum_raft::backup`]); `X-Kuorum-Snapshot-Index` and `X-Kuorum-Snapshot-Objects`
//! say where it stands and how many objects it holds. A node whose state failed its
//! consistency check refuses (503).

use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use kuorum_raft::state_machine::StateMachine;
use kuorum_raft::Cluster;
use kuorum_rest::error::cluster_error;
use kuorum_rest::RestError;
use kuorum_store::ObjectEngine;

/// How long the read barrier before a backup may take.
const BARRIER_DEADLINE: Duration = Duration::from_secs(10);

pub fn router<O: ObjectEngine>(sm: StateMachine<O>, cluster: Cluster) -> Router {
    Router::new().route("/kuorum/v1/snapshot", get(save::<O>)).with_state((sm, cluster))
}

async fn save<O: ObjectEngine>(State((sm, cluster)): State<(StateMachine<O>, Cluster)>) -> Response {
    // A node outvoted by its peers' consistency check would back up its damage.
    if let Some(why) = cluster.integrity().corrupt() {
        let e = kuorum_api::status::ApiError::service_unavailable(format!(
            "this node's state failed its consistency check; take the backup from another node: {why}"
        ));
        return RestError(e).into_response();
    }
    match kuorum_raft::backup::save(&sm, &cluster, BARRIER_DEADLINE).await {
        Ok((file, info)) => {
            tracing::info!(index = info.index, objects = info.objects, bytes = info.bytes, "backup taken");
            let mut resp = (StatusCode::OK, file).into_response();
            let h = resp.headers_mut();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
            h.insert("x-kuorum-snapshot-index", HeaderValue::from(info.index));
            h.insert("x-kuorum-snapshot-objects", HeaderValue::from(info.objects as u64));
            resp
        }
        Err(e) => RestError(cluster_error(e)).into_response(),
    }
}
