//! Chaos on real processes. Three `kuorum serve` processes run as three hosts, each in a
//! network namespace the test makes (`ip netns`, a veth pair per host onto a bridge in a
//! namespace of its own; every address lives inside those namespaces), and the
//! simulator's controller-like clients (`kuorum_sim::traffic`: writers with
//! resourceVersion preconditions, readers of every consistency mode, list-then-watch
//! loops resuming across nodes) run in a fifth namespace over real TCP. Meanwhile the
//! test injects, in turn: SIGKILL and a restart, SIGSTOP then SIGCONT, a network
//! partition (a host's link cut at the bridge), a full disk (each node keeps its data
//! on a small tmpfs, which the test fills up and then frees), a member replaced (removed,
//! its data directory wiped, started with `--join`, added back and promoted, while the
//! clients keep writing and watching), and a damaged log (a stopped node's largest log
//! segment gets a flipped byte: the node must refuse to start, and is then replaced the
//! same way), and a rolling upgrade: the nodes start as the previous release
//! (`kuorum_e2e::previous_release`) and are upgraded one at a time among the other faults;
//! once all run this release, that round instead tries a downgrade, which must be refused
//! before the node touches its data. Then it heals everything,
//! lets the clients catch up, and checks the recorded history with the simulator's
//! checkers: K1/K2 (linearizability), K4 (nothing acknowledged lost, unknown outcomes
//! settled), W1-W12 (every watch continuous and caught up) and R1/R2 (the nodes agree).
//!
//! The ground truth the checkers compare against is read from the nodes after healing:
//! each node's watch from the start of history (the compaction window is longer than the
//! run), one replay per node; nodes that disagree at any resourceVersion are R1
//! violations.
//!
//! Budget: `KUORUM_CHAOS_SECS` seconds of faults (default 30). Needs root and iproute2,
//! which CI has; elsewhere it is skipped with a note. The last line it prints is a
//! `chaos-report` JSON object (faults, requests, lost writes, watch gaps, the longest
//! time without an acknowledged write) that docs/reliability.md quotes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use kuorum_api::seams::{Entropy, SplitMix64};
use kuorum_e2e::{die_with_parent, files_ending, flip_middle, kuorum_bin, previous_release, previous_release_stand_in};
use kuorum_sim::check;
use kuorum_sim::client::{request_within, ClientIo, Dial, WatchLines};
use kuorum_sim::history::{EventType, OpKind, Outcome, Recorder, Seen};
use kuorum_sim::membership::{add_member, remove_member};
use kuorum_sim::replay::{seen_of, Applied, Fnv, Replay};
use kuorum_sim::traffic::{Traffic, RESOURCES};
use serde_json::Value;

const NODES: u64 = 3;
const SUBNET: &str = "10.77.0";
/// Each node's data lives on a tmpfs this large, so the test can fill it.
const DISK_MB: u64 = 192;

fn run(cmd: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(cmd).args(args).output().map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{cmd} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

fn ip(args: &[&str]) {
    run("ip", args).unwrap_or_else(|e| panic!("{e}"));
}

/// The namespaces, mounts and node processes of one run; all undone on drop.
struct Lab {
    prefix: String,
    namespaces: Vec<String>,
    mounts: Vec<PathBuf>,
    nodes: BTreeMap<u64, Option<Child>>,
    /// Nodes whose data directory was replaced: they start with `--join` from then on.
    joining: std::collections::BTreeSet<u64>,
    /// This release.
    bin: PathBuf,
    /// Nodes that run another release: its binary and extra arguments.
    release: BTreeMap<u64, (PathBuf, Vec<String>)>,
    dir: tempfile::TempDir,
}

impl Lab {
    fn ns(&self, name: &str) -> String {
        format!("{}-{name}", self.prefix)
    }

    /// The bridge namespace, one namespace per node and one for the clients.
    fn build(bin: PathBuf) -> Lab {
        let prefix = format!("kq{}", std::process::id() % 100_000);
        let dir = tempfile::Builder::new().prefix("kuorum-chaos-").tempdir().unwrap();
        let mut lab = Lab {
            prefix,
            namespaces: vec![],
            mounts: vec![],
            nodes: BTreeMap::new(),
            joining: Default::default(),
            bin,
            release: BTreeMap::new(),
            dir,
        };
        let br = lab.ns("br");
        ip(&["netns", "add", &br]);
        lab.namespaces.push(br.clone());
        ip(&["-n", &br, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &br, "link", "set", "br0", "up"]);
        let hosts: Vec<(String, String)> = (1..=NODES)
            .map(|i| (format!("n{i}"), format!("{SUBNET}.{i}")))
            .chain([("c".into(), format!("{SUBNET}.100"))])
            .collect();
        for (name, addr) in hosts {
            let ns = lab.ns(&name);
            ip(&["netns", "add", &ns]);
            lab.namespaces.push(ns.clone());
            let (inner, outer) = (format!("{}{name}i", lab.prefix), format!("{}{name}o", lab.prefix));
            ip(&["link", "add", &inner, "type", "veth", "peer", "name", &outer]);
            ip(&["link", "set", &inner, "netns", &ns]);
            ip(&["link", "set", &outer, "netns", &br]);
            ip(&["-n", &ns, "link", "set", &inner, "name", "eth0"]);
            ip(&["-n", &ns, "addr", "add", &format!("{addr}/24"), "dev", "eth0"]);
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            ip(&["-n", &br, "link", "set", &outer, "master", "br0"]);
            ip(&["-n", &br, "link", "set", &outer, "up"]);
        }
        for id in 1..=NODES {
            let data = lab.data_dir(id);
            std::fs::create_dir_all(&data).unwrap();
            run("mount", &["-t", "tmpfs", "-o", &format!("size={DISK_MB}m"), "tmpfs", data.to_str().unwrap()])
                .unwrap_or_else(|e| panic!("{e}"));
            lab.mounts.push(data);
            lab.nodes.insert(id, None);
        }
        lab
    }

    fn data_dir(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("node{id}"))
    }

    fn start(&mut self, id: u64) {
        let peers: Vec<String> = (1..=NODES).map(|i| format!("{i}={SUBNET}.{i}:6543")).collect();
        let log_path = self.dir.path().join(format!("node{id}.log"));
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).unwrap();
        // This release's nodes queue a whole run's events per watcher, so the checkers'
        // replay from rv 1 fits even after an hour (the previous release's flags are its own).
        let (bin, extra) = self
            .release
            .get(&id)
            .cloned()
            .unwrap_or_else(|| (self.bin.clone(), vec!["--watch-queue-events".to_string(), "1000000".to_string()]));
        writeln!(log, "===== chaos: start node {id} ({} {})", bin.display(), extra.join(" ")).unwrap();
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns(&format!("n{id}"))])
            .arg(&bin)
            .args(["serve", "--id", &id.to_string(), "--insecure"])
            .args(&extra)
            .args(["--listen", &format!("{SUBNET}.{id}:6443"), "--peer-listen", &format!("{SUBNET}.{id}:6543")])
            .args(["--peers", &peers.join(",")])
            .args(self.joining.contains(&id).then_some("--join"))
            .arg("--data-dir")
            .arg(self.data_dir(id).join("data"))
            // Longer than the run: the checkers read the whole history back.
            .args(["--compaction-window-secs", "7200"])
            .env("RUST_LOG", "info,openraft=warn")
            .env("RUST_BACKTRACE", "0")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        die_with_parent(&mut cmd);
        self.nodes.insert(id, Some(cmd.spawn().unwrap()));
    }

    /// The node's process id (`ip netns exec` execs the node in its place).
    fn pid(&self, id: u64) -> Option<i32> {
        self.nodes[&id].as_ref().map(|c| c.id() as i32)
    }

    fn signal(&self, id: u64, sig: i32) {
        if let Some(pid) = self.pid(id) {
            unsafe { libc::kill(pid, sig) };
        }
    }

    fn kill(&mut self, id: u64) {
        if let Some(mut c) = self.nodes.insert(id, None).flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Whether the node's process has exited (it is then reaped).
    fn exited(&mut self, id: u64) -> bool {
        match self.nodes.get_mut(&id).and_then(|c| c.as_mut()) {
            None => true,
            Some(c) => matches!(c.try_wait(), Ok(Some(_))),
        }
    }

    fn link(&self, id: u64, up: bool) {
        let outer = format!("{}n{id}o", self.prefix);
        ip(&["-n", &self.ns("br"), "link", "set", &outer, if up { "up" } else { "down" }]);
    }

    /// Replaces the stopped node's data directory with an empty one; it joins from now on.
    fn wipe(&mut self, id: u64) {
        assert!(self.nodes[&id].is_none(), "node {id} must be stopped to be wiped");
        let _ = std::fs::remove_dir_all(self.data_dir(id).join("data"));
        self.joining.insert(id);
    }

    /// Flips a byte in the middle of the stopped node's largest log segment; answers
    /// whether there was one.
    fn damage_log(&self, id: u64) -> bool {
        let files = files_ending(&self.data_dir(id).join("data").join("log"), ".log");
        let Some(file) = files.iter().max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)) else {
            return false;
        };
        flip_middle(file, 1);
        true
    }

    /// Waits up to `within` for the node's process to exit; answers whether it did.
    fn exits_within(&mut self, id: u64, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.exited(id) {
                self.nodes.insert(id, None);
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    fn filler(&self, id: u64) -> PathBuf {
        self.data_dir(id).join("filler")
    }

    /// Fills the node's disk: writes until the filesystem refuses.
    fn fill_disk(&self, id: u64) {
        let mut f = File::create(self.filler(id)).unwrap();
        let chunk = vec![0u8; 1 << 20];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }

    fn free_disk(&self, id: u64) {
        let _ = std::fs::remove_file(self.filler(id));
    }

    /// Restarts, as systemd's `Restart=always` would, every node that exited because its
    /// disk filled up (it exits when replication stops on a storage error); any other
    /// exit is a failure of the test. Answers how many were restarted.
    fn supervise(&mut self) -> u32 {
        let mut restarted = 0;
        for id in 1..=NODES {
            if self.nodes[&id].is_some() && self.exited(id) {
                let life = self.last_life(id);
                let why = life.lines().filter(|l| l.contains("replication stopped")).last().unwrap_or("");
                assert!(
                    why.contains("No space left on device"),
                    "node {id} exited, not for a full disk:\n{}",
                    self.log_tail(id)
                );
                self.kill(id);
                self.start(id);
                restarted += 1;
            }
        }
        restarted
    }

    /// The node's log since its last start.
    fn last_life(&self, id: u64) -> String {
        let log = std::fs::read_to_string(self.dir.path().join(format!("node{id}.log"))).unwrap_or_default();
        log.rsplit("===== chaos: start node").next().unwrap_or_default().to_string()
    }

    fn log_tail(&self, id: u64) -> String {
        let text = std::fs::read_to_string(self.dir.path().join(format!("node{id}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for id in 1..=NODES {
            self.signal(id, libc::SIGCONT);
            self.kill(id);
        }
        for m in &self.mounts {
            let _ = run("umount", &["-l", m.to_str().unwrap()]);
        }
        for ns in &self.namespaces {
            let _ = run("ip", &["netns", "del", ns]);
        }
    }
}

/// Real TCP from the clients' namespace to a node's REST port.
struct NetnsDial;

impl Dial for NetnsDial {
    fn dial(&self, node: u64) -> BoxFuture<'static, std::io::Result<Box<dyn ClientIo>>> {
        Box::pin(async move {
            let s = tokio::net::TcpStream::connect((format!("{SUBNET}.{node}"), 6443)).await?;
            s.set_nodelay(true)?;
            Ok(Box::new(s) as Box<dyn ClientIo>)
        })
    }
}

/// Moves the calling thread into network namespace `ns`.
fn enter_netns(ns: &str) {
    let f = File::open(format!("/var/run/netns/{ns}")).unwrap_or_else(|e| panic!("open netns {ns}: {e}"));
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {ns}: {}", std::io::Error::last_os_error());
}

/// Whether this machine lets the test make namespaces, mounts and veths.
fn lab_possible() -> Result<(), String> {
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    run("ip", &["-V"])?;
    let probe = format!("kqprobe{}", std::process::id() % 100_000);
    run("ip", &["netns", "add", &probe])?;
    run("ip", &["netns", "del", &probe])
}

#[derive(Default, Debug, serde::Serialize)]
struct Figures {
    seconds: u64,
    sigkill: u32,
    sigstop: u32,
    partition: u32,
    disk_full: u32,
    /// Nodes that exited on a full disk (restarted once space was back).
    exited_on_full_disk: u32,
    /// Members removed, wiped, started with `--join`, added back and promoted.
    replaced: u32,
    /// Log segments damaged on a stopped node, and how many times the node then refused
    /// to start (each such node is then replaced).
    log_damaged: u32,
    damage_refused: u32,
    /// What the nodes ran first; nodes upgraded from it to this release, one at a time.
    previous_release: String,
    upgraded: u32,
    /// Downgrades tried (a node of this release restarted as the previous one) and
    /// refused at start.
    downgrades_tried: u32,
    downgrades_refused: u32,
    /// The cluster's data format at the end (2 once every node runs this release).
    data_format: u64,
    /// The longest time without an acknowledged write of a probe that writes every
    /// 200 ms through each node in turn: the slowest recovery from a fault.
    slowest_recovery_ms: u64,
    requests: usize,
    acknowledged_writes: usize,
    unknown_outcomes: usize,
    watch_sessions: usize,
    watch_events: usize,
    acknowledged_writes_lost: usize,
    watch_gaps: usize,
    violations: usize,
}

#[test]
fn chaos_on_real_processes_in_network_namespaces() {
    let Some(bin) = kuorum_bin() else {
        eprintln!("SKIP: no kuorum binary (set KUORUM_BIN or run scripts/test.sh)");
        return;
    };
    if let Err(why) = lab_possible() {
        eprintln!("SKIP: cannot make network namespaces here ({why}); the chaos test needs root and iproute2");
        return;
    }
    let budget =
        Duration::from_secs(std::env::var("KUORUM_CHAOS_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30));
    let seed: u64 = std::env::var("KUORUM_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    println!("chaos: seed {seed} (KUORUM_CHAOS_SEED={seed} repeats the fault order), {} s of faults", budget.as_secs());
    // The fault order and timing repeat for a seed.
    let entropy = SplitMix64::new(seed);
    let rng = || entropy.next_u64();

    let (previous, previous_args, what) = previous_release(&bin);
    println!("chaos: the nodes start as {what} and are upgraded one at a time");
    let stand_in = previous_release_stand_in(&bin);
    let mut lab = Lab::build(bin);
    for id in 1..=NODES {
        lab.release.insert(id, (previous.clone(), previous_args.clone()));
        lab.start(id);
    }
    let client_ns = lab.ns("c");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(move || enter_netns(&client_ns))
        .build()
        .unwrap();
    let dial: Arc<dyn Dial> = Arc::new(NetnsDial);
    wait_ready(&rt, &dial, &mut lab, Duration::from_secs(60));

    let rec = Recorder::default();
    let traffic = Traffic { rec: rec.clone(), nodes: NODES, keys: 8, seed, dial: dial.clone() };
    let writers: Vec<_> = (0..4).map(|c| rt.spawn(traffic.clone().writer(c))).collect();
    let watchers: Vec<_> = (0..2).map(|w| rt.spawn(traffic.clone().watcher(w))).collect();
    let probe = Arc::new(std::sync::Mutex::new(WriteProbe::default()));
    let prober = rt.spawn(write_probe(dial.clone(), probe.clone()));

    // Safety phase: faults in turn, on random nodes.
    let mut fig = Figures { seconds: budget.as_secs(), previous_release: what, ..Figures::default() };
    let started = Instant::now();
    let mut round = 0u32;
    // At least four rounds, so every run has both membership kinds.
    while started.elapsed() < budget || round < 4 {
        std::thread::sleep(Duration::from_millis(1000 + rng() % 1500));
        fig.exited_on_full_disk += lab.supervise();
        let id = 1 + rng() % NODES;
        // The order of the kinds: the membership changes come early, so a short run
        // (CI's 30 s) has each of them at least once, and two of the three upgrades.
        match [4, 6, 5, 6, 0, 6, 1, 2, 3][round as usize % 9] {
            0 => {
                fig.sigkill += 1;
                lab.kill(id);
                std::thread::sleep(Duration::from_millis(500 + rng() % 1500));
                lab.start(id);
            }
            1 => {
                fig.sigstop += 1;
                lab.signal(id, libc::SIGSTOP);
                std::thread::sleep(Duration::from_millis(1000 + rng() % 3000));
                lab.signal(id, libc::SIGCONT);
            }
            2 => {
                fig.partition += 1;
                lab.link(id, false);
                std::thread::sleep(Duration::from_millis(1000 + rng() % 4000));
                lab.link(id, true);
            }
            3 => {
                fig.disk_full += 1;
                lab.fill_disk(id);
                std::thread::sleep(Duration::from_millis(1000 + rng() % 2000));
                lab.free_disk(id);
                fig.exited_on_full_disk += lab.supervise();
            }
            4 => {
                replace(&rt, &dial, &mut lab, id);
                fig.replaced += 1;
            }
            6 => match lab.release.keys().copied().collect::<Vec<_>>() {
                old if !old.is_empty() => {
                    let id = old[(rng() % old.len() as u64) as usize];
                    lab.kill(id);
                    lab.release.remove(&id);
                    lab.start(id);
                    fig.upgraded += 1;
                }
                _ => {
                    // Every node runs this release, so every data directory records format
                    // 2: the previous release must refuse it before touching it.
                    fig.downgrades_tried += 1;
                    lab.kill(id);
                    lab.release.insert(id, stand_in.clone());
                    lab.start(id);
                    let exited = lab.exits_within(id, Duration::from_secs(30));
                    lab.release.remove(&id);
                    let life = lab.last_life(id);
                    assert!(
                        exited && life.contains("Downgrading a node is refused"),
                        "node {id} started as the previous release on a directory this one opened:\n{}",
                        lab.log_tail(id)
                    );
                    fig.downgrades_refused += 1;
                    lab.kill(id);
                    lab.start(id);
                }
            },
            _ => {
                lab.kill(id);
                if lab.damage_log(id) {
                    fig.log_damaged += 1;
                    lab.start(id);
                    if lab.exits_within(id, Duration::from_secs(30)) {
                        let log = lab.log_tail(id);
                        assert!(log.contains("corrupt"), "node {id} exited, not for its damaged log:\n{log}");
                        fig.damage_refused += 1;
                    }
                }
                lab.kill(id);
                replace(&rt, &dial, &mut lab, id);
                fig.replaced += 1;
            }
        }
        round += 1;
    }

    // Liveness phase: everything healed; every node must come back and catch up.
    for id in 1..=NODES {
        lab.signal(id, libc::SIGCONT);
        lab.link(id, true);
        lab.free_disk(id);
    }
    fig.exited_on_full_disk += lab.supervise();
    fig.exited_on_full_disk += wait_ready(&rt, &dial, &mut lab, Duration::from_secs(90));
    std::thread::sleep(Duration::from_secs(3));
    for w in writers {
        w.abort();
    }
    prober.abort();
    fig.slowest_recovery_ms = probe.lock().unwrap().longest.as_millis() as u64;
    if lab.release.is_empty() {
        // The leader raises the format within a few seconds once every member reads it.
        let d = dial.clone();
        fig.data_format = rt.block_on(rt.spawn(data_format_within(d, Duration::from_secs(30)))).unwrap();
        assert_eq!(fig.data_format, 2, "every node runs this release, the cluster's data format must be raised");
    }
    std::thread::sleep(Duration::from_secs(6));
    for w in watchers {
        w.abort();
    }

    // The ground truth: each node's own account of every change, and its final state.
    let (replay, states) = rt.block_on(rt.spawn(read_back(dial.clone()))).unwrap();
    let ops = rec.ops();
    let sessions = rec.sessions();
    let mut inconclusive = Vec::new();
    let violations = check::all(&ops, &sessions, &replay, &states, &mut inconclusive);
    fig.requests = ops.len();
    fig.acknowledged_writes =
        ops.iter().filter(|o| o.kind.is_write() && matches!(o.outcome, Outcome::Written { .. })).count();
    fig.unknown_outcomes = ops.iter().filter(|o| o.outcome == Outcome::Unknown).count();
    fig.watch_sessions = sessions.len();
    fig.watch_events = sessions.iter().map(|s| s.items.len()).sum();
    fig.acknowledged_writes_lost = lost_writes(&ops, &replay);
    fig.watch_gaps = violations.iter().filter(|v| v.property.starts_with('W')).count();
    fig.violations = violations.len();
    for i in &inconclusive {
        println!("chaos: inconclusive: {i}");
    }
    println!("chaos-report {}", serde_json::to_string(&fig).unwrap());
    if !violations.is_empty() {
        for id in 1..=NODES {
            eprintln!("--- node {id} log tail:\n{}", lab.log_tail(id));
        }
    }
    assert!(
        violations.is_empty(),
        "seed {seed}: {} violations:\n{}",
        violations.len(),
        violations.iter().map(|v| v.to_string()).collect::<Vec<_>>().join("\n")
    );
    assert_eq!(fig.acknowledged_writes_lost, 0);
    assert_eq!(fig.damage_refused, fig.log_damaged, "a node started on a damaged log: {fig:?}");
    assert!(fig.acknowledged_writes > 50, "too little got through to say anything: {fig:?}");
    assert!(fig.sigkill + fig.sigstop + fig.partition + fig.disk_full + fig.replaced >= 4, "{fig:?}");
    assert!(fig.replaced >= 2 && fig.log_damaged >= 1, "every run replaces members: {fig:?}");
    assert!(fig.upgraded >= 2, "every run upgrades nodes: {fig:?}");
}

/// What the write probe saw: when a write was last acknowledged, and the longest time
/// between two acknowledged writes so far.
#[derive(Default)]
struct WriteProbe {
    last: Option<Instant>,
    longest: Duration,
}

/// Writes one ConfigMap (outside the namespace the checkers read) every 200 ms, through
/// each node in turn, and records the longest time between two acknowledged writes.
async fn write_probe(dial: Arc<dyn Dial>, probe: Arc<std::sync::Mutex<WriteProbe>>) {
    const PATH: &str = "/api/v1/namespaces/kube-system/configmaps";
    let mut n = 0u64;
    loop {
        n += 1;
        let node = 1 + n % NODES;
        let body = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "chaos-probe"}, "data": {"n": n.to_string()},
        });
        let put = request_within(
            Duration::from_secs(5),
            dial.as_ref(),
            node,
            "PUT",
            &format!("{PATH}/chaos-probe"),
            Some(&body),
        )
        .await;
        let ok = match put {
            Some(r) if r.status == 404 => {
                request_within(Duration::from_secs(5), dial.as_ref(), node, "POST", PATH, Some(&body))
                    .await
                    .is_some_and(|r| r.status == 201)
            }
            Some(r) => r.status == 200,
            None => false,
        };
        let now = Instant::now();
        {
            let mut p = probe.lock().unwrap();
            if ok {
                if let Some(last) = p.last {
                    p.longest = p.longest.max(now - last);
                }
                p.last = Some(now);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The cluster's data format as the nodes report it (`/debug/kuorum/raft`), once one
/// reports 2, or the last seen when `within` passes.
async fn data_format_within(dial: Arc<dyn Dial>, within: Duration) -> u64 {
    let deadline = Instant::now() + within;
    let mut seen = 0;
    while Instant::now() < deadline {
        for node in 1..=NODES {
            let r =
                request_within(Duration::from_secs(2), dial.as_ref(), node, "GET", "/debug/kuorum/raft", None).await;
            if let Some(f) = r.and_then(|r| r.body["data_format"].as_u64()) {
                seen = seen.max(f);
            }
        }
        if seen >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    seen
}

/// Replaces member `id` as an operator replaces a failed node: removes it through the
/// leader, stops it, wipes its data directory, starts it with `--join`, adds it back (the
/// add answers once it has caught up) and promotes it. No other fault runs meanwhile, so
/// a leader that no longer lists it after a lost answer has committed its removal.
fn replace(rt: &tokio::runtime::Runtime, dial: &Arc<dyn Dial>, lab: &mut Lab, id: u64) {
    let d = dial.clone();
    let removed =
        rt.block_on(rt.spawn(async move { remove_member(d.as_ref(), NODES, id, Duration::from_secs(60)).await }));
    assert!(removed.unwrap(), "node {id} could not be removed:\n{}", lab.log_tail(id));
    lab.kill(id);
    lab.wipe(id);
    lab.start(id);
    let d = dial.clone();
    let peer = format!("{SUBNET}.{id}:6543");
    let added =
        rt.block_on(rt.spawn(async move { add_member(d.as_ref(), NODES, id, &peer, Duration::from_secs(120)).await }));
    assert!(added.unwrap(), "node {id} could not be added back:\n{}", lab.log_tail(id));
}

/// Waits until every node answers `/readyz`, restarting nodes that exit on a full disk;
/// answers how many it restarted.
fn wait_ready(rt: &tokio::runtime::Runtime, dial: &Arc<dyn Dial>, lab: &mut Lab, within: Duration) -> u32 {
    let deadline = Instant::now() + within;
    let mut restarted = 0;
    for id in 1..=NODES {
        loop {
            let d = dial.clone();
            let ok = rt
                .block_on(rt.spawn(async move {
                    request_within(Duration::from_secs(2), d.as_ref(), id, "GET", "/readyz", None).await
                }))
                .unwrap()
                .is_some_and(|r| r.status == 200);
            if ok {
                break;
            }
            restarted += lab.supervise();
            assert!(Instant::now() < deadline, "node {id} not ready:\n{}", lab.log_tail(id));
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    restarted
}

/// Per node, every change under the traffic's prefixes from the start of history (a
/// watch from resourceVersion 1 read up to the node's current one), merged into the
/// replay; and per node its applied index and a digest of its objects.
async fn read_back(dial: Arc<dyn Dial>) -> (Replay, BTreeMap<u64, (u64, u64)>) {
    let mut replay = Replay::default();
    let mut states = BTreeMap::new();
    let mut owner: BTreeMap<u64, u64> = BTreeMap::new();
    for node in 1..=NODES {
        let mut changes: BTreeMap<u64, Vec<Applied>> = BTreeMap::new();
        let mut digest = Fnv::default();
        let mut top = 0;
        for resource in RESOURCES {
            let prefix = format!("{resource}/default/");
            let path = format!("/api/v1/namespaces/default/{resource}");
            let list = request_within(Duration::from_secs(10), dial.as_ref(), node, "GET", &path, None)
                .await
                .unwrap_or_else(|| panic!("node {node}: no list of {resource}"));
            assert_eq!(list.status, 200, "node {node}: {}", list.body);
            let rv: u64 = list.body["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
            top = top.max(rv);
            let mut listed = BTreeMap::new();
            for o in list.body["items"].as_array().unwrap() {
                let s = seen_of(o).unwrap();
                let key = format!("{prefix}{}", o["metadata"]["name"].as_str().unwrap());
                digest.write(format!("{key} {} {};", s.mod_rv, s.value).as_bytes());
                listed.insert(key, s);
            }
            let watch = format!("{path}?watch=true&allowWatchBookmarks=true&resourceVersion=1");
            let mut lines = WatchLines::open(dial.as_ref(), node, &watch).await.expect("replay watch opens");
            assert_eq!(lines.status, 200, "node {node}: the replay watch from RV 1 was refused");
            // Read until the stream goes quiet: the history is then replayed, which the
            // comparison with the list below confirms.
            let mut current: BTreeMap<String, Seen> = BTreeMap::new();
            loop {
                let line = match tokio::time::timeout(Duration::from_secs(3), lines.next_line()).await {
                    Err(_) => break,
                    Ok(l) => l.unwrap().unwrap_or_else(|| panic!("node {node}: the replay watch of {resource} ended")),
                };
                let ev: Value = serde_json::from_slice(&line).unwrap();
                let obj = &ev["object"];
                let kind = match ev["type"].as_str().unwrap() {
                    "ADDED" => EventType::Added,
                    "MODIFIED" => EventType::Modified,
                    "DELETED" => EventType::Deleted,
                    "ERROR" => panic!("node {node}: replay watch error {obj}"),
                    _ => continue,
                };
                let Some(seen) = seen_of(obj) else { continue };
                let key = format!("{prefix}{}", obj["metadata"]["name"].as_str().unwrap());
                let prev =
                    if kind == EventType::Deleted { current.remove(&key) } else { current.insert(key.clone(), seen) };
                changes.entry(seen.mod_rv).or_default().push(Applied { key, kind, seen, prev });
            }
            assert_eq!(current, listed, "node {node}: its replay of {resource} does not end in its own state");
        }
        states.insert(node, (top, digest.0));
        replay.max_applied = replay.max_applied.max(top);
        for (rv, list) in changes {
            match replay.changes.get(&rv) {
                None => {
                    replay.changes.insert(rv, list);
                    owner.insert(rv, node);
                }
                Some(have) if *have == list => {}
                Some(have) => replay
                    .disagreements
                    .push(format!("index {rv}: node {} applied {have:?}, node {node} applied {list:?}", owner[&rv])),
            }
        }
    }
    (replay, states)
}

/// Acknowledged writes the nodes do not hold: a create or update whose value is not at
/// the resourceVersion it was acknowledged at, a delete with no deletion there.
fn lost_writes(ops: &[kuorum_sim::history::Op], replay: &Replay) -> usize {
    ops.iter()
        .filter(|o| {
            let Outcome::Written { rv } = o.outcome else { return false };
            let at = replay.changes.get(&rv).map(Vec::as_slice).unwrap_or(&[]);
            match &o.kind {
                OpKind::Create { key, value } | OpKind::Update { key, value, .. } => {
                    !at.iter().any(|a| &a.key == key && a.seen.value == *value)
                }
                OpKind::Delete { key, .. } => !at.iter().any(|a| &a.key == key && a.kind == EventType::Deleted),
                _ => false,
            }
        })
        .count()
}
