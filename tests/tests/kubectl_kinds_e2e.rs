//! kubectl v1.37 flows over the built-in kinds beyond the first eighteen, against a 3-node
//! cluster: the generators `create job|cronjob|pdb|ingress|priorityclass|quota` (protobuf
//! bodies), `get all` (the `all` category: replicasets and the other workloads), `rollout
//! history` (which reads a deployment's replicasets), `autoscale` (an autoscaling/v2
//! HorizontalPodAutoscaler), `scale` of a replicaset, and `certificate approve` (the
//! approval subresource). Each object is read back from another node.

use kuorum_e2e::Cluster;
use serde_json::json;

#[test]
fn kubectl_flows_over_every_kind() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };
    let ids = c.ids();
    let (a, b) = (ids[0], ids[1]);
    c.kubectl(a, &["create", "namespace", "flows"]).unwrap().ok("create namespace");
    let ns = ["-n", "flows"];

    // The namespace goes first: a job's command follows `--`.
    let create = |args: &[&str], what: &str| {
        let mut all: Vec<&str> = ns.to_vec();
        all.extend_from_slice(args);
        c.kubectl(a, &all).unwrap().ok(what)
    };
    create(&["create", "job", "once", "--image=busybox:1.36", "--", "echo", "hi"], "create job");
    let job = c.get_json(b, &["job", "once", "-n", "flows"]);
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never", "{job}");
    assert_eq!(job["spec"]["backoffLimit"], 6, "kube's default: {job}");
    let uid = job["metadata"]["uid"].as_str().unwrap();
    assert_eq!(job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"], uid, "{job}");

    create(&["create", "cronjob", "nightly", "--image=busybox:1.36", "--schedule=0 3 * * *"], "create cronjob");
    let cj = c.get_json(b, &["cronjob", "nightly", "-n", "flows"]);
    assert_eq!(
        (cj["spec"]["schedule"].as_str(), cj["spec"]["concurrencyPolicy"].as_str()),
        (Some("0 3 * * *"), Some("Allow"))
    );
    let bad = c.kubectl(a, &["create", "cronjob", "bad", "-n", "flows", "--image=x", "--schedule=61 * * * *"]).unwrap();
    assert!(!bad.success() && bad.stderr.contains("spec.schedule"), "an invalid schedule is refused: {bad:?}");

    create(&["create", "pdb", "web", "--selector=app=web", "--min-available=1"], "create pdb");
    assert_eq!(c.get_json(b, &["pdb", "web", "-n", "flows"])["spec"]["minAvailable"], 1);

    create(&["create", "ingress", "site", "--rule=example.com/*=web:80"], "create ingress");
    let ing = c.get_json(b, &["ingress", "site", "-n", "flows"]);
    assert_eq!(ing["spec"]["rules"][0]["host"], "example.com", "{ing}");
    assert_eq!(ing["spec"]["rules"][0]["http"]["paths"][0]["pathType"], "Prefix", "{ing}");

    c.kubectl(a, &["create", "priorityclass", "high", "--value=1000", "--description=important"])
        .unwrap()
        .ok("create priorityclass");
    let pc = c.get_json(b, &["priorityclass", "high"]);
    assert_eq!((pc["value"].as_i64(), pc["preemptionPolicy"].as_str()), (Some(1000), Some("PreemptLowerPriority")));

    create(&["create", "quota", "small", "--hard=pods=10,requests.cpu=2"], "create quota");
    assert_eq!(
        c.get_json(b, &["quota", "small", "-n", "flows"])["spec"]["hard"],
        json!({"pods": "10", "requests.cpu": "2"})
    );

    // A deployment's replicaset, created as its controller would (kuorum runs no
    // controllers): `get all` lists it, `rollout history` reads it.
    create(&["create", "deployment", "web", "--image=nginx:1.27"], "create deployment");
    let d = c.get_json(b, &["deploy", "web", "-n", "flows"]);
    let rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web-5d4f8c", "namespace": "flows",
                     "labels": {"app": "web", "pod-template-hash": "5d4f8c"},
                     "annotations": {"deployment.kubernetes.io/revision": "1", "kubernetes.io/change-cause": "first"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                          "uid": d["metadata"]["uid"], "controller": true}]},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f8c"}},
                 "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": "5d4f8c"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}
    });
    let file = c.write_file("rs.json", &rs.to_string());
    c.kubectl(a, &["create", "-f", &file]).unwrap().ok("create replicaset");
    let all = c.kubectl(b, &["get", "all", "-n", "flows"]).unwrap().ok("get all");
    for want in ["deployment.apps/web", "replicaset.apps/web-5d4f8c", "job.batch/once", "cronjob.batch/nightly"] {
        assert!(all.stdout.contains(want), "get all lists {want}:\n{}", all.stdout);
    }
    let history = c.kubectl(b, &["rollout", "history", "deployment/web", "-n", "flows"]).unwrap().ok("rollout history");
    assert!(
        history.stdout.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["1", "first"]),
        "{}",
        history.stdout
    );
    // autoscale: an autoscaling/v2 HorizontalPodAutoscaler with kube's default CPU target.
    c.kubectl(a, &["autoscale", "deployment", "web", "--min=1", "--max=3", "-n", "flows"]).unwrap().ok("autoscale");
    let hpa = c.get_json(b, &["hpa", "web", "-n", "flows"]);
    assert_eq!((hpa["spec"]["minReplicas"].as_i64(), hpa["spec"]["maxReplicas"].as_i64()), (Some(1), Some(3)), "{hpa}");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "web", "{hpa}");
    let shown = c.kubectl(b, &["get", "hpa", "web", "-n", "flows"]).unwrap().ok("get hpa");
    assert!(shown.stdout.contains("Deployment/web"), "{}", shown.stdout);

    let scaled = c.kubectl(a, &["scale", "rs/web-5d4f8c", "--replicas=3", "-n", "flows"]).unwrap().ok("scale rs");
    assert!(scaled.stdout.contains("scaled"), "{}", scaled.stdout);
    assert_eq!(c.get_json(b, &["rs", "web-5d4f8c", "-n", "flows"])["spec"]["replicas"], 3);

    // A certificate signing request, approved through the approval subresource.
    let csr = json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "alice"},
        "spec": {"request": CSR_PEM_BASE64, "signerName": "kubernetes.io/kube-apiserver-client",
                 "usages": ["client auth"]}
    });
    let file = c.write_file("csr.json", &csr.to_string());
    c.kubectl(a, &["create", "-f", &file]).unwrap().ok("create csr");
    let pending = c.kubectl(b, &["get", "csr", "alice"]).unwrap().ok("get csr");
    assert!(pending.stdout.contains("Pending"), "{}", pending.stdout);
    c.kubectl(a, &["certificate", "approve", "alice"]).unwrap().ok("certificate approve");
    let approved = c.get_json(b, &["csr", "alice"]);
    assert_eq!(approved["status"]["conditions"][0]["type"], "Approved", "{approved}");
    assert_eq!(approved["spec"]["usages"], json!(["client auth"]), "the approval wrote only the conditions");
    let shown = c.kubectl(b, &["get", "csr", "alice"]).unwrap().ok("get csr");
    assert!(shown.stdout.contains("Approved"), "{}", shown.stdout);
}

/// A PKCS#10 request for `CN=alice` (made with `openssl req -new -newkey ec` for this
/// test; its key was thrown away), base64 of its PEM.
const CSR_PEM_BASE64: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIS01ISUNBUUF3RURFT01Bd0dBMVVFQXd3RllXeHBZMlV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQgpCd05DQUFRaENTYVlQRWV2T1NVa3hRT3BvK0NDU0RVKzc3RHd3cXMrZVJpd1JjQjdhYmlaOFJlVTRsbExFZWpmCjNrb1FMYmQvVnB4Uzh3Z0cxbi9Sb2hXYkRKQmlvQUF3Q2dZSUtvWkl6ajBFQXdJRFNBQXdSUUloQU1pUUtqdUIKYlFMRVNMSTRGSHlrUUROMWEvd0ZZSURKVmdqeTJ5cmRKdFBkQWlBcWxZdGxXUGVmZlo0ZzhZN1NXTmJyMUQ5cApad3h0cThPTmt2dy9TeGN0Z2c9PQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K";
