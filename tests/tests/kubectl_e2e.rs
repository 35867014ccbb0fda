//! kubectl v1.37 against a 3-node cluster: write through a follower, read everywhere.

use std::fs;

use kuorum_e2e::{Cluster, WAIT};
use serde_json::Value;

#[test]
fn kubectl_create_get_delete_across_nodes() {
    let Some(mut c) = Cluster::start_for_kubectl(3) else { return };
    let leader = c.leader().unwrap();
    let followers = c.followers().unwrap();
    assert_eq!(followers.len(), 2, "3 nodes: one leader, two followers");
    let writer = followers[0];
    let readers: Vec<u64> = c.ids().into_iter().filter(|&id| id != writer).collect();
    eprintln!("leader {leader}, writing through follower {writer}, reading from {readers:?}");

    // --- create through a follower (JSON bodies: `create -f`, validation off) -------------
    let ns_file = c.root().join("ns.yaml");
    fs::write(&ns_file, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: e2e-ns\n  labels:\n    team: kuorum\n")
        .unwrap();
    let cm_file = c.root().join("cm.yaml");
    fs::write(
        &cm_file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: e2e-ns\n  labels:\n    app: e2e\n\
         data:\n  greeting: hello world\n  answer: \"42\"\n",
    )
    .unwrap();

    let out =
        c.kubectl(writer, &["create", "-f", ns_file.to_str().unwrap(), "--validate=false"]).unwrap().ok("create ns");
    assert!(out.stdout.contains("namespace/e2e-ns created"), "stdout: {}", out.stdout);
    let out =
        c.kubectl(writer, &["create", "-f", cm_file.to_str().unwrap(), "--validate=false"]).unwrap().ok("create cm");
    assert!(out.stdout.contains("configmap/cfg created"), "stdout: {}", out.stdout);

    // Creating it again is a conflict, reported by kubectl as AlreadyExists.
    let again = c.kubectl(readers[0], &["create", "-f", cm_file.to_str().unwrap(), "--validate=false"]).unwrap();
    assert!(!again.success(), "second create must fail: {again:?}");
    assert!(again.stderr.contains("AlreadyExists") || again.stderr.contains("already exists"), "{again:?}");

    // --- read from the other two nodes --------------------------------------------------
    let mut uids = Vec::new();
    let mut rvs = Vec::new();
    for &id in &readers {
        let ns = c.kubectl(id, &["get", "namespace", "e2e-ns", "-o", "json"]).unwrap().ok("get ns").json().unwrap();
        assert_eq!(ns["kind"], "Namespace");
        assert_eq!(ns["metadata"]["name"], "e2e-ns");
        assert_eq!(ns["metadata"]["labels"]["team"], "kuorum");

        let cm = c
            .kubectl(id, &["get", "configmap", "cfg", "-n", "e2e-ns", "-o", "json"])
            .unwrap()
            .ok("get cm")
            .json()
            .unwrap();
        assert_eq!(cm["kind"], "ConfigMap");
        assert_eq!(cm["apiVersion"], "v1");
        assert_eq!(cm["metadata"]["name"], "cfg");
        assert_eq!(cm["metadata"]["namespace"], "e2e-ns");
        assert_eq!(cm["metadata"]["labels"]["app"], "e2e");
        assert_eq!(cm["data"]["greeting"], "hello world");
        assert_eq!(cm["data"]["answer"], "42");
        let uid = cm["metadata"]["uid"].as_str().unwrap_or_default().to_string();
        assert!(!uid.is_empty(), "server must set metadata.uid: {cm}");
        let rv = cm["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_string();
        assert!(rv.parse::<u64>().map(|n| n > 0).unwrap_or(false), "resourceVersion must be a positive index: {cm}");
        assert!(cm["metadata"]["creationTimestamp"].is_string(), "creationTimestamp: {cm}");
        uids.push(uid);
        rvs.push(rv);

        let yaml = c.kubectl(id, &["get", "configmap", "cfg", "-n", "e2e-ns", "-o", "yaml"]).unwrap().ok("get -o yaml");
        assert!(yaml.stdout.contains("greeting: hello world"), "yaml: {}", yaml.stdout);
        assert!(yaml.stdout.contains("kind: ConfigMap"), "yaml: {}", yaml.stdout);
    }
    assert!(uids.windows(2).all(|w| w[0] == w[1]), "same object on every node: uids {uids:?}");
    assert!(rvs.windows(2).all(|w| w[0] == w[1]), "same object on every node: resourceVersions {rvs:?}");

    // --- list on every node ---------------------------------------------------------------
    for id in c.ids() {
        let out = c.kubectl(id, &["get", "cm", "-n", "e2e-ns"]).unwrap().ok("get cm list");
        assert!(out.stdout.lines().any(|l| l.split_whitespace().next() == Some("cfg")), "node {id}: {}", out.stdout);
        let names = c.kubectl(id, &["get", "cm", "-n", "e2e-ns", "-o", "name"]).unwrap().ok("get -o name");
        assert!(names.stdout.lines().any(|l| l.trim() == "configmap/cfg"), "node {id}: {}", names.stdout);
        let nss = c.kubectl(id, &["get", "ns", "-o", "name"]).unwrap().ok("get ns");
        for want in ["namespace/default", "namespace/kube-system", "namespace/kube-public", "namespace/e2e-ns"] {
            assert!(nss.stdout.lines().any(|l| l.trim() == want), "node {id} lacks {want}: {}", nss.stdout);
        }
    }

    // --- delete (through the other follower) and see it gone everywhere -------------------
    let deleter = followers[1];
    let out = c.kubectl(deleter, &["delete", "configmap", "cfg", "-n", "e2e-ns"]).unwrap().ok("delete cm");
    assert!(out.stdout.contains("configmap \"cfg\" deleted"), "stdout: {}", out.stdout);
    for id in c.ids() {
        let out = c.kubectl(id, &["get", "configmap", "cfg", "-n", "e2e-ns", "-o", "json"]).unwrap();
        assert!(!out.success(), "node {id} still has cfg after delete: {}", out.stdout);
        assert!(out.stderr.contains("NotFound") || out.stderr.contains("not found"), "node {id}: {}", out.stderr);
        let list = c.kubectl(id, &["get", "cm", "-n", "e2e-ns", "-o", "name"]).unwrap().ok("list after delete");
        assert!(!list.stdout.contains("configmap/cfg"), "node {id} lists cfg after delete: {}", list.stdout);
    }

    // --- version --------------------------------------------------------------------------
    let raw = c.http().get(&format!("{}/version", c.url(writer))).unwrap();
    assert_eq!(raw.status, 200, "/version: {}", raw.text);
    let git_version = raw.body["gitVersion"].as_str().expect("gitVersion in /version").to_string();
    assert!(git_version.starts_with('v'), "gitVersion {git_version}");
    let v = c.kubectl(writer, &["version", "-o", "json"]).unwrap().ok("version").json().unwrap();
    assert_eq!(v["serverVersion"]["gitVersion"], Value::String(git_version.clone()), "{v}");
    assert!(v["clientVersion"]["gitVersion"].as_str().unwrap_or_default().starts_with("v1.37"), "{v}");
    let plain = c.kubectl(writer, &["version"]).unwrap().ok("version");
    assert!(plain.stdout.contains(&format!("Server Version: {git_version}")), "{}", plain.stdout);

    // --- the cluster stayed healthy --------------------------------------------------------
    c.check_alive().unwrap();
    c.wait_leader(WAIT).unwrap();
}
