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
//! - [`fairness`]: one user's reads while another floods (kuorum only).
//! - [`scale`]: memory, disk, LIST, creates and restart at 100k..1M stored objects (not in
//!   the default run: it takes about half an hour).
//!
//! This module holds what they share: starting a [`Target`] cluster, filling it, the
//! HTTP and etcd clients (load clients, watch streams), percentiles, CPU and peak-memory
//! probes, and the Markdown tables' dispatch and number formats.

pub(crate) mod creates;
pub(crate) mod failover;
pub(crate) mod fairness;
pub(crate) mod list;
pub(crate) mod reads;
pub(crate) mod reconnect;
pub(crate) mod scale;
pub(crate) mod updates;
pub(crate) mod watch;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use kuorum_e2e::{Cluster, ClusterOptions};

use super::{cpu_seconds, etcd_roles, kuorum_roles, put_first, Args, EtcdCluster, Report};

pub(crate) use failover::FailoverResult;
pub(crate) use fairness::FairnessResult;
pub(crate) use list::ListResult;
pub(crate) use reconnect::ReconnectResult;
pub(crate) use scale::ScaleResult;
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
                    Some(list) => (kuorum_url_list(list), vec![], None),
                    None => {
                        let c = start_kuorum(args)?;
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
                    Some(list) => (etcd_endpoint_list(list), vec![], None),
                    None => {
                        let c = start_etcd(args)?;
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

    /// Waits (up to `max`) until the servers have been quiet for half a second: under
    /// 5% of a core summed over them. A fill can leave work behind (flushes, compactions,
    /// backend commits); what a scenario measures after it should not depend on which
    /// target happens to come first.
    /// Returns the seconds waited.
    async fn wait_idle(&self, max: Duration) -> f64 {
        let Some(pids) = self.pids() else { return 0.0 };
        let t0 = Instant::now();
        let mut before = cpu_seconds(pids);
        while t0.elapsed() < max {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = cpu_seconds(pids);
            if now - before < 0.025 {
                break;
            }
            before = now;
        }
        t0.elapsed().as_secs_f64()
    }

    /// Resets each server's peak RSS (see [`hwm_reset`]).
    fn hwm_reset(&self) {
        if let Some(p) = self.pids() {
            hwm_reset(p);
        }
    }

    /// Each server's peak RSS in MB since [`Target::hwm_reset`] (empty when not started here).
    fn peak_rss_mb(&self) -> Vec<f64> {
        self.pids().map(hwm_mb).unwrap_or_default()
    }

    /// The object-name (kuorum: `{tag}-`) or key (etcd: `/bench/{tag}/`) prefix of a scenario.
    fn prefix(&self, tag: &str) -> String {
        match self.sys {
            Sys::Kuorum => format!("{tag}-"),
            Sys::Etcd => format!("/bench/{tag}/"),
        }
    }
}

/// The base URLs of `--kuorum` (comma separated).
fn kuorum_url_list(list: &str) -> Vec<String> {
    list.split(',').map(|u| u.trim().trim_end_matches('/').to_string()).collect()
}

/// The client URLs of `--etcd` (comma separated).
fn etcd_endpoint_list(list: &str) -> Vec<String> {
    list.split(',').map(|u| u.trim().to_string()).collect()
}

/// Starts a fresh 3-node kuorum cluster (`--kuorum-bin`, else the release build).
fn start_kuorum(args: &Args) -> Result<Cluster> {
    let bin = match &args.kuorum_bin {
        Some(b) => b.clone(),
        None => kuorum_e2e::kuorum_bin().ok_or_else(|| {
            anyhow!("no kuorum binary: build it (cargo build --release -p kuorum) or pass --kuorum-bin")
        })?,
    };
    eprintln!("starting a 3-node kuorum cluster ({})", bin.display());
    let mut extra_args = match crate::server_threads(args) {
        Some(n) => vec!["--worker-threads".to_string(), n.to_string()],
        None => vec![],
    };
    extra_args.extend(args.kuorum_args.iter().cloned());
    let options = ClusterOptions {
        nodes: 3,
        parent_dir: args.dir.clone(),
        rust_log: Some("warn".into()),
        extra_args,
        ..Default::default()
    };
    Cluster::start_with(bin, options)
}

/// Starts a fresh 3-member etcd cluster (`--etcd-bin`).
fn start_etcd(args: &Args) -> Result<EtcdCluster> {
    eprintln!("starting a 3-member etcd cluster ({})", args.etcd_bin);
    EtcdCluster::start(&args.etcd_bin, args.dir.as_deref(), crate::server_threads(args))
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
pub(crate) fn per_1k(cpu_s: Option<f64>, ops: u64) -> Option<f64> {
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

/// The `p`th percentile (nearest rank) of sorted values; the default (0) when empty.
fn pct<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let idx = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[idx.clamp(1, sorted.len()) - 1]
}

/// The `p`th percentile of sorted microseconds, in ms.
pub(crate) fn pct_ms(sorted_us: &[u32], p: f64) -> f64 {
    pct(sorted_us, p) as f64 / 1000.0
}

fn self_cpu() -> f64 {
    cpu_seconds(&[std::process::id()])
}

/// CPU seconds used so far by the servers (when started here) and by this process.
struct CpuMark {
    server: Option<f64>,
    client: f64,
}

impl CpuMark {
    fn now(t: &Target) -> CpuMark {
        CpuMark { server: t.pids().map(cpu_seconds), client: self_cpu() }
    }

    /// (server, client) CPU seconds since the mark.
    fn since(&self, t: &Target) -> (Option<f64>, f64) {
        let now = CpuMark::now(t);
        (self.server.zip(now.server).map(|(a, b)| b - a), now.client - self.client)
    }
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
        return creates::bench_one(sys, args, rt, report);
    }
    if scenario == "fairness" && sys == Sys::Etcd {
        eprintln!("(fairness is kuorum's only: etcd has no priority levels)");
        return Ok(());
    }
    let mut target = Target::start(sys, args, rt)?;
    match scenario {
        "scale" => report.scale.extend(rt.block_on(scale::scale_scenario(&mut target, args))?),
        "watch" => watch::run(&target, args, rt, report)?,
        "list" => report.lists.extend(rt.block_on(list::list_scenario(&target, args))?),
        "reads" => report.reads.extend(rt.block_on(reads::reads_scenario(&target, args))?),
        "updates" => report.updates.extend(rt.block_on(updates::updates_scenario(&target, args))?),
        "reconnect" => report.reconnect.extend(rt.block_on(reconnect::reconnect_scenario(&target, args))?),
        "failover" => report.failover.extend(rt.block_on(failover::failover_scenario(&target, args))?),
        "fairness" => report.fairness.extend(rt.block_on(fairness::fairness_scenario(&target, args))?),
        other => bail!("unknown scenario {other:?}"),
    }
    Ok(())
}

/// `creates` on both systems at once, their levels interleaved (see
/// [`creates::bench_interleaved`]).
pub(crate) fn run_creates_interleaved(args: &Args, rt: &tokio::runtime::Runtime, report: &mut Report) -> Result<()> {
    eprintln!("\n==== creates on kuorum and etcd, level by level");
    creates::bench_interleaved(args, rt, report)
}

/// The scenario names `--scenarios` accepts, in the default order.
pub(crate) const ALL: &[&str] =
    &["creates", "updates", "reads", "list", "watch", "reconnect", "failover", "fairness", "scale"];

// ---------------------------------------------------------------------------------------
// Filling
// ---------------------------------------------------------------------------------------

fn http_client(timeout: Duration) -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder().timeout(timeout).tcp_nodelay(true).build()?)
}

/// A load client's own connection: one idle connection kept, 10 s per request.
pub(crate) fn worker_http_client() -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(1)
        .tcp_nodelay(true)
        .build()?)
}

/// The first 300 bytes of an error response's body, for the error message.
pub(crate) fn body_head(body: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(&body[..body.len().min(300)])
}

/// The response's body if its status is `want`, else an error "{what}HTTP {status}: {body}".
pub(crate) async fn expect_status(
    resp: reqwest::Response,
    want: u16,
    what: &str,
) -> Result<impl std::ops::Deref<Target = [u8]>> {
    let status = resp.status();
    let body = resp.bytes().await?;
    if status.as_u16() != want {
        bail!("{what}HTTP {status}: {}", body_head(&body));
    }
    Ok(body)
}

/// POSTs a ConfigMap JSON body to a collection URL; expects 201 Created (else the error
/// starts with `what`).
pub(crate) async fn post_configmap(http: &reqwest::Client, url: &str, body: String, what: &str) -> Result<()> {
    let resp = http
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .body(body)
        .send()
        .await?;
    expect_status(resp, 201, what).await?;
    Ok(())
}

fn configmap(name: &str, payload: &str) -> String {
    format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"v":"{payload}"}}}}"#)
}

async fn kuorum_create(http: &reqwest::Client, base: &str, name: &str, payload: &str) -> Result<()> {
    let url = format!("{base}/api/v1/namespaces/default/configmaps");
    post_configmap(http, &url, configmap(name, payload), &format!("create {name}: ")).await
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
                    while let Some(i) = fill_next(&next, from, n, t0) {
                        kuorum_create(&http, &leader, &format!("{prefix}{i}"), &payload).await?;
                    }
                    anyhow::Ok(())
                }));
            }
            Sys::Etcd => {
                let mut c = etcd_connect(&leader).await?;
                let payload = vec![b'x'; size];
                tasks.push(tokio::spawn(async move {
                    while let Some(i) = fill_next(&next, from, n, t0) {
                        c.put(format!("{prefix}{i}"), payload.clone(), None).await?;
                    }
                    anyhow::Ok(())
                }));
            }
        }
    }
    for h in tasks {
        h.await??;
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// The next index below `n` for a filling task to create (progress noted every 10,000),
/// or None when all are taken.
fn fill_next(next: &AtomicUsize, from: usize, n: usize, t0: Instant) -> Option<usize> {
    let i = next.fetch_add(1, Ordering::Relaxed);
    if i >= n {
        return None;
    }
    if i > from && i.is_multiple_of(10_000) {
        let s = t0.elapsed().as_secs_f64();
        eprintln!("  filled {i} ({:.0}/s)", (i - from) as f64 / s);
    }
    Some(i)
}

async fn etcd_connect(ep: &str) -> Result<etcd_client::Client> {
    etcd_connect_with(ep, Duration::from_secs(60)).await
}

/// A gRPC connection to an etcd member: 5 s to connect, `timeout` per request.
pub(crate) async fn etcd_connect_with(ep: &str, timeout: Duration) -> Result<etcd_client::Client> {
    let opts = etcd_client::ConnectOptions::new().with_connect_timeout(Duration::from_secs(5)).with_timeout(timeout);
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
    fairness::markdown(report);
    scale::markdown(report);
}

/// `Some(x)` with `decimals` decimals, else "-".
fn fixed(x: Option<f64>, decimals: usize) -> String {
    x.map(|v| format!("{v:.decimals$}")).unwrap_or_else(|| "-".into())
}

fn f0(x: Option<f64>) -> String {
    fixed(x, 0)
}

fn f1(x: Option<f64>) -> String {
    fixed(x, 1)
}

pub(crate) fn f2(x: Option<f64>) -> String {
    fixed(x, 2)
}

fn f3(x: Option<f64>) -> String {
    fixed(x, 3)
}

/// " (first: E)" for a first error, else "".
pub(crate) fn first_note(e: Option<&String>) -> String {
    e.map(|e| format!(" (first: {e})")).unwrap_or_default()
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

/// Opens a kuorum watch stream (`url` with `?watch=true...`); an error unless it answers 2xx.
async fn open_watch(http: &reqwest::Client, url: &str) -> Result<reqwest::Response> {
    let resp = http.get(url).header("Accept", "application/json").send().await?;
    if !resp.status().is_success() {
        let st = resp.status();
        bail!("watch: HTTP {st}: {}", resp.text().await.unwrap_or_default());
    }
    Ok(resp)
}

/// One HTTP client per node for many watch streams (no idle pool: each stream its own
/// connection).
fn watch_http_clients(t: &Target) -> Result<Vec<reqwest::Client>> {
    Ok((0..t.urls.len())
        .map(|_| reqwest::Client::builder().tcp_nodelay(true).pool_max_idle_per_host(0).build())
        .collect::<Result<_, _>>()?)
}

/// etcd connections for `watchers` watch streams spread round-robin over the members, up
/// to 100 streams per connection: `[member][connection]`; see [`etcd_watch_conn`].
async fn etcd_watch_conns(t: &Target, watchers: usize) -> Result<Vec<Vec<etcd_client::Client>>> {
    let mut conns = Vec::new();
    for (m, ep) in t.urls.iter().enumerate() {
        let on_member = (watchers + t.urls.len() - 1 - m) / t.urls.len();
        let mut v = Vec::new();
        for _ in 0..on_member.div_ceil(100) {
            v.push(etcd_connect(ep).await?);
        }
        conns.push(v);
    }
    Ok(conns)
}

/// The connection of watcher `i` (on member `i % members`) among [`etcd_watch_conns`]'s.
fn etcd_watch_conn(conns: &[Vec<etcd_client::Client>], i: usize) -> etcd_client::Client {
    let on_member = &conns[i % conns.len()];
    on_member[(i / conns.len()) % on_member.len()].clone()
}

/// The sequence number at the end of an etcd key `{prefix}{seq}`.
fn seq_in_key(key: &[u8], prefix: &[u8]) -> Option<u64> {
    std::str::from_utf8(key.strip_prefix(prefix)?).ok()?.parse().ok()
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
