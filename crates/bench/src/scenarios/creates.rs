//! `creates`: replicated create throughput and latency.
//!
//! - kuorum: `POST /api/v1/namespaces/default/configmaps` of ConfigMaps carrying one data
//!   value of each `--value-sizes` size, each client on its own keep-alive HTTP/1.1
//!   connection, clients spread round-robin over all nodes (followers forward to the
//!   leader); client 0 (the only one at 1 client) talks to the `--first` role.
//! - etcd: `Put` of values of the same sizes under fresh keys, each client on its own gRPC
//!   connection, spread the same way.
//!
//! Each (value size, `--clients` level) pair runs `--warmup` seconds unrecorded, then
//! `--duration` seconds recorded, on one cluster per system (closed loop: every client
//! sends its next create when the last one returns). Reported: creates/s, p50/p99/p99.9,
//! server CPU seconds per 1,000 creates, and each server's peak RSS during the run.
//!
//! With both systems asked for, both clusters run side by side and the levels alternate
//! (kuorum's, then etcd's, each after the other cluster has gone idle), so each level's
//! ratio compares runs seconds apart (see [`bench_interleaved`]).

use super::super::{cpu_seconds, drive, idle_cpu_cores, Ctx, RunResult, Worker};
use super::*;

/// One system's cluster, ready to run create levels on.
struct Creating {
    system: &'static str,
    workload: &'static str,
    /// kuorum base URLs or etcd endpoints, client 0's first.
    members: Vec<String>,
    pids: Option<Vec<u32>>,
    idle_cores: Option<f64>,
    client0_target: Option<String>,
    /// The cluster this bench started (None for `--kuorum`/`--etcd`), stopped when dropped.
    kuorum: Option<Cluster>,
    _etcd: Option<EtcdCluster>,
    /// `--noop-webhook`: the webhook server, up while the cluster calls it.
    _webhook: Option<kuorum_e2e::https_server::HttpsServer>,
}

impl Creating {
    fn kuorum(args: &Args) -> Result<Self> {
        let mut cluster = None;
        let urls: Vec<String> = match &args.kuorum {
            Some(list) => kuorum_url_list(list),
            None => {
                let c = start_kuorum(args)?;
                let urls = c.urls();
                cluster = Some(c);
                urls
            }
        };
        let pids: Option<Vec<u32>> = cluster.as_ref().map(|c| c.nodes.iter().filter_map(|n| n.pid()).collect());
        if let Some(c) = cluster.as_mut() {
            let leader = c.leader()?;
            eprintln!("kuorum nodes {urls:?}, leader node {leader}");
        }
        let webhook = if args.noop_webhook { Some(noop_webhook(&urls)?) } else { None };
        let roles = kuorum_roles(&urls)?;
        let (members, client0_target) = put_first(urls, roles, &args.first)?;
        let idle_cores = idle_cores("kuorum", pids.as_deref());
        Ok(Creating {
            system: "kuorum",
            workload: if webhook.is_some() {
                "create ConfigMap (REST), 1 no-op validating webhook"
            } else {
                "create ConfigMap (REST)"
            },
            _webhook: webhook,
            members,
            pids,
            idle_cores,
            client0_target,
            kuorum: cluster,
            _etcd: None,
        })
    }

    fn etcd(args: &Args, rt: &tokio::runtime::Runtime) -> Result<Self> {
        let mut cluster = None;
        let endpoints: Vec<String> = match &args.etcd {
            Some(list) => etcd_endpoint_list(list),
            None => {
                let c = start_etcd(args)?;
                let e = c.endpoints.clone();
                cluster = Some(c);
                e
            }
        };
        let pids = cluster.as_ref().map(EtcdCluster::pids);
        let roles = etcd_roles(rt, &endpoints);
        let (members, client0_target) = put_first(endpoints, roles, &args.first)?;
        eprintln!("etcd endpoints {members:?}");
        let idle_cores = idle_cores("etcd", pids.as_deref());
        Ok(Creating {
            system: "etcd",
            workload: "put (gRPC)",
            members,
            pids,
            idle_cores,
            client0_target,
            kuorum: None,
            _etcd: cluster,
            _webhook: None,
        })
    }

    /// One (value size, clients) level: every client creates fresh objects of `size` bytes.
    fn level(
        &mut self,
        args: &Args,
        rt: &tokio::runtime::Runtime,
        tag: u64,
        size: usize,
        clients: usize,
    ) -> Result<RunResult> {
        let members = &self.members;
        let workers = rt.block_on(async {
            let mut workers = Vec::new();
            for t in 0..clients {
                let member = members[t % members.len()].clone();
                workers.push(match self.system {
                    "kuorum" => Worker::kuorum(member, format!("bench-{tag}-s{size}-c{clients}-t{t}"), size)?,
                    _ => Worker::etcd(member, format!("/bench/{tag}/s{size}/c{clients}/t{t}/"), size).await?,
                });
            }
            anyhow::Ok(workers)
        })?;
        let ctx = Ctx {
            pids: self.pids.as_deref(),
            idle_cores: self.idle_cores,
            client0_target: self.client0_target.clone(),
        };
        let r = rt.block_on(drive(self.system, self.workload, workers, args.warmup, args.duration, size, &ctx))?;
        if let Some(c) = self.kuorum.as_mut() {
            c.check_alive()?;
        }
        Ok(r)
    }

    /// Waits (up to 20 s) until this cluster is idle, so its compactions and flushes
    /// after a level do not land in the other system's next one.
    fn settle(&self) {
        let Some(pids) = self.pids.as_deref() else { return };
        let quiet = self.idle_cores.unwrap_or(0.0) + 0.05;
        for _ in 0..40 {
            let a = cpu_seconds(pids);
            std::thread::sleep(Duration::from_millis(500));
            if (cpu_seconds(pids) - a) / 0.5 <= quiet {
                return;
            }
        }
        eprintln!("{} still busy after 20 s; going on", self.system);
    }
}

/// Starts a webhook server that allows every review and registers it for ConfigMap
/// creates through the first node; waits until every node has the configuration.
fn noop_webhook(urls: &[String]) -> Result<kuorum_e2e::https_server::HttpsServer> {
    let server = kuorum_e2e::https_server::HttpsServer::start(&["127.0.0.1"], |r| {
        let response = serde_json::json!({"uid": r.body["request"]["uid"], "allowed": true});
        (200, serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
    });
    let config = serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "bench-noop"},
        "webhooks": [{"name": "noop.bench.kuorum", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": server.url("/validate"), "caBundle": server.ca_bundle},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}]
    });
    let http = reqwest::blocking::Client::new();
    const PATH: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    let r = http.post(format!("{}{PATH}", urls[0])).json(&config).send()?;
    anyhow::ensure!(r.status().is_success(), "registering the webhook: {}", r.text()?);
    for url in urls {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !http.get(format!("{url}{PATH}/bench-noop")).send()?.status().is_success() {
            anyhow::ensure!(std::time::Instant::now() < deadline, "{url} never saw the webhook");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    eprintln!("a no-op validating webhook at {} for ConfigMap creates", server.url("/validate"));
    Ok(server)
}

/// Every level on one system, on one cluster (started here unless given).
pub(super) fn bench_one(sys: Sys, args: &Args, rt: &tokio::runtime::Runtime, report: &mut Report) -> Result<()> {
    let mut target = match sys {
        Sys::Kuorum => Creating::kuorum(args)?,
        Sys::Etcd => Creating::etcd(args, rt)?,
    };
    match sys {
        Sys::Kuorum => report.kuorum_urls = Some(target.members.clone()),
        Sys::Etcd => report.etcd_endpoints = Some(target.members.clone()),
    }
    for (&size, &clients) in levels(args) {
        report.results.push(target.level(args, rt, report.started_unix, size, clients)?);
    }
    Ok(())
}

/// Both systems, level by level: kuorum's level, then etcd's, each on its own cluster,
/// the two clusters up together. The ratio of a level is then taken minutes apart at
/// most seconds apart, not a whole scenario apart: a shared machine's speed drifts by
/// more than the targets' margins within minutes. Before each level the other system
/// must be idle again.
pub(super) fn bench_interleaved(args: &Args, rt: &tokio::runtime::Runtime, report: &mut Report) -> Result<()> {
    let mut kuorum = Creating::kuorum(args)?;
    let mut etcd = Creating::etcd(args, rt)?;
    report.kuorum_urls = Some(kuorum.members.clone());
    report.etcd_endpoints = Some(etcd.members.clone());
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for (&size, &clients) in levels(args) {
        etcd.settle();
        ours.push(kuorum.level(args, rt, report.started_unix, size, clients)?);
        kuorum.settle();
        theirs.push(etcd.level(args, rt, report.started_unix, size, clients)?);
    }
    // Reported as two runs would be: every kuorum level, then every etcd level.
    report.results.extend(ours);
    report.results.extend(theirs);
    Ok(())
}

pub(crate) fn markdown(report: &Report) {
    let m = &report.machine;
    println!();
    println!(
        "{} x{}, {} RAM, kernel {}, etcd {}, kuorum {}; loadavg at start {}; fdatasync of 2300 B {}; threads per server {}.",
        m.cpu_model,
        m.cpus,
        m.mem_total,
        m.kernel,
        m.etcd_version.as_deref().unwrap_or("?"),
        m.kuorum_git.as_deref().unwrap_or("?"),
        m.loadavg.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        m.fdatasync_ms
            .as_ref()
            .map(|p| format!("p50 {:.2} ms, p99 {:.2} ms", p.p50, p.p99))
            .unwrap_or_else(|| "not measured".into()),
        m.server_threads.map_or("each server's default (all CPUs)".into(), |n| n.to_string())
    );
    if let Some(floor) = crate::write_floor_ms(m) {
        let rtt = m.loopback_rtt_ms.as_ref().map_or(0.0, |p| p.p50);
        println!(
            "A replicated write's floor here: {floor:.2} ms (fdatasync p50 + 2 × loopback TCP round trip p50 {rtt:.3} ms); a 1-client create's p50 is compared with it."
        );
    }
    if report.results.is_empty() {
        return;
    }
    println!();
    println!(
        "| system | workload | value B | clients | creates/s | p50 ms | p99 ms | p99.9 ms | max ms | errors | server CPU s / 1k creates | client CPU s / 1k | peak RSS MB per server |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for r in &report.results {
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} | {:.2} | {} |",
            r.system,
            r.workload,
            r.value_size,
            r.clients,
            r.ops_per_sec,
            r.p50_ms,
            r.p99_ms,
            r.p999_ms,
            r.max_ms,
            r.errors,
            f2(r.server_cpu_ms_per_op),
            r.client_cpu_s * 1000.0 / r.ops.max(1) as f64,
            mb_list(&r.peak_rss_mb)
        );
    }
    println!();
    let mut seen = Vec::new();
    for r in &report.results {
        if seen.contains(&r.system) {
            continue;
        }
        seen.push(r.system.clone());
        println!(
            "- {}: idle cluster CPU {} cores; the 1-client run talked to the {}.",
            r.system,
            r.server_idle_cpu_cores.map(|c| format!("{c:.3}")).unwrap_or_else(|| "?".into()),
            r.client0_target.as_deref().unwrap_or("(unknown)")
        );
    }
    if let Some(floor) = crate::write_floor_ms(m) {
        for r in report.results.iter().filter(|r| r.clients == 1) {
            println!(
                "- {} {} B, 1 client: p50 {:.2} ms, {:.2}× the floor ({floor:.2} ms).",
                r.system,
                r.value_size,
                r.p50_ms,
                r.p50_ms / floor
            );
        }
    }
}

/// The cores the idle cluster (when started here) uses, noted on stderr.
fn idle_cores(system: &str, pids: Option<&[u32]>) -> Option<f64> {
    let idle = pids.map(idle_cpu_cores);
    if let Some(i) = idle {
        eprintln!("idle {system} cluster uses {i:.3} cores");
    }
    idle
}

/// (value size, clients) pairs in run order: every client level at each size.
fn levels(args: &Args) -> impl Iterator<Item = (&usize, &usize)> {
    args.value_sizes.iter().flat_map(move |s| args.clients.iter().map(move |c| (s, c)))
}
