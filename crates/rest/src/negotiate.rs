//! Content negotiation: which request bodies kuorum decodes (JSON; a missing
//! Content-Type means JSON), which `Accept` headers it can satisfy (JSON; the
//! `meta.k8s.io` Table and PartialObjectMetadata(List) views of reads; aggregated
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

    /// The `q` weight (1 when absent or unparsable).
    fn quality(&self) -> f32 {
        self.param("q").and_then(|q| q.parse::<f32>().ok()).unwrap_or(1.0)
    }
}

/// Every media type listed in the request's `Accept` headers, refused ones (`q=0`)
/// included.
fn accepted_all(headers: &HeaderMap) -> Vec<MediaType> {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter(|s| !s.trim().is_empty())
        .map(MediaType::parse)
        .collect()
}

/// Every media type the request's `Accept` headers accept (`q` above 0).
fn accepted(headers: &HeaderMap) -> Vec<MediaType> {
    accepted_all(headers).into_iter().filter(|m| !m.refused()).collect()
}

/// Whether a plain JSON answer satisfies `Accept`: none (or empty) means anything; else
/// `application/json` without an `as=` view, or a wildcard, not refused with `q=0`.
pub fn accepts_json(headers: &HeaderMap) -> bool {
    let listed = accepted_all(headers);
    listed.is_empty()
        || listed.iter().any(|m| {
            !m.refused()
                && matches!(m.essence.as_str(), "application/json" | "application/*" | "*/*")
                && m.param("as").is_none()
        })
}

/// Succeeds when `Accept` can be satisfied by JSON or by one of the `meta.k8s.io` views
/// ([`negotiate_output`]); otherwise 406 NotAcceptable.
pub fn check_accept(headers: &HeaderMap) -> Result<(), ApiError> {
    negotiate_output(headers).map(|_| ())
}

/// The group of the types a read can be transformed into.
pub const META_GROUP: &str = "meta.k8s.io";

/// A version of `meta.k8s.io` that has Table and PartialObjectMetadata(List).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaVersion {
    V1,
    V1beta1,
}

impl MetaVersion {
    fn parse(v: &str) -> Option<MetaVersion> {
        match v {
            "v1" => Some(MetaVersion::V1),
            "v1beta1" => Some(MetaVersion::V1beta1),
            _ => None,
        }
    }

    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// What a response body is, as negotiated from `Accept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The resource's own JSON (objects and lists as stored).
    Json,
    /// `application/json;as=Table;v=..;g=meta.k8s.io`: the server-side columns of
    /// `kubectl get`.
    Table(MetaVersion),
    /// `as=PartialObjectMetadata`: only the metadata of one object (and of each watch
    /// event's object).
    PartialObjectMetadata(MetaVersion),
    /// `as=PartialObjectMetadataList`: only the metadata of each item of a list.
    PartialObjectMetadataList(MetaVersion),
}

impl Output {
    /// The `Content-Type` of a get or list answered this way: the media type with the
    /// `as`, `v` and `g` that were asked for.
    pub fn content_type(self) -> &'static str {
        use MetaVersion::*;
        match self {
            Output::Json => JSON,
            Output::Table(V1) => "application/json;as=Table;v=v1;g=meta.k8s.io",
            Output::Table(V1beta1) => "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
            Output::PartialObjectMetadata(V1) => "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
            Output::PartialObjectMetadata(V1beta1) => {
                "application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io"
            }
            Output::PartialObjectMetadataList(V1) => "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
            Output::PartialObjectMetadataList(V1beta1) => {
                "application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io"
            }
        }
    }
}

/// What to answer with, as kube-apiserver negotiates it: the `Accept` entries by
/// preference (higher `q` first, then concrete types before wildcards, then as listed), the
/// first one kuorum can produce wins. JSON (`application/json`, `application/*`, `*/*`)
/// without `as`/`g`/`v` is the resource's JSON; with them it must name Table,
/// PartialObjectMetadata or PartialObjectMetadataList in `meta.k8s.io` v1 or v1beta1.
/// No `Accept` means JSON; nothing producible is 406.
pub fn negotiate_output(headers: &HeaderMap) -> Result<Output, ApiError> {
    let listed = headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).any(|v| !v.trim().is_empty());
    if !listed {
        return Ok(Output::Json);
    }
    let mut clauses = accepted(headers);
    // A stable sort, as goautoneg orders clauses.
    clauses.sort_by(|a, b| {
        let rank = |m: &MediaType| {
            let (ty, sub) = m.essence.split_once('/').unwrap_or((m.essence.as_str(), ""));
            (ty == "*", sub == "*")
        };
        b.quality().total_cmp(&a.quality()).then_with(|| rank(a).cmp(&rank(b)))
    });
    clauses.iter().find_map(output_for).ok_or_else(|| ApiError::not_acceptable(&[JSON]))
}

/// Whether the most preferred entry of `Accept` that kuorum can produce is protobuf
/// (`application/vnd.kubernetes.protobuf`, as client-go's typed clients and kubectl's
/// create commands send it first). The body is then made as JSON ([`Output::Json`]) and
/// re-encoded on the way out (`crate::protobuf`).
pub fn prefers_protobuf(headers: &HeaderMap) -> bool {
    let mut clauses = accepted(headers);
    clauses.sort_by(|a, b| b.quality().total_cmp(&a.quality()));
    clauses.iter().find(|m| output_for(m).is_some()).is_some_and(|m| m.essence == kuorum_protobuf::MEDIA_TYPE)
}

/// The output one `Accept` entry asks for, if kuorum can produce it. Protobuf without
/// `as` is the resource itself: JSON re-encoded at the end (see [`prefers_protobuf`]).
fn output_for(m: &MediaType) -> Option<Output> {
    if m.essence == kuorum_protobuf::MEDIA_TYPE {
        return (m.param("as").is_none() && m.param("g").is_none()).then_some(Output::Json);
    }
    if !matches!(m.essence.as_str(), "application/json" | "application/*" | "*/*") {
        return None;
    }
    // Watches are served as `stream=watch`; no other stream schema exists.
    if m.param("stream").is_some_and(|s| !s.is_empty() && s != "watch") {
        return None;
    }
    let (kind, group, version) = (m.param("as"), m.param("g"), m.param("v"));
    if kind.is_none() && group.is_none() && version.is_none() {
        return Some(Output::Json);
    }
    if group != Some(META_GROUP) {
        return None;
    }
    let version = MetaVersion::parse(version?)?;
    match kind? {
        "Table" => Some(Output::Table(version)),
        "PartialObjectMetadata" => Some(Output::PartialObjectMetadata(version)),
        "PartialObjectMetadataList" => Some(Output::PartialObjectMetadataList(version)),
        _ => None,
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
        // Protobuf alone is served (re-encoded from JSON on the way out, `crate::protobuf`).
        assert!(check_accept(&headers(&[("accept", "application/vnd.kubernetes.protobuf")])).is_ok());
        assert!(prefers_protobuf(&headers(&[("accept", "application/vnd.kubernetes.protobuf,application/json")])));
        assert!(!prefers_protobuf(&headers(&[("accept", "application/json,application/vnd.kubernetes.protobuf")])));
        assert!(check_accept(&headers(&[(
            "accept",
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"
        )]))
        .is_err());
        assert!(check_accept(&headers(&[("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")])).is_ok());
        assert!(check_accept(&headers(&[("accept", "application/json;as=Table")])).is_err());
        assert!(check_accept(&headers(&[("accept", "application/json;q=0")])).is_err());
    }

    fn output(accept: &'static str) -> Result<Output, u16> {
        negotiate_output(&headers(&[("accept", accept)])).map_err(|e| e.code)
    }

    #[test]
    fn table_and_partial_metadata_are_negotiated() {
        use MetaVersion::*;
        let kubectl_get = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;\
                           g=meta.k8s.io,application/json";
        assert_eq!(output(kubectl_get), Ok(Output::Table(V1)));
        assert_eq!(output("application/json;as=Table;v=v1beta1;g=meta.k8s.io"), Ok(Output::Table(V1beta1)));
        assert_eq!(output("application/json;g=meta.k8s.io;v=v1;as=Table"), Ok(Output::Table(V1)));
        assert_eq!(output("*/*;as=Table;v=v1;g=meta.k8s.io"), Ok(Output::Table(V1)));
        assert_eq!(negotiate_output(&HeaderMap::new()), Ok(Output::Json));
        assert_eq!(output("application/json"), Ok(Output::Json));
        assert_eq!(output("application/json;stream=watch"), Ok(Output::Json));
        assert_eq!(output("application/json, */*"), Ok(Output::Json));

        // client-go's metadata client: protobuf first (skipped), then JSON.
        let metadata_list = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,\
                             application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
        assert_eq!(output(metadata_list), Ok(Output::PartialObjectMetadataList(V1)));
        assert_eq!(
            output("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1"),
            Ok(Output::PartialObjectMetadata(V1beta1))
        );

        // Preference: q first, then concrete before wildcard, then the order given.
        assert_eq!(
            output("application/json;q=0.5,application/json;as=Table;v=v1;g=meta.k8s.io"),
            Ok(Output::Table(V1))
        );
        assert_eq!(output("*/*,application/json;as=Table;v=v1;g=meta.k8s.io"), Ok(Output::Table(V1)));
        assert_eq!(output("application/json,application/json;as=Table;v=v1;g=meta.k8s.io"), Ok(Output::Json));
        assert_eq!(output("application/json;as=Table;v=v1;g=meta.k8s.io;q=0,application/json"), Ok(Output::Json));

        // Table in a version or group that has none, an unknown `as`, a partial triple,
        // a media type kuorum does not write, or a stream schema other than watch: 406.
        for bad in [
            "application/json;as=Table;v=v2;g=meta.k8s.io",
            "application/json;as=Table;v=v1;g=apps",
            "application/json;as=Table;v=v1",
            "application/json;as=Table",
            "application/json;as=Scale;v=v1;g=meta.k8s.io",
            "application/json;g=meta.k8s.io;v=v1",
            "application/yaml;as=Table;v=v1;g=meta.k8s.io",
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
            "application/json;stream=other",
        ] {
            assert_eq!(output(bad), Err(406), "{bad}");
        }
        let e = negotiate_output(&headers(&[("accept", "application/json;as=Table;v=v2;g=meta.k8s.io")])).unwrap_err();
        assert_eq!(e.message, "only the following media types are accepted: application/json");
    }

    #[test]
    fn content_types_name_the_view() {
        use MetaVersion::*;
        assert_eq!(Output::Json.content_type(), "application/json");
        assert_eq!(Output::Table(V1).content_type(), "application/json;as=Table;v=v1;g=meta.k8s.io");
        assert_eq!(Output::Table(V1beta1).content_type(), "application/json;as=Table;v=v1beta1;g=meta.k8s.io");
        assert_eq!(
            Output::PartialObjectMetadataList(V1).content_type(),
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
        );
        assert_eq!(V1.api_version(), "meta.k8s.io/v1");
        assert_eq!(V1beta1.api_version(), "meta.k8s.io/v1beta1");
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
