//! `watch`: watch fan-out at a paced write rate.
//!
//! N watchers (`--watchers`; 0 = the writes alone, the CPU/RSS baseline) spread
//! round-robin over the three nodes/members, each its own stream (kuorum: a
//! `?watch=true&resourceVersion=RV` HTTP/1.1 connection per watcher, one JSON line per
//! event; etcd: a gRPC `Watch` on a key prefix, at most 100 per connection). Streams are
//! opened at most 256 at a time (10,000 at once would overflow the listen backlogs). A
//! paced, open-loop writer sends `--watch-rates` writes/s of 1 KiB to the leader and
//! records each write's send time by sequence number (the object name / key ends in it);
//! a watcher takes the latency send→receipt of every event (same process, same monotonic
//! clock), so it includes the write's own commit time (reported beside it). Levels whose
//! watchers × rate exceed `--watch-max-events` events/s are skipped.
//!
//! Reported per level: delivery p50/p99/p99.9, events received vs expected, failed
//! streams, server CPU per million events (total, and above the 0-watcher level), and RSS
//! (summed, idle → connected → loaded, plus each process's peak).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use memchr::memmem;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use super::*;

/// Every watcher level at every rate, on one cluster.
pub(super) fn run(target: &Target, args: &Args, rt: &tokio::runtime::Runtime, report: &mut Report) -> Result<()> {
    let mut level = 0;
    for &rate in &args.watch_rates {
        let mut base_cores: Option<f64> = None;
        let mut base_growth: Option<f64> = None;
        for &n in &args.watchers {
            level += 1;
            if n as f64 * rate > args.watch_max_events {
                eprintln!(
                    "\n== watch: skipping {n} watchers at {rate} writes/s ({:.0} events/s > --watch-max-events {})",
                    n as f64 * rate,
                    args.watch_max_events
                );
                continue;
            }
            let mut r = rt.block_on(watch_level(target, n, level, rate, args))?;
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
            // Let the servers drop the old streams (10,000 take a while).
            std::thread::sleep(Duration::from_millis(1000 + n as u64 / 5));
        }
    }
    Ok(())
}

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
    /// Each server process's peak RSS over the level (leader first), MB.
    #[serde(default)]
    pub peak_rss_mb: Vec<f64>,
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
    /// Counts a watcher whose stream failed (to start, or early) and keeps the first error.
    fn fail_on(&self, r: Result<()>) {
        if let Err(e) = r {
            self.failed.fetch_add(1, Ordering::Relaxed);
            self.first_error.lock().unwrap().get_or_insert(format!("{e:#}"));
        }
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
pub(super) fn seq_in_line(line: &[u8], finder: &memmem::Finder, prefix: &[u8]) -> Option<u64> {
    let head = &line[..line.len().min(1024)];
    let at = finder.find(head)? + finder.needle().len();
    let rest = line[at..].strip_prefix(prefix)?;
    let end = rest.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

async fn kuorum_watcher(
    http: reqwest::Client,
    url: String,
    prefix: String,
    sh: Arc<Shared>,
    connecting: Arc<Semaphore>,
) -> Tally {
    let mut tally = Tally::default();
    let r: Result<()> = async {
        let permit = connecting.acquire().await?;
        let mut resp = open_watch(&http, &url).await?;
        drop(permit);
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
    sh.fail_on(r);
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
            for seq in resp.events().iter().filter_map(|ev| seq_in_key(ev.kv()?.key(), pre)) {
                tally.event(&sh, seq, now);
            }
            sh.received.fetch_add(tally.seen - before, Ordering::Relaxed);
        }
        Ok(())
    }
    .await;
    sh.fail_on(r);
    tally
}

async fn watch_level(t: &Target, n: usize, level: usize, rate: f64, args: &Args) -> Result<WatchResult> {
    if !(rate > 0.0 && rate <= 20_000.0) {
        bail!("--watch-rate must be in (0, 20000]");
    }
    let warm_seq = (rate * args.watch_warmup).round() as u64;
    let total = warm_seq + (rate * args.watch_duration).round() as u64;
    let sys_name = t.name();
    eprintln!("\n== watch {sys_name}: {n} watchers, {rate} writes/s, {total} writes ({warm_seq} warmup)");
    // Names / keys of this level: kuorum `wl{level}-{seq}`, etcd `/bench/w/l{level}/{seq}`.
    let (name_prefix, key_prefix) = (format!("wl{level}-"), format!("/bench/w/l{level}/"));

    // Where the watches start: the current resourceVersion (etcd: the revision after it).
    let rv = current_rv(t, &t.urls[0]).await?;
    let (start_rv, etcd_clients) = match t.sys {
        Sys::Kuorum => (rv, vec![]),
        // Up to 100 watch streams per gRPC connection, connections spread over members.
        Sys::Etcd => (rv + 1, etcd_watch_conns(t, n).await?),
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

    t.hwm_reset();
    let rss_idle = t.rss_mb();
    let t_connect = Instant::now();
    let connecting = Arc::new(Semaphore::new(256));
    let mut watchers = Vec::new();
    let kuorum_http = watch_http_clients(t)?;
    for i in 0..n {
        let m = i % t.urls.len();
        let sh = sh.clone();
        match t.sys {
            Sys::Kuorum => {
                let url = format!(
                    "{}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={start_rv}&timeoutSeconds=600",
                    t.urls[m]
                );
                watchers.push(tokio::spawn(kuorum_watcher(
                    kuorum_http[m].clone(),
                    url,
                    name_prefix.clone(),
                    sh,
                    connecting.clone(),
                )));
            }
            Sys::Etcd => {
                let c = etcd_watch_conn(&etcd_clients, i);
                watchers.push(tokio::spawn(etcd_watcher(c, key_prefix.clone(), start_rv, sh)));
            }
        }
        if i % 100 == 99 {
            tokio::task::yield_now().await;
        }
    }
    let wait = Duration::from_secs(60 + n as u64 / 100);
    let deadline = Instant::now() + wait;
    let mut next_note = Instant::now() + Duration::from_secs(2);
    while sh.connected.load(Ordering::Relaxed) + (sh.failed.load(Ordering::Relaxed) as usize) < n {
        if Instant::now() > deadline {
            bail!("only {} of {n} watchers connected after {wait:?}", sh.connected.load(Ordering::Relaxed));
        }
        if Instant::now() > next_note {
            eprintln!("  {} of {n} watchers connected", sh.connected.load(Ordering::Relaxed));
            next_note += Duration::from_secs(2);
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
    let (cpu, rx0) = (CpuMark::now(t), sh.received.load(Ordering::Relaxed));
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
    let ((server_cpu, client_cpu), rx1) = (cpu.since(t), sh.received.load(Ordering::Relaxed));
    let rss_loaded = t.rss_mb();
    let peak_rss_mb = t.peak_rss_mb();
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
        client_cpu_cores: client_cpu / secs,
        rss_idle_mb: rss_idle,
        rss_connected_mb: rss_connected,
        rss_loaded_mb: rss_loaded,
        rss_kb_per_watcher_connected: per_watcher(rss_connected),
        rss_kb_per_watcher_loaded: per_watcher(rss_loaded),
        connect_s,
        peak_rss_mb,
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
        first_note(r.first_error.as_ref())
    );
    Ok(r)
}

pub(crate) fn markdown(report: &Report) {
    if !report.watch.is_empty() {
        println!("\n#### Watch fan-out\n");
        println!("| system | watchers | writes/s | write p50/p99 ms | events/s | received/expected | delivery p50 ms | p99 ms | p99.9 ms | max ms | failed streams | server cores | server CPU s / 1M events = ms / 1k (marginal) | client cores | RSS idle→connected→loaded MB | RSS KiB/watcher connected / loaded | peak RSS MB per server (leader first) |");
        println!("|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---|---|---|");
        for r in &report.watch {
            println!(
                "| {} | {} | {:.0} | {:.2} / {:.2} | {:.0} | {} / {} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} | {} ({}) | {:.2} | {} → {} → {} | {} / {} | {} |",
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
                mb_list(&r.peak_rss_mb),
            );
        }
    }
}
