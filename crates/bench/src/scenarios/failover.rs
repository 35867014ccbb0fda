//! `failover`: the leader killed under load.
//!
//! `--failover-clients` (64) closed-loop clients create 1 KiB objects under fresh names,
//! spread round-robin over the three nodes/members. A watcher on a follower watches them
//! from the start. After `--failover-before` seconds the leader's process is killed with
//! SIGKILL; the clients carry on for `--failover-after` seconds. A client whose request
//! fails or times out (5 s) moves to the next node and goes on with a new name.
//!
//! The watcher (kuorum: `?watch=true&resourceVersion=RV`; etcd: `Watch` from a revision)
//! resumes from the last version it saw on the next surviving node if its stream breaks.
//! At the end it must have seen every acknowledged create exactly once (no gap, no
//! duplicate); creates that failed for the client but committed anyway may show up too
//! ("unacknowledged but seen").
//!
//! With `--failover-deletes` each client deletes every object it created right after
//! creating it (on the same node); the watcher then also counts DELETED events, and a
//! delete answered "outcome unknown" is counted like a create (committed if the watcher
//! saw the object deleted).
//!
//! Reported: time from the kill to the first successful create that was sent after it,
//! creates/s before and after, errors, the watcher's gaps/duplicates/resumes, the servers'
//! CPU per 1,000 creates and each server's peak RSS (the killed leader's just before).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use super::*;

#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct FailoverResult {
    pub system: String,
    pub clients: usize,
    pub before_s: f64,
    pub after_s: f64,
    /// Creates acknowledged before and after the kill, per second.
    pub creates_per_sec_before: f64,
    pub creates_per_sec_after: f64,
    pub acked: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// From the kill to the first acknowledged create sent after it.
    pub kill_to_first_write_ms: Option<f64>,
    /// The longest stretch with no create acknowledged, around the kill.
    pub longest_gap_ms: f64,
    /// The watcher: acknowledged creates it never saw (gaps), names it saw more than once,
    /// creates it saw that were not acknowledged, times it resumed on another node.
    pub watch_missing: u64,
    pub watch_duplicates: u64,
    pub watch_unacked_seen: u64,
    pub watch_resumes: u64,
    /// Creates a live server answered with "outcome unknown" (kuorum's 504, etcd's
    /// "request timed out"), and how many of those the watcher saw committed: the
    /// goal is none committed.
    #[serde(default)]
    pub unknown_answers: u64,
    #[serde(default)]
    pub unknown_answers_committed: u64,
    /// With `--failover-deletes`: deletes acknowledged, acknowledged deletes the watcher
    /// never saw, deletes answered "outcome unknown" and how many of those committed.
    #[serde(default)]
    pub deletes: bool,
    #[serde(default)]
    pub deletes_acked: u64,
    #[serde(default)]
    pub watch_deletes_missing: u64,
    #[serde(default)]
    pub delete_unknown_answers: u64,
    #[serde(default)]
    pub delete_unknown_answers_committed: u64,
    pub watch_error: Option<String>,
    pub server_cpu_s_per_1k_creates: Option<f64>,
    /// Each server process's peak RSS (leader first; the leader's read just before the kill).
    pub peak_rss_mb: Vec<f64>,
}

/// What the watcher saw: name → times, the last version, resumes, the first error.
#[derive(Default)]
struct WatchState {
    seen: HashMap<String, u32>,
    /// Name → DELETED events seen.
    deleted: HashMap<String, u32>,
    last_rv: i64,
    resumes: u64,
    error: Option<String>,
}

/// Follows `prefix` from `rv0` on `urls[0]`, resuming from the last seen version on the
/// next URL whenever the stream breaks; runs until aborted.
async fn watcher(sys: Sys, urls: Vec<String>, prefix: String, rv0: i64, st: Arc<Mutex<WatchState>>) {
    st.lock().unwrap().last_rv = rv0;
    let http = reqwest::Client::builder().tcp_nodelay(true).build().expect("http client");
    for attempt in 0usize.. {
        let url = &urls[attempt % urls.len()];
        let from = st.lock().unwrap().last_rv;
        if attempt > 0 {
            st.lock().unwrap().resumes += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let r: Result<()> = async {
            match sys {
                Sys::Kuorum => {
                    let mut resp = open_watch(
                        &http,
                        &format!(
                            "{url}/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={from}&timeoutSeconds=600"
                        ),
                    )
                    .await?;
                    let mut bad = None;
                    for_each_line(&mut resp, |line| {
                        let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else { return true };
                        if v["type"] == "ERROR" {
                            bad = Some(format!("watch ERROR event: {}", v["object"]));
                            return false;
                        }
                        let md = &v["object"]["metadata"];
                        let mut s = st.lock().unwrap();
                        if let Some(rv) = md["resourceVersion"].as_str().and_then(|r| r.parse().ok()) {
                            s.last_rv = rv;
                        }
                        if let Some(name) = md["name"].as_str().filter(|n| n.starts_with(&prefix)) {
                            if v["type"] == "ADDED" {
                                *s.seen.entry(name.to_string()).or_default() += 1;
                            } else if v["type"] == "DELETED" {
                                *s.deleted.entry(name.to_string()).or_default() += 1;
                            }
                        }
                        true
                    })
                    .await?;
                    match bad {
                        Some(e) => bail!(e),
                        None => bail!("watch stream on {url} ended"),
                    }
                }
                Sys::Etcd => {
                    let mut c = etcd_connect(url).await?;
                    let opts = etcd_client::WatchOptions::new().with_prefix().with_start_revision(from + 1);
                    let mut stream = c.watch(prefix.as_bytes().to_vec(), Some(opts)).await?;
                    while let Some(resp) = stream.message().await? {
                        if resp.canceled() {
                            bail!("etcd watch canceled: {}", resp.cancel_reason());
                        }
                        let mut s = st.lock().unwrap();
                        for ev in resp.events() {
                            let Some(kv) = ev.kv() else { continue };
                            s.last_rv = s.last_rv.max(kv.mod_revision());
                            if ev.event_type() == etcd_client::EventType::Delete {
                                *s.deleted.entry(String::from_utf8_lossy(kv.key()).into_owned()).or_default() += 1;
                            } else if kv.create_revision() == kv.mod_revision() {
                                *s.seen.entry(String::from_utf8_lossy(kv.key()).into_owned()).or_default() += 1;
                            }
                        }
                    }
                    bail!("etcd watch stream on {url} ended")
                }
            }
        }
        .await;
        if let Err(e) = r {
            eprintln!("  failover watcher: {e:#}; resuming from {} on the next node", st.lock().unwrap().last_rv);
            st.lock().unwrap().error.get_or_insert(format!("{e:#}"));
        }
    }
}

/// One client's record: (sent, acked) instants of acknowledged creates and their names.
#[derive(Default)]
struct ClientLog {
    acks: Vec<(Instant, Instant, String)>,
    errors: u64,
    /// Names answered "outcome unknown" by a server that was up.
    unknown: Vec<String>,
    /// Deletes: the names acknowledged, and those answered "outcome unknown".
    deleted: Vec<String>,
    unknown_deletes: Vec<String>,
    first_error: Option<String>,
}

impl ClientLog {
    /// Counts a failed request; answers whether a live server said its outcome is
    /// unknown (kuorum's 504, etcd's "request timed out").
    fn failed(&mut self, e: &anyhow::Error) -> bool {
        self.errors += 1;
        let text = format!("{e:#}");
        let unknown = text.contains("HTTP 504") || text.contains("request timed out");
        self.first_error.get_or_insert(text);
        unknown
    }
}

async fn kuorum_delete(http: &reqwest::Client, base: &str, name: &str) -> Result<()> {
    let resp = http.delete(format!("{base}/api/v1/namespaces/default/configmaps/{name}")).send().await?;
    expect_status(resp, 200, &format!("delete {name}: ")).await?;
    Ok(())
}

async fn client(sys: Sys, urls: Vec<String>, k: usize, prefix: String, end: Instant, deletes: bool) -> ClientLog {
    let mut log = ClientLog::default();
    let payload = "x".repeat(1024);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(1))
        .pool_max_idle_per_host(1)
        .tcp_nodelay(true)
        .build()
        .expect("http client");
    let mut etcd: Vec<Option<etcd_client::Client>> = vec![None; urls.len()];
    let mut node = k % urls.len();
    // The object this client created last, to delete next (with `deletes`).
    let mut to_delete: Option<String> = None;
    for i in 0u64.. {
        let t0 = Instant::now();
        if t0 >= end {
            break;
        }
        if let Some(name) = to_delete.take() {
            let r: Result<()> = tokio::time::timeout(Duration::from_secs(5), async {
                match sys {
                    Sys::Kuorum => kuorum_delete(&http, &urls[node], &name).await,
                    Sys::Etcd => {
                        let c = etcd[node].as_mut().ok_or_else(|| anyhow!("no client"))?;
                        c.delete(name.as_str(), None).await?;
                        Ok(())
                    }
                }
            })
            .await
            .unwrap_or_else(|_| Err(anyhow!("no reply within 5 s")));
            match r {
                Ok(()) => log.deleted.push(name),
                Err(e) => {
                    if log.failed(&e) {
                        log.unknown_deletes.push(name);
                    }
                    etcd[node] = None;
                    node = (node + 1) % urls.len();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            continue;
        }
        let name = format!("{prefix}{k}-{i}");
        let r: Result<()> = tokio::time::timeout(Duration::from_secs(5), async {
            match sys {
                Sys::Kuorum => kuorum_create(&http, &urls[node], &name, &payload).await,
                Sys::Etcd => {
                    if etcd[node].is_none() {
                        let opts = etcd_client::ConnectOptions::new()
                            .with_connect_timeout(Duration::from_secs(1))
                            .with_timeout(Duration::from_secs(5));
                        etcd[node] = Some(etcd_client::Client::connect([urls[node].as_str()], Some(opts)).await?);
                    }
                    let c = etcd[node].as_mut().ok_or_else(|| anyhow!("no client"))?;
                    c.put(name.as_str(), payload.as_bytes(), None).await?;
                    Ok(())
                }
            }
        })
        .await
        .unwrap_or_else(|_| Err(anyhow!("no reply within 5 s")));
        match r {
            Ok(()) => {
                log.acks.push((t0, Instant::now(), name.clone()));
                to_delete = deletes.then_some(name);
            }
            Err(e) => {
                if log.failed(&e) {
                    log.unknown.push(name.clone());
                }
                etcd[node] = None;
                node = (node + 1) % urls.len();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    log
}

pub(super) async fn failover_scenario(t: &Target, args: &Args) -> Result<Vec<FailoverResult>> {
    let sys = t.name();
    if t.pids().is_none() {
        bail!("failover needs clusters started here (it kills the leader's process)");
    }
    let prefix = t.prefix("fo");
    eprintln!(
        "\n== failover {sys}: {} clients creating, leader killed after {} s, then {} s more",
        args.failover_clients, args.failover_before, args.failover_after
    );
    // The watcher: on the first follower, then the second, then back.
    let rv0 = current_rv(t, &t.urls[1]).await?;
    let st = Arc::new(Mutex::new(WatchState::default()));
    let watch_urls = vec![t.urls[1].clone(), t.urls[2].clone()];
    let watch_task = tokio::spawn(watcher(t.sys, watch_urls, prefix.clone(), rv0, st.clone()));
    tokio::time::sleep(Duration::from_millis(300)).await;

    let pids = t.pids.clone();
    hwm_reset(&pids);
    let cpu0 = cpu_seconds(&pids);
    let start = Instant::now();
    let kill_at = start + Duration::from_secs_f64(args.failover_before);
    let end = kill_at + Duration::from_secs_f64(args.failover_after);
    let tasks: Vec<_> = (0..args.failover_clients)
        .map(|k| tokio::spawn(client(t.sys, t.urls.clone(), k, prefix.clone(), end, args.failover_deletes)))
        .collect();
    tokio::time::sleep_until(kill_at.into()).await;
    let leader_hwm = hwm_mb(&pids[..1]);
    // SIGKILL, as `kill -9`; the cluster's drop reaps it later.
    unsafe {
        libc::kill(pids[0] as libc::pid_t, libc::SIGKILL);
    }
    let killed = Instant::now();
    eprintln!("  killed the leader (pid {}) at t={:.1} s", pids[0], (killed - start).as_secs_f64());
    let mut tick = killed;
    while tick + Duration::from_secs(1) < end {
        tick += Duration::from_secs(1);
        tokio::time::sleep_until(tick.into()).await;
        eprintln!(
            "  t={:.0}s after the kill; watcher saw {}",
            (tick - killed).as_secs_f64(),
            st.lock().unwrap().seen.len()
        );
    }
    let mut logs = Vec::new();
    for h in tasks {
        logs.push(h.await?);
    }
    let cpu1 = cpu_seconds(&pids);
    let mut peak_rss_mb = leader_hwm;
    peak_rss_mb.extend(hwm_mb(&pids[1..]));

    let mut acks: Vec<(Instant, Instant, String)> = logs.iter_mut().flat_map(|l| l.acks.drain(..)).collect();
    acks.sort_by_key(|a| a.1);
    let errors: u64 = logs.iter().map(|l| l.errors).sum();
    let first_error = logs.iter().find_map(|l| l.first_error.clone());
    let kill_to_first = acks.iter().filter(|a| a.0 >= killed).map(|a| a.1 - killed).min();
    let mut longest_gap = Duration::ZERO;
    let mut prev = start;
    for a in &acks {
        longest_gap = longest_gap.max(a.1.saturating_duration_since(prev));
        prev = a.1;
    }
    longest_gap = longest_gap.max(end.saturating_duration_since(prev));
    let before = acks.iter().filter(|a| a.1 < killed).count();
    let after = acks.len() - before;

    // Give the watcher up to 15 s to see every acknowledged create.
    let wait_until = Instant::now() + Duration::from_secs(15);
    loop {
        let missing = acks.iter().filter(|a| !st.lock().unwrap().seen.contains_key(&a.2)).count();
        if missing == 0 || Instant::now() > wait_until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    watch_task.abort();
    let s = st.lock().unwrap();
    let acked_names: std::collections::HashSet<&str> = acks.iter().map(|a| a.2.as_str()).collect();
    let unknown: Vec<&String> = logs.iter().flat_map(|l| &l.unknown).collect();
    let deleted: Vec<&String> = logs.iter().flat_map(|l| &l.deleted).collect();
    let unknown_deletes: Vec<&String> = logs.iter().flat_map(|l| &l.unknown_deletes).collect();
    let r = FailoverResult {
        system: sys.into(),
        clients: args.failover_clients,
        before_s: (killed - start).as_secs_f64(),
        after_s: (end - killed).as_secs_f64(),
        creates_per_sec_before: before as f64 / (killed - start).as_secs_f64(),
        creates_per_sec_after: after as f64 / (end - killed).as_secs_f64(),
        acked: acks.len() as u64,
        errors,
        first_error,
        kill_to_first_write_ms: kill_to_first.map(|d| d.as_secs_f64() * 1000.0),
        longest_gap_ms: longest_gap.as_secs_f64() * 1000.0,
        watch_missing: acked_names.iter().filter(|n| !s.seen.contains_key(**n)).count() as u64,
        watch_duplicates: s.seen.values().filter(|&&c| c > 1).count() as u64,
        watch_unacked_seen: s.seen.keys().filter(|n| !acked_names.contains(n.as_str())).count() as u64,
        watch_resumes: s.resumes,
        unknown_answers: unknown.len() as u64,
        unknown_answers_committed: unknown.iter().filter(|n| s.seen.contains_key(n.as_str())).count() as u64,
        deletes: args.failover_deletes,
        deletes_acked: deleted.len() as u64,
        watch_deletes_missing: deleted.iter().filter(|n| !s.deleted.contains_key(n.as_str())).count() as u64,
        delete_unknown_answers: unknown_deletes.len() as u64,
        delete_unknown_answers_committed: unknown_deletes.iter().filter(|n| s.deleted.contains_key(n.as_str())).count()
            as u64,
        watch_error: s.error.clone(),
        server_cpu_s_per_1k_creates: per_1k(Some(cpu1 - cpu0), acks.len() as u64),
        peak_rss_mb,
    };
    eprintln!(
        "  => first create after the kill in {} ms, longest gap {:.0} ms; {:.0}/s before, {:.0}/s after; {} errors{}; watcher: {} missing, {} duplicates, {} unacked seen, {} resumes; {} answered unknown ({} of them committed)",
        f1(r.kill_to_first_write_ms),
        r.longest_gap_ms,
        r.creates_per_sec_before,
        r.creates_per_sec_after,
        r.errors,
        first_note(r.first_error.as_ref()),
        r.watch_missing,
        r.watch_duplicates,
        r.watch_unacked_seen,
        r.watch_resumes,
        r.unknown_answers,
        r.unknown_answers_committed
    );
    if r.deletes {
        eprintln!(
            "  => deletes: {} acknowledged, {} of them not seen by the watcher; {} answered unknown ({} of them committed)",
            r.deletes_acked, r.watch_deletes_missing, r.delete_unknown_answers, r.delete_unknown_answers_committed
        );
    }
    Ok(vec![r])
}

pub(crate) fn markdown(report: &Report) {
    if report.failover.is_empty() {
        return;
    }
    println!("\n#### Leader killed during creates\n");
    println!("| system | clients | creates/s before / after | kill → first create ms | longest gap ms | errors | answered unknown (committed) | acked | watch: missing | duplicates | unacked seen | resumes | server CPU s / 1k creates | peak RSS MB per server (leader first) |");
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &report.failover {
        println!(
            "| {} | {} | {:.0} / {:.0} | {} | {:.0} | {} | {} ({}) | {} | {} | {} | {} | {} | {} | {} |",
            r.system,
            r.clients,
            r.creates_per_sec_before,
            r.creates_per_sec_after,
            f1(r.kill_to_first_write_ms),
            r.longest_gap_ms,
            r.errors,
            r.unknown_answers,
            r.unknown_answers_committed,
            r.acked,
            r.watch_missing,
            r.watch_duplicates,
            r.watch_unacked_seen,
            r.watch_resumes,
            f2(r.server_cpu_s_per_1k_creates),
            mb_list(&r.peak_rss_mb)
        );
    }
    if report.failover.iter().any(|r| r.deletes) {
        println!("\n| system | deletes acked | watch: deletes missing | deletes answered unknown (committed) |");
        println!("|---|---:|---:|---:|");
        for r in report.failover.iter().filter(|r| r.deletes) {
            println!(
                "| {} | {} | {} | {} ({}) |",
                r.system,
                r.deletes_acked,
                r.watch_deletes_missing,
                r.delete_unknown_answers,
                r.delete_unknown_answers_committed
            );
        }
    }
    for r in &report.failover {
        if let Some(e) = &r.first_error {
            println!("\n- {}: first client error: {e}", r.system);
        }
        if let Some(e) = &r.watch_error {
            println!("- {}: watcher stream broke: {e}", r.system);
        }
    }
}
