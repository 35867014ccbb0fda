//! `list`: consistent LIST of many objects, whole and paged.
//!
//! For each `--list-objects` level (10,000 then 100,000 by default; the objects of one
//! level stay for the next, so only the difference is created), objects of
//! `--list-value-size` (2 KiB) bytes are created through the leader by 64 writers. Then,
//! on the leader and on a follower, `--list-reps` lists (fewer for more objects, at
//! least 3) after one unrecorded one that also checks the count:
//!
//! - whole: kuorum `GET .../configmaps` (no resourceVersion: consistent); etcd a
//!   linearizable `Range` over the prefix.
//! - paged by `--list-page-size` (500): kuorum `?limit=500` then `&continue=TOKEN` until
//!   no token is left (later pages are served at the first page's resourceVersion); etcd
//!   `Range` with limit 500 from the last key + "\0", the first page linearizable and the
//!   rest at its revision (what kube-apiserver does for a paged LIST).
//!
//! The latency is the whole list's (all pages). Reported with the servers' CPU per list
//! and peak RSS (VmHWM reset before the lists; the listed node's and every process's).

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use memchr::memmem;
use serde::{Deserialize, Serialize};

use super::*;

#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct ListResult {
    pub system: String,
    pub workload: String,
    /// leader or follower
    pub target: String,
    pub objects: usize,
    pub value_size: usize,
    /// Seconds to create the objects of this level (64 concurrent writers), and their rate.
    pub fill_s: f64,
    pub fill_per_sec: f64,
    pub reps: usize,
    /// Page size (limit) of a paged list; None: one request.
    #[serde(default)]
    pub page_size: Option<usize>,
    /// Requests per list.
    #[serde(default)]
    pub pages: u64,
    /// Bytes of one whole list (kuorum: JSON bodies; etcd: keys + values).
    pub bytes: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
    /// Servers' CPU ms per list (all nodes) = CPU s per 1,000 lists.
    pub server_cpu_ms_per_list: Option<f64>,
    /// Summed RSS of all servers before the lists, and the sum of their peaks during them.
    pub rss_before_mb: Option<f64>,
    pub peak_rss_mb: Option<f64>,
    /// The listed node's own RSS before and peak.
    pub target_rss_before_mb: Option<f64>,
    pub target_peak_rss_mb: Option<f64>,
    /// Each server process's peak RSS during the lists (leader first).
    #[serde(default)]
    pub process_peak_rss_mb: Vec<f64>,
    /// Whether the peak is a true high-water mark (clear_refs worked) or RSS sampled every 5 ms.
    pub peak_method: String,
}

/// One list, whole (`page` None) or paged: (bytes, requests, items counted).
pub(super) async fn list_once(
    http: &reqwest::Client,
    list_url: &str,
    etcd: Option<&mut etcd_client::KvClient>,
    prefix: &str,
    page: Option<usize>,
) -> Result<(u64, u64, usize)> {
    match etcd {
        Some(c) => {
            let end = prefix_end(prefix.as_bytes());
            let (mut bytes, mut pages, mut items) = (0u64, 0u64, 0usize);
            let mut from = prefix.as_bytes().to_vec();
            let mut rev = 0i64;
            loop {
                let mut opts = etcd_client::GetOptions::new().with_range(end.clone());
                if let Some(p) = page {
                    opts = opts.with_limit(p as i64);
                }
                if rev > 0 {
                    opts = opts.with_revision(rev);
                }
                let r = c.get(from.clone(), Some(opts)).await?;
                pages += 1;
                bytes += r.kvs().iter().map(|kv| (kv.key().len() + kv.value().len()) as u64).sum::<u64>();
                items += r.kvs().len();
                if rev == 0 {
                    rev = r.header().map(|h| h.revision()).unwrap_or(0);
                }
                match r.kvs().last() {
                    Some(last) if r.more() && page.is_some() => {
                        from = last.key().to_vec();
                        from.push(0);
                    }
                    _ => return Ok((bytes, pages, items)),
                }
            }
        }
        None => {
            let finder = memmem::Finder::new(br#""name":""#);
            let cont = memmem::Finder::new(br#""continue":""#);
            let (mut bytes, mut pages, mut items) = (0u64, 0u64, 0usize);
            let mut token: Option<String> = None;
            loop {
                let url = match (page, &token) {
                    (None, _) => list_url.to_string(),
                    (Some(p), None) => format!("{list_url}?limit={p}"),
                    (Some(p), Some(t)) => format!("{list_url}?limit={p}&continue={}", url_escape(t)),
                };
                let resp = http.get(url).header("Accept", "application/json").send().await?;
                let body = expect_status(resp, 200, "list: ").await?;
                pages += 1;
                bytes += body.len() as u64;
                // Item names start with the prefix; the list's own metadata comes first.
                items += finder.find_iter(&body).filter(|&i| body[i + 8..].starts_with(prefix.as_bytes())).count();
                let head = &body[..body.len().min(2048)];
                token = cont.find(head).and_then(|i| {
                    let rest = &head[i + 12..];
                    let end = memchr::memchr(b'"', rest)?;
                    (end > 0).then(|| String::from_utf8_lossy(&rest[..end]).into_owned())
                });
                if page.is_none() || token.is_none() {
                    return Ok((bytes, pages, items));
                }
            }
        }
    }
}

/// Percent-encodes everything but unreserved characters (continue tokens are base64).
fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The end of etcd's prefix range: the prefix with its last byte incremented.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

pub(super) async fn list_scenario(t: &Target, args: &Args) -> Result<Vec<ListResult>> {
    let size = args.list_value_size;
    let sys_name = t.name();
    let prefix = t.prefix("l");
    let mut out = Vec::new();
    let mut have = 0;
    for &n in &args.list_objects {
        if n < have {
            bail!("--list-objects must grow: {n} after {have}");
        }
        eprintln!("\n== list {sys_name}: creating objects {have}..{n} of {size} B");
        let fill_s = fill_range(t, &prefix, have, n, size).await?.max(1e-9);
        let fill_per_sec = (n - have) as f64 / fill_s;
        eprintln!("  created in {fill_s:.1} s ({fill_per_sec:.0}/s)");
        have = n;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let idle_s = t.wait_idle(Duration::from_secs(30)).await;
        eprintln!("  servers quiet after {:.1} s more", idle_s);
        let reps = (args.list_reps * 10_000 / n.max(1)).clamp(3, args.list_reps.max(3));
        // Unrecorded lists first (the first also counts the items): a fresh client's first
        // lists of 24 MB run slower, a penalty that fell on whichever target came first.
        let warmup = (reps / 4).max(1);
        let pagings: Vec<Option<usize>> =
            if args.list_page_size > 0 { vec![None, Some(args.list_page_size)] } else { vec![None] };
        for page in pagings {
            for (ti, role) in [(0usize, "leader"), (1usize, "follower")] {
                let mut r = list_target(t, &prefix, n, page, (warmup, reps), ti, role).await?;
                r.value_size = size;
                r.fill_s = fill_s;
                r.fill_per_sec = fill_per_sec;
                out.push(r);
            }
        }
    }
    Ok(out)
}

async fn list_target(
    t: &Target,
    prefix: &str,
    n: usize,
    page: Option<usize>,
    (warmup, reps): (usize, usize),
    ti: usize,
    role: &str,
) -> Result<ListResult> {
    let sys_name = t.name();
    let url = &t.urls[ti];
    let http = http_client(Duration::from_secs(300))?;
    let mut etcd = match t.sys {
        Sys::Etcd => Some(etcd_connect(url).await?.kv_client().max_decoding_message_size(usize::MAX)),
        Sys::Kuorum => None,
    };
    let list_url = format!("{url}/api/v1/namespaces/default/configmaps");
    let (bytes, pages, items) = list_once(&http, &list_url, etcd.as_mut(), prefix, page).await?;
    if items != n {
        bail!("{sys_name} {role} listed {items} items (page size {page:?}), expected {n}");
    }
    for _ in 1..warmup {
        list_once(&http, &list_url, etcd.as_mut(), prefix, page).await?;
    }
    let rss_before: Vec<u64> = t.pids.iter().map(|&p| proc_status_kb(p, "VmRSS:")).collect();
    let peak = PeakRss::start(&t.pids);
    let cpu0 = t.pids().map(cpu_seconds);
    let mut ms = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = Instant::now();
        list_once(&http, &list_url, etcd.as_mut(), prefix, page).await?;
        ms.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    let cpu1 = t.pids().map(cpu_seconds);
    let (peaks, method) = peak.finish();
    let mean = ms.iter().sum::<f64>() / ms.len().max(1) as f64;
    ms.sort_by(|a, b| a.total_cmp(b));
    let mb = |kb: u64| kb as f64 / 1024.0;
    let have = !t.pids.is_empty() && peaks.len() == t.pids.len();
    let paged = page.map(|p| format!(", paged by {p}")).unwrap_or_default();
    let r = ListResult {
        system: sys_name.into(),
        workload: if t.sys == Sys::Kuorum {
            format!("GET configmaps (no RV: consistent{paged})")
        } else {
            format!("range with prefix (linearizable{paged})")
        },
        target: role.into(),
        objects: n,
        value_size: 0,
        fill_s: 0.0,
        fill_per_sec: 0.0,
        reps: ms.len(),
        page_size: page,
        pages,
        bytes,
        p50_ms: pct(&ms, 50.0),
        p99_ms: pct(&ms, 99.0),
        min_ms: ms.first().copied().unwrap_or(0.0),
        max_ms: ms.last().copied().unwrap_or(0.0),
        mean_ms: mean,
        server_cpu_ms_per_list: cpu0.zip(cpu1).map(|(a, b)| (b - a) * 1000.0 / ms.len().max(1) as f64),
        rss_before_mb: have.then(|| mb(rss_before.iter().sum())),
        peak_rss_mb: have.then(|| mb(peaks.iter().sum())),
        target_rss_before_mb: have.then(|| mb(rss_before[ti])),
        target_peak_rss_mb: have.then(|| mb(peaks[ti])),
        process_peak_rss_mb: if have { peaks.iter().map(|&k| mb(k)).collect() } else { vec![] },
        peak_method: method.into(),
    };
    eprintln!(
        "  {n} objects, {role}{paged}: {:.1} MB in {pages} request(s), p50 {:.1} ms, p99 {:.1} ms, min {:.1}, max {:.1}; server CPU {:.0} ms/list; RSS (all) {:.0} -> peak {:.0} MB, listed node {:.0} -> {:.0} MB ({method})",
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
    Ok(r)
}

pub(crate) fn markdown(report: &Report) {
    if !report.lists.is_empty() {
        println!("\n#### Consistent LIST\n");
        println!("| system | workload | target | objects × bytes | MB/response | p50 ms | p99 ms | min ms | max ms | server CPU s / 1k lists | RSS all nodes before → peak MB | listed node before → peak MB | peak RSS MB per server (leader first) | fill creates/s |");
        println!("|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---|---:|");
        for r in &report.lists {
            println!(
                "| {} | {} | {} | {} × {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} → {} | {} → {} | {} | {:.0} |",
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
                f0(r.server_cpu_ms_per_list),
                f1(r.rss_before_mb),
                f1(r.peak_rss_mb),
                f1(r.target_rss_before_mb),
                f1(r.target_peak_rss_mb),
                mb_list(&r.process_peak_rss_mb),
                r.fill_per_sec
            );
        }
        if let Some(r) = report.lists.first() {
            println!("\n(peak RSS method: {}; the latency is the whole list's, all pages; {} lists per row at the first level after one unrecorded)", r.peak_method, r.reps);
        }
    }
}
