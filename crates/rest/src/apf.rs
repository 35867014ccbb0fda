//! Owns API Priority and Fairness: every authenticated request is classified by the
//! FlowSchemas in this node's watch cache (the bootstrap ones and user-made) into a
//! priority level, and waits for one of the level's seats, as kube-apiserver's APF filter
//! does:
//!
//! - **Classification:** the first FlowSchema by `matchingPrecedence` (then name) with a
//!   rule whose subjects (users, groups, service accounts, `*`) and resource rules (verbs,
//!   groups, resources with subresources, cluster scope or namespaces) or non-resource
//!   rules (verbs, URLs with `*` suffixes) match. Its `distinguisherMethod` (ByUser,
//!   ByNamespace) splits it into flows.
//! - **Seats:** each Limited level gets `ceil(total × shares / Σ shares)` of the server's
//!   concurrency (`--max-requests-inflight` + `--max-mutating-requests-inflight`, 600 by
//!   default); an Exempt level (`system:masters`, health probes) is never held.
//! - **Queues:** a request that finds no free seat goes to the shortest of its flow's
//!   hand of queues (shuffle sharding: `handSize` of the level's `queues`, dealt from a
//!   hash of the flow); a queue at `queueLengthLimit`, a level whose limit response is
//!   Reject, or a wait longer than a quarter of the request timeout is answered 429 with
//!   `Retry-After`. A freed seat goes to the next non-empty queue in turn, so flows in
//!   different queues share a level evenly however many requests each sends.
//! - **Long-running requests:** a watch holds its seat only until its response starts
//!   (kube counts a watch while it initializes), every other request until its response
//!   body has been sent.
//!
//! Every answer carries `X-Kubernetes-PF-FlowSchema-UID` and
//! `X-Kubernetes-PF-PriorityLevel-UID`. `/metrics` has kube's `apiserver_flowcontrol_*`
//! series ([`FlowControlMetrics`]): dispatched and rejected (by reason) requests, those
//! queued and executing and their seats, the wait and the execution, each level's seats. The configuration is read again at most once a
//! second. Not yet: borrowing between levels, kube's virtual-time fair queuing (requests
//! of one queue are served in order, queues in turn).

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// tokio's clock, so the simulator's runs stay deterministic.
use tokio::time::Instant;

use axum::http::HeaderValue;
use axum::response::Response;
use kuorum_api::{ApiError, Reason};
use serde_json::Value;
use tokio::sync::oneshot;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::admission::cached_list;
use crate::auth::UserInfo;
use crate::metrics::GuardedBody;
use crate::request::RequestInfo;
use crate::wide::{WideGuard, WideRequests};
use crate::RestState;

const GROUP: &str = "flowcontrol.apiserver.k8s.io";

/// How often the FlowSchemas and PriorityLevelConfigurations are read again.
const REFRESH: Duration = Duration::from_secs(1);

/// The server's concurrency shared by the Limited levels when no limits are set (kube's
/// 400 + 200).
pub const DEFAULT_TOTAL_SEATS: usize = 600;

/// One FlowSchema, as classification reads it.
struct Schema {
    name: String,
    /// Its uid, as the `X-Kubernetes-PF-FlowSchema-UID` header sends it.
    uid: HeaderValue,
    precedence: i64,
    level: String,
    by: Distinguisher,
    rules: Vec<Rule>,
    /// Its series of the `apiserver_flowcontrol_*` metrics, with its level's name.
    metrics: Arc<FlowMetrics>,
}

/// A FlowSchema rule, read once per configuration: matching a request compares strings,
/// never looks into JSON (on every request, that lookup was most of APF's cost).
#[derive(Debug, Default)]
struct Rule {
    subjects: Vec<Subject>,
    resource_rules: Vec<ResourceRule>,
    non_resource_rules: Vec<NonResourceRule>,
}

#[derive(Debug)]
enum Subject {
    User(String),
    Group(String),
    ServiceAccount { namespace: String, name: String },
}

#[derive(Debug, Default)]
struct ResourceRule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    namespaces: Vec<String>,
    cluster_scope: bool,
}

#[derive(Debug, Default)]
struct NonResourceRule {
    verbs: Vec<String>,
    urls: Vec<String>,
}

impl Rule {
    /// A rule of a FlowSchema's `spec.rules`.
    fn parse(v: &Value) -> Rule {
        let strings = |v: &Value, k: &str| -> Vec<String> {
            v.get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let list = |k: &str| v.get(k).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let name = |s: &Value, p: &str| s.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
        Rule {
            subjects: list("subjects")
                .iter()
                .filter_map(|s| match s.get("kind").and_then(Value::as_str) {
                    Some("User") => Some(Subject::User(name(s, "/user/name"))),
                    Some("Group") => Some(Subject::Group(name(s, "/group/name"))),
                    Some("ServiceAccount") => Some(Subject::ServiceAccount {
                        namespace: name(s, "/serviceAccount/namespace"),
                        name: name(s, "/serviceAccount/name"),
                    }),
                    _ => None,
                })
                .collect(),
            resource_rules: list("resourceRules")
                .iter()
                .map(|r| ResourceRule {
                    verbs: strings(r, "verbs"),
                    groups: strings(r, "apiGroups"),
                    resources: strings(r, "resources"),
                    namespaces: strings(r, "namespaces"),
                    cluster_scope: r.get("clusterScope").and_then(Value::as_bool) == Some(true),
                })
                .collect(),
            non_resource_rules: list("nonResourceRules")
                .iter()
                .map(|r| NonResourceRule { verbs: strings(r, "verbs"), urls: strings(r, "nonResourceURLs") })
                .collect(),
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

/// One PriorityLevelConfiguration.
#[derive(Clone)]
struct LevelSpec {
    /// Its uid, as the `X-Kubernetes-PF-PriorityLevel-UID` header sends it.
    uid: HeaderValue,
    exempt: bool,
    shares: u64,
    /// `None`: the limit response is Reject.
    queuing: Option<Queuing>,
    /// Its seats and queues (`None` when exempt): resolved when the configuration is
    /// read, so a request takes no lock but its level's.
    seats: Option<Arc<Level>>,
}

#[derive(Clone, Copy, PartialEq)]
struct Queuing {
    queues: usize,
    hand_size: usize,
    queue_length_limit: usize,
}

/// The configuration read at one time.
struct Config {
    read_at: Instant,
    schemas: Vec<Schema>,
    levels: HashMap<String, LevelSpec>,
    /// Σ shares of the Limited levels.
    total_shares: u64,
}

/// The label sets of kube's `apiserver_flowcontrol_*` metrics.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LevelLabels {
    priority_level: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FlowLabels {
    priority_level: String,
    flow_schema: String,
}

impl FlowLabels {
    fn rejected(&self, reason: &'static str) -> RejectedLabels {
        RejectedLabels { priority_level: self.priority_level.clone(), flow_schema: self.flow_schema.clone(), reason }
    }

    fn wait(&self, execute: &'static str) -> WaitLabels {
        WaitLabels { priority_level: self.priority_level.clone(), flow_schema: self.flow_schema.clone(), execute }
    }

    fn execution(&self, r#type: &'static str) -> ExecutionLabels {
        ExecutionLabels { priority_level: self.priority_level.clone(), flow_schema: self.flow_schema.clone(), r#type }
    }
}

/// The values of the labels each flow's series take besides its level and schema.
const REJECT_REASONS: [&str; 4] = ["queue-full", "concurrency-limit", "time-out", "cancelled"];
const EXECUTE: [&str; 2] = ["true", "false"];
const EXECUTION_TYPES: [&str; 2] = ["regular", "watch"];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectedLabels {
    priority_level: String,
    flow_schema: String,
    /// `queue-full`, `concurrency-limit` (a Reject level), `time-out` (waited too long),
    /// `cancelled` (its client went away while it waited).
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExecutionLabels {
    priority_level: String,
    flow_schema: String,
    /// `regular`, or `watch` (timed until its response starts).
    r#type: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WaitLabels {
    priority_level: String,
    flow_schema: String,
    /// Whether the request went on to execute.
    execute: &'static str,
}

/// kube's buckets for `apiserver_flowcontrol_request_wait_duration_seconds`.
const WAIT_BUCKETS: [f64; 13] = [0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0];

/// The `apiserver_flowcontrol_*` metrics, with kube's names and labels: a series per
/// FlowSchema and PriorityLevelConfiguration, so their number is bounded by the objects
/// stored, never by what a client sends.
#[derive(Clone)]
pub(crate) struct FlowControlMetrics {
    dispatched: Family<FlowLabels, Counter>,
    rejected: Family<RejectedLabels, Counter>,
    inqueue: Family<FlowLabels, Gauge>,
    executing: Family<FlowLabels, Gauge>,
    executing_seats: Family<FlowLabels, Gauge>,
    wait: Family<WaitLabels, Histogram, fn() -> Histogram>,
    execution: Family<ExecutionLabels, Histogram, fn() -> Histogram>,
    nominal_limit_seats: Family<LevelLabels, Gauge>,
    current_limit_seats: Family<LevelLabels, Gauge>,
    /// The flows and levels that have series: those of the configuration read last.
    known: Arc<Mutex<(HashSet<FlowLabels>, HashSet<String>)>>,
}

impl FlowControlMetrics {
    pub(crate) fn register(registry: &mut Registry) -> Self {
        let m = FlowControlMetrics {
            dispatched: Family::default(),
            rejected: Family::default(),
            inqueue: Family::default(),
            executing: Family::default(),
            executing_seats: Family::default(),
            wait: Family::new_with_constructor((|| Histogram::new(WAIT_BUCKETS)) as fn() -> Histogram),
            execution: Family::new_with_constructor((|| Histogram::new(WAIT_BUCKETS)) as fn() -> Histogram),
            nominal_limit_seats: Family::default(),
            current_limit_seats: Family::default(),
            known: Arc::default(),
        };
        // Counters get `_total` appended by the encoder.
        registry.register(
            "apiserver_flowcontrol_dispatched_requests",
            "Number of requests executed by API Priority and Fairness subsystem",
            m.dispatched.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_rejected_requests",
            "Number of requests rejected by API Priority and Fairness subsystem",
            m.rejected.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
            m.inqueue.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_executing_requests",
            "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem",
            m.executing.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_executing_seats",
            "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem",
            m.executing_seats.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_request_wait_duration_seconds",
            "Length of time a request spent waiting in its queue",
            m.wait.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_request_execution_seconds",
            "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem",
            m.execution.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_nominal_limit_seats",
            "Nominal number of execution seats configured for each priority level",
            m.nominal_limit_seats.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_limit_seats",
            "current derived number of execution seats available to each priority level",
            m.current_limit_seats.clone(),
        );
        m
    }

    /// The series of one FlowSchema at its level.
    fn flow(&self, priority_level: &str, flow_schema: &str) -> FlowMetrics {
        let flow = FlowLabels { priority_level: priority_level.to_string(), flow_schema: flow_schema.to_string() };
        let rejected = |reason| self.rejected.get_or_create(&flow.rejected(reason)).clone();
        let wait = |execute| self.wait.get_or_create(&flow.wait(execute)).clone();
        let execution = |r#type| self.execution.get_or_create(&flow.execution(r#type)).clone();
        FlowMetrics {
            executed: execution("regular"),
            watch_started: execution("watch"),
            dispatched: self.dispatched.get_or_create(&flow).clone(),
            queue_full: rejected("queue-full"),
            concurrency_limit: rejected("concurrency-limit"),
            time_out: rejected("time-out"),
            cancelled: rejected("cancelled"),
            inqueue: self.inqueue.get_or_create(&flow).clone(),
            executing: self.executing.get_or_create(&flow).clone(),
            executing_seats: self.executing_seats.get_or_create(&flow).clone(),
            waited: wait("true"),
            gave_up: wait("false"),
        }
    }

    /// Drops the series of flows and levels the configuration no longer has, so that
    /// FlowSchemas created and deleted one after another do not grow `/metrics`: what is
    /// kept is bounded by the objects stored now.
    fn keep_only(&self, flows: HashSet<FlowLabels>, levels: HashSet<String>) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        for gone in known.0.difference(&flows) {
            for family in [&self.inqueue, &self.executing, &self.executing_seats] {
                family.remove(gone);
            }
            self.dispatched.remove(gone);
            for reason in REJECT_REASONS {
                self.rejected.remove(&gone.rejected(reason));
            }
            for execute in EXECUTE {
                self.wait.remove(&gone.wait(execute));
            }
            for r#type in EXECUTION_TYPES {
                self.execution.remove(&gone.execution(r#type));
            }
        }
        for gone in known.1.difference(&levels) {
            let labels = LevelLabels { priority_level: gone.clone() };
            self.nominal_limit_seats.remove(&labels);
            self.current_limit_seats.remove(&labels);
        }
        *known = (flows, levels);
    }

    /// A level's seats, as configured and as it has them.
    fn limit(&self, priority_level: &str, seats: usize) {
        let labels = LevelLabels { priority_level: priority_level.to_string() };
        self.nominal_limit_seats.get_or_create(&labels).set(seats as i64);
        self.current_limit_seats.get_or_create(&labels).set(seats as i64);
    }
}

/// One FlowSchema's series, taken once per configuration so that a request only moves
/// atomics.
#[derive(Clone)]
struct FlowMetrics {
    dispatched: Counter,
    queue_full: Counter,
    concurrency_limit: Counter,
    time_out: Counter,
    cancelled: Counter,
    inqueue: Gauge,
    executing: Gauge,
    executing_seats: Gauge,
    waited: Histogram,
    gave_up: Histogram,
    /// How long requests held their seats: others until their answer was sent, watches
    /// until their response started.
    executed: Histogram,
    watch_started: Histogram,
}

/// A request counted in its queue's gauge until it leaves; one whose client went away
/// while it waited (the request dropped) is counted `cancelled`.
struct Queued<'m> {
    m: &'m FlowMetrics,
    since: Instant,
    left: bool,
}

impl<'m> Queued<'m> {
    fn new(m: &'m FlowMetrics) -> Self {
        m.inqueue.inc();
        Queued { m, since: Instant::now(), left: false }
    }

    /// It left the queue, to execute or not.
    fn left(&mut self, execute: bool) {
        self.left = true;
        self.m.inqueue.dec();
        let waited = self.since.elapsed().as_secs_f64();
        if execute { &self.m.waited } else { &self.m.gave_up }.observe(waited);
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if !self.left {
            self.left(false);
            self.m.cancelled.inc();
        }
    }
}

/// A request waiting in a queue for `width` seats: sent a permit when they are its.
struct Waiter {
    tx: oneshot::Sender<()>,
    width: usize,
}

/// Objects a LIST may return per seat it takes, and the most seats one request takes
/// (kube's work estimator: `objectsPerSeat`, `maximumSeats`).
const OBJECTS_PER_SEAT: usize = 100;
const MAX_SEATS: usize = 10;

/// A Limited level's seats and queues.
struct Level {
    state: Mutex<LevelState>,
}

struct LevelState {
    seats: usize,
    in_use: usize,
    queuing: Option<Queuing>,
    queues: Vec<VecDeque<Waiter>>,
    /// The queue the next freed seat looks at first.
    next: usize,
}

impl LevelState {
    fn waiting(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Gives free seats to waiters, a queue at a time in turn. The next waiter in turn
    /// that needs more seats than are free waits for them (nothing narrower passes it, so
    /// a wide request is not starved).
    fn dispatch(&mut self) {
        let n = self.queues.len();
        while self.waiting() > 0 {
            let Some(q) = (0..n).map(|i| (self.next + i) % n).find(|&q| !self.queues[q].is_empty()) else { return };
            let width = self.queues[q].front().map_or(1, |w| w.width.min(self.seats.max(1)));
            if self.in_use + width > self.seats {
                return;
            }
            let Some(w) = self.queues[q].pop_front() else { return };
            // A request that went away while it waited gives its turn to the next.
            if w.tx.send(()).is_ok() {
                self.in_use += width;
                self.next = (q + 1) % n;
            }
        }
    }
}

/// Seats held: given back when dropped.
pub(crate) struct Seat {
    level: Option<Arc<Level>>,
    width: usize,
    /// The series the request is counted and timed in while it holds the seats.
    metrics: Arc<FlowMetrics>,
    since: Instant,
    watch: bool,
    /// A wide request's place in its connection's count ([`crate::wide`]).
    wide: Option<WideGuard>,
}

impl Seat {
    fn new(level: Option<Arc<Level>>, width: usize, m: &Arc<FlowMetrics>) -> Seat {
        m.dispatched.inc();
        m.executing.inc();
        m.executing_seats.inc_by(width.max(1) as i64);
        Seat { level, width, metrics: Arc::clone(m), since: Instant::now(), watch: false, wide: None }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let m = &self.metrics;
        m.executing.dec();
        m.executing_seats.dec_by(self.width.max(1) as i64);
        if self.watch { &m.watch_started } else { &m.executed }.observe(self.since.elapsed().as_secs_f64());
        if let Some(level) = self.level.take() {
            let mut st = level.state.lock().unwrap_or_else(|e| e.into_inner());
            st.in_use = st.in_use.saturating_sub(self.width);
            st.dispatch();
        }
    }
}

/// A request admitted: its seat and the headers naming its flow schema and level.
pub(crate) struct Admitted {
    seat: Seat,
    schema_uid: HeaderValue,
    level_uid: HeaderValue,
}

impl Admitted {
    /// A request that takes more than one seat of a Limited level is counted in its
    /// connection's [`WideRequests`] while it holds them, and runs once the connection
    /// has moved to the lower CPU priority (if the connection layer moves it).
    pub(crate) async fn run_wide(&mut self, wide: Option<&WideRequests>) {
        let Some(wide) = wide.filter(|_| self.seat.width > 1 && self.seat.level.is_some()) else { return };
        let guard = wide.start();
        guard.moved().await;
        self.seat.wide = Some(guard);
    }

    /// Names the schema and level on `resp`, and gives the seat back: a watch's now (its
    /// response has started), anything else's when its body has been sent, as kube's
    /// handler holds its seat while it writes the response. A LIST of a thousand objects
    /// is mostly the writing of it; a seat given back before would let a level send any
    /// number of them at once.
    pub(crate) fn finish(self, mut resp: Response, watch: bool) -> Response {
        let Admitted { mut seat, schema_uid, level_uid } = self;
        seat.watch = watch;
        let headers = resp.headers_mut();
        headers.insert("x-kubernetes-pf-flowschema-uid", schema_uid);
        headers.insert("x-kubernetes-pf-prioritylevel-uid", level_uid);
        if watch || seat.level.is_none() {
            return resp;
        }
        GuardedBody::wrap(resp, seat)
    }
}

/// The node's APF state.
pub struct Apf {
    total_seats: usize,
    config: Mutex<Option<Arc<Config>>>,
    levels: Mutex<HashMap<String, Arc<Level>>>,
}

impl Default for Apf {
    fn default() -> Self {
        Apf::new(DEFAULT_TOTAL_SEATS)
    }
}

impl Apf {
    /// APF sharing `total_seats` among the Limited levels.
    pub fn new(total_seats: usize) -> Apf {
        Apf { total_seats: total_seats.max(1), config: Mutex::new(None), levels: Mutex::new(HashMap::new()) }
    }

    /// The configuration, read again when older than [`REFRESH`].
    fn config(&self, st: &RestState) -> Arc<Config> {
        let mut held = self.config.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = held.as_ref().filter(|c| c.read_at.elapsed() < REFRESH) {
            return c.clone();
        }
        let mut c = read_config(st);
        for (name, spec) in c.levels.iter_mut() {
            if !spec.exempt {
                spec.seats = Some(self.level(name, spec, c.total_shares, &st.metrics.flowcontrol));
            }
        }
        let flows = c
            .schemas
            .iter()
            .map(|f| FlowLabels { priority_level: f.level.clone(), flow_schema: f.name.clone() })
            .collect();
        let levels = c.levels.iter().filter(|(_, spec)| !spec.exempt).map(|(name, _)| name.clone()).collect();
        st.metrics.flowcontrol.keep_only(flows, levels);
        let c = Arc::new(c);
        *held = Some(c.clone());
        c
    }

    /// The level `name` with `spec`'s seats and queues (changed in place when the
    /// configuration changed).
    fn level(&self, name: &str, spec: &LevelSpec, total_shares: u64, metrics: &FlowControlMetrics) -> Arc<Level> {
        let seats = ((self.total_seats as u64 * spec.shares).div_ceil(total_shares.max(1))).max(1) as usize;
        metrics.limit(name, seats);
        let mut levels = self.levels.lock().unwrap_or_else(|e| e.into_inner());
        let level = levels
            .entry(name.to_string())
            .or_insert_with(|| {
                Arc::new(Level {
                    state: Mutex::new(LevelState { seats, in_use: 0, queuing: None, queues: Vec::new(), next: 0 }),
                })
            })
            .clone();
        drop(levels);
        {
            let mut s = level.state.lock().unwrap_or_else(|e| e.into_inner());
            s.seats = seats;
            if s.queuing != spec.queuing {
                s.queuing = spec.queuing;
                let n = spec.queuing.map_or(0, |q| q.queues);
                // Waiters of queues that go away keep waiting in the first ones.
                let mut old: Vec<Waiter> = s.queues.drain(..).flatten().collect();
                s.queues = (0..n).map(|_| VecDeque::new()).collect();
                if let Some(first) = s.queues.first_mut() {
                    first.extend(old.drain(..));
                }
                s.next = 0;
            }
            s.dispatch();
        }
        level
    }

    /// Classifies the request and waits for a seat: the seat, or 429.
    pub(crate) async fn admit(
        &self,
        st: &RestState,
        info: &RequestInfo,
        user: Option<&UserInfo>,
    ) -> Result<Option<Admitted>, ApiError> {
        let config = self.config(st);
        let anonymous;
        let user = match user {
            Some(u) => u,
            None => {
                anonymous = UserInfo::new("system:anonymous", &["system:unauthenticated"]);
                &anonymous
            }
        };
        let Some(schema) = config.schemas.iter().find(|s| s.rules.iter().any(|r| rule_matches(r, info, user))) else {
            return Ok(None);
        };
        let Some(spec) = config.levels.get(&schema.level) else { return Ok(None) };
        let m = &schema.metrics;
        let admitted = |level: Option<Arc<Level>>, width: usize| Admitted {
            seat: Seat::new(level, width, m),
            schema_uid: schema.uid.clone(),
            level_uid: spec.uid.clone(),
        };
        let Some(level) = spec.seats.clone() else {
            return Ok(Some(admitted(None, 0)));
        };
        let width = width(st, info);
        let waiting = {
            let mut s = level.state.lock().unwrap_or_else(|e| e.into_inner());
            let width = width.min(s.seats.max(1));
            if s.in_use + width <= s.seats && s.waiting() == 0 {
                s.in_use += width;
                None
            } else {
                let Some(q) = s.queuing else {
                    m.concurrency_limit.inc();
                    return Err(too_many_requests());
                };
                let distinguisher = match schema.by {
                    Distinguisher::ByUser => user.name.as_str(),
                    Distinguisher::ByNamespace => {
                        info.resource.as_ref().and_then(|r| r.namespace.as_deref()).unwrap_or("")
                    }
                    Distinguisher::None => "",
                };
                let hand = deal(flow_hash(&schema.name, distinguisher), s.queues.len(), q.hand_size);
                let Some(&shortest) = hand.iter().min_by_key(|&&i| s.queues[i].len()) else {
                    m.queue_full.inc();
                    return Err(too_many_requests());
                };
                if s.queues[shortest].len() >= q.queue_length_limit {
                    m.queue_full.inc();
                    return Err(too_many_requests());
                }
                let (tx, rx) = oneshot::channel();
                s.queues[shortest].push_back(Waiter { tx, width });
                Some(rx)
            }
        };
        match waiting {
            None => m.waited.observe(0.0),
            Some(rx) => {
                let wait = (st.request_timeout / 4).max(Duration::from_secs(1));
                let mut queued = Queued::new(m);
                let got = tokio::time::timeout(wait, rx).await;
                match got {
                    Ok(Ok(())) => queued.left(true),
                    // Timed out: its sender is dropped from the queue when next looked at
                    // (a closed receiver refuses the seat).
                    _ => {
                        queued.left(false);
                        m.time_out.inc();
                        return Err(too_many_requests());
                    }
                }
            }
        }
        let held = width.min(level.state.lock().unwrap_or_else(|e| e.into_inner()).seats.max(1));
        Ok(Some(admitted(Some(level), held)))
    }
}

/// The seats a request takes: a LIST one per [`OBJECTS_PER_SEAT`] objects it may
/// return (its `limit`, else what the cache holds under its prefix), at most
/// [`MAX_SEATS`]; anything else one.
fn width(st: &RestState, info: &RequestInfo) -> usize {
    let Some(r) = info.resource.as_ref().filter(|_| info.verb == "list") else { return 1 };
    let max = OBJECTS_PER_SEAT * MAX_SEATS;
    let limit = info.query.get("limit").and_then(|l| l.parse::<usize>().ok()).filter(|l| *l > 0).unwrap_or(max);
    let prefix = kuorum_store::keys::collection_prefix(&r.group, &r.resource, r.namespace.as_deref());
    let objects = st.cache.count_up_to(&prefix, limit.min(max));
    objects.div_ceil(OBJECTS_PER_SEAT).clamp(1, MAX_SEATS)
}

/// kube's APF refusal.
fn too_many_requests() -> ApiError {
    let mut e = ApiError::new(Reason::TooManyRequests, "Too many requests, please try again later.".to_string());
    e.details.get_or_insert_with(Default::default).retry_after_seconds = 1;
    e
}

fn flow_hash(schema: &str, distinguisher: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (schema, distinguisher).hash(&mut h);
    h.finish()
}

/// Shuffle sharding: `hand` distinct queues of `deck`, chosen by `hash` as kube's dealer
/// chooses them (the hash read as digits of falling bases).
fn deal(mut hash: u64, deck: usize, hand: usize) -> Vec<usize> {
    let hand = hand.min(deck);
    let mut chosen: Vec<usize> = Vec::with_capacity(hand);
    for i in 0..hand {
        let base = (deck - i) as u64;
        let mut card = (hash % base) as usize;
        hash /= base;
        // The card-th queue not chosen yet.
        let mut sorted = chosen.clone();
        sorted.sort_unstable();
        for c in sorted {
            if c <= card {
                card += 1;
            }
        }
        chosen.push(card);
    }
    chosen
}

/// Reads the FlowSchemas and PriorityLevelConfigurations in the cache.
fn read_config(st: &RestState) -> Config {
    let str_at = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
    let header_at = |v: &Value, p: &str| {
        HeaderValue::from_str(v.pointer(p).and_then(Value::as_str).unwrap_or(""))
            .unwrap_or(HeaderValue::from_static(""))
    };
    let mut levels = HashMap::new();
    let mut total_shares = 0;
    for plc in cached_list(&st.cache, GROUP, "prioritylevelconfigurations", None) {
        let plc = Value::Object(plc);
        let name = str_at(&plc, "/metadata/name");
        let exempt = str_at(&plc, "/spec/type") == "Exempt";
        let limited = plc.pointer("/spec/limited").cloned().unwrap_or(Value::Null);
        let shares = limited.get("nominalConcurrencyShares").and_then(Value::as_u64).unwrap_or(30);
        let response = limited.get("limitResponse").cloned().unwrap_or(Value::Null);
        let queuing = (response.get("type").and_then(Value::as_str) != Some("Reject")).then(|| {
            let q = response.get("queuing").cloned().unwrap_or(Value::Null);
            let n = |k: &str, d: u64| q.get(k).and_then(Value::as_u64).unwrap_or(d).clamp(1, 1 << 16) as usize;
            Queuing {
                queues: n("queues", 64),
                hand_size: n("handSize", 8),
                queue_length_limit: n("queueLengthLimit", 50),
            }
        });
        if !exempt {
            total_shares += shares;
        }
        levels.insert(name, LevelSpec { uid: header_at(&plc, "/metadata/uid"), exempt, shares, queuing, seats: None });
    }
    let mut schemas: Vec<Schema> = cached_list(&st.cache, GROUP, "flowschemas", None)
        .into_iter()
        .map(|fs| {
            let fs = Value::Object(fs);
            let by = match str_at(&fs, "/spec/distinguisherMethod/type").as_str() {
                "ByUser" => Distinguisher::ByUser,
                "ByNamespace" => Distinguisher::ByNamespace,
                _ => Distinguisher::None,
            };
            let (name, level) = (str_at(&fs, "/metadata/name"), str_at(&fs, "/spec/priorityLevelConfiguration/name"));
            Schema {
                metrics: Arc::new(st.metrics.flowcontrol.flow(&level, &name)),
                name,
                uid: header_at(&fs, "/metadata/uid"),
                precedence: fs.pointer("/spec/matchingPrecedence").and_then(Value::as_i64).unwrap_or(1000),
                level,
                by,
                rules: fs
                    .pointer("/spec/rules")
                    .and_then(Value::as_array)
                    .map(|rules| rules.iter().map(Rule::parse).collect())
                    .unwrap_or_default(),
            }
        })
        .collect();
    schemas.sort_by(|a, b| a.precedence.cmp(&b.precedence).then_with(|| a.name.cmp(&b.name)));
    Config { read_at: Instant::now(), schemas, levels, total_shares }
}

fn has(list: &[String], want: &str) -> bool {
    list.iter().any(|v| v == "*" || v == want)
}

/// Whether a FlowSchema rule takes this request from `user`.
fn rule_matches(rule: &Rule, info: &RequestInfo, user: &UserInfo) -> bool {
    if !rule.subjects.iter().any(|s| subject_matches(s, user)) {
        return false;
    }
    match &info.resource {
        Some(r) => rule.resource_rules.iter().any(|rr| {
            let resource_ok = match &r.subresource {
                Some(sub) => rr.resources.iter().any(|res| {
                    res == "*" || res.strip_prefix(r.resource.as_str()).and_then(|s| s.strip_prefix('/')) == Some(sub)
                }),
                None => has(&rr.resources, &r.resource),
            };
            let scope_ok = match &r.namespace {
                // A namespace's own object is cluster-scoped.
                Some(ns) if !(r.group.is_empty() && r.resource == "namespaces") => has(&rr.namespaces, ns),
                _ => rr.cluster_scope,
            };
            has(&rr.verbs, info.verb) && has(&rr.groups, &r.group) && resource_ok && scope_ok
        }),
        None => rule.non_resource_rules.iter().any(|nr| {
            has(&nr.verbs, info.verb)
                && nr.urls.iter().any(|u| {
                    u == "*"
                        || *u == info.path
                        || u.strip_suffix('*').is_some_and(|prefix| info.path.starts_with(prefix))
                })
        }),
    }
}

fn subject_matches(s: &Subject, user: &UserInfo) -> bool {
    match s {
        Subject::User(name) => name == "*" || *name == user.name,
        Subject::Group(g) => g == "*" || user.groups.iter().any(|ug| ug == g),
        Subject::ServiceAccount { namespace, name } => {
            match user.name.strip_prefix("system:serviceaccount:").and_then(|rest| rest.split_once(':')) {
                Some((uns, un)) => uns == namespace && (name == "*" || name == un),
                None => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hands_are_distinct_queues() {
        for h in [0u64, 1, 12345, u64::MAX] {
            let hand = deal(h, 8, 4);
            let mut sorted = hand.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), 4, "{hand:?}");
            assert!(hand.iter().all(|&q| q < 8));
        }
        assert_eq!(deal(7, 3, 8).len(), 3);
    }

    #[test]
    fn rules_match_subjects_and_resources() {
        let rule = Rule::parse(&json!({"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
            "resourceRules": [{"verbs": ["list", "get"], "apiGroups": [""], "resources": ["pods", "pods/log"], "namespaces": ["*"]}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/api/*"]}]}));
        let jane = UserInfo::new("jane", &["system:authenticated"]);
        let anon = UserInfo::new("system:anonymous", &["system:unauthenticated"]);
        let list = RequestInfo::parse("GET", "/api/v1/namespaces/a/pods", None);
        assert!(rule_matches(&rule, &list, &jane));
        assert!(!rule_matches(&rule, &list, &anon));
        let create = RequestInfo::parse("POST", "/api/v1/namespaces/a/pods", None);
        assert!(!rule_matches(&rule, &create, &jane));
        assert!(rule_matches(&rule, &RequestInfo::parse("GET", "/healthz", None), &jane));
        let log = RequestInfo::parse("GET", "/api/v1/namespaces/a/pods/p/log", None);
        assert!(rule_matches(&rule, &log, &jane), "a subresource named as res/sub");
        let status = RequestInfo::parse("GET", "/api/v1/namespaces/a/pods/p/status", None);
        assert!(!rule_matches(&rule, &status, &jane));
        let sa = Rule::parse(
            &json!({"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"namespace": "kube-system", "name": "*"}}]}),
        );
        assert!(subject_matches(&sa.subjects[0], &UserInfo::new("system:serviceaccount:kube-system:x", &[])));
        assert!(!subject_matches(&sa.subjects[0], &UserInfo::new("system:serviceaccount:default:x", &[])));
    }

    #[tokio::test]
    async fn a_full_level_queues_then_refuses_and_frees_in_turn() {
        let level = Arc::new(Level {
            state: Mutex::new(LevelState {
                seats: 1,
                in_use: 1,
                queuing: Some(Queuing { queues: 2, hand_size: 1, queue_length_limit: 1 }),
                queues: vec![VecDeque::new(), VecDeque::new()],
                next: 0,
            }),
        });
        let (tx_a, rx_a) = oneshot::channel();
        let (tx_b, rx_b) = oneshot::channel();
        {
            let mut s = level.state.lock().unwrap();
            s.queues[0].push_back(Waiter { tx: tx_a, width: 1 });
            s.queues[1].push_back(Waiter { tx: tx_b, width: 1 });
        }
        // The seat held is given back: the first queue's waiter gets it, then the second's.
        drop(held(&level));
        assert!(rx_a.await.is_ok());
        drop(held(&level));
        assert!(rx_b.await.is_ok());
        assert_eq!(level.state.lock().unwrap().in_use, 1);
    }

    /// One seat of `level`, held outside any request.
    fn held(level: &Arc<Level>) -> Seat {
        let metrics = Arc::new(FlowControlMetrics::register(&mut Registry::default()).flow("level", "schema"));
        Seat { level: Some(level.clone()), width: 1, metrics, since: Instant::now(), watch: false, wide: None }
    }

    #[tokio::test]
    async fn a_wide_request_waits_for_all_its_seats_and_nothing_passes_it() {
        let level = Arc::new(Level {
            state: Mutex::new(LevelState {
                seats: 3,
                in_use: 3,
                queuing: Some(Queuing { queues: 2, hand_size: 1, queue_length_limit: 5 }),
                queues: vec![VecDeque::new(), VecDeque::new()],
                next: 0,
            }),
        });
        let (tx_wide, mut rx_wide) = oneshot::channel();
        let (tx_narrow, mut rx_narrow) = oneshot::channel();
        {
            let mut s = level.state.lock().unwrap();
            s.queues[0].push_back(Waiter { tx: tx_wide, width: 2 });
            s.queues[1].push_back(Waiter { tx: tx_narrow, width: 1 });
        }
        drop(held(&level));
        assert!(rx_wide.try_recv().is_err() && rx_narrow.try_recv().is_err(), "one free seat is not two");
        drop(held(&level));
        assert!(rx_wide.try_recv().is_ok());
        assert!(rx_narrow.try_recv().is_err());
        drop(held(&level));
        assert!(rx_narrow.try_recv().is_ok());
        assert_eq!(level.state.lock().unwrap().in_use, 3);
    }
}
