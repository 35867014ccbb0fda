//! The scenarios, one module each (issue 6, item 1). Every scenario gets fresh clusters
//! (a 3-node kuorum, then a 3-member etcd 3.4, fsync on in both) and runs one system at
//! a time; each measures throughput or latency, the servers' CPU (user+system from /proc,
//! reported per 1,000 operations) and each server process's peak memory (VmHWM, reset
//! through `/proc/PID/clear_refs` before each run).
//!
//! - [`creates`]: closed-loop creates at 1/16/64/256 clients and 1 KiB/8 KiB payloads.
//! - [`updates`]: GET then PUT with a resourceVersion precondition on 100 hot objects.
//! - [`reads`]: consistent and RV=0 GETs on the leader vs a follower, and RV=0 GETs
//!   spread over 1, 2, 3 nodes (optionally with a CPU cap per node).
//! - [`list`]: consistent LIST of 10,000 and 100,000 objects of 2 KiB, whole and paged.
//! - [`watch`]: watch fan-out to 0..10,000 watchers at paced write rates.
//! - [`reconnect`]: 1,000 watchers resuming at once from a resourceVersion N writes old.
//! - [`failover`]: the leader killed (SIGKILL) under 64 creating clients.
//!
//! This module holds what they share: starting a [`Target`] cluster, filling it,
//! percentiles, peak-memory probes and the Markdown tables' dispatch.

pub(crate) mod creates;
pub(crate) mod failover;
pub(crate) mod list;
pub(crate) mod reads;
pub(crate) mod reconnect;
pub(crate) mod updates;
pub(crate) mod watch;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use kuorum_e2e::{Cluster, ClusterOptions};

use super::{cpu_seconds, etcd_roles, kuorum_roles, put_first, Args, EtcdCluster, Report};

pub(crate) use failover::FailoverResult;
pub(crate) use list::ListResult;
pub(crate) use reconnect::ReconnectResult;
pub(crate) use watch::WatchResult;

// ---------------------------------------------------------------------------------------
// Clusters
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Sys {
    Kuorum,
    Etcd,
}

/// A fresh cluster (or the one given on the command line), leader first.
struct Target {
    sys: Sys,
    urls: Vec<String>,
    /// Aligned with `urls`; empty for clusters not started here.
    pids: Vec<u32>,
    _kuorum: Option<Cluster>,
    _etcd: Option<EtcdCluster>,
}

impl Target {
    fn start(sys: Sys, args: &Args, rt: &tokio::runtime::Runtime) -> Result<Target> {
        match sys {
            Sys::Kuorum => {
                let (urls, pids, cluster) = match &args.kuorum {
                    Some(list) => {
                        (list.split(',').map(|u| u.trim().trim_end_matches('/').to_string()).collect(), vec![], None)
                    }
                    None => {
                        let bin = match &args.kuorum_bin {
                            Some(b) => b.clone(),
                            None => kuorum_e2e::kuorum_bin().ok_or_else(|| anyhow!("no kuorum binary"))?,
                        };
                        let c = Cluster::start_with(
                            bin,
                            ClusterOptions {
                                nodes: 3,
                                parent_dir: args.dir.clone(),
                                rust_log: Some("warn".into()),
                                ..Default::default()
                            },
                        )?;
                        let pids = c.nodes.iter().map(|n| n.pid().unwrap_or(0)).collect();
                        (c.urls(), pids, Some(c))
                    }
                };
                let roles = kuorum_roles(&urls)?;
                let (urls, pids) = leader_first(urls, pids, roles)?;
                eprintln!("kuorum nodes (leader first) {urls:?}");
                Ok(Target { sys, urls, pids, _kuorum: cluster, _etcd: None })
            }
            Sys::Etcd => {
                let (endpoints, pids, cluster) = match &args.etcd {
                    Some(list) => (list.split(',').map(|u| u.trim().to_string()).collect(), vec![], None),
                    None => {
                        let c = EtcdCluster::start(&args.etcd_bin, args.dir.as_deref())?;
                        (c.endpoints.clone(), c.pids(), Some(c))
                    }
                };
                let roles = etcd_roles(rt, &endpoints);
                let (urls, pids) = leader_first(endpoints, pids, roles)?;
                eprintln!("etcd members (leader first) {urls:?}");
                Ok(Target { sys, urls, pids, _kuorum: None, _etcd: cluster })
            }
        }
    }

    fn name(&self) -> &'static str {
        match self.sys {
            Sys::Kuorum => "kuorum",
            Sys::Etcd => "etcd",
        }
    }

    fn pids(&self) -> Option<&[u32]> {
        (!self.pids.is_empty()).then_some(&self.pids[..])
    }

    fn rss_mb(&self) -> Option<f64> {
        self.pids().map(|p| p.iter().map(|&pid| proc_status_kb(pid, "VmRSS:")).sum::<u64>() as f64 / 1024.0)
    }
}

fn leader_first(urls: Vec<String>, pids: Vec<u32>, roles: Vec<Option<bool>>) -> Result<(Vec<String>, Vec<u32>)> {
    let idx = roles.iter().position(|r| *r == Some(true)).ok_or_else(|| anyhow!("no leader among {urls:?}"))?;
    let (mut urls, _) = put_first(urls, roles, "as-given")?;
    urls.rotate_left(idx);
    let mut pids = pids;
    if !pids.is_empty() {
        pids.rotate_left(idx);
    }
    Ok((urls, pids))
}

/// Resets each process's peak RSS (VmHWM) to its current RSS (`echo 5 > clear_refs`).
pub(crate) fn hwm_reset(pids: &[u32]) {
    for p in pids {
        let _ = std::fs::write(format!("/proc/{p}/clear_refs"), "5");
    }
}

/// Each process's peak RSS (VmHWM) in MB since the last [`hwm_reset`] (0 when gone).
pub(crate) fn hwm_mb(pids: &[u32]) -> Vec<f64> {
    pids.iter().map(|&p| proc_status_kb(p, "VmHWM:") as f64 / 1024.0).collect()
}

/// Server CPU seconds per 1,000 operations.
fn per_1k(cpu_s: Option<f64>, ops: u64) -> Option<f64> {
    cpu_s.filter(|_| ops > 0).map(|c| c * 1000.0 / ops as f64)
}

/// A field of /proc/PID/status in kB (0 when gone).
fn proc_status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l[field.len()..].trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

pub fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn pct_ms(sorted_us: &[u32], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let idx = ((p / 100.0) * sorted_us.len() as f64).ceil() as usize;
    sorted_us[idx.clamp(1, sorted_us.len()) - 1] as f64 / 1000.0
}

fn pct_f(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[idx.clamp(1, sorted.len()) - 1]
}

fn self_cpu() -> f64 {
    cpu_seconds(&[std::process::id()])
}

pub(crate) fn run(
    scenario: &str,
    system: &str,
    args: &Args,
    rt: &tokio::runtime::Runtime,
    report: &mut Report,
) -> Result<()> {
    let sys = if system == "kuorum" { Sys::Kuorum } else { Sys::Etcd };
    eprintln!("\n==== {scenario} on {system}");
    if scenario == "creates" {
        // Keeps its own cluster start: it puts the leader or a follower first (`--first`).
        return match sys {
            Sys::Kuorum => creates::bench_kuorum(args, rt, report),
            Sys::Etcd => creates::bench_etcd(args, rt, report),
        };
    }
    let target = Target::start(sys, args, rt)?;
    match scenario {
        "watch" => watch::run(&target, args, rt, report)?,
        "list" => report.lists.extend(rt.block_on(list::list_scenario(&target, args))?),
        "reads" => report.reads.extend(rt.block_on(reads::reads_scenario(&target, args))?),
        "updates" => report.updates.extend(rt.block_on(updates::updates_scenario(&target, args))?),
        "reconnect" => report.reconnect.extend(rt.block_on(reconnect::reconnect_scenario(&target, args))?),
        "failover" => report.failover.extend(rt.block_on(failover::failover_scenario(&target, args))?),
        other => bail!("unknown scenario {other:?}"),
    }
    Ok(())
}

/// The scenario names `--scenarios` accepts, in the default order.
pub(crate) const ALL: &[&str] = &["creates", "updates", "reads", "list", "watch", "reconnect", "failover"];

// ---------------------------------------------------------------------------------------
// Filling
// ---------------------------------------------------------------------------------------

fn http_client(timeout: Duration) -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder().timeout(timeout).tcp_nodelay(true).build()?)
}

fn configmap(name: &str, payload: &str) -> String {
    format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"v":"{payload}"}}}}"#)
}

async fn kuorum_create(http: &reqwest::Client, base: &str, name: &str, payload: &str) -> Result<()> {
    let resp = http
        .post(format!("{base}/api/v1/namespaces/default/configmaps"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .body(configmap(name, payload))
        .send()
        .await?;
    let status = resp.status();
    let bytes = resp.bytes().await?;
    if status.as_u16() != 201 {
        bail!("create {name}: HTTP {status}: {}", String::from_utf8_lossy(&bytes[..bytes.len().min(300)]));
    }
    Ok(())
}

/// Creates objects `{prefix}{0..n}` with `size`-byte payloads through the leader, 64 at a
/// time; returns the seconds it took.
async fn fill(t: &Target, prefix: &str, n: usize, size: usize) -> Result<f64> {
    fill_range(t, prefix, 0, n, size).await
}

/// Creates objects `{prefix}{from..n}` like [`fill`], with progress every 10,000.
async fn fill_range(t: &Target, prefix: &str, from: usize, n: usize, size: usize) -> Result<f64> {
    let t0 = Instant::now();
    let next = Arc::new(AtomicUsize::new(from));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let next = next.clone();
        let prefix = prefix.to_string();
        let leader = t.urls[0].clone();
        match t.sys {
            Sys::Kuorum => {
                let http = http_client(Duration::from_secs(30))?;
                let payload = "x".repeat(size);
                tasks.push(tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            return anyhow::Ok(());
                        }
                        fill_progress(i, from, t0);
                        kuorum_create(&http, &leader, &format!("{prefix}{i}"), &payload).await?;
                    }
                }));
            }
            Sys::Etcd => {
                let mut c = etcd_connect(&leader).await?;
                let payload = vec![b'x'; size];
                tasks.push(tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            return anyhow::Ok(());
                        }
                        fill_progress(i, from, t0);
                        c.put(format!("{prefix}{i}"), payload.clone(), None).await?;
                    }
                }));
            }
        }
    }
    for h in tasks {
        h.await??;
    }
    Ok(t0.elapsed().as_secs_f64())
}

fn fill_progress(i: usize, from: usize, t0: Instant) {
    if i > from && i.is_multiple_of(10_000) {
        let s = t0.elapsed().as_secs_f64();
        eprintln!("  filled {i} ({:.0}/s)", (i - from) as f64 / s);
    }
}

async fn etcd_connect(ep: &str) -> Result<etcd_client::Client> {
    let opts = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(60));
    etcd_client::Client::connect([ep], Some(opts)).await.with_context(|| format!("connect to etcd at {ep}"))
}

// ---------------------------------------------------------------------------------------
// Consistent LIST
// ---------------------------------------------------------------------------------------

/// Peak RSS over a closure's run: VmHWM after resetting it (clear_refs 5), or, if the
/// reset is refused, RSS sampled every 5 ms. Returns (per-pid peaks in kB, method).
struct PeakRss {
    pids: Vec<u32>,
    hwm: bool,
    stop: Arc<std::sync::atomic::AtomicBool>,
    sampler: Option<std::thread::JoinHandle<Vec<u64>>>,
}

impl PeakRss {
    fn start(pids: &[u32]) -> PeakRss {
        let hwm = !pids.is_empty() && pids.iter().all(|p| std::fs::write(format!("/proc/{p}/clear_refs"), "5").is_ok());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let sampler = (!hwm && !pids.is_empty()).then(|| {
            let pids = pids.to_vec();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut peak = vec![0u64; pids.len()];
                while !stop.load(Ordering::Relaxed) {
                    for (i, &p) in pids.iter().enumerate() {
                        peak[i] = peak[i].max(proc_status_kb(p, "VmRSS:"));
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
                peak
            })
        });
        PeakRss { pids: pids.to_vec(), hwm, stop, sampler }
    }
    fn finish(self) -> (Vec<u64>, &'static str) {
        if self.hwm {
            (self.pids.iter().map(|&p| proc_status_kb(p, "VmHWM:")).collect(), "VmHWM")
        } else {
            self.stop.store(true, Ordering::Relaxed);
            (self.sampler.map(|s| s.join().unwrap()).unwrap_or_default(), "sampled")
        }
    }
}

// ---------------------------------------------------------------------------------------
// Reporting
// ---------------------------------------------------------------------------------------

pub(crate) fn print_markdown(report: &Report) {
    creates::markdown(report);
    updates::markdown(report);
    reads::markdown(report);
    list::markdown(report);
    watch::markdown(report);
    reconnect::markdown(report);
    failover::markdown(report);
}

/// `Some(x)` with one decimal, else "-".
fn f1(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into())
}

fn f2(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into())
}

/// Per-process peak RSS in MB as "a / b / c" (leader first where known), or "-".
pub(crate) fn mb_list(v: &[f64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.iter().map(|m| format!("{m:.0}")).collect::<Vec<_>>().join(" / ")
}

/// Calls `f` with each complete line of a streamed HTTP body until it answers false
/// (then `Ok(true)`) or the stream ends (`Ok(false)`).
async fn for_each_line(resp: &mut reqwest::Response, mut f: impl FnMut(&[u8]) -> bool) -> Result<bool> {
    let mut carry: Vec<u8> = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        let mut data: &[u8] = &chunk;
        while let Some(i) = memchr::memchr(b'\n', data) {
            let keep = if carry.is_empty() {
                f(&data[..i])
            } else {
                carry.extend_from_slice(&data[..i]);
                let k = f(&carry);
                carry.clear();
                k
            };
            if !keep {
                return Ok(true);
            }
            data = &data[i + 1..];
        }
        carry.extend_from_slice(data);
    }
    Ok(false)
}

/// The current resourceVersion (kuorum: of a one-item LIST on `url`) or revision (etcd).
async fn current_rv(t: &Target, url: &str) -> Result<i64> {
    match t.sys {
        Sys::Kuorum => {
            let v: serde_json::Value = http_client(Duration::from_secs(10))?
                .get(format!("{url}/api/v1/namespaces/default/configmaps?limit=1"))
                .header("Accept", "application/json")
                .send()
                .await?
                .json()
                .await?;
            let rv =
                v["metadata"]["resourceVersion"].as_str().ok_or_else(|| anyhow!("no list resourceVersion in {v}"))?;
            Ok(rv.parse()?)
        }
        Sys::Etcd => {
            let mut c = etcd_connect(url).await?;
            Ok(c.get("/bench/none", None).await?.header().map(|h| h.revision()).unwrap_or(0))
        }
    }
}
