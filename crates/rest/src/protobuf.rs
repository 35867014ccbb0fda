//! Owns answering in protobuf: when a request prefers `application/vnd.kubernetes.protobuf`
//! (client-go's typed clients and kubectl's create commands list it first), a complete
//! JSON answer of a kind `kuorum-protobuf` knows (objects, lists, Status errors, Scale) is
//! re-encoded in the `k8s\0` envelope on its way out. Handlers never see protobuf: they
//! answer JSON as for any client, and this layer is the one place that converts.
//!
//! What stays JSON: streams (watch), answers of kinds without a protobuf message
//! (discovery documents, Tables), paths outside `/api` and `/apis` (`/openapi/*`,
//! `/version`), and anything that does not parse; such a client listed
//! JSON too, and decodes by the answer's Content-Type.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kuorum_api::ApiError;
use serde_json::Value;

use crate::error::RestError;
use crate::negotiate;

/// The largest JSON answer re-encoded (larger ones are sent as JSON).
const MAX_REENCODE_BYTES: usize = 64 * 1024 * 1024;

/// The middleware: see the module docs.
pub(crate) async fn answer_in_protobuf(req: Request, next: Next) -> Response {
    // Only the API's own paths answer objects: the OpenAPI documents (megabytes of JSON)
    // and the other non-resource paths are never parsed again.
    let api_path = req.uri().path().starts_with("/api");
    let wanted = api_path && negotiate::prefers_protobuf(req.headers());
    // Only needed when protobuf is wanted: most requests skip the second parse of Accept.
    let json_ok = !wanted || negotiate::accepts_json(req.headers());
    let resp = next.run(req).await;
    let size = axum::body::HttpBody::size_hint(resp.body()).exact();
    if !wanted || !is_plain_json(&resp) || size.is_none_or(|n| n > MAX_REENCODE_BYTES as u64) {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_REENCODE_BYTES).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let encoded = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| kuorum_protobuf::encode(&v).ok());
    match encoded {
        Some(pb) => {
            parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kuorum_protobuf::MEDIA_TYPE));
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(pb))
        }
        // Only JSON can say this, and the client did not list JSON.
        None if !json_ok => RestError(ApiError::not_acceptable(&[negotiate::JSON])).into_response(),
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// `application/json` with no `as=` view (not a Table, not discovery).
fn is_plain_json(resp: &Response) -> bool {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(negotiate::MediaType::parse)
        .is_some_and(|m| m.essence == negotiate::JSON && m.param("as").is_none())
}
