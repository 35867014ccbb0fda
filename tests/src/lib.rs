//! End-to-end harness: real `kuorum serve` processes on loopback, driven by real clients.
//!
//! A [`Cluster`] starts N nodes on free 127.0.0.1 ports with their own data dirs under one
//! temp dir, waits for `/readyz` and for a leader (`GET /debug/kuorum/raft`), and can
//! SIGKILL and restart nodes with the same arguments and data dir. It writes a kubeconfig
//! per node and runs kubectl against it. Dropping the cluster kills every node it started;
//! if the thread is panicking it first prints the tail of each node's log.
//!
//! Where things are found:
//! - the binary: `$KUORUM_BIN`, else `kuorum` next to the test executable's profile dir,
//!   else `$CARGO_TARGET_DIR/release/kuorum`, else `~/.cache/kuorum-target/release/kuorum`;
//! - kubectl: `$KUBECTL`, else `$KUORUM_VENV/bin/kubectl`, else
//!   `~/.cache/kuorum-venv/bin/kubectl` (never the `kubectl` on PATH: on the dev machines
//!   that is an unrelated build).
//!
//! When `$KUORUM_BIN` (or `$KUBECTL`) is set it must exist, so CI (scripts/test.sh sets
//! both) fails loudly. When unset and nothing is found, [`Cluster::start_or_skip`] returns
//! `None` and the test prints SKIP, so a debug `cargo test --workspace` without a release
//! build does not fail for that reason alone.

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};

pub use serde_json;

pub mod https_server;

/// Default bound for waiting on startup, elections and catch-up.
pub const WAIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// Locating the binaries
// ---------------------------------------------------------------------------------------

fn home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/root"))
}

/// The previous release to start from, for upgrade tests: (binary, extra arguments, what
/// it is). The binary `KUORUM_PREVIOUS_BIN` names (built by `scripts/previous-release.sh`
/// from the pinned commit f960e37) when it is set; otherwise `this` binary acting as it
/// ([`previous_release_stand_in`]).
pub fn previous_release(this: &Path) -> (PathBuf, Vec<String>, String) {
    match std::env::var_os("KUORUM_PREVIOUS_BIN") {
        Some(p) => (PathBuf::from(&p), vec![], format!("the previous release's binary {}", Path::new(&p).display())),
        None => {
            let (bin, args) = previous_release_stand_in(this);
            let what = "this binary acting as the previous release (--max-data-format 1; set KUORUM_PREVIOUS_BIN, \
                        see scripts/previous-release.sh, for the real one)";
            (bin, args, what.into())
        }
    }
}

/// `this` binary acting as the previous release: with `--max-data-format 1` it answers
/// the peers as that release does, writes format 1 only, and refuses a directory a newer
/// release opened (which the real previous release, predating the check, does not).
pub fn previous_release_stand_in(this: &Path) -> (PathBuf, Vec<String>) {
    (this.to_path_buf(), vec!["--max-data-format".into(), "1".into()])
}

/// The `kuorum` binary to test, or `None` if it cannot be found and `$KUORUM_BIN` is unset.
/// Panics if `$KUORUM_BIN` names a file that does not exist.
pub fn kuorum_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KUORUM_BIN") {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "KUORUM_BIN={} does not exist (build with `cargo build --release -p kuorum`)",
            p.display()
        );
        return Some(p);
    }
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe() {
        // target/<profile>/deps/<test>-<hash>  →  target/<profile>/kuorum
        if let Some(profile_dir) = exe.parent().and_then(Path::parent) {
            candidates.push(profile_dir.join("kuorum"));
            if let Some(target) = profile_dir.parent() {
                candidates.push(target.join("release").join("kuorum"));
            }
        }
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        candidates.push(PathBuf::from(t).join("release").join("kuorum"));
    }
    candidates.push(home().join(".cache/kuorum-target/release/kuorum"));
    candidates.into_iter().find(|p| p.is_file())
}

/// The kubectl to use, or `None` if it cannot be found and `$KUBECTL` is unset.
pub fn kubectl_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KUBECTL") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "KUBECTL={} does not exist (run scripts/setup.sh)", p.display());
        return Some(p);
    }
    let venv = std::env::var_os("KUORUM_VENV").map(PathBuf::from).unwrap_or_else(|| home().join(".cache/kuorum-venv"));
    Some(venv.join("bin/kubectl")).filter(|p| p.is_file())
}

/// Free loopback ports, `n` of them, below the kernel's ephemeral range (32768 and up on
/// Linux). A port the kernel hands out as the source of an outgoing connection (a
/// parallel test's client, say) is never one of these, so none is taken between this
/// check and the node binding it; a cursor shared by the process walks through
/// 10000..21000 so parallel tests of one binary never pick the same port either.
pub fn free_ports(n: usize) -> Vec<u16> {
    const LOW: u32 = 10_000;
    const SPAN: u32 = 11_000;
    static CURSOR: std::sync::OnceLock<std::sync::atomic::AtomicU32> = std::sync::OnceLock::new();
    let cursor = CURSOR.get_or_init(|| std::sync::atomic::AtomicU32::new(std::process::id().wrapping_mul(7919) % SPAN));
    let mut held = Vec::with_capacity(n);
    for _ in 0..SPAN {
        if held.len() == n {
            break;
        }
        let port = (LOW + cursor.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % SPAN) as u16;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port)) {
            held.push(l);
        }
    }
    assert_eq!(held.len(), n, "no {n} free loopback ports in {LOW}..{}", LOW + SPAN);
    held.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

// ---------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------

/// A reply: status code and the body parsed as JSON (`Value::Null` if empty or not JSON;
/// the raw text is kept too).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub text: String,
}

impl Reply {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
    /// `reason` of a `Status` body (e.g. "Conflict", "AlreadyExists", "NotFound").
    pub fn reason(&self) -> Option<&str> {
        self.body.get("reason").and_then(Value::as_str)
    }
    pub fn rv(&self) -> Option<&str> {
        self.body.pointer("/metadata/resourceVersion").and_then(Value::as_str)
    }
}

/// Blocking JSON client with a bounded timeout. One instance keeps its connections alive.
#[derive(Clone)]
pub struct Http {
    client: reqwest::blocking::Client,
}

impl Default for Http {
    fn default() -> Self {
        Self::with_timeout(Duration::from_secs(10))
    }
}

impl Http {
    pub fn with_timeout(timeout: Duration) -> Self {
        let client = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(2))
            .pool_idle_timeout(Duration::from_secs(30))
            .build()
            .expect("reqwest client");
        Http { client }
    }

    /// Sends `method url` with an optional JSON body. Transport errors (refused, timeout)
    /// are `Err`; any HTTP status is `Ok`.
    pub fn request(&self, method: &str, url: &str, body: Option<&Value>) -> Result<Reply> {
        let method = reqwest::Method::from_bytes(method.as_bytes())?;
        let mut req = self.client.request(method, url).header("Accept", "application/json");
        if let Some(b) = body {
            req = req.header("Content-Type", "application/json").body(serde_json::to_vec(b)?);
        }
        let resp = req.send().with_context(|| url.to_string())?;
        let status = resp.status().as_u16();
        let text = resp.text().with_context(|| format!("reading body of {url}"))?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Reply { status, body, text })
    }

    pub fn get(&self, url: &str) -> Result<Reply> {
        self.request("GET", url, None)
    }
    pub fn post(&self, url: &str, body: &Value) -> Result<Reply> {
        self.request("POST", url, Some(body))
    }
    pub fn put(&self, url: &str, body: &Value) -> Result<Reply> {
        self.request("PUT", url, Some(body))
    }
    pub fn delete(&self, url: &str) -> Result<Reply> {
        self.request("DELETE", url, None)
    }

    /// Names of every item in a LIST (no resourceVersion: a linearizable read), following
    /// `metadata.continue`. `path` is e.g. `/api/v1/namespaces/default/configmaps`.
    pub fn list_names(&self, base: &str, path: &str) -> Result<BTreeSet<String>> {
        let mut names = BTreeSet::new();
        let mut cont: Option<String> = None;
        for _ in 0..10_000 {
            let url = match &cont {
                None => format!("{base}{path}?limit=500"),
                Some(c) => format!("{base}{path}?limit=500&continue={}", urlencode(c)),
            };
            let r = self.get(&url)?;
            if r.status != 200 {
                bail!("LIST {url}: {} {}", r.status, r.text);
            }
            for item in r.body["items"].as_array().ok_or_else(|| anyhow!("LIST {url}: no items: {}", r.text))? {
                let name = item.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
                names.insert(name.to_string());
            }
            match r.body.pointer("/metadata/continue").and_then(Value::as_str) {
                Some(c) if !c.is_empty() => cont = Some(c.to_string()),
                _ => return Ok(names),
            }
        }
        bail!("LIST {path}: too many pages")
    }
}

fn urlencode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A ConfigMap manifest.
pub fn configmap(namespace: &str, name: &str, data: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    })
}

/// `GET /debug/kuorum/raft` as seen by one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftStatus {
    pub id: u64,
    pub leader: Option<u64>,
    pub term: u64,
    pub last_applied: u64,
    pub voters: Vec<u64>,
}

impl RaftStatus {
    fn from_json(v: &Value) -> Result<Self> {
        let u = |k: &str| v.get(k).and_then(Value::as_u64).ok_or_else(|| anyhow!("raft status: no {k} in {v}"));
        Ok(RaftStatus {
            id: u("id")?,
            leader: v.get("leader").and_then(Value::as_u64),
            term: u("term").unwrap_or(0),
            last_applied: u("last_applied").unwrap_or(0),
            voters: v
                .get("voters")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
                .unwrap_or_default(),
        })
    }
}

// ---------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------

/// One `kuorum serve` process (or its stopped slot).
pub struct Node {
    pub id: u64,
    pub rest_port: u16,
    pub peer_port: u16,
    pub data_dir: PathBuf,
    pub log_path: PathBuf,
    child: Option<Child>,
    /// Starts so far (1 after the first start).
    pub starts: u32,
    /// Started with `--join` (added to a running cluster rather than bootstrapping it).
    pub join: bool,
    /// Runs this binary with these extra arguments instead of the cluster's (upgrade
    /// tests: a node of an older release).
    pub release: Option<(PathBuf, Vec<String>)>,
}

impl Node {
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.rest_port)
    }
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }
    /// OS process id while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

/// Options for [`Cluster::start_with`].
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    pub nodes: usize,
    /// Parent of the temp dir holding data dirs, logs and kubeconfigs (default: system temp).
    pub parent_dir: Option<PathBuf>,
    /// Extra arguments after `serve ...`; `{id}` in one becomes the node's id.
    pub extra_args: Vec<String>,
    /// `RUST_LOG` for the nodes (default: `$KUORUM_E2E_LOG` or "info,openraft=warn").
    pub rust_log: Option<String>,
    /// How long to wait for readiness and a leader.
    pub wait: Duration,
    /// Make each node's data directory with `kuorum snapshot restore` from this backup
    /// before its first start: a new cluster whose first state is the backup's.
    pub restore_from: Option<PathBuf>,
    /// Every node starts with this binary and these extra arguments instead (upgrade
    /// tests: a cluster of an older release; see [`Cluster::set_release`]).
    pub first_release: Option<(PathBuf, Vec<String>)>,
    /// A directory holding `node{id}` directories: each is copied into that node's data
    /// directory before its first start (a data directory another release wrote).
    pub data_from: Option<PathBuf>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            nodes: 3,
            parent_dir: None,
            extra_args: vec![],
            rust_log: None,
            wait: WAIT,
            restore_from: None,
            first_release: None,
            data_from: None,
        }
    }
}

/// N real nodes on loopback. Drop kills them all.
pub struct Cluster {
    pub bin: PathBuf,
    pub nodes: Vec<Node>,
    pub peers_arg: String,
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
    opts: ClusterOptions,
    http: Http,
}

impl Cluster {
    /// Starts `n` nodes and waits for readiness and a leader; `None` (after printing SKIP)
    /// when there is no binary to test and `$KUORUM_BIN` is unset.
    pub fn start_or_skip(n: usize) -> Option<Cluster> {
        Cluster::start_opts_or_skip(ClusterOptions { nodes: n, ..Default::default() })
    }

    /// [`Cluster::start_or_skip`] with the given options.
    pub fn start_opts_or_skip(opts: ClusterOptions) -> Option<Cluster> {
        let Some(bin) = kuorum_bin() else {
            eprintln!("SKIP: no kuorum binary found (set KUORUM_BIN or run scripts/test.sh)");
            return None;
        };
        // Ports are picked free and released before the nodes bind them, so another process
        // (or a parallel test's outgoing connection) can take one in between: a node then
        // exits at once ("Address already in use"). Start over on fresh ports then.
        for attempt in 1.. {
            match Cluster::start_with(bin.clone(), opts.clone()) {
                Ok(c) => return Some(c),
                Err(e) if attempt < 3 && format!("{e:#}").contains("exited unexpectedly") => {
                    eprintln!("harness: cluster start attempt {attempt} failed ({e:#}); retrying on fresh ports");
                }
                Err(e) => panic!("start cluster: {e:#}"),
            }
        }
        unreachable!()
    }

    /// [`Cluster::start_or_skip`] for a test that drives kubectl: `None` (with a SKIP note)
    /// also when there is no kubectl.
    pub fn start_for_kubectl(n: usize) -> Option<Cluster> {
        if kubectl_bin().is_none() {
            eprintln!("SKIP: no kubectl (run scripts/setup.sh or set KUBECTL)");
            return None;
        }
        Cluster::start_or_skip(n)
    }

    /// Starts the nodes, then waits for `/readyz` on all and for an agreed leader.
    pub fn start_with(bin: PathBuf, opts: ClusterOptions) -> Result<Cluster> {
        let dir = match &opts.parent_dir {
            Some(p) => {
                fs::create_dir_all(p)?;
                tempfile::Builder::new().prefix("kuorum-e2e-").tempdir_in(p)?
            }
            None => tempfile::Builder::new().prefix("kuorum-e2e-").tempdir()?,
        };
        let root = dir.path().to_path_buf();
        let ports = free_ports(opts.nodes * 2);
        let mut nodes = Vec::new();
        for i in 0..opts.nodes {
            let id = i as u64 + 1;
            let data_dir = root.join(format!("node{id}"));
            fs::create_dir_all(&data_dir)?;
            nodes.push(Node {
                id,
                rest_port: ports[2 * i],
                peer_port: ports[2 * i + 1],
                data_dir,
                log_path: root.join(format!("node{id}.log")),
                child: None,
                starts: 0,
                join: false,
                release: opts.first_release.clone(),
            });
        }
        let peers_arg =
            nodes.iter().map(|n| format!("{}=127.0.0.1:{}", n.id, n.peer_port)).collect::<Vec<_>>().join(",");
        let mut c = Cluster {
            bin,
            nodes,
            peers_arg,
            dir: Some(dir),
            root,
            opts,
            http: Http::with_timeout(Duration::from_secs(5)),
        };
        let started = (|| {
            if let Some(from) = c.opts.data_from.clone() {
                for id in c.ids() {
                    copy_tree(&from.join(format!("node{id}")), &c.node(id).data_dir)?;
                }
            }
            if let Some(backup) = c.opts.restore_from.clone() {
                for id in c.ids() {
                    let dir = c.node(id).data_dir.display().to_string();
                    let backup = backup.display().to_string();
                    let peers = c.peers_arg.clone();
                    let id_arg = id.to_string();
                    let args = ["snapshot", "restore", &backup, "--data-dir", &dir, "--id", &id_arg, "--peers", &peers];
                    c.cli(&args)?;
                }
            }
            for id in c.ids() {
                c.spawn(id)?;
            }
            let wait = c.opts.wait;
            c.wait_ready(wait)?;
            c.wait_leader(wait)?;
            c.wait_system_namespaces(wait)
        })();
        if let Err(e) = started {
            eprintln!("harness: cluster did not start: {e:#}");
            c.dump_logs(20);
            return Err(e);
        }
        Ok(c)
    }

    /// Waits until every running node serves the bootstrap namespaces (default,
    /// kube-system, kube-public). A node can answer `/readyz` and know its leader a moment
    /// before the leader has written them; a write into `default` then gets 404.
    pub fn wait_system_namespaces(&mut self, timeout: Duration) -> Result<()> {
        let t0 = Instant::now();
        for id in self.running() {
            for ns in ["default", "kube-system", "kube-public"] {
                let url = format!("{}/api/v1/namespaces/{ns}", self.url(id));
                let http = self.http.clone();
                eventually(timeout, &format!("node {id} serves namespace {ns}"), || {
                    let r = http.get(&url)?;
                    Ok((r.status == 200).then_some(()))
                })?;
            }
        }
        let waited = t0.elapsed();
        if waited > Duration::from_millis(200) {
            eprintln!("harness: system namespaces appeared {waited:?} after /readyz and a leader");
        }
        Ok(())
    }

    /// Node ids, 1-based.
    pub fn ids(&self) -> Vec<u64> {
        self.nodes.iter().map(|n| n.id).collect()
    }
    /// Ids of nodes whose process is running.
    pub fn running(&self) -> Vec<u64> {
        self.nodes.iter().filter(|n| n.is_running()).map(|n| n.id).collect()
    }
    pub fn node(&self, id: u64) -> &Node {
        &self.nodes[(id - 1) as usize]
    }
    fn node_mut(&mut self, id: u64) -> &mut Node {
        &mut self.nodes[(id - 1) as usize]
    }
    pub fn url(&self, id: u64) -> String {
        self.node(id).url()
    }
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Node::url).collect()
    }
    /// The temp dir holding data dirs, logs and kubeconfigs.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes `text` to the file `name` in the cluster's directory; answers its path.
    pub fn write_file(&self, name: &str, text: &str) -> String {
        let path = self.root.join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path.to_str().expect("utf-8 temp path").to_string()
    }

    /// `kubectl get ARGS -o json --show-managed-fields` through node `id`, parsed (panics
    /// if kubectl fails).
    pub fn get_json(&self, id: u64, args: &[&str]) -> Value {
        let mut full = vec!["get"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["-o", "json", "--show-managed-fields"]);
        self.kubectl(id, &full).unwrap().ok("kubectl get -o json").json().unwrap()
    }
    pub fn http(&self) -> &Http {
        &self.http
    }

    /// The exact command line a node runs with (same on every restart).
    pub fn serve_args(&self, id: u64) -> Vec<String> {
        let n = self.node(id);
        let mut args = vec![
            "serve".to_string(),
            "--id".into(),
            id.to_string(),
            "--listen".into(),
            format!("127.0.0.1:{}", n.rest_port),
            "--peer-listen".into(),
            format!("127.0.0.1:{}", n.peer_port),
            "--peers".into(),
            self.peers_arg.clone(),
            "--data-dir".into(),
            n.data_dir.display().to_string(),
        ];
        // Plain HTTP and no authentication: the harness's clients are plain. TLS and
        // authentication are tested through `kuorum up` (tests/tls_auth_e2e.rs).
        args.push("--insecure".into());
        if n.join {
            args.push("--join".into());
        }
        args.extend(self.opts.extra_args.iter().map(|a| a.replace("{id}", &id.to_string())));
        if let Some((_, extra)) = &n.release {
            args.extend(extra.iter().cloned());
        }
        args
    }

    /// Runs node `id` from now on with `bin` and `extra` arguments (`None`: the cluster's
    /// binary): takes effect at its next start.
    pub fn set_release(&mut self, id: u64, release: Option<(PathBuf, Vec<String>)>) {
        self.node_mut(id).release = release;
    }

    /// Starts one more node with `--join` on fresh ports and an empty data dir, and waits
    /// until it answers `/healthz`. It is not a member until the leader adds it (`kuorum
    /// member add`); only then does it become ready. Answers its id.
    pub fn start_joining_node(&mut self) -> Result<u64> {
        let id = self.nodes.iter().map(|n| n.id).max().unwrap_or(0) + 1;
        let ports = free_ports(2);
        let data_dir = self.root.join(format!("node{id}"));
        fs::create_dir_all(&data_dir)?;
        self.nodes.push(Node {
            id,
            rest_port: ports[0],
            peer_port: ports[1],
            data_dir,
            log_path: self.root.join(format!("node{id}.log")),
            child: None,
            starts: 0,
            join: true,
            release: None,
        });
        self.peers_arg = format!("{},{id}=127.0.0.1:{}", self.peers_arg, ports[1]);
        self.spawn(id)?;
        self.wait_healthz(id)?;
        Ok(id)
    }

    /// Waits until node `id` answers `/healthz` (it serves HTTP; a joining node is not
    /// ready until it is added).
    fn wait_healthz(&mut self, id: u64) -> Result<()> {
        let deadline = Instant::now() + self.opts.wait;
        let url = format!("{}/healthz", self.url(id));
        loop {
            self.check_alive()?;
            if matches!(self.http.get(&url), Ok(r) if r.status == 200) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("node {id} never answered /healthz");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops node `id`, empties its data directory and starts it again with `--join` on
    /// the same ports (the first half of rebuilding a node: `kuorum member add` and
    /// `promote` make it a member again). Waits until it answers `/healthz`.
    pub fn wipe_and_join(&mut self, id: u64) -> Result<()> {
        self.kill(id);
        let dir = self.node(id).data_dir.clone();
        fs::remove_dir_all(&dir)?;
        fs::create_dir_all(&dir)?;
        self.node_mut(id).join = true;
        self.spawn(id)?;
        self.wait_healthz(id)
    }

    /// Starts a stopped node and waits for it to exit by itself (a node that refuses to
    /// start); answers its exit status, or an error if it is still running after
    /// `timeout` (it is then killed).
    pub fn start_expecting_exit(&mut self, id: u64, timeout: Duration) -> Result<ExitStatus> {
        self.kill(id);
        self.spawn(id)?;
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let n = self.node_mut(id);
            if let Some(st) = n.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                n.child = None;
                return Ok(st);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.kill(id);
        bail!("node {id} was still running after {timeout:?}")
    }

    /// Runs `kuorum <args>` (a CLI command, not a node) to completion; answers its stdout,
    /// or an error with its stderr.
    pub fn cli(&self, args: &[&str]) -> Result<String> {
        let out = Command::new(&self.bin).args(args).output().with_context(|| format!("run kuorum {args:?}"))?;
        if !out.status.success() {
            bail!("kuorum {args:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn spawn(&mut self, id: u64) -> Result<()> {
        assert!(!self.node(id).is_running(), "node {id} is already running");
        let args = self.serve_args(id);
        let log_path = self.node(id).log_path.clone();
        let bin = self.node(id).release.as_ref().map_or(self.bin.clone(), |(b, _)| b.clone());
        let mut log = OpenOptions::new().create(true).append(true).open(&log_path)?;
        use std::io::Write;
        writeln!(log, "===== harness: start {} {}", bin.display(), args.join(" "))?;
        let rust_log = self
            .opts
            .rust_log
            .clone()
            .or_else(|| std::env::var("KUORUM_E2E_LOG").ok())
            .unwrap_or_else(|| "info,openraft=warn".into());
        let mut cmd = Command::new(&bin);
        cmd.args(&args).env("RUST_LOG", rust_log).stdin(Stdio::null()).stdout(log.try_clone()?).stderr(log);
        die_with_parent(&mut cmd);
        let child = cmd.spawn().with_context(|| format!("spawn {}", bin.display()))?;
        let n = self.node_mut(id);
        n.child = Some(child);
        n.starts += 1;
        Ok(())
    }

    /// SIGKILL a node and reap it. Its data dir stays.
    pub fn kill(&mut self, id: u64) {
        if let Some(mut child) = self.node_mut(id).child.take() {
            let _ = child.kill(); // SIGKILL on Unix
            let _ = child.wait();
        }
    }

    /// SIGTERM a node and wait up to `grace` for it to exit, then SIGKILL.
    pub fn stop(&mut self, id: u64, grace: Duration) -> Option<ExitStatus> {
        let mut child = self.node_mut(id).child.take()?;
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(st)) = child.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        child.wait().ok()
    }

    /// Starts a stopped node again with the same arguments and data dir, without waiting
    /// for it (for callers that time its start themselves).
    pub fn start_node(&mut self, id: u64) -> Result<()> {
        self.spawn(id)
    }

    /// Starts a stopped node again with the same arguments and data dir, and waits for its
    /// `/readyz`.
    pub fn restart(&mut self, id: u64) -> Result<()> {
        self.kill(id);
        self.spawn(id)?;
        self.wait_node_ready(id, self.opts.wait)
    }

    /// Fails early if a node we think is running has exited.
    pub fn check_alive(&mut self) -> Result<()> {
        for n in &mut self.nodes {
            if let Some(child) = &mut n.child {
                if let Ok(Some(st)) = child.try_wait() {
                    n.child = None;
                    bail!("node {} exited unexpectedly ({st}); log {}", n.id, n.log_path.display());
                }
            }
        }
        Ok(())
    }

    pub fn wait_node_ready(&mut self, id: u64, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let url = format!("{}/readyz", self.url(id));
        let mut last: String;
        loop {
            self.check_alive()?;
            match self.http.get(&url) {
                Ok(r) if r.status == 200 => return Ok(()),
                Ok(r) => last = format!("{} {}", r.status, r.text),
                Err(e) => last = format!("{e:#}"),
            }
            if Instant::now() > deadline {
                bail!("node {id} not ready after {timeout:?}: {last}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every running node answers `/readyz` with 200.
    pub fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        for id in self.running() {
            self.wait_node_ready(id, timeout)?;
        }
        Ok(())
    }

    pub fn raft_status(&self, id: u64) -> Result<RaftStatus> {
        let r = self.http.get(&format!("{}/debug/kuorum/raft", self.url(id)))?;
        if r.status != 200 {
            bail!("node {id} /debug/kuorum/raft: {} {}", r.status, r.text);
        }
        RaftStatus::from_json(&r.body)
    }

    /// Waits until every running node reports the same, running leader; returns its id.
    pub fn wait_leader(&mut self, timeout: Duration) -> Result<u64> {
        let deadline = Instant::now() + timeout;
        let mut last: String;
        loop {
            self.check_alive()?;
            let running = self.running();
            let views: Vec<Result<RaftStatus>> = running.iter().map(|&id| self.raft_status(id)).collect();
            let leaders: Vec<Option<u64>> = views.iter().map(|v| v.as_ref().ok().and_then(|s| s.leader)).collect();
            if let Some(Some(l)) = leaders.first() {
                if leaders.iter().all(|x| *x == Some(*l)) && running.contains(l) {
                    return Ok(*l);
                }
            }
            last = format!("{views:?}");
            if Instant::now() > deadline {
                bail!("no agreed leader after {timeout:?}: {last}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Current leader (waits for one).
    pub fn leader(&mut self) -> Result<u64> {
        let wait = self.opts.wait;
        self.wait_leader(wait)
    }

    /// Running nodes other than the leader.
    pub fn followers(&mut self) -> Result<Vec<u64>> {
        let l = self.leader()?;
        Ok(self.running().into_iter().filter(|&id| id != l).collect())
    }

    /// Writes (once) and returns a kubeconfig pointing at node `id`.
    pub fn kubeconfig(&self, id: u64) -> Result<PathBuf> {
        let path = self.root.join(format!("kubeconfig-{id}"));
        if !path.exists() {
            fs::write(&path, kubeconfig_yaml(&format!("kuorum-{id}"), &self.url(id)))?;
        }
        Ok(path)
    }

    /// Runs kubectl against node `id` (its own kubeconfig and discovery cache), bounded by
    /// 60 s. Panics if there is no kubectl (call [`kubectl_bin`] first to skip instead).
    pub fn kubectl(&self, id: u64, args: &[&str]) -> Result<Output> {
        self.kubectl_with_env(id, args, &[])
    }

    /// kubectl as [`Cluster::kubectl`], with extra environment variables (`KUBE_EDITOR`).
    pub fn kubectl_with_env(&self, id: u64, args: &[&str], env: &[(&str, &str)]) -> Result<Output> {
        let kubectl = kubectl_bin().expect("no kubectl: run scripts/setup.sh or set KUBECTL");
        let kubeconfig = self.kubeconfig(id)?;
        let cache = self.root.join(format!("kube-cache-{id}"));
        let mut full: Vec<String> = vec![
            format!("--kubeconfig={}", kubeconfig.display()),
            format!("--cache-dir={}", cache.display()),
            "--request-timeout=20s".into(),
        ];
        full.extend(args.iter().map(|s| s.to_string()));
        run_bounded_env(&kubectl, &full, &self.root, Duration::from_secs(60), env)
    }

    /// Prints the last `lines` lines of every node's log to stderr.
    pub fn dump_logs(&self, lines: usize) {
        for n in &self.nodes {
            eprintln!("----- node {} log ({}) -----", n.id, n.log_path.display());
            eprintln!("{}", tail(&n.log_path, lines));
        }
    }

    /// Keep the temp dir after drop (also with `KUORUM_E2E_KEEP=1`).
    pub fn keep_dir(&mut self) -> PathBuf {
        if let Some(d) = self.dir.take() {
            let _ = d.keep();
        }
        self.root.clone()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let panicking = std::thread::panicking();
        for id in self.ids() {
            self.kill(id);
        }
        if panicking {
            self.dump_logs(60);
        }
        if panicking || std::env::var_os("KUORUM_E2E_KEEP").is_some() {
            let root = self.keep_dir();
            eprintln!("kept cluster dir {}", root.display());
        }
    }
}

/// On Linux the node gets SIGKILL if the thread that started it dies, so a test process
/// killed from outside leaves no servers behind.
pub fn die_with_parent(cmd: &mut Command) {
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

/// A kubeconfig with one cluster/context/user for a plain-HTTP server.
pub fn kubeconfig_yaml(name: &str, server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {server}\n\
         contexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\n\
         current-context: {name}\nusers:\n- name: {name}\n  user: {{}}\n"
    )
}

/// Exit status and output of a finished command.
#[derive(Debug, Clone)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
    /// Panics with the full output unless the command succeeded.
    pub fn ok(self, what: &str) -> Self {
        assert!(self.success(), "{what} failed ({:?})\nstdout:\n{}\nstderr:\n{}", self.code, self.stdout, self.stderr);
        self
    }
    pub fn json(&self) -> Result<Value> {
        serde_json::from_str(&self.stdout).with_context(|| format!("not JSON: {}", self.stdout))
    }
}

/// Runs `prog args` in `dir` with output captured to files, killing it after `timeout`.
pub fn run_bounded(prog: &Path, args: &[String], dir: &Path, timeout: Duration) -> Result<Output> {
    run_bounded_env(prog, args, dir, timeout, &[])
}

/// [`run_bounded`] with extra environment variables.
pub fn run_bounded_env(
    prog: &Path,
    args: &[String],
    dir: &Path,
    timeout: Duration,
    env: &[(&str, &str)],
) -> Result<Output> {
    let out = tempfile::tempfile_in(dir)?;
    let err = tempfile::tempfile_in(dir)?;
    let mut child = Command::new(prog)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(err.try_clone()?)
        .spawn()
        .with_context(|| format!("spawn {}", prog.display()))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{} {} timed out after {timeout:?}", prog.display(), args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |mut f: File| -> Result<String> {
        f.seek(SeekFrom::Start(0))?;
        let mut s = String::new();
        f.read_to_string(&mut s)?;
        Ok(s)
    };
    Ok(Output { code: status.code(), stdout: read(out)?, stderr: read(err)? })
}

/// Last `lines` lines of a file (empty if missing).
/// Backtrace frames (`  12: fn` and `at file:line` lines) are left out: a node that exits
/// with an error prints one, and it would push the error itself out of the tail.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let frame = |l: &str| {
        let t = l.trim_start();
        l.len() > t.len() && (t.starts_with("at ") || t.split_once(": ").is_some_and(|(n, _)| n.parse::<u32>().is_ok()))
    };
    let all: Vec<&str> = text.lines().filter(|l| !frame(l)).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Polls `f` every 100 ms until it returns `Ok(Some(t))` or `timeout` passes; the error
/// names the last failure.
pub fn eventually<T>(timeout: Duration, what: &str, mut f: impl FnMut() -> Result<Option<T>>) -> Result<T> {
    let deadline = Instant::now() + timeout;
    let mut last: String;
    loop {
        match f() {
            Ok(Some(t)) => return Ok(t),
            Ok(None) => last = "condition not met".into(),
            Err(e) => last = format!("{e:#}"),
        }
        if Instant::now() > deadline {
            bail!("{what}: not true after {timeout:?}; last: {last}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------
// Long-running clients (watchers) and scripted writes
// ---------------------------------------------------------------------------------------

/// The venv's python3 (`$KUORUM_VENV/bin/python3`, else `~/.cache/kuorum-venv/bin/python3`)
/// if it exists.
pub fn venv_python() -> Option<PathBuf> {
    let venv = std::env::var_os("KUORUM_VENV").map(PathBuf::from).unwrap_or_else(|| home().join(".cache/kuorum-venv"));
    Some(venv.join("bin/python3")).filter(|p| p.is_file())
}

/// A child process whose stdout is collected line by line as it arrives (stderr goes to a
/// file). Killed (SIGKILL) and reaped on drop.
pub struct StreamChild {
    what: String,
    child: Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    reader: Option<std::thread::JoinHandle<()>>,
    stderr_path: PathBuf,
}

impl StreamChild {
    /// Spawns `cmd` (stdin null, stdout piped, stderr to `stderr_path`).
    pub fn spawn(what: &str, mut cmd: Command, stderr_path: &Path) -> Result<StreamChild> {
        let err = File::create(stderr_path)?;
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(err);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().with_context(|| format!("spawn {what}"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let lines: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
        let sink = lines.clone();
        let reader = std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => sink.lock().unwrap().push(l),
                    Err(_) => break,
                }
            }
        });
        Ok(StreamChild { what: what.to_string(), child, lines, reader: Some(reader), stderr_path: stderr_path.into() })
    }

    /// Every stdout line so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Everything written to stderr so far.
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Waits until `f(lines so far)` returns `Some`; fails after `timeout` or if the process
    /// exits first (after one last look at its output).
    pub fn wait_for<T>(
        &mut self,
        timeout: Duration,
        what: &str,
        mut f: impl FnMut(&[String]) -> Option<T>,
    ) -> Result<T> {
        let deadline = Instant::now() + timeout;
        loop {
            let exited = self.child.try_wait()?.is_some();
            if exited {
                // Let the reader drain the pipe before the last look.
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
            }
            if let Some(t) = f(&self.lines()) {
                return Ok(t);
            }
            if exited {
                bail!(
                    "{}: exited before {what}; stdout:\n{}\nstderr:\n{}",
                    self.what,
                    self.lines().join("\n"),
                    self.stderr()
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "{}: no {what} after {timeout:?}; stdout:\n{}\nstderr:\n{}",
                    self.what,
                    self.lines().join("\n"),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits up to `timeout` for the process to exit on its own; then returns its exit code
    /// and every stdout line.
    pub fn wait_exit(mut self, timeout: Duration) -> Result<(Option<i32>, Vec<String>)> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(st) = self.child.try_wait()? {
                break st;
            }
            if Instant::now() > deadline {
                bail!(
                    "{}: still running after {timeout:?}; stdout:\n{}\nstderr:\n{}",
                    self.what,
                    self.lines().join("\n"),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        Ok((status.code(), self.lines()))
    }

    /// SIGKILLs the process, reaps it and returns every stdout line.
    pub fn kill(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        self.lines()
    }
}

impl Drop for StreamChild {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Cluster {
    /// A kubectl command against node `id` (its kubeconfig and discovery cache, and
    /// `--request-timeout`), to spawn yourself (e.g. `get -w` with [`StreamChild`]).
    pub fn kubectl_command(&self, id: u64, request_timeout: &str, args: &[&str]) -> Result<Command> {
        let kubectl = kubectl_bin().ok_or_else(|| anyhow!("no kubectl: run scripts/setup.sh or set KUBECTL"))?;
        let mut cmd = Command::new(kubectl);
        cmd.current_dir(&self.root)
            .arg(format!("--kubeconfig={}", self.kubeconfig(id)?.display()))
            .arg(format!("--cache-dir={}", self.root.join(format!("kube-cache-{id}")).display()))
            .arg(format!("--request-timeout={request_timeout}"))
            .args(args);
        Ok(cmd)
    }

    /// Creates namespace `ns` through node `id` and waits until every running node serves it.
    pub fn create_namespace(&self, id: u64, ns: &str) -> Result<()> {
        let r = self.http.post(
            &format!("{}/api/v1/namespaces", self.url(id)),
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )?;
        if r.status != 201 {
            bail!("create namespace {ns} through node {id}: {} {}", r.status, r.text);
        }
        for other in self.running() {
            let url = format!("{}/api/v1/namespaces/{ns}", self.url(other));
            let http = self.http.clone();
            eventually(WAIT, &format!("node {other} serves namespace {ns}"), || {
                Ok((http.get(&url)?.status == 200).then_some(()))
            })?;
        }
        Ok(())
    }
}

/// One change to a ConfigMap as a watcher should report it: the event type (`ADDED`,
/// `MODIFIED`, `DELETED`), the object's name, its resourceVersion in the event and its data.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    pub kind: String,
    pub name: String,
    pub rv: u64,
    pub data: std::collections::BTreeMap<String, String>,
}

impl Change {
    /// From a watch event's `type` and `object` (a ConfigMap as JSON).
    pub fn from_event(kind: &str, obj: &Value) -> Result<Change> {
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).ok_or_else(|| anyhow!("no name: {obj}"))?;
        Ok(Change { kind: kind.to_string(), name: name.to_string(), rv: rv_of(obj)?, data: data_of(obj) })
    }
}

/// `metadata.resourceVersion` of an object, as a number.
pub fn rv_of(obj: &Value) -> Result<u64> {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("no numeric metadata.resourceVersion in {obj}"))
}

fn data_of(obj: &Value) -> std::collections::BTreeMap<String, String> {
    obj.get("data")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        .unwrap_or_default()
}

/// A fixed mix of creates, conditional updates (PUT with the last resourceVersion) and
/// deletes of ConfigMaps in `ns`, each acknowledged before the next and sent through
/// `writers` in turn; the last one creates `end_marker`. Returns the changes in order, each
/// with the resourceVersion from its reply, which is what a watcher must report.
pub fn scripted_writes(http: &Http, writers: &[String], ns: &str, end_marker: &str) -> Result<Vec<Change>> {
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    let mut changes: Vec<Change> = Vec::new();
    let mut last: std::collections::BTreeMap<String, Value> = Default::default();
    let steps: &[(&str, &str, &str)] = &[
        ("create", "a", "1"),
        ("create", "b", "1"),
        ("create", "c", "1"),
        ("update", "a", "2"),
        ("delete", "b", ""),
        ("update", "c", "2"),
        ("create", "d", "1"),
        ("update", "a", "3"),
        ("delete", "c", ""),
        ("create", "b", "again"),
        ("update", "d", "2"),
        ("delete", "a", ""),
        ("create", end_marker, "end"),
    ];
    for (i, (op, name, v)) in steps.iter().enumerate() {
        let base = &writers[i % writers.len()];
        let (kind, r) = match *op {
            "create" => (
                "ADDED",
                http.post(&format!("{base}{path}"), &configmap(ns, name, json!({"v": v, "step": i.to_string()})))?,
            ),
            "update" => {
                let mut obj = last.get(*name).cloned().ok_or_else(|| anyhow!("update of unknown {name}"))?;
                obj["data"] = json!({"v": v, "step": i.to_string()});
                ("MODIFIED", http.put(&format!("{base}{path}/{name}"), &obj)?)
            }
            _ => ("DELETED", http.delete(&format!("{base}{path}/{name}"))?),
        };
        if !r.is_success() {
            bail!("step {i}: {op} {name} through {base}: {} {}", r.status, r.text);
        }
        let change = Change::from_event(kind, &r.body).with_context(|| format!("step {i}: {op} {name}"))?;
        if let Some(prev) = changes.last() {
            if change.rv <= prev.rv {
                bail!(
                    "step {i}: {op} {name}: reply rv {} not above the previous write's {}: {}",
                    change.rv,
                    prev.rv,
                    r.text
                );
            }
        }
        if *op == "delete" {
            last.remove(*name);
        } else {
            last.insert(name.to_string(), r.body.clone());
        }
        changes.push(change);
    }
    Ok(changes)
}

// ---------------------------------------------------------------------------------------
// `kuorum up`: a TLS cluster with a local CA and RBAC, and clients for it
// ---------------------------------------------------------------------------------------

/// How a TLS client for a [`UpCluster`] connects.
#[derive(Clone, Debug)]
pub struct TlsClientOptions {
    /// Bound on a whole request (connect, send, read the answer).
    pub timeout: Duration,
    /// The loopback address the client's sockets bind to (a distinct source per client
    /// role: the servers may count connections per source address).
    pub local_address: Option<std::net::IpAddr>,
    /// Keep connections alive between requests; `false` opens a new TCP connection and
    /// TLS handshake for every request (what a probe of the accept path needs).
    pub reuse_connections: bool,
}

impl Default for TlsClientOptions {
    fn default() -> Self {
        TlsClientOptions { timeout: Duration::from_secs(10), local_address: None, reuse_connections: true }
    }
}

impl Http {
    /// A client that trusts the CA in `ca` and, with `identity` (certificate and key PEM
    /// files), authenticates with that client certificate; without one it is anonymous.
    pub fn tls(ca: &Path, identity: Option<(&Path, &Path)>, opts: &TlsClientOptions) -> Result<Http> {
        let ca_pem = fs::read(ca).with_context(|| format!("read {}", ca.display()))?;
        let mut b = reqwest::blocking::Client::builder()
            .timeout(opts.timeout)
            .connect_timeout(opts.timeout.min(Duration::from_secs(5)))
            .add_root_certificate(reqwest::Certificate::from_pem(&ca_pem)?);
        if let Some((cert, key)) = identity {
            let mut pem = fs::read(cert).with_context(|| format!("read {}", cert.display()))?;
            pem.extend(fs::read(key).with_context(|| format!("read {}", key.display()))?);
            b = b.identity(reqwest::Identity::from_pem(&pem)?);
        }
        if let Some(ip) = opts.local_address {
            b = b.local_address(ip);
        }
        b = if opts.reuse_connections {
            b.pool_idle_timeout(Duration::from_secs(30))
        } else {
            b.pool_max_idle_per_host(0)
        };
        Ok(Http { client: b.build()? })
    }

    /// Sends `method url` with `headers` and an optional raw `body` (give its
    /// Content-Type among the headers). `Accept: application/json` is added unless the
    /// headers name an Accept. Transport errors are `Err`; any HTTP status is `Ok`.
    pub fn send(&self, method: &str, url: &str, headers: &[(&str, &str)], body: Option<Vec<u8>>) -> Result<Reply> {
        let method = reqwest::Method::from_bytes(method.as_bytes())?;
        let mut req = self.client.request(method, url);
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("accept")) {
            req = req.header("Accept", "application/json");
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.body(b);
        }
        let resp = req.send().with_context(|| short_url(url))?;
        let status = resp.status().as_u16();
        let text = resp.text().with_context(|| format!("reading body of {}", short_url(url)))?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Reply { status, body, text })
    }
}

/// A URL cut to a readable length for error messages (attack URLs can be 100 KB).
fn short_url(url: &str) -> String {
    if url.len() <= 200 {
        return url.to_string();
    }
    let mut end = 200;
    while !url.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &url[..end], url.len())
}

/// A base port with base..base+nodes and base+100..base+100+nodes free on 127.0.0.1
/// (`kuorum up`'s layout: node i serves REST on base+i-1 and Raft on base+100+i-1).
pub fn free_up_base_port(nodes: u16) -> u16 {
    // Each call starts elsewhere, so parallel tests of one process do not race for the
    // same range.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    for attempt in 0..200u32 {
        // 21000..32600: below the ephemeral range (see `free_ports`) and above its ports.
        let base = 21_000 + ((std::process::id() * 13 + call * 4_999 + attempt * 131) % 11_400) as u16;
        let ports: Vec<u16> = (0..nodes).flat_map(|i| [base + i, base + 100 + i]).collect();
        let held: Vec<_> = ports.iter().filter_map(|p| TcpListener::bind(("127.0.0.1", *p)).ok()).collect();
        if held.len() == ports.len() {
            return base;
        }
    }
    panic!("no free port range for kuorum up");
}

/// A cluster started the way a user starts one: `kuorum up` (TLS with a local CA,
/// client certificates, RBAC), in a temp dir. Drop stops it (SIGTERM to `kuorum up`,
/// which stops its nodes; SIGKILL to anything left after 15 s). If the thread is
/// panicking, the tail of each node's log is printed first.
pub struct UpCluster {
    child: Child,
    bin: PathBuf,
    pub base_port: u16,
    pub nodes: u64,
    /// The data dir given to `kuorum up`: `kubeconfig`, `pki/`, `node<i>/`, `node<i>.log`.
    pub dir: PathBuf,
    tmp: tempfile::TempDir,
}

impl UpCluster {
    /// `kuorum up --nodes n` on a free port range; waits until it has written its
    /// kubeconfig (every node ready). `None` (after a SKIP note) when there is no binary
    /// to test and `$KUORUM_BIN` is unset.
    pub fn start_or_skip(nodes: u64) -> Option<UpCluster> {
        let Some(bin) = kuorum_bin() else {
            eprintln!("SKIP: no kuorum binary found (set KUORUM_BIN or run scripts/test.sh)");
            return None;
        };
        Some(UpCluster::start(&bin, nodes).unwrap_or_else(|e| panic!("kuorum up: {e:#}")))
    }

    pub fn start(bin: &Path, nodes: u64) -> Result<UpCluster> {
        UpCluster::start_with_open_files(bin, nodes, None)
    }

    /// [`UpCluster::start`], with `kuorum up` and so its nodes limited to `open_files`
    /// descriptors (soft and hard `RLIMIT_NOFILE`), when given: connection caps derived
    /// from that limit are then within a test's reach.
    pub fn start_with_open_files(bin: &Path, nodes: u64, open_files: Option<u64>) -> Result<UpCluster> {
        let tmp = tempfile::Builder::new().prefix("kuorum-up-e2e-").tempdir()?;
        let dir = tmp.path().join("data");
        let base_port = free_up_base_port(nodes as u16);
        let log = File::create(tmp.path().join("up.log"))?;
        let mut cmd = Command::new(bin);
        cmd.args(["up", "--nodes", &nodes.to_string(), "--base-port", &base_port.to_string(), "--data-dir"])
            .arg(&dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        die_with_parent(&mut cmd);
        if let Some(limit) = open_files {
            use std::os::unix::process::CommandExt;
            unsafe {
                cmd.pre_exec(move || {
                    let lim = libc::rlimit { rlim_cur: limit as libc::rlim_t, rlim_max: limit as libc::rlim_t };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = cmd.spawn().with_context(|| format!("spawn {} up", bin.display()))?;
        let mut up = UpCluster { child, bin: bin.to_path_buf(), base_port, nodes, dir, tmp };
        let deadline = Instant::now() + Duration::from_secs(90);
        while !up.dir.join("kubeconfig").exists() {
            if let Some(st) = up.child.try_wait()? {
                bail!("kuorum up exited ({st}) before writing a kubeconfig; log:\n{}", up.log());
            }
            if Instant::now() > deadline {
                bail!("kuorum up wrote no kubeconfig in 90 s; log:\n{}", up.log());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(up)
    }

    /// Node `id`'s REST port.
    pub fn port(&self, id: u64) -> u16 {
        self.base_port + (id - 1) as u16
    }
    /// `https://127.0.0.1:<port of node id>`.
    pub fn url(&self, id: u64) -> String {
        format!("https://127.0.0.1:{}", self.port(id))
    }
    pub fn ids(&self) -> Vec<u64> {
        (1..=self.nodes).collect()
    }
    pub fn pki(&self) -> PathBuf {
        self.dir.join("pki")
    }
    pub fn ca(&self) -> PathBuf {
        self.pki().join("ca.crt")
    }
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }
    /// The certificate and key of `user` (`admin` is system:masters, made by `kuorum up`).
    pub fn identity(&self, user: &str) -> (PathBuf, PathBuf) {
        (self.pki().join(format!("{user}.crt")), self.pki().join(format!("{user}.key")))
    }
    /// Everything `kuorum up` printed.
    pub fn log(&self) -> String {
        fs::read_to_string(self.tmp.path().join("up.log")).unwrap_or_default()
    }
    pub fn node_log(&self, id: u64) -> PathBuf {
        self.dir.join(format!("node{id}.log"))
    }

    /// Issues a client certificate for `user` in `groups` (`kuorum certs --user`).
    pub fn add_user(&self, user: &str, groups: &[&str]) -> Result<()> {
        let mut cmd = Command::new(&self.bin);
        cmd.args(["certs", "--dir"]).arg(self.pki()).args(["--user", user]);
        for g in groups {
            cmd.args(["--group", g]);
        }
        let out = cmd.output()?;
        if !out.status.success() {
            bail!("kuorum certs --user {user}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(())
    }

    /// A client as `user` (`None`: anonymous, no client certificate).
    pub fn client(&self, user: Option<&str>, opts: &TlsClientOptions) -> Result<Http> {
        let ca = self.ca();
        match user {
            None => Http::tls(&ca, None, opts),
            Some(u) => {
                let (cert, key) = self.identity(u);
                Http::tls(&ca, Some((&cert, &key)), opts)
            }
        }
    }

    /// `(node id, pid)` of every running node process (the children of `kuorum up`).
    pub fn node_pids(&self) -> Vec<(u64, u32)> {
        let mut out: Vec<(u64, u32)> = child_pids(self.child.id())
            .into_iter()
            .filter_map(|pid| {
                let cmdline = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let args: Vec<String> =
                    cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
                let at = args.iter().position(|a| a == "--id")?;
                Some((args.get(at + 1)?.parse().ok()?, pid))
            })
            .collect();
        out.sort();
        out
    }

    /// kubectl through the kubeconfig `kuorum up` wrote (the admin), bounded by 60 s.
    pub fn kubectl(&self, args: &[&str]) -> Result<Output> {
        let kubectl = kubectl_bin().ok_or_else(|| anyhow!("no kubectl: run scripts/setup.sh or set KUBECTL"))?;
        let mut full: Vec<String> = vec![
            format!("--kubeconfig={}", self.kubeconfig().display()),
            format!("--cache-dir={}", self.tmp.path().join("kube-cache").display()),
            "--request-timeout=20s".into(),
        ];
        full.extend(args.iter().map(|s| s.to_string()));
        run_bounded(&kubectl, &full, self.tmp.path(), Duration::from_secs(60))
    }

    /// `kuorum serve --help` of the binary under test (its flags and their defaults).
    pub fn serve_help(&self) -> Result<String> {
        let out = Command::new(&self.bin).args(["serve", "--help"]).output()?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for UpCluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for id in self.ids() {
                eprintln!("----- node {id} log -----\n{}", tail(&self.node_log(id), 40));
            }
        }
        let nodes = self.node_pids();
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Nodes `kuorum up` did not stop in time (it waits 10 s for each).
        for (_, pid) in nodes {
            if process_alive(pid) {
                unsafe {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                }
            }
        }
    }
}

/// The value shown as `[default: ...]` for `--flag` in a clap `--help` text, or `None` if
/// the flag is not listed (`Some("")` for a flag listed without a default).
pub fn help_default(help: &str, flag: &str) -> Option<String> {
    let long = format!("--{flag}");
    let lines: Vec<&str> = help.lines().collect();
    let at = lines.iter().position(|l| l.trim_start().split([' ', '=', ',']).any(|w| w == long))?;
    // The default is printed at the end of the flag's description, before the next flag.
    for (i, l) in lines[at..].iter().enumerate() {
        if i > 0 && l.trim_start().starts_with('-') {
            break;
        }
        if let Some(i) = l.find("[default: ") {
            let rest = &l[i + "[default: ".len()..];
            return Some(rest.split(']').next().unwrap_or("").to_string());
        }
    }
    Some(String::new())
}

// ---------------------------------------------------------------------------------------
// Processes seen from /proc
// ---------------------------------------------------------------------------------------

/// Resident set size of process `pid` in bytes (`VmRSS` of /proc/<pid>/status).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Pids of the direct children of `parent` (from /proc/<pid>/stat).
pub fn child_pids(parent: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else { return vec![] };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
                    let after = &s[s.rfind(')')? + 1..];
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                .is_some_and(|ppid| ppid == parent)
        })
        .collect()
}

/// Whether process `pid` exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s[s.rfind(')')? + 1..].split_whitespace().next().map(|st| st != "Z"))
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------------------
// Canary: a client that must keep being answered while something else attacks
// ---------------------------------------------------------------------------------------

/// One request the canary repeats: a label for reports, the client, the URL (GET).
pub struct Probe {
    pub label: String,
    pub http: Http,
    pub url: String,
}

/// What a canary saw between start and stop.
#[derive(Debug, Clone, Default)]
pub struct CanaryReport {
    /// Requests made.
    pub requests: u64,
    /// The slowest answer (a transport error counts as its time to fail).
    pub max: Duration,
    /// Which probe was slowest and when (since start).
    pub max_at: String,
    /// Requests not answered 200 (the first 20, with their error).
    pub failures: Vec<String>,
    pub failed: u64,
}

/// A thread that runs every probe in turn every `interval` until stopped, timing each.
pub struct Canary {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<CanaryReport>>,
}

impl Canary {
    pub fn start(probes: Vec<Probe>, interval: Duration) -> Canary {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut report = CanaryReport::default();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                let round = Instant::now();
                for p in &probes {
                    let t = Instant::now();
                    let r = p.http.get(&p.url);
                    let took = t.elapsed();
                    report.requests += 1;
                    if took > report.max {
                        report.max = took;
                        report.max_at = format!("{} at {:.1?}", p.label, t.duration_since(t0));
                    }
                    let problem = match r {
                        Ok(r) if r.status == 200 => None,
                        Ok(r) => Some(format!("{} {}", r.status, r.text.chars().take(200).collect::<String>())),
                        Err(e) => Some(format!("{e:#}")),
                    };
                    if let Some(problem) = problem {
                        report.failed += 1;
                        if report.failures.len() < 20 {
                            report.failures.push(format!(
                                "{} at {:.1?} after {took:.1?}: {problem}",
                                p.label,
                                t.duration_since(t0)
                            ));
                        }
                    }
                }
                if let Some(rest) = interval.checked_sub(round.elapsed()) {
                    std::thread::sleep(rest);
                }
            }
            report
        });
        Canary { stop, handle: Some(handle) }
    }

    /// Stops the canary (after its current round) and answers what it saw.
    pub fn stop(mut self) -> CanaryReport {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.handle.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default()
    }
}

impl Drop for Canary {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Copies the files and directories under `from` into `to` (created if missing).
pub fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for e in fs::read_dir(from).with_context(|| from.display().to_string())? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else {
            fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}

/// Files under `dir` (recursively) whose names end with `suffix`.
pub fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_ending(&path, suffix));
        } else if path.to_string_lossy().ends_with(suffix) {
            out.push(path);
        }
    }
    out
}

/// Flips one bit in each of `count` bytes around the middle of the file, as a failing
/// disk would.
pub fn flip_middle(path: &Path, count: usize) {
    let mut bytes = fs::read(path).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + count] {
        *b ^= 0x20;
    }
    fs::write(path, bytes).unwrap();
}
