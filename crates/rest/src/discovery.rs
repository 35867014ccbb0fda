//! Discovery and other fixed endpoints: `/api`, `/apis` (aggregated v2 when `Accept`
//! asks for it, legacy otherwise), `/apis/{group}`, `/api/v1`, `/apis/{group}/{version}`,
//! `/version`, and the health checks.
//!
//! The named groups are the built-in ones and this node's custom resources, read at the
//! newest state: a read barrier first (given up after [`FRESH_WITHIN`], serving what the
//! node has), so a CRD created through any node is listed by every node at once.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use kuorum_api::discovery as docs;
use kuorum_api::{ApiError, ResourceDef};
use serde_json::Value;

use crate::consistency::try_most_recent;
use crate::error::RestError;
use crate::negotiate::{self, json_response, json_response_as};
use crate::RestState;

/// How long discovery waits for the newest state before serving the node's own.
pub(crate) const FRESH_WITHIN: Duration = Duration::from_secs(2);

/// The resources discovery lists, at the newest state this node can confirm.
async fn served(st: &RestState) -> Vec<&'static ResourceDef> {
    try_most_recent(st, FRESH_WITHIN).await;
    st.custom.with_builtin(&st.cache)
}

fn json(v: &Value) -> Response {
    json_response(StatusCode::OK, serde_json::to_vec(v).unwrap_or_default())
}

/// Discovery documents differ by `Accept`; caches must know.
fn vary_accept(mut resp: Response) -> Response {
    resp.headers_mut().insert(header::VARY, header::HeaderValue::from_static("Accept"));
    resp
}

fn fail(e: ApiError) -> Response {
    RestError(e).into_response()
}

/// `GET /version` and `/version/`.
pub(crate) async fn version() -> Response {
    json(&docs::version_info())
}

/// `GET /healthz`, `/livez`.
pub(crate) async fn healthy() -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], "ok").into_response()
}

/// How long `/readyz` waits for this node to apply what the leader has committed.
const READY_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(1);

/// `GET /readyz`: ready unless this node found its state corrupt or is not a member of
/// the cluster, once a leader is known, this node has caught up with it (a
/// linearizable read barrier completes within a second: the leader's commit index is
/// applied here), its start-up hooks are done (it has the bootstrap roles and bindings),
/// and it has applied the namespaces every cluster starts with (so a create in `default`
/// cannot meet "not found").
pub(crate) async fn ready(
    axum::extract::State(st): axum::extract::State<std::sync::Arc<crate::RestState>>,
) -> Response {
    let text = |code, body: String| (code, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response();
    if let Some(why) = st.cluster.integrity().corrupt() {
        return text(StatusCode::INTERNAL_SERVER_ERROR, format!("[-]consistency: {why}\nreadyz check failed\n"));
    }
    if !st.cluster.is_member() {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "[-]member: this node is not a member of the cluster (removed, or not added yet)\nreadyz check failed\n"
                .into(),
        );
    }
    if st.cluster.leader().is_none() {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "[-]leader: no leader known\nreadyz check failed\n".into());
    }
    if let Err(e) = st.cluster.read_barrier(READY_CATCH_UP).await {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "[-]caught-up: applied {} and not caught up with the leader: {e}\nreadyz check failed\n",
                st.cluster.applied_index()
            ),
        );
    }
    if let Some(hook) = st.start_hooks.first_pending() {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("[-]poststarthook/{hook} failed: not finished\nreadyz check failed\n"),
        );
    }
    for ns in ["default", "kube-system", "kube-public"] {
        if st.cache.get(&kuorum_store::keys::namespace_key(ns)).1.is_none() {
            return text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("[-]system-namespaces: {ns} not applied yet\nreadyz check failed\n"),
            );
        }
    }
    text(StatusCode::OK, "ok".into())
}

/// The host and port clients reached us at, for `serverAddressByClientCIDRs`.
fn server_address(headers: &HeaderMap) -> String {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or("127.0.0.1:6443")
        .to_string()
}

/// `GET /api`.
pub(crate) async fn api(headers: HeaderMap) -> Response {
    if negotiate::wants_aggregated_discovery(&headers) {
        let body = serde_json::to_vec(&docs::aggregated_core()).unwrap_or_default();
        return vary_accept(json_response_as(StatusCode::OK, docs::AGGREGATED_CONTENT_TYPE, body));
    }
    if let Err(e) = negotiate::check_accept(&headers) {
        return fail(e);
    }
    vary_accept(json(&docs::api_versions(&server_address(&headers))))
}

/// `GET /apis`.
pub(crate) async fn apis(State(st): State<Arc<RestState>>, headers: HeaderMap) -> Response {
    let extensions = crate::aggregator::discovered(&st).await;
    if negotiate::wants_aggregated_discovery(&headers) {
        let mut doc = docs::aggregated_groups(&served(&st).await);
        crate::aggregator::add_to_aggregated(&mut doc, &extensions);
        let body = serde_json::to_vec(&doc).unwrap_or_default();
        return vary_accept(json_response_as(StatusCode::OK, docs::AGGREGATED_CONTENT_TYPE, body));
    }
    if let Err(e) = negotiate::check_accept(&headers) {
        return fail(e);
    }
    let mut doc = docs::api_group_list(&served(&st).await);
    crate::aggregator::add_to_group_list(&mut doc, &extensions);
    vary_accept(json(&doc))
}

/// `GET /apis/{group}`.
pub(crate) async fn group(
    State(st): State<Arc<RestState>>,
    group: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let Ok(Path(group)) = group else {
        return fail(ApiError::path_not_found());
    };
    if let Err(e) = negotiate::check_accept(&headers) {
        return fail(e);
    }
    match docs::api_group(&served(&st).await, &group) {
        Some(doc) => json(&doc),
        None => match crate::aggregator::group_document(&crate::aggregator::discovered(&st).await, &group) {
            Some(doc) => json(&doc),
            None => fail(ApiError::path_not_found()),
        },
    }
}

/// `GET /api/v1`.
pub(crate) async fn core_resources(headers: HeaderMap) -> Response {
    if let Err(e) = negotiate::check_accept(&headers) {
        return fail(e);
    }
    match docs::api_resource_list(&kuorum_api::registry::builtin(), "", "v1") {
        Some(doc) => json(&doc),
        None => fail(ApiError::path_not_found()),
    }
}

/// `GET /apis/{group}/{version}`: ours, or an extension API server's (proxied).
pub(crate) async fn group_resources(
    State(st): State<Arc<RestState>>,
    gv: Result<Path<(String, String)>, PathRejection>,
    req: axum::extract::Request,
) -> Response {
    let Ok(Path((group, version))) = gv else {
        return fail(ApiError::path_not_found());
    };
    if !kuorum_api::registry::serves_group_version(&group, &version) {
        if let Some(apiservice) = crate::aggregator::find(&st, &group, &version) {
            let (parts, body) = req.into_parts();
            return crate::aggregator::proxy(&st, &apiservice, parts, body).await.unwrap_or_else(fail);
        }
    }
    let headers = req.headers().clone();
    if let Err(e) = negotiate::check_accept(&headers) {
        return fail(e);
    }
    match docs::api_resource_list(&served(&st).await, &group, &version) {
        Some(doc) => json(&doc),
        None => fail(ApiError::path_not_found()),
    }
}
