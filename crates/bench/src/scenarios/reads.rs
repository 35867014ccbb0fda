//! `reads`: GETs of single objects by `--read-clients` closed-loop readers, each on its own
//! connection, picking one of `--read-objects` 1 KiB objects at random.
//!
//! 1. Leader vs follower: every reader on the leader, then every reader on a follower,
//!    for each `--read-modes` mode:
//!    - `consistent`: kuorum `GET .../configmaps/NAME` (no resourceVersion: a ReadIndex
//!      barrier, then the node's cache); etcd linearizable `Range`.
//!    - `rv0`: kuorum `GET ...?resourceVersion=0` (the node's cache, no barrier); etcd
//!      serializable `Range` (the member's own store).
//! 2. Spread: RV=0 / serializable GETs spread round-robin over the first 1, 2, 3 nodes
//!    (`--read-spread`), uncapped and with each server process capped at
//!    `--read-node-cores` (see cpucap.rs), which shows whether adding nodes adds read
//!    capacity when each node has a CPU budget of its own. Each level runs
//!    `--spread-readers-per-node` readers per node: a fixed total would leave each of
//!    three nodes a third of the requests in flight that one node had, and a node that
//!    answers fewer requests per wake-up spends more CPU on each, so the three-node rate
//!    would measure the client's concurrency rather than what the nodes can serve.
//!
//! Reported per run: reads/s, latency percentiles, server CPU per 1,000 reads and each
//! server's peak RSS.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Result;

use super::super::cpucap::CpuCap;
use super::super::{drive, Ctx, RunResult, Worker};
use super::*;

pub(super) async fn reads_scenario(t: &Target, args: &Args) -> Result<Vec<RunResult>> {
    let n = args.read_objects.max(1);
    let prefix = t.prefix("r");
    fill(t, &prefix, n, 1024).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut out = Vec::new();
    for mode in &args.read_modes {
        let consistent = match mode.as_str() {
            "consistent" => true,
            "rv0" => false,
            other => anyhow::bail!("--read-modes {other:?}: consistent or rv0"),
        };
        for (ti, role) in [(0usize, "leader"), (1, "follower")] {
            let workers = readers(t, args.read_clients, &prefix, n, consistent, |_| ti).await?;
            let ctx = Ctx { pids: t.pids(), idle_cores: None, client0_target: Some(role.into()) };
            let mut r =
                drive(t.name(), read_workload(t.sys, consistent), workers, 1.0, args.read_duration, 1024, &ctx).await?;
            r.read_mode = Some(mode.clone());
            out.push(r);
        }
    }
    for &cap_cores in &args.read_node_cores {
        let cap = match (cap_cores > 0.0, t.pids()) {
            (false, _) => None,
            (true, None) => {
                eprintln!("reads: cannot cap servers not started here; skipping the {cap_cores}-core runs");
                continue;
            }
            (true, Some(pids)) => match CpuCap::apply(pids, cap_cores) {
                Ok(c) => Some(c),
                Err(e) => {
                    eprintln!("reads: no CPU cap ({e:#}); skipping the {cap_cores}-core runs");
                    continue;
                }
            },
        };
        out.extend(read_spreads(t, args, &prefix, n, cap_cores, cap.as_ref()).await?);
    }
    Ok(out)
}

fn read_workload(sys: Sys, consistent: bool) -> &'static str {
    match (sys, consistent) {
        (Sys::Kuorum, true) => "GET, no RV: consistent (REST)",
        (Sys::Kuorum, false) => "GET RV=0 (REST)",
        (Sys::Etcd, true) => "linearizable get (gRPC)",
        (Sys::Etcd, false) => "serializable get (gRPC)",
    }
}

/// `count` readers; reader i talks to node `node_of(i)` (an index into t.urls).
async fn readers(
    t: &Target,
    count: usize,
    prefix: &str,
    n: usize,
    consistent: bool,
    node_of: impl Fn(usize) -> usize,
) -> Result<Vec<Worker>> {
    let mut workers = Vec::new();
    for i in 0..count {
        let url = &t.urls[node_of(i)];
        let rng = 0x9E37_79B9_7F4A_7C15u64 ^ ((i as u64 + 1) * 0x1234_5678_9ABC_DEF1);
        workers.push(match t.sys {
            Sys::Kuorum => Worker::KuorumRead {
                http: worker_http_client()?,
                url: format!("{url}/api/v1/namespaces/default/configmaps"),
                prefix: prefix.to_string(),
                n: n as u64,
                rng,
                consistent,
            },
            Sys::Etcd => Worker::EtcdRead {
                client: etcd_connect(url).await?,
                prefix: prefix.to_string(),
                n: n as u64,
                rng,
                consistent,
            },
        });
    }
    Ok(workers)
}

async fn read_spreads(
    t: &Target,
    args: &Args,
    prefix: &str,
    n: usize,
    cap_cores: f64,
    cap: Option<&CpuCap>,
) -> Result<Vec<RunResult>> {
    let levels: Vec<usize> = args.read_spread.iter().map(|&s| s.clamp(1, t.urls.len())).collect();
    let mut runs: Vec<Vec<RunResult>> = vec![Vec::new(); levels.len()];
    for _ in 0..args.spread_reps.max(1) {
        for (level, &spread) in levels.iter().enumerate() {
            let throttled_before = cap.map(|c| c.throttled_s());
            let count = args.spread_readers_per_node.max(1) * spread;
            let workers = readers(t, count, prefix, n, false, |i| i % spread).await?;
            let ctx = Ctx { pids: t.pids(), idle_cores: None, client0_target: Some("leader".into()) };
            let mut r =
                drive(t.name(), read_workload(t.sys, false), workers, 1.0, args.read_duration, 1024, &ctx).await?;
            r.nodes = Some(spread);
            r.node_cores_cap = cap.map(|_| cap_cores);
            r.throttled_s = cap.zip(throttled_before).map(|(c, b)| c.throttled_s() - b);
            runs[level].push(r);
        }
    }
    Ok(runs.into_iter().filter_map(median_run).collect())
}

/// The run with the median rate (the lower of the two middle ones for an even count),
/// carrying every run's rate in `rep_ops_per_sec` (in the order they ran).
fn median_run(mut runs: Vec<RunResult>) -> Option<RunResult> {
    let rates: Vec<f64> = runs.iter().map(|r| r.ops_per_sec).collect();
    runs.sort_by(|a, b| a.ops_per_sec.total_cmp(&b.ops_per_sec));
    let mid = runs.len().checked_sub(1)? / 2;
    let mut r = runs.swap_remove(mid);
    r.rep_ops_per_sec = rates;
    Some(r)
}

pub(crate) fn markdown(report: &Report) {
    let targeted: Vec<&RunResult> = report.reads.iter().filter(|r| r.read_mode.is_some()).collect();
    if !targeted.is_empty() {
        println!("\n#### GET on the leader vs a follower\n");
        println!("| system | request | mode | target | clients | reads/s | p50 ms | p99 ms | p99.9 ms | errors | server CPU s / 1k reads | peak RSS MB per server (leader first) |");
        println!("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|");
        for r in &targeted {
            println!(
                "| {} | {} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {} | {} |",
                r.system,
                r.workload,
                r.read_mode.as_deref().unwrap_or("-"),
                r.client0_target.as_deref().unwrap_or("-"),
                r.clients,
                r.ops_per_sec,
                r.p50_ms,
                r.p99_ms,
                r.p999_ms,
                r.errors,
                f3(r.server_cpu_ms_per_op),
                mb_list(&r.peak_rss_mb)
            );
        }
    }
    if report.reads.iter().any(|r| r.nodes.is_some()) {
        println!("\n#### Reads spread over nodes\n");
        println!("| system | workload | CPU cap per node | clients | nodes | reads/s (median run) | vs 1 node | every run, reads/s | p50 ms | p99 ms | errors | server cores | client cores | server CPU µs/read | throttled s | peak RSS MB per server |");
        println!("|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|");
        let cap_key = |r: &RunResult| format!("{}/{:?}", r.system, r.node_cores_cap);
        let mut one: HashMap<String, f64> = HashMap::new();
        for r in report.reads.iter().filter(|r| r.nodes.is_some()) {
            if r.nodes == Some(1) {
                one.insert(cap_key(r), r.ops_per_sec);
            }
        }
        for r in report.reads.iter().filter(|r| r.nodes.is_some()) {
            let ratio =
                one.get(&cap_key(r)).map(|b| format!("{:.2}×", r.ops_per_sec / b)).unwrap_or_else(|| "-".into());
            println!(
                "| {} | {} | {} | {} | {} | {:.0} | {} | {} | {:.2} | {:.2} | {} | {} | {:.2} | {} | {} | {} |",
                r.system,
                r.workload,
                r.node_cores_cap.map(|c| format!("{c} cores")).unwrap_or_else(|| "none".into()),
                r.clients,
                r.nodes.unwrap_or(0),
                r.ops_per_sec,
                ratio,
                rates(&r.rep_ops_per_sec),
                r.p50_ms,
                r.p99_ms,
                r.errors,
                f2(r.server_cpu_s.map(|c| c / r.seconds)),
                r.client_cpu_s / r.seconds,
                f0(r.server_cpu_ms_per_op.map(|v| v * 1000.0)),
                f2(r.throttled_s),
                mb_list(&r.peak_rss_mb)
            );
        }
    }
}

/// "11458 / 12487 / 10279": every run's rate, in the order they ran ("-" for a report
/// from before the runs were repeated).
fn rates(rs: &[f64]) -> String {
    if rs.is_empty() {
        return "-".into();
    }
    rs.iter().map(|r| format!("{r:.0}")).collect::<Vec<_>>().join(" / ")
}
