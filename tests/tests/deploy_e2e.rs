//! The deployment files in `deploy/` run as written: the systemd unit's command line
//! with each host's environment file, and the StatefulSet's start script with each pod's
//! hostname, each start three real nodes (on loopback, in temp directories, with
//! certificates from `kuorum certs`) that form a ready cluster over TLS. The Kubernetes
//! manifests validate strictly against Kubernetes 1.37's schemas. The release binary they
//! run is under 60 MB.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kuorum_e2e::{die_with_parent, free_ports, kuorum_bin};

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy").join(path)
}

fn venv_bin(name: &str) -> Option<PathBuf> {
    let venv = std::env::var_os("KUORUM_VENV")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/kuorum-venv")))?;
    let p = venv.join("bin").join(name);
    p.exists().then_some(p)
}

/// Three nodes started from command lines; killed on drop.
struct Nodes(Vec<Child>);

impl Drop for Nodes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs each `sh` script as a node, then waits until every REST port answers `/readyz`
/// over TLS with the CA in `pki`.
fn start_and_wait_ready(scripts: &[String], env: &[Vec<(String, String)>], pki: &Path, ports: &[u16], logs: &Path) {
    let mut nodes = Nodes(Vec::new());
    for (i, script) in scripts.iter().enumerate() {
        let log = std::fs::File::create(logs.join(format!("node{}.log", i + 1))).unwrap();
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(script)
            .envs(env[i].iter().cloned())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        die_with_parent(&mut cmd);
        nodes.0.push(cmd.spawn().unwrap());
    }
    let ca = reqwest::Certificate::from_pem(&std::fs::read(pki.join("ca.crt")).unwrap()).unwrap();
    let client =
        reqwest::blocking::Client::builder().add_root_certificate(ca).timeout(Duration::from_secs(2)).build().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    for port in ports {
        loop {
            for (i, c) in nodes.0.iter_mut().enumerate() {
                if let Ok(Some(status)) = c.try_wait() {
                    let log = std::fs::read_to_string(logs.join(format!("node{}.log", i + 1))).unwrap_or_default();
                    panic!("node {} exited ({status}):\n{log}", i + 1);
                }
            }
            let url = format!("https://localhost:{port}/readyz");
            if matches!(client.get(&url).send(), Ok(r) if r.status() == 200) {
                break;
            }
            assert!(Instant::now() < deadline, "{url} never ready");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

fn certs(bin: &Path, pki: &Path) {
    let out = Command::new(bin).args(["certs", "--dir"]).arg(pki).args(["--nodes", "3"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// What ships stays small (issue 38): the release profile strips the binary's debug info
/// (`[profile.release.package.kuorum]` in Cargo.toml); with it, the binary was 175 MB.
const RELEASE_BINARY_MAX_BYTES: u64 = 60_000_000;

#[test]
fn the_release_binary_is_under_60_mb() {
    let Some(bin) = kuorum_bin() else {
        eprintln!("SKIP: no kuorum binary (set KUORUM_BIN or run scripts/test.sh)");
        return;
    };
    if bin.parent().and_then(Path::file_name).is_none_or(|d| d != "release") {
        eprintln!("SKIP: {} is not a release build", bin.display());
        return;
    }
    let size = std::fs::metadata(&bin).unwrap().len();
    assert!(
        size < RELEASE_BINARY_MAX_BYTES,
        "{} is {size} bytes, over {RELEASE_BINARY_MAX_BYTES}: is its debug info stripped?",
        bin.display()
    );
}

#[test]
fn the_systemd_unit_starts_a_cluster_with_each_hosts_environment_file() {
    let Some(bin) = kuorum_bin() else {
        eprintln!("SKIP: no kuorum binary (set KUORUM_BIN or run scripts/test.sh)");
        return;
    };
    let unit = std::fs::read_to_string(deploy("systemd/kuorum.service")).unwrap();
    // ExecStart with its continuation lines joined.
    let joined = unit.replace("\\\n", " ");
    let exec = joined.lines().find_map(|l| l.strip_prefix("ExecStart=")).expect("an ExecStart line");
    let tmp = tempfile::tempdir().unwrap();
    let pki = tmp.path().join("pki");
    certs(&bin, &pki);
    let ports = free_ports(6);
    let mut scripts = Vec::new();
    for i in 1..=3usize {
        let text = std::fs::read_to_string(deploy(&format!("systemd/node{i}.env"))).unwrap();
        let mut vars: BTreeMap<String, String> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        assert_eq!(vars["KUORUM_ID"], i.to_string());
        // The hosts 10.0.0.1-3 become this machine: loopback, free ports, temp dirs.
        let local = |v: &str| {
            let mut v = v.to_string();
            for n in 1..=3 {
                v = v
                    .replace(&format!("10.0.0.{n}:6443"), &format!("127.0.0.1:{}", ports[n - 1]))
                    .replace(&format!("10.0.0.{n}:6543"), &format!("127.0.0.1:{}", ports[n + 2]));
            }
            v
        };
        for v in vars.values_mut() {
            *v = local(v);
        }
        vars.insert("KUORUM_DATA_DIR".into(), tmp.path().join(format!("data{i}")).display().to_string());
        vars.insert("KUORUM_PKI".into(), pki.display().to_string());
        // systemd's expansion: ${VAR} inside or as a word, $VAR as words of their own.
        let mut line = exec.to_string();
        for (k, v) in &vars {
            line = line.replace(&format!("${{{k}}}"), v).replace(&format!("${k}"), v);
        }
        assert!(!line.contains('$'), "a variable no environment file sets: {line}");
        let line = line.replacen("/usr/local/bin/kuorum", &bin.display().to_string(), 1);
        scripts.push(format!("exec {line}"));
    }
    start_and_wait_ready(&scripts, &[vec![], vec![], vec![]], &pki, &ports[..3], tmp.path());
}

#[test]
fn the_statefulset_script_starts_a_cluster_and_the_manifests_validate() {
    let (Some(bin), Some(python)) = (kuorum_bin(), venv_bin("python")) else {
        eprintln!("SKIP: needs the kuorum binary and the venv (run scripts/test.sh)");
        return;
    };
    let manifests = deploy("kubernetes/kuorum.yaml");
    let validate = venv_bin("kubernetes-validate").expect("kubernetes-validate in the venv (scripts/setup.sh)");
    let out = Command::new(validate).args(["--strict", "-k", "1.37.0"]).arg(&manifests).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    for kind in ["service/kuorum-peer", "service/kuorum", "statefulset/kuorum", "poddisruptionbudget/kuorum"] {
        assert!(text.contains(&format!("passed for resource {kind}")), "{kind}: {text}");
    }

    // The container's script and PEERS, as the StatefulSet gives them.
    let extract = r#"
import json, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "StatefulSet":
        c = d["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in c["env"]}
        print(json.dumps({"command": c["command"], "script": c["args"][0], "peers": env["PEERS"]}))
"#;
    let out = Command::new(python).arg("-c").arg(extract).arg(&manifests).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(spec["command"], serde_json::json!(["/bin/sh", "-c"]));
    let tmp = tempfile::tempdir().unwrap();
    let pki = tmp.path().join("pki");
    certs(&bin, &pki);
    let ports = free_ports(6);
    let mut scripts = Vec::new();
    let mut envs = Vec::new();
    for ordinal in 0..3usize {
        // Each pod listens on its own port here (one loopback for three pods).
        let script = spec["script"]
            .as_str()
            .unwrap()
            .replace("/usr/local/bin/kuorum", &bin.display().to_string())
            .replace("0.0.0.0:6443", &format!("127.0.0.1:{}", ports[ordinal]))
            .replace("0.0.0.0:6543", &format!("127.0.0.1:{}", ports[3 + ordinal]))
            .replace("/var/lib/kuorum/data", &tmp.path().join(format!("data{ordinal}")).display().to_string())
            .replace("/etc/kuorum/pki", &pki.display().to_string());
        let mut peers = spec["peers"].as_str().unwrap().to_string();
        for n in 0..3 {
            peers = peers.replace(
                &format!("kuorum-{n}.kuorum-peer.$(POD_NAMESPACE).svc.cluster.local:6543"),
                &format!("127.0.0.1:{}", ports[3 + n]),
            );
        }
        assert!(!peers.contains("$("), "{peers}");
        scripts.push(script);
        envs.push(vec![("HOSTNAME".to_string(), format!("kuorum-{ordinal}")), ("PEERS".to_string(), peers)]);
    }
    start_and_wait_ready(&scripts, &envs, &pki, &ports[..3], tmp.path());
}
