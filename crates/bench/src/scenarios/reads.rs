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
//!    capacity when each node has a CPU budget of its own.
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
            let workers = readers(t, args, &prefix, n, consistent, |_| ti).await?;
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

/// `--read-clients` readers; reader i talks to node `node_of(i)` (an index into t.urls).
async fn readers(
    t: &Target,
    args: &Args,
    prefix: &str,
    n: usize,
    consistent: bool,
    node_of: impl Fn(usize) -> usize,
) -> Result<Vec<Worker>> {
    let mut workers = Vec::new();
    for i in 0..args.read_clients {
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
    let mut out = Vec::new();
    for &spread in &args.read_spread {
        let spread = spread.clamp(1, t.urls.len());
        let throttled_before = cap.map(|c| c.throttled_s());
        let workers = readers(t, args, prefix, n, false, |i| i % spread).await?;
        let ctx = Ctx { pids: t.pids(), idle_cores: None, client0_target: Some("leader".into()) };
        let mut r = drive(t.name(), read_workload(t.sys, false), workers, 1.0, args.read_duration, 1024, &ctx).await?;
        r.nodes = Some(spread);
        r.node_cores_cap = cap.map(|_| cap_cores);
        r.throttled_s = cap.zip(throttled_before).map(|(c, b)| c.throttled_s() - b);
        out.push(r);
    }
    Ok(out)
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
        println!("| system | workload | CPU cap per node | clients | nodes | reads/s | vs 1 node | p50 ms | p99 ms | errors | server cores | client cores | server CPU µs/read | throttled s | peak RSS MB per server |");
        println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
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
                "| {} | {} | {} | {} | {} | {:.0} | {} | {:.2} | {:.2} | {} | {} | {:.2} | {} | {} | {} |",
                r.system,
                r.workload,
                r.node_cores_cap.map(|c| format!("{c} cores")).unwrap_or_else(|| "none".into()),
                r.clients,
                r.nodes.unwrap_or(0),
                r.ops_per_sec,
                ratio,
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
