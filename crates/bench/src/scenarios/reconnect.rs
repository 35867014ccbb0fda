//! `reconnect`: many watchers resuming at once from an old resourceVersion.
//!
//! The current resourceVersion (etcd: revision) is noted, then `--reconnect-behind`
//! (1,000) objects of 1 KiB are created through the leader. Then `--reconnect-watchers`
//! (1,000) watchers, spread round-robin over the nodes, all start at once from the noted
//! version (kuorum: `?watch=true&resourceVersion=RV`, served from the watch cache's event
//! window; etcd: `Watch` from revision+1, at most 100 streams per connection), as clients
//! do after a server restart or a network blip. Each must receive exactly the missed
//! creates, each once: a watcher is caught up when it has seen all of them.
//!
//! Reported: time from opening the streams until every watcher caught up, the per-watcher
//! catch-up p50/p99/max, events delivered, gaps (missed events) and duplicates, failed
//! streams, the servers' CPU per 1,000 events delivered and each server's peak RSS.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use memchr::memmem;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use super::watch::seq_in_line;
use super::*;

#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct ReconnectResult {
    pub system: String,
    pub watchers: usize,
    /// Writes between the resourceVersion the watchers start from and now.
    pub behind: usize,
    pub fill_s: f64,
    /// From opening the streams until every watcher had all `behind` events.
    pub all_caught_up_s: Option<f64>,
    /// Per watcher, from opening the streams until it had all events.
    pub catchup_p50_ms: f64,
    pub catchup_p99_ms: f64,
    pub catchup_max_ms: f64,
    pub watchers_caught_up: usize,
    pub events_expected: u64,
    pub events_received: u64,
    /// Missed events (expected but not received, over all watchers) and events received twice.
    pub gaps: u64,
    pub duplicates: u64,
    pub streams_failed: u64,
    pub first_error: Option<String>,
    pub server_cpu_s: Option<f64>,
    pub server_cpu_s_per_1k_events: Option<f64>,
    pub client_cpu_s: f64,
    /// Each server process's peak RSS while the watchers caught up (leader first), MB.
    pub peak_rss_mb: Vec<f64>,
}

/// One watcher's view of the missed writes.
#[derive(Default)]
struct Seen {
    got: Vec<bool>,
    distinct: u64,
    received: u64,
    duplicates: u64,
    caught_up: Option<Duration>,
    error: Option<String>,
}

impl Seen {
    fn new(n: usize) -> Seen {
        Seen { got: vec![false; n], ..Default::default() }
    }
    /// Records sequence number `seq`; answers whether all have been seen.
    fn event(&mut self, seq: u64, since: Instant) -> bool {
        let Some(slot) = self.got.get_mut(seq as usize) else { return false };
        self.received += 1;
        if *slot {
            self.duplicates += 1;
        } else {
            *slot = true;
            self.distinct += 1;
        }
        if self.distinct == self.got.len() as u64 && self.caught_up.is_none() {
            self.caught_up = Some(since.elapsed());
        }
        self.caught_up.is_some()
    }

    /// Notes how the watcher's run within the deadline ended.
    fn settle(mut self, r: Result<Result<()>, tokio::time::error::Elapsed>, deadline: Duration) -> Seen {
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.error = Some(format!("{e:#}")),
            Err(_) => self.error = Some(format!("not caught up after {deadline:?}")),
        }
        self
    }
}

pub(super) async fn reconnect_scenario(t: &Target, args: &Args) -> Result<Vec<ReconnectResult>> {
    let (w, n) = (args.reconnect_watchers, args.reconnect_behind.max(1));
    let sys = t.name();
    eprintln!("\n== reconnect {sys}: {w} watchers from a resourceVersion {n} writes old");
    let rv0 = current_rv(t, &t.urls[0]).await?;
    let (name_prefix, key_prefix) = ("rc-".to_string(), "/bench/rc/".to_string());
    let prefix = if t.sys == Sys::Kuorum { &name_prefix } else { &key_prefix };
    let fill_s = fill(t, prefix, n, 1024).await?;
    eprintln!("  {n} writes in {fill_s:.1} s; opening {w} watchers from {rv0}");
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Connections first (etcd: up to 100 streams each), so that the streams start together.
    let kuorum_http = watch_http_clients(t)?;
    let etcd_conns = if t.sys == Sys::Etcd { etcd_watch_conns(t, w).await? } else { vec![] };
    t.hwm_reset();
    let cpu = CpuMark::now(t);
    let deadline = Duration::from_secs(60 + w as u64 / 50);
    let connecting = Arc::new(Semaphore::new(256));
    let t_open = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..w {
        let m = i % t.urls.len();
        let mut seen = Seen::new(n);
        match t.sys {
            Sys::Kuorum => {
                let http = kuorum_http[m].clone();
                let url = format!(
                    "{}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv0}&timeoutSeconds=300",
                    t.urls[m]
                );
                let pre = name_prefix.clone();
                let connecting = connecting.clone();
                tasks.push(tokio::spawn(async move {
                    let r = tokio::time::timeout(deadline, async {
                        let permit = connecting.acquire().await?;
                        let mut resp = open_watch(&http, &url).await?;
                        drop(permit);
                        let finder = memmem::Finder::new(br#""name":""#);
                        let done = for_each_line(&mut resp, |line| match seq_in_line(line, &finder, pre.as_bytes()) {
                            Some(seq) => !seen.event(seq, t_open),
                            None => true,
                        })
                        .await?;
                        if !done {
                            bail!("watch stream ended after {} of {n} events", seen.distinct);
                        }
                        Ok(())
                    })
                    .await;
                    seen.settle(r, deadline)
                }));
            }
            Sys::Etcd => {
                let mut c = etcd_watch_conn(&etcd_conns, i);
                let pre = key_prefix.clone();
                tasks.push(tokio::spawn(async move {
                    let r = tokio::time::timeout(deadline, async {
                        let opts = etcd_client::WatchOptions::new().with_prefix().with_start_revision(rv0 + 1);
                        let mut stream = c.watch(pre.as_bytes().to_vec(), Some(opts)).await?;
                        while let Some(resp) = stream.message().await? {
                            if resp.canceled() {
                                bail!("etcd watch canceled after {} of {n} events", seen.distinct);
                            }
                            for seq in resp.events().iter().filter_map(|ev| seq_in_key(ev.kv()?.key(), pre.as_bytes()))
                            {
                                seen.event(seq, t_open);
                            }
                            if seen.caught_up.is_some() {
                                return Ok(());
                            }
                        }
                        bail!("etcd watch stream ended after {} of {n} events", seen.distinct)
                    })
                    .await;
                    seen.settle(r, deadline)
                }));
            }
        }
    }
    let mut results = Vec::with_capacity(w);
    let mut last_note = Instant::now();
    for (k, h) in tasks.into_iter().enumerate() {
        results.push(h.await?);
        if last_note.elapsed() > Duration::from_secs(1) {
            eprintln!("  {k} of {w} watchers done after {:.1} s", t_open.elapsed().as_secs_f64());
            last_note = Instant::now();
        }
    }
    let (server_cpu, client_cpu) = cpu.since(t);
    let peak_rss_mb = t.peak_rss_mb();
    drop(etcd_conns);
    drop(kuorum_http);

    let mut catchup: Vec<u32> =
        results.iter().filter_map(|s| s.caught_up.map(|d| d.as_micros().min(u32::MAX as u128) as u32)).collect();
    catchup.sort_unstable();
    let received: u64 = results.iter().map(|s| s.received).sum();
    let distinct: u64 = results.iter().map(|s| s.distinct).sum();
    let failed = results.iter().filter(|s| s.error.is_some()).count() as u64;
    let all = catchup.len() == w;
    let r = ReconnectResult {
        system: sys.into(),
        watchers: w,
        behind: n,
        fill_s,
        all_caught_up_s: all.then(|| catchup.last().map(|&us| us as f64 / 1e6).unwrap_or(0.0)),
        catchup_p50_ms: pct_ms(&catchup, 50.0),
        catchup_p99_ms: pct_ms(&catchup, 99.0),
        catchup_max_ms: catchup.last().map(|&us| us as f64 / 1000.0).unwrap_or(0.0),
        watchers_caught_up: catchup.len(),
        events_expected: (w * n) as u64,
        events_received: received,
        gaps: (w * n) as u64 - distinct,
        duplicates: results.iter().map(|s| s.duplicates).sum(),
        streams_failed: failed,
        first_error: results.iter().find_map(|s| s.error.clone()),
        server_cpu_s: server_cpu,
        server_cpu_s_per_1k_events: per_1k(server_cpu, received),
        client_cpu_s: client_cpu,
        peak_rss_mb,
    };
    eprintln!(
        "  => {} of {w} caught up, all in {}; per watcher p50 {:.0} ms p99 {:.0} ms; {received} of {} events, {} gaps, {} duplicates, {failed} failed{}; server CPU {:.2} s ({} s/1k events)",
        r.watchers_caught_up,
        r.all_caught_up_s.map(|s| format!("{s:.2} s")).unwrap_or_else(|| "-".into()),
        r.catchup_p50_ms,
        r.catchup_p99_ms,
        r.events_expected,
        r.gaps,
        r.duplicates,
        first_note(r.first_error.as_ref()),
        server_cpu.unwrap_or(0.0),
        f3(r.server_cpu_s_per_1k_events),
    );
    Ok(vec![r])
}

pub(crate) fn markdown(report: &Report) {
    if report.reconnect.is_empty() {
        return;
    }
    println!("\n#### Watchers reconnecting at once from an old resourceVersion\n");
    println!("| system | watchers | writes behind | all caught up s | per watcher p50 ms | p99 ms | max ms | caught up | events received / expected | gaps | duplicates | failed streams | server CPU s | server CPU s / 1k events | client CPU s | peak RSS MB per server (leader first) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|");
    for r in &report.reconnect {
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {} | {} / {} | {} | {} | {} | {} | {} | {:.2} | {} |",
            r.system,
            r.watchers,
            r.behind,
            f2(r.all_caught_up_s),
            r.catchup_p50_ms,
            r.catchup_p99_ms,
            r.catchup_max_ms,
            r.watchers_caught_up,
            r.events_received,
            r.events_expected,
            r.gaps,
            r.duplicates,
            r.streams_failed,
            f2(r.server_cpu_s),
            f3(r.server_cpu_s_per_1k_events),
            r.client_cpu_s,
            mb_list(&r.peak_rss_mb)
        );
    }
    if let Some(e) = report.reconnect.iter().find_map(|r| r.first_error.as_ref()) {
        println!("\nFirst stream error: {e}");
    }
}
