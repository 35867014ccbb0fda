//! From a request to its verb handler: the path's [`Target`] (built-in resources of the
//! registry first, then the served versions of the node's CustomResourceDefinitions,
//! [`crate::custom`]), the verb its method and target name, and the handler that serves
//! it. A path under a group with a dot in its name that names neither is looked up once
//! more after a Most Recent read barrier before it is answered 404: a client that just
//! created a CRD through another node can use its resource through this one at once.

use axum::extract::{Request, State};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use kuorum_api::registry::{ResourceDef, KUBELET_SUBRESOURCES};
use kuorum_api::{ApiError, GroupResource, Reason};
use std::sync::Arc;

use crate::auth::UserInfo;
use crate::consistency::{wait_fresh, Freshness};
use crate::custom::CustomRef;
use crate::error::RestError;
use crate::request::RequestInfo;
use crate::target::{builtin, target, Ctx};
use crate::{answered, authz, create, delete, get, list, negotiate, patch, subresource, update, watch, RestState};

/// The resources `st` serves: the built-in ones, then its custom resources.
pub(crate) fn resolve_in(
    st: &RestState,
    group: &str,
    version: &str,
    plural: &str,
) -> Option<(&'static ResourceDef, Option<CustomRef>)> {
    builtin(group, version, plural)
        .or_else(|| st.custom.resolve(&st.cache, group, version, plural).map(|(d, c)| (d, Some(c))))
}

/// The handler of every resource path.
pub(crate) async fn dispatch(State(st): State<Arc<RestState>>, req: Request) -> Response {
    match handle(&st, req).await {
        Ok(resp) => resp,
        Err(e) => RestError(e).into_response(),
    }
}

async fn handle(st: &RestState, req: Request) -> Result<Response, ApiError> {
    let (mut parts, body) = req.into_parts();
    // The front layer's parse; a router used without it (no tests do) parses here.
    let info = parts
        .extensions
        .remove::<RequestInfo>()
        .unwrap_or_else(|| RequestInfo::parse(parts.method.as_str(), parts.uri.path(), parts.uri.query()));
    let Some(path) = &info.resource else { return Err(ApiError::path_not_found()) };
    // A node removed from the cluster (or not yet added) holds a state that no longer
    // follows the log: it serves none of it, stale or not.
    if !st.cluster.is_member() {
        return Err(crate::error::cluster_error(kuorum_raft::ClusterError::NotMember));
    }
    // A node whose state differs from its peers' serves none of it (kuorum_raft::consistency).
    if let Some(why) = st.cluster.integrity().corrupt() {
        return Err(ApiError::service_unavailable(format!(
            "this node's state failed its consistency check and it serves nothing until it is rebuilt \
             (docs/operations.md, \"Rebuilding a node\"); ask another node: {why}"
        )));
    }
    // A group-version an extension API server serves (authorized already).
    if !kuorum_api::registry::serves_group_version(&path.group, &path.version) {
        if let Some(apiservice) = crate::aggregator::find(st, &path.group, &path.version) {
            return crate::aggregator::proxy(st, &apiservice, parts, body).await;
        }
    }
    let resolve = |group: &str, version: &str, plural: &str| resolve_in(st, group, version, plural);
    let target = match target(path, &resolve) {
        // A CRD created through another node may not have reached this one yet: look
        // again at the newest state before answering that nothing is there.
        Err(e) if e.code == 404 && path.group.contains('.') => {
            wait_fresh(st, Freshness::MostRecent).await?;
            target(path, &resolve)?
        }
        found => found?,
    };
    negotiate::check_accept(&parts.headers)?;
    let gr = target.def.group_resource();
    let method = parts.method;
    let verb = info.verb;
    let user = parts.extensions.get::<UserInfo>().cloned();
    let extra = parts.extensions.get::<crate::auth::UserExtra>().map(|e| e.0.clone()).unwrap_or_default();
    let ctx = Ctx { target, query: info.query, headers: parts.headers, body, user, extra };
    if method == Method::HEAD {
        return Err(ApiError::method_not_allowed());
    }
    if authz::is_review(ctx.target.def) {
        return match (method, &ctx.target.name) {
            (Method::POST, None) => authz::review(st, ctx).await,
            _ => Err(ApiError::method_not_allowed()),
        };
    }
    // The other built-in resources answered rather than stored (bindings, component
    // statuses).
    if ctx.target.custom.is_none() && answered::is_answered(ctx.target.def) {
        return answered::serve(st, method, verb, ctx).await;
    }

    match (&ctx.target.name, &ctx.target.subresource) {
        // A collection. Across all namespaces, a namespaced resource is only read, as in
        // kube-apiserver: a create or deletecollection there is 405.
        (None, _) => match verb {
            "watch" => watch::watch(st, ctx).await,
            "list" => list::list(st, ctx).await,
            "create" | "deletecollection" if ctx.target.def.namespaced() && ctx.target.namespace.is_none() => {
                Err(ApiError::method_not_allowed())
            }
            "create" => create::create(st, ctx).await,
            "deletecollection" if ctx.target.def.verbs.contains(&"deletecollection") => {
                delete::delete_collection(st, ctx).await
            }
            _ => Err(ApiError::method_not_allowed()),
        },
        // One object.
        (Some(_), None) => match method {
            Method::GET if verb == "watch" => watch::watch(st, ctx).await,
            Method::GET => get::get(st, ctx).await,
            Method::PUT => update::update(st, ctx).await,
            Method::DELETE => delete::delete(st, ctx).await,
            Method::PATCH => patch::patch(st, ctx).await,
            _ => Err(ApiError::method_not_allowed()),
        },
        // A subresource: `scale` has its own handlers; the ones a kubelet answers are
        // refused saying why; one created (a pod's `binding`, `eviction`, a service
        // account's `token`) is answered as the kind it takes ([`answered`]); any other (`status`, a namespace's `finalize`, ...)
        // reads as the whole object and is written through the generic verbs, which store
        // the part the kind says it writes, for the verbs discovery lists for it.
        (Some(_), Some(sub)) => {
            let sub_gr = format!("{}/{sub}", gr.resource);
            let sub_gr = GroupResource { group: gr.group, resource: &sub_gr };
            let verbs = ctx.target.def.subresource(sub).map_or(&[][..], |s| s.verbs);
            match (method, sub.as_str()) {
                (_, s) if KUBELET_SUBRESOURCES.contains(&s) => Err(ApiError::new(
                    Reason::ServiceUnavailable,
                    format!("{sub_gr} is answered by the node's kubelet, and kuorum has no connection to kubelets: no route to the node"),
                )),
                (Method::GET, "scale") => subresource::get_scale(st, ctx).await,
                (Method::PUT, "scale") => subresource::write_scale(st, ctx, false).await,
                (Method::PATCH, "scale") => subresource::write_scale(st, ctx, true).await,
                (Method::GET, _) if verbs.contains(&"get") => get::get(st, ctx).await,
                (Method::PUT, _) if verbs.contains(&"update") => update::update(st, ctx).await,
                (Method::PATCH, _) if verbs.contains(&"patch") => patch::patch(st, ctx).await,
                (Method::POST, _) if verbs.contains(&"create") => answered::create_subresource(st, ctx).await,
                (Method::GET, _) => Err(ApiError::method_not_supported(sub_gr, "get")),
                (Method::PUT, _) => Err(ApiError::method_not_supported(sub_gr, "update")),
                (Method::PATCH, _) => Err(ApiError::method_not_supported(sub_gr, "patch")),
                (Method::POST, _) => Err(ApiError::method_not_supported(sub_gr, "create")),
                _ => Err(ApiError::method_not_allowed()),
            }
        }
    }
}
