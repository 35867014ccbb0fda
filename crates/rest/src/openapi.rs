//! `GET /openapi/v3` and `GET /openapi/v3/{group-version}`: the documents of
//! [`kuorum_schema::openapi`], served as kube-apiserver's kube-openapi `handler3` serves
//! them.
//!
//! - The index is JSON whatever `Accept` says, with an `ETag`.
//! - A group-version document is JSON when `Accept` allows it (absent, `application/json`,
//!   `application/*`, `*/*`); kube-apiserver can also answer protobuf
//!   (`application/com.github.proto-openapi.spec.v3.v1.0+protobuf`), kuorum cannot, so an
//!   `Accept` naming only that is 406. kubectl and client-go ask for JSON.
//! - `?hash=` is what the index advertises: the current hash adds
//!   `Cache-Control: public, immutable`, a stale one is redirected (301) to the current URL.
//! - `If-None-Match` with the current `ETag` answers 304.
//! - An unknown group-version is a 404 Status.
//!
//! The documents are the built-in ones, one per group-version of this node's custom
//! resources ([`crate::custom::CustomResources::openapi`]), and the extension API
//! servers' of their APIServices' group-versions, as kube's aggregator merges them
//! ([`crate::aggregator::openapi_documents`]); the index is read at the newest state, as
//! discovery is.
//!
//! `GET /openapi/v2` serves [`kuorum_schema::openapi_v2`]'s one Swagger 2.0 document of
//! the same resources ([`crate::custom::CustomResources::openapi_v2`], also read at the
//! newest state), as kube-openapi's `handler` serves it:
//!
//! - `Accept`'s entries by weight, the more specific first; the first that names JSON
//!   (or a wildcard), `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (what
//!   client-go's `OpenAPISchema()` sends) or `...spec.v2.v1.0+protobuf` decides; none
//!   (or no `Accept`) is JSON; none that can be served is a 406 Status (kube: an empty 406);
//! - the protobuf answer is labelled `application/com.github.proto-openapi.spec.v2.v1.0+protobuf`;
//! - both forms share one `ETag` and carry `Vary: Accept` and `Last-Modified` (when the
//!   document was built); `If-None-Match` with it, or else `If-Modified-Since` not before
//!   it, answers 304.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use kuorum_api::ApiError;
use kuorum_schema::openapi::{self as docs, Document, OpenApiV3};
use kuorum_schema::openapi_v2::{self as swagger, OpenApiV2};

use crate::consistency::try_most_recent;
use crate::discovery::FRESH_WITHIN;
use crate::error::RestError;
use crate::negotiate::{self, MediaType, JSON};
use crate::query::Query;
use crate::RestState;

/// `GET /openapi/v3`.
pub(crate) async fn index(State(st): State<Arc<RestState>>, headers: HeaderMap) -> Response {
    try_most_recent(&st, FRESH_WITHIN).await;
    index_of(&*served(&st).await, &headers)
}

/// `GET /openapi/v3/{*gv}`: `api/v1`, `apis/apps/v1`, ...
pub(crate) async fn group_version(State(st): State<Arc<RestState>>, req: Request) -> Response {
    let path = req.uri().path().strip_prefix(docs::INDEX_PATH).and_then(|p| p.strip_prefix('/')).unwrap_or("");
    if st.custom.openapi(&st.cache).document(path).is_none() {
        // The group-version of a CRD created through another node: look at the newest state.
        try_most_recent(&st, FRESH_WITHIN).await;
    }
    document_of(&*served(&st).await, req)
}

/// The documents served: the built-in and custom resources', and the extension API
/// servers' of their group-versions ([`crate::aggregator::openapi_documents`]).
async fn served(st: &RestState) -> Arc<OpenApiV3> {
    let own = st.custom.openapi(&st.cache);
    let aggregated = crate::aggregator::openapi_documents(st).await;
    if aggregated.is_empty() {
        return own;
    }
    Arc::new(own.with_served(aggregated))
}

/// The index of `served`.
fn index_of(served: &OpenApiV3, headers: &HeaderMap) -> Response {
    respond(served.index(), headers)
}

/// The group-version document a request names, from `served`.
fn document_of(served: &OpenApiV3, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let path = parts.uri.path().strip_prefix(docs::INDEX_PATH).and_then(|p| p.strip_prefix('/')).unwrap_or("");
    let Some(doc) = served.document(path) else {
        return RestError(ApiError::path_not_found()).into_response();
    };
    if !negotiate::accepts_json(&parts.headers) {
        return RestError(ApiError::not_acceptable(&[JSON])).into_response();
    }
    let query = Query::parse(parts.uri.query());
    let hash = query.get("hash").filter(|h| !h.is_empty());
    if hash.is_some_and(|h| h != doc.hash) {
        let mut resp = StatusCode::MOVED_PERMANENTLY.into_response();
        let location = docs::server_relative_url(path, &doc.hash);
        if let Ok(v) = HeaderValue::from_str(&location) {
            resp.headers_mut().insert(header::LOCATION, v);
        }
        resp.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
        return resp;
    }
    let mut resp = respond(doc, &parts.headers);
    resp.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
    if hash.is_some() {
        resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, immutable"));
    }
    resp
}

/// A served document's bytes, shared with the set it belongs to (never copied).
struct Shared(Arc<Document>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0.json
    }
}

/// The document with its `ETag`, or 304 when the client holds it already.
fn respond(doc: &Arc<Document>, headers: &HeaderMap) -> Response {
    let etag = format!("\"{}\"", doc.hash);
    let mut resp = if if_none_match(headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut r = (StatusCode::OK, Bytes::from_owner(Shared(doc.clone()))).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
        r
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        resp.headers_mut().insert(header::ETAG, v);
    }
    resp
}

/// `GET /openapi/v2`.
pub(crate) async fn swagger(State(st): State<Arc<RestState>>, headers: HeaderMap) -> Response {
    // A CRD created through another node is in it, as in the index.
    try_most_recent(&st, FRESH_WITHIN).await;
    swagger_of(&st.custom.openapi_v2(&st.cache, || st.clock.now_unix_seconds()), &headers)
}

/// The two forms of `/openapi/v2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SwaggerForm {
    Json,
    Protobuf,
}

/// The form `Accept` asks for, as kube-openapi picks it (see the module docs); `q=0`
/// refuses an entry.
fn swagger_form(headers: &HeaderMap) -> Option<SwaggerForm> {
    let mut listed: Vec<MediaType> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter(|m| !m.trim().is_empty())
        .map(MediaType::parse)
        .collect();
    if listed.is_empty() {
        return Some(SwaggerForm::Json);
    }
    let weight = |m: &MediaType| m.param("q").and_then(|q| q.parse::<f32>().ok()).unwrap_or(1.0);
    let wildcards = |m: &MediaType| match m.essence.split_once('/') {
        Some(("*", _)) | None => 2,
        Some((_, "*")) => 1,
        _ => 0,
    };
    listed.retain(|m| weight(m) > 0.0);
    listed.sort_by(|a, b| weight(b).total_cmp(&weight(a)).then(wildcards(a).cmp(&wildcards(b))));
    listed.iter().find_map(|m| match m.essence.as_str() {
        "application/json" | "application/*" | "*/*" | "*" => Some(SwaggerForm::Json),
        swagger::PROTOBUF | swagger::PROTOBUF_DEPRECATED => Some(SwaggerForm::Protobuf),
        _ => None,
    })
}

/// One form of a served `/openapi/v2`, shared with the memo (never copied).
struct SharedSwagger(Arc<OpenApiV2>, SwaggerForm);

impl AsRef<[u8]> for SharedSwagger {
    fn as_ref(&self) -> &[u8] {
        match self.1 {
            SwaggerForm::Json => &self.0.json,
            SwaggerForm::Protobuf => &self.0.protobuf,
        }
    }
}

/// `doc` in the form `headers` ask for, or 304, or 406.
fn swagger_of(doc: &Arc<OpenApiV2>, headers: &HeaderMap) -> Response {
    let vary = |mut resp: Response| {
        resp.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
        resp
    };
    let Some(form) = swagger_form(headers) else {
        return vary(RestError(ApiError::not_acceptable(&[JSON, swagger::PROTOBUF])).into_response());
    };
    let etag = format!("\"{}\"", doc.hash);
    // Go's `http.ServeContent`: If-Modified-Since counts only without If-None-Match.
    let unchanged = if headers.contains_key(header::IF_NONE_MATCH) {
        if_none_match(headers, &etag)
    } else {
        headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_http_date)
            .is_some_and(|since| doc.last_modified <= since)
    };
    let mut resp = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let content_type = match form {
            SwaggerForm::Json => JSON,
            SwaggerForm::Protobuf => swagger::PROTOBUF,
        };
        let mut r = (StatusCode::OK, Bytes::from_owner(SharedSwagger(doc.clone(), form))).into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        if let Ok(v) = HeaderValue::from_str(&http_date(doc.last_modified)) {
            r.headers_mut().insert(header::LAST_MODIFIED, v);
        }
        r
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        resp.headers_mut().insert(header::ETAG, v);
    }
    vary(resp)
}

const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// Unix seconds as an HTTP date (IMF-fixdate: `Sat, 21 Nov 2026 23:45:28 GMT`).
fn http_date(secs: i64) -> String {
    let rfc3339 = kuorum_api::time::format(secs);
    let field = |range: std::ops::Range<usize>| rfc3339.get(range).unwrap_or("");
    let month = field(5..7).parse::<usize>().ok().and_then(|m| MONTHS.get(m.wrapping_sub(1))).unwrap_or(&"Jan");
    let weekday = WEEKDAYS[secs.div_euclid(86_400).rem_euclid(7) as usize];
    format!("{weekday}, {} {month} {} {} GMT", field(8..10), field(0..4), field(11..19))
}

/// An IMF-fixdate as Unix seconds (the obsolete RFC 850 and asctime forms are not read:
/// the condition is then ignored and the document sent).
fn parse_http_date(s: &str) -> Option<i64> {
    let mut parts = s.split_whitespace();
    let (_weekday, day, month, year, time, zone) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if zone != "GMT" || parts.next().is_some() || day.len() != 2 || year.len() != 4 || time.len() != 8 {
        return None;
    }
    let month = MONTHS.iter().position(|m| *m == month)? + 1;
    kuorum_api::time::unix_seconds(&format!("{year}-{month:02}-{day}T{time}Z"))
}

/// Whether `If-None-Match` names `etag` (weak or strong) or is `*`.
fn if_none_match(headers: &HeaderMap, etag: &str) -> bool {
    headers.get_all(header::IF_NONE_MATCH).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|t| {
        let t = t.trim();
        t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::routing::get;
    use axum::Router;
    use http_body_util::BodyExt;
    use serde_json::Value;
    use tower::ServiceExt;

    fn router() -> Router {
        Router::new()
            .route("/openapi/v3", get(|h: HeaderMap| async move { index_of(OpenApiV3::builtin(), &h) }))
            .route("/openapi/v3/{*gv}", get(|req: Request| async move { document_of(OpenApiV3::builtin(), req) }))
    }

    async fn call(uri: &str, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, Vec<u8>) {
        let mut req = axum::http::Request::get(uri);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = router().oneshot(req.body(Body::empty()).unwrap()).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
        (status, headers, body)
    }

    #[tokio::test]
    async fn index_then_each_document_at_its_url() {
        let (status, h, body) = call("/openapi/v3", &[("accept", "application/json, */*")]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(h[header::CONTENT_TYPE], "application/json");
        let index: Value = serde_json::from_slice(&body).unwrap();
        let paths = index["paths"].as_object().unwrap();
        for gv in ["api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"] {
            let url = paths[gv]["serverRelativeURL"].as_str().unwrap();
            // What kubectl sends for a group-version document.
            let (status, h, body) = call(url, &[("accept", "application/json")]).await;
            assert_eq!(status, StatusCode::OK, "{url}");
            assert_eq!(h[header::CONTENT_TYPE], "application/json");
            assert_eq!(h[header::CACHE_CONTROL], "public, immutable");
            assert_eq!(h[header::VARY], "Accept");
            let hash = url.split("hash=").nth(1).unwrap();
            assert_eq!(h[header::ETAG], format!("\"{hash}\"").as_str());
            let doc: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(doc["openapi"], "3.0.0");
            assert!(doc["paths"].as_object().unwrap().keys().all(|p| p.starts_with(&format!("/{gv}/"))), "{gv}");
        }
    }

    #[tokio::test]
    async fn without_a_hash_and_with_a_stale_one() {
        let (status, h, _) = call("/openapi/v3/apis/apps/v1", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert!(h.get(header::CACHE_CONTROL).is_none());
        let current = OpenApiV3::builtin().url_of("apis/apps/v1").unwrap();
        let (status, h, _) = call("/openapi/v3/apis/apps/v1?hash=0123", &[]).await;
        assert_eq!(status, StatusCode::MOVED_PERMANENTLY);
        assert_eq!(h[header::LOCATION], current.as_str());
    }

    #[tokio::test]
    async fn etags_revalidate() {
        let (_, h, _) = call("/openapi/v3", &[]).await;
        let etag = h[header::ETAG].to_str().unwrap().to_string();
        let (status, h, body) = call("/openapi/v3", &[("if-none-match", &etag)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        assert_eq!(h[header::ETAG], etag.as_str());
        assert!(body.is_empty());
        let (_, h, _) = call("/openapi/v3/api/v1", &[]).await;
        let etag = h[header::ETAG].to_str().unwrap().to_string();
        let (status, _, _) = call("/openapi/v3/api/v1", &[("if-none-match", &format!("\"x\", W/{etag}"))]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        let (status, _, _) = call("/openapi/v3/api/v1", &[("if-none-match", "\"x\"")]).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn unknown_group_versions_are_not_found() {
        for uri in ["/openapi/v3/apis/apps/v2", "/openapi/v3/apis/apps", "/openapi/v3/api/v1/", "/openapi/v3/x"] {
            let (status, h, body) = call(uri, &[]).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{uri}");
            assert_eq!(h[header::CONTENT_TYPE], "application/json");
            let s: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(
                (s["kind"].as_str(), s["reason"].as_str(), s["code"].as_u64()),
                (Some("Status"), Some("NotFound"), Some(404))
            );
        }
    }

    #[test]
    fn http_dates_both_ways() {
        // The tests' fixed clock, and the example of RFC 9110.
        assert_eq!(http_date(1_795_304_728), "Sat, 21 Nov 2026 23:45:28 GMT");
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(parse_http_date(&http_date(0)), Some(0));
        for bad in ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37 PST", ""] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_swagger_form_accept_picks() {
        let form = |accept: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
            swagger_form(&h)
        };
        assert_eq!(swagger_form(&HeaderMap::new()), Some(SwaggerForm::Json));
        assert_eq!(form(swagger::PROTOBUF_DEPRECATED), Some(SwaggerForm::Protobuf));
        assert_eq!(form(swagger::PROTOBUF), Some(SwaggerForm::Protobuf));
        assert_eq!(form("*/*"), Some(SwaggerForm::Json));
        assert_eq!(form("application/*"), Some(SwaggerForm::Json));
        // The more specific entry first at equal weight; weight first.
        assert_eq!(form(&format!("*/*, {}", swagger::PROTOBUF)), Some(SwaggerForm::Protobuf));
        assert_eq!(form(&format!("application/json;q=0.5, {}", swagger::PROTOBUF)), Some(SwaggerForm::Protobuf));
        assert_eq!(form(&format!("application/json, {};q=0.9", swagger::PROTOBUF)), Some(SwaggerForm::Json));
        assert_eq!(form("application/xml, text/*;q=0.5"), None);
        assert_eq!(form("application/json;q=0"), None);
        assert_eq!(form("application/vnd.kubernetes.protobuf, application/json"), Some(SwaggerForm::Json));
    }

    #[tokio::test]
    async fn protobuf_only_is_not_acceptable() {
        let pb = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf";
        let (status, _, body) = call("/openapi/v3/api/v1", &[("accept", pb)]).await;
        assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
        let s: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(s["reason"], "NotAcceptable");
        let (status, h, _) = call("/openapi/v3/api/v1", &[("accept", &format!("{pb}, application/json"))]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(h[header::CONTENT_TYPE], "application/json");
        let (status, _, _) = call("/openapi/v3/api/v1", &[("accept", "application/json;q=0")]).await;
        assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
        // The index answers JSON whatever is asked, as kube-apiserver does.
        let (status, _, _) = call("/openapi/v3", &[("accept", pb)]).await;
        assert_eq!(status, StatusCode::OK);
    }
}
