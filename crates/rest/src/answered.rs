//! Owns which built-in resources and subresources are answered rather than stored
//! (besides the access reviews, [`crate::authz`]), and hands each request to the module
//! that answers it:
//!
//! - `bindings` (create only) and a pod's `binding`: [`crate::pod_binding`];
//! - a pod's `eviction` (create only): [`crate::eviction`];
//! - a service account's `token` (create only): [`crate::sa_token`];
//! - `componentstatuses` (get and list only): [`crate::component_status`].
//!
//! A resource is recognised by its registry entry's group, version and kind; a subresource
//! by the kind the registry says it takes (its `response`), so the router needs no kind
//! names: a `POST` to any subresource that lists `create` comes here. A custom resource is
//! never one of these: a CRD cannot take the core group.

use axum::http::{Method, StatusCode};
use axum::response::Response;
use kuorum_api::{ApiError, GroupResource, ResourceDef};

use crate::negotiate::json_response;
use crate::target::Ctx;
use crate::{component_status, eviction, pod_binding, sa_token, RestState};

/// The group, version and kind of a Binding.
pub(crate) const BINDING: (&str, &str, &str) = ("", "v1", "Binding");
/// The group, version and kind of a ComponentStatus.
pub(crate) const COMPONENT_STATUS: (&str, &str, &str) = ("", "v1", "ComponentStatus");
/// The group, version and kind of an Eviction.
pub(crate) const EVICTION: (&str, &str, &str) = ("policy", "v1", "Eviction");

fn gvk(def: &ResourceDef) -> (&str, &str, &str) {
    (def.group, def.version, def.kind)
}

/// Whether objects of `def` are answered here rather than stored.
pub(crate) fn is_answered(def: &ResourceDef) -> bool {
    [BINDING, COMPONENT_STATUS].contains(&gvk(def))
}

/// A request on a resource [`is_answered`] says is answered here.
pub(crate) async fn serve(st: &RestState, method: Method, verb: &str, ctx: Ctx) -> Result<Response, ApiError> {
    if gvk(ctx.target.def) == COMPONENT_STATUS {
        return component_status::serve(st, method, verb, ctx).await;
    }
    match (method, &ctx.target.name) {
        (Method::POST, None) if ctx.target.namespace.is_some() => pod_binding::create(st, ctx).await,
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// `POST` to a subresource that lists `create`: answered by the module of the kind it
/// takes.
pub(crate) async fn create_subresource(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let sub = ctx.target.subresource.as_deref().and_then(|s| ctx.target.def.subresource(s));
    match sub.and_then(|s| s.response) {
        Some(BINDING) => pod_binding::create(st, ctx).await,
        Some(EVICTION) => eviction::evict(st, ctx).await,
        Some(sa_token::TOKEN_REQUEST) => sa_token::create_token(st, ctx).await,
        _ => {
            let resource = format!("{}/{}", ctx.target.def.plural, ctx.target.subresource.as_deref().unwrap_or(""));
            Err(ApiError::method_not_supported(
                GroupResource { group: ctx.target.def.group, resource: &resource },
                "create",
            ))
        }
    }
}

/// What kube-apiserver answers a create that stores nothing of its own: `201 Created`
/// with a `Status` of `Success` (its create handler gives the Status the 201).
pub(crate) fn created_success() -> Response {
    let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                    "code": 201});
    json_response(StatusCode::CREATED, serde_json::to_vec(&status).unwrap_or_default())
}
