//! Owns what a request is: its method, path and query, parsed once by the front layer
//! into a [`RequestInfo`] that authorization, metrics, routing and the verb handlers all
//! read, as kube-apiserver's RequestInfo filter does. No later layer parses the raw path
//! or query again, so no two can disagree about what a request asks for: when RBAC read
//! the raw query and the router the decoded one, a list-only user got a watch stream with
//! `?%77atch=1`.
//!
//! Paths under `/api/{version}/` and `/apis/{group}/{version}/` with at least one more
//! segment are resource requests ([`ResourcePath`]); everything else (discovery, health,
//! `/metrics`, `/openapi`) is not, and its verb is the lower-case method. Segments are
//! split on `/` first and then percent-decoded, one by one, so `a%2Fb` is one name (which
//! name validation refuses) rather than two segments.
//!
//! ```text
//! GET    /api/v1/namespaces/dev/pods              list
//! GET    /api/v1/namespaces/dev/pods?watch=1      watch
//! GET    /api/v1/watch/namespaces/dev/pods        watch   (the legacy watch prefix)
//! GET    /api/v1/namespaces/dev/pods/web          get
//! PATCH  /apis/apps/v1/namespaces/dev/deployments/web/scale   patch  deployments/scale
//! DELETE /api/v1/namespaces/dev                   delete  namespaces, in namespace dev
//! DELETE /api/v1/namespaces/dev/configmaps        deletecollection
//! GET    /version                                 get     (not a resource)
//! ```

use kuorum_api::rbac::Attributes;

use crate::query::{decode_component, Query};

/// A request as every layer after the front one sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfo {
    /// kube-apiserver's verb: `get`, `list`, `watch`, `create`, `update`, `patch`,
    /// `delete` or `deletecollection` for a resource; the lower-case method otherwise.
    pub verb: &'static str,
    /// The path as sent (not decoded): what non-resource rules and logs name.
    pub path: String,
    /// The query, decoded once.
    pub query: Query,
    /// What the path names, for a resource request.
    pub resource: Option<ResourcePath>,
}

/// The parts of a resource path, decoded.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourcePath {
    /// `""` for the core group (`/api/v1`).
    pub group: String,
    pub version: String,
    /// The namespace the path is in; for a Namespace's own path, the Namespace itself.
    pub namespace: Option<String>,
    /// Whether the path has the `namespaces/{ns}/` prefix before the resource.
    pub namespaced_path: bool,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// An empty segment inside the path, or segments past `{name}/{subresource}`: the
    /// path names nothing (404).
    pub malformed: bool,
}

impl RequestInfo {
    /// Parses a request's method, path and raw query (what follows `?`).
    pub fn parse(method: &str, path: &str, raw_query: Option<&str>) -> RequestInfo {
        let query = Query::parse(raw_query);
        let resource = resource_path(path);
        let verb = match (&resource, method) {
            (None, m) => non_resource_verb(m),
            (Some((_, legacy_watch)), "GET" | "HEAD") if *legacy_watch || query.flag("watch") => "watch",
            (Some((r, _)), "GET" | "HEAD") if r.name.is_some() => "get",
            (Some(_), "GET" | "HEAD") => "list",
            (Some(_), "POST") => "create",
            (Some(_), "PUT") => "update",
            (Some(_), "PATCH") => "patch",
            (Some((r, _)), "DELETE") if r.name.is_some() => "delete",
            (Some(_), "DELETE") => "deletecollection",
            (Some(_), m) => non_resource_verb(m),
        };
        RequestInfo { verb, path: path.to_string(), query, resource: resource.map(|(r, _)| r) }
    }

    /// What RBAC is asked about this request.
    pub fn attributes(&self) -> Attributes {
        match &self.resource {
            Some(r) => Attributes {
                verb: self.verb.into(),
                resource_request: true,
                api_group: r.group.clone(),
                resource: r.resource.clone(),
                subresource: r.subresource.clone().unwrap_or_default(),
                namespace: r.namespace.clone().unwrap_or_default(),
                name: r.name.clone().unwrap_or_default(),
                path: self.path.clone(),
            },
            None => Attributes { verb: self.verb.into(), path: self.path.clone(), ..Attributes::default() },
        }
    }

    /// Whether the request is a watch (long-running, under the per-user watch cap).
    pub fn is_watch(&self) -> bool {
        self.verb == "watch"
    }
}

/// The verb of a request that names no resource: its method in lower case, from a
/// closed set (anything unusual is `unknown`).
fn non_resource_verb(method: &str) -> &'static str {
    match method {
        "GET" => "get",
        "HEAD" => "head",
        "POST" => "post",
        "PUT" => "put",
        "PATCH" => "patch",
        "DELETE" => "delete",
        "OPTIONS" => "options",
        _ => "unknown",
    }
}

/// The resource `path` names, if it is a resource path, and whether it had the legacy
/// `watch/` prefix.
fn resource_path(path: &str) -> Option<(ResourcePath, bool)> {
    let (group, version, rest) = if let Some(rest) = path.strip_prefix("/api/") {
        let (v, rest) = rest.split_once('/')?;
        (String::new(), decode_component(v, false), rest)
    } else {
        let rest = path.strip_prefix("/apis/")?;
        let mut it = rest.splitn(3, '/');
        let (g, v, rest) = (it.next()?, it.next()?, it.next()?);
        (decode_component(g, false), decode_component(v, false), rest)
    };
    if version.is_empty() || (group.is_empty() && path.starts_with("/apis/")) {
        return None;
    }
    let mut segs: Vec<String> = rest.split('/').map(|s| decode_component(s, false)).collect();
    while segs.last().is_some_and(String::is_empty) {
        segs.pop();
    }
    if segs.is_empty() {
        return None;
    }
    let legacy_watch = segs[0] == "watch";
    let segs = if legacy_watch { &segs[1..] } else { &segs[..] };
    let mut r = ResourcePath {
        group,
        version,
        malformed: segs.is_empty() || segs.iter().any(String::is_empty),
        ..Default::default()
    };
    let seg = |i: usize| segs.get(i).map(String::as_str);
    let tail = if seg(0) == Some("namespaces") && segs.len() >= 3 && !matches!(seg(2), Some("status" | "finalize")) {
        r.namespace = Some(segs[1].clone());
        r.namespaced_path = true;
        r.resource = segs[2].clone();
        &segs[3..]
    } else {
        r.resource = seg(0).unwrap_or_default().to_string();
        segs.get(1..).unwrap_or_default()
    };
    match tail {
        [] => {}
        [name] => r.name = Some(name.clone()),
        [name, sub] => (r.name, r.subresource) = (Some(name.clone()), Some(sub.clone())),
        _ => r.malformed = true,
    }
    // A Namespace's own namespace is itself.
    if r.resource == "namespaces" && !r.namespaced_path {
        r.namespace = r.name.clone();
    }
    Some((r, legacy_watch))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, url: &str) -> RequestInfo {
        let (path, query) = url.split_once('?').map_or((url, None), |(p, q)| (p, Some(q)));
        RequestInfo::parse(method, path, query)
    }

    fn named(i: &RequestInfo) -> (&str, &str, &str, &str, &str) {
        let r = i.resource.as_ref().expect("a resource request");
        (
            i.verb,
            r.resource.as_str(),
            r.namespace.as_deref().unwrap_or(""),
            r.name.as_deref().unwrap_or(""),
            r.subresource.as_deref().unwrap_or(""),
        )
    }

    #[test]
    fn requests_are_named_as_kube_apiserver_names_them() {
        let cases = [
            ("GET", "/api/v1/namespaces/dev/pods", ("list", "pods", "dev", "", "")),
            ("GET", "/api/v1/pods?watch=1", ("watch", "pods", "", "", "")),
            ("GET", "/api/v1/watch/namespaces/dev/pods", ("watch", "pods", "dev", "", "")),
            ("GET", "/api/v1/watch/namespaces/dev/pods/p", ("watch", "pods", "dev", "p", "")),
            ("GET", "/api/v1/namespaces/dev/pods/web", ("get", "pods", "dev", "web", "")),
            (
                "PATCH",
                "/apis/apps/v1/namespaces/dev/deployments/web/scale",
                ("patch", "deployments", "dev", "web", "scale"),
            ),
            ("DELETE", "/api/v1/namespaces/dev", ("delete", "namespaces", "dev", "dev", "")),
            ("PUT", "/api/v1/namespaces/dev/finalize", ("update", "namespaces", "dev", "dev", "finalize")),
            ("DELETE", "/api/v1/namespaces/dev/configmaps", ("deletecollection", "configmaps", "dev", "", "")),
            ("DELETE", "/api/v1/configmaps", ("deletecollection", "configmaps", "", "", "")),
            ("POST", "/api/v1/namespaces/dev/configmaps/", ("create", "configmaps", "dev", "", "")),
            ("GET", "/api/v1/namespaces/dev/configmaps/a%62", ("get", "configmaps", "dev", "ab", "")),
            ("GET", "/api/v1/nodes/n1", ("get", "nodes", "", "n1", "")),
            ("OPTIONS", "/api/v1/nodes", ("options", "nodes", "", "", "")),
        ];
        for (method, url, want) in cases {
            assert_eq!(named(&info(method, url)), want, "{method} {url}");
        }
        let apps = info("GET", "/apis/apps/v1/deployments");
        assert_eq!(apps.resource.as_ref().map(|r| (r.group.as_str(), r.version.as_str())), Some(("apps", "v1")));
        for (method, url, verb) in [
            ("GET", "/version", "get"),
            ("GET", "/apis/apps/v1", "get"),
            ("HEAD", "/healthz", "head"),
            ("POST", "/api", "post"),
            ("GET", "/api/v1", "get"),
            ("GET", "/apis//v1/x", "get"),
        ] {
            let i = info(method, url);
            assert_eq!((i.verb, i.resource.is_none()), (verb, true), "{method} {url}");
        }
    }

    /// The one reading of `watch` that RBAC, metrics and the router share, kube-apiserver's:
    /// a query boolean is false only when absent, `0` or `false` (any case), decoded first.
    #[test]
    fn every_spelling_of_watch_is_read_once() {
        for q in [
            "watch=1",
            "%77atch=1",
            "watch=%74rue",
            "watch=True",
            "watch",
            "watch&watch=1",
            "watch=",
            "watch=yes",
            "watch=1&watch=0",
            "&watch=true&",
        ] {
            assert_eq!(info("GET", &format!("/api/v1/pods?{q}")).verb, "watch", "?{q}");
        }
        for q in ["", "watch=0", "watch=false", "watch=FALSE", "%77atch=%30", "watch=0&watch=1", "watchx=1", "xwatch=1"]
        {
            assert_eq!(info("GET", &format!("/api/v1/pods?{q}")).verb, "list", "?{q}");
        }
        assert_eq!(info("POST", "/api/v1/namespaces/a/pods?watch=1").verb, "create", "only reads watch");
    }

    #[test]
    fn malformed_paths_name_nothing() {
        for url in
            ["/api/v1/namespaces//configmaps", "/api/v1/namespaces/x/configmaps/a/b/c", "/api/v1/watch", "/api/v1/a//b"]
        {
            assert!(info("GET", url).resource.expect(url).malformed, "{url}");
        }
        assert!(!info("GET", "/api/v1/namespaces/x/configmaps/a/").resource.unwrap().malformed);
        assert_eq!(info("GET", "/api/v1/namespaces/x/configmaps/a%2Fb").resource.unwrap().name.as_deref(), Some("a/b"));
    }

    #[test]
    fn rbac_reads_the_same_parse() {
        let a = info("GET", "/api/v1/namespaces/dev/configmaps?%77atch=1").attributes();
        assert_eq!((a.verb.as_str(), a.resource.as_str(), a.namespace.as_str()), ("watch", "configmaps", "dev"));
        let a = info("GET", "/apis/apps/v1/namespaces/dev/deployments/web/status").attributes();
        assert_eq!(
            (a.api_group.as_str(), a.full_resource(), a.name.as_str()),
            ("apps", "deployments/status".to_string(), "web")
        );
        let a = info("GET", "/healthz").attributes();
        assert!(!a.resource_request);
        assert_eq!((a.verb.as_str(), a.path.as_str()), ("get", "/healthz"));
    }
}
