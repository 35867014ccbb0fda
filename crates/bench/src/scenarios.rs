//! The scenarios beyond creates (issue 3, "what it must show"):
//!
//! - `watch`: watch fan-out. N watchers (0 = the writes alone, as the CPU/RSS baseline)
//!   spread round-robin over the three nodes/members, each its own stream (kuorum: a
//!   `?watch=true&resourceVersion=RV` HTTP/1.1 stream per watcher, one JSON line per event;
//!   etcd: a gRPC `Watch` on a key prefix, at most 100 per connection). A paced, open-loop
//!   writer sends `--watch-rate` writes/s of 1 KiB to the leader and records each write's
//!   send time by sequence number (the object name / key ends in it); a watcher takes the
//!   latency send→receipt of every event (same process, same monotonic clock). So the
//!   latency includes the write's own commit time (reported beside it).
//! - `list`: `--list-objects` objects of `--list-value-size` bytes, then `--list-reps`
//!   consistent lists of all of them on the leader and on a follower (kuorum: `GET
//!   .../configmaps`, no resourceVersion; etcd: linearizable range over the prefix), with
//!   the servers' peak RSS over the lists (VmHWM, reset through /proc/PID/clear_refs).
//! - `reads`: `--read-clients` closed-loop readers of random objects, each on its own
//!   connection, spread over 1, 2, 3 nodes (kuorum: `GET .../NAME?resourceVersion=0`;
//!   etcd: serializable Get).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use kuorum_e2e::{Cluster, ClusterOptions};
use memchr::memmem;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use super::cpucap::CpuCap;
use super::{
    cpu_seconds, drive, etcd_roles, kuorum_roles, put_first, Args, Ctx, EtcdCluster, Report, RunResult, Worker,
};

// ---------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------

#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct WatchResult {
    pub system: String,
    pub watchers: usize,
    /// Paced writes/s asked for, and writes acknowledged inside the recorded window per second.
    pub write_rate: f64,
    pub writes_per_sec: f64,
    pub write_errors: u64,
    /// Latency of the writes themselves (send → commit acknowledged).
    pub write_p50_ms: f64,
    pub write_p99_ms: f64,
    pub seconds: f64,
    /// Window writes × watchers, and how many of those events arrived (before the deadline).
    pub events_expected: u64,
    pub events_received: u64,
    /// Events received during the recorded window (all watchers), per second.
    pub events_per_sec: f64,
    /// Delivery latency, write sent → event received by the watcher.
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    /// Watch streams that failed to start or ended early (cut off as too slow, errors).
    pub streams_failed: u64,
    pub first_error: Option<String>,
    /// Servers' CPU (all nodes) during the window, in cores, and per million events received.
    pub server_cpu_cores: Option<f64>,
    pub server_cpu_s_per_m_events: Option<f64>,
    /// The same above the 0-watcher level (the writes' own CPU removed).
    #[serde(default)]
    pub server_cpu_s_per_m_events_marginal: Option<f64>,
    pub client_cpu_cores: f64,
    /// Servers' summed RSS before the watchers connect, with them connected (no writes
    /// yet), and at the end of the window. Per watcher: (connected - idle) / N, and
    /// (loaded - idle - the 0-watcher level's loaded - idle) / N.
    pub rss_idle_mb: Option<f64>,
    pub rss_connected_mb: Option<f64>,
    pub rss_loaded_mb: Option<f64>,
    pub rss_kb_per_watcher_connected: Option<f64>,
    pub rss_kb_per_watcher_loaded: Option<f64>,
    /// Seconds to open all the watch streams.
    pub connect_s: f64,
}

#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct ListResult {
    pub system: String,
    pub workload: String,
    /// leader or follower
    pub target: String,
    pub objects: usize,
    pub value_size: usize,
    /// Seconds to create the objects (64 concurrent writers), and their rate.
    pub fill_s: f64,
    pub fill_per_sec: f64,
    pub reps: usize,
    /// Bytes of one response (kuorum: JSON body; etcd: keys + values).
    pub bytes: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    /// Servers' CPU ms per list (all nodes).
    pub server_cpu_ms_per_list: Option<f64>,
    /// Summed RSS of all servers before the lists, and the sum of their peaks during them.
    pub rss_before_mb: Option<f64>,
    pub peak_rss_mb: Option<f64>,
    /// The listed node's own RSS before and peak.
    pub target_rss_before_mb: Option<f64>,
    pub target_peak_rss_mb: Option<f64>,
    /// Whether the peak is a true high-water mark (clear_refs worked) or RSS sampled every 5 ms.
    pub peak_method: String,
}

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
    let target = Target::start(sys, args, rt)?;
    match scenario {
        "watch" => {
            let mut level = 0;
            for &rate in &args.watch_rates {
                let mut base_cores: Option<f64> = None;
                let mut base_growth: Option<f64> = None;
                for &n in &args.watchers {
                    level += 1;
                    let mut r = rt.block_on(watch_level(&target, n, level, rate, args))?;
                    if n == 0 {
                        base_cores = r.server_cpu_cores;
                        base_growth = r.rss_loaded_mb.zip(r.rss_idle_mb).map(|(l, i)| l - i);
                    } else {
                        if let (Some(b), Some(c)) = (base_cores, r.server_cpu_cores) {
                            if r.events_per_sec > 0.0 {
                                r.server_cpu_s_per_m_events_marginal = Some((c - b) / r.events_per_sec * 1e6);
                            }
                        }
                        // Under load, the writes alone grow RSS (cache, memtables): take the
                        // 0-watcher level's growth off.
                        if let (Some(g), Some(l), Some(i)) = (base_growth, r.rss_loaded_mb, r.rss_idle_mb) {
                            r.rss_kb_per_watcher_loaded = Some((l - i - g) * 1024.0 / n as f64);
                        }
                    }
                    report.watch.push(r);
                    std::thread::sleep(Duration::from_secs(1)); // let the servers drop the old streams
                }
            }
        }
        "list" => {
            let rs = rt.block_on(list_scenario(&target, args))?;
            report.lists.extend(rs);
        }
        "reads" => {
            let rs = rt.block_on(reads_scenario(&target, args))?;
            report.reads.extend(rs);
        }
        _ => unreachable!(),
    }
    Ok(())
}

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
    let t0 = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
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

async fn etcd_connect(ep: &str) -> Result<etcd_client::Client> {
    let opts = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(60));
    etcd_client::Client::connect([ep], Some(opts)).await.with_context(|| format!("connect to etcd at {ep}"))
}

// ---------------------------------------------------------------------------------------
// Watch fan-out
// ---------------------------------------------------------------------------------------

struct Shared {
    base: Instant,
    /// Per write sequence number: nanoseconds since `base` when it was sent, plus 1 (0 = not yet).
    sent: Vec<AtomicU64>,
    /// Events received by all watchers (any sequence number).
    received: AtomicU64,
    connected: AtomicUsize,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
    warm_seq: u64,
    total: u64,
}

impl Shared {
    fn now_ns(&self) -> u64 {
        Instant::now().saturating_duration_since(self.base).as_nanos() as u64
    }
    fn fail(&self, e: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.first_error.lock().unwrap().get_or_insert(e);
    }
}

/// One watcher's tally.
#[derive(Default)]
struct Tally {
    lat_us: Vec<u32>,
    seen: u64,
}

impl Tally {
    fn event(&mut self, sh: &Shared, seq: u64, now_ns: u64) {
        if seq >= sh.total {
            return;
        }
        let s = sh.sent[seq as usize].load(Ordering::Relaxed);
        if s == 0 {
            return;
        }
        self.seen += 1;
        if seq >= sh.warm_seq {
            self.lat_us.push((now_ns.saturating_sub(s - 1) / 1000).min(u32::MAX as u64) as u32);
        }
    }
}

/// The sequence number in a watch event line: the metadata.name (the first `"name":"` in
/// the line) is `{prefix}{seq}`.
fn seq_in_line(line: &[u8], finder: &memmem::Finder, prefix: &[u8]) -> Option<u64> {
    let head = &line[..line.len().min(1024)];
    let at = finder.find(head)? + finder.needle().len();
    let rest = line[at..].strip_prefix(prefix)?;
    let end = rest.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

async fn kuorum_watcher(http: reqwest::Client, url: String, prefix: String, sh: Arc<Shared>) -> Tally {
    let mut tally = Tally::default();
    let r: Result<()> = async {
        let mut resp = http.get(&url).header("Accept", "application/json").send().await?;
        if !resp.status().is_success() {
            let st = resp.status();
            bail!("watch: HTTP {st}: {}", resp.text().await.unwrap_or_default());
        }
        sh.connected.fetch_add(1, Ordering::Relaxed);
        let finder = memmem::Finder::new(br#""name":""#);
        let prefix = prefix.as_bytes();
        let mut carry: Vec<u8> = Vec::new();
        while tally.seen < sh.total {
            let Some(chunk) = resp.chunk().await? else {
                bail!("watch stream ended after {} events", tally.seen);
            };
            let now = sh.now_ns();
            let before = tally.seen;
            let mut data: &[u8] = &chunk;
            if !carry.is_empty() {
                match memchr::memchr(b'\n', data) {
                    Some(i) => {
                        carry.extend_from_slice(&data[..i]);
                        if let Some(seq) = seq_in_line(&carry, &finder, prefix) {
                            tally.event(&sh, seq, now);
                        }
                        carry.clear();
                        data = &data[i + 1..];
                    }
                    None => {
                        carry.extend_from_slice(data);
                        continue;
                    }
                }
            }
            while let Some(i) = memchr::memchr(b'\n', data) {
                if let Some(seq) = seq_in_line(&data[..i], &finder, prefix) {
                    tally.event(&sh, seq, now);
                }
                data = &data[i + 1..];
            }
            carry.extend_from_slice(data);
            sh.received.fetch_add(tally.seen - before, Ordering::Relaxed);
        }
        Ok(())
    }
    .await;
    if let Err(e) = r {
        sh.fail(format!("{e:#}"));
    }
    tally
}

async fn etcd_watcher(mut client: etcd_client::Client, prefix: String, rev: i64, sh: Arc<Shared>) -> Tally {
    let mut tally = Tally::default();
    let r: Result<()> = async {
        let opts = etcd_client::WatchOptions::new().with_prefix().with_start_revision(rev);
        let mut stream = client.watch(prefix.as_bytes().to_vec(), Some(opts)).await?;
        let pre = prefix.as_bytes();
        while tally.seen < sh.total {
            let Some(resp) = stream.message().await? else {
                bail!("etcd watch stream ended after {} events", tally.seen);
            };
            let now = sh.now_ns();
            if resp.created() {
                sh.connected.fetch_add(1, Ordering::Relaxed);
            }
            if resp.canceled() {
                bail!("etcd watch canceled after {} events", tally.seen);
            }
            let before = tally.seen;
            for ev in resp.events() {
                let Some(kv) = ev.kv() else { continue };
                let Some(rest) = kv.key().strip_prefix(pre) else { continue };
                if let Some(seq) = std::str::from_utf8(rest).ok().and_then(|s| s.parse::<u64>().ok()) {
                    tally.event(&sh, seq, now);
                }
            }
            sh.received.fetch_add(tally.seen - before, Ordering::Relaxed);
        }
        Ok(())
    }
    .await;
    if let Err(e) = r {
        sh.fail(format!("{e:#}"));
    }
    tally
}

async fn watch_level(t: &Target, n: usize, level: usize, rate: f64, args: &Args) -> Result<WatchResult> {
    if !(rate > 0.0 && rate <= 20_000.0) {
        bail!("--watch-rate must be in (0, 20000]");
    }
    let warm_seq = (rate * args.watch_warmup).round() as u64;
    let total = warm_seq + (rate * args.watch_duration).round() as u64;
    let sys_name = if t.sys == Sys::Kuorum { "kuorum" } else { "etcd" };
    eprintln!("\n== watch {sys_name}: {n} watchers, {rate} writes/s, {total} writes ({warm_seq} warmup)");
    // Names / keys of this level: kuorum `wl{level}-{seq}`, etcd `/bench/w/l{level}/{seq}`.
    let (name_prefix, key_prefix) = (format!("wl{level}-"), format!("/bench/w/l{level}/"));

    // Where the watches start: the current revision.
    let (start_rv, etcd_clients) = match t.sys {
        Sys::Kuorum => {
            let http = http_client(Duration::from_secs(10))?;
            let v: serde_json::Value = http
                .get(format!("{}/api/v1/namespaces/default/configmaps?limit=1", t.urls[0]))
                .header("Accept", "application/json")
                .send()
                .await?
                .json()
                .await?;
            let rv = v["metadata"]["resourceVersion"]
                .as_str()
                .ok_or_else(|| anyhow!("no list resourceVersion in {v}"))?
                .to_string();
            (rv, vec![])
        }
        Sys::Etcd => {
            let mut c = etcd_connect(&t.urls[0]).await?;
            let rev = c.get("/bench/none", None).await?.header().map(|h| h.revision()).unwrap_or(0);
            // Up to 100 watch streams per gRPC connection, connections spread over members.
            let mut clients: Vec<Vec<etcd_client::Client>> = Vec::new();
            for (m, ep) in t.urls.iter().enumerate() {
                let on_member = (n + t.urls.len() - 1 - m) / t.urls.len();
                let conns = on_member.div_ceil(100);
                let mut v = Vec::new();
                for _ in 0..conns {
                    v.push(etcd_connect(ep).await?);
                }
                clients.push(v);
            }
            ((rev + 1).to_string(), clients)
        }
    };

    let sh = Arc::new(Shared {
        base: Instant::now(),
        sent: (0..total).map(|_| AtomicU64::new(0)).collect(),
        received: AtomicU64::new(0),
        connected: AtomicUsize::new(0),
        failed: AtomicU64::new(0),
        first_error: Mutex::new(None),
        warm_seq,
        total,
    });

    let rss_idle = t.rss_mb();
    let t_connect = Instant::now();
    let mut watchers = Vec::new();
    let kuorum_http: Vec<reqwest::Client> = (0..t.urls.len())
        .map(|_| reqwest::Client::builder().tcp_nodelay(true).pool_max_idle_per_host(0).build())
        .collect::<Result<_, _>>()?;
    for i in 0..n {
        let m = i % t.urls.len();
        let sh = sh.clone();
        match t.sys {
            Sys::Kuorum => {
                let url = format!(
                    "{}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={start_rv}&timeoutSeconds=600",
                    t.urls[m]
                );
                watchers.push(tokio::spawn(kuorum_watcher(kuorum_http[m].clone(), url, name_prefix.clone(), sh)));
            }
            Sys::Etcd => {
                let conns = &etcd_clients[m];
                let c = conns[(i / t.urls.len()) % conns.len()].clone();
                let rev: i64 = start_rv.parse()?;
                watchers.push(tokio::spawn(etcd_watcher(c, key_prefix.clone(), rev, sh)));
            }
        }
        if i % 100 == 99 {
            tokio::task::yield_now().await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while sh.connected.load(Ordering::Relaxed) + (sh.failed.load(Ordering::Relaxed) as usize) < n {
        if Instant::now() > deadline {
            bail!("only {} of {n} watchers connected after 60 s", sh.connected.load(Ordering::Relaxed));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let connect_s = t_connect.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_connected = t.rss_mb();
    eprintln!(
        "  {} watchers connected in {connect_s:.2} s ({} failed); servers' RSS {:.1} -> {:.1} MB",
        sh.connected.load(Ordering::Relaxed),
        sh.failed.load(Ordering::Relaxed),
        rss_idle.unwrap_or(0.0),
        rss_connected.unwrap_or(0.0)
    );

    // The paced writer. Sequence numbers are sent at base0 + seq / rate.
    let base0 = sh.base.elapsed();
    let sem = Arc::new(Semaphore::new(256));
    let writer = {
        let sh = sh.clone();
        let sys = t.sys;
        let leader = t.urls[0].clone();
        let etcd = match sys {
            Sys::Etcd => Some(etcd_connect(&leader).await?),
            Sys::Kuorum => None,
        };
        let http = http_client(Duration::from_secs(30))?;
        let name_prefix = name_prefix.clone();
        let key_prefix = key_prefix.clone();
        tokio::spawn(async move {
            let payload_s = Arc::new("x".repeat(1024));
            let payload_b = vec![b'x'; 1024];
            let mut handles = Vec::with_capacity(sh.total as usize);
            let mut lagged = 0u64;
            for seq in 0..sh.total {
                let at = sh.base + base0 + Duration::from_secs_f64(seq as f64 / rate);
                tokio::time::sleep_until(at.into()).await;
                let permit = match sem.clone().try_acquire_owned() {
                    Ok(p) => p,
                    Err(_) => {
                        lagged += 1;
                        sem.clone().acquire_owned().await.unwrap()
                    }
                };
                let sh = sh.clone();
                let http = http.clone();
                let leader = leader.clone();
                let name = format!("{name_prefix}{seq}");
                let key = format!("{key_prefix}{seq}");
                let payload_s = payload_s.clone();
                let payload_b = payload_b.clone();
                let mut etcd = etcd.clone();
                handles.push(tokio::spawn(async move {
                    let _permit = permit;
                    let t0 = sh.now_ns();
                    sh.sent[seq as usize].store(t0 + 1, Ordering::Relaxed);
                    let r = match etcd.as_mut() {
                        Some(c) => c.put(key, payload_b, None).await.map(|_| ()).map_err(anyhow::Error::from),
                        None => kuorum_create(&http, &leader, &name, &payload_s).await,
                    };
                    let t1 = sh.now_ns();
                    (seq, t1, r.map(|()| ((t1 - t0) / 1000) as u32).map_err(|e| format!("{e:#}")))
                }));
            }
            let mut lat = Vec::new();
            let mut acked_at = Vec::new();
            let mut errors = 0u64;
            let mut first_error = None;
            for h in handles {
                let (seq, t1, r) = h.await.unwrap();
                if r.is_ok() {
                    acked_at.push(t1);
                }
                match r {
                    Ok(us) if seq >= sh.warm_seq => lat.push(us),
                    Ok(_) => {}
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e);
                    }
                }
            }
            (lat, acked_at, errors, first_error, lagged)
        })
    };

    // The window: the writes of sequence numbers warm_seq..total.
    let win_from = sh.base + base0 + Duration::from_secs_f64(args.watch_warmup);
    let win_to = win_from + Duration::from_secs_f64(args.watch_duration);
    tokio::time::sleep_until(win_from.into()).await;
    let (cpu0, me0, rx0) = (t.pids().map(cpu_seconds), self_cpu(), sh.received.load(Ordering::Relaxed));
    let mut tick = win_from;
    while tick + Duration::from_secs(1) < win_to {
        tick += Duration::from_secs(1);
        tokio::time::sleep_until(tick.into()).await;
        eprintln!(
            "  t={:.0}s received {} events, {} watchers failed",
            (tick - win_from).as_secs_f64(),
            sh.received.load(Ordering::Relaxed),
            sh.failed.load(Ordering::Relaxed)
        );
    }
    tokio::time::sleep_until(win_to.into()).await;
    let (cpu1, me1, rx1) = (t.pids().map(cpu_seconds), self_cpu(), sh.received.load(Ordering::Relaxed));
    let rss_loaded = t.rss_mb();
    let secs = (win_to - win_from).as_secs_f64();

    let (mut wlat, acked_at, write_errors, write_first_error, lagged) = writer.await?;
    // Writes acknowledged inside the window (falls below the rate when the writes slow down).
    let (w0, w1) = ((win_from - sh.base).as_nanos() as u64, (win_to - sh.base).as_nanos() as u64);
    let acked_in_window = acked_at.iter().filter(|&&t| t >= w0 && t < w1).count();
    if lagged > 0 {
        eprintln!("  writer: {lagged} writes waited for one of 256 in-flight slots (pacing slipped)");
    }
    // Give the last events up to 5 s to arrive, then stop the watchers.
    let drain_until = Instant::now() + Duration::from_secs(5);
    while sh.received.load(Ordering::Relaxed) < total * n as u64 && Instant::now() < drain_until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut lat: Vec<u32> = Vec::new();
    for h in &watchers {
        if !h.is_finished() {
            h.abort();
        }
    }
    for h in watchers {
        if let Ok(t) = h.await {
            lat.extend(t.lat_us);
        }
    }
    drop(kuorum_http);
    drop(etcd_clients);
    lat.sort_unstable();
    wlat.sort_unstable();
    let expected = (total - warm_seq) * n as u64;
    let server_cpu = cpu0.zip(cpu1).map(|(a, b)| b - a);
    let events = rx1 - rx0;
    let per_watcher = |now: Option<f64>| -> Option<f64> {
        (n > 0).then_some(())?;
        Some((now? - rss_idle?) * 1024.0 / n as f64)
    };
    let first_error = sh.first_error.lock().unwrap().clone().or(write_first_error);
    let r = WatchResult {
        system: sys_name.into(),
        watchers: n,
        write_rate: rate,
        writes_per_sec: acked_in_window as f64 / secs,
        write_errors,
        write_p50_ms: pct_ms(&wlat, 50.0),
        write_p99_ms: pct_ms(&wlat, 99.0),
        seconds: secs,
        events_expected: expected,
        events_received: lat.len() as u64,
        events_per_sec: events as f64 / secs,
        p50_ms: pct_ms(&lat, 50.0),
        p90_ms: pct_ms(&lat, 90.0),
        p99_ms: pct_ms(&lat, 99.0),
        p999_ms: pct_ms(&lat, 99.9),
        max_ms: lat.last().map(|&m| m as f64 / 1000.0).unwrap_or(0.0),
        streams_failed: sh.failed.load(Ordering::Relaxed),
        first_error,
        server_cpu_cores: server_cpu.map(|c| c / secs),
        server_cpu_s_per_m_events: server_cpu.filter(|_| events > 0).map(|c| c / events as f64 * 1e6),
        server_cpu_s_per_m_events_marginal: None,
        client_cpu_cores: (me1 - me0) / secs,
        rss_idle_mb: rss_idle,
        rss_connected_mb: rss_connected,
        rss_loaded_mb: rss_loaded,
        rss_kb_per_watcher_connected: per_watcher(rss_connected),
        rss_kb_per_watcher_loaded: per_watcher(rss_loaded),
        connect_s,
    };
    eprintln!(
        "  => {:.0} writes/s (p50 {:.2} ms, p99 {:.2} ms, {} errors); {} of {} events, {:.0}/s; delivery p50 {:.2} ms p99 {:.2} ms max {:.1} ms; server {:.2} cores, client {:.2} cores; {} streams failed{}",
        r.writes_per_sec,
        r.write_p50_ms,
        r.write_p99_ms,
        r.write_errors,
        r.events_received,
        r.events_expected,
        r.events_per_sec,
        r.p50_ms,
        r.p99_ms,
        r.max_ms,
        r.server_cpu_cores.unwrap_or(0.0),
        r.client_cpu_cores,
        r.streams_failed,
        r.first_error.as_ref().map(|e| format!(" (first: {e})")).unwrap_or_default()
    );
    Ok(r)
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

/// One consistent list: (bytes, items counted when `verify`).
async fn list_once(
    http: &reqwest::Client,
    list_url: &str,
    etcd: Option<&mut etcd_client::KvClient>,
    prefix: &str,
    verify: bool,
) -> Result<(u64, usize)> {
    match etcd {
        Some(c) => {
            let r = c.get(prefix, Some(etcd_client::GetOptions::new().with_prefix())).await?;
            let bytes: usize = r.kvs().iter().map(|kv| kv.key().len() + kv.value().len()).sum();
            Ok((bytes as u64, r.kvs().len()))
        }
        None => {
            let resp = http.get(list_url).header("Accept", "application/json").send().await?;
            let status = resp.status();
            let body = resp.bytes().await?;
            if status.as_u16() != 200 {
                bail!("list: HTTP {status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)]));
            }
            let items = if verify {
                let v: serde_json::Value = serde_json::from_slice(&body)?;
                v["items"].as_array().map(|a| a.len()).unwrap_or(0)
            } else {
                0
            };
            Ok((body.len() as u64, items))
        }
    }
}

async fn list_scenario(t: &Target, args: &Args) -> Result<Vec<ListResult>> {
    let n = args.list_objects;
    let size = args.list_value_size;
    let sys_name = if t.sys == Sys::Kuorum { "kuorum" } else { "etcd" };
    eprintln!("\n== list {sys_name}: creating {n} objects of {size} B");
    let prefix = if t.sys == Sys::Kuorum { "l-".to_string() } else { "/bench/l/".to_string() };
    let fill_s = fill(t, &prefix, n, size).await?;
    eprintln!("  created in {fill_s:.1} s ({:.0}/s)", n as f64 / fill_s);
    tokio::time::sleep(Duration::from_secs(1)).await;

    let mut out = Vec::new();
    for (ti, role) in [(0usize, "leader"), (1usize, "follower")] {
        let url = &t.urls[ti];
        let http = http_client(Duration::from_secs(120))?;
        let mut etcd = match t.sys {
            Sys::Etcd => Some(etcd_connect(url).await?.kv_client().max_decoding_message_size(1 << 30)),
            Sys::Kuorum => None,
        };
        let list_url = format!("{url}/api/v1/namespaces/default/configmaps");
        let (bytes, items) = list_once(&http, &list_url, etcd.as_mut(), &prefix, true).await?;
        if items < n {
            bail!("{sys_name} {role} listed {items} items, expected {n}");
        }
        let rss_before: Vec<u64> = t.pids.iter().map(|&p| proc_status_kb(p, "VmRSS:")).collect();
        let peak = PeakRss::start(&t.pids);
        let cpu0 = t.pids().map(cpu_seconds);
        let mut ms = Vec::with_capacity(args.list_reps);
        for _ in 0..args.list_reps {
            let t0 = Instant::now();
            list_once(&http, &list_url, etcd.as_mut(), &prefix, false).await?;
            ms.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
        let cpu1 = t.pids().map(cpu_seconds);
        let (peaks, method) = peak.finish();
        let mean = ms.iter().sum::<f64>() / ms.len().max(1) as f64;
        ms.sort_by(|a, b| a.total_cmp(b));
        let mb = |kb: u64| kb as f64 / 1024.0;
        let have = !t.pids.is_empty() && peaks.len() == t.pids.len();
        let r = ListResult {
            system: sys_name.into(),
            workload: if t.sys == Sys::Kuorum {
                "GET configmaps (no RV: consistent)".into()
            } else {
                "range with prefix (linearizable)".into()
            },
            target: role.into(),
            objects: n,
            value_size: size,
            fill_s,
            fill_per_sec: n as f64 / fill_s,
            reps: ms.len(),
            bytes,
            p50_ms: pct_f(&ms, 50.0),
            p99_ms: pct_f(&ms, 99.0),
            min_ms: ms.first().copied().unwrap_or(0.0),
            max_ms: ms.last().copied().unwrap_or(0.0),
            mean_ms: mean,
            server_cpu_ms_per_list: cpu0.zip(cpu1).map(|(a, b)| (b - a) * 1000.0 / ms.len().max(1) as f64),
            rss_before_mb: have.then(|| mb(rss_before.iter().sum())),
            peak_rss_mb: have.then(|| mb(peaks.iter().sum())),
            target_rss_before_mb: have.then(|| mb(rss_before[ti])),
            target_peak_rss_mb: have.then(|| mb(peaks[ti])),
            peak_method: method.into(),
        };
        eprintln!(
            "  {role}: {:.1} MB per list, p50 {:.1} ms, p99 {:.1} ms, min {:.1}, max {:.1}; server CPU {:.0} ms/list; RSS (all) {:.0} -> peak {:.0} MB, listed node {:.0} -> {:.0} MB ({method})",
            bytes as f64 / 1e6,
            r.p50_ms,
            r.p99_ms,
            r.min_ms,
            r.max_ms,
            r.server_cpu_ms_per_list.unwrap_or(0.0),
            r.rss_before_mb.unwrap_or(0.0),
            r.peak_rss_mb.unwrap_or(0.0),
            r.target_rss_before_mb.unwrap_or(0.0),
            r.target_peak_rss_mb.unwrap_or(0.0)
        );
        out.push(r);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// RV=0 / serializable reads spread over 1..3 nodes
// ---------------------------------------------------------------------------------------

async fn reads_scenario(t: &Target, args: &Args) -> Result<Vec<RunResult>> {
    let n = args.read_objects.max(1);
    let prefix = if t.sys == Sys::Kuorum { "r-".to_string() } else { "/bench/r/".to_string() };
    fill(t, &prefix, n, 1024).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut out = Vec::new();
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

async fn read_spreads(
    t: &Target,
    args: &Args,
    prefix: &str,
    n: usize,
    cap_cores: f64,
    cap: Option<&CpuCap>,
) -> Result<Vec<RunResult>> {
    let sys_name = if t.sys == Sys::Kuorum { "kuorum" } else { "etcd" };
    let prefix = prefix.to_string();
    let mut out = Vec::new();
    for &spread in &args.read_spread {
        let spread = spread.clamp(1, t.urls.len());
        let throttled_before = cap.map(|c| c.throttled_s());
        let mut workers = Vec::new();
        for i in 0..args.read_clients {
            let url = &t.urls[i % spread];
            let rng = 0x9E37_79B9_7F4A_7C15u64 ^ ((i as u64 + 1) * 0x1234_5678_9ABC_DEF1);
            workers.push(match t.sys {
                Sys::Kuorum => Worker::KuorumRead {
                    http: reqwest::Client::builder()
                        .timeout(Duration::from_secs(10))
                        .pool_max_idle_per_host(1)
                        .tcp_nodelay(true)
                        .build()?,
                    url: format!("{url}/api/v1/namespaces/default/configmaps"),
                    prefix: prefix.clone(),
                    n: n as u64,
                    rng,
                },
                Sys::Etcd => {
                    Worker::EtcdRead { client: etcd_connect(url).await?, prefix: prefix.clone(), n: n as u64, rng }
                }
            });
        }
        let ctx = Ctx { pids: t.pids(), idle_cores: None, client0_target: Some("leader".into()) };
        let workload = if t.sys == Sys::Kuorum { "GET RV=0 (REST)" } else { "serializable get (gRPC)" };
        let mut r = drive(sys_name, workload, workers, 1.0, args.read_duration, 1024, &ctx).await?;
        r.nodes = Some(spread);
        r.node_cores_cap = cap.map(|_| cap_cores);
        r.throttled_s = cap.zip(throttled_before).map(|(c, b)| c.throttled_s() - b);
        out.push(r);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Reporting
// ---------------------------------------------------------------------------------------

pub(crate) fn print_markdown(report: &Report) {
    let f1 = |x: Option<f64>| x.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into());
    let f2 = |x: Option<f64>| x.map(|v| format!("{v:.2}")).unwrap_or_else(|| "-".into());
    if !report.watch.is_empty() {
        println!("\n#### Watch fan-out\n");
        println!("| system | watchers | writes/s | write p50/p99 ms | events/s | received/expected | delivery p50 ms | p99 ms | p99.9 ms | max ms | failed streams | server cores | server CPU s / 1M events (marginal) | client cores | RSS idle→connected→loaded MB | RSS KiB/watcher connected / loaded |");
        println!("|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|---|");
        for r in &report.watch {
            println!(
                "| {} | {} | {:.0} | {:.2} / {:.2} | {:.0} | {} / {} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} | {} ({}) | {:.2} | {} → {} → {} | {} / {} |",
                r.system,
                r.watchers,
                r.writes_per_sec,
                r.write_p50_ms,
                r.write_p99_ms,
                r.events_per_sec,
                r.events_received,
                r.events_expected,
                r.p50_ms,
                r.p99_ms,
                r.p999_ms,
                r.max_ms,
                r.streams_failed,
                f2(r.server_cpu_cores),
                f1(r.server_cpu_s_per_m_events),
                f1(r.server_cpu_s_per_m_events_marginal),
                r.client_cpu_cores,
                f1(r.rss_idle_mb),
                f1(r.rss_connected_mb),
                f1(r.rss_loaded_mb),
                f1(r.rss_kb_per_watcher_connected),
                f1(r.rss_kb_per_watcher_loaded),
            );
        }
    }
    if !report.lists.is_empty() {
        println!("\n#### Consistent LIST\n");
        println!("| system | workload | target | objects × bytes | MB/response | p50 ms | p99 ms | min ms | max ms | server CPU ms/list | RSS all nodes before → peak MB | listed node before → peak MB | fill creates/s |");
        println!("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|");
        for r in &report.lists {
            println!(
                "| {} | {} | {} | {} × {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} → {} | {} → {} | {:.0} |",
                r.system,
                r.workload,
                r.target,
                r.objects,
                r.value_size,
                r.bytes as f64 / 1e6,
                r.p50_ms,
                r.p99_ms,
                r.min_ms,
                r.max_ms,
                r.server_cpu_ms_per_list.map(|v| format!("{v:.0}")).unwrap_or_else(|| "-".into()),
                f1(r.rss_before_mb),
                f1(r.peak_rss_mb),
                f1(r.target_rss_before_mb),
                f1(r.target_peak_rss_mb),
                r.fill_per_sec
            );
        }
        if let Some(r) = report.lists.first() {
            println!("\n(peak RSS method: {}; {} lists per target after one unrecorded)", r.peak_method, r.reps);
        }
    }
    if !report.reads.is_empty() {
        println!("\n#### Reads spread over nodes\n");
        println!("| system | workload | CPU cap per node | clients | nodes | reads/s | vs 1 node | p50 ms | p99 ms | errors | server cores | client cores | server CPU µs/read | throttled s |");
        println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        let cap_key = |r: &RunResult| format!("{}/{:?}", r.system, r.node_cores_cap);
        let mut one: HashMap<String, f64> = HashMap::new();
        for r in &report.reads {
            if r.nodes == Some(1) {
                one.insert(cap_key(r), r.ops_per_sec);
            }
        }
        for r in &report.reads {
            let ratio =
                one.get(&cap_key(r)).map(|b| format!("{:.2}×", r.ops_per_sec / b)).unwrap_or_else(|| "-".into());
            println!(
                "| {} | {} | {} | {} | {} | {:.0} | {} | {:.2} | {:.2} | {} | {} | {:.2} | {} | {} |",
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
                r.server_cpu_ms_per_op.map(|v| format!("{:.0}", v * 1000.0)).unwrap_or_else(|| "-".into()),
                f2(r.throttled_s)
            );
        }
    }
}
