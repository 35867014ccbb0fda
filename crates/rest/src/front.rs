//! Owns the one layer every request passes through around its handler, in
//! kube-apiserver's filter order: its id, span and log line ([`request_log`]), its one
//! parse ([`request`]), its name, in-flight slot and metrics ([`metrics`]), its user
//! ([`auth`], then [`impersonation`]), its audit events ([`audit`]), its seat
//! ([`crate::apf`]). Each step is a plain function of its module; this layer only runs them in
//! order, and leaves the parse in the request's extensions for authorization and routing.
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
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::audit;
use crate::auth;
use crate::error::RestError;
use crate::impersonation;
use crate::metrics::GuardedBody;
use crate::request::RequestInfo;
use crate::wide::WideRequests;
use crate::{request_log, route, RestState};

/// The request served once API Priority and Fairness ([`crate::apf`]) gives it a seat, or its 429.
async fn prioritized(st: &RestState, req: Request, next: Next) -> Response {
    let Some(apf) = &st.apf else { return next.run(req).await };
    let (admitted, watch) = match req.extensions().get::<RequestInfo>() {
        Some(info) => (apf.admit(st, info, req.extensions().get::<auth::UserInfo>()).await, info.is_watch()),
        None => (Ok(None), false),
    };
    match admitted {
        Ok(Some(mut seat)) => {
            seat.run_wide(req.extensions().get::<WideRequests>()).await;
            seat.finish(next.run(req).await, watch)
        }
        Ok(None) => next.run(req).await,
        Err(refused) => RestError(refused).into_response(),
    }
}

/// The layer (see the module docs).
pub(crate) async fn serve(State(st): State<Arc<RestState>>, req: Request, next: Next) -> Response {
    let traced = request_log::begin(&req);
    let resp = admit_and_run(&st, req, next, traced.id()).instrument(traced.span.clone()).await;
    request_log::end(traced, resp)
}

async fn admit_and_run(st: &RestState, mut req: Request, next: Next, id: &str) -> Response {
    let info = RequestInfo::parse(req.method().as_str(), req.uri().path(), req.uri().query());
    let apply = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/apply-patch"));
    let resolve = |group: &str, version: &str, plural: &str| route::resolve_in(st, group, version, plural);
    let admitted = match st.metrics.admit(&info, apply, &resolve) {
        Ok(admitted) => admitted,
        Err(refused) => return refused,
    };
    let watch = info.is_watch();
    req.extensions_mut().insert(info);
    let resp = match auth::admit_request(&st.auth, &mut req, watch) {
        Ok(slot) => match impersonation::apply(st, &mut req) {
            Err(refused) => RestError(refused).into_response(),
            Ok(()) => {
                let recording = audit::begin(st.audit.as_ref(), &mut req, id);
                let run = prioritized(st, req, next);
                let (resp, annotations) = match &recording {
                    Some(r) => audit::collecting(r.level(), run).await,
                    None => (run.await, Default::default()),
                };
                let resp = match recording {
                    Some(r) => r.finish(resp, annotations),
                    None => resp,
                };
                match slot {
                    None => resp,
                    Some(watch_slot) => GuardedBody::wrap(resp, watch_slot),
                }
            }
        },
        Err(refused) => refused,
    };
    st.metrics.finish(admitted, resp)
}
