//! The one place a failure becomes a response: [`RestError`] wraps a
//! [`kuorum_api::ApiError`] and renders it as a `metav1.Status` with its HTTP code,
//! `Content-Type: application/json`, and `Retry-After` when the Status asks for one.
//! Also how cluster and apply outcomes map to Statuses.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use kuorum_api::{ApiError, ResourceDef};
use kuorum_raft::ClusterError;
use kuorum_store::WriteError;

/// An [`ApiError`] on its way out as a response.
#[derive(Debug, Clone)]
pub struct RestError(pub ApiError);

impl From<ApiError> for RestError {
    fn from(e: ApiError) -> Self {
        RestError(e)
    }
}

impl IntoResponse for RestError {
    fn into_response(self) -> Response {
        let e = self.0;
        let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (code, e.to_body()).into_response();
        let headers = resp.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(secs) = e.retry_after_seconds() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

/// Why the cluster could not answer, as a Status.
pub fn cluster_error(e: ClusterError) -> ApiError {
    match e {
        ClusterError::Timeout => {
            ApiError::timeout("request did not complete within requested timeout - context deadline exceeded", 0)
        }
        ClusterError::NoLeader | ClusterError::Shutdown | ClusterError::NotMember => {
            ApiError::service_unavailable(e.to_string())
        }
        ClusterError::Fatal(msg) => ApiError::internal(msg),
    }
}

/// Why apply changed nothing, as a Status about `name` of `def`.
pub fn write_error(e: WriteError, def: &ResourceDef, name: &str) -> ApiError {
    let gr = def.group_resource();
    match e {
        WriteError::NotFound => ApiError::not_found(gr, name),
        WriteError::AlreadyExists => ApiError::already_exists(gr, name),
        WriteError::Conflict => ApiError::conflict(gr, name),
        WriteError::UidMismatch { wanted, actual } => ApiError::uid_precondition_conflict(gr, name, &wanted, &actual),
        WriteError::NamespaceNotFound(ns) => ApiError::namespace_not_found(&ns),
        WriteError::NamespaceTerminating(ns) => ApiError::namespace_terminating(gr, name, &ns),
        WriteError::InvalidObject(msg) => ApiError::internal(msg),
    }
}

/// The router's fallback: nothing is served at this path.
pub(crate) async fn path_not_found() -> RestError {
    RestError(ApiError::path_not_found())
}

/// The router's fallback for a path served under other methods.
pub(crate) async fn method_not_allowed() -> RestError {
    RestError(ApiError::method_not_allowed())
}
