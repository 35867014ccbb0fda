//! `/metrics`, and what [`crate::front`] does with every request here: it names the request as
//! kube-apiserver does (verb, group, version, resource, subresource, scope), counts it,
//! times it, and enforces the in-flight limits (429 with `Retry-After`).
//!
//! Request metrics carry kube-apiserver's names and labels, so its dashboards and alerts
//! work unchanged: `apiserver_request_total`, `apiserver_request_duration_seconds`,
//! `apiserver_current_inflight_requests`, `apiserver_longrunning_requests`. Replication
//! and the watch cache are this node's own (`kuorum_raft_*`, `kuorum_watch_*`), read at
//! scrape time from [`kuorum_raft::Cluster::status`] and the cache.
//!
//! Worked example: `GET /api/v1/namespaces/default/configmaps?watch=1` is verb `WATCH`,
//! group "", version `v1`, resource `configmaps`, scope `namespace`; it is long-running,
//! so it counts in `apiserver_longrunning_requests` while its stream is open and is not
//! timed, and no in-flight limit applies to it.

use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};
use http_body::Frame;
use kuorum_api::ApiError;
use kuorum_raft::RaftCounters;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::error::RestError;
use crate::request::RequestInfo;
use crate::target::Resolve;
use crate::RestState;

/// kube-apiserver's defaults (`--max-requests-inflight`, `--max-mutating-requests-inflight`).
pub const DEFAULT_MAX_READONLY_INFLIGHT: usize = 400;
pub const DEFAULT_MAX_MUTATING_INFLIGHT: usize = 200;

/// kube-apiserver's buckets for `apiserver_request_duration_seconds`.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0,
    45.0, 60.0,
];

/// What kube-apiserver's metrics call a request. It is also the label set of
/// `apiserver_request_duration_seconds`, in kube-apiserver's label order. Every label
/// comes from a closed set, never from the URL as sent: an anonymous client sending
/// random paths must not grow `/metrics` (or the node's memory) with each one.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RequestMetric {
    pub verb: &'static str,
    /// `""`, `All`, or `invalid` (kube-apiserver's `cleanDryRun`).
    pub dry_run: &'static str,
    /// The group, version, resource and subresource of a resource this node serves
    /// (built-in or custom); all empty for any other path.
    pub group: &'static str,
    pub version: &'static str,
    pub resource: &'static str,
    pub subresource: &'static str,
    /// `resource` (a named object), `namespace`, `cluster`, or empty (not a served resource).
    pub scope: &'static str,
    pub component: &'static str,
}

impl RequestMetric {
    fn long_running(&self) -> bool {
        self.verb == "WATCH"
    }

    fn mutating(&self) -> bool {
        matches!(self.verb, "POST" | "PUT" | "PATCH" | "APPLY" | "DELETE" | "DELETECOLLECTION")
    }
}

/// Names a request from its one parse: `apply` is a PATCH of an apply patch; `resolve`
/// finds the resource among those the node serves.
pub(crate) fn classify(info: &RequestInfo, apply: bool, resolve: Resolve<'_>) -> RequestMetric {
    let verb = match info.verb {
        "get" => "GET",
        "list" => "LIST",
        "watch" => "WATCH",
        "create" | "post" => "POST",
        "update" | "put" => "PUT",
        "patch" if apply && info.resource.is_some() => "APPLY",
        "patch" => "PATCH",
        "delete" => "DELETE",
        "deletecollection" => "DELETECOLLECTION",
        _ => "other",
    };
    let dry_run = match info.query.get_all("dryRun").collect::<Vec<_>>().as_slice() {
        [] => "",
        values if values.iter().all(|v| *v == "All") => "All",
        _ => "invalid",
    };
    let mut m = RequestMetric {
        verb,
        dry_run,
        group: "",
        version: "",
        resource: "",
        subresource: "",
        scope: "",
        component: "apiserver",
    };
    let Some(path) = &info.resource else { return m };
    let Some((def, _)) = (!path.malformed).then(|| resolve(&path.group, &path.version, &path.resource)).flatten()
    else {
        return m;
    };
    (m.group, m.version, m.resource) = (def.group, def.version, def.plural);
    m.subresource = path.subresource.as_deref().and_then(|s| def.subresource(s)).map_or("", |s| s.name);
    m.scope = if path.name.is_some() {
        "resource"
    } else if path.namespaced_path {
        "namespace"
    } else {
        "cluster"
    };
    m
}

/// `apiserver_request_total`'s labels: the request's, and the response code.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    #[prometheus(flatten)]
    request: RequestMetric,
    code: u16,
}

impl RequestMetric {
    fn long_running_labels(&self) -> LongRunningLabels {
        LongRunningLabels {
            verb: self.verb,
            group: self.group,
            version: self.version,
            resource: self.resource,
            subresource: self.subresource,
            scope: self.scope,
            component: self.component,
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    request_kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LongRunningLabels {
    verb: &'static str,
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    subresource: &'static str,
    scope: &'static str,
    component: &'static str,
}

/// The gauges read from replication and the watch cache at each scrape.
#[derive(Default)]
struct NodeGauges {
    term: Gauge,
    is_leader: Gauge,
    has_leader: Gauge,
    last_log_index: Gauge,
    commit_index: Gauge,
    applied_index: Gauge,
    apply_lag: Gauge,
    snapshot_index: Gauge,
    voters: Gauge,
    learners: Gauge,
    watchers: Gauge,
    cache_rv: Gauge,
    cache_oldest_rv: Gauge,
    cache_objects: Gauge,
    cache_object_bytes: Gauge,
    cache_events: Gauge,
    cache_event_bytes: Gauge,
    resident_bytes: Gauge,
    /// The storage engine's memory, by part.
    storage_memory: Family<MemoryPart, Gauge>,
    state_corrupt: Gauge,
    verified_rv: Gauge,
    /// Consistency checks so far, by outcome.
    consistency_checks: Family<CheckOutcome, Gauge>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckOutcome {
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemoryPart {
    part: &'static str,
}

/// This node's metrics registry and the in-flight limits.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<RequestMetric, Histogram>,
    inflight: Family<KindLabels, Gauge>,
    longrunning: Family<LongRunningLabels, Gauge>,
    /// API Priority and Fairness's (`apiserver_flowcontrol_*`).
    pub(crate) flowcontrol: crate::apf::FlowControlMetrics,
    /// Faults injected by [`crate::chaos`], by kind (empty unless chaos is enabled).
    chaos_injected: Family<crate::chaos::FaultLabel, Counter>,
    node: NodeGauges,
    /// Requests being served now, by kind; a request past its limit gets 429.
    readonly_now: AtomicUsize,
    mutating_now: AtomicUsize,
    /// 0: no limit.
    max_readonly: AtomicUsize,
    max_mutating: AtomicUsize,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// A registry holding the request metrics, `raft`'s counters and the node gauges, with
    /// kube-apiserver's default in-flight limits.
    pub fn new(raft: RaftCounters) -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let durations = Family::<RequestMetric, Histogram>::new_with_constructor(
            (|| Histogram::new(DURATION_BUCKETS)) as fn() -> Histogram,
        );
        let inflight = Family::<KindLabels, Gauge>::default();
        let longrunning = Family::<LongRunningLabels, Gauge>::default();
        // Counters get `_total` appended by the encoder.
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            durations.clone(),
        );
        registry.register(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
            inflight.clone(),
        );
        registry.register(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component.",
            longrunning.clone(),
        );
        registry.register(
            "kuorum_raft_leader_changes_seen",
            "Times this node saw the Raft leader change.",
            raft.leader_changes,
        );
        registry.register(
            "kuorum_raft_log_fsync_duration_seconds",
            "Duration of the Raft log's fsyncs (one per group commit).",
            raft.log_fsync_seconds,
        );
        let flowcontrol = crate::apf::FlowControlMetrics::register(&mut registry);
        let chaos_injected = Family::<crate::chaos::FaultLabel, Counter>::default();
        registry.register(
            "kuorum_chaos_faults_injected",
            "Faults injected on this node by its chaos mode, by kind",
            chaos_injected.clone(),
        );
        let node = NodeGauges::default();
        let gauges: [(&str, &str, &Gauge); 20] = [
            ("kuorum_raft_term", "This node's current Raft term.", &node.term),
            ("kuorum_raft_is_leader", "1 if this node is the Raft leader.", &node.is_leader),
            ("kuorum_raft_has_leader", "1 if this node knows a Raft leader.", &node.has_leader),
            ("kuorum_raft_last_log_index", "The newest entry in this node's Raft log.", &node.last_log_index),
            ("kuorum_raft_commit_index", "The newest entry this node knows to be committed.", &node.commit_index),
            ("kuorum_raft_applied_index", "The newest entry applied here (its resourceVersion).", &node.applied_index),
            ("kuorum_raft_apply_lag_entries", "Committed entries not yet applied here.", &node.apply_lag),
            ("kuorum_raft_snapshot_index", "The last entry in this node's latest snapshot.", &node.snapshot_index),
            ("kuorum_raft_voters", "Voting members in this node's membership.", &node.voters),
            ("kuorum_raft_learners", "Non-voting members in this node's membership.", &node.learners),
            ("kuorum_watch_cache_watchers", "Watches this node is serving.", &node.watchers),
            ("kuorum_watch_cache_resource_version", "The newest resourceVersion in the watch cache.", &node.cache_rv),
            (
                "kuorum_watch_cache_oldest_resource_version",
                "The oldest resourceVersion a watch can resume from here.",
                &node.cache_oldest_rv,
            ),
            ("kuorum_watch_cache_objects", "Objects in the watch cache.", &node.cache_objects),
            (
                "kuorum_watch_cache_object_bytes",
                "The encoded size of the watch cache's objects (held once, shared with the events that carry them).",
                &node.cache_object_bytes,
            ),
            ("kuorum_watch_cache_events", "Events in the watch cache's window.", &node.cache_events),
            (
                "kuorum_watch_cache_event_bytes",
                "Bytes the watch cache's window keeps beyond the current objects (replaced and deleted versions, the events).",
                &node.cache_event_bytes,
            ),
            ("process_resident_memory_bytes", "Resident memory size in bytes.", &node.resident_bytes),
            (
                "kuorum_state_corrupt",
                "1 if this node's state failed its consistency check against its peers' (it serves nothing until rebuilt).",
                &node.state_corrupt,
            ),
            (
                "kuorum_consistency_check_verified_resource_version",
                "The newest compaction point at which a majority of voters held the same state as this node.",
                &node.verified_rv,
            ),
        ];
        for (name, help, gauge) in gauges {
            registry.register(name, help, gauge.clone());
        }
        registry.register(
            "kuorum_storage_memory_bytes",
            "Memory the storage engine holds beside the watch cache, by part (RocksDB: memtables, block_cache, table_readers).",
            node.storage_memory.clone(),
        );
        registry.register(
            "kuorum_consistency_checks",
            "Consistency checks of this node's state against its peers' since it started, by result (agreed, mismatched, inconclusive).",
            node.consistency_checks.clone(),
        );
        Metrics {
            registry,
            flowcontrol,
            requests,
            durations,
            inflight,
            longrunning,
            chaos_injected,
            node,
            readonly_now: AtomicUsize::new(0),
            mutating_now: AtomicUsize::new(0),
            max_readonly: AtomicUsize::new(DEFAULT_MAX_READONLY_INFLIGHT),
            max_mutating: AtomicUsize::new(DEFAULT_MAX_MUTATING_INFLIGHT),
        }
    }

    /// The counters [`crate::chaos::Chaos`] counts its faults in.
    pub(crate) fn chaos_counters(&self) -> Family<crate::chaos::FaultLabel, Counter> {
        self.chaos_injected.clone()
    }

    /// Sets the in-flight limits (0: none), as `--max-requests-inflight` and
    /// `--max-mutating-requests-inflight` do.
    pub fn set_inflight_limits(&self, readonly: usize, mutating: usize) {
        self.max_readonly.store(readonly, Ordering::Relaxed);
        self.max_mutating.store(mutating, Ordering::Relaxed);
    }

    /// The registry in the OpenMetrics text format, with the node gauges read now.
    pub fn render(&self, state: &RestState) -> String {
        let st = state.cluster.status();
        let n = &self.node;
        let set = |g: &Gauge, v: u64| {
            g.set(i64::try_from(v).unwrap_or(i64::MAX));
        };
        set(&n.term, st.term);
        set(&n.is_leader, u64::from(st.leader == Some(st.id)));
        set(&n.has_leader, u64::from(st.leader.is_some()));
        set(&n.last_log_index, st.last_log_index);
        set(&n.commit_index, st.committed);
        set(&n.applied_index, st.applied);
        set(&n.apply_lag, st.apply_lag());
        set(&n.snapshot_index, st.snapshot);
        set(&n.voters, st.voters.len() as u64);
        set(&n.learners, st.learners.len() as u64);
        set(&n.watchers, state.cache.watcher_count() as u64);
        set(&n.cache_rv, state.cache.rv());
        set(&n.cache_oldest_rv, state.cache.oldest());
        let size = state.cache.size();
        set(&n.cache_objects, size.objects as u64);
        set(&n.cache_object_bytes, size.object_bytes as u64);
        set(&n.cache_events, size.events as u64);
        set(&n.cache_event_bytes, size.event_bytes as u64);
        if let Some(rss) = resident_bytes() {
            set(&n.resident_bytes, rss);
        }
        let integrity = state.cluster.integrity();
        set(&n.state_corrupt, u64::from(integrity.corrupt().is_some()));
        set(&n.verified_rv, integrity.verified_rv.load(Ordering::Relaxed));
        for (result, count) in [
            ("agreed", &integrity.agreed),
            ("mismatched", &integrity.mismatched),
            ("inconclusive", &integrity.inconclusive),
        ] {
            set(&n.consistency_checks.get_or_create(&CheckOutcome { result }), count.load(Ordering::Relaxed));
        }
        for (part, bytes) in state.cluster.storage_memory() {
            set(&n.storage_memory.get_or_create(&MemoryPart { part }), bytes);
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// The last use of `info`: the counter's labels take it.
    fn count(&self, info: RequestMetric, code: StatusCode) {
        self.requests.get_or_create(&RequestLabels { request: info, code: code.as_u16() }).inc();
    }

    fn time(&self, info: &RequestMetric, seconds: f64) {
        self.durations.get_or_create(info).observe(seconds);
    }
}

/// Gives back one in-flight slot when the request is answered.
pub(crate) struct Slot<'m> {
    now: &'m AtomicUsize,
    gauge: Gauge,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let left = self.now.fetch_sub(1, Ordering::SeqCst) - 1;
        self.gauge.set(left as i64);
    }
}

/// Takes one off a gauge when dropped: a watch stream leaves
/// `apiserver_longrunning_requests` when its body is dropped.
struct GaugeDec(Gauge<i64, AtomicI64>);

impl Drop for GaugeDec {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// A response body that holds `guard` until the body is dropped (the stream ends or
/// the client goes away).
pub(crate) struct GuardedBody<G: Send + Unpin + 'static> {
    inner: Body,
    _guard: G,
}

impl<G: Send + Unpin + 'static> GuardedBody<G> {
    pub(crate) fn wrap(resp: Response, guard: G) -> Response {
        let (parts, body) = resp.into_parts();
        Response::from_parts(parts, Body::new(GuardedBody { inner: body, _guard: guard }))
    }
}

impl<G: Send + Unpin + 'static> http_body::Body for GuardedBody<G> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// A request [`Metrics::admit`] let in: what [`Metrics::finish`] counts when it is answered.
pub(crate) enum Admitted<'m> {
    /// A watch: counted, not timed, and in `apiserver_longrunning_requests` while its
    /// body lives; no in-flight limit applies.
    LongRunning { info: RequestMetric, gauge: Gauge },
    /// Anything else: holds an in-flight slot until answered, and is timed.
    Timed { info: RequestMetric, slot: Slot<'m>, started: tokio::time::Instant },
}

impl Metrics {
    /// Names the request `info` describes as kube-apiserver does ([`classify`]) and
    /// takes its in-flight slot; a request over the limit is answered here, 429 with
    /// `Retry-After`, and counted.
    pub(crate) fn admit(
        &self,
        info: &RequestInfo,
        apply: bool,
        resolve: Resolve<'_>,
    ) -> Result<Admitted<'_>, Response> {
        let info = classify(info, apply, resolve);

        if info.long_running() {
            let gauge = self.longrunning.get_or_create(&info.long_running_labels()).clone();
            gauge.inc();
            return Ok(Admitted::LongRunning { info, gauge });
        }

        let (now, max, kind) = if info.mutating() {
            (&self.mutating_now, self.max_mutating.load(Ordering::Relaxed), "mutating")
        } else {
            (&self.readonly_now, self.max_readonly.load(Ordering::Relaxed), "readOnly")
        };
        let taken = now.fetch_add(1, Ordering::SeqCst) + 1;
        let gauge = self.inflight.get_or_create(&KindLabels { request_kind: kind }).clone();
        let slot = Slot { now, gauge };
        if max > 0 && taken > max {
            drop(slot);
            let resp = RestError(ApiError::too_many_requests(1)).into_response();
            self.count(info, resp.status());
            return Err(resp);
        }
        slot.gauge.set(taken as i64);
        Ok(Admitted::Timed { info, slot, started: tokio::time::Instant::now() })
    }

    /// Counts (and times) the request `admitted` answered with `resp`.
    pub(crate) fn finish(&self, admitted: Admitted<'_>, resp: Response) -> Response {
        match admitted {
            Admitted::LongRunning { info, gauge } => {
                self.count(info, resp.status());
                GuardedBody::wrap(resp, GaugeDec(gauge))
            }
            Admitted::Timed { info, slot, started } => {
                drop(slot);
                self.time(&info, started.elapsed().as_secs_f64());
                self.count(info, resp.status());
                resp
            }
        }
    }
}

/// This process's resident set size, from `/proc/self/status` (None elsewhere).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `GET /metrics`.
pub(crate) async fn serve(State(state): State<Arc<RestState>>) -> Response {
    let body = state.metrics.render(&state);
    (StatusCode::OK, [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], body)
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(method: &str, url: &str, apply: bool) -> RequestMetric {
        let (path, query) = url.split_once('?').map_or((url, None), |(p, q)| (p, Some(q)));
        classify(&RequestInfo::parse(method, path, query), apply, &crate::target::builtin)
    }

    #[test]
    fn requests_are_named_as_kube_apiserver_names_them() {
        // method, path?query → verb, resource, subresource, scope
        let cases = [
            ("GET", "/api/v1/namespaces/default/configmaps", ("LIST", "configmaps", "", "namespace")),
            (
                "GET",
                "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=5",
                ("WATCH", "configmaps", "", "namespace"),
            ),
            ("GET", "/api/v1/namespaces/default/configmaps?watch=True", ("WATCH", "configmaps", "", "namespace")),
            ("GET", "/api/v1/namespaces/default/configmaps?%77atch", ("WATCH", "configmaps", "", "namespace")),
            ("GET", "/api/v1/watch/namespaces/a/pods", ("WATCH", "pods", "", "namespace")),
            ("GET", "/api/v1/namespaces/a/pods/p", ("GET", "pods", "", "resource")),
            ("PUT", "/api/v1/namespaces/a/pods/p/status", ("PUT", "pods", "status", "resource")),
            ("GET", "/api/v1/namespaces/kube-system", ("GET", "namespaces", "", "resource")),
            // finalize is a subresource kuorum serves: a label of its own.
            ("PUT", "/api/v1/namespaces/x/finalize", ("PUT", "namespaces", "finalize", "resource")),
            ("GET", "/api/v1/nodes", ("LIST", "nodes", "", "cluster")),
            ("DELETE", "/apis/apps/v1/namespaces/a/deployments", ("DELETECOLLECTION", "deployments", "", "namespace")),
            ("GET", "/healthz", ("GET", "", "", "")),
            ("HEAD", "/healthz", ("other", "", "", "")),
        ];
        for (method, url, want) in cases {
            let m = named(method, url, false);
            assert_eq!((m.verb, m.resource, m.subresource, m.scope), want, "{method} {url}");
        }
        let apply = named("PATCH", "/apis/apps/v1/namespaces/a/deployments/d?dryRun=All", true);
        assert_eq!((apply.verb, apply.group, apply.version, apply.dry_run), ("APPLY", "apps", "v1", "All"));
    }

    /// What a client puts in the URL never becomes a label: unknown groups, versions,
    /// resources, subresources and dryRun values fall into fixed buckets.
    #[test]
    fn labels_come_from_closed_sets() {
        let empty = ("", "", "", "", "");
        for url in [
            "/apis/x-1234/v9/things",
            "/api/v7/pods",
            "/apis/apps/v1/namespaces/a/zzz",
            "/api/v1/namespaces/a/configmaps/c/d/e",
            "/apis/random.example.com/v1/crontabs/x",
            "/random/path/x",
        ] {
            let m = named("GET", url, false);
            assert_eq!((m.group, m.version, m.resource, m.subresource, m.scope), empty, "{url}");
        }
        let m = named("GET", "/api/v1/namespaces/a/pods/p/zzz", false);
        assert_eq!((m.resource, m.subresource), ("pods", ""));
        assert_eq!(named("POST", "/api/v1/namespaces/a/pods?dryRun=All&dryRun=All", false).dry_run, "All");
        assert_eq!(named("POST", "/api/v1/namespaces/a/pods?dryRun=xyz123", false).dry_run, "invalid");
        assert_eq!(named("BREW", "/api/v1/namespaces/a/pods", false).verb, "other");
    }
}
