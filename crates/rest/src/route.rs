//! From a resource path to a [`Target`], and from the HTTP method to the verb handler.
//!
//! Paths under `/api/v1/` and `/apis/{group}/{version}/`:
//!
//! ```text
//! {resource}                                  collection (cluster-scoped, or all namespaces)
//! {resource}/{name}[/{sub}]                   cluster-scoped object
//! namespaces/{ns}/{resource}                  namespaced collection
//! namespaces/{ns}/{resource}/{name}[/{sub}]   namespaced object
//! namespaces/{name}[/status|/finalize]        the Namespace object itself
//! ```

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use kuorum_api::registry::{self, ResourceDef};
use kuorum_api::validation::is_valid_path_segment_name;
use kuorum_api::{ApiError, GroupResource};

use crate::error::RestError;
use crate::query::{decode_component, Query};
use crate::{create, delete, get, list, negotiate, patch, subresource, update, watch, RestState};

/// What a resource path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub def: &'static ResourceDef,
    /// The namespace in the path; `None` for cluster-scoped resources and for
    /// all-namespaces collections.
    pub namespace: Option<String>,
    /// The object name; `None` for a collection.
    pub name: Option<String>,
    pub subresource: Option<String>,
}

impl Target {
    /// The object name, or `""` for a collection.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// The storage key of the named object.
    pub fn key(&self) -> String {
        crate::object::key(self.def, self.namespace.as_deref(), self.name())
    }
}

/// A request on its way to a verb handler.
pub(crate) struct Ctx {
    pub target: Target,
    pub query: Query,
    pub headers: HeaderMap,
    pub body: Body,
}

/// Parses a resource path (404 NotFound when it names nothing kuorum serves).
pub(crate) fn parse_path(path: &str) -> Result<Target, ApiError> {
    let (group, version, rest) = if let Some(rest) = path.strip_prefix("/api/v1/") {
        (String::new(), "v1".to_string(), rest)
    } else if let Some(rest) = path.strip_prefix("/apis/") {
        let mut it = rest.splitn(3, '/');
        let (Some(g), Some(v), Some(rest)) = (it.next(), it.next(), it.next()) else {
            return Err(ApiError::path_not_found());
        };
        (decode_component(g, false), decode_component(v, false), rest)
    } else {
        return Err(ApiError::path_not_found());
    };
    let mut segs: Vec<String> = rest.split('/').map(|s| decode_component(s, false)).collect();
    while segs.last().is_some_and(String::is_empty) {
        segs.pop();
    }
    if segs.is_empty() || segs.iter().any(String::is_empty) || group.is_empty() && path.starts_with("/apis/") {
        return Err(ApiError::path_not_found());
    }
    let seg = |i: usize| segs.get(i).map(String::as_str);

    let (def, namespace, rest) =
        if seg(0) == Some("namespaces") && segs.len() >= 3 && !matches!(seg(2), Some("status" | "finalize")) {
            let def = registry::lookup(&group, &version, &segs[2])
                .filter(|d| d.namespaced())
                .ok_or_else(ApiError::path_not_found)?;
            (def, Some(segs[1].clone()), &segs[3..])
        } else {
            let def = registry::lookup(&group, &version, &segs[0]).ok_or_else(ApiError::path_not_found)?;
            if def.namespaced() && segs.len() > 1 {
                return Err(ApiError::path_not_found());
            }
            (def, None, &segs[1..])
        };
    let (name, subresource) = match rest {
        [] => (None, None),
        [name] => (Some(name.clone()), None),
        [name, sub] if def.subresource(sub).is_some() => (Some(name.clone()), Some(sub.clone())),
        _ => return Err(ApiError::path_not_found()),
    };
    for segment in namespace.iter().chain(name.iter()) {
        let problems = is_valid_path_segment_name(segment);
        if !problems.is_empty() {
            return Err(ApiError::bad_request(format!("invalid resource name {segment:?}: [{}]", problems.join(", "))));
        }
    }
    Ok(Target { def, namespace, name, subresource })
}

/// The handler of every resource path.
pub(crate) async fn dispatch(State(st): State<RestState>, req: Request) -> Response {
    match handle(&st, req).await {
        Ok(resp) => resp,
        Err(e) => RestError(e).into_response(),
    }
}

async fn handle(st: &RestState, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    let target = parse_path(parts.uri.path())?;
    let query = Query::parse(parts.uri.query());
    negotiate::check_accept(&parts.headers)?;
    let gr = target.def.group_resource();
    let method = parts.method;
    let ctx = Ctx { target, query, headers: parts.headers, body };

    match (&ctx.target.name, &ctx.target.subresource) {
        // A collection.
        (None, _) => match method {
            Method::GET if ctx.query.flag("watch") => watch::watch(st, ctx).await,
            Method::GET => list::list(st, ctx).await,
            Method::POST if ctx.target.def.namespaced() && ctx.target.namespace.is_none() => {
                Err(ApiError::method_not_allowed())
            }
            Method::POST => create::create(st, ctx).await,
            Method::DELETE if ctx.target.def.verbs.contains(&"deletecollection") => {
                delete::delete_collection(st, ctx).await
            }
            _ => Err(ApiError::method_not_allowed()),
        },
        // One object.
        (Some(_), None) => match method {
            Method::GET if ctx.query.flag("watch") => watch::watch(st, ctx).await,
            Method::GET => get::get(st, ctx).await,
            Method::PUT => update::update(st, ctx).await,
            Method::DELETE => delete::delete(st, ctx).await,
            Method::PATCH => patch::patch(st, ctx).await,
            _ => Err(ApiError::method_not_allowed()),
        },
        // A subresource: the status subresource reads as the whole object.
        (Some(_), Some(sub)) => {
            let sub_gr = format!("{}/{sub}", gr.resource);
            let sub_gr = GroupResource { group: gr.group, resource: &sub_gr };
            match (method, sub.as_str()) {
                (Method::GET, "status") => get::get(st, ctx).await,
                (Method::PUT, "status") => update::update(st, ctx).await,
                (Method::PATCH, "status") => patch::patch(st, ctx).await,
                (Method::GET, "scale") => subresource::get_scale(st, ctx).await,
                (Method::PUT, "scale") => subresource::write_scale(st, ctx, false).await,
                (Method::PATCH, "scale") => subresource::write_scale(st, ctx, true).await,
                (Method::GET, _) => Err(ApiError::method_not_supported(sub_gr, "get")),
                (Method::PUT, _) => Err(ApiError::method_not_supported(sub_gr, "update")),
                (Method::PATCH, _) => Err(ApiError::method_not_supported(sub_gr, "patch")),
                _ => Err(ApiError::method_not_allowed()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(path: &str) -> Target {
        parse_path(path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn resource_paths() {
        let x = t("/api/v1/configmaps");
        assert_eq!((x.def.plural, x.namespace, x.name), ("configmaps", None, None));
        let x = t("/api/v1/namespaces/default/configmaps");
        assert_eq!((x.namespace.as_deref(), x.name.as_deref()), (Some("default"), None));
        let x = t("/api/v1/namespaces/default/configmaps/a/");
        assert_eq!(x.name.as_deref(), Some("a"));
        assert_eq!(x.key(), "/registry/core/configmaps/default/a");
        let x = t("/api/v1/namespaces/kube-system");
        assert_eq!((x.def.plural, x.namespace, x.name.as_deref()), ("namespaces", None, Some("kube-system")));
        let x = t("/api/v1/namespaces/x/status");
        assert_eq!(
            (x.def.plural, x.name.as_deref(), x.subresource.as_deref()),
            ("namespaces", Some("x"), Some("status"))
        );
        let x = t("/api/v1/nodes/n1");
        assert_eq!(x.key(), "/registry/core/nodes/n1");
        let x = t("/apis/apps/v1/namespaces/ns/deployments/web/scale");
        assert_eq!(x.subresource.as_deref(), Some("scale"));
        assert_eq!(x.key(), "/registry/apps/deployments/ns/web");
        let x = t("/apis/coordination.k8s.io/v1/leases");
        assert_eq!(x.def.kind, "Lease");
        let x = t("/api/v1/namespaces/default/configmaps/a%2Eb");
        assert_eq!(x.name.as_deref(), Some("a.b"));
    }

    #[test]
    fn unknown_paths_are_not_found() {
        for p in [
            "/api/v1/foos",
            "/api/v1/deployments",
            "/apis/apps/v1/configmaps",
            "/apis/apps/v2/deployments",
            "/apis/apps/v1/namespaces",
            "/api/v1/configmaps/a",
            "/api/v1/namespaces/x/nodes",
            "/api/v1/namespaces/x/configmaps/a/status",
            "/api/v1/namespaces/x/configmaps/a/b/c",
            "/api/v1/namespaces//configmaps",
            "/api/v2/pods",
        ] {
            let e = parse_path(p).unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (404, "the server could not find the requested resource"), "{p}");
        }
        assert_eq!(parse_path("/api/v1/namespaces/default/configmaps/%2E%2E").unwrap_err().code, 400);
        assert_eq!(parse_path("/api/v1/namespaces/default/configmaps/a%2Fb").unwrap_err().code, 400);
    }
}
