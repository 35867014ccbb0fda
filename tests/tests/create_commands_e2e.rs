//! kubectl's generator commands (`create namespace|configmap|secret|deployment|service`),
//! which send protobuf bodies (`application/vnd.kubernetes.protobuf`) with no JSON
//! fallback, against a 3-node cluster; each object is read back from another node.

use kuorum_e2e::Cluster;

#[test]
fn kubectl_create_commands_send_protobuf() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };
    let ids = c.ids();
    let (a, b) = (ids[0], ids[1]);

    let out = c.kubectl(a, &["create", "namespace", "pb"]).unwrap().ok("create namespace");
    assert!(out.stdout.contains("namespace/pb created"), "{}", out.stdout);
    assert_eq!(c.get_json(b, &["ns", "pb"])["status"]["phase"], "Active");

    // --dry-run=server answers without storing.
    let out = c
        .kubectl(a, &["create", "configmap", "dry", "-n", "pb", "--from-literal=a=b", "--dry-run=server"])
        .unwrap()
        .ok("create --dry-run=server");
    assert!(out.stdout.contains("configmap/dry created (server dry run)"), "{}", out.stdout);
    assert!(!c.kubectl(b, &["get", "cm", "dry", "-n", "pb"]).unwrap().success());

    c.kubectl(a, &["create", "configmap", "cfg", "-n", "pb", "--from-literal=greeting=hello", "--from-literal=n=1"])
        .unwrap()
        .ok("create configmap");
    let cm = c.get_json(b, &["cm", "cfg", "-n", "pb"]);
    assert_eq!(cm["data"], serde_json::json!({"greeting": "hello", "n": "1"}), "{cm}");
    assert!(cm["metadata"]["uid"].is_string());

    c.kubectl(a, &["create", "secret", "generic", "s", "-n", "pb", "--from-literal=password=hunter2"])
        .unwrap()
        .ok("create secret");
    let s = c.get_json(b, &["secret", "s", "-n", "pb"]);
    assert_eq!(s["data"]["password"], "aHVudGVyMg==", "bytes travel as base64: {s}");
    assert_eq!(s["type"], "Opaque");

    c.kubectl(a, &["create", "deployment", "web", "-n", "pb", "--image=nginx:1.27", "--replicas=2"])
        .unwrap()
        .ok("create deployment");
    let d = c.get_json(b, &["deploy", "web", "-n", "pb"]);
    assert_eq!(d["spec"]["replicas"], 2, "{d}");
    assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.27");
    assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web");

    c.kubectl(a, &["create", "service", "clusterip", "web", "-n", "pb", "--tcp=80:8080"]).unwrap().ok("create service");
    let svc = c.get_json(b, &["svc", "web", "-n", "pb"]);
    assert_eq!(svc["spec"]["ports"][0]["port"], 80, "{svc}");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);

    // An existing name is refused as kubectl expects it.
    let again = c.kubectl(b, &["create", "configmap", "cfg", "-n", "pb"]).unwrap();
    assert!(!again.success() && again.stderr.contains("configmaps \"cfg\" already exists"), "{again:?}");
}
