//! `creates`: replicated create throughput and latency.
//!
//! - kuorum: `POST /api/v1/namespaces/default/configmaps` of ConfigMaps carrying one data
//!   value of each `--value-sizes` size, each client on its own keep-alive HTTP/1.1
//!   connection, clients spread round-robin over all nodes (followers forward to the
//!   leader); client 0 (the only one at 1 client) talks to the `--first` role.
//! - etcd: `Put` of values of the same sizes under fresh keys, each client on its own gRPC
//!   connection, spread the same way.
//!
//! Each (value size, `--clients` level) pair runs `--warmup` seconds unrecorded, then
//! `--duration` seconds recorded, on one cluster per system (closed loop: every client
//! sends its next create when the last one returns). Reported: creates/s, p50/p99/p99.9,
//! server CPU seconds per 1,000 creates, and each server's peak RSS during the run.

use super::super::{drive, idle_cpu_cores, Ctx, Worker};
use super::*;

// ---------------------------------------------------------------------------------------
// kuorum
// ---------------------------------------------------------------------------------------

pub(crate) fn bench_kuorum(args: &Args, rt: &tokio::runtime::Runtime, report: &mut Report) -> Result<()> {
    let mut cluster = None;
    let urls: Vec<String> = match &args.kuorum {
        Some(list) => kuorum_url_list(list),
        None => {
            let c = start_kuorum(args)?;
            let urls = c.urls();
            cluster = Some(c);
            urls
        }
    };
    let pids: Option<Vec<u32>> = cluster.as_ref().map(|c| c.nodes.iter().filter_map(|n| n.pid()).collect());
    if let Some(c) = cluster.as_mut() {
        let leader = c.leader()?;
        eprintln!("kuorum nodes {urls:?}, leader node {leader}");
    }
    let roles = kuorum_roles(&urls)?;
    let (urls, client0_target) = put_first(urls, roles, &args.first)?;
    report.kuorum_urls = Some(urls.clone());
    let idle_cores = idle_cores("kuorum", pids.as_deref());
    let ctx = Ctx { pids: pids.as_deref(), idle_cores, client0_target };
    let tag = report.started_unix;
    for (&size, &clients) in levels(args) {
        let mut workers = Vec::new();
        for t in 0..clients {
            let url = urls[t % urls.len()].clone();
            workers.push(Worker::kuorum(url, format!("bench-{tag}-s{size}-c{clients}-t{t}"), size)?);
        }
        let r =
            rt.block_on(drive("kuorum", "create ConfigMap (REST)", workers, args.warmup, args.duration, size, &ctx))?;
        report.results.push(r);
        if let Some(c) = cluster.as_mut() {
            c.check_alive()?;
        }
    }
    drop(cluster); // kills the nodes before the next system runs
    Ok(())
}
pub(crate) fn bench_etcd(args: &Args, rt: &tokio::runtime::Runtime, report: &mut Report) -> Result<()> {
    let mut cluster = None;
    let endpoints: Vec<String> = match &args.etcd {
        Some(list) => etcd_endpoint_list(list),
        None => {
            let c = start_etcd(args)?;
            let e = c.endpoints.clone();
            cluster = Some(c);
            e
        }
    };
    let pids = cluster.as_ref().map(EtcdCluster::pids);
    let roles = etcd_roles(rt, &endpoints);
    let (endpoints, client0_target) = put_first(endpoints, roles, &args.first)?;
    eprintln!("etcd endpoints {endpoints:?}");
    report.etcd_endpoints = Some(endpoints.clone());
    let idle_cores = idle_cores("etcd", pids.as_deref());
    let ctx = Ctx { pids: pids.as_deref(), idle_cores, client0_target };
    let tag = report.started_unix;
    for (&size, &clients) in levels(args) {
        let workers = rt.block_on(async {
            let mut workers = Vec::new();
            for t in 0..clients {
                let ep = endpoints[t % endpoints.len()].clone();
                workers.push(Worker::etcd(ep, format!("/bench/{tag}/s{size}/c{clients}/t{t}/"), size).await?);
            }
            anyhow::Ok(workers)
        })?;
        let r = rt.block_on(drive("etcd", "put (gRPC)", workers, args.warmup, args.duration, size, &ctx))?;
        report.results.push(r);
    }
    drop(cluster);
    Ok(())
}
pub(crate) fn markdown(report: &Report) {
    let m = &report.machine;
    println!();
    println!(
        "{} x{}, {} RAM, kernel {}, etcd {}, kuorum {}; loadavg at start {}; fdatasync of 2300 B {}.",
        m.cpu_model,
        m.cpus,
        m.mem_total,
        m.kernel,
        m.etcd_version.as_deref().unwrap_or("?"),
        m.kuorum_git.as_deref().unwrap_or("?"),
        m.loadavg.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        m.fdatasync_ms
            .as_ref()
            .map(|p| format!("p50 {:.2} ms, p99 {:.2} ms", p.p50, p.p99))
            .unwrap_or_else(|| "not measured".into())
    );
    if report.results.is_empty() {
        return;
    }
    println!();
    println!(
        "| system | workload | value B | clients | creates/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | server CPU s / 1k creates | client CPU s / 1k | peak RSS MB per server |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &report.results {
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} | {:.2} | {} |",
            r.system,
            r.workload,
            r.value_size,
            r.clients,
            r.ops_per_sec,
            r.p50_ms,
            r.p99_ms,
            r.p999_ms,
            r.max_ms,
            r.errors,
            f2(r.server_cpu_ms_per_op),
            r.client_cpu_s * 1000.0 / r.ops.max(1) as f64,
            mb_list(&r.peak_rss_mb)
        );
    }
    println!();
    let mut seen = Vec::new();
    for r in &report.results {
        if seen.contains(&r.system) {
            continue;
        }
        seen.push(r.system.clone());
        println!(
            "- {}: idle cluster CPU {} cores; the 1-client run talked to the {}.",
            r.system,
            r.server_idle_cpu_cores.map(|c| format!("{c:.3}")).unwrap_or_else(|| "?".into()),
            r.client0_target.as_deref().unwrap_or("(unknown)")
        );
    }
}

/// The cores the idle cluster (when started here) uses, noted on stderr.
fn idle_cores(system: &str, pids: Option<&[u32]>) -> Option<f64> {
    let idle = pids.map(idle_cpu_cores);
    if let Some(i) = idle {
        eprintln!("idle {system} cluster uses {i:.3} cores");
    }
    idle
}

/// (value size, clients) pairs in run order: every client level at each size.
fn levels(args: &Args) -> impl Iterator<Item = (&usize, &usize)> {
    args.value_sizes.iter().flat_map(move |s| args.clients.iter().map(move |c| (s, c)))
}
