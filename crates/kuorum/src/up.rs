//! `kuorum up`: a local cluster. Starts N `kuorum serve` processes on 127.0.0.1, waits
//! until they have a leader and the system namespaces, writes a kubeconfig with one
//! context per node, prints how to use it, and stops the nodes when interrupted.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::Args;
use tokio::process::{Child, Command};

#[derive(Args, Debug, Clone)]
pub struct UpArgs {
    /// How many nodes (3 or 5 make sense: a majority must survive).
    #[arg(long, default_value_t = 3)]
    pub nodes: u64,
    /// Where the nodes keep their data (one directory per node) and the kubeconfig.
    #[arg(long, default_value = "kuorum-data")]
    pub data_dir: PathBuf,
    /// REST port of node 1; node i listens on base-port+i-1, its peer port is base-port+100+i-1.
    #[arg(long, default_value_t = 6443)]
    pub base_port: u16,
    /// Plain HTTP and no authentication (every request allowed), instead of TLS with a
    /// local CA, client certificates and mutual TLS between the nodes.
    #[arg(long)]
    pub insecure: bool,
    /// Start every node with `--enable-chaos` (fault injection with `kuorum chaos`).
    #[arg(long)]
    pub enable_chaos: bool,
    /// Worker threads per node (`kuorum serve --worker-threads`). Default: this machine's
    /// CPUs divided among the nodes, at least one each: workers that outnumber the CPUs
    /// spend their time waking and stealing from each other (docs/operations.md).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
}

/// The worker threads each of `nodes` nodes sharing `cpus` CPUs gets: an equal share,
/// at least one.
pub fn worker_share(cpus: usize, nodes: u64) -> u16 {
    let share = cpus as u64 / nodes.max(1);
    share.clamp(1, 1024) as u16
}

/// The credentials a TLS cluster's kubeconfig carries (PEM).
pub struct KubeconfigTls {
    pub ca: String,
    pub client_cert: String,
    pub client_key: String,
}

pub fn kubeconfig(ports: &[u16], tls: Option<&KubeconfigTls>) -> String {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let mut s = String::from("apiVersion: v1\nkind: Config\nclusters:\n");
    for (i, p) in ports.iter().enumerate() {
        match tls {
            None => {
                let _ = write!(s, "- name: kuorum-node{n}\n  cluster:\n    server: http://127.0.0.1:{p}\n", n = i + 1);
            }
            Some(t) => {
                let _ = write!(
                    s,
                    "- name: kuorum-node{n}\n  cluster:\n    server: https://127.0.0.1:{p}\n    certificate-authority-data: {ca}\n",
                    n = i + 1,
                    ca = b64(&t.ca)
                );
            }
        }
    }
    s.push_str("contexts:\n");
    for i in 0..ports.len() {
        let _ = write!(s, "- name: kuorum-node{n}\n  context:\n    cluster: kuorum-node{n}\n    user: kuorum-admin\n    namespace: default\n", n = i + 1);
    }
    s.push_str("current-context: kuorum-node1\nusers:\n- name: kuorum-admin\n");
    match tls {
        None => s.push_str("  user: {}\n"),
        Some(t) => {
            let _ = write!(
                s,
                "  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
                b64(&t.client_cert),
                b64(&t.client_key)
            );
        }
    }
    s
}

async fn wait_ready(client: &reqwest::Client, scheme: &str, port: u16, deadline: Instant) -> anyhow::Result<()> {
    loop {
        // Open without credentials; ready means caught up and the system namespaces there.
        let url = format!("{scheme}://127.0.0.1:{port}/readyz");
        if let Ok(r) = client.get(&url).send().await {
            if r.status().is_success() {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("node on port {port} did not become ready within the deadline");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn spawn_node(
    exe: &Path,
    id: u64,
    args: &UpArgs,
    peers: &str,
    pki: Option<&Path>,
    workers: u16,
) -> anyhow::Result<Child> {
    let rest = args.base_port + (id - 1) as u16;
    let peer = args.base_port + 100 + (id - 1) as u16;
    let dir = args.data_dir.join(format!("node{id}"));
    std::fs::create_dir_all(&dir)?;
    let log = std::fs::File::create(args.data_dir.join(format!("node{id}.log")))?;
    let mut cmd = Command::new(exe);
    cmd.arg("serve")
        .args(["--id", &id.to_string()])
        .args(["--listen", &format!("127.0.0.1:{rest}")])
        .args(["--peer-listen", &format!("127.0.0.1:{peer}")])
        .args(["--peers", peers])
        .arg("--data-dir")
        .arg(&dir)
        .args(["--worker-threads", &workers.to_string()]);
    if args.enable_chaos {
        cmd.arg("--enable-chaos");
    }
    match pki {
        None => {
            cmd.arg("--insecure");
        }
        Some(pki) => {
            let (cert, key) = crate::pki::node_files(pki, id);
            let ca = pki.join("ca.crt");
            cmd.arg("--tls-cert-file").arg(&cert).arg("--tls-private-key-file").arg(&key);
            cmd.arg("--client-ca-file").arg(&ca);
            cmd.arg("--peer-cert-file").arg(&cert).arg("--peer-key-file").arg(&key).arg("--peer-ca-file").arg(&ca);
            let front_proxy = pki.join(crate::pki::FRONT_PROXY_DIR);
            let client = |ext: &str| front_proxy.join(format!("{}.{ext}", crate::pki::FRONT_PROXY_CLIENT));
            cmd.arg("--requestheader-client-ca-file").arg(front_proxy.join("ca.crt"));
            cmd.args(["--requestheader-allowed-names", crate::pki::FRONT_PROXY_CLIENT]);
            cmd.arg("--proxy-client-cert-file").arg(client("crt")).arg("--proxy-client-key-file").arg(client("key"));
            cmd.arg("--service-account-signing-key-file").arg(crate::pki::service_account_key(pki));
            cmd.args(["--service-account-issuer", crate::pki::SERVICE_ACCOUNT_ISSUER]);
        }
    }
    let child = cmd
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting node {id}"))?;
    Ok(child)
}

pub async fn run(args: UpArgs) -> anyhow::Result<()> {
    if args.nodes == 0 {
        bail!("--nodes must be at least 1");
    }
    std::fs::create_dir_all(&args.data_dir)?;
    let data_dir = std::fs::canonicalize(&args.data_dir)?;
    let args = UpArgs { data_dir, ..args };
    let exe = std::env::current_exe()?;
    let peers: Vec<String> =
        (1..=args.nodes).map(|i| format!("{i}=127.0.0.1:{}", args.base_port + 100 + (i - 1) as u16)).collect();
    let peers = peers.join(",");
    let pki = (!args.insecure).then(|| args.data_dir.join("pki"));
    if let Some(pki) = &pki {
        crate::pki::ensure_cluster(pki, args.nodes, &[])?;
    }
    let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let workers = args.worker_threads.unwrap_or_else(|| worker_share(cpus, args.nodes));
    let mut children = Vec::new();
    for id in 1..=args.nodes {
        children.push(spawn_node(&exe, id, &args, &peers, pki.as_deref(), workers)?);
    }
    let ports: Vec<u16> = (0..args.nodes).map(|i| args.base_port + i as u16).collect();

    let tls = match &pki {
        None => None,
        Some(pki) => Some(KubeconfigTls {
            ca: std::fs::read_to_string(pki.join("ca.crt"))?,
            client_cert: std::fs::read_to_string(pki.join("admin.crt"))?,
            client_key: std::fs::read_to_string(pki.join("admin.key"))?,
        }),
    };
    let mut client = reqwest::Client::builder().timeout(Duration::from_secs(2));
    if let Some(t) = &tls {
        client = client.add_root_certificate(reqwest::Certificate::from_pem(t.ca.as_bytes())?);
    }
    let client = client.build()?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let deadline = Instant::now() + Duration::from_secs(60);
    for p in &ports {
        wait_ready(&client, scheme, *p, deadline).await?;
    }
    let kc = args.data_dir.join("kubeconfig");
    std::fs::write(&kc, kubeconfig(&ports, tls.as_ref()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // It holds the admin's private key.
        std::fs::set_permissions(&kc, std::fs::Permissions::from_mode(0o600))?;
    }
    println!(
        "kuorum: {} nodes up (REST on 127.0.0.1:{}..{}; {} worker thread(s) each, {} CPUs here), logs in {}",
        args.nodes,
        ports[0],
        ports[ports.len() - 1],
        workers,
        cpus,
        args.data_dir.display()
    );
    println!("point kubectl at it:");
    println!("  kubectl --kubeconfig {} get namespaces", kc.display());
    println!("(one context per node: --context kuorum-node2, ...). Ctrl-C stops the cluster.");
    if let Some(pki) = &pki {
        println!("TLS with a local CA in {}; the kubeconfig's user is kuorum-admin (system:masters).", pki.display());
    }

    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let exited = async {
        // Report, but keep the rest running: a cluster survives a minority failing.
        let mut waits: Vec<_> =
            children.iter_mut().enumerate().map(|(i, c)| Box::pin(async move { (i + 1, c.wait().await) })).collect();
        while !waits.is_empty() {
            let ((id, res), _, rest) = futures::future::select_all(waits).await;
            eprintln!("kuorum: node {id} exited: {res:?}");
            waits = rest;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = exited => {}
    }
    println!("kuorum: stopping nodes");
    for c in children.iter_mut() {
        if let Some(pid) = c.id() {
            // SIGTERM lets each node stop cleanly.
            let _ = std::process::Command::new("kill").arg(pid.to_string()).status();
        }
    }
    for c in children.iter_mut() {
        let _ = tokio::time::timeout(Duration::from_secs(10), c.wait()).await;
        let _ = c.start_kill();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_share_the_machines_cpus_at_least_one_worker_each() {
        assert_eq!(worker_share(2, 3), 1);
        assert_eq!(worker_share(8, 3), 2);
        assert_eq!(worker_share(16, 5), 3);
        assert_eq!(worker_share(4, 1), 4);
        assert_eq!(worker_share(1, 5), 1);
        assert_eq!(worker_share(4, 0), 4, "no nodes is refused before; never a division by zero");
    }
}
