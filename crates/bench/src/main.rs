//! kuorum-bench: kuorum beside etcd 3.4 on one machine, scenario by scenario.
//!
//! Each scenario (`--scenarios`; by default creates, updates, reads, list, watch,
//! reconnect, failover; also fairness and scale; see `scenarios/` for what each measures
//! and how) runs against a
//! fresh local 3-node kuorum and then a fresh local 3-member etcd 3.4 (or `--kuorum URLS` /
//! `--etcd ENDPOINTS`), one system at a time so they never share the CPU, both with fsync
//! on and the same concurrency and payload sizes. Progress goes to stderr as it runs; the
//! results to a JSON file (`--out`, rewritten after every scenario), PNG charts beside it
//! (`--charts DIR`; creates latency against throughput, watch delivery p99 against
//! watcher count), and with `--markdown` the tables used in docs/benchmarks.md.
//! `--from-json FILE --markdown [--charts DIR]` re-prints the tables and redraws the
//! charts from a result file.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod charts;
mod cpucap;
mod scenarios;

/// Whether each kuorum node (by REST URL) is the leader, as it says itself; `None` if it
/// did not answer.
fn kuorum_roles(urls: &[String]) -> Result<Vec<Option<bool>>> {
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(5)).build()?;
    Ok(urls
        .iter()
        .map(|u| {
            let v: serde_json::Value = http.get(format!("{u}/debug/kuorum/raft")).send().ok()?.json().ok()?;
            Some(v.get("id")?.as_u64()? == v.get("leader")?.as_u64()?)
        })
        .collect())
}

/// Whether each etcd member (by endpoint) is the leader, as it says itself; `None` if it
/// did not answer.
fn etcd_roles(rt: &tokio::runtime::Runtime, endpoints: &[String]) -> Vec<Option<bool>> {
    rt.block_on(async {
        let mut roles = Vec::new();
        for ep in endpoints {
            let role = async {
                let mut c = etcd_client::Client::connect([ep.as_str()], None).await.ok()?;
                let st = c.status().await.ok()?;
                Some(st.leader() == st.header()?.member_id())
            };
            roles.push(role.await);
        }
        roles
    })
}

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use kuorum_e2e::free_ports;
use serde::{Deserialize, Serialize};

#[derive(Parser, Debug, Clone)]
#[command(
    name = "kuorum-bench",
    about = "kuorum beside etcd 3.4: creates, updates, reads, LIST, watch, reconnect, failover, scale"
)]
struct Args {
    /// Recorded seconds per run.
    #[arg(long, default_value_t = 8.0)]
    duration: f64,
    /// Unrecorded seconds before each run's window.
    #[arg(long, default_value_t = 2.0)]
    warmup: f64,
    /// Concurrency levels (comma separated).
    #[arg(long, value_delimiter = ',', default_value = "1,16,64,256")]
    clients: Vec<usize>,
    /// creates: bytes of payload per object (ConfigMap data value / etcd value); every
    /// client level runs at each size.
    #[arg(long, alias = "value-size", value_delimiter = ',', default_value = "1024,8192")]
    value_sizes: Vec<usize>,
    /// Systems to run, in order (comma separated): kuorum, etcd.
    #[arg(long, value_delimiter = ',', default_value = "kuorum,etcd")]
    systems: Vec<String>,
    /// Use this running kuorum cluster (comma-separated base URLs) instead of starting one.
    #[arg(long)]
    kuorum: Option<String>,
    /// kuorum binary to start (default: $KUORUM_BIN, else the release build).
    #[arg(long)]
    kuorum_bin: Option<PathBuf>,
    /// An extra argument for every `kuorum serve` started here (repeat it for more), e.g.
    /// `--kuorum-arg=--max-data-format --kuorum-arg=1` to A/B the data formats.
    #[arg(long = "kuorum-arg", allow_hyphen_values = true)]
    kuorum_args: Vec<String>,
    /// Use this running etcd cluster (comma-separated client URLs) instead of starting one.
    #[arg(long)]
    etcd: Option<String>,
    /// etcd binary to start (Debian's etcd-server ships 3.4 as `etcd`).
    #[arg(long, default_value = "etcd")]
    etcd_bin: String,
    /// Which member client 0 talks to (the only client of a 1-client run; with more clients
    /// the round-robin covers all members): leader, follower or as-given.
    #[arg(long, default_value = "leader")]
    first: String,
    /// Parent directory for the clusters' data dirs (default: the system temp dir).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Threads each server process started here runs its work on, the same for both
    /// systems: kuorum's `--worker-threads`, etcd's `GOMAXPROCS`. Default: this machine's
    /// CPUs divided among a cluster's three servers, at least one (what `kuorum up` gives
    /// its nodes); 0 leaves each server its own default (every CPU).
    #[arg(long)]
    server_threads: Option<u16>,
    /// creates (kuorum): configure one ValidatingWebhookConfiguration for ConfigMap creates,
    /// served by a webhook the bench starts that allows everything, to measure what a
    /// webhook costs per request.
    #[arg(long)]
    noop_webhook: bool,
    /// Where to write the JSON result.
    #[arg(long, default_value = "bench-result.json")]
    out: PathBuf,
    /// Also print the Markdown table rows.
    #[arg(long)]
    markdown: bool,
    /// Read this result file instead of running: print its tables (--markdown) and redraw
    /// its charts (--charts DIR).
    #[arg(long)]
    from_json: Option<PathBuf>,
    /// Directory for the PNG charts (bench-creates.png, bench-watch.png); default: the
    /// --out file's directory. "none" skips them.
    #[arg(long)]
    charts: Option<PathBuf>,
    /// Scenarios to run, in order (comma separated): creates, updates, reads, list, watch,
    /// reconnect, failover, fairness, scale (the last two not by default). Each scenario gets
    /// fresh clusters (one system at a time).
    #[arg(long, value_delimiter = ',', default_value = "creates,updates,reads,list,watch,reconnect,failover")]
    scenarios: Vec<String>,
    /// watch: watcher counts, one level each (0 = the writes alone, the CPU/RSS baseline).
    #[arg(long, value_delimiter = ',', default_value = "0,1,100,1000,10000")]
    watchers: Vec<usize>,
    /// watch: paced writes per second (open loop, to the leader); every watcher level runs
    /// at each rate (up to --watch-max-events). 500/s is the issues' target rate.
    #[arg(long, value_delimiter = ',', default_value = "500,100,10")]
    watch_rates: Vec<f64>,
    /// watch: skip levels whose watchers × rate exceeds this many events/s (10,000 watchers
    /// × 100 writes/s is 1M events/s, beyond what two shared vCPUs can parse; 1,000 × 500
    /// is the targets' level).
    #[arg(long, default_value_t = 500_000.0)]
    watch_max_events: f64,
    /// watch: recorded seconds per level (after --watch-warmup seconds of writes).
    #[arg(long, default_value_t = 6.0)]
    watch_duration: f64,
    #[arg(long, default_value_t = 1.0)]
    watch_warmup: f64,
    /// list: object counts, one level each (the objects of a level stay for the next);
    /// and bytes of payload per object.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    list_objects: Vec<usize>,
    #[arg(long, default_value_t = 2048)]
    list_value_size: usize,
    /// list: recorded lists per (target, whole/paged) at 10,000 objects, after one
    /// unrecorded; scaled down with the object count (at least 3).
    #[arg(long, default_value_t = 20)]
    list_reps: usize,
    /// list: page size of the paged lists (limit + continue); 0 = whole lists only.
    #[arg(long, default_value_t = 500)]
    list_page_size: usize,
    /// reads: concurrent readers (each its own connection) in the leader and follower runs.
    #[arg(long, default_value_t = 32)]
    read_clients: usize,
    /// reads: concurrent readers per node in the spread runs (1 node: this many, 3 nodes:
    /// three times as many), so every level drives its nodes equally hard and the rate at
    /// each level is what its nodes can serve.
    #[arg(long, default_value_t = 32)]
    spread_readers_per_node: usize,
    /// reads: runs per spread level, taken in turn (1, 2, 3 nodes, then again); each level
    /// reports its median run, so one slow or fast run does not set the ratio.
    #[arg(long, default_value_t = 3)]
    spread_reps: usize,
    /// reads: objects read at random (1 KiB payload each).
    #[arg(long, default_value_t = 100)]
    read_objects: usize,
    /// reads: recorded seconds per run (after 1 s unrecorded).
    #[arg(long, default_value_t = 4.0)]
    read_duration: f64,
    /// reads: consistent (no resourceVersion / linearizable range) and RV=0 (serializable
    /// range) GETs, each on the leader and on a follower.
    #[arg(long, value_delimiter = ',', default_value = "consistent,rv0")]
    read_modes: Vec<String>,
    /// reads: node counts to spread the readers over.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    read_spread: Vec<usize>,
    /// reads: CPU cap per server process in cores, one spread per value; 0 = uncapped.
    /// A cap gives each node a CPU budget of its own, as separate machines would
    /// (see cpucap.rs); needs root and the cgroup cpu controller.
    #[arg(long, value_delimiter = ',', default_value = "0,0.15")]
    read_node_cores: Vec<f64>,
    /// updates: hot objects, clients (each GET then PUT with the resourceVersion as
    /// precondition, retried on conflict), recorded seconds (after --warmup).
    #[arg(long, default_value_t = 100)]
    update_objects: usize,
    #[arg(long, default_value_t = 64)]
    update_clients: usize,
    #[arg(long, default_value_t = 8.0)]
    update_duration: f64,
    /// reconnect: watchers that start at once from a resourceVersion this many writes old.
    #[arg(long, default_value_t = 1000)]
    reconnect_watchers: usize,
    #[arg(long, default_value_t = 1000)]
    reconnect_behind: usize,
    /// failover: creating clients, seconds before the leader is killed, seconds after.
    #[arg(long, default_value_t = 64)]
    failover_clients: usize,
    #[arg(long, default_value_t = 4.0)]
    failover_before: f64,
    #[arg(long, default_value_t = 8.0)]
    failover_after: f64,
    /// failover: each client deletes every object it created right after creating it, so
    /// deletes cut off by the kill are counted too.
    #[arg(long)]
    failover_deletes: bool,
    /// scale: stored-object levels (the cluster is filled up to each in turn), bytes of
    /// payload per object, and seconds of creates at 64 clients at each level.
    #[arg(long, value_delimiter = ',', default_value = "100000,300000,1000000")]
    scale_objects: Vec<usize>,
    #[arg(long, default_value_t = 1024)]
    scale_value_size: usize,
    #[arg(long, default_value_t = 5.0)]
    scale_create_secs: f64,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
struct RunResult {
    system: String,
    workload: String,
    clients: usize,
    value_size: usize,
    seconds: f64,
    ops: u64,
    ops_per_sec: f64,
    errors: u64,
    first_error: Option<String>,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    max_ms: f64,
    mean_ms: f64,
    /// CPU seconds (user+system) of all server processes during the recorded window;
    /// null when the servers were not started here.
    server_cpu_s: Option<f64>,
    server_cpu_ms_per_op: Option<f64>,
    /// CPU seconds of this benchmark process (the clients) during the recorded window.
    client_cpu_s: f64,
    /// CPU cores the idle servers used (all members, sampled over 2 s before the runs):
    /// heartbeats and timers, the floor under server_cpu_s.
    #[serde(default)]
    server_idle_cpu_cores: Option<f64>,
    /// Whether client 0 (the only one with 1 client) talked to the leader or a follower
    /// (a follower forwards: one more hop).
    #[serde(default)]
    client0_target: Option<String>,
    /// reads: how many nodes the clients were spread over.
    #[serde(default)]
    nodes: Option<usize>,
    /// reads: the CPU cap of each server process in cores (None: uncapped).
    #[serde(default)]
    node_cores_cap: Option<f64>,
    /// reads: seconds the capped servers were throttled during the run (the cap bound).
    #[serde(default)]
    throttled_s: Option<f64>,
    /// reads: the rate of every run at this spread level (`--spread-reps`, run in turn with
    /// the other levels); this result is the median one.
    #[serde(default)]
    rep_ops_per_sec: Vec<f64>,
    /// reads: "consistent" or "rv0" for the leader-vs-follower runs (None: the spreads).
    #[serde(default)]
    read_mode: Option<String>,
    /// updates: conflicts (HTTP 409 / failed txn compare) met by the recorded updates;
    /// attempts = ops + conflicts.
    #[serde(default)]
    conflicts: Option<u64>,
    /// Each server process's peak RSS (VmHWM, reset before the run) in MB; leader first
    /// where the scenario knows the roles.
    #[serde(default)]
    peak_rss_mb: Vec<f64>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
struct Report {
    started_unix: u64,
    machine: Machine,
    args: Vec<String>,
    kuorum_urls: Option<Vec<String>>,
    etcd_endpoints: Option<Vec<String>>,
    results: Vec<RunResult>,
    #[serde(default)]
    watch: Vec<scenarios::WatchResult>,
    #[serde(default)]
    lists: Vec<scenarios::ListResult>,
    #[serde(default)]
    reads: Vec<RunResult>,
    #[serde(default)]
    updates: Vec<RunResult>,
    #[serde(default)]
    reconnect: Vec<scenarios::ReconnectResult>,
    #[serde(default)]
    failover: Vec<scenarios::FailoverResult>,
    #[serde(default)]
    fairness: Vec<scenarios::FairnessResult>,
    #[serde(default)]
    scale: Vec<scenarios::ScaleResult>,
    /// Wall-clock seconds of the whole run.
    #[serde(default)]
    total_s: Option<f64>,
    failures: Vec<String>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
struct Machine {
    cpu_model: String,
    cpus: usize,
    mem_total: String,
    kernel: String,
    /// /proc/loadavg when the run started: anything well above 0 means other work
    /// (a compile, say) shared the CPU with the benchmark.
    #[serde(default)]
    loadavg: String,
    etcd_version: Option<String>,
    kuorum_git: Option<String>,
    /// 2300-byte append + fdatasync, 500 times, in the data directory's file system: the
    /// floor under every replicated write (all members share this disk).
    #[serde(default)]
    fdatasync_ms: Option<Percentiles>,
    /// A 1,200-byte request and a 300-byte answer over one loopback TCP connection
    /// (no delay), 2,000 times: what each hop of a replicated write costs at least.
    #[serde(default)]
    loopback_rtt_ms: Option<Percentiles>,
    /// Threads per server (kuorum `--worker-threads`, etcd `GOMAXPROCS`); None: each
    /// server's default, all CPUs (every run before session 20).
    #[serde(default)]
    server_threads: Option<u16>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
struct Percentiles {
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(path) = &args.from_json {
        let report: Report = serde_json::from_slice(&fs::read(path)?).with_context(|| path.display().to_string())?;
        if args.markdown {
            print_markdown(&report);
        }
        if let Some(dir) = &args.charts {
            charts::draw_all(&report, dir)?;
        } else if !args.markdown {
            print_markdown(&report);
        }
        return Ok(());
    }
    for s in &args.scenarios {
        if !scenarios::ALL.contains(&s.as_str()) {
            bail!("unknown scenario {s:?} (one of {:?})", scenarios::ALL);
        }
    }
    for s in &args.systems {
        if s != "kuorum" && s != "etcd" {
            bail!("unknown system {s:?} (kuorum, etcd)");
        }
    }
    if args.duration <= 0.0 || args.duration > 600.0 || args.warmup < 0.0 || args.warmup > 120.0 {
        bail!("--duration must be in (0, 600] and --warmup in [0, 120]");
    }
    if args.clients.is_empty() || args.clients.iter().any(|&c| c == 0 || c > 1024) {
        bail!("--clients must be 1..=1024");
    }

    let started_unix = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let mut report = Report {
        started_unix,
        machine: machine(&args),
        args: std::env::args().collect(),
        kuorum_urls: None,
        etcd_endpoints: None,
        results: vec![],
        watch: vec![],
        lists: vec![],
        reads: vec![],
        updates: vec![],
        reconnect: vec![],
        failover: vec![],
        fairness: vec![],
        scale: vec![],
        total_s: None,
        failures: vec![],
    };
    let run_t0 = Instant::now();
    raise_fd_limit();
    eprintln!(
        "machine: {} x{} ({}), kernel {}, loadavg {}; etcd {}; fdatasync {}; threads per server {}",
        report.machine.cpu_model,
        report.machine.cpus,
        report.machine.mem_total,
        report.machine.kernel,
        report.machine.loadavg,
        report.machine.etcd_version.as_deref().unwrap_or("?"),
        report
            .machine
            .fdatasync_ms
            .as_ref()
            .map(|p| format!("p50 {:.2} ms, p99 {:.2} ms", p.p50, p.p99))
            .unwrap_or_else(|| "?".into()),
        report.machine.server_threads.map_or("default".into(), |n| n.to_string())
    );
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;

    for scenario in &args.scenarios {
        if scenario == "creates" && args.systems.len() == 2 {
            let t0 = Instant::now();
            let outcome = scenarios::run_creates_interleaved(&args, &rt, &mut report);
            eprintln!(
                "-- creates took {:.1} s ({:.1} min into the run)",
                t0.elapsed().as_secs_f64(),
                run_t0.elapsed().as_secs_f64() / 60.0
            );
            if let Err(e) = outcome {
                eprintln!("!! creates: {e:#}");
                report.failures.push(format!("creates: {e:#}"));
            }
            write_report(&args.out, &report)?;
            continue;
        }
        for system in &args.systems {
            let t0 = Instant::now();
            let outcome = scenarios::run(scenario, system, &args, &rt, &mut report);
            eprintln!(
                "-- {scenario}/{system} took {:.1} s ({:.1} min into the run)",
                t0.elapsed().as_secs_f64(),
                run_t0.elapsed().as_secs_f64() / 60.0
            );
            if let Err(e) = outcome {
                eprintln!("!! {scenario}/{system}: {e:#}");
                report.failures.push(format!("{scenario}/{system}: {e:#}"));
            }
            write_report(&args.out, &report)?;
        }
    }

    report.total_s = Some(run_t0.elapsed().as_secs_f64());
    write_report(&args.out, &report)?;
    eprintln!("\nwrote {} (the run took {:.1} min)", args.out.display(), run_t0.elapsed().as_secs_f64() / 60.0);
    let chart_dir = args.charts.clone().unwrap_or_else(|| match args.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    });
    if chart_dir.as_os_str() != "none" {
        if let Err(e) = charts::draw_all(&report, &chart_dir) {
            eprintln!("!! charts: {e:#}");
        }
    }
    print_summary(&report);
    if args.markdown {
        print_markdown(&report);
    }
    if !report.failures.is_empty() {
        bail!("{} system(s) failed: {:?}", report.failures.len(), report.failures);
    }
    Ok(())
}

fn write_report(path: &Path, report: &Report) -> Result<()> {
    fs::write(path, serde_json::to_vec_pretty(report)?).with_context(|| path.display().to_string())
}

// ---------------------------------------------------------------------------------------
// etcd
// ---------------------------------------------------------------------------------------

/// Three etcd members on loopback with their own data dirs; killed on drop.
struct EtcdCluster {
    children: Vec<Child>,
    endpoints: Vec<String>,
    dir: tempfile::TempDir,
    bin: String,
    /// The members' `GOMAXPROCS` (None: Go's default, every CPU).
    threads: Option<u16>,
    /// Each member's command-line arguments, kept to restart it.
    member_args: Vec<Vec<String>>,
}

impl EtcdCluster {
    /// `threads`: the members' `GOMAXPROCS` (None: Go's default, every CPU).
    fn start(bin: &str, parent: Option<&Path>, threads: Option<u16>) -> Result<Self> {
        let dir = match parent {
            Some(p) => {
                fs::create_dir_all(p)?;
                tempfile::Builder::new().prefix("kuorum-bench-etcd-").tempdir_in(p)?
            }
            None => tempfile::Builder::new().prefix("kuorum-bench-etcd-").tempdir()?,
        };
        let ports = free_ports(6);
        let peer = |i: usize| format!("http://127.0.0.1:{}", ports[2 * i + 1]);
        let client = |i: usize| format!("http://127.0.0.1:{}", ports[2 * i]);
        let initial = (0..3).map(|i| format!("m{}={}", i + 1, peer(i))).collect::<Vec<_>>().join(",");
        let member_args = (0..3)
            .map(|i| {
                let name = format!("m{}", i + 1);
                etcd_member_args(&name, &dir.path().join(&name), &client(i), &peer(i), &initial, "new")
            })
            .collect();
        let mut cluster = EtcdCluster {
            children: vec![],
            endpoints: (0..3).map(client).collect(),
            dir,
            bin: bin.to_string(),
            threads,
            member_args,
        };
        for i in 0..3 {
            let child = cluster.spawn_member(i)?;
            cluster.children.push(child);
        }
        cluster.wait_healthy(Duration::from_secs(30))?;
        Ok(cluster)
    }

    /// Starts member `i` (0-based) with its arguments, its output appended to `m{i+1}.log`.
    fn spawn_member(&self, i: usize) -> Result<Child> {
        let log =
            fs::OpenOptions::new().create(true).append(true).open(self.dir.path().join(format!("m{}.log", i + 1)))?;
        let mut cmd = Command::new(&self.bin);
        cmd.args(&self.member_args[i]).stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
        if let Some(n) = self.threads {
            cmd.env("GOMAXPROCS", n.to_string());
        }
        die_with_parent(&mut cmd);
        cmd.spawn().with_context(|| format!("spawn {} (install Debian etcd-server: scripts/setup.sh)", self.bin))
    }

    /// Starts a new member (`m{index + 1}`) joining the existing cluster, whose other
    /// members are `existing` (name=peer URL, comma separated), after the cluster's
    /// `MemberAdd` of `http://127.0.0.1:{peer_port}`; answers its index.
    fn start_joining(&mut self, existing: &str, client_port: u16, peer_port: u16) -> Result<usize> {
        let i = self.children.len();
        let name = format!("m{}", i + 1);
        let client = format!("http://127.0.0.1:{client_port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let initial = format!("{existing},{name}={peer}");
        self.member_args.push(etcd_member_args(&name, &self.data_dir(i), &client, &peer, &initial, "existing"));
        self.endpoints.push(client);
        let child = self.spawn_member(i)?;
        self.children.push(child);
        Ok(i)
    }

    /// SIGKILLs member `i` and reaps it.
    fn kill(&mut self, i: usize) {
        let _ = self.children[i].kill();
        let _ = self.children[i].wait();
    }

    /// Starts member `i` again on its data directory (after [`EtcdCluster::kill`]).
    fn restart(&mut self, i: usize) -> Result<()> {
        self.children[i] = self.spawn_member(i)?;
        Ok(())
    }

    /// Member `i`'s data directory.
    fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(format!("m{}", i + 1))
    }

    fn wait_healthy(&mut self, timeout: Duration) -> Result<()> {
        let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(2)).build()?;
        let deadline = Instant::now() + timeout;
        loop {
            for (i, c) in self.children.iter_mut().enumerate() {
                if let Some(st) = c.try_wait()? {
                    let log = fs::read_to_string(self.dir.path().join(format!("m{}.log", i + 1))).unwrap_or_default();
                    bail!("etcd member {} exited ({st}):\n{log}", i + 1);
                }
            }
            let healthy = self.endpoints.iter().all(|e| {
                http.get(format!("{e}/health"))
                    .send()
                    .and_then(|r| r.text())
                    .map(|t| t.contains("\"health\":\"true\""))
                    .unwrap_or(false)
            });
            if healthy {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("etcd not healthy after {timeout:?} (logs in {})", self.dir.path().display());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }
}

/// One etcd member's command line.
fn etcd_member_args(name: &str, data: &Path, client: &str, peer: &str, initial: &str, state: &str) -> Vec<String> {
    let data = data.to_string_lossy();
    [
        "--name",
        name,
        "--data-dir",
        &data,
        "--listen-client-urls",
        client,
        "--advertise-client-urls",
        client,
        "--listen-peer-urls",
        peer,
        "--initial-advertise-peer-urls",
        peer,
        "--initial-cluster",
        initial,
        "--initial-cluster-state",
        state,
        "--initial-cluster-token",
        "kuorum-bench",
        // etcd's largest recommended backend (the default 2 GiB is reached by the scale
        // scenario's million objects and their history); only refuses writes past it.
        "--quota-backend-bytes",
        "8589934592",
        "--logger",
        "zap",
        "--log-outputs",
        "stderr",
        "--log-level",
        "warn",
    ]
    .map(String::from)
    .to_vec()
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------
// The load loop
// ---------------------------------------------------------------------------------------

enum Worker {
    Kuorum {
        http: reqwest::Client,
        url: String,
        prefix: String,
        payload: String,
    },
    Etcd {
        client: etcd_client::Client,
        prefix: String,
        payload: Vec<u8>,
    },
    /// GET `{url}/{prefix}{k}` for a pseudo-random k < n: with `?resourceVersion=0` (served
    /// from the node's cache), or without (consistent: a read barrier first).
    KuorumRead {
        http: reqwest::Client,
        url: String,
        prefix: String,
        n: u64,
        rng: u64,
        consistent: bool,
    },
    /// Get of `{prefix}{k}`: linearizable, or serializable (member-local).
    EtcdRead {
        client: etcd_client::Client,
        prefix: String,
        n: u64,
        rng: u64,
        consistent: bool,
    },
    /// Read-modify-write of a pseudo-random hot object `{url}/{prefix}{k}`: GET, then PUT
    /// with its metadata.resourceVersion; on 409 Conflict, again from the GET.
    KuorumUpdate {
        http: reqwest::Client,
        url: String,
        prefix: String,
        n: u64,
        rng: u64,
        payload: String,
    },
    /// The same on etcd: Get, then a Txn putting the key if its mod_revision is unchanged.
    EtcdUpdate {
        client: etcd_client::Client,
        prefix: String,
        n: u64,
        rng: u64,
        payload: Vec<u8>,
    },
}

impl Worker {
    fn kuorum(base: String, prefix: String, size: usize) -> Result<Self> {
        Ok(Worker::Kuorum {
            http: scenarios::worker_http_client()?,
            url: format!("{base}/api/v1/namespaces/default/configmaps"),
            prefix,
            payload: "x".repeat(size),
        })
    }

    async fn etcd(endpoint: String, prefix: String, size: usize) -> Result<Self> {
        let client = scenarios::etcd_connect_with(&endpoint, Duration::from_secs(10)).await?;
        Ok(Worker::Etcd { client, prefix, payload: vec![b'x'; size] })
    }

    /// One operation; answers the conflicts it met and retried (updates only).
    async fn op(&mut self, i: u64) -> Result<u64> {
        match self {
            Worker::Kuorum { http, url, prefix, payload } => {
                let body = format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{prefix}-{i}"}},"data":{{"v":"{payload}"}}}}"#
                );
                scenarios::post_configmap(http, url, body, "").await?;
                Ok(0)
            }
            Worker::Etcd { client, prefix, payload } => {
                client.put(format!("{prefix}{i}"), payload.clone(), None).await?;
                Ok(0)
            }
            Worker::KuorumRead { http, url, prefix, n, rng, consistent } => {
                let k = scenarios::xorshift(rng) % *n;
                let q = if *consistent { "" } else { "?resourceVersion=0" };
                let resp =
                    http.get(format!("{url}/{prefix}{k}{q}")).header("Accept", "application/json").send().await?;
                scenarios::expect_status(resp, 200, "").await?;
                Ok(0)
            }
            Worker::EtcdRead { client, prefix, n, rng, consistent } => {
                let k = scenarios::xorshift(rng) % *n;
                let opts = (!*consistent).then(|| etcd_client::GetOptions::new().with_serializable());
                let r = client.get(format!("{prefix}{k}"), opts).await?;
                if r.kvs().is_empty() {
                    bail!("etcd key {prefix}{k} missing");
                }
                Ok(0)
            }
            Worker::KuorumUpdate { http, url, prefix, n, rng, payload } => {
                let k = scenarios::xorshift(rng) % *n;
                let obj_url = format!("{url}/{prefix}{k}");
                for conflicts in 0..1000u64 {
                    let resp = http.get(&obj_url).header("Accept", "application/json").send().await?;
                    let bytes = scenarios::expect_status(resp, 200, "GET: ").await?;
                    let v: serde_json::Value = serde_json::from_slice(&bytes)?;
                    let rv = v["metadata"]["resourceVersion"].as_str().ok_or_else(|| anyhow!("no resourceVersion"))?;
                    let body = format!(
                        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{prefix}{k}","resourceVersion":"{rv}"}},"data":{{"v":"{payload}","i":"{i}"}}}}"#
                    );
                    let resp = http
                        .put(&obj_url)
                        .header("Content-Type", "application/json")
                        .header("Accept", "application/json")
                        .body(body)
                        .send()
                        .await?;
                    let status = resp.status();
                    let bytes = resp.bytes().await?;
                    match status.as_u16() {
                        200 => return Ok(conflicts),
                        409 => continue,
                        _ => bail!("PUT: HTTP {status}: {}", scenarios::body_head(&bytes)),
                    }
                }
                bail!("{obj_url}: 1000 conflicts in a row")
            }
            Worker::EtcdUpdate { client, prefix, n, rng, payload } => {
                use etcd_client::{Compare, CompareOp, Txn, TxnOp};
                let k = scenarios::xorshift(rng) % *n;
                let key = format!("{prefix}{k}");
                for conflicts in 0..1000u64 {
                    let r = client.get(key.as_str(), None).await?;
                    let rev = r.kvs().first().ok_or_else(|| anyhow!("etcd key {key} missing"))?.mod_revision();
                    let txn = Txn::new()
                        .when([Compare::mod_revision(key.as_str(), CompareOp::Equal, rev)])
                        .and_then([TxnOp::put(key.as_str(), payload.clone(), None)]);
                    if client.txn(txn).await?.succeeded() {
                        return Ok(conflicts);
                    }
                }
                bail!("{key}: 1000 conflicts in a row")
            }
        }
    }
}

struct TaskOutcome {
    latencies_us: Vec<u32>,
    /// Conflicts met by the recorded operations.
    conflicts: u64,
    errors: u64,
    first_error: Option<String>,
}

struct Ctx<'a> {
    pids: Option<&'a [u32]>,
    idle_cores: Option<f64>,
    client0_target: Option<String>,
}

async fn drive(
    system: &str,
    workload: &str,
    workers: Vec<Worker>,
    warmup_s: f64,
    duration_s: f64,
    value_size: usize,
    ctx: &Ctx<'_>,
) -> Result<RunResult> {
    let pids = ctx.pids;
    let clients = workers.len();
    let warmup = Duration::from_secs_f64(warmup_s);
    let window = Duration::from_secs_f64(duration_s);
    if let Some(p) = pids {
        scenarios::hwm_reset(p);
    }
    let start = Instant::now();
    let measure_from = start + warmup;
    let end = measure_from + window;
    let done = Arc::new(AtomicU64::new(0));
    eprintln!("\n== {system} {workload}: {clients} client(s), {warmup_s:.0}s warmup + {duration_s:.0}s");

    let mut handles = Vec::new();
    for mut w in workers {
        let done = done.clone();
        handles.push(tokio::spawn(async move {
            let mut out =
                TaskOutcome { latencies_us: Vec::with_capacity(4096), conflicts: 0, errors: 0, first_error: None };
            let mut i: u64 = 0;
            loop {
                let t0 = Instant::now();
                if t0 >= end {
                    break;
                }
                let r = tokio::time::timeout(Duration::from_secs(15), w.op(i)).await;
                let t1 = Instant::now();
                i += 1;
                match r {
                    Ok(Ok(conflicts)) => {
                        done.fetch_add(1, Ordering::Relaxed);
                        if t0 >= measure_from && t1 <= end {
                            out.latencies_us.push((t1 - t0).as_micros().min(u32::MAX as u128) as u32);
                            out.conflicts += conflicts;
                        }
                    }
                    Ok(Err(e)) => {
                        out.errors += 1;
                        out.first_error.get_or_insert_with(|| format!("{e:#}"));
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Err(_) => {
                        out.errors += 1;
                        out.first_error.get_or_insert_with(|| "no reply within 15 s".into());
                    }
                }
            }
            out
        }));
    }

    // Progress once a second; CPU samples at the window's edges.
    let mut cpu_from: Option<(f64, f64)> = None;
    let cpu_to: Option<(f64, f64)>;
    let mut last = 0u64;
    let mut tick = start;
    loop {
        let now = Instant::now();
        if cpu_from.is_none() && now >= measure_from {
            cpu_from = Some((pids.map(cpu_seconds).unwrap_or(0.0), cpu_seconds(&[std::process::id()])));
        }
        if now >= end {
            cpu_to = Some((pids.map(cpu_seconds).unwrap_or(0.0), cpu_seconds(&[std::process::id()])));
            break;
        }
        tick += Duration::from_secs(1);
        let next = [tick, measure_from, end].into_iter().filter(|t| *t > now).min().unwrap_or(end);
        tokio::time::sleep_until(next.into()).await;
        if Instant::now() >= tick {
            let d = done.load(Ordering::Relaxed);
            let phase = if tick <= measure_from { "warmup" } else { "run" };
            eprintln!(
                "  {system} c={clients} {phase:>6} t={:>4.1}s  {:>6} ok/s  total {d}",
                start.elapsed().as_secs_f64(),
                d - last
            );
            last = d;
        }
    }

    let peak_rss_mb = pids.map(scenarios::hwm_mb).unwrap_or_default();
    let mut lat: Vec<u32> = Vec::new();
    let mut errors = 0;
    let mut conflicts = 0;
    let mut first_error = None;
    for h in handles {
        let o = h.await?;
        lat.extend(o.latencies_us);
        conflicts += o.conflicts;
        errors += o.errors;
        if first_error.is_none() {
            first_error = o.first_error;
        }
    }
    lat.sort_unstable();
    let pct = |p: f64| scenarios::pct_ms(&lat, p);
    let ops = lat.len() as u64;
    let secs = window.as_secs_f64();
    let (f, t) = (cpu_from.unwrap_or_default(), cpu_to.unwrap_or_default());
    let server_cpu = pids.map(|_| t.0 - f.0);
    let r = RunResult {
        system: system.to_string(),
        workload: workload.to_string(),
        clients,
        value_size,
        seconds: secs,
        ops,
        ops_per_sec: ops as f64 / secs,
        errors,
        first_error: first_error.clone(),
        p50_ms: pct(50.0),
        p90_ms: pct(90.0),
        p99_ms: pct(99.0),
        p999_ms: pct(99.9),
        max_ms: lat.last().map(|&m| m as f64 / 1000.0).unwrap_or(0.0),
        mean_ms: if lat.is_empty() {
            0.0
        } else {
            lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64 / 1000.0
        },
        server_cpu_s: server_cpu,
        server_cpu_ms_per_op: scenarios::per_1k(server_cpu, ops),
        client_cpu_s: t.1 - f.1,
        server_idle_cpu_cores: ctx.idle_cores,
        client0_target: ctx.client0_target.clone(),
        nodes: None,
        node_cores_cap: None,
        throttled_s: None,
        rep_ops_per_sec: Vec::new(),
        read_mode: None,
        conflicts: Some(conflicts).filter(|_| workload.contains("precondition") || workload.contains("txn")),
        peak_rss_mb,
    };
    eprintln!(
        "  => {:.0} ops/s, p50 {:.2} ms, p99 {:.2} ms, max {:.1} ms, {} errors{}{}; server CPU {} s/1k ops; peak RSS {} MB",
        r.ops_per_sec,
        r.p50_ms,
        r.p99_ms,
        r.max_ms,
        r.errors,
        r.conflicts.map(|c| format!(", {c} conflicts")).unwrap_or_default(),
        scenarios::first_note(first_error.as_ref()),
        scenarios::f2(r.server_cpu_ms_per_op),
        scenarios::mb_list(&r.peak_rss_mb)
    );
    if ops == 0 {
        bail!("{system} with {clients} clients completed no operation");
    }
    Ok(r)
}

// ---------------------------------------------------------------------------------------
// Reporting and machine facts
// ---------------------------------------------------------------------------------------

fn print_summary(report: &Report) {
    println!(
        "{:<8} {:>6} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>7} {:>12}",
        "system", "size", "clients", "ops/s", "p50 ms", "p99 ms", "p99.9", "max ms", "errors", "srv CPU ms/op"
    );
    for r in &report.results {
        println!(
            "{:<8} {:>6} {:>7} {:>10.0} {:>8.2} {:>8.2} {:>8.2} {:>8.1} {:>7} {:>12}",
            r.system,
            r.value_size,
            r.clients,
            r.ops_per_sec,
            r.p50_ms,
            r.p99_ms,
            r.p999_ms,
            r.max_ms,
            r.errors,
            scenarios::f2(r.server_cpu_ms_per_op)
        );
    }
}

fn print_markdown(report: &Report) {
    scenarios::print_markdown(report);
}

/// Rotates the member list so that client 0 talks to the wanted role; returns the list
/// and the role client 0 got. `roles[i]` is Some(is_leader) when known.
fn put_first(mut members: Vec<String>, roles: Vec<Option<bool>>, want: &str) -> Result<(Vec<String>, Option<String>)> {
    let want_leader = match want {
        "leader" => Some(true),
        "follower" => Some(false),
        "as-given" => None,
        other => bail!("--first {other:?}: leader, follower or as-given"),
    };
    let mut roles = roles;
    if let Some(w) = want_leader {
        let idx = roles
            .iter()
            .position(|r| *r == Some(w))
            .ok_or_else(|| anyhow!("no member is a {want} (roles {roles:?})"))?;
        members.rotate_left(idx);
        roles.rotate_left(idx);
    }
    let role = roles.first().copied().flatten().map(|l| if l { "leader" } else { "follower" }.to_string());
    Ok((members, role))
}

/// Cores the processes use while nothing is asked of them, over 2 s.
fn idle_cpu_cores(pids: &[u32]) -> f64 {
    let a = cpu_seconds(pids);
    std::thread::sleep(Duration::from_secs(2));
    (cpu_seconds(pids) - a) / 2.0
}

/// user+system CPU seconds of the given processes (0 for any that is gone).
fn cpu_seconds(pids: &[u32]) -> f64 {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    pids.iter()
        .filter_map(|pid| fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|s| {
            // Fields after the parenthesised command name; utime and stime are fields 14, 15.
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = f.get(11)?.parse().ok()?;
            let stime: f64 = f.get(12)?.parse().ok()?;
            Some((utime + stime) / ticks)
        })
        .sum()
}

fn machine(args: &Args) -> Machine {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let mem_total = fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("MemTotal"))
        .map(|l| l.trim_start_matches("MemTotal:").trim().to_string())
        .unwrap_or_default();
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_string();
    let etcd_version = Command::new(&args.etcd_bin)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(|l| l.trim_start_matches("etcd Version:").trim().to_string()));
    let kuorum_git = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string());
    Machine {
        cpu_model,
        cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        mem_total,
        kernel,
        loadavg: fs::read_to_string("/proc/loadavg").unwrap_or_default().trim().to_string(),
        etcd_version,
        kuorum_git,
        fdatasync_ms: fsync_probe(args.dir.as_deref()).ok(),
        loopback_rtt_ms: rtt_probe().ok(),
        server_threads: server_threads(args),
    }
}

/// The threads each started server gets (`--server-threads`): None for the servers' own
/// default.
fn server_threads(args: &Args) -> Option<u16> {
    match args.server_threads {
        Some(0) => None,
        Some(n) => Some(n),
        None => {
            let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            Some((cpus / 3).clamp(1, u16::MAX as usize) as u16)
        }
    }
}

fn fsync_probe(dir: Option<&Path>) -> Result<Percentiles> {
    use std::io::Write;
    let mut f = match dir {
        Some(d) => tempfile::tempfile_in(d)?,
        None => tempfile::tempfile()?,
    };
    let buf = vec![b'x'; 2300];
    let mut ms: Vec<f64> = Vec::with_capacity(500);
    for _ in 0..500 {
        let t = Instant::now();
        f.write_all(&buf)?;
        f.sync_data()?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| ms[((p / 100.0 * ms.len() as f64) as usize).min(ms.len() - 1)];
    Ok(Percentiles { p50: at(50.0), p90: at(90.0), p99: at(99.0), max: ms[ms.len() - 1] })
}

/// Round trips over loopback TCP to an echo thread (see [`Machine::loopback_rtt_ms`]).
fn rtt_probe() -> Result<Percentiles> {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    const ASK: usize = 1200;
    const ANSWER: usize = 300;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut s, _) = listener.accept()?;
        s.set_nodelay(true)?;
        let mut ask = [0u8; ASK];
        let answer = [b'y'; ANSWER];
        while s.read_exact(&mut ask).is_ok() {
            s.write_all(&answer)?;
        }
        Ok(())
    });
    let mut c = TcpStream::connect(addr)?;
    c.set_nodelay(true)?;
    let (ask, mut answer) = ([b'x'; ASK], [0u8; ANSWER]);
    let mut ms: Vec<f64> = Vec::with_capacity(2000);
    for _ in 0..2000 {
        let t = Instant::now();
        c.write_all(&ask)?;
        c.read_exact(&mut answer)?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    drop(c);
    let _ = echo.join();
    ms.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| ms[((p / 100.0 * ms.len() as f64) as usize).min(ms.len() - 1)];
    Ok(Percentiles { p50: at(50.0), p90: at(90.0), p99: at(99.0), max: ms[ms.len() - 1] })
}

/// The least a single client's replicated write can take here: the client's round trip
/// to the leader, the leader's to a follower, and the follower's fdatasync (the leader's
/// own runs beside it), all at their medians.
fn write_floor_ms(m: &Machine) -> Option<f64> {
    Some(m.fdatasync_ms.as_ref()?.p50 + 2.0 * m.loopback_rtt_ms.as_ref()?.p50)
}

/// Raises the soft open-files limit to the hard one (1000 watchers need 1000+ sockets here
/// and in the servers, which inherit it).
fn raise_fd_limit() {
    unsafe {
        let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

fn die_with_parent(cmd: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
}
