//! GET of one object (and of its `status` subresource, which reads as the whole object):
//! wait as the get table asks (unset: read barrier; `0`: nothing; `N`: until the cache
//! reaches N) → read the watch cache → 404 or the object's stored bytes as they are.

use axum::http::StatusCode;
use axum::response::Response;
use kuorum_api::ApiError;

use crate::consistency::{get_freshness, wait_fresh};
use crate::list::served_bytes;
use crate::negotiate::json_response;
use crate::route::Ctx;
use crate::RestState;

pub(crate) async fn get(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let t = &ctx.target;
    wait_fresh(st, get_freshness(&ctx.query)?).await?;
    let (_, found) = st.cache.get(&t.key());
    let Some(obj) = found else {
        return Err(ApiError::not_found(t.def.group_resource(), t.name()));
    };
    Ok(json_response(StatusCode::OK, served_bytes(&obj.bytes, t.def)?))
}
