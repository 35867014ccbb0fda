//! `updates`: optimistic-concurrency updates of a few hot objects.
//!
//! `--update-objects` (100) ConfigMaps / keys of 1 KiB are created first. Then
//! `--update-clients` (64) closed-loop clients, spread round-robin over the nodes, each
//! pick one of them at random and read-modify-write it:
//!
//! - kuorum: `GET .../configmaps/NAME` (consistent), then `PUT` of the object with the
//!   `metadata.resourceVersion` it read as the precondition; on `409 Conflict` the client
//!   starts over from the GET.
//! - etcd: `Get` (linearizable), then a `Txn` that puts the key if its `mod_revision` is
//!   still the one read (what kube-apiserver's GuaranteedUpdate sends); on a failed
//!   compare the client starts over from the Get.
//!
//! One operation is one successful update, retries included: goodput is successful
//! updates/s, the latency runs from the first GET to the successful write, and the
//! conflict rate is conflicts / write attempts. `--warmup` s unrecorded, then
//! `--update-duration` s recorded.

use anyhow::Result;

use super::super::{drive, Ctx, RunResult, Worker};
use super::*;

pub(super) async fn updates_scenario(t: &Target, args: &Args) -> Result<Vec<RunResult>> {
    let n = args.update_objects.max(1);
    let prefix = t.prefix("u");
    eprintln!("\n== updates {}: {n} hot objects, {} clients", t.name(), args.update_clients);
    fill(t, &prefix, n, 1024).await?;
    let payload = "y".repeat(1024);
    let mut workers = Vec::new();
    for i in 0..args.update_clients {
        let url = &t.urls[i % t.urls.len()];
        let rng = 0x2545_F491_4F6C_DD1Du64 ^ ((i as u64 + 1) * 0x9E37_79B9_7F4A_7C15);
        workers.push(match t.sys {
            Sys::Kuorum => Worker::KuorumUpdate {
                http: worker_http_client()?,
                url: format!("{url}/api/v1/namespaces/default/configmaps"),
                prefix: prefix.clone(),
                n: n as u64,
                rng,
                payload: payload.clone(),
            },
            Sys::Etcd => Worker::EtcdUpdate {
                client: etcd_connect(url).await?,
                prefix: prefix.clone(),
                n: n as u64,
                rng,
                payload: payload.clone().into_bytes(),
            },
        });
    }
    let workload = match t.sys {
        Sys::Kuorum => "GET + PUT with RV precondition (REST)",
        Sys::Etcd => "get + txn on mod_revision (gRPC)",
    };
    let ctx = Ctx { pids: t.pids(), idle_cores: None, client0_target: Some("leader".into()) };
    let r = drive(t.name(), workload, workers, args.warmup, args.update_duration, 1024, &ctx).await?;
    Ok(vec![r])
}

pub(crate) fn markdown(report: &Report) {
    if report.updates.is_empty() {
        return;
    }
    println!("\n#### Updates with a resourceVersion precondition on hot objects\n");
    println!("| system | workload | objects | clients | goodput updates/s | conflict (409) rate | conflicts/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | server CPU s / 1k updates | peak RSS MB per server (leader first) |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    let objects = report
        .args
        .iter()
        .position(|a| a == "--update-objects")
        .and_then(|i| report.args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "100".into());
    for r in &report.updates {
        let c = r.conflicts.unwrap_or(0);
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.1}% | {:.0} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} | {} |",
            r.system,
            r.workload,
            objects,
            r.clients,
            r.ops_per_sec,
            100.0 * c as f64 / (r.ops + c).max(1) as f64,
            c as f64 / r.seconds,
            r.p50_ms,
            r.p99_ms,
            r.p999_ms,
            r.max_ms,
            r.errors,
            f2(r.server_cpu_ms_per_op),
            mb_list(&r.peak_rss_mb)
        );
    }
    println!("\n(latency: from the first GET to the successful write, retries included)");
}
