//! kubectl v1.37 `get` against a 3-node cluster, printing the server's Table columns:
//! `get cm` (NAME DATA AGE), `get ns` (STATUS Active), `get deploy -o wide` (the
//! priority-1 CONTAINERS/IMAGES/SELECTOR columns), `get -A` (NAMESPACE from each row's
//! PartialObjectMetadata), and `get cm -w`, whose watch events are one-row Tables.
//! Objects are created with JSON over HTTP (kubectl's create generators send protobuf).

use std::time::Duration;

use kuorum_e2e::{configmap, eventually, Cluster, StreamChild, WAIT};
use serde_json::{json, Value};

/// The whitespace-separated fields of each line of kubectl's table output.
fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .filter(|r: &Vec<String>| !r.is_empty())
        .collect()
}

/// The row whose field `col` is `value`.
fn row_with<'a>(rows: &'a [Vec<String>], col: usize, value: &str) -> Option<&'a Vec<String>> {
    rows.iter().find(|r| r.get(col).map(String::as_str) == Some(value))
}

/// Whether `s` looks like a kubectl age (`5s`, `3m2s`, `4h`, `2d3h`, ...).
fn is_age(s: &str) -> bool {
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_digit() || "smhdy".contains(c))
        && s.chars().last().is_some_and(|c| "smhdy".contains(c))
}

fn post(c: &Cluster, node: u64, path: &str, body: &Value) {
    let r = c.http().post(&format!("{}{path}", c.url(node)), body).unwrap();
    assert_eq!(r.status, 201, "POST {path} through node {node}: {}", r.text);
}

#[test]
fn kubectl_get_prints_server_side_columns() {
    let Some(mut c) = Cluster::start_for_kubectl(3) else { return };
    c.wait_leader(WAIT).unwrap();
    let writer = c.followers().unwrap()[0];
    let ns = "tables";
    c.create_namespace(writer, ns).unwrap();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    post(&c, writer, &cms, &configmap(ns, "three", json!({"a": "1", "b": "2", "c": "3"})));
    let mut one = configmap(ns, "one-plus-binary", json!({"a": "1"}));
    one["binaryData"] = json!({"bin": "AAEC"});
    post(&c, writer, &cms, &one);
    post(&c, writer, &cms, &configmap(ns, "empty", json!({})));
    post(
        &c,
        writer,
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        &json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                            {"name": "log", "image": "busybox:1.36"}]}
                }
            }
        }),
    );

    for id in c.ids() {
        // --- get cm: NAME DATA AGE, with the server's DATA counts ------------------------
        let out = c.kubectl(id, &["get", "cm", "-n", ns]).unwrap().ok("get cm");
        let r = rows(&out.stdout);
        assert_eq!(r[0], ["NAME", "DATA", "AGE"], "node {id}:\n{}", out.stdout);
        for (name, data) in [("three", "3"), ("one-plus-binary", "2"), ("empty", "0")] {
            let row = row_with(&r, 0, name).unwrap_or_else(|| panic!("node {id}: no {name} row:\n{}", out.stdout));
            assert_eq!(row.len(), 3, "node {id}: {row:?}");
            assert_eq!(row[1], data, "node {id}: DATA of {name}:\n{}", out.stdout);
            assert!(is_age(&row[2]), "node {id}: AGE {:?}:\n{}", row[2], out.stdout);
        }

        // --- get -A: NAMESPACE comes from each row's object metadata ----------------------
        let out = c.kubectl(id, &["get", "cm", "-A"]).unwrap().ok("get cm -A");
        let r = rows(&out.stdout);
        assert_eq!(r[0], ["NAMESPACE", "NAME", "DATA", "AGE"], "node {id}:\n{}", out.stdout);
        let row = row_with(&r, 1, "three").unwrap_or_else(|| panic!("node {id}:\n{}", out.stdout));
        assert_eq!((row[0].as_str(), row[2].as_str()), (ns, "3"), "node {id}:\n{}", out.stdout);

        // --- get ns: STATUS Active --------------------------------------------------------
        let out = c.kubectl(id, &["get", "ns"]).unwrap().ok("get ns");
        let r = rows(&out.stdout);
        assert_eq!(r[0], ["NAME", "STATUS", "AGE"], "node {id}:\n{}", out.stdout);
        for name in [ns, "default", "kube-system"] {
            let row = row_with(&r, 0, name).unwrap_or_else(|| panic!("node {id}: no {name}:\n{}", out.stdout));
            assert_eq!(row[1], "Active", "node {id}:\n{}", out.stdout);
        }

        // --- get deploy, and -o wide with the priority-1 columns --------------------------
        let out = c.kubectl(id, &["get", "deploy", "-n", ns]).unwrap().ok("get deploy");
        let r = rows(&out.stdout);
        assert_eq!(r[0], ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"], "node {id}:\n{}", out.stdout);
        assert_eq!(r[1][..4], ["web", "0/2", "0", "0"], "node {id}:\n{}", out.stdout);
        let out = c.kubectl(id, &["get", "deploy", "-n", ns, "-o", "wide"]).unwrap().ok("get deploy -o wide");
        let r = rows(&out.stdout);
        assert_eq!(
            r[0],
            ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"],
            "node {id}:\n{}",
            out.stdout
        );
        let web = &r[1];
        assert_eq!(web[..4], ["web", "0/2", "0", "0"], "node {id}:\n{}", out.stdout);
        assert!(is_age(&web[4]), "node {id}:\n{}", out.stdout);
        assert_eq!(web[5..], ["nginx,log", "nginx:1.27,busybox:1.36", "app=web"], "node {id}:\n{}", out.stdout);

        // --- one object --------------------------------------------------------------------
        let out = c.kubectl(id, &["get", "cm", "three", "-n", ns]).unwrap().ok("get cm three");
        let r = rows(&out.stdout);
        assert_eq!(r.len(), 2, "node {id}:\n{}", out.stdout);
        assert_eq!(r[0], ["NAME", "DATA", "AGE"], "node {id}:\n{}", out.stdout);
        assert_eq!(r[1][..2], ["three", "3"], "node {id}:\n{}", out.stdout);
    }

    // --- the wire: kubectl's Accept gets a Table, with the negotiated Content-Type --------
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,\
                  application/json";
    let resp = reqwest::blocking::Client::new()
        .get(format!("{}{cms}?limit=500", c.url(writer)))
        .header("Accept", accept)
        .send()
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json;as=Table;v=v1;g=meta.k8s.io");
    let t: Value = resp.json().unwrap();
    assert_eq!((t["kind"].as_str(), t["apiVersion"].as_str()), (Some("Table"), Some("meta.k8s.io/v1")), "{t}");
    assert!(t["metadata"]["resourceVersion"].as_str().is_some_and(|rv| rv.parse::<u64>().is_ok()), "{t}");
    assert_eq!(t["rows"].as_array().unwrap().len(), 3, "{t}");
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata", "{t}");
    c.check_alive().unwrap();
}

#[test]
fn kubectl_get_watch_prints_rows_for_new_objects() {
    let Some(mut c) = Cluster::start_for_kubectl(3) else { return };
    c.wait_leader(WAIT).unwrap();
    let ids = c.ids();
    let (watched, writer) = (ids[0], ids[1]);
    let ns = "table-watch";
    c.create_namespace(writer, ns).unwrap();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    post(&c, writer, &cms, &configmap(ns, "before", json!({"k": "v"})));
    eventually(WAIT, "node serves before", || {
        Ok((c.http().get(&format!("{}{cms}/before", c.url(watched)))?.status == 200).then_some(()))
    })
    .unwrap();

    // kubectl get -w: the Table list, then a watch from its resourceVersion whose events
    // are one-row Tables; kubectl prints a row per event under the list's header.
    let cmd = c.kubectl_command(watched, "60s", &["get", "cm", "-n", ns, "-w"]).unwrap();
    let mut w = StreamChild::spawn("kubectl get cm -w", cmd, &c.root().join("kubectl-table-watch.stderr")).unwrap();
    w.wait_for(Duration::from_secs(20), "the listed row", |l| {
        let r = rows(&l.join("\n"));
        (r.first().is_some_and(|h| h[..] == ["NAME", "DATA", "AGE"]) && row_with(&r, 0, "before").is_some())
            .then_some(())
    })
    .unwrap();

    post(&c, writer, &cms, &configmap(ns, "during", json!({"a": "1", "b": "2"})));
    let row = w
        .wait_for(Duration::from_secs(20), "a row for the configmap created while watching", |l| {
            row_with(&rows(&l.join("\n")), 0, "during").cloned()
        })
        .unwrap();
    assert_eq!(row.len(), 3, "{row:?}");
    assert_eq!(row[1], "2", "{row:?}");
    assert!(is_age(&row[2]), "{row:?}");

    // A change to it prints another row; the header is printed once.
    let mut changed = configmap(ns, "during", json!({"a": "1", "b": "2", "c": "3"}));
    let cur = c.http().get(&format!("{}{cms}/during", c.url(writer))).unwrap();
    changed["metadata"]["resourceVersion"] = cur.body["metadata"]["resourceVersion"].clone();
    let r = c.http().put(&format!("{}{cms}/during", c.url(writer)), &changed).unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    w.wait_for(Duration::from_secs(20), "a row for the update", |l| {
        rows(&l.join("\n")).iter().any(|r| r.first().map(String::as_str) == Some("during") && r[1] == "3").then_some(())
    })
    .unwrap();
    let stderr = w.stderr();
    let lines = w.kill();
    let headers = lines.iter().filter(|l| l.split_whitespace().next() == Some("NAME")).count();
    assert_eq!(headers, 1, "one header; stdout:\n{}\nstderr: {stderr}", lines.join("\n"));
    assert!(!stderr.contains("error"), "kubectl stderr: {stderr}");
    c.check_alive().unwrap();
}
