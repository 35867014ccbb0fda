//! Every parser of client bytes the REST layer runs before a request reaches storage,
//! gathered behind one small public surface for the fuzz targets (`fuzz/`): request
//! bodies (JSON, YAML, protobuf by Content-Type), query strings with the options read
//! from them, continue tokens, Accept headers, and request paths as authorization and
//! routing name them. Each answers a Kubernetes error for bad input; none may panic.

use axum::http::{header, HeaderMap, HeaderValue};
use kuorum_api::rbac::Attributes;
use kuorum_api::ApiError;
use serde_json::{Map, Value};

use crate::consistency::ListOptions;
use crate::fields::FieldValidation;
use crate::object::{self, BodyFormat};
use crate::query::Query;
use crate::request::RequestInfo;

/// A request body as the verbs decode it, its format chosen by `content_type`.
pub fn body(content_type: &str, bytes: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(content_type) {
        headers.insert(header::CONTENT_TYPE, v);
    }
    let format = BodyFormat::of(&headers)?;
    object::decode_as(format, bytes)
}

/// A query string, and every option a list, watch or write reads from it.
pub fn query(raw: &str) -> Result<(), ApiError> {
    let q = Query::parse(Some(raw));
    ListOptions::parse(&q)?;
    FieldValidation::parse(&q, "CreateOptions")?;
    object::query_dry_run(&q)?;
    crate::fields::manager(&q, &HeaderMap::new(), "PatchOptions", q.flag("force"))?;
    Ok(())
}

/// A continue token for the collection under `prefix`: the key to resume after.
pub fn continue_token(token: &str, prefix: &str) -> Result<String, ApiError> {
    crate::token::decode(token, prefix).map(|t| t.start_after())
}

/// An Accept header: the response format it asks for.
pub fn accept(value: &str) -> Result<(), ApiError> {
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(header::ACCEPT, v);
    }
    crate::negotiate::check_accept(&headers)?;
    crate::negotiate::negotiate_output(&headers).map(|_| ())
}

/// A request path and query parsed once ([`RequestInfo`]), as authorization names it,
/// and the resource path as the router resolves it among the built-in resources.
pub fn path(method: &str, path: &str, query: &str) -> (Attributes, Result<(), ApiError>) {
    let info = RequestInfo::parse(method, path, Some(query));
    let routed = match &info.resource {
        Some(r) => crate::target::target(r, &crate::target::builtin).map(|_| ()),
        None => Err(ApiError::path_not_found()),
    };
    (info.attributes(), routed)
}
