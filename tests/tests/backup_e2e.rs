//! Backup and disaster recovery on real processes: `kuorum snapshot save` from a running
//! cluster, `kuorum snapshot restore` into the data directories of a new cluster on other
//! ports, and the new cluster serving exactly the objects the backup held (uids,
//! resourceVersions and all), nothing written after it, and new writes above it.

use std::collections::BTreeMap;

use kuorum_e2e::{configmap, kuorum_bin, Cluster, ClusterOptions};
use serde_json::{json, Value};

/// Every object of a collection by name, as the node answers it.
fn objects(c: &Cluster, path: &str) -> BTreeMap<String, Value> {
    let r = c.http().get(&format!("{}{path}", c.url(1))).unwrap();
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let ns = o["metadata"]["namespace"].as_str().unwrap_or("");
            (format!("{ns}/{}", o["metadata"]["name"].as_str().unwrap()), o.clone())
        })
        .collect()
}

const COLLECTIONS: [&str; 3] = ["/api/v1/namespaces", "/api/v1/configmaps", "/apis/apps/v1/deployments"];

#[test]
fn a_backup_restores_into_a_new_cluster_with_identical_objects() {
    let Some(old) = Cluster::start_or_skip(3) else { return };
    let http = old.http();
    for ns in ["team-a", "team-b"] {
        let r = http.post(&format!("{}/api/v1/namespaces", old.url(1)), &json!({"metadata": {"name": ns}})).unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
    }
    for i in 0..150 {
        let ns = if i % 2 == 0 { "team-a" } else { "team-b" };
        let node = old.url(1 + (i % 3) as u64);
        let cm = configmap(ns, &format!("cm-{i}"), json!({"i": i.to_string()}));
        let r = http.post(&format!("{node}/api/v1/namespaces/{ns}/configmaps"), &cm).unwrap();
        assert_eq!(r.status, 201, "{}", r.body);
    }
    // One object updated after creation, one deleted: the backup holds their last state.
    let url = format!("{}/api/v1/namespaces/team-a/configmaps/cm-0", old.url(2));
    let mut cm = http.get(&url).unwrap().body;
    cm["data"]["i"] = json!("updated");
    assert_eq!(http.put(&url, &cm).unwrap().status, 200);
    assert_eq!(http.delete(&format!("{}/api/v1/namespaces/team-b/configmaps/cm-1", old.url(3))).unwrap().status, 200);
    let deployment = json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    });
    let r = http.post(&format!("{}/apis/apps/v1/namespaces/team-a/deployments", old.url(1)), &deployment).unwrap();
    assert_eq!(r.status, 201, "{}", r.body);

    let before: Vec<BTreeMap<String, Value>> = COLLECTIONS.iter().map(|p| objects(&old, p)).collect();
    let file = old.root().join("backup.kuorum");
    let servers = old.urls().join(",");
    let out = old.cli(&["snapshot", "save", file.to_str().unwrap(), "--server", &servers]).unwrap();
    assert!(out.contains("saved"), "{out}");
    // Written after the backup: not in it.
    let late = configmap("team-a", "after-backup", json!({}));
    assert_eq!(http.post(&format!("{}/api/v1/namespaces/team-a/configmaps", old.url(1)), &late).unwrap().status, 201);

    // A damaged backup is refused before anything is written.
    let bad = old.root().join("bad.kuorum");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&bad, &bytes[..bytes.len() - 10]).unwrap();
    let dir = old.root().join("never");
    let err = old
        .cli(&[
            "snapshot",
            "restore",
            bad.to_str().unwrap(),
            "--data-dir",
            dir.to_str().unwrap(),
            "--id",
            "1",
            "--peers",
            "1=127.0.0.1:1",
        ])
        .unwrap_err();
    assert!(format!("{err:#}").contains("not a usable kuorum backup"), "{err:#}");

    // A new cluster, elsewhere, from the backup.
    let bin = kuorum_bin().unwrap();
    let opts = ClusterOptions { restore_from: Some(file.clone()), ..ClusterOptions::default() };
    let new = Cluster::start_with(bin, opts).unwrap();
    for (path, want) in COLLECTIONS.iter().zip(&before) {
        let got = objects(&new, path);
        assert_eq!(got.len(), want.len(), "{path}");
        for (name, obj) in want {
            assert_eq!(got.get(name), Some(obj), "{path} {name}");
        }
    }
    assert_eq!(
        new.http().get(&format!("{}/api/v1/namespaces/team-a/configmaps/after-backup", new.url(2))).unwrap().status,
        404
    );
    // The new cluster takes writes, above every resourceVersion of the backup.
    let max_rv = before
        .iter()
        .flat_map(|m| m.values())
        .filter_map(|o| o["metadata"]["resourceVersion"].as_str())
        .map(|rv| rv.parse::<u64>().unwrap())
        .max()
        .unwrap();
    let fresh = configmap("team-b", "after-restore", json!({}));
    let r = new.http().post(&format!("{}/api/v1/namespaces/team-b/configmaps", new.url(3)), &fresh).unwrap();
    assert_eq!(r.status, 201, "{}", r.body);
    let rv: u64 = r.body["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(rv > max_rv, "new rv {rv} after the backup's {max_rv}");
}
