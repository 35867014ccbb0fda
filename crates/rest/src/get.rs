//! GET of one object (and of its `status` subresource, which reads as the whole object):
//! wait as the request's resourceVersion asks → read the local state → 404 or the object.

use axum::http::StatusCode;
use axum::response::Response;
use kuorum_api::ApiError;

use crate::consistency::wait_for_read;
use crate::error::cluster_error;
use crate::negotiate::json_response;
use crate::object::encode_stored;
use crate::route::Ctx;
use crate::RestState;

pub(crate) async fn get(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let t = &ctx.target;
    wait_for_read(st, &ctx.query, false).await?;
    let stored = st.cluster.get(&t.key()).map_err(cluster_error)?;
    let Some(bytes) = stored else {
        return Err(ApiError::not_found(t.def.group_resource(), t.name()));
    };
    Ok(json_response(StatusCode::OK, encode_stored(&bytes, t.def)?))
}
