//! Owns the one layer every request passes through around its handler, in
//! kube-apiserver's filter order: its id, span and log line ([`request_log`]), its name,
//! in-flight slot and metrics ([`metrics`]), its user ([`auth`]). Each step is a plain
//! function of its module; this layer only runs them in order.
//!
//! One layer rather than three nested ones because each axum middleware clones and boxes
//! the rest of the stack for every request: on 64 clients' 1 KiB creates, dropping the
//! three layers and compression made a create 7% cheaper on the servers, and this one
//! layer in their place 4% (session 22, docs/benchmarks.md).
//!
//! Worked example: a watch by an authenticated user under `--max-watches-per-user` gets
//! an id and span, is named `WATCH` and counted in `apiserver_longrunning_requests`
//! (no in-flight slot), takes one of the user's watch slots, and its response body holds
//! both the gauge and the slot until the stream ends; a 401 is still counted and logged.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::auth::{self, Authenticator};
use crate::metrics::{GuardedBody, Metrics};
use crate::request_log;

/// What the layer needs: the node's metrics and authenticator.
pub(crate) struct Front {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) auth: Arc<Authenticator>,
}

/// The layer (see the module docs).
pub(crate) async fn serve(State(front): State<Arc<Front>>, req: Request, next: Next) -> Response {
    let traced = request_log::begin(&req);
    let resp = admit_and_run(&front, req, next).instrument(traced.span.clone()).await;
    request_log::end(traced, resp)
}

async fn admit_and_run(front: &Front, mut req: Request, next: Next) -> Response {
    let admitted = match front.metrics.admit(&req) {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let resp = match auth::admit_request(&front.auth, &mut req, admitted.long_running()) {
        Ok(None) => next.run(req).await,
        Ok(Some(watch_slot)) => GuardedBody::wrap(next.run(req).await, watch_slot),
        Err(refused) => refused,
    };
    front.metrics.finish(admitted, resp)
}
