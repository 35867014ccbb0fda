//! kubectl v1.37's write commands beyond create and delete, against a 3-node cluster:
//! client-side `apply` (create, then a change, then a removal), `apply --server-side`
//! with a conflict between two field managers and its `--force-conflicts` resolution,
//! `patch` of each type, `label`, `annotate`, `scale`, `edit` driven by a scripted
//! `KUBE_EDITOR`, and `delete` of an object held by a finalizer until the finalizer is
//! removed. Each command goes through a different node than the one that reads back.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use kuorum_e2e::Cluster;
use serde_json::Value;

/// The managers and operations in an object's managedFields.
fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (e["manager"].as_str().unwrap_or("").to_string(), e["operation"].as_str().unwrap_or("").to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn kubectl_apply_patch_edit_scale_and_finalizers() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };
    let ids = c.ids();
    let (a, b, d) = (ids[0], ids[1], ids[2]);

    // --- client-side apply: create, change, remove a key ---------------------------------
    let ns = c.write_file("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: p\n");
    let out = c.kubectl(a, &["apply", "-f", &ns]).unwrap().ok("apply ns");
    assert!(out.stdout.contains("namespace/p created"), "{}", out.stdout);

    let cm =
        |data: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: p\ndata:\n{data}");
    let f = c.write_file("cfg.yaml", &cm("  a: \"1\"\n"));
    let out = c.kubectl(a, &["apply", "-f", &f]).unwrap().ok("apply create");
    assert!(out.stdout.contains("configmap/cfg created"), "{}", out.stdout);
    let f = c.write_file("cfg.yaml", &cm("  a: \"2\"\n  b: \"3\"\n"));
    let out = c.kubectl(b, &["apply", "-f", &f]).unwrap().ok("apply change");
    assert!(out.stdout.contains("configmap/cfg configured"), "{}", out.stdout);
    let got = c.get_json(d, &["cm", "cfg", "-n", "p"]);
    assert_eq!(got["data"], serde_json::json!({"a": "2", "b": "3"}), "{got}");
    let f = c.write_file("cfg.yaml", &cm("  b: \"3\"\n"));
    c.kubectl(d, &["apply", "-f", &f]).unwrap().ok("apply removal");
    let got = c.get_json(a, &["cm", "cfg", "-n", "p"]);
    assert_eq!(got["data"], serde_json::json!({"b": "3"}), "a key dropped from the file is deleted: {got}");
    let last =
        got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].as_str().unwrap_or("");
    assert!(last.contains("\"b\":\"3\""), "last-applied annotation: {last}");
    assert!(
        managers(&got).iter().any(|(m, op)| m == "kubectl-client-side-apply" && op == "Update"),
        "{:?}",
        managers(&got)
    );

    // A manifest with an unknown field is refused (kubectl sends fieldValidation=Strict).
    let bad = c.write_file(
        "bad.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  namespace: p\ndatta:\n  x: y\n",
    );
    let out = c.kubectl(a, &["apply", "-f", &bad]).unwrap();
    assert!(!out.success(), "{out:?}");
    assert!(out.stderr.contains("unknown field \"datta\""), "{}", out.stderr);

    // --- a deployment: apply, strategic merge of its containers, scale ---------------------
    let deploy = |image: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: p\nspec:\n  replicas: 1\n  \
             selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    \
             spec:\n      containers:\n      - name: c\n        image: {image}\n        ports:\n        - containerPort: 80\n"
        )
    };
    let f = c.write_file("web.yaml", &deploy("img:1"));
    c.kubectl(a, &["apply", "-f", &f]).unwrap().ok("apply deployment");
    let f = c.write_file("web.yaml", &deploy("img:2"));
    let out = c.kubectl(b, &["apply", "-f", &f]).unwrap().ok("apply deployment change");
    assert!(out.stdout.contains("deployment.apps/web configured"), "{}", out.stdout);
    let got = c.get_json(d, &["deploy", "web", "-n", "p"]);
    let containers = got["spec"]["template"]["spec"]["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1, "{got}");
    assert_eq!(containers[0]["image"], "img:2");
    assert_eq!(got["metadata"]["generation"], 2, "a spec change bumps generation: {got}");

    // Strategic merge (kubectl's default): the container list merges by name.
    let p =
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"img:3"},{"name":"side","image":"s:1"}]}}}}"#;
    c.kubectl(d, &["patch", "deploy", "web", "-n", "p", "-p", p]).unwrap().ok("strategic patch");
    let got = c.get_json(a, &["deploy", "web", "-n", "p"]);
    let names: Vec<&str> = got["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "side"], "{got}");
    assert_eq!(got["spec"]["template"]["spec"]["containers"][0]["image"], "img:3");
    assert_eq!(got["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"], 80, "kept: {got}");

    let out = c.kubectl(b, &["scale", "deploy", "web", "-n", "p", "--replicas=3"]).unwrap().ok("scale");
    assert!(out.stdout.contains("deployment.apps/web scaled"), "{}", out.stdout);
    let got = c.get_json(d, &["deploy", "web", "-n", "p"]);
    assert_eq!(got["spec"]["replicas"], 3, "{got}");
    let scale = c.http().get(&format!("{}/apis/apps/v1/namespaces/p/deployments/web/scale", c.url(a))).unwrap();
    assert_eq!(
        (scale.status, &scale.body["kind"], &scale.body["spec"]["replicas"]),
        (200, &Value::from("Scale"), &Value::from(3))
    );
    assert_eq!(scale.body["status"]["selector"], "app=web");

    let wide = c.kubectl(a, &["get", "deploy", "-n", "p", "-o", "wide"]).unwrap().ok("get -o wide");
    assert!(wide.stdout.lines().any(|l| l.starts_with("web")), "{}", wide.stdout);

    // --- patch types, label, annotate ----------------------------------------------------
    c.kubectl(a, &["patch", "cm", "cfg", "-n", "p", "--type=merge", "-p", r#"{"data":{"m":"merge"}}"#])
        .unwrap()
        .ok("merge patch");
    c.kubectl(
        b,
        &[
            "patch",
            "cm",
            "cfg",
            "-n",
            "p",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/data/j","value":"json"},{"op":"remove","path":"/data/b"}]"#,
        ],
    )
    .unwrap()
    .ok("json patch");
    let failed = c
        .kubectl(
            d,
            &[
                "patch",
                "cm",
                "cfg",
                "-n",
                "p",
                "--type=json",
                "-p",
                r#"[{"op":"test","path":"/data/m","value":"nope"}]"#,
            ],
        )
        .unwrap();
    assert!(!failed.success(), "a failing JSON Patch test op must fail: {failed:?}");
    c.kubectl(d, &["label", "cm", "cfg", "-n", "p", "team=blue"]).unwrap().ok("label");
    c.kubectl(a, &["annotate", "cm", "cfg", "-n", "p", "note=hi"]).unwrap().ok("annotate");
    let got = c.get_json(b, &["cm", "cfg", "-n", "p"]);
    assert_eq!(got["data"], serde_json::json!({"m": "merge", "j": "json"}), "{got}");
    assert_eq!(got["metadata"]["labels"]["team"], "blue");
    assert_eq!(got["metadata"]["annotations"]["note"], "hi");
    let ms = managers(&got);
    for m in ["kubectl-patch", "kubectl-label", "kubectl-annotate"] {
        assert!(ms.iter().any(|(name, op)| name == m && op == "Update"), "{m} in {ms:?}");
    }

    // --- edit with a scripted editor -----------------------------------------------------
    let editor = c.root().join("editor.sh");
    fs::write(&editor, "#!/bin/sh\nsed -i 's/^  m: merge$/  m: edited/' \"$1\"\n").unwrap();
    fs::set_permissions(&editor, fs::Permissions::from_mode(0o755)).unwrap();
    let out = c
        .kubectl_with_env(d, &["edit", "cm", "cfg", "-n", "p"], &[("KUBE_EDITOR", editor.to_str().unwrap())])
        .unwrap()
        .ok("edit");
    assert!(out.stdout.contains("configmap/cfg edited"), "{}", out.stdout);
    assert_eq!(c.get_json(a, &["cm", "cfg", "-n", "p"])["data"]["m"], "edited");

    // --- server-side apply: two managers, a conflict, force --------------------------------
    let ssa = |v: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: p\ndata:\n  k: {v}\n")
    };
    let f = c.write_file("alice.yaml", &ssa("alice"));
    let out = c.kubectl(a, &["apply", "--server-side", "--field-manager=alice", "-f", &f]).unwrap().ok("ssa create");
    assert!(out.stdout.contains("configmap/shared serverside-applied"), "{}", out.stdout);
    let f = c.write_file("bob.yaml", &ssa("bob"));
    let out = c.kubectl(b, &["apply", "--server-side", "--field-manager=bob", "-f", &f]).unwrap();
    assert!(!out.success(), "bob must conflict with alice: {out:?}");
    assert!(out.stderr.contains("conflict with \"alice\""), "{}", out.stderr);
    assert!(out.stderr.contains(".data.k"), "{}", out.stderr);
    assert_eq!(c.get_json(d, &["cm", "shared", "-n", "p"])["data"]["k"], "alice", "a conflict changes nothing");
    c.kubectl(b, &["apply", "--server-side", "--field-manager=bob", "--force-conflicts", "-f", &f])
        .unwrap()
        .ok("ssa force");
    let got = c.get_json(d, &["cm", "shared", "-n", "p"]);
    assert_eq!(got["data"]["k"], "bob", "{got}");
    let entries = got["metadata"]["managedFields"].as_array().unwrap();
    let owner = |m: &str| entries.iter().find(|e| e["manager"] == m).map(|e| e["fieldsV1"].clone());
    assert_eq!(owner("bob").unwrap()["f:data"]["f:k"], serde_json::json!({}), "{got}");
    assert!(owner("alice").is_none(), "alice lost her only field: {got}");

    // --- delete held by a finalizer: kubectl waits until it is removed --------------------
    let held = c.write_file("held.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: p\n  finalizers:\n  - example.com/hold\n",
    );
    c.kubectl(a, &["apply", "-f", &held]).unwrap().ok("apply held");
    std::thread::scope(|s| {
        let waiter = s.spawn(|| c.kubectl(b, &["delete", "cm", "held", "-n", "p", "--timeout=50s"]));
        // The object stays, marked, until its finalizer goes.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let got = c.get_json(d, &["cm", "held", "-n", "p"]);
            if got["metadata"]["deletionTimestamp"].is_string() {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "never marked for deletion: {got}");
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_secs(1));
        assert!(!waiter.is_finished(), "kubectl delete must wait for the finalizer");
        c.kubectl(
            d,
            &[
                "patch",
                "cm",
                "held",
                "-n",
                "p",
                "--type=json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
            ],
        )
        .unwrap()
        .ok("remove finalizer");
        let out = waiter.join().unwrap().unwrap().ok("delete waits, then returns");
        assert!(out.stdout.contains("configmap \"held\" deleted"), "{}", out.stdout);
    });
    let gone = c.kubectl(a, &["get", "cm", "held", "-n", "p"]).unwrap();
    assert!(!gone.success() && gone.stderr.contains("NotFound"), "{gone:?}");

    // --- discovery as kubectl shows it -----------------------------------------------------
    let res = c.kubectl(b, &["api-resources"]).unwrap().ok("api-resources");
    for want in ["configmaps", "deployments", "leases", "namespaces"] {
        assert!(res.stdout.lines().any(|l| l.starts_with(want)), "{want}: {}", res.stdout);
    }

    // --- delete the namespace: kubectl waits until it and everything in it are gone --------
    let out = c.kubectl(d, &["delete", "namespace", "p", "--timeout=50s"]).unwrap().ok("delete namespace");
    assert!(out.stdout.contains("namespace \"p\" deleted"), "{}", out.stdout);
    for id in c.ids() {
        let gone = c.kubectl(id, &["get", "namespace", "p"]).unwrap();
        assert!(!gone.success() && gone.stderr.contains("NotFound"), "node {id}: {gone:?}");
        let left = c.http().get(&format!("{}/api/v1/namespaces/p/configmaps", c.url(id))).unwrap();
        assert_eq!(left.body["items"], serde_json::json!([]), "node {id}: {}", left.text);
    }
}
