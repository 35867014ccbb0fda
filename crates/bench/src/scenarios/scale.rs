//! `scale`: how the costs grow with the number of stored objects (issue 38, item 1).
//!
//! One cluster per system, filled in steps up to each `--scale-objects` level (100,000,
//! 300,000 and 1,000,000 by default) with ConfigMaps / values of `--scale-value-size`
//! bytes (1 KiB), created through the leader by 64 writers. At each level, once the
//! servers are idle:
//!
//! - **memory**: each server's RSS, and its growth over the empty cluster's per stored
//!   object, against one object's encoded size (kuorum: its JSON as served, etcd: key +
//!   value); for kuorum also the node's own gauges of where it goes (the watch cache's
//!   object bytes, RocksDB's memtables, block cache and table readers).
//! - **disk**: each server's data directory (allocated blocks), and what it wrote to its
//!   disk per create during the fill (`write_bytes` of `/proc/PID/io`: the write
//!   amplification, Raft log and object store together).
//! - **LIST**: one consistent LIST of every object on a follower, whole, and paged by
//!   `--list-page-size` (after one unrecorded paged list).
//! - **creates**: `--scale-create-secs` seconds of creates by 64 clients spread over the
//!   members (after one second unrecorded), with p50/p99; these objects stay stored.
//! - **restart**: a follower SIGKILLed and started again on its data; the time from its
//!   start to its first answered consistent read (kuorum: a GET without resourceVersion;
//!   etcd: a linearizable Get, both on that node), and its RSS then.
//! - **catch-up**: a new member with an empty data directory added as a learner (kuorum:
//!   `kuorum member add`, its process already up with `--join`; etcd: `MemberAdd` as a
//!   learner, then its process started); the time from the add to its first answer at
//!   the current version (kuorum: a consistent GET on it; etcd, whose learners serve
//!   only serializable reads: a serializable Get at or past the leader's revision at
//!   the add), and its RSS then. The log behind a filled cluster is compacted, so both
//!   send it a snapshot. It is then removed again, so every level starts from three.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

use super::super::{drive, Ctx, Worker};
use super::*;

#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct ScaleResult {
    pub system: String,
    /// Objects filled (under the scale prefix), and objects stored in all when measured
    /// (also those of the earlier levels' create runs; kuorum: with the system objects).
    pub objects: usize,
    pub stored: usize,
    pub value_size: usize,
    /// One object's encoded size: kuorum its JSON as a GET serves it, etcd key + value.
    pub encoded_bytes: u64,
    /// This level's fill: seconds and creates/s (64 writers on the leader).
    pub fill_s: f64,
    pub fill_per_sec: f64,
    /// Per server, leader first: RSS in MB, and its growth over the empty cluster per
    /// stored object in bytes.
    pub rss_mb: Vec<f64>,
    pub rss_growth_per_object: Vec<f64>,
    /// kuorum: the leader's memory gauges in MB (watch cache object bytes, RocksDB parts).
    pub memory_parts_mb: BTreeMap<String, f64>,
    /// Per server: its data directory's allocated MB, and bytes it wrote to disk per
    /// create during this level's fill.
    pub disk_mb: Vec<f64>,
    pub written_per_create: Vec<f64>,
    /// One consistent LIST of all objects on a follower: whole and paged (ms), its bytes.
    pub list_ms: Option<f64>,
    pub list_paged_ms: Option<f64>,
    pub list_bytes: u64,
    pub list_error: Option<String>,
    /// Creates at 64 clients at this size.
    pub creates_per_sec: f64,
    pub creates_p50_ms: f64,
    pub creates_p99_ms: f64,
    /// A killed follower: from its start to its first answered consistent read, and its
    /// RSS in MB then.
    pub restart_to_read_s: Option<f64>,
    pub restart_rss_mb: Option<f64>,
    /// A new member: from its addition to its first answer at the current version, and
    /// its RSS in MB then.
    #[serde(default)]
    pub catch_up_s: Option<f64>,
    #[serde(default)]
    pub catch_up_rss_mb: Option<f64>,
}

const PREFIX: &str = "sc";

pub(super) async fn scale_scenario(t: &mut Target, args: &Args) -> Result<Vec<ScaleResult>> {
    let size = args.scale_value_size;
    let prefix = t.prefix(PREFIX);
    let rss_empty: Vec<f64> = rss_each_mb(t);
    let mut out = Vec::new();
    let mut have = 0usize;
    for (level, &n) in args.scale_objects.iter().enumerate() {
        if n <= have {
            bail!("--scale-objects must grow: {n} after {have}");
        }
        eprintln!("\n== scale {}: filling objects {have}..{n} of {size} B", t.name());
        let written0 = written_each(t);
        let fill_s = fill_range(t, &prefix, have, n, size).await?.max(1e-9);
        let written = written_each(t).iter().zip(&written0).map(|(b, a)| (b - a) as f64 / (n - have) as f64).collect();
        let fill_per_sec = (n - have) as f64 / fill_s;
        have = n;
        let idle_s = t.wait_idle(Duration::from_secs(120)).await;
        let stored = stored_objects(t).await?;
        eprintln!("  filled in {fill_s:.1} s ({fill_per_sec:.0}/s); servers quiet after {idle_s:.1} s more");
        let rss_mb = rss_each_mb(t);
        let mut r = ScaleResult {
            system: t.name().into(),
            objects: n,
            stored,
            value_size: size,
            encoded_bytes: encoded_bytes(t, &format!("{prefix}0")).await?,
            fill_s,
            fill_per_sec,
            rss_growth_per_object: rss_mb
                .iter()
                .zip(&rss_empty)
                .map(|(now, empty)| (now - empty) * 1024.0 * 1024.0 / stored as f64)
                .collect(),
            rss_mb,
            memory_parts_mb: memory_parts_mb(t).await,
            disk_mb: data_dirs(t).iter().map(|d| dir_allocated_bytes(d) as f64 / 1e6).collect(),
            written_per_create: written,
            ..Default::default()
        };
        eprintln!(
            "  RSS {} MB, growth per object {} B (object {} B); disk {} MB; written per create {} B; {:?}",
            mb_list(&r.rss_mb),
            f0_list(&r.rss_growth_per_object),
            r.encoded_bytes,
            mb_list(&r.disk_mb),
            f0_list(&r.written_per_create),
            r.memory_parts_mb
        );
        if let Err(e) = list_all(t, &prefix, n, args.list_page_size, &mut r).await {
            eprintln!("  LIST failed: {e:#}");
            r.list_error = Some(format!("{e:#}"));
        }
        creates_at_size(t, args, level, &mut r).await?;
        t.wait_idle(Duration::from_secs(120)).await;
        restart_follower(t, &format!("{prefix}0"), &mut r).await?;
        t.wait_idle(Duration::from_secs(60)).await;
        catch_up(t, &format!("{prefix}0"), &mut r).await?;
        out.push(r);
    }
    Ok(out)
}

/// Each server's RSS in MB (leader first); empty for servers not started here.
fn rss_each_mb(t: &Target) -> Vec<f64> {
    t.pids.iter().map(|&p| proc_status_kb(p, "VmRSS:") as f64 / 1024.0).collect()
}

/// Each server's bytes written to its disk so far (`write_bytes` in /proc/PID/io).
fn written_each(t: &Target) -> Vec<u64> {
    t.pids
        .iter()
        .map(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/io"))
                .ok()
                .and_then(|s| {
                    s.lines().find_map(|l| l.strip_prefix("write_bytes:").and_then(|v| v.trim().parse().ok()))
                })
                .unwrap_or(0)
        })
        .collect()
}

/// Each server's data directory, leader first (empty for clusters not started here).
fn data_dirs(t: &Target) -> Vec<PathBuf> {
    if let Some(c) = &t._kuorum {
        return t
            .urls
            .iter()
            .filter_map(|u| c.nodes.iter().find(|n| &n.url() == u))
            .map(|n| n.data_dir.clone())
            .collect();
    }
    if let Some(e) = &t._etcd {
        return t.urls.iter().filter_map(|u| e.endpoints.iter().position(|x| x == u)).map(|i| e.data_dir(i)).collect();
    }
    vec![]
}

/// Bytes allocated to the files under `dir` (blocks, not apparent sizes).
fn dir_allocated_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_allocated_bytes(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

/// One object's encoded size on a follower: kuorum its JSON, etcd key + value.
async fn encoded_bytes(t: &Target, name: &str) -> Result<u64> {
    match t.sys {
        Sys::Kuorum => {
            let resp = http_client(Duration::from_secs(10))?
                .get(format!("{}/api/v1/namespaces/default/configmaps/{name}", t.urls[1]))
                .header("Accept", "application/json")
                .send()
                .await?;
            Ok(expect_status(resp, 200, "get: ").await?.len() as u64)
        }
        Sys::Etcd => {
            let mut c = etcd_connect(&t.urls[1]).await?;
            let r = c.get(name, None).await?;
            let kv = r.kvs().first().ok_or_else(|| anyhow!("etcd has no key {name}"))?;
            Ok((kv.key().len() + kv.value().len()) as u64)
        }
    }
}

/// kuorum: the leader's memory gauges (watch cache object bytes, RocksDB's parts) in MB.
async fn memory_parts_mb(t: &Target) -> BTreeMap<String, f64> {
    let mut parts = BTreeMap::new();
    if t.sys != Sys::Kuorum {
        return parts;
    }
    let Ok(http) = http_client(Duration::from_secs(10)) else { return parts };
    let Ok(resp) = http.get(format!("{}/metrics", t.urls[0])).send().await else { return parts };
    let Ok(text) = resp.text().await else { return parts };
    for line in text.lines() {
        let Some((name, value)) = line.rsplit_once(' ') else { continue };
        let key = match name {
            "kuorum_watch_cache_object_bytes" => "watch_cache_objects".to_string(),
            _ => match name.strip_prefix("kuorum_storage_memory_bytes{part=\"") {
                Some(part) => format!("rocksdb_{}", part.trim_end_matches("\"}")),
                None => continue,
            },
        };
        if let Ok(v) = value.parse::<f64>() {
            parts.insert(key, v / 1e6);
        }
    }
    parts
}

/// One whole and one paged consistent LIST of the `n` filled objects on a follower.
async fn list_all(t: &Target, prefix: &str, n: usize, page: usize, r: &mut ScaleResult) -> Result<()> {
    let url = &t.urls[1];
    let http = http_client(Duration::from_secs(600))?;
    let mut etcd = match t.sys {
        Sys::Etcd => Some(etcd_connect(url).await?.kv_client().max_decoding_message_size(usize::MAX)),
        Sys::Kuorum => None,
    };
    let list_url = format!("{url}/api/v1/namespaces/default/configmaps");
    let page = (page > 0).then_some(page).unwrap_or(500);
    // Unrecorded: warms the client's connection and checks the count.
    let (_, _, items) = list::list_once(&http, &list_url, etcd.as_mut(), prefix, Some(page)).await?;
    if items != n {
        bail!("listed {items} objects, expected {n}");
    }
    let t0 = Instant::now();
    list::list_once(&http, &list_url, etcd.as_mut(), prefix, Some(page)).await?;
    r.list_paged_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
    let t0 = Instant::now();
    let (bytes, _, items) = list::list_once(&http, &list_url, etcd.as_mut(), prefix, None).await?;
    r.list_ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
    r.list_bytes = bytes;
    if items != n {
        bail!("the whole list had {items} objects, expected {n}");
    }
    eprintln!(
        "  LIST on a follower: whole {:.0} ms ({:.0} MB), paged by {page} {:.0} ms",
        r.list_ms.unwrap_or(0.0),
        bytes as f64 / 1e6,
        r.list_paged_ms.unwrap_or(0.0)
    );
    Ok(())
}

/// `--scale-create-secs` seconds of creates by 64 clients over all members.
async fn creates_at_size(t: &Target, args: &Args, level: usize, r: &mut ScaleResult) -> Result<()> {
    let mut workers = Vec::new();
    for c in 0..64 {
        let member = t.urls[c % t.urls.len()].clone();
        workers.push(match t.sys {
            Sys::Kuorum => Worker::kuorum(member, format!("scc-{level}-{c}"), r.value_size)?,
            Sys::Etcd => Worker::etcd(member, format!("/bench/scc/{level}/{c}/"), r.value_size).await?,
        });
    }
    let ctx = Ctx { pids: t.pids(), idle_cores: None, client0_target: None };
    let workload = if t.sys == Sys::Kuorum { "create ConfigMap (REST)" } else { "put (gRPC)" };
    let run = drive(t.name(), workload, workers, 1.0, args.scale_create_secs, r.value_size, &ctx).await?;
    r.creates_per_sec = run.ops_per_sec;
    r.creates_p50_ms = run.p50_ms;
    r.creates_p99_ms = run.p99_ms;
    eprintln!("  creates at 64 clients: {:.0}/s, p50 {:.1} ms, p99 {:.1} ms", run.ops_per_sec, run.p50_ms, run.p99_ms);
    Ok(())
}

/// SIGKILLs the follower `t.urls[1]`, starts it again, and times its first consistent
/// read of `key` (kuorum: an object name; etcd: a key).
async fn restart_follower(t: &mut Target, key: &str, r: &mut ScaleResult) -> Result<()> {
    let url = t.urls[1].clone();
    let started = match t.sys {
        Sys::Kuorum => {
            let Some(c) = t._kuorum.as_mut() else { return Ok(()) };
            let id = c.nodes.iter().find(|n| n.url() == url).map(|n| n.id).ok_or_else(|| anyhow!("no node {url}"))?;
            c.kill(id);
            c.start_node(id)?;
            let started = Instant::now();
            t.pids[1] = c.node(id).pid().unwrap_or(0);
            started
        }
        Sys::Etcd => {
            let Some(e) = t._etcd.as_mut() else { return Ok(()) };
            let i = e.endpoints.iter().position(|x| *x == url).ok_or_else(|| anyhow!("no member {url}"))?;
            e.kill(i);
            e.restart(i)?;
            let started = Instant::now();
            t.pids[1] = e.children[i].id();
            started
        }
    };
    let http = http_client(Duration::from_secs(2))?;
    let sys = t.sys;
    wait_until(started, "the restarted follower answered no consistent read", || async {
        match sys {
            Sys::Kuorum => http
                .get(format!("{url}/api/v1/namespaces/default/configmaps/{key}"))
                .header("Accept", "application/json")
                .send()
                .await
                .is_ok_and(|resp| resp.status() == 200),
            Sys::Etcd => match etcd_connect_with(&url, Duration::from_secs(2)).await {
                Ok(mut c) => c.get(key, None).await.is_ok_and(|g| !g.kvs().is_empty()),
                Err(_) => false,
            },
        }
    })
    .await?;
    let s = started.elapsed().as_secs_f64();
    r.restart_to_read_s = Some(s);
    r.restart_rss_mb = Some(proc_status_kb(t.pids[1], "VmRSS:") as f64 / 1024.0);
    eprintln!(
        "  restarted follower: first consistent read {s:.2} s after its start, RSS {:.0} MB",
        r.restart_rss_mb.unwrap_or(0.0)
    );
    Ok(())
}

/// Adds a new member with an empty data directory as a learner, times its catch-up to
/// its first answer at the current version, and removes it again.
async fn catch_up(t: &mut Target, key: &str, r: &mut ScaleResult) -> Result<()> {
    let servers = t.urls.join(",");
    let (elapsed, rss_kb) = match t.sys {
        Sys::Kuorum => {
            let Some(c) = t._kuorum.as_mut() else { return Ok(()) };
            let new = c.start_joining_node()?;
            let peer = format!("127.0.0.1:{}", c.node(new).peer_port);
            let url = c.url(new);
            let started = Instant::now();
            if let Err(e) = c.cli(&["member", "add", &new.to_string(), &peer, "--server", &servers]) {
                // The add answers 504 if the learner has not caught up in 120 s; it goes on.
                if !format!("{e:#}").contains("has not caught up") {
                    return Err(e);
                }
            }
            let http = http_client(Duration::from_secs(2))?;
            let read = format!("{url}/api/v1/namespaces/default/configmaps/{key}");
            wait_until(started, "the new member answered no consistent read", || async {
                http.get(&read).header("Accept", "application/json").send().await.is_ok_and(|x| x.status() == 200)
            })
            .await?;
            let elapsed = started.elapsed().as_secs_f64();
            let pid = c.node(new).pid().unwrap_or(0);
            let rss = proc_status_kb(pid, "VmRSS:");
            c.cli(&["member", "remove", &new.to_string(), "--server", &servers])?;
            c.kill(new);
            (elapsed, rss)
        }
        Sys::Etcd => {
            let Some(e) = t._etcd.as_mut() else { return Ok(()) };
            let mut admin = etcd_connect(&t.urls[0]).await?;
            let rev = admin.get(key, None).await?.header().map(|h| h.revision()).unwrap_or(0);
            let ports = kuorum_e2e::free_ports(2);
            // etcd refuses an add ("unhealthy cluster") until every member has been
            // connected for a while, which the follower restarted just before has not.
            let tried = Instant::now();
            let (started, added) = loop {
                let started = Instant::now();
                let add = admin
                    .member_add(
                        [format!("http://127.0.0.1:{}", ports[1])],
                        Some(etcd_client::MemberAddOptions::new().with_is_learner()),
                    )
                    .await;
                match add {
                    Ok(added) => break (started, added),
                    Err(e) if e.to_string().contains("unhealthy cluster") && tried.elapsed().as_secs() < 60 => {
                        tokio::time::sleep(Duration::from_millis(500)).await
                    }
                    Err(e) => return Err(e.into()),
                }
            };
            let id = added.member().map(|m| m.id()).ok_or_else(|| anyhow!("MemberAdd answered no member"))?;
            let existing: Vec<String> = added
                .member_list()
                .iter()
                .filter(|m| m.id() != id)
                .map(|m| format!("{}={}", m.name(), m.peer_urls().first().map(String::as_str).unwrap_or("")))
                .collect();
            let i = e.start_joining(&existing.join(","), ports[0], ports[1])?;
            let url = e.endpoints[i].clone();
            wait_until(started, "the new member never reached the revision", || async {
                let Ok(mut c) = etcd_connect_with(&url, Duration::from_secs(2)).await else { return false };
                let opts = etcd_client::GetOptions::new().with_serializable();
                c.get(key, Some(opts)).await.is_ok_and(|g| g.header().is_some_and(|h| h.revision() >= rev))
            })
            .await?;
            let elapsed = started.elapsed().as_secs_f64();
            let rss = proc_status_kb(e.children[i].id(), "VmRSS:");
            admin.member_remove(id).await?;
            e.kill(i);
            (elapsed, rss)
        }
    };
    r.catch_up_s = Some(elapsed);
    r.catch_up_rss_mb = Some(rss_kb as f64 / 1024.0);
    eprintln!("  new member caught up in {elapsed:.2} s, RSS {:.0} MB", rss_kb as f64 / 1024.0);
    Ok(())
}

/// Polls `ok` every 20 ms until it answers true; an error after 900 s from `started`.
async fn wait_until<F, Fut>(started: Instant, what: &str, mut ok: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    while !ok().await {
        if started.elapsed() > Duration::from_secs(900) {
            bail!("{what} in 900 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Values as "a / b / c" with no decimals, or "-" (the per-server MB lists' format).
fn f0_list(v: &[f64]) -> String {
    mb_list(v)
}

/// Objects stored in all: kuorum's watch cache count on the leader (the system
/// namespaces' few objects included), etcd's key count.
async fn stored_objects(t: &Target) -> Result<usize> {
    match t.sys {
        Sys::Kuorum => {
            let text = http_client(Duration::from_secs(10))?
                .get(format!("{}/metrics", t.urls[0]))
                .send()
                .await?
                .text()
                .await?;
            let v = text
                .lines()
                .find_map(|l| l.strip_prefix("kuorum_watch_cache_objects "))
                .ok_or_else(|| anyhow!("no kuorum_watch_cache_objects in /metrics"))?;
            Ok(v.trim().parse::<f64>()? as usize)
        }
        Sys::Etcd => {
            let mut c = etcd_connect(&t.urls[0]).await?;
            let r = c.get("", Some(etcd_client::GetOptions::new().with_all_keys().with_count_only())).await?;
            Ok(r.count() as usize)
        }
    }
}

pub(crate) fn markdown(report: &Report) {
    if report.scale.is_empty() {
        return;
    }
    println!("\n#### Scale: costs against the number of stored objects\n");
    println!("| system | objects (stored) | object B | fill/s | RSS MB per server | RSS growth per object B | disk MB per server | written per create B | LIST whole / paged s | creates/s at 64 (p99 ms) | restart → consistent read s (RSS MB) | new member caught up s (RSS MB) |");
    println!("|---|---:|---:|---:|---|---|---|---|---|---|---|---|");
    for r in &report.scale {
        println!(
            "| {} | {} ({}) | {} | {:.0} | {} | {} | {} | {} | {} / {} | {:.0} ({:.1}) | {} ({}) | {} ({}) |",
            r.system,
            r.objects,
            r.stored,
            r.encoded_bytes,
            r.fill_per_sec,
            mb_list(&r.rss_mb),
            f0_list(&r.rss_growth_per_object),
            mb_list(&r.disk_mb),
            f0_list(&r.written_per_create),
            f2(r.list_ms.map(|m| m / 1000.0)),
            f2(r.list_paged_ms.map(|m| m / 1000.0)),
            r.creates_per_sec,
            r.creates_p99_ms,
            f2(r.restart_to_read_s),
            f0(r.restart_rss_mb),
            f2(r.catch_up_s),
            f0(r.catch_up_rss_mb)
        );
    }
    for r in report.scale.iter().filter(|r| !r.memory_parts_mb.is_empty()) {
        let parts: Vec<String> = r.memory_parts_mb.iter().map(|(k, v)| format!("{k} {v:.0}")).collect();
        println!("\n- {} at {} objects, the leader's gauges (MB): {}", r.system, r.objects, parts.join(", "));
    }
    for r in report.scale.iter().filter(|r| r.list_error.is_some()) {
        println!("- {} at {} objects: LIST failed: {}", r.system, r.objects, r.list_error.as_deref().unwrap_or(""));
    }
}
