//! `fairness` (kuorum only: etcd has no priority levels): API Priority and Fairness under
//! a flood from one user.
//!
//! 1,000 ConfigMaps of 1 KiB are created, and a priority level for the flooding user
//! (`bench-flood`: 5 shares, 8 queues, hands of 2, 4 per queue) with a FlowSchema
//! sending user `flood` to it. Then, for `PHASE` each:
//!
//! - unloaded: user `victim` GETs one ConfigMap (a consistent read) in a closed loop
//!   through a follower;
//! - loaded: the same, while 64 clients as user `flood` LIST all 1,000 ConfigMaps in a
//!   closed loop, spread over the nodes.
//!
//! Users are set with impersonation headers (the cluster runs `--insecure`, where anyone
//! may impersonate). Reported: the victim's p50/p99 in both phases and their ratio (the
//! goal: p99 within 2x), the flood's served LISTs/s and 429s/s, and errors of either.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::*;

/// How long each phase lasts.
const PHASE: Duration = Duration::from_secs(10);
const FLOOD_CLIENTS: usize = 64;
const OBJECTS: usize = 1000;

#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct FairnessResult {
    pub flood_clients: usize,
    pub objects_listed: usize,
    pub victim_unloaded_p50_ms: f64,
    pub victim_unloaded_p99_ms: f64,
    pub victim_loaded_p50_ms: f64,
    pub victim_loaded_p99_ms: f64,
    pub victim_loaded_ops: usize,
    pub victim_errors: u64,
    pub flood_served_per_s: f64,
    pub flood_429_per_s: f64,
    pub flood_errors: u64,
    pub first_error: Option<String>,
}

/// The victim's closed loop for `PHASE`: sorted latencies in µs, and errors.
async fn victim(url: String, name: String) -> Result<(Vec<u32>, u64)> {
    let http = worker_http_client()?;
    let mut lat = Vec::new();
    let mut errors = 0;
    let end = Instant::now() + PHASE;
    while Instant::now() < end {
        let t0 = Instant::now();
        let r = http
            .get(format!("{url}/api/v1/namespaces/default/configmaps/{name}"))
            .header("Impersonate-User", "victim")
            .send()
            .await;
        match r {
            Ok(resp) if resp.status().as_u16() == 200 => {
                let _ = resp.bytes().await;
                lat.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
            }
            _ => errors += 1,
        }
    }
    lat.sort_unstable();
    Ok((lat, errors))
}

/// [`victim`] on a thread and runtime of its own, as a user apart from the flood: on the
/// flood's runtime, its answers would wait behind the 64 flooding clients' reading in
/// this process, which is not the servers' doing.
async fn victim_apart(url: String, name: String) -> Result<(Vec<u32>, u64)> {
    tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(victim(url, name))
    })
    .await?
}

pub(super) async fn fairness_scenario(t: &Target, _args: &Args) -> Result<Vec<FairnessResult>> {
    if t.sys != Sys::Kuorum {
        return Ok(Vec::new());
    }
    let prefix = t.prefix("f");
    eprintln!("\n== fairness {}: {OBJECTS} objects, {FLOOD_CLIENTS} flooding clients", t.name());
    fill(t, &prefix, OBJECTS, 1024).await?;
    let http = http_client(Duration::from_secs(30))?;
    let leader = &t.urls[0];
    let flowcontrol = format!("{leader}/apis/flowcontrol.apiserver.k8s.io/v1");
    let level = json!({"metadata": {"name": "bench-flood"}, "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 5,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 8, "handSize": 2, "queueLengthLimit": 4}}}}});
    let schema = json!({"metadata": {"name": "bench-flood"}, "spec": {"matchingPrecedence": 500,
        "priorityLevelConfiguration": {"name": "bench-flood"}, "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": [{"kind": "User", "user": {"name": "flood"}}],
                   "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "namespaces": ["*"], "clusterScope": true}]}]}});
    for (what, body) in [("prioritylevelconfigurations", level), ("flowschemas", schema)] {
        let resp = http.post(format!("{flowcontrol}/{what}")).json(&body).send().await?;
        expect_status(resp, 201, "create flow control: ").await?;
    }
    // Every node reads its configuration again within a second.
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let victim_url = t.urls[t.urls.len().min(2) - 1].clone();
    let victim_object = format!("{prefix}0");
    let (unloaded, unloaded_errors) = victim_apart(victim_url.clone(), victim_object.clone()).await?;

    let served = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let first_error: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut flood = Vec::new();
    for i in 0..FLOOD_CLIENTS {
        let url = format!("{}/api/v1/namespaces/default/configmaps", t.urls[i % t.urls.len()]);
        let (served, refused, failed, first_error, stop) =
            (served.clone(), refused.clone(), failed.clone(), first_error.clone(), stop.clone());
        let http = worker_http_client()?;
        flood.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                match http.get(&url).header("Impersonate-User", "flood").send().await {
                    Ok(mut resp) if resp.status().as_u16() == 200 => {
                        // Read and dropped chunk by chunk: gathering 1.4 MB per answer
                        // was a fifth of this process's CPU, taken from the servers
                        // beside it (a real flood's clients run elsewhere).
                        while let Ok(Some(_)) = resp.chunk().await {}
                        served.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(resp) if resp.status().as_u16() == 429 => {
                        let _ = resp.bytes().await;
                        refused.fetch_add(1, Ordering::Relaxed);
                        // As client-go does: wait out Retry-After (1 s) before trying again.
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    other => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        let mut e = first_error.lock().unwrap();
                        if e.is_none() {
                            *e = Some(match other {
                                Ok(resp) => format!("flood: HTTP {}", resp.status()),
                                Err(err) => format!("flood: {err}"),
                            });
                        }
                    }
                }
            }
        }));
    }
    // Let the flood fill its queues first.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (s0, r0) = (served.load(Ordering::Relaxed), refused.load(Ordering::Relaxed));
    let started = Instant::now();
    let (loaded, loaded_errors) = victim_apart(victim_url, victim_object).await?;
    let secs = started.elapsed().as_secs_f64();
    let (s1, r1) = (served.load(Ordering::Relaxed), refused.load(Ordering::Relaxed));
    stop.store(true, Ordering::Relaxed);
    for f in flood {
        let _ = f.await;
    }
    let result = FairnessResult {
        flood_clients: FLOOD_CLIENTS,
        objects_listed: OBJECTS,
        victim_unloaded_p50_ms: pct_ms(&unloaded, 50.0),
        victim_unloaded_p99_ms: pct_ms(&unloaded, 99.0),
        victim_loaded_p50_ms: pct_ms(&loaded, 50.0),
        victim_loaded_p99_ms: pct_ms(&loaded, 99.0),
        victim_loaded_ops: loaded.len(),
        victim_errors: unloaded_errors + loaded_errors,
        flood_served_per_s: (s1 - s0) as f64 / secs,
        flood_429_per_s: (r1 - r0) as f64 / secs,
        flood_errors: failed.load(Ordering::Relaxed),
        first_error: first_error.lock().unwrap().clone(),
    };
    eprintln!("{result:?}");
    Ok(vec![result])
}

pub(crate) fn markdown(report: &Report) {
    if report.fairness.is_empty() {
        return;
    }
    println!("\n#### Priority and fairness: one user floods, another reads\n");
    println!("| flooding clients (LIST of {OBJECTS}) | victim p50 ms unloaded | loaded | victim p99 ms unloaded | loaded | p99 loaded / unloaded | flood LISTs/s served | flood 429s/s | errors (victim, flood) |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &report.fairness {
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} | {:.0} | {}, {} |",
            r.flood_clients,
            r.victim_unloaded_p50_ms,
            r.victim_loaded_p50_ms,
            r.victim_unloaded_p99_ms,
            r.victim_loaded_p99_ms,
            r.victim_loaded_p99_ms / r.victim_unloaded_p99_ms.max(0.001),
            r.flood_served_per_s,
            r.flood_429_per_s,
            r.victim_errors,
            r.flood_errors
        );
    }
    if let Some(e) = report.fairness.iter().find_map(|r| r.first_error.as_ref()) {
        println!("\nFirst error: {e}");
    }
}
