//! From a resource path to a [`Target`], and from the HTTP method to the verb handler.
//!
//! A path names a built-in resource of the registry or, failing that, a served version of
//! one of the node's CustomResourceDefinitions ([`crate::custom`]). A path under a group
//! with a dot in its name that names neither is looked up once more after a Most Recent
//! read barrier before it is answered 404: a client that just created a CRD through
//! another node can use its resource through this one at once.
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
use kuorum_schema::{Schema, Schemas};
use std::sync::Arc;

use crate::auth::UserInfo;
use crate::consistency::{wait_fresh, Freshness};
use crate::custom::CustomRef;
use crate::error::RestError;
use crate::query::{decode_component, Query};
use crate::{authz, create, delete, get, list, negotiate, patch, subresource, update, watch, RestState};

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
    /// The CRD and version, for a custom resource.
    pub custom: Option<CustomRef>,
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

    /// The schema of the resource's objects: the built-in kind's, or the custom resource
    /// version's.
    pub fn schema(&self) -> Option<Schema<'_>> {
        match &self.custom {
            Some(c) => Some(c.schema()),
            None => Schemas::builtin().kind(self.def.group, self.def.version, self.def.kind),
        }
    }

    /// The version objects are stored at: the resource's own, or the CRD's storage version.
    pub fn storage_def(&self) -> &'static ResourceDef {
        self.custom.as_ref().and_then(CustomRef::storage_def).unwrap_or(self.def)
    }
}

/// How a path's group, version and resource are found: the built-in registry first, then
/// the node's custom resources.
pub(crate) type Resolve<'a> = &'a dyn Fn(&str, &str, &str) -> Option<(&'static ResourceDef, Option<CustomRef>)>;

/// The built-in resources only.
pub(crate) fn builtin(group: &str, version: &str, plural: &str) -> Option<(&'static ResourceDef, Option<CustomRef>)> {
    registry::lookup(group, version, plural).map(|d| (d, None))
}

/// Whether a path may name a custom resource: one under a group with a dot in its name,
/// as every CRD's group has.
fn may_be_custom(path: &str) -> bool {
    path.strip_prefix("/apis/").and_then(|rest| rest.split('/').next()).is_some_and(|g| g.contains('.'))
}

/// A request on its way to a verb handler.
pub(crate) struct Ctx {
    pub target: Target,
    pub query: Query,
    pub headers: HeaderMap,
    pub body: Body,
    /// Who asks, as authentication found it (none on the open paths).
    pub user: Option<UserInfo>,
}

/// Parses a resource path (404 NotFound when it names nothing `resolve` finds).
pub(crate) fn parse_path(path: &str, resolve: Resolve<'_>) -> Result<Target, ApiError> {
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

    let ((def, custom), namespace, rest) =
        if seg(0) == Some("namespaces") && segs.len() >= 3 && !matches!(seg(2), Some("status" | "finalize")) {
            let found = resolve(&group, &version, &segs[2])
                .filter(|(d, _)| d.namespaced())
                .ok_or_else(ApiError::path_not_found)?;
            (found, Some(segs[1].clone()), &segs[3..])
        } else {
            let found = resolve(&group, &version, &segs[0]).ok_or_else(ApiError::path_not_found)?;
            if found.0.namespaced() && segs.len() > 1 {
                return Err(ApiError::path_not_found());
            }
            (found, None, &segs[1..])
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
    Ok(Target { def, namespace, name, subresource, custom })
}

/// The handler of every resource path.
pub(crate) async fn dispatch(State(st): State<Arc<RestState>>, req: Request) -> Response {
    match handle(&st, req).await {
        Ok(resp) => resp,
        Err(e) => RestError(e).into_response(),
    }
}

async fn handle(st: &RestState, req: Request) -> Result<Response, ApiError> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path();
    let resolve = |group: &str, version: &str, plural: &str| {
        builtin(group, version, plural)
            .or_else(|| st.custom.resolve(&st.cache, group, version, plural).map(|(d, c)| (d, Some(c))))
    };
    let target = match parse_path(path, &resolve) {
        // A CRD created through another node may not have reached this one yet: look
        // again at the newest state before answering that nothing is there.
        Err(e) if e.code == 404 && may_be_custom(path) => {
            wait_fresh(st, Freshness::MostRecent).await?;
            parse_path(path, &resolve)?
        }
        found => found?,
    };
    let query = Query::parse(parts.uri.query());
    negotiate::check_accept(&parts.headers)?;
    let gr = target.def.group_resource();
    let method = parts.method;
    let user = parts.extensions.get::<UserInfo>().cloned();
    let ctx = Ctx { target, query, headers: parts.headers, body, user };
    if authz::is_review(ctx.target.def) {
        return match (method, &ctx.target.name) {
            (Method::POST, None) => authz::review(st, ctx).await,
            _ => Err(ApiError::method_not_allowed()),
        };
    }

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
        parse_path(path, &builtin).unwrap_or_else(|e| panic!("{path}: {e}"))
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
            let e = parse_path(p, &builtin).unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (404, "the server could not find the requested resource"), "{p}");
        }
        assert_eq!(parse_path("/api/v1/namespaces/default/configmaps/%2E%2E", &builtin).unwrap_err().code, 400);
        assert_eq!(parse_path("/api/v1/namespaces/default/configmaps/a%2Fb", &builtin).unwrap_err().code, 400);
        assert!(may_be_custom("/apis/stable.example.com/v1/crontabs"));
        assert!(!may_be_custom("/apis/apps/v1/foos") && !may_be_custom("/api/v1/foos"));
    }
}
