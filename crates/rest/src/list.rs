//! LIST of a collection: wait as the request's resourceVersion asks → note the applied
//! index → scan the collection's key prefix → answer `XList` with every object in key
//! order and `metadata.resourceVersion` = the index noted before the scan (so a watch
//! from it misses nothing the list did not show). `labelSelector` and `fieldSelector`
//! filter the items; `limit` is not honoured yet (every item comes back, no `continue`).

use axum::http::StatusCode;
use axum::response::Response;
use kuorum_api::selector::{FieldSelector, LabelSelector};
use kuorum_api::ApiError;
use kuorum_store::keys::collection_prefix;
use serde_json::{json, Value};

use crate::consistency::wait_for_read;
use crate::error::cluster_error;
use crate::negotiate::json_response;
use crate::object::{parse_stored, set_type_meta};
use crate::route::Ctx;
use crate::RestState;

/// How many objects one scan of the local state returns.
const SCAN_CHUNK: usize = 1024;

pub(crate) async fn list(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let t = &ctx.target;
    let labels = LabelSelector::parse(ctx.query.get("labelSelector").unwrap_or("")).map_err(ApiError::bad_request)?;
    let fields = FieldSelector::parse(ctx.query.get("fieldSelector").unwrap_or(""), t.def.kind)
        .map_err(ApiError::bad_request)?;
    wait_for_read(st, &ctx.query, true).await?;
    let read_at = st.cluster.applied_index();
    let prefix = collection_prefix(t.def.group, t.def.plural, t.namespace.as_deref());
    let mut items = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let chunk = st.cluster.scan(&prefix, after.as_deref(), SCAN_CHUNK).map_err(cluster_error)?;
        let done = chunk.len() < SCAN_CHUNK;
        after = chunk.last().map(|(k, _)| k.clone());
        for (_, bytes) in chunk {
            let mut obj = parse_stored(&bytes)?;
            set_type_meta(&mut obj, t.def);
            let obj = Value::Object(obj);
            if labels.matches(obj["metadata"]["labels"].as_object()) && fields.matches(&obj) {
                items.push(obj);
            }
        }
        if done || after.is_none() {
            break;
        }
    }
    let body = json!({
        "kind": t.def.list_kind,
        "apiVersion": t.def.api_version(),
        "metadata": {"resourceVersion": read_at.to_string()},
        "items": items,
    });
    Ok(json_response(StatusCode::OK, serde_json::to_vec(&body).unwrap_or_default()))
}
