//! `kuorum up` as a user runs it: TLS with a local CA, kubectl through the kubeconfig it
//! writes (the admin's client certificate), requests without credentials refused with
//! 401, the health endpoints open, a user's own certificate (`kuorum certs --user`)
//! authenticating as that user, the node's own endpoints for `system:masters` only, and
//! `kuorum member list` through the kubeconfig; then RBAC through kubectl: a user
//! refused, granted by a binding, `kubectl auth can-i`, `kubectl auth whoami` and
//! `kubectl --as` (impersonation as RBAC's `impersonate` allows).

use std::path::PathBuf;
use std::process::Command;

use kuorum_e2e::{kubectl_bin, kuorum_bin, Http, TlsClientOptions, UpCluster};
use serde_json::Value;

/// The kuorum binary and a three-node `kuorum up` of it, or `None` after a SKIP note when
/// there is no kuorum binary or no kubectl.
fn up_or_skip() -> Option<(PathBuf, UpCluster)> {
    let Some(bin) = kuorum_bin() else {
        eprintln!("SKIP: no kuorum binary (set KUORUM_BIN or run scripts/test.sh)");
        return None;
    };
    if kubectl_bin().is_none() {
        eprintln!("SKIP: no kubectl (run scripts/setup.sh or set KUBECTL)");
        return None;
    }
    let up = UpCluster::start(&bin, 3).unwrap_or_else(|e| panic!("kuorum up: {e:#}"));
    Some((bin, up))
}

/// A client of `up` as `user` (`None`: anonymous), with a 10 s bound on each request.
fn client(up: &UpCluster, user: Option<&str>) -> Http {
    up.client(user, &TlsClientOptions::default()).unwrap()
}

#[test]
fn kuorum_up_serves_tls_and_authenticates_every_request() {
    let Some((bin, up)) = up_or_skip() else { return };
    let kc = up.kubeconfig();
    let kubectl = |args: &[&str]| {
        let out = up.kubectl(args).unwrap();
        assert!(out.success(), "kubectl {args:?}: {}\n{}", out.stderr, up.log());
        out.stdout
    };

    // kubectl over TLS with the admin's client certificate, on two nodes.
    assert!(kubectl(&["get", "namespaces"]).contains("default"));
    kubectl(&["create", "configmap", "tls-check", "--from-literal=k=v"]);
    let got = kubectl(&["--context", "kuorum-node2", "get", "configmap", "tls-check", "-o", "json"]);
    let v: Value = serde_json::from_str(&got).unwrap();
    assert_eq!(v["data"]["k"], "v");

    let url = |path: &str| format!("{}{path}", up.url(1));

    // No credentials: 401 with a Status, except for the health endpoints.
    let anonymous = client(&up, None);
    let r = anonymous.get(&url("/api/v1/namespaces")).unwrap();
    assert_eq!(r.status, 401);
    let status = r.body;
    assert_eq!((status["kind"].as_str(), status["reason"].as_str()), (Some("Status"), Some("Unauthorized")));
    for open in ["/readyz", "/livez", "/healthz"] {
        assert_eq!(anonymous.get(&url(open)).unwrap().status, 200, "{open}");
    }
    // A token nobody issued is refused too.
    let r = anonymous.send("GET", &url("/api/v1/namespaces"), &[("Authorization", "Bearer made-up")], None).unwrap();
    assert_eq!(r.status, 401);

    // A user's own certificate: authenticated as that user; the node's endpoints are for
    // system:masters.
    up.add_user("alice", &["dev"]).unwrap();
    let alice = client(&up, Some("alice"));
    // Authenticated, and refused by RBAC: no binding grants alice anything yet.
    let r = alice.get(&url("/api/v1/namespaces/default/configmaps/tls-check")).unwrap();
    assert_eq!(r.status, 403);
    let status = r.body;
    assert!(status["message"].as_str().unwrap().contains("User \"alice\" cannot get"), "{status}");
    let r = alice.get(&url("/kuorum/v1/members")).unwrap();
    assert_eq!(r.status, 403);
    let status = r.body;
    assert!(status["message"].as_str().unwrap().contains("alice"), "{status}");
    let admin = client(&up, Some("admin"));
    assert_eq!(admin.get(&url("/kuorum/v1/members")).unwrap().status, 200);

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
    let Some((_, up)) = up_or_skip() else { return };
    up.add_user("bob", &["dev"]).unwrap();
    // kubectl as the admin, or as bob with his certificate in place of the admin's.
    let run = |user: Option<&str>, args: &[&str]| {
        let mut full: Vec<String> = Vec::new();
        if let Some(u) = user {
            let (cert, key) = up.identity(u);
            full.push(format!("--client-certificate={}", cert.display()));
            full.push(format!("--client-key={}", key.display()));
        }
        full.extend(args.iter().map(|a| a.to_string()));
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        let out = up.kubectl(&full).unwrap();
        (out.code, out.stdout, out.stderr)
    };
    let admin = |args: &[&str]| {
        let (code, out, err) = run(None, args);
        assert_eq!(code, Some(0), "kubectl {args:?}: {err}\n{}", up.log());
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

    // `kubectl --as`: the admin acts as jane (who may do nothing), bob may not until a
    // role lets him impersonate her.
    let (code, out, err) = run(None, &["--as=jane", "--as-group=qa", "auth", "whoami", "-o", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let jane: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(jane["status"]["userInfo"]["username"], "jane");
    assert_eq!(jane["status"]["userInfo"]["groups"], serde_json::json!(["qa", "system:authenticated"]));
    let (code, _, err) = run(None, &["--as=jane", "get", "configmaps"]);
    assert_eq!(code, Some(1));
    assert!(err.contains(r#"User "jane" cannot list resource "configmaps""#), "{err}");
    let (code, _, err) = bob(&["--as=jane", "get", "configmaps"]);
    assert_eq!(code, Some(1));
    assert!(err.contains(r#"users "jane" is forbidden: User "bob" cannot impersonate resource "users""#), "{err}");
    admin(&[
        "create",
        "clusterrole",
        "impersonate-jane",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=jane",
    ]);
    admin(&["create", "clusterrolebinding", "bob-as-jane", "--clusterrole=impersonate-jane", "--user=bob"]);
    admin(&["create", "rolebinding", "jane-view", "--clusterrole=view", "--user=jane"]);
    let (code, out, err) = bob(&["--as=jane", "get", "configmap", "shared", "-o", "jsonpath={.data.k}"]);
    assert_eq!((code, out.as_str()), (Some(0), "v"), "{err}");
    let (code, _, err) = bob(&["--as=admin", "get", "configmaps"]);
    assert_eq!(code, Some(1), "only jane: {err}");
}

/// Service-account tokens as a workload gets them: `kubectl create token` through one
/// node, the token accepted by another (every node of `kuorum up` has the cluster's
/// `sa.key`), RBAC applying to the service account, the keys published for OIDC, and the
/// token refused once its service account is gone.
#[test]
fn service_account_tokens_from_kubectl_work_on_every_node() {
    let Some((_, up)) = up_or_skip() else { return };
    let kubectl = |args: &[&str]| {
        let out = up.kubectl(args).unwrap();
        assert!(out.success(), "kubectl {args:?}: {}\n{}", out.stderr, up.log());
        out.stdout
    };
    kubectl(&["create", "serviceaccount", "robot"]);
    let token = kubectl(&["create", "token", "robot", "--duration=10m"]).trim().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    // No client certificate: the bearer token alone, through nodes 2 and 3.
    let bare = client(&up, None);
    let bearer = format!("Bearer {token}");
    let review = br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec();
    let who = |node: u64| {
        bare.send(
            "POST",
            &format!("{}/apis/authentication.k8s.io/v1/selfsubjectreviews", up.url(node)),
            &[("Authorization", bearer.as_str()), ("Content-Type", "application/json")],
            Some(review.clone()),
        )
        .unwrap()
    };
    let r = who(2);
    assert_eq!(r.status, 201, "{}", r.text);
    let user = &r.body["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:robot");
    let groups: Vec<&str> = user["groups"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(
        groups.contains(&"system:serviceaccounts") && groups.contains(&"system:serviceaccounts:default"),
        "{groups:?}"
    );

    // RBAC applies: nothing is granted to the service account yet.
    let list = |node: u64| {
        bare.send(
            "GET",
            &format!("{}/api/v1/namespaces/default/configmaps", up.url(node)),
            &[("Authorization", bearer.as_str())],
            None,
        )
        .unwrap()
    };
    assert_eq!(list(3).status, 403, "{}", list(3).text);
    kubectl(&["create", "rolebinding", "robot-view", "--clusterrole=view", "--serviceaccount=default:robot"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while list(3).status != 200 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(list(3).status, 200, "{}", list(3).text);

    // The keys a relying party verifies the token with.
    let admin = client(&up, Some("admin"));
    let jwks = admin.get(&format!("{}/openid/v1/jwks", up.url(1))).unwrap();
    assert_eq!(jwks.status, 200, "{}", jwks.text);
    assert_eq!(jwks.body["keys"].as_array().map(Vec::len), Some(1), "{}", jwks.text);
    let discovery = admin.get(&format!("{}/.well-known/openid-configuration", up.url(2))).unwrap();
    assert_eq!(discovery.body["issuer"], "https://kubernetes.default.svc.cluster.local", "{}", discovery.text);

    // The service account deleted: its token no longer authenticates anywhere.
    kubectl(&["delete", "serviceaccount", "robot"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while who(3).status != 401 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(who(3).status, 401);
    assert_eq!(who(1).status, 401);
}
