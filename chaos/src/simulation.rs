//! Owns one run: a simulated kuorum cluster, the user's controllers and workloads on
//! hosts of their own, the fault plan applied between simulation steps, and the checks
//! at the end. Everything derives from the seed: the network's latencies, the nodes'
//! elections, every library's randomness and the random fault plan, so a seed replays.
//!
//! A run has three phases:
//! 1. **faults** (from 5 s to [`Simulation::duration`]): controllers and workloads run
//!    while the plan's faults happen; every lasting fault is over by the end;
//! 2. **settle** ([`Simulation::settle`]): no faults, so a correct controller catches up;
//! 3. **checks**: the final checks run on a host of their own (they may use clients),
//!    then the history checks run over every change the cluster applied.
//!
//! Any failure (a workload or check returning an error, a controller host failing, a
//! history check, the run not finishing in time) is a [`Failure`] naming the seed.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use kuorum_rest::chaos::{Chaos, FaultSettings, WatchAction, WatchStrike};
use kuorum_sim::client::{request_within, TurmoilDial};
use kuorum_sim::cluster::{host_name, ClusterSpec, SimCluster};
use kuorum_sim::replay::Fnv;
use kuorum_sim::run::wait_ready;
use kuorum_watch::CacheConfig;
use openraft::async_runtime::WatchReceiver;

use crate::client::kube_client;
use crate::fault::{Fault, FaultMix, FaultPlan, Scheduled};
use crate::history::History;

/// What a user's function returns: `Err` with a message fails the run.
pub type Outcome = Result<(), String>;

type Controller = Arc<dyn Fn(Env) -> BoxFuture<'static, Outcome> + Send + Sync>;
type Workload = Box<dyn FnOnce(Env) -> BoxFuture<'static, Outcome> + Send>;
type HistoryCheck = Box<dyn Fn(&History) -> Outcome + Send>;

/// The host the harness uses for admin requests (moving the leader, compacting). Never
/// partitioned.
const CONTROL_HOST: &str = "kuorum-chaos-control";
/// The host the final checks run on. Never partitioned.
const CHECK_HOST: &str = "kuorum-chaos-checks";
/// When the fault phase starts: the cluster has elected a leader and bootstrapped.
const FAULTS_FROM: Duration = Duration::from_secs(5);

/// What a controller, workload or check gets: clients to the cluster and the run's
/// facts. Cheap to clone.
#[derive(Clone)]
pub struct Env {
    seed: u64,
    nodes: u64,
    host: String,
    faults_end: Duration,
    clients_made: Arc<AtomicUsize>,
}

impl Env {
    /// A client to the whole cluster through a simulated load balancer: each new
    /// connection goes to the next node. What a controller deployed next to the cluster
    /// gets. Call it on the host that uses it.
    pub fn client(&self) -> kube::Client {
        let first = self.clients_made.fetch_add(1, Ordering::Relaxed);
        kube_client((1..=self.nodes).collect(), first)
    }

    /// A client whose every connection goes to node `node` (1-based).
    pub fn client_to(&self, node: u64) -> kube::Client {
        assert!((1..=self.nodes).contains(&node), "node {node} is not in a {}-node cluster", self.nodes);
        kube_client(vec![node], 0)
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    /// The host this code runs on.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Simulated time since the start of the run.
    pub fn elapsed(&self) -> Duration {
        turmoil::elapsed()
    }

    /// When the fault phase ends: a workload should stop changing things by then, so
    /// the settle phase can show that the controller caught up.
    pub fn faults_end(&self) -> Duration {
        self.faults_end
    }

    /// Sleeps until simulated time `t` (at once if it has passed).
    pub async fn sleep_until(&self, t: Duration) {
        tokio::time::sleep(t.saturating_sub(turmoil::elapsed())).await;
    }
}

/// A run that failed, with what is needed to replay it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub seed: u64,
    /// Simulated time of the failure.
    pub at: Duration,
    pub reason: String,
    /// The faults that had happened by then, one line each.
    pub faults: Vec<String>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {} failed at {:.3}s: {}", self.seed, self.at.as_secs_f64(), self.reason)?;
        writeln!(f, "faults before the failure:")?;
        for line in &self.faults {
            writeln!(f, "  {line}")?;
        }
        write!(f, "replay it: KUORUM_CHAOS_SEED={} cargo test <this test>", self.seed)
    }
}

/// A run that passed.
#[derive(Debug, Clone)]
pub struct Report {
    pub seed: u64,
    /// The faults that happened, one line each.
    pub faults: Vec<String>,
    pub history: History,
    /// A hash of the history and the faults: the same for every run of one seed.
    pub trace: u64,
}

/// One simulated run, built up and then [`Simulation::run`].
///
/// ```no_run
/// use std::time::Duration;
/// use kuorum_chaos::{FaultMix, Simulation};
///
/// let report = Simulation::new(42)
///     .duration(Duration::from_secs(40))
///     .faults(FaultMix::all())
///     .controller("my-controller", |env| async move {
///         let client = env.client();
///         // run the controller with `client` until the host is stopped
///         # let _ = client;
///         Ok(())
///     })
///     .check(|env| async move {
///         // read the cluster with env.client() and return Err("why") if it is wrong
///         # let _ = env;
///         Ok(())
///     })
///     .run();
/// ```
pub struct Simulation {
    seed: u64,
    nodes: u64,
    duration: Duration,
    settle: Duration,
    mix: Option<FaultMix>,
    plan: FaultPlan,
    latency: (Duration, Duration),
    controllers: Vec<(String, Controller)>,
    workloads: Vec<(String, Workload)>,
    checks: Vec<Workload>,
    history_checks: Vec<HistoryCheck>,
}

impl Simulation {
    /// A 3-node cluster for 30 s of faults and 35 s of settling, no faults yet.
    pub fn new(seed: u64) -> Simulation {
        Simulation {
            seed,
            nodes: 3,
            duration: Duration::from_secs(30),
            settle: Duration::from_secs(35),
            mix: None,
            plan: FaultPlan::none(),
            latency: (Duration::from_millis(1), Duration::from_millis(5)),
            controllers: Vec::new(),
            workloads: Vec::new(),
            checks: Vec::new(),
            history_checks: Vec::new(),
        }
    }

    /// The number of kuorum nodes (3 or 5 for a highly available cluster).
    pub fn nodes(mut self, n: u64) -> Self {
        assert!(n >= 1, "a cluster has at least one node");
        self.nodes = n;
        self
    }

    /// When the fault phase ends (simulated time from the start).
    pub fn duration(mut self, d: Duration) -> Self {
        self.duration = d.max(FAULTS_FROM);
        self
    }

    /// How long the run goes on without faults before the final checks. Give a
    /// controller at least the clients' [`crate::client::IDLE_TIMEOUT`] plus its longest
    /// backoff: a connection a partition broke silently is only found dead by that
    /// timeout, as a real client finds it by its keepalive.
    pub fn settle(mut self, d: Duration) -> Self {
        self.settle = d;
        self
    }

    /// Random faults drawn from `mix` and the seed, between 5 s and the end of the
    /// fault phase.
    pub fn faults(mut self, mix: FaultMix) -> Self {
        self.mix = Some(mix);
        self
    }

    /// A fault at a chosen time, besides any random ones.
    pub fn fault_at(mut self, at: Duration, fault: Fault, lasting: Duration) -> Self {
        self.plan = self.plan.at(at, fault, lasting);
        self
    }

    /// One-way network latency between any two hosts: uniform in `min..=max`.
    pub fn latency(mut self, min: Duration, max: Duration) -> Self {
        self.latency = (min, max.max(min));
        self
    }

    /// A controller on host `name`: `run` is called when the host starts and again
    /// whenever a fault restarts it. It should run until the host is stopped; returning
    /// `Err` fails the run, returning `Ok` ends the controller.
    pub fn controller<F, Fut>(mut self, name: &str, run: F) -> Self
    where
        F: Fn(Env) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Outcome> + Send + 'static,
    {
        self.controllers.push((name.to_string(), Arc::new(move |env| Box::pin(run(env)))));
        self
    }

    /// A workload on host `name` (users, other controllers): runs once, from when the
    /// cluster is ready; `Err` fails the run.
    pub fn workload<F, Fut>(mut self, name: &str, run: F) -> Self
    where
        F: FnOnce(Env) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Outcome> + Send + 'static,
    {
        self.workloads.push((name.to_string(), Box::new(move |env| Box::pin(run(env)))));
        self
    }

    /// A final check: runs after the settle phase, with clients to the healed cluster.
    pub fn check<F, Fut>(mut self, check: F) -> Self
    where
        F: FnOnce(Env) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Outcome> + Send + 'static,
    {
        self.checks.push(Box::new(move |env| Box::pin(check(env))));
        self
    }

    /// A check over every change the cluster applied during the run, in order.
    pub fn check_history<F>(mut self, check: F) -> Self
    where
        F: Fn(&History) -> Outcome + Send + 'static,
    {
        self.history_checks.push(Box::new(check));
        self
    }

    /// Runs it on a thread of its own (whose randomness and clocks the seed owns) and
    /// checks it.
    pub fn run(self) -> Result<Report, Failure> {
        static WARMED: std::sync::Once = std::sync::Once::new();
        WARMED.call_once(|| {
            let _ = warm_up().run_alone();
        });
        self.run_alone()
    }

    fn run_alone(self) -> Result<Report, Failure> {
        let seed = self.seed;
        std::thread::Builder::new()
            .name(format!("kuorum-chaos-{seed}"))
            .stack_size(64 << 20)
            .spawn(move || {
                kuorum_sim::entropy::seed_thread(seed);
                self.run_here()
            })
            .expect("spawn the simulation thread")
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    }

    fn run_here(self) -> Result<Report, Failure> {
        let Simulation {
            seed,
            nodes,
            duration,
            settle,
            mix,
            plan,
            latency,
            controllers,
            workloads,
            checks,
            history_checks,
        } = self;
        let controller_names: Vec<String> = controllers.iter().map(|(n, _)| n.clone()).collect();
        let workload_names: Vec<String> = workloads.iter().map(|(n, _)| n.clone()).collect();
        let mut plan_faults = plan.faults;
        if let Some(mix) = &mix {
            plan_faults.extend(mix.plan(seed, nodes, &controller_names, &workload_names, FAULTS_FROM, duration).faults);
            plan_faults.sort_by_key(|s| s.at);
        }
        let end_of_checks = duration + settle + Duration::from_secs(120);
        let mut sim = turmoil::Builder::new()
            .rng_seed(seed)
            .simulation_duration(end_of_checks)
            .min_message_latency(latency.0)
            .max_message_latency(latency.1)
            .tcp_capacity(1 << 16)
            .build();
        let spec = ClusterSpec {
            chaos: true,
            keep_objects: true,
            cache: CacheConfig { bookmark_every: Duration::from_secs(1), ..CacheConfig::default() },
            ..ClusterSpec::new(nodes, seed)
        };
        let cluster = SimCluster::start_spec(&mut sim, spec);
        let clients_made = Arc::new(AtomicUsize::new(seed as usize % nodes as usize));
        let env = |host: &str| Env {
            seed,
            nodes,
            host: host.to_string(),
            faults_end: duration,
            clients_made: clients_made.clone(),
        };

        for (name, run) in controllers {
            let env = env(&name);
            sim.host(name.as_str(), move || {
                let (env, run) = (env.clone(), run.clone());
                async move {
                    wait_ready(env.nodes).await;
                    run(env).await.map_err(|e| e.into())
                }
            });
        }
        for (name, run) in workloads {
            let env = env(&name);
            sim.client(name.as_str(), async move {
                wait_ready(env.nodes).await;
                run(env).await.map_err(|e| e.into())
            });
        }
        let check_env = env(CHECK_HOST);
        sim.client(CHECK_HOST, async move {
            check_env.sleep_until(duration + settle).await;
            for check in checks {
                check(check_env.clone()).await.map_err(|e| format!("final check: {e}"))?;
            }
            Ok(())
        });
        let (control_tx, control_rx) = tokio::sync::mpsc::unbounded_channel::<ControlOp>();
        let control_rx = Arc::new(Mutex::new(Some(control_rx)));
        sim.host(CONTROL_HOST, move || {
            let rx = control_rx.lock().unwrap_or_else(|e| e.into_inner()).take();
            async move {
                let Some(mut rx) = rx else { return Ok(()) };
                while let Some(op) = rx.recv().await {
                    tokio::spawn(async move {
                        let r = request_within(
                            Duration::from_secs(15),
                            &TurmoilDial,
                            op.node,
                            "POST",
                            op.path,
                            Some(&op.body),
                        )
                        .await;
                        tracing::debug!("chaos control {} on node{}: {:?}", op.path, op.node, r.map(|r| r.status));
                    });
                }
                Ok(())
            }
        });

        let others: Vec<String> =
            controller_names.iter().chain(&workload_names).cloned().chain([CHECK_HOST.to_string()]).collect();
        let mut driver = Driver {
            cluster,
            others,
            control: control_tx,
            lasting: Vec::new(),
            applied: BTreeMap::new(),
            log: Vec::new(),
        };
        let mut pending: std::collections::VecDeque<Scheduled> = plan_faults.into();
        loop {
            let now = sim.elapsed();
            while pending.front().is_some_and(|s| s.at <= now) {
                let s = pending.pop_front().expect("checked");
                driver.start(&mut sim, s, now);
            }
            driver.end_due(&mut sim, now);
            driver.sync_settings();
            match sim.step() {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    return Err(Failure { seed, at: sim.elapsed(), reason: e.to_string(), faults: driver.log });
                }
            }
        }
        let taps: Vec<_> = driver.cluster.disks.values().map(|d| d.tap.clone()).collect();
        let history = History::merge(&taps);
        for check in &history_checks {
            if let Err(reason) = check(&history) {
                return Err(Failure {
                    seed,
                    at: sim.elapsed(),
                    reason: format!("history check: {reason}"),
                    faults: driver.log,
                });
            }
        }
        let mut trace = Fnv(history.digest());
        for line in &driver.log {
            trace.write(line.as_bytes());
        }
        Ok(Report { seed, faults: driver.log, history, trace: trace.0 })
    }
}

/// An admin request the control host sends.
struct ControlOp {
    node: u64,
    path: &'static str,
    body: serde_json::Value,
}

/// Applies and undoes faults between simulation steps.
struct Driver {
    cluster: SimCluster,
    /// Every host but the nodes and the control host.
    others: Vec<String>,
    control: tokio::sync::mpsc::UnboundedSender<ControlOp>,
    /// Lasting faults in effect, with when they end.
    lasting: Vec<(Duration, Fault)>,
    /// The settings last given to each node's injector (by the injector's identity, so
    /// a restarted node gets them again).
    applied: BTreeMap<u64, (usize, FaultSettings)>,
    log: Vec<String>,
}

impl Driver {
    fn note(&mut self, now: Duration, what: String) {
        self.log.push(format!("{:>8.3}s {what}", now.as_secs_f64()));
    }

    /// The links a partition fault cuts (and its end repairs).
    fn cut_links(&self, fault: &Fault) -> Vec<(String, String)> {
        match fault {
            Fault::IsolateNode(n) => {
                let others =
                    (1..=self.cluster.nodes).filter(|i| i != n).map(host_name).chain(self.others.iter().cloned());
                others.map(|other| (host_name(*n), other)).collect()
            }
            Fault::IsolateHost(h) => (1..=self.cluster.nodes).map(|n| (h.clone(), host_name(n))).collect(),
            _ => Vec::new(),
        }
    }

    fn injectors(&self) -> Vec<(u64, Arc<Chaos>)> {
        self.cluster.chaos.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, v)| (*k, v.clone())).collect()
    }

    fn strike(&self, action: WatchAction) {
        for (_, c) in self.injectors() {
            let _ = c.strike_watches(WatchStrike { action, fraction: 1.0 }, 0);
        }
    }

    fn leader(&self) -> Option<u64> {
        let rafts = self.cluster.rafts.lock().unwrap_or_else(|e| e.into_inner());
        rafts.iter().find(|(_, r)| r.metrics().borrow_watched().state.is_leader()).map(|(id, _)| *id)
    }

    fn start(&mut self, sim: &mut turmoil::Sim<'_>, s: Scheduled, now: Duration) {
        let lasting = if s.fault.instant() { String::new() } else { format!(" for {:.1}s", s.lasting.as_secs_f64()) };
        self.note(now, format!("{:?}{lasting}", s.fault));
        for (a, b) in self.cut_links(&s.fault) {
            sim.partition(a.as_str(), b.as_str());
        }
        match &s.fault {
            Fault::CrashNode(n) => self.cluster.crash(sim, *n),
            Fault::RestartHost(h) => sim.crash(h.as_str()),
            Fault::MoveLeader => {
                if let Some(leader) = self.leader() {
                    let to = (1..=self.cluster.nodes)
                        .map(|i| (leader + i - 1) % self.cluster.nodes + 1)
                        .find(|i| *i != leader);
                    if let Some(to) = to {
                        let _ = self.control.send(ControlOp {
                            node: leader,
                            path: "/kuorum/v1/leader",
                            body: serde_json::json!({"id": to}),
                        });
                    }
                }
            }
            Fault::ExpireWatches => self.strike(WatchAction::Expire),
            Fault::CutWatches => self.strike(WatchAction::Close),
            Fault::Compact => {
                let node = self.leader().unwrap_or(1);
                let _ = self.control.send(ControlOp {
                    node,
                    path: "/kuorum/v1/chaos/compact",
                    body: serde_json::json!({}),
                });
                self.strike(WatchAction::Close);
            }
            Fault::IsolateNode(_)
            | Fault::IsolateHost(_)
            | Fault::Latency(_)
            | Fault::Throttle(_)
            | Fault::Errors { .. }
            | Fault::PauseApply(_) => {}
        }
        if !s.fault.instant() {
            self.lasting.push((s.at + s.lasting, s.fault));
        }
    }

    fn end_due(&mut self, sim: &mut turmoil::Sim<'_>, now: Duration) {
        let (due, keep): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.lasting).into_iter().partition(|(end, _)| *end <= now);
        self.lasting = keep;
        for (_, fault) in due {
            self.note(now, format!("end of {fault:?}"));
            for (a, b) in self.cut_links(&fault) {
                sim.repair(a.as_str(), b.as_str());
            }
            match &fault {
                Fault::CrashNode(n) => self.cluster.restart(sim, *n),
                Fault::RestartHost(h) => sim.bounce(h.as_str()),
                _ => {}
            }
        }
    }

    /// Each running node's injector gets the settings the lasting faults make up (of two
    /// that set the same knob, the one started later wins).
    fn sync_settings(&mut self) {
        for (node, chaos) in self.injectors() {
            let mut s = FaultSettings::default();
            for (_, fault) in &self.lasting {
                match fault {
                    Fault::Latency(d) => s.latency_ms = d.as_millis() as u64,
                    Fault::Throttle(rate) => {
                        s.error_rate = *rate;
                        s.error_code = 429;
                        s.error_after_serving = false;
                    }
                    Fault::Errors { code, rate, after_serving } => {
                        s.error_rate = *rate;
                        s.error_code = *code;
                        s.error_after_serving = *after_serving;
                    }
                    Fault::PauseApply(n) if *n == node => s.apply_paused = true,
                    _ => {}
                }
            }
            let identity = Arc::as_ptr(&chaos) as usize;
            if self.applied.get(&node) != Some(&(identity, s.clone())) {
                if let Err(e) = chaos.set(s.clone()) {
                    tracing::error!("chaos settings refused on node{node}: {e:?}");
                }
                self.applied.insert(node, (identity, s));
            }
        }
    }
}

/// The run made once per process before any other: its requests build the process's
/// lazily built tables (kinds, schemas, field managers' sets, request ids) on its own
/// thread. Built by a run instead, they would draw from that run's seeded hash keys and
/// random numbers, and that run alone (the first of the process) would take another
/// trajectory than every replay of its seed (seen in docs/chaos.md, Limits).
fn warm_up() -> Simulation {
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams};

    Simulation::new(u64::MAX).duration(FAULTS_FROM).settle(Duration::from_secs(5)).workload(
        "warm-up",
        |env: Env| async move {
            let e = |e: kube::Error| e.to_string();
            let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
            let cm: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {"name": "warm-up"}}))
                .map_err(|e| e.to_string())?;
            let made = cms.create(&PostParams::default(), &cm).await.map_err(e)?;
            let rv = made.metadata.resource_version.clone().unwrap_or_default();
            cms.get("warm-up").await.map_err(e)?;
            cms.list(&ListParams::default()).await.map_err(e)?;
            cms.replace("warm-up", &PostParams::default(), &made).await.map_err(e)?;
            let merge = serde_json::json!({"data": {"k": "v"}});
            cms.patch("warm-up", &PatchParams::default(), &Patch::Merge(&merge)).await.map_err(e)?;
            let apply = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "warm-up"}, "data": {"a": "b"}});
            cms.patch("warm-up", &PatchParams::apply("warm-up"), &Patch::Apply(&apply)).await.map_err(e)?;
            let mut events = std::pin::pin!(cms.watch(&WatchParams::default(), &rv).await.map_err(e)?);
            if let Some(Err(err)) = futures::StreamExt::next(&mut events).await {
                return Err(err.to_string());
            }
            cms.delete("warm-up", &DeleteParams::default()).await.map_err(e)?;
            let leases: Api<Lease> = Api::namespaced(env.client(), "default");
            let lease: Lease = serde_json::from_value(serde_json::json!({"metadata": {"name": "warm-up"}, "spec": {"holderIdentity": "a"}}))
                .map_err(|e| e.to_string())?;
            let made = leases.create(&PostParams::default(), &lease).await.map_err(e)?;
            leases.replace("warm-up", &PostParams::default(), &made).await.map_err(e)?;
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    /// The warm-up's requests all succeed (a failing one would leave its tables unbuilt).
    #[test]
    fn the_warm_up_run_passes() {
        super::warm_up().run_alone().unwrap_or_else(|f| panic!("{f}"));
    }
}
