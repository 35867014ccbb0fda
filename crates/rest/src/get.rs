//! GET of one object (and of its `status` subresource, which reads as the whole object):
//! wait as the get table asks (unset: read barrier; `0`: nothing; `N`: until the cache
//! reaches N) → read the watch cache → 404 or the object's stored bytes as they are, or
//! (as `Accept` negotiated) its Table or PartialObjectMetadata.

use axum::http::StatusCode;
use axum::response::Response;
use kuorum_api::ApiError;
use serde_json::Value;

use crate::consistency::{get_freshness, wait_fresh};
use crate::conversion;
use crate::negotiate::{json_response, json_response_as, negotiate_output, Output};
use crate::table::{self, TableView};
use crate::target::Ctx;
use crate::RestState;

pub(crate) async fn get(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let t = &ctx.target;
    let output = negotiate_output(&ctx.headers)?;
    wait_fresh(st, get_freshness(&ctx.query)?).await?;
    let (_, found) = st.cache.get(&t.key());
    let Some(obj) = found else {
        return Err(ApiError::not_found(t.def.group_resource(), t.name()));
    };
    let body = match output {
        Output::Json => return Ok(json_response(StatusCode::OK, conversion::served_bytes(st, t, &obj.bytes).await?)),
        Output::Table(version) => {
            let view = TableView::for_request(t, version, &ctx.query)?;
            let parsed = if conversion::by_webhook(t) {
                Value::Object(conversion::parse_served(st, t, &obj.bytes).await?)
            } else {
                obj.parse()
                    .filter(|v| v.is_object())
                    .ok_or_else(|| ApiError::internal(format!("stored object {} is not a JSON object", obj.key)))?
            };
            view.object(&parsed, true, st.clock.now_unix_seconds())
        }
        Output::PartialObjectMetadata(version) => table::partial_object(version, &obj.bytes)?,
        Output::PartialObjectMetadataList(_) => return Err(table::partial_list_of_object(t.def)),
    };
    Ok(json_response_as(StatusCode::OK, output.content_type(), body))
}
