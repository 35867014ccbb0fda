//! Owns `componentstatuses` (core/v1, deprecated upstream): got and listed, probed when
//! asked, never stored, as kube-apiserver's `pkg/registry/core/componentstatus` answers it,
//! in JSON, as a Table (`kubectl get cs`) or as PartialObjectMetadata(List).
//!
//! kube-apiserver probes the scheduler, the controller manager and each etcd server. A
//! kuorum cluster has no separate scheduler or controller manager, and no etcd: what it
//! can honestly report is the one component every request depends on, its replicated
//! storage, as this node sees it. So there is one ComponentStatus, `storage`:
//!
//! - `Healthy` `True`, message `ok (...)` with the leader, the term and the index this
//!   node has applied, when a leader is known and this node catches up with the leader's
//!   commit index within [`PROBE_TIMEOUT`] (a linearizable read barrier, as `/readyz`);
//! - `Healthy` `False`, with the reason as the condition's `error`, otherwise (no leader:
//!   this node cannot reach a quorum; or the barrier failed or timed out).
//!
//! Selectors filter as kube's list does (the objects have no labels, so a label selector
//! that requires one selects nothing); a name that is not a component is 404 (kube-apiserver
//! answers 500 "Component not found", which no client can act on).

use std::time::Duration;

use axum::http::{Method, StatusCode};
use axum::response::Response;
use kuorum_api::selector::{FieldSelector, LabelSelector};
use kuorum_api::ApiError;
use serde_json::{json, Value};

use crate::negotiate::{json_response, json_response_as, negotiate_output, Output};
use crate::table::{self, ListMeta, TableView};
use crate::target::Ctx;
use crate::RestState;

/// How long the storage probe waits for this node to catch up with the leader.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// The name the storage component is reported under.
pub(crate) const STORAGE: &str = "storage";

/// GET of the collection (list) or of one component; anything else is 405, as
/// kube-apiserver has no other handler for the resource.
pub(crate) async fn serve(st: &RestState, method: Method, verb: &str, ctx: Ctx) -> Result<Response, ApiError> {
    let gr = ctx.target.def.group_resource();
    match (method, ctx.target.name.as_deref()) {
        (Method::GET, _) if verb == "watch" => Err(ApiError::method_not_supported(gr, "watch")),
        (Method::GET, None) => list(st, ctx).await,
        (Method::GET, Some(name)) => {
            let name = name.to_string();
            get(st, ctx, &name).await
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

async fn list(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let output = negotiate_output(&ctx.headers)?;
    let labels = LabelSelector::parse(ctx.query.get("labelSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    let fields =
        FieldSelector::parse(ctx.query.get("fieldSelector").unwrap_or(""), &[]).map_err(ApiError::bad_request)?;
    let items: Vec<Value> = components(st)
        .await
        .into_iter()
        .filter(|c| labels.matches(c.pointer("/metadata/labels").and_then(Value::as_object)) && fields.matches(c))
        .collect();
    let body = match output {
        Output::Json => {
            let list = json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items});
            return Ok(json_response(StatusCode::OK, serde_json::to_vec(&list).unwrap_or_default()));
        }
        Output::Table(version) => {
            let bytes: Vec<Vec<u8>> = items.iter().map(|i| serde_json::to_vec(i).unwrap_or_default()).collect();
            TableView::for_request(&ctx.target, version, &ctx.query)?.list(
                &ListMeta::default(),
                &bytes,
                st.clock.now_unix_seconds(),
            )?
        }
        Output::PartialObjectMetadataList(version) => {
            let bytes: Vec<Vec<u8>> = items.iter().map(|i| serde_json::to_vec(i).unwrap_or_default()).collect();
            table::partial_list(version, &ListMeta::default(), &bytes)?
        }
        Output::PartialObjectMetadata(_) => return Err(table::partial_of_list(ctx.target.def)),
    };
    Ok(json_response_as(StatusCode::OK, output.content_type(), body))
}

async fn get(st: &RestState, ctx: Ctx, name: &str) -> Result<Response, ApiError> {
    let output = negotiate_output(&ctx.headers)?;
    let found = components(st).await.into_iter().find(|c| c.pointer("/metadata/name") == Some(&json!(name)));
    let Some(component) = found else {
        return Err(ApiError::not_found(ctx.target.def.group_resource(), name));
    };
    let bytes = serde_json::to_vec(&component).unwrap_or_default();
    let body = match output {
        Output::Json => return Ok(json_response(StatusCode::OK, bytes)),
        Output::Table(version) => TableView::for_request(&ctx.target, version, &ctx.query)?.object(
            &component,
            true,
            st.clock.now_unix_seconds(),
        ),
        Output::PartialObjectMetadata(version) => table::partial_object(version, &bytes)?,
        Output::PartialObjectMetadataList(_) => return Err(table::partial_list_of_object(ctx.target.def)),
    };
    Ok(json_response_as(StatusCode::OK, output.content_type(), body))
}

/// Every component kuorum reports, probed now.
async fn components(st: &RestState) -> Vec<Value> {
    let (healthy, message, error) = probe_storage(st).await;
    vec![component(STORAGE, healthy, &message, &error)]
}

/// The storage's health as this node sees it: (healthy, message, error).
async fn probe_storage(st: &RestState) -> (bool, String, String) {
    let Some(leader) = st.cluster.leader() else {
        return (false, String::new(), "no leader known: this node cannot reach a quorum of the cluster".into());
    };
    match st.cluster.read_barrier(PROBE_TIMEOUT.min(st.request_timeout)).await {
        Ok(_) => {
            let s = st.cluster.status();
            let message = format!(
                "ok (leader {leader} of {} voters, term {}, applied index {})",
                s.voters.len(),
                s.term,
                st.cluster.applied_index()
            );
            (true, message, String::new())
        }
        Err(e) => (false, String::new(), format!("not caught up with leader {leader}: {e}")),
    }
}

/// One ComponentStatus, as kube-apiserver encodes it (an empty message or error left out).
fn component(name: &str, healthy: bool, message: &str, error: &str) -> Value {
    let mut condition = json!({"type": "Healthy", "status": if healthy { "True" } else { "False" }});
    for (key, text) in [("message", message), ("error", error)] {
        if !text.is_empty() {
            condition[key] = json!(text);
        }
    }
    json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name, "creationTimestamp": null},
           "conditions": [condition]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_are_encoded_as_kube_encodes_them() {
        assert_eq!(
            component("storage", true, "ok", ""),
            json!({"kind": "ComponentStatus", "apiVersion": "v1",
                   "metadata": {"name": "storage", "creationTimestamp": null},
                   "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]})
        );
        assert_eq!(
            component("storage", false, "", "no leader")["conditions"],
            json!([{"type": "Healthy", "status": "False", "error": "no leader"}])
        );
    }
}
