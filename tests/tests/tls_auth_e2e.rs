//! `kuorum up` as a user runs it: TLS with a local CA, kubectl through the kubeconfig it
//! writes (the admin's client certificate), requests without credentials refused with
//! 401, the health endpoints open, a user's own certificate (`kuorum certs --user`)
//! authenticating as that user, the node's own endpoints for `system:masters` only, and
//! `kuorum member list` through the kubeconfig; then RBAC through kubectl: a user
//! refused, granted by a binding, `kubectl auth can-i` and `kubectl auth whoami`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kuorum_e2e::{kubectl_bin, kuorum_bin};
use serde_json::Value;

/// A base port with base..base+2 and base+100..base+102 free (`kuorum up`'s layout).
fn free_base_port() -> u16 {
    // Each call starts elsewhere: the tests of this file run in parallel in one process,
    // and two `kuorum up`s probing the same free range at once would both take it.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    for attempt in 0..200u32 {
        let base = 20_000 + ((std::process::id() * 7 + call * 4_999 + attempt * 131) % 20_000) as u16;
        let ports = [base, base + 1, base + 2, base + 100, base + 101, base + 102];
        let held: Vec<_> = ports.iter().filter_map(|p| TcpListener::bind(("127.0.0.1", *p)).ok()).collect();
        if held.len() == ports.len() {
            return base;
        }
    }
    panic!("no free port range for kuorum up");
}

struct Up {
    child: Child,
    dir: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Drop for Up {
    fn drop(&mut self) {
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn up(bin: &Path, base: u16) -> Up {
    let tmp = tempfile::Builder::new().prefix("kuorum-up-e2e-").tempdir().unwrap();
    let dir = tmp.path().join("data");
    let log = std::fs::File::create(tmp.path().join("up.log")).unwrap();
    let child = Command::new(bin)
        .args(["up", "--nodes", "3", "--base-port", &base.to_string(), "--data-dir"])
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let up = Up { child, dir, _tmp: tmp };
    let deadline = Instant::now() + Duration::from_secs(90);
    while !up.dir.join("kubeconfig").exists() {
        assert!(Instant::now() < deadline, "kuorum up wrote no kubeconfig; log:\n{}", log_of(&up));
        std::thread::sleep(Duration::from_millis(200));
    }
    up
}

fn log_of(up: &Up) -> String {
    std::fs::read_to_string(up.dir.parent().unwrap().join("up.log")).unwrap_or_default()
}

/// The kuorum binary and kubectl, or `None` after a SKIP note.
fn binaries() -> Option<(PathBuf, PathBuf)> {
    let Some(bin) = kuorum_bin() else {
        eprintln!("SKIP: no kuorum binary (set KUORUM_BIN or run scripts/test.sh)");
        return None;
    };
    let Some(kubectl) = kubectl_bin() else {
        eprintln!("SKIP: no kubectl (run scripts/setup.sh or set KUBECTL)");
        return None;
    };
    Some((bin, kubectl))
}

fn client(ca: &Path, identity: Option<(&Path, &Path)>) -> reqwest::blocking::Client {
    let mut b = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(10))
        .add_root_certificate(reqwest::Certificate::from_pem(&std::fs::read(ca).unwrap()).unwrap());
    if let Some((cert, key)) = identity {
        let mut pem = std::fs::read(cert).unwrap();
        pem.extend(std::fs::read(key).unwrap());
        b = b.identity(reqwest::Identity::from_pem(&pem).unwrap());
    }
    b.build().unwrap()
}

#[test]
fn kuorum_up_serves_tls_and_authenticates_every_request() {
    let Some((bin, kubectl)) = binaries() else { return };
    let base = free_base_port();
    let up = up(&bin, base);
    let kc = up.dir.join("kubeconfig");
    let pki = up.dir.join("pki");
    let kubectl = |args: &[&str]| {
        let out = Command::new(&kubectl).arg(format!("--kubeconfig={}", kc.display())).args(args).output().unwrap();
        assert!(out.status.success(), "kubectl {args:?}: {}\n{}", String::from_utf8_lossy(&out.stderr), log_of(&up));
        String::from_utf8(out.stdout).unwrap()
    };

    // kubectl over TLS with the admin's client certificate, on two nodes.
    assert!(kubectl(&["get", "namespaces"]).contains("default"));
    kubectl(&["create", "configmap", "tls-check", "--from-literal=k=v"]);
    let got = kubectl(&["--context", "kuorum-node2", "get", "configmap", "tls-check", "-o", "json"]);
    let v: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v["data"]["k"], "v");

    let url = |path: &str| format!("https://127.0.0.1:{base}{path}");
    let ca = pki.join("ca.crt");

    // No credentials: 401 with a Status, except for the health endpoints.
    let anonymous = client(&ca, None);
    let r = anonymous.get(url("/api/v1/namespaces")).send().unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let status: Value = r.json().unwrap();
    assert_eq!((status["kind"].as_str(), status["reason"].as_str()), (Some("Status"), Some("Unauthorized")));
    for open in ["/readyz", "/livez", "/healthz"] {
        assert_eq!(anonymous.get(url(open)).send().unwrap().status().as_u16(), 200, "{open}");
    }
    // A token nobody issued is refused too.
    let r = anonymous.get(url("/api/v1/namespaces")).bearer_auth("made-up").send().unwrap();
    assert_eq!(r.status().as_u16(), 401);

    // A user's own certificate: authenticated as that user; the node's endpoints are for
    // system:masters.
    let out = Command::new(&bin)
        .args(["certs", "--dir"])
        .arg(&pki)
        .args(["--user", "alice", "--group", "dev"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let alice = client(&ca, Some((&pki.join("alice.crt"), &pki.join("alice.key"))));
    // Authenticated, and refused by RBAC: no binding grants alice anything yet.
    let r = alice.get(url("/api/v1/namespaces/default/configmaps/tls-check")).send().unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let status: Value = r.json().unwrap();
    assert!(status["message"].as_str().unwrap().contains("User \"alice\" cannot get"), "{status}");
    let r = alice.get(url("/kuorum/v1/members")).send().unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let status: Value = r.json().unwrap();
    assert!(status["message"].as_str().unwrap().contains("alice"), "{status}");
    let admin = client(&ca, Some((&pki.join("admin.crt"), &pki.join("admin.key"))));
    assert_eq!(admin.get(url("/kuorum/v1/members")).send().unwrap().status().as_u16(), 200);

    // The membership CLI through the kubeconfig (servers, CA and admin certificate).
    let out = Command::new(&bin).args(["member", "list", "-o", "json", "--kubeconfig"]).arg(&kc).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let members: Value = serde_json::from_slice(&out.stdout).unwrap();
    let voters = members["members"].as_array().unwrap().iter().filter(|m| m["role"] == "voter").count();
    assert_eq!(voters, 3, "{members}");

    // The kubeconfig holds the admin's key: only its owner may read it.
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&kc).unwrap().permissions().mode() & 0o077, 0);
}

#[test]
fn rbac_through_kubectl() {
    let Some((bin, kubectl_path)) = binaries() else { return };
    let up = up(&bin, free_base_port());
    let kc = up.dir.join("kubeconfig");
    let pki = up.dir.join("pki");
    let out = Command::new(&bin)
        .args(["certs", "--dir"])
        .arg(&pki)
        .args(["--user", "bob", "--group", "dev"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // kubectl as the admin, or as bob with his certificate in place of the admin's.
    let run = |user: Option<&str>, args: &[&str]| {
        let mut cmd = Command::new(&kubectl_path);
        cmd.arg(format!("--kubeconfig={}", kc.display()));
        if let Some(u) = user {
            cmd.arg(format!("--client-certificate={}", pki.join(format!("{u}.crt")).display()));
            cmd.arg(format!("--client-key={}", pki.join(format!("{u}.key")).display()));
        }
        let out = cmd.args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let admin = |args: &[&str]| {
        let (code, out, err) = run(None, args);
        assert_eq!(code, Some(0), "kubectl {args:?}: {err}\n{}", log_of(&up));
        out
    };
    let bob = |args: &[&str]| run(Some("bob"), args);

    admin(&["create", "configmap", "shared", "--from-literal=k=v"]);
    // Who bob is, and that he may do nothing yet.
    let (code, out, err) = bob(&["auth", "whoami", "-o", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let me: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(me["status"]["userInfo"]["username"], "bob");
    assert_eq!(me["status"]["userInfo"]["groups"], serde_json::json!(["dev", "system:authenticated"]));
    let (code, _, err) = bob(&["get", "configmaps"]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("configmaps is forbidden: User \"bob\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""),
        "{err}"
    );
    let (code, out, _) = bob(&["auth", "can-i", "list", "configmaps"]);
    assert_eq!((code, out.trim()), (Some(1), "no"));

    // The bootstrap view ClusterRole, bound to bob's group in default.
    admin(&["create", "rolebinding", "dev-view", "--clusterrole=view", "--group=dev"]);
    let (code, out, err) = bob(&["get", "configmap", "shared", "-o", "jsonpath={.data.k}"]);
    assert_eq!((code, out.as_str()), (Some(0), "v"), "{err}");
    let (code, out, _) = bob(&["auth", "can-i", "list", "configmaps"]);
    assert_eq!((code, out.trim()), (Some(0), "yes"));
    let (code, out, _) = bob(&["auth", "can-i", "list", "configmaps", "-n", "kube-system"]);
    assert_eq!((code, out.trim()), (Some(1), "no"), "a RoleBinding grants in its namespace only");
    let (code, _, err) = bob(&["create", "configmap", "mine"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("forbidden"), "{err}");
    let (code, out, _) = bob(&["auth", "can-i", "get", "secrets"]);
    assert_eq!((code, out.trim()), (Some(1), "no"), "view does not read secrets");

    // A Role of kubectl's making, bound to bob by name: now he may create.
    admin(&["create", "role", "cm-writer", "--verb=create,delete", "--resource=configmaps"]);
    admin(&["create", "rolebinding", "bob-writer", "--role=cm-writer", "--user=bob"]);
    let (code, _, err) = bob(&["create", "configmap", "mine", "--from-literal=a=b"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = bob(&["auth", "can-i", "--list"]);
    assert_eq!(code, Some(0), "{err}");
    // kubectl merges the rules of one resource: view's reads and the Role's writes.
    assert!(out.lines().any(|l| l.starts_with("configmaps ") && l.contains("[create delete get list watch]")), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("secrets")), "{out}");

    // Taking the binding away takes the grant away.
    admin(&["delete", "rolebinding", "bob-writer"]);
    let (code, out, _) = bob(&["auth", "can-i", "create", "configmaps"]);
    assert_eq!((code, out.trim()), (Some(1), "no"));
    // The admin (system:masters) may do anything.
    let (code, out, _) = run(None, &["auth", "can-i", "*", "*"]);
    assert_eq!((code, out.trim()), (Some(0), "yes"));
}
