//! Owns API-level fault injection: what a node is told to do wrong, the middleware that
//! does it to requests, the strikes that end watch streams, and the admin endpoint that
//! sets it all. It exists only on a node started with chaos enabled (`kuorum serve
//! --enable-chaos`, or the simulator); elsewhere [`crate::RestState::chaos`] is `None`
//! and no request passes through any of this.
//!
//! Faults, each counted in `kuorum_chaos_faults_injected_total{fault}` and logged:
//! - **errors**: a fraction of API requests answered 429 (with `Retry-After`), 500, 503
//!   or 504, either instead of serving them or after serving them (the client cannot
//!   tell whether its write happened);
//! - **latency**: a fraction of API requests held back before they are served;
//! - **watch strikes**: a fraction of the open watches ended now, either with a 410
//!   Expired ERROR event (the client must relist) or cut without one (it must resume);
//! - **compaction**: the cluster's history is compacted up to this node's applied
//!   resourceVersion now, so a watch or read from before it gets 410 (replicated, like
//!   the periodic compaction; not undone by clearing);
//! - **apply pause**: the state machine stops applying committed entries, so this node's
//!   cache and its Any reads fall behind (its consistent reads and the writes it leads
//!   wait, and time out with 504; paused on the leader, every write waits), and its
//!   `/readyz` fails (not caught up), as a lagging node's would.
//!
//! Worked example: `PUT /kuorum/v1/chaos {"errorRate":0.1,"errorCode":429}` makes one
//! API request in ten answer `429 TooManyRequests` with `Retry-After: 1`; `POST
//! /kuorum/v1/chaos/watches {"action":"Expire","fraction":1}` sends every open watch an
//! ERROR event with a 410 Status and ends it; `DELETE /kuorum/v1/chaos` undoes the
//! settings. Only paths under `/api` and `/apis` are affected: health, metrics and this
//! endpoint keep working.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use kuorum_api::seams::Entropy;
use kuorum_api::validation::FieldError;
use kuorum_api::{ApiError, GroupKind};
use kuorum_raft::state_machine::ApplyGate;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::error::RestError;

/// The group-kind named in 422s about chaos requests.
fn chaos_kind(kind: &str) -> GroupKind<'_> {
    GroupKind { group: "kuorum.io", kind }
}

/// The standing faults of a node. Every field defaults to "no fault".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct FaultSettings {
    /// Fraction (0 to 1) of API requests answered with `error_code`.
    pub error_rate: f64,
    /// 429, 500, 503 or 504.
    pub error_code: u16,
    /// Serve the request, then answer the error instead of its result.
    pub error_after_serving: bool,
    /// Delay added before a request is served.
    pub latency_ms: u64,
    /// Fraction (0 to 1) of API requests delayed by `latency_ms`.
    pub latency_rate: f64,
    /// The state machine applies nothing until this is false again.
    pub apply_paused: bool,
}

impl Default for FaultSettings {
    fn default() -> Self {
        FaultSettings {
            error_rate: 0.0,
            error_code: 429,
            error_after_serving: false,
            latency_ms: 0,
            latency_rate: 1.0,
            apply_paused: false,
        }
    }
}

impl FaultSettings {
    /// 422 for settings that make no sense, so a typo is not a silent no-op.
    pub fn validate(&self) -> Result<(), ApiError> {
        let mut errs = Vec::new();
        for (field, v) in [("errorRate", self.error_rate), ("latencyRate", self.latency_rate)] {
            if !(0.0..=1.0).contains(&v) {
                errs.push(FieldError::invalid(field, &v.to_string(), "must be between 0 and 1"));
            }
        }
        if !matches!(self.error_code, 429 | 500 | 503 | 504) {
            errs.push(FieldError::not_supported(
                "errorCode",
                &self.error_code.to_string(),
                &["429", "500", "503", "504"],
            ));
        }
        if self.latency_ms > 600_000 {
            errs.push(FieldError::invalid(
                "latencyMs",
                &self.latency_ms.to_string(),
                "must be at most 600000 (10 minutes)",
            ));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(chaos_kind("FaultSettings"), "chaos", &errs))
        }
    }

    fn error(&self) -> ApiError {
        match self.error_code {
            429 => ApiError::too_many_requests(1),
            500 => ApiError::internal("injected fault"),
            503 => ApiError::service_unavailable("injected fault"),
            _ => ApiError::timeout("request did not complete within requested timeout - injected fault", 0),
        }
    }
}

/// The number of strikes so far and the latest one.
pub(crate) type Strikes = (u64, Option<WatchStrike>);
/// What a watch stream listens on for strikes.
pub(crate) type StrikeReceiver = watch::Receiver<Strikes>;

/// What a watch strike does to the streams it hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WatchAction {
    /// An ERROR event carrying a 410 Expired Status, then the end of the stream.
    Expire,
    /// The connection's stream is cut, without a final event.
    Close,
}

/// A request to strike the open watches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WatchStrike {
    pub action: WatchAction,
    /// Fraction (0 to 1) of the open watches hit.
    #[serde(default = "one")]
    pub fraction: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct FaultLabel {
    pub fault: &'static str,
}

/// One node's fault injector. Shared by the middleware, every watch stream and the
/// admin endpoint.
pub struct Chaos {
    settings: Mutex<FaultSettings>,
    /// The latest strike, numbered; each watch stream subscribes and acts on new ones.
    strikes: watch::Sender<Strikes>,
    gate: ApplyGate,
    entropy: Arc<dyn Entropy>,
    injected: Family<FaultLabel, Counter>,
}

impl std::fmt::Debug for Chaos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chaos").field("settings", &self.settings()).finish_non_exhaustive()
    }
}

impl Chaos {
    /// An injector with no faults set, holding back `gate` when told to pause apply and
    /// counting into `metrics`.
    pub fn new(gate: ApplyGate, entropy: Arc<dyn Entropy>, metrics: &crate::metrics::Metrics) -> Arc<Chaos> {
        Arc::new(Chaos {
            settings: Mutex::new(FaultSettings::default()),
            strikes: watch::channel((0, None)).0,
            gate,
            entropy,
            injected: metrics.chaos_counters(),
        })
    }

    pub fn settings(&self) -> FaultSettings {
        self.settings.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the standing faults (after [`FaultSettings::validate`]).
    pub fn set(&self, settings: FaultSettings) -> Result<(), ApiError> {
        settings.validate()?;
        let was_paused = self.gate.is_paused();
        if settings.apply_paused {
            self.gate.pause();
        } else {
            self.gate.resume();
        }
        tracing::warn!(
            error_rate = settings.error_rate,
            error_code = settings.error_code,
            error_after_serving = settings.error_after_serving,
            latency_ms = settings.latency_ms,
            latency_rate = settings.latency_rate,
            apply_paused = settings.apply_paused,
            "chaos: fault settings changed"
        );
        if settings.apply_paused && !was_paused {
            self.count("apply_paused");
        }
        *self.settings.lock().unwrap_or_else(|e| e.into_inner()) = settings;
        Ok(())
    }

    /// Ends a fraction of the open watches; returns how many watches were open.
    pub fn strike_watches(&self, strike: WatchStrike, open_watches: usize) -> Result<usize, ApiError> {
        if !(0.0..=1.0).contains(&strike.fraction) {
            return Err(ApiError::invalid(
                chaos_kind("WatchStrike"),
                "chaos",
                &[FieldError::invalid("fraction", &strike.fraction.to_string(), "must be between 0 and 1")],
            ));
        }
        tracing::warn!(action = ?strike.action, fraction = strike.fraction, open_watches, "chaos: striking watches");
        self.strikes.send_modify(|(n, s)| {
            *n += 1;
            *s = Some(strike);
        });
        Ok(open_watches)
    }

    /// What a new watch stream listens to for strikes (only those after now).
    pub(crate) fn subscribe(&self) -> StrikeReceiver {
        self.strikes.subscribe()
    }

    /// Whether this one stream is hit by `strike`; counts and logs a hit.
    pub(crate) fn hits(&self, strike: &WatchStrike) -> bool {
        let hit = self.chance(strike.fraction);
        if hit {
            let fault = match strike.action {
                WatchAction::Expire => "watch_expired",
                WatchAction::Close => "watch_closed",
            };
            tracing::info!(fault, "chaos: watch struck");
            self.count(fault);
        }
        hit
    }

    /// True with probability `p`, drawn from the node's entropy (seeded in the simulator,
    /// so a run replays).
    fn chance(&self, p: f64) -> bool {
        if p <= 0.0 {
            return false;
        }
        if p >= 1.0 {
            return true;
        }
        (self.entropy.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    fn count(&self, fault: &'static str) {
        self.injected.get_or_create(&FaultLabel { fault }).inc();
    }
}

/// The middleware: delays and error answers for `/api` and `/apis` requests.
pub(crate) async fn inject(State(chaos): State<Arc<Chaos>>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if !(path == "/api" || path.starts_with("/api/") || path == "/apis" || path.starts_with("/apis/")) {
        return next.run(req).await;
    }
    let s = chaos.settings();
    if s.latency_ms > 0 && chaos.chance(s.latency_rate) {
        tracing::info!(fault = "latency", latency_ms = s.latency_ms, "chaos: request delayed");
        chaos.count("latency");
        tokio::time::sleep(Duration::from_millis(s.latency_ms)).await;
    }
    if !chaos.chance(s.error_rate) {
        return next.run(req).await;
    }
    let fault = match s.error_code {
        429 => "error_429",
        500 => "error_500",
        503 => "error_503",
        _ => "error_504",
    };
    if s.error_after_serving {
        // The request's result is dropped: the client sees only the error.
        let served = next.run(req).await;
        tracing::info!(fault, served = served.status().as_u16(), "chaos: answer replaced by an error");
        drop(served);
    } else {
        tracing::info!(fault, "chaos: request refused with an error");
    }
    chaos.count(fault);
    RestError(s.error()).into_response()
}

/// `/kuorum/v1/chaos`: `GET` the settings, `PUT` new ones, `DELETE` them all;
/// `POST /kuorum/v1/chaos/watches` strikes the open watches; `POST
/// /kuorum/v1/chaos/compact` compacts the history up to now.
pub fn router(chaos: Arc<Chaos>, cache: Arc<kuorum_watch::WatchCache>, cluster: kuorum_raft::Cluster) -> Router {
    let for_strike = chaos.clone();
    let for_compact = chaos.clone();
    Router::new()
        .route(
            "/kuorum/v1/chaos",
            get({
                let chaos = chaos.clone();
                move || async move { Json(chaos.settings()) }
            })
            .put({
                let chaos = chaos.clone();
                move |body: axum::body::Bytes| async move {
                    let settings: FaultSettings = serde_json::from_slice(&body)
                        .map_err(|e| RestError(ApiError::bad_request(format!("fault settings: {e}"))))?;
                    chaos.set(settings.clone()).map_err(RestError)?;
                    Ok::<_, RestError>(Json(settings))
                }
            })
            .delete(move || async move {
                let none = FaultSettings::default();
                chaos.set(none.clone()).map_err(RestError)?;
                Ok::<_, RestError>(Json(none))
            }),
        )
        .route(
            "/kuorum/v1/chaos/watches",
            post(move |body: axum::body::Bytes| async move {
                let strike: WatchStrike = serde_json::from_slice(&body)
                    .map_err(|e| RestError(ApiError::bad_request(format!("watch strike: {e}"))))?;
                let open = for_strike.strike_watches(strike, cache.watcher_count()).map_err(RestError)?;
                Ok::<_, RestError>(Json(serde_json::json!({"openWatches": open})))
            }),
        )
        .route(
            "/kuorum/v1/chaos/compact",
            post(move || async move {
                let rv = cluster.applied_index();
                tracing::warn!(rv, "chaos: compacting the history");
                // A compaction cannot fail once applied: only reaching the quorum can.
                let _applied = cluster
                    .write(kuorum_store::Command::Compact { rv }, Duration::from_secs(10))
                    .await
                    .map_err(|e| RestError(crate::error::cluster_error(e)))?;
                for_compact.count("compaction");
                Ok::<_, RestError>(Json(serde_json::json!({"compactedTo": rv.to_string()})))
            }),
        )
}
