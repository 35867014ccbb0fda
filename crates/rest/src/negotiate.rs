//! Content negotiation: which request bodies kuorum decodes (JSON; a missing
//! Content-Type means JSON), which `Accept` headers it can satisfy (JSON, or aggregated
//! discovery on `/api` and `/apis`), the body size limit, and JSON responses.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use kuorum_api::ApiError;

/// The media type of every body kuorum reads and writes.
pub const JSON: &str = "application/json";

/// The largest request body accepted (kube-apiserver's 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// One entry of an `Accept` or `Content-Type` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaType {
    /// `type/subtype`, lowercased.
    pub essence: String,
    /// Parameters in order, names lowercased, values unquoted.
    pub params: Vec<(String, String)>,
}

impl MediaType {
    pub fn parse(s: &str) -> MediaType {
        let mut parts = s.split(';');
        let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let params = parts
            .filter_map(|p| {
                let (k, v) = p.split_once('=')?;
                Some((k.trim().to_ascii_lowercase(), v.trim().trim_matches('"').to_string()))
            })
            .collect();
        MediaType { essence, params }
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// `q=0` means "not acceptable".
    fn refused(&self) -> bool {
        self.param("q").and_then(|q| q.parse::<f32>().ok()).is_some_and(|q| q <= 0.0)
    }
}

/// Every media type listed in the request's `Accept` headers.
fn accepted(headers: &HeaderMap) -> Vec<MediaType> {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter(|s| !s.trim().is_empty())
        .map(MediaType::parse)
        .filter(|m| !m.refused())
        .collect()
}

/// Succeeds when a plain JSON answer satisfies `Accept` (no header means anything goes);
/// otherwise 406 NotAcceptable. `application/json;as=Table` alone is not satisfied.
pub fn check_accept(headers: &HeaderMap) -> Result<(), ApiError> {
    if headers.get(header::ACCEPT).is_none() {
        return Ok(());
    }
    let listed = headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).any(|v| !v.trim().is_empty());
    if !listed {
        return Ok(());
    }
    let ok = accepted(headers).iter().any(|m| match m.essence.as_str() {
        "*/*" | "application/*" => true,
        "application/json" => m.param("as").is_none(),
        _ => false,
    });
    if ok {
        Ok(())
    } else {
        Err(ApiError::not_acceptable(&[JSON]))
    }
}

/// Whether `Accept` asks for aggregated discovery v2 (`as=APIGroupDiscoveryList`).
pub fn wants_aggregated_discovery(headers: &HeaderMap) -> bool {
    accepted(headers).iter().any(|m| {
        m.essence == "application/json"
            && m.param("as") == Some("APIGroupDiscoveryList")
            && m.param("g") == Some("apidiscovery.k8s.io")
            && m.param("v") == Some("v2")
    })
}

/// Succeeds when the body is JSON: no Content-Type, or `application/json` with any
/// parameters. Anything else (protobuf, YAML, patch types) is 415.
pub fn check_body_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let Ok(value) = value.to_str() else {
        return Err(ApiError::unsupported_media_type(&[JSON]));
    };
    if value.trim().is_empty() || MediaType::parse(value).essence == JSON {
        Ok(())
    } else {
        Err(ApiError::unsupported_media_type(&[JSON]))
    }
}

/// Reads the whole body, refusing more than [`MAX_BODY_BYTES`] with 413.
pub async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(ApiError::request_entity_too_large(MAX_BODY_BYTES));
    }
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(ApiError::request_entity_too_large(MAX_BODY_BYTES))
        }
        Err(e) => Err(ApiError::bad_request(format!("unable to read the request body: {e}"))),
    }
}

/// A JSON response with `status`.
pub fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    json_response_as(status, JSON, body)
}

/// A JSON response with an explicit content type (aggregated discovery).
pub fn json_response_as(status: StatusCode, content_type: &'static str, body: impl Into<Body>) -> Response {
    let mut resp = (status, body.into()).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn accept_headers_of_real_clients() {
        assert!(check_accept(&headers(&[])).is_ok());
        assert!(check_accept(&headers(&[("accept", "application/json, */*")])).is_ok());
        let kubectl_get = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;\
                           g=meta.k8s.io,application/json";
        assert!(check_accept(&headers(&[("accept", kubectl_get)])).is_ok());
        assert!(check_accept(&headers(&[("accept", "application/vnd.kubernetes.protobuf,application/json")])).is_ok());
        let e = check_accept(&headers(&[("accept", "application/vnd.kubernetes.protobuf")])).unwrap_err();
        assert_eq!(e.code, 406);
        assert!(check_accept(&headers(&[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")])).is_err());
        assert!(check_accept(&headers(&[("accept", "application/json;q=0")])).is_err());
    }

    #[test]
    fn aggregated_discovery_is_detected() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated_discovery(&headers(&[("accept", kubectl)])));
        assert!(!wants_aggregated_discovery(&headers(&[("accept", "application/json, */*")])));
        let old = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        assert!(!wants_aggregated_discovery(&headers(&[("accept", old)])));
    }

    #[test]
    fn body_content_types() {
        assert!(check_body_content_type(&headers(&[])).is_ok());
        assert!(check_body_content_type(&headers(&[("content-type", "application/json")])).is_ok());
        assert!(check_body_content_type(&headers(&[("content-type", "Application/JSON; charset=utf-8")])).is_ok());
        for bad in ["application/vnd.kubernetes.protobuf", "application/yaml", "application/merge-patch+json"] {
            let mut h = HeaderMap::new();
            h.insert("content-type", HeaderValue::from_static(bad));
            assert_eq!(check_body_content_type(&h).unwrap_err().code, 415, "{bad}");
        }
    }

    #[tokio::test]
    async fn body_limit() {
        let small = read_body(&HeaderMap::new(), Body::from("{}")).await.unwrap();
        assert_eq!(&small[..], b"{}");
        let big = vec![b' '; MAX_BODY_BYTES + 1];
        let e = read_body(&HeaderMap::new(), Body::from(big)).await.unwrap_err();
        assert_eq!(e.code, 413);
        let e = read_body(&headers(&[("content-length", "99999999")]), Body::empty()).await.unwrap_err();
        assert_eq!(e.code, 413);
    }
}
