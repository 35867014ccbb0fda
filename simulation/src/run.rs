//! Owns one simulated run from its seed to its verdict: build the cluster and the
//! clients from [`SimOptions`], drive the simulation with faults (safety phase), heal and
//! let everything catch up (liveness phase), then hand the history and the replay to
//! every checker.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kuorum_mutation::{self as mutation, Mutation};
use kuorum_raft::RaftTiming;
use kuorum_store::ObjectEngine;
use kuorum_watch::CacheConfig;
use openraft::async_runtime::WatchReceiver;

use crate::check::{self, Violation};
use crate::client::{request_within, TurmoilDial};
use crate::cluster::{ClusterSpec, SimCluster};
use crate::faults::{Coverage, Faults};
use crate::history::{OpKind, Outcome, ReadMode, Recorder, WatchItem};
use crate::options::SimOptions;
use crate::replay::{Fnv, NodeTap, Replay};
use crate::traffic::Traffic;

/// The verdict and the evidence of one run.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub opts: SimOptions,
    pub mutation: Option<Mutation>,
    pub coverage: Coverage,
    pub violations: Vec<Violation>,
    /// Checks that could not decide (K2 past its limits); never counted as passes.
    pub inconclusive: Vec<String>,
    /// D1: a hash of everything observable (history, watch sessions, replay).
    pub trace_hash: u64,
    pub sim_error: Option<String>,
}

impl RunReport {
    pub fn clean(&self) -> bool {
        self.violations.is_empty() && self.sim_error.is_none()
    }
}

/// Runs `seed` (with `mutation` selected, if any) and checks it.
///
/// The run gets a thread of its own: thread-local generators (rand's, tokio's) start
/// from the seed, and the selected mutation stays on that thread.
pub fn run_seed(seed: u64, mutation_sel: Option<Mutation>) -> RunReport {
    let opts = SimOptions::from_seed(seed);
    std::thread::Builder::new()
        .name(format!("sim-{seed}"))
        .stack_size(64 << 20)
        .spawn(move || {
            crate::entropy::seed_thread(seed);
            assert!(mutation::select(mutation_sel), "mutations need `--features mutations`");
            run_opts(&opts, mutation_sel)
        })
        .expect("spawn the simulation thread")
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

fn run_opts(opts: &SimOptions, mutation_sel: Option<Mutation>) -> RunReport {
    let total = opts.fault_phase + opts.heal_phase;
    let mut sim = turmoil::Builder::new()
        .rng_seed(opts.seed)
        .simulation_duration(total + Duration::from_secs(60))
        .min_message_latency(opts.min_latency)
        .max_message_latency(opts.max_latency)
        .tcp_capacity(1 << 16)
        .build();
    let spec = ClusterSpec {
        timing: RaftTiming {
            snapshot_every: opts.snapshot_every,
            logs_to_keep: opts.logs_to_keep,
            ..RaftTiming::default()
        },
        compaction_window: opts.compaction_window,
        // As often as the leader compacts: every node checks each compaction point.
        consistency_check_every: Some(opts.compaction_window),
        cache: CacheConfig { bookmark_every: Duration::from_secs(1), ..CacheConfig::default() },
        ..ClusterSpec::new(opts.nodes, opts.seed)
    };
    let cluster = SimCluster::start_spec(&mut sim, spec);
    let rec = Recorder::default();
    let traffic =
        Traffic { rec: rec.clone(), nodes: opts.nodes, keys: opts.keys, seed: opts.seed, dial: Arc::new(TurmoilDial) };

    // The clients: writers stop 12 s before the end so the liveness phase ends quiet;
    // watchers run to the end; then one linearizable list per node and resource.
    let writers_stop = total - Duration::from_secs(12);
    let (clients, watchers, nodes) = (opts.clients, opts.watchers, opts.nodes);
    sim.client("clients", async move {
        wait_ready(nodes).await;
        let mut writer_tasks = Vec::new();
        for c in 0..clients {
            writer_tasks.push(tokio::spawn(traffic.clone().writer(c)));
        }
        let mut watcher_tasks = Vec::new();
        for w in 0..watchers {
            watcher_tasks.push(tokio::spawn(traffic.clone().watcher(w)));
        }
        tokio::time::sleep_until(tokio::time::Instant::now() + writers_stop.saturating_sub(turmoil::elapsed())).await;
        writer_tasks.iter().for_each(|t| t.abort());
        tokio::time::sleep(Duration::from_secs(10)).await;
        watcher_tasks.iter().for_each(|t| t.abort());
        for node in 1..=nodes {
            for resource in crate::traffic::RESOURCES {
                let kind = OpKind::List { prefix: format!("{resource}/default/"), mode: ReadMode::MostRecent };
                traffic.final_read(node, kind).await;
            }
        }
        Ok(())
    });

    let member_ops = crate::membership::MemberOps::default();
    if opts.faults.membership {
        let plan = crate::membership::OperatorPlan {
            nodes: opts.nodes,
            seed: opts.seed,
            fault_phase: opts.fault_phase,
            give_up_at: opts.fault_phase + opts.heal_phase / 2,
        };
        let ops = member_ops.clone();
        sim.client("operator", async move {
            wait_ready(plan.nodes).await;
            ops.operate(plan, Arc::new(TurmoilDial)).await;
            Ok(())
        });
    }

    let mut faults = Faults::new(opts);
    let mut leaders: BTreeMap<String, u64> = BTreeMap::new();
    let mut violations = Vec::new();
    let mut healed = false;
    let mut last_leader = None;
    let sim_error = loop {
        let now = sim.elapsed();
        let leader = sample_leaders(&cluster, &mut leaders, &mut violations);
        if leader.is_some() && leader != last_leader {
            if last_leader.is_some() {
                faults.coverage.leader_changes += 1;
            }
            last_leader = leader;
        }
        if !healed && now >= opts.fault_phase {
            faults.heal(&mut sim, &cluster);
            healed = true;
        }
        faults.tick(&mut sim, &cluster, leader, now);
        for id in member_ops.take_wipes() {
            faults.wipe(&mut sim, &cluster, id);
            member_ops.wiped(id);
        }
        match sim.step() {
            Ok(true) => break None,
            Ok(false) => {}
            Err(e) => break Some(e.to_string()),
        }
    };

    let taps: BTreeMap<u64, NodeTap> = cluster.disks.iter().map(|(id, d)| (*id, d.tap.clone())).collect();
    let replay = Replay::merge(&taps);
    let ops = rec.ops();
    let sessions = rec.sessions();

    let mut coverage = faults.coverage.clone();
    coverage.compactions = replay.compactions.len() as u64;
    coverage.members = member_ops.counts();
    coverage.snapshot_installs = taps
        .values()
        .map(|t| t.resets())
        .sum::<u64>()
        .saturating_sub(opts.nodes + coverage.restarts + coverage.members.wiped);
    coverage.ops = ops.len() as u64;
    coverage.unknown_writes = ops.iter().filter(|o| o.kind.is_write() && o.outcome == Outcome::Unknown).count() as u64;
    coverage.gone_410 = ops.iter().filter(|o| o.outcome == Outcome::Gone).count() as u64
        + sessions.iter().flat_map(|s| &s.items).filter(|i| matches!(i, WatchItem::Error { code: 410 })).count() as u64;
    coverage.resumes_elsewhere = sessions.iter().filter(|s| s.rv_from_node.is_some_and(|n| n != s.node)).count() as u64;
    coverage.watch_events =
        sessions.iter().flat_map(|s| &s.items).filter(|i| matches!(i, WatchItem::Event { .. })).count() as u64;

    let lives = cluster.lives.lock().unwrap_or_else(|e| e.into_inner()).clone();
    coverage.consistency_agreed =
        lives.iter().map(|(_, c)| c.integrity().agreed.load(std::sync::atomic::Ordering::Relaxed)).sum();
    // C1: no node's consistency check found its state corrupt (none is corrupted here).
    for (id, c) in &lives {
        if let Some(why) = c.integrity().corrupt() {
            violations.push(Violation::new("C1", format!("node {id} found its state corrupt: {why}")));
        }
    }

    let mut inconclusive = Vec::new();
    if sim_error.is_none() {
        let states: BTreeMap<u64, (u64, u64)> =
            cluster.disks.iter().map(|(id, d)| (*id, (d.tap.applied(), state_hash(&d.objects)))).collect();
        violations.extend(check::all(&ops, &sessions, &replay, &states, &mut inconclusive));
    }

    if let Some(path) = std::env::var_os("KUORUM_SIM_TRACE") {
        let lines: Vec<String> =
            ops.iter().map(|o| format!("{o:?}")).chain(sessions.iter().map(|s| format!("{s:?}"))).collect();
        let _ = std::fs::write(path, lines.join("\n"));
    }
    let mut h = Fnv::default();
    for o in &ops {
        h.write(format!("{o:?}").as_bytes());
    }
    for s in &sessions {
        h.write(format!("{s:?}").as_bytes());
    }
    h.write(&replay.digest().to_le_bytes());
    RunReport {
        opts: opts.clone(),
        mutation: mutation_sel,
        coverage,
        violations,
        inconclusive,
        trace_hash: h.0,
        sim_error,
    }
}

/// Polls until every node serves `default` (the system namespaces are applied).
pub async fn wait_ready(nodes: u64) {
    for id in 1..=nodes {
        loop {
            let r = request_within(Duration::from_secs(2), &TurmoilDial, id, "GET", "/api/v1/namespaces/default", None)
                .await;
            if r.is_some_and(|r| r.status == 200) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// R1 (election safety): at most one node leads under one leader id, ever. Returns the current leader.
fn sample_leaders(
    cluster: &SimCluster,
    leaders: &mut BTreeMap<String, u64>,
    violations: &mut Vec<Violation>,
) -> Option<u64> {
    let rafts = cluster.rafts.lock().unwrap_or_else(|e| e.into_inner());
    let mut current = None;
    for (id, raft) in rafts.iter() {
        let m = raft.metrics().borrow_watched().clone();
        if m.state.is_leader() {
            // openraft's leader ids are (term, node): several candidates may win one
            // term, each under its own id, so the invariant is one node per leader id.
            let lid = format!("{:?}", m.vote.leader_id());
            match leaders.insert(lid.clone(), *id) {
                Some(other) if other != *id => violations.push(Violation::new(
                    "R1",
                    format!("two leaders under leader id {lid}: node {other} and node {id}"),
                )),
                _ => {}
            }
            current = Some(*id);
        }
    }
    current
}

/// A hash of a node's current objects (R2 compares nodes at the same applied index).
fn state_hash(objects: &kuorum_store::memory::MemoryObjectEngine) -> u64 {
    let mut h = Fnv::default();
    if let Ok(all) = objects.scan("/registry/", None, usize::MAX) {
        for (k, v) in all {
            h.write(k.as_bytes());
            h.write(&v);
        }
    }
    h.0
}
