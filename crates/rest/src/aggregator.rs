//! Owns the aggregation layer: an `APIService` (apiregistration.k8s.io/v1) named
//! `<version>.<group>` with a `spec.service` makes that group-version served by an
//! extension API server behind the Service, as kube-apiserver's aggregator does:
//!
//! - [`find`] / [`proxy`]: a request under `/apis/<group>/<version>` that no built-in or
//!   custom resource serves is authenticated and authorized here, then forwarded over
//!   HTTPS to the Service's first endpoint (checked against `caBundle`, or not at all with
//!   `insecureSkipTLSVerify`) with the user in kube's front-proxy headers
//!   (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-<key>`; the client's own
//!   credentials and impersonation headers dropped), presenting the node's proxy client
//!   certificate (`--proxy-client-cert-file`) when configured. The answer is streamed back
//!   as it comes, so watches work. An APIService whose `Available` condition is not True
//!   is answered 503.
//! - [`check`]: what the leader's availability controller (`node::apiservice_availability`)
//!   writes to `status.conditions`: the Service and its endpoints exist, and the server
//!   answers its group-version's discovery document.
//! - [`discovered`]: the group-versions discovery lists (legacy and aggregated), with the
//!   resources each server lists, fetched by this node and kept for [`DISCOVERY_TTL`].
//! - [`openapi_documents`]: each available server's `/openapi/v3` document of its
//!   group-version (found through the server's own index), which kuorum's `/openapi/v3`
//!   lists and serves beside its own, kept as long.
//!
//! Not yet: local APIServices' own checks (they are served by kuorum itself and created
//! Available).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::request::Parts;
use axum::response::Response;
use kuorum_api::{ApiError, Reason};
use kuorum_schema::openapi::Document;
use serde_json::{json, Value};

use crate::admission::{cached, cached_list};
use crate::auth::UserInfo;
use crate::object::Object;
use crate::RestState;

const GROUP: &str = "apiregistration.k8s.io";
const PLURAL: &str = "apiservices";

/// How long a check or a discovery fetch may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// How long this node keeps an extension server's discovery document.
pub(crate) const DISCOVERY_TTL: Duration = Duration::from_secs(10);

/// Headers of the client's request never forwarded: its credentials, and what the
/// front-proxy headers carry instead.
const DROPPED: &[&str] = &["authorization", "host", "connection", "content-length", "transfer-encoding"];

/// The stored APIService serving `group`/`version` from a Service, if any.
pub(crate) fn find(st: &RestState, group: &str, version: &str) -> Option<Object> {
    let apiservice = cached(st, GROUP, PLURAL, None, &format!("{version}.{group}"))?;
    apiservice.get("spec")?.get("service").filter(|s| s.is_object())?;
    Some(apiservice)
}

/// Whether the APIService's `Available` condition is True.
fn available(apiservice: &Object) -> bool {
    apiservice.get("status").and_then(|s| s.get("conditions")).and_then(Value::as_array).into_iter().flatten().any(
        |c| {
            c.get("type").and_then(Value::as_str) == Some("Available")
                && c.get("status").and_then(Value::as_str) == Some("True")
        },
    )
}

/// A client for the APIService's server and its base URL (`https://host:port`).
fn client(st: &RestState, apiservice: &Object, timeout: Option<Duration>) -> Result<(reqwest::Client, String), String> {
    let spec = apiservice.get("spec").cloned().unwrap_or(Value::Null);
    let mut service = spec.get("service").cloned().unwrap_or(Value::Null);
    if let Some(s) = service.as_object_mut() {
        s.remove("path");
    }
    let config = json!({"service": service, "caBundle": spec.get("caBundle").cloned().unwrap_or(Value::Null)});
    let insecure = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool) == Some(true);
    crate::webhook::service_client(st, &config, &format!("proxy {timeout:?} {insecure}"), || {
        let mut builder = reqwest::Client::builder().connect_timeout(CHECK_TIMEOUT);
        if let Some(t) = timeout {
            builder = builder.timeout(t);
        }
        if insecure {
            builder = builder.danger_accept_invalid_certs(true);
        }
        if let Some(identity) = st.proxy_identity.as_ref() {
            builder = builder.identity(identity.clone());
        }
        builder
    })
}

fn unavailable(message: String) -> ApiError {
    ApiError::new(Reason::ServiceUnavailable, message)
}

/// Forwards the request (`parts`, `body`) to the APIService's server; answers what it answers.
pub(crate) async fn proxy(st: &RestState, apiservice: &Object, parts: Parts, body: Body) -> Result<Response, ApiError> {
    let name = crate::object::meta_str(apiservice, "name").unwrap_or("").to_string();
    if !available(apiservice) {
        return Err(unavailable(format!(
            "the server is currently unable to handle the request (APIService {name} is not available)"
        )));
    }
    let (client, base) = client(st, apiservice, None).map_err(|e| unavailable(format!("service unavailable: {e}")))?;
    let path_and_query = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let url = format!("{base}{path_and_query}");
    let body = axum::body::to_bytes(body, crate::negotiate::MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::new(Reason::RequestEntityTooLarge, "Request entity too large".to_string()))?;
    let method =
        reqwest::Method::from_bytes(parts.method.as_str().as_bytes()).map_err(|_| ApiError::method_not_allowed())?;
    let mut req = client.request(method, &url).body(body);
    for (k, v) in &parts.headers {
        let key = k.as_str();
        if DROPPED.contains(&key) || key.starts_with("impersonate-") || key.starts_with("x-remote-") {
            continue;
        }
        req = req.header(key, v.as_bytes());
    }
    let user = parts.extensions.get::<UserInfo>();
    if let Some(u) = user {
        req = req.header("X-Remote-User", &u.name);
        for g in &u.groups {
            req = req.header("X-Remote-Group", g);
        }
    }
    if let Some(extra) = parts.extensions.get::<crate::auth::UserExtra>() {
        for (k, values) in &extra.0 {
            for v in values {
                req = req.header(format!("X-Remote-Extra-{}", escape_extra_key(k)), v);
            }
        }
    }
    let resp = req
        .send()
        .await
        .map_err(|e| unavailable(format!("service unavailable: {}", crate::webhook::error_chain(&e))))?;
    let mut out = Response::builder().status(resp.status().as_u16());
    for (k, v) in resp.headers() {
        if !matches!(k.as_str(), "connection" | "transfer-encoding" | "content-length") {
            out = out.header(k.as_str(), v.as_bytes());
        }
    }
    let stream = futures::stream::unfold(resp, |mut resp| async move {
        match resp.chunk().await {
            Ok(Some(chunk)) => Some((Ok::<_, std::io::Error>(chunk), resp)),
            Ok(None) => None,
            Err(e) => Some((Err(std::io::Error::other(e)), resp)),
        }
    });
    out.body(Body::from_stream(stream)).map_err(|e| ApiError::internal(e.to_string()))
}

/// A user-extra key as a header name carries it: percent-encoded, as kube does.
fn escape_extra_key(k: &str) -> String {
    let mut out = String::new();
    for b in k.bytes() {
        if b.is_ascii_alphanumeric() || b"-!#$&'*+.^_`|~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `Available` condition an APIService should have now: (status, reason, message).
pub async fn check(st: &RestState, apiservice: &Object) -> (bool, &'static str, String) {
    let spec = apiservice.get("spec").cloned().unwrap_or(Value::Null);
    let Some(service) = spec.get("service").filter(|s| s.is_object()) else {
        return (true, "Local", "Local APIServices are always available".into());
    };
    let s = |f: &str| service.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let (namespace, name) = (s("namespace"), s("name"));
    let mapped = st.service_map.contains_key(&(namespace.clone(), name.clone()));
    if !mapped && cached(st, "", "services", Some(&namespace), &name).is_none() {
        return (false, "ServiceNotFound", format!("service/{name} in \"{namespace}\" is not present"));
    }
    let has_endpoints = cached(st, "", "endpoints", Some(&namespace), &name).is_some_and(|e| {
        e.get("subsets").and_then(Value::as_array).is_some_and(|s| {
            s.iter().any(|s| s.get("addresses").and_then(Value::as_array).is_some_and(|a| !a.is_empty()))
        })
    });
    if !mapped && !has_endpoints {
        return (
            false,
            "MissingEndpoints",
            format!("endpoints for service/{name} in \"{namespace}\" have no addresses"),
        );
    }
    match fetch_discovery(st, apiservice).await {
        Ok(_) => (true, "Passed", "all checks passed".into()),
        Err(e) => (false, "FailedDiscoveryCheck", format!("failing or missing response from {e}")),
    }
}

/// The APIService's group and version.
fn group_version(apiservice: &Object) -> (&str, &str) {
    let field = |f: &str| apiservice.get("spec").and_then(|s| s.get(f)).and_then(Value::as_str).unwrap_or("");
    (field("group"), field("version"))
}

/// GETs `path` (with its query) from the APIService's server: the body, at most the
/// request body limit, of a 2xx answer.
async fn fetch(st: &RestState, apiservice: &Object, path: &str) -> Result<Vec<u8>, String> {
    let (client, base) = client(st, apiservice, Some(CHECK_TIMEOUT))?;
    let url = format!("{base}{path}");
    let resp = client.get(&url).send().await.map_err(|e| format!("{url}: {}", crate::webhook::error_chain(&e)))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("{url}: bad status from {url}: {}", status.as_u16()));
    }
    let mut resp = resp;
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if bytes.len() + chunk.len() > crate::negotiate::MAX_BODY_BYTES {
            return Err(format!("{url}: the document is larger than the body limit"));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The APIService's server's discovery document for its group-version.
async fn fetch_discovery(st: &RestState, apiservice: &Object) -> Result<Value, String> {
    let (group, version) = group_version(apiservice);
    let bytes = fetch(st, apiservice, &format!("/apis/{group}/{version}")).await?;
    serde_json::from_slice(&bytes).map_err(|e| format!("/apis/{group}/{version}: {e}"))
}

/// The APIService's server's OpenAPI v3 document of its group-version: the URL its
/// `/openapi/v3` index gives for `apis/<group>/<version>`, fetched.
async fn fetch_openapi(st: &RestState, apiservice: &Object) -> Result<Vec<u8>, String> {
    let (group, version) = group_version(apiservice);
    let index: Value = serde_json::from_slice(&fetch(st, apiservice, "/openapi/v3").await?)
        .map_err(|e| format!("/openapi/v3: {e}"))?;
    let path = format!("apis/{group}/{version}");
    let url = index
        .pointer(&format!("/paths/{}", path.replace('~', "~0").replace('/', "~1")))
        .and_then(|p| p.get("serverRelativeURL"))
        .and_then(Value::as_str)
        .filter(|u| u.starts_with('/'))
        .ok_or_else(|| format!("/openapi/v3 does not list {path}"))?;
    let doc = fetch(st, apiservice, url).await?;
    serde_json::from_slice::<serde::de::IgnoredAny>(&doc).map_err(|e| format!("{url}: {e}"))?;
    Ok(doc)
}

/// What this node fetched of extension servers' OpenAPI documents, by APIService name:
/// when, and the document of its group-version (`None`: the server has none), hashed
/// once when fetched.
#[derive(Default)]
pub struct OpenApiFetched(Mutex<HashMap<String, (Instant, Option<(String, Arc<Document>)>)>>);

/// The OpenAPI v3 documents of the available aggregated group-versions, keyed by their
/// path in `/openapi/v3` (`apis/<group>/<version>`), fetched by this node and kept for
/// [`DISCOVERY_TTL`]. A server without one (or failing) is left out, as kube leaves it.
pub(crate) async fn openapi_documents(st: &RestState) -> Vec<(String, Arc<Document>)> {
    let mut out = Vec::new();
    for apiservice in cached_list(&st.cache, GROUP, PLURAL, None) {
        if !apiservice.get("spec").is_some_and(|s| s.get("service").is_some_and(Value::is_object))
            || !available(&apiservice)
        {
            continue;
        }
        let name = crate::object::meta_str(&apiservice, "name").unwrap_or("").to_string();
        let fresh = {
            let memo = st.aggregated_openapi.0.lock().unwrap_or_else(|e| e.into_inner());
            memo.get(&name).filter(|(at, _)| at.elapsed() < DISCOVERY_TTL).map(|(_, d)| d.clone())
        };
        let doc = match fresh {
            Some(d) => d,
            None => {
                let (group, version) = group_version(&apiservice);
                let path = format!("apis/{group}/{version}");
                let d = fetch_openapi(st, &apiservice).await.ok().map(|doc| (path, Arc::new(Document::new(doc))));
                let mut memo = st.aggregated_openapi.0.lock().unwrap_or_else(|e| e.into_inner());
                memo.insert(name, (Instant::now(), d.clone()));
                d
            }
        };
        out.extend(doc);
    }
    out
}

/// One group-version an extension server serves, as discovery lists it.
#[derive(Clone, Debug)]
pub(crate) struct Served {
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// The server's `APIResourceList.resources`, when it answered.
    pub resources: Vec<Value>,
}

/// What this node fetched from extension servers, by APIService name.
#[derive(Default)]
pub struct Discovered {
    fetched: Mutex<HashMap<String, (Instant, Vec<Value>)>>,
}

/// The available aggregated group-versions, each with the resources its server lists.
pub(crate) async fn discovered(st: &RestState) -> Vec<Served> {
    let mut out = Vec::new();
    for apiservice in cached_list(&st.cache, GROUP, PLURAL, None) {
        let Some(spec) = apiservice.get("spec").filter(|s| s.get("service").is_some_and(Value::is_object)) else {
            continue;
        };
        if !available(&apiservice) {
            continue;
        }
        let name = crate::object::meta_str(&apiservice, "name").unwrap_or("").to_string();
        let fresh = {
            let memo = st.aggregated.fetched.lock().unwrap_or_else(|e| e.into_inner());
            memo.get(&name).filter(|(at, _)| at.elapsed() < DISCOVERY_TTL).map(|(_, r)| r.clone())
        };
        let resources = match fresh {
            Some(r) => r,
            None => {
                let r = fetch_discovery(st, &apiservice)
                    .await
                    .ok()
                    .and_then(|d| d.get("resources").and_then(Value::as_array).cloned())
                    .unwrap_or_default();
                let mut memo = st.aggregated.fetched.lock().unwrap_or_else(|e| e.into_inner());
                memo.insert(name, (Instant::now(), r.clone()));
                r
            }
        };
        let n = |f: &str| spec.get(f).and_then(Value::as_i64).unwrap_or(0);
        let s = |f: &str| spec.get(f).and_then(Value::as_str).unwrap_or("").to_string();
        out.push(Served {
            group: s("group"),
            version: s("version"),
            group_priority: n("groupPriorityMinimum"),
            version_priority: n("versionPriority"),
            resources,
        });
    }
    out
}

/// Adds the aggregated groups to a legacy `APIGroupList` (`/apis`).
pub(crate) fn add_to_group_list(list: &mut Value, served: &[Served]) {
    let Some(groups) = list.get_mut("groups").and_then(Value::as_array_mut) else { return };
    for (name, versions) in by_group(served) {
        if groups.iter().any(|g| g.get("name").and_then(Value::as_str) == Some(name.as_str())) {
            continue;
        }
        groups.push(api_group(&name, &versions));
    }
}

/// The `APIGroup` of an aggregated group (`/apis/<group>`), if one is served.
pub(crate) fn group_document(served: &[Served], group: &str) -> Option<Value> {
    by_group(served).into_iter().find(|(name, _)| name == group).map(|(name, versions)| api_group(&name, &versions))
}

/// Adds the aggregated groups to an aggregated discovery document (`APIGroupDiscoveryList`).
pub(crate) fn add_to_aggregated(doc: &mut Value, served: &[Served]) {
    let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) else { return };
    for (name, versions) in by_group(served) {
        let versions: Vec<Value> = versions
            .iter()
            .map(|s| {
                let resources: Vec<Value> = s
                    .resources
                    .iter()
                    .filter(|r| !r.get("name").and_then(Value::as_str).unwrap_or("").contains('/'))
                    .map(|r| {
                        let field = |f: &str| r.get(f).cloned().unwrap_or(Value::Null);
                        let scope = if r.get("namespaced").and_then(Value::as_bool) == Some(true) {
                            "Namespaced"
                        } else {
                            "Cluster"
                        };
                        json!({
                            "resource": field("name"),
                            "responseKind": {"group": s.group, "version": s.version, "kind": field("kind")},
                            "scope": scope,
                            "singularResource": field("singularName"),
                            "verbs": field("verbs"),
                        })
                    })
                    .collect();
                json!({"version": s.version, "resources": resources, "freshness": "Current"})
            })
            .collect();
        items.push(json!({"metadata": {"name": name, "creationTimestamp": null}, "versions": versions}));
    }
}

/// The served group-versions by group, each group's versions by priority.
fn by_group(served: &[Served]) -> Vec<(String, Vec<Served>)> {
    let mut groups: Vec<(String, Vec<Served>)> = Vec::new();
    for s in served {
        match groups.iter_mut().find(|(g, _)| *g == s.group) {
            Some((_, v)) => v.push(s.clone()),
            None => groups.push((s.group.clone(), vec![s.clone()])),
        }
    }
    for (_, versions) in &mut groups {
        versions.sort_by(|a, b| {
            b.version_priority
                .cmp(&a.version_priority)
                .then_with(|| kuorum_api::registry::compare_versions(&b.version, &a.version))
        });
    }
    groups.sort_by(|a, b| {
        let p = |v: &[Served]| v.iter().map(|s| s.group_priority).max().unwrap_or(0);
        p(&b.1).cmp(&p(&a.1)).then_with(|| a.0.cmp(&b.0))
    });
    groups
}

fn api_group(name: &str, versions: &[Served]) -> Value {
    let gv = |s: &Served| json!({"groupVersion": format!("{}/{}", s.group, s.version), "version": s.version});
    json!({
        "name": name,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

/// A client certificate and key presented to extension API servers.
pub type ProxyIdentity = reqwest::Identity;

/// The proxy's client identity from PEM files (`--proxy-client-cert-file`,
/// `--proxy-client-key-file`).
pub fn proxy_identity(cert_pem: &[u8], key_pem: &[u8]) -> Result<ProxyIdentity, String> {
    let mut pem = key_pem.to_vec();
    pem.extend_from_slice(b"\n");
    pem.extend_from_slice(cert_pem);
    reqwest::Identity::from_pem(&pem).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_percent_encoded() {
        assert_eq!(escape_extra_key("scopes"), "scopes");
        assert_eq!(escape_extra_key("example.com/team"), "example.com%2Fteam");
    }

    #[test]
    fn groups_list_their_versions_by_priority() {
        let s = |v: &str, p: i64| Served {
            group: "metrics.k8s.io".into(),
            version: v.into(),
            group_priority: 100,
            version_priority: p,
            resources: vec![],
        };
        let doc = group_document(&[s("v1beta1", 100), s("v1", 200)], "metrics.k8s.io").unwrap();
        assert_eq!(doc["preferredVersion"]["version"], "v1");
        assert_eq!(doc["versions"][1]["groupVersion"], "metrics.k8s.io/v1beta1");
    }
}
