//! The default admission plugins and graceful pod deletion on a real three-node cluster,
//! driven by kubectl and HTTP:
//!
//! - ResourceQuota: the leader's quota controller fills in `status.hard`; 20 pods created
//!   at once through all three nodes against `pods=10` admit exactly 10 (the others get
//!   kube's `exceeded quota` 403); every node reads `used: pods=10`; deleting 5 gives 5
//!   back, and exactly 5 more get in.
//! - LimitRanger: `kubectl run` in a namespace with a LimitRange gets its defaults.
//! - PodSecurity: `kubectl create` of a privileged pod in a `restricted` namespace is
//!   refused with kube's message.
//! - A bound pod's delete marks it (`kubectl delete --wait=false`); it stays on every node
//!   until the kubelet's confirmation (`--grace-period=0 --force`) removes it.
//! - StorageObjectInUseProtection: a deleted claim a running pod mounts stays (on every
//!   node) until the pod goes, then the leader's protection controller lets it go.
//! - TaintNodesByCondition taints a new Node; the default FlowSchemas and
//!   PriorityLevelConfigurations are there for `kubectl get`.

use std::thread;
use std::time::{Duration, Instant};

use kuorum_e2e::{Cluster, Http};
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";
const QUOTA: &str = "/api/v1/namespaces/default/resourcequotas/pods";

fn pod(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}})
}

/// Waits (up to 30 s) until node `id`'s quota satisfies `done`; answers the quota.
fn wait_quota(c: &Cluster, id: u64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let q = c.http().get(&format!("{}{QUOTA}", c.url(id))).unwrap().body;
        if done(&q) {
            return q;
        }
        assert!(Instant::now() < deadline, "quota never got there: {q}");
        thread::sleep(Duration::from_millis(200));
    }
}

/// Creates `names` at once, each through the next node; answers how many got in, and
/// checks every refusal is the quota's.
fn create_at_once(c: &Cluster, names: Vec<String>) -> usize {
    let urls = c.urls();
    let handles: Vec<_> = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let url = urls[i % urls.len()].clone();
            thread::spawn(move || {
                let r = Http::with_timeout(Duration::from_secs(30)).post(&format!("{url}{PODS}"), &pod(&name)).unwrap();
                match r.status {
                    201 => true,
                    403 => {
                        let m = r.body["message"].as_str().unwrap_or("");
                        assert!(
                            m.contains("is forbidden: exceeded quota: pods, requested: pods=1, used: pods="),
                            "{m}"
                        );
                        false
                    }
                    other => panic!("{name} through {url}: {other} {}", r.text),
                }
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).filter(|in_| *in_).count()
}

#[test]
fn quotas_limits_pod_security_and_graceful_deletion_on_three_nodes() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };

    // ResourceQuota through all three nodes.
    c.kubectl(1, &["create", "quota", "pods", "--hard=pods=10"]).unwrap().ok("create quota");
    wait_quota(&c, 2, |q| q["status"]["hard"]["pods"] == "10" && q["status"]["used"]["pods"] == "0");
    let admitted = create_at_once(&c, (0..20).map(|i| format!("p{i}")).collect());
    assert_eq!(admitted, 10, "exactly the quota's worth");
    for id in 1..=3 {
        let q = wait_quota(&c, id, |q| q["status"]["used"]["pods"] == "10");
        assert_eq!(q["status"]["used"]["pods"], "10");
        let pods = c.http().get(&format!("{}{PODS}", c.url(id))).unwrap().body;
        assert!(pods["items"].as_array().unwrap().len() <= 10);
    }
    let names: Vec<String> = c.http().get(&format!("{}{PODS}", c.url(1))).unwrap().body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 10);
    for name in &names[..5] {
        let r = c.http().delete(&format!("{}{PODS}/{name}", c.url(3))).unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
    }
    // The leader's controller gives back what the deleted pods used.
    wait_quota(&c, 1, |q| q["status"]["used"]["pods"] == "5");
    let admitted = create_at_once(&c, (20..30).map(|i| format!("p{i}")).collect());
    assert_eq!(admitted, 5, "the five freed slots, no more");

    // LimitRanger.
    c.kubectl(1, &["create", "namespace", "limits"]).unwrap().ok("create namespace");
    let range = c.write_file(
        "limits.json",
        &json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l", "namespace": "limits"},
                "spec": {"limits": [{"type": "Container", "default": {"cpu": "200m", "memory": "128Mi"}}]}})
        .to_string(),
    );
    c.kubectl(2, &["apply", "-f", &range]).unwrap().ok("apply limitrange");
    c.kubectl(3, &["run", "web", "-n", "limits", "--image=nginx:1.27"]).unwrap().ok("kubectl run");
    let web = c.get_json(1, &["pod", "web", "-n", "limits"]);
    assert_eq!(web["spec"]["containers"][0]["resources"]["limits"], json!({"cpu": "200m", "memory": "128Mi"}), "{web}");
    assert_eq!(web["spec"]["containers"][0]["resources"]["requests"], json!({"cpu": "200m", "memory": "128Mi"}));
    assert_eq!(
        web["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit for container web"
    );

    // PodSecurity.
    c.kubectl(1, &["create", "namespace", "secure"]).unwrap().ok("create namespace");
    c.kubectl(1, &["label", "namespace", "secure", "pod-security.kubernetes.io/enforce=restricted"])
        .unwrap()
        .ok("label");
    let privileged = c.write_file(
        "root.json",
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root", "namespace": "secure"},
                "spec": {"containers": [{"name": "root", "image": "nginx:1.27", "securityContext": {"privileged": true}}]}})
        .to_string(),
    );
    let out = c.kubectl(2, &["create", "-f", &privileged]).unwrap();
    assert!(!out.success(), "a privileged pod got in: {}", out.stdout);
    assert!(
        out.stderr.contains(r#"pods "root" is forbidden: violates PodSecurity "restricted:latest": privileged (container "root" must not set securityContext.privileged=true)"#),
        "{}",
        out.stderr
    );

    // A bound pod is deleted gracefully.
    let r = c
        .http()
        .post(
            &format!("{}/api/v1/namespaces/limits/pods/web/binding", c.url(2)),
            &json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}),
        )
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    c.kubectl(3, &["delete", "pod", "web", "-n", "limits", "--wait=false"]).unwrap().ok("delete");
    for id in 1..=3 {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let p = c.http().get(&format!("{}/api/v1/namespaces/limits/pods/web", c.url(id))).unwrap();
            assert_eq!(p.status, 200, "node {id}: the pod waits for its kubelet: {}", p.text);
            if p.body["metadata"]["deletionGracePeriodSeconds"] == 30 {
                assert!(p.body["metadata"]["deletionTimestamp"].is_string());
                break;
            }
            assert!(Instant::now() < deadline, "node {id} never saw the mark: {}", p.text);
            thread::sleep(Duration::from_millis(100));
        }
    }
    c.kubectl(1, &["delete", "pod", "web", "-n", "limits", "--grace-period=0", "--force"]).unwrap().ok("force delete");
    let r = c.http().get(&format!("{}/api/v1/namespaces/limits/pods/web", c.url(2))).unwrap();
    assert!(r.status == 404 || r.body["metadata"]["deletionTimestamp"].is_string(), "{}", r.text);
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.http().get(&format!("{}/api/v1/namespaces/limits/pods/web", c.url(2))).unwrap().status != 404 {
        assert!(Instant::now() < deadline, "the confirmed pod stayed");
        thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (up to 15 s) until GET `path` on node `id` answers `status`.
fn wait_status(c: &Cluster, id: u64, path: &str, status: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = c.http().get(&format!("{}{path}", c.url(id))).unwrap();
        if r.status == status {
            return r.body;
        }
        assert!(Instant::now() < deadline, "node {id}: {path} never answered {status}: {}", r.text);
        thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (up to 15 s) until `kubectl get <resource> -o name` through node `id` lists
/// every one of `names`.
fn wait_listed(c: &Cluster, id: u64, resource: &str, prefix: &str, names: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let out = c.kubectl(id, &["get", resource, "-o", "name"]).unwrap().ok("kubectl get");
        let listed: Vec<&str> = out.stdout.lines().collect();
        if names.iter().all(|n| listed.contains(&format!("{prefix}/{n}").as_str())) {
            return;
        }
        assert!(Instant::now() < deadline, "{resource}: {}", out.stdout);
        thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn claims_in_use_nodes_and_flow_control_on_three_nodes() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };

    // The default flow-control configuration, through kubectl (made just after start).
    let schemas = ["exempt", "catch-all", "system-nodes", "kube-scheduler", "service-accounts", "global-default"];
    wait_listed(&c, 2, "flowschemas", "flowschema.flowcontrol.apiserver.k8s.io", &schemas);
    let levels = ["exempt", "catch-all", "system", "workload-high", "workload-low", "global-default"];
    wait_listed(
        &c,
        3,
        "prioritylevelconfigurations",
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io",
        &levels,
    );
    // Each schema's priority level exists: kubectl's MissingPL column says False; a
    // schema naming a level that does not exist says True.
    let dangling = c.write_file(
        "dangling.json",
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "dangling"},
                "spec": {"priorityLevelConfiguration": {"name": "no-such-level"}, "matchingPrecedence": 9000,
                         "rules": [{"subjects": [{"kind": "User", "user": {"name": "nobody"}}],
                                    "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/nothing"]}]}]}})
        .to_string(),
    );
    c.kubectl(1, &["create", "-f", &dangling]).unwrap().ok("create flow schema");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let out = c.kubectl(2, &["get", "flowschemas", "--no-headers"]).unwrap().ok("kubectl get flowschemas");
        let missing = |name: &str| {
            out.stdout
                .lines()
                .find(|l| l.split_whitespace().next() == Some(name))
                .and_then(|l| l.split_whitespace().last().map(String::from))
        };
        let all_found = schemas.iter().all(|s| missing(s).as_deref() == Some("False"));
        if all_found && missing("dangling").as_deref() == Some("True") {
            break;
        }
        assert!(Instant::now() < deadline, "MissingPL: {}", out.stdout);
        thread::sleep(Duration::from_millis(200));
    }

    // A new Node is not ready until its kubelet says so.
    let node = c.write_file(
        "node.json",
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}}).to_string(),
    );
    c.kubectl(1, &["create", "-f", &node]).unwrap().ok("create node");
    let worker = c.get_json(2, &["node", "worker-1"]);
    assert_eq!(worker["spec"]["taints"], json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]));

    // A claim in use outlives its delete until its pod goes.
    const CLAIM: &str = "/api/v1/namespaces/default/persistentvolumeclaims/data";
    let claim = c.write_file(
        "claim.json",
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
        .to_string(),
    );
    c.kubectl(1, &["create", "-f", &claim]).unwrap().ok("create claim");
    let user = json!({"metadata": {"name": "db"}, "spec": {"nodeName": "worker-1",
        "containers": [{"name": "c", "image": "nginx:1.27"}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}});
    let r = c.http().post(&format!("{}{PODS}", c.url(2)), &user).unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    c.kubectl(3, &["delete", "pvc", "data", "--wait=false"]).unwrap().ok("delete claim");
    // Several passes of the protection controller later, it is still there, marked.
    thread::sleep(Duration::from_secs(3));
    for id in 1..=3 {
        let held = wait_status(&c, id, CLAIM, 200);
        assert!(held["metadata"]["deletionTimestamp"].is_string(), "node {id}: {held}");
        assert_eq!(held["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]), "node {id}");
    }
    c.kubectl(1, &["delete", "pod", "db", "--grace-period=0", "--force"]).unwrap().ok("force delete");
    for id in 1..=3 {
        wait_status(&c, id, CLAIM, 404);
    }
}
