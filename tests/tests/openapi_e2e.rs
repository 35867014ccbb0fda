//! `/openapi/v3` on a 3-node cluster, as kubectl v1.37 uses it: `explain` prints the real
//! schemas, and `create -f` / `apply -f` run with validation on (no `--validate=false`),
//! asking the server for `fieldValidation=Strict` because every PATCH operation of the
//! group-version documents declares that parameter.

use std::fs;

use kuorum_e2e::Cluster;
use serde_json::Value;

#[test]
fn openapi_v3_serves_kubectl_explain_create_and_apply() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };
    let ids = c.ids();

    // --- the index and the documents, identical on every node ---------------------------
    let mut indexes = Vec::new();
    for &id in &ids {
        let r = c.http().get(&format!("{}/openapi/v3", c.url(id))).unwrap();
        assert_eq!(r.status, 200, "{}", r.text);
        indexes.push(r.body);
    }
    assert!(indexes.windows(2).all(|w| w[0] == w[1]), "every node serves the same index");
    let paths = indexes[0]["paths"].as_object().expect("index has paths").clone();
    for gv in ["api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"] {
        let url = paths[gv]["serverRelativeURL"].as_str().unwrap();
        assert!(url.starts_with(&format!("/openapi/v3/{gv}?hash=")), "{url}");
        let r = c.http().get(&format!("{}{url}", c.url(ids[1]))).unwrap();
        assert_eq!(r.status, 200, "{url}: {}", r.text);
        assert_eq!(r.body["openapi"], "3.0.0");
        assert!(r.body["components"]["schemas"].as_object().is_some_and(|s| !s.is_empty()), "{url}");
    }
    let r = c.http().get(&format!("{}/openapi/v3/apis/apps/v2", c.url(ids[0]))).unwrap();
    assert_eq!((r.status, r.reason()), (404, Some("NotFound")), "{}", r.text);

    let raw = c.kubectl(ids[2], &["get", "--raw", "/openapi/v3"]).unwrap().ok("get --raw /openapi/v3");
    let index: Value = raw.json().unwrap();
    for gv in ["api/v1", "apis/apps/v1", "apis/coordination.k8s.io/v1"] {
        assert!(index["paths"][gv]["serverRelativeURL"].is_string(), "{gv} missing: {}", raw.stdout);
    }

    // --- kubectl explain -----------------------------------------------------------------
    let out = c.kubectl(ids[0], &["explain", "deployment.spec.replicas"]).unwrap().ok("explain replicas");
    for want in ["GROUP:      apps", "KIND:       Deployment", "VERSION:    v1", "FIELD: replicas <integer>"] {
        assert!(out.stdout.contains(want), "want {want:?} in:\n{}", out.stdout);
    }
    assert!(out.stdout.contains("Number of desired pods"), "description:\n{}", out.stdout);

    let out = c.kubectl(ids[1], &["explain", "pods.spec.containers"]).unwrap().ok("explain containers");
    for want in ["KIND:       Pod", "FIELD: containers <[]Container>", "List of containers belonging to the pod"] {
        assert!(out.stdout.contains(want), "want {want:?} in:\n{}", out.stdout);
    }
    // The fields of Container, with their types.
    assert!(out.stdout.contains("image\t<string>"), "Container fields:\n{}", out.stdout);

    let out = c.kubectl(ids[2], &["explain", "leases"]).unwrap().ok("explain leases");
    assert!(out.stdout.contains("Lease defines a lease concept."), "{}", out.stdout);

    // --- create -f and apply -f with validation on -------------------------------------------
    let dir = c.root();
    let ns_file = dir.join("ns.yaml");
    fs::write(&ns_file, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: openapi-e2e\n").unwrap();
    let out = c.kubectl(ids[0], &["create", "-f", ns_file.to_str().unwrap()]).unwrap().ok("create -f ns");
    assert!(out.stdout.contains("namespace/openapi-e2e created"), "{}", out.stdout);

    // -v=6 logs each request line: kubectl found `fieldValidation` in the PATCH operation
    // of the v1 document, so it asks the server to validate strictly.
    let cm_file = dir.join("cm.yaml");
    fs::write(
        &cm_file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: openapi-e2e\ndata:\n  a: \"1\"\n",
    )
    .unwrap();
    let out = c.kubectl(ids[1], &["create", "-f", cm_file.to_str().unwrap(), "-v=6"]).unwrap().ok("create -f cm");
    assert!(out.stdout.contains("configmap/cfg created"), "{}", out.stdout);
    assert!(out.stderr.contains("/openapi/v3/api/v1?hash="), "kubectl fetched the v1 document:\n{}", out.stderr);
    assert!(
        out.stderr.contains("fieldValidation=Strict"),
        "kubectl should send fieldValidation=Strict:\n{}",
        out.stderr
    );

    let deploy_file = dir.join("deploy.yaml");
    let deploy = [
        "apiVersion: apps/v1",
        "kind: Deployment",
        "metadata:",
        "  name: web",
        "  namespace: openapi-e2e",
        "spec:",
        "  replicas: 2",
        "  selector:",
        "    matchLabels:",
        "      app: web",
        "  template:",
        "    metadata:",
        "      labels:",
        "        app: web",
        "    spec:",
        "      containers:",
        "      - name: web",
        "        image: nginx:1.27",
    ];
    fs::write(&deploy_file, deploy.join("\n") + "\n").unwrap();
    let out = c.kubectl(ids[2], &["apply", "-f", deploy_file.to_str().unwrap(), "-v=6"]).unwrap().ok("apply -f");
    assert!(out.stdout.contains("deployment.apps/web created"), "{}", out.stdout);
    assert!(out.stderr.contains("fieldValidation=Strict"), "apply asks for strict validation:\n{}", out.stderr);
    let d = c
        .kubectl(ids[0], &["get", "deployment", "web", "-n", "openapi-e2e", "-o", "json"])
        .unwrap()
        .ok("get deployment")
        .json()
        .unwrap();
    assert_eq!(d["spec"]["replicas"], 2);
    assert!(
        d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].is_string(),
        "apply records the last applied configuration: {d}"
    );
}
