//! Every stored built-in kind through three real nodes, table-driven from the examples
//! beside the kinds (`crates/api/tests/kinds/<group>/<plural>.json`): create through a
//! follower, get through another node, list, a watch from the list's resourceVersion that
//! sees the update, update, strategic merge patch and server-side apply, the Table kubectl
//! prints, a protobuf round trip (kinds with a protobuf form), the invalid example answered
//! 422 naming kube's field, and delete.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::time::Duration;

use kuorum_api::registry::{lookup_kind, ResourceDef};
use kuorum_e2e::{Cluster, WAIT};
use serde_json::{json, Value};

const NS: &str = "kinds";

/// Every example, with the file it came from.
fn examples() -> Vec<(String, Value)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/api/tests/kinds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .filter(|f| f.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            let name = f.strip_prefix(&root).unwrap().display().to_string();
            (name, serde_json::from_str(&text).unwrap())
        })
        .collect()
}

/// Rewrites every `namespace: default` in `v` to [`NS`].
fn in_test_namespace(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                if k == "namespace" && child == "default" {
                    *child = json!(NS);
                } else {
                    in_test_namespace(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(in_test_namespace),
        _ => {}
    }
}

/// The collection path of `def` (in [`NS`] when namespaced).
fn collection(def: &ResourceDef) -> String {
    let prefix =
        if def.group.is_empty() { "/api/v1".to_string() } else { format!("/apis/{}/{}", def.group, def.version) };
    if def.namespaced() {
        format!("{prefix}/namespaces/{NS}/{}", def.plural)
    } else {
        format!("{prefix}/{}", def.plural)
    }
}

struct Client {
    http: reqwest::blocking::Client,
}

impl Client {
    /// Sends a request; the status, content type and body bytes.
    fn send(&self, method: &str, url: &str, accept: &str, body: Option<(&str, Vec<u8>)>) -> (u16, String, Vec<u8>) {
        let mut req =
            self.http.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url).header("Accept", accept);
        if let Some((ct, bytes)) = body {
            req = req.header("Content-Type", ct).body(bytes);
        }
        let resp = req.send().unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = resp.status().as_u16();
        let ct = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        (status, ct, resp.bytes().unwrap().to_vec())
    }

    fn json(&self, method: &str, url: &str, ct: &str, body: Option<&Value>) -> (u16, Value) {
        let body = body.map(|b| (ct, serde_json::to_vec(b).unwrap()));
        let (status, _, bytes) = self.send(method, url, "application/json", body);
        (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }
}

/// Reads a watch until an event of `name` at resourceVersion `rv` arrives; the event type.
fn watch_until(url: String, name: String, rv: String) -> std::thread::JoinHandle<Option<String>> {
    std::thread::spawn(move || {
        let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20)).build().unwrap();
        let resp = http.get(&url).header("Accept", "application/json").send().ok()?;
        for line in BufReader::new(resp).lines() {
            let event: Value = serde_json::from_str(&line.ok()?).ok()?;
            let obj = &event["object"];
            if obj["metadata"]["name"] == name.as_str() && obj["metadata"]["resourceVersion"] == rv.as_str() {
                return event["type"].as_str().map(str::to_string);
            }
        }
        None
    })
}

#[test]
fn every_stored_kind_through_three_nodes() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    let leader = c.wait_leader(WAIT).unwrap();
    let follower = c.followers().unwrap()[0];
    let other = c.ids().into_iter().find(|id| *id != leader && *id != follower).unwrap();
    c.create_namespace(follower, NS).unwrap();
    let client =
        Client { http: reqwest::blocking::Client::builder().timeout(Duration::from_secs(10)).build().unwrap() };
    let examples = examples();
    assert!(examples.len() > 20, "only {} examples", examples.len());

    for (file, ex) in &examples {
        // The examples are written for the namespace `default`; here they live in NS, and
        // what they name in their own namespace (an event's involved object) moves too.
        let mut ex = ex.clone();
        in_test_namespace(&mut ex);
        let ex = &ex;
        let valid = &ex["valid"];
        let def = lookup_kind(valid["apiVersion"].as_str().unwrap(), valid["kind"].as_str().unwrap()).unwrap();
        let name = valid["metadata"]["name"].as_str().unwrap().to_string();
        let coll = collection(def);
        let item = format!("{coll}/{name}");
        let at = |node: u64, path: &str| format!("{}{path}", c.url(node));
        let what = |step: &str| format!("{file}: {step}");

        // Create through a follower; read through another node.
        let (status, created) = client.json("POST", &at(follower, &coll), "application/json", Some(valid));
        assert_eq!(status, 201, "{}: {created}", what("create"));
        assert_eq!(created["kind"], valid["kind"], "{}", what("create answers the kind"));
        let (status, got) = client.json("GET", &at(other, &item), "", None);
        assert_eq!(status, 200, "{}: {got}", what("get"));
        assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"], "{}", what("get"));

        // List, then watch from the list's resourceVersion while updating.
        let (status, list) = client.json("GET", &at(leader, &coll), "", None);
        assert_eq!(status, 200, "{}: {list}", what("list"));
        assert_eq!(list["kind"], def.list_kind, "{}", what("list kind"));
        let names: Vec<&str> =
            list["items"].as_array().unwrap().iter().filter_map(|i| i["metadata"]["name"].as_str()).collect();
        assert!(names.contains(&name.as_str()), "{}: {names:?}", what("list has it"));
        let list_rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();

        // A controller may write the object between a read and its update (kuorum's quota
        // controller fills a ResourceQuota's status): a 409 reads again, as clients do.
        let mut current = got.clone();
        let mut attempts = 0;
        let (status, put) = loop {
            attempts += 1;
            let mut updated = current.clone();
            updated["metadata"]["labels"]["kuorum.test/updated"] = json!("yes");
            let (status, put) = client.json("PUT", &at(follower, &item), "application/json", Some(&updated));
            if status != 409 || attempts == 5 {
                break (status, put);
            }
            current = client.json("GET", &at(follower, &item), "", None).1;
        };
        assert_eq!(status, 200, "{}: {put}", what("update"));
        assert_eq!(put["metadata"]["labels"]["kuorum.test/updated"], "yes", "{}", what("update"));
        let put_rv = put["metadata"]["resourceVersion"].as_str().unwrap().to_string();
        let watch = watch_until(
            format!(
                "{}?watch=1&resourceVersion={list_rv}&fieldSelector=metadata.name%3D{name}&timeoutSeconds=15",
                at(other, &coll)
            ),
            name.clone(),
            put_rv,
        );
        assert_eq!(watch.join().unwrap().as_deref(), Some("MODIFIED"), "{}", what("watch from the list's rv"));

        // Strategic merge patch and server-side apply.
        let smp = json!({"metadata": {"labels": {"kuorum.test/patched": "smp"}}});
        let (status, patched) =
            client.json("PATCH", &at(other, &item), "application/strategic-merge-patch+json", Some(&smp));
        assert_eq!(status, 200, "{}: {patched}", what("strategic merge patch"));
        assert_eq!(patched["metadata"]["labels"]["kuorum.test/patched"], "smp", "{}", what("strategic merge patch"));
        let apply = json!({"apiVersion": valid["apiVersion"], "kind": valid["kind"],
                           "metadata": {"name": name, "labels": {"kuorum.test/applied": "yes"}}});
        let (status, applied) = client.json(
            "PATCH",
            &format!("{}?fieldManager=every-kind", at(leader, &item)),
            "application/apply-patch+yaml",
            Some(&apply),
        );
        assert_eq!(status, 200, "{}: {applied}", what("apply"));
        assert_eq!(applied["metadata"]["labels"]["kuorum.test/applied"], "yes", "{}", what("apply"));
        assert_eq!(applied["metadata"]["labels"]["kuorum.test/patched"], "smp", "{}", what("apply keeps the rest"));

        // The Table kubectl reads.
        let (status, _, bytes) =
            client.send("GET", &at(follower, &coll), "application/json;as=Table;v=v1;g=meta.k8s.io", None);
        let table: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        assert_eq!((status, table["kind"].as_str()), (200, Some("Table")), "{}", what("table"));
        let columns = table["columnDefinitions"].as_array().unwrap().len();
        for row in table["rows"].as_array().unwrap() {
            assert_eq!(row["cells"].as_array().unwrap().len(), columns, "{}", what("a cell per column"));
        }

        // Protobuf: read as protobuf and write those bytes back.
        let pb = "application/vnd.kubernetes.protobuf";
        for attempt in 1.. {
            let (status, ct, bytes) = client.send("GET", &at(other, &item), &format!("{pb}, application/json"), None);
            assert_eq!(status, 200, "{}", what("get as protobuf"));
            if !ct.starts_with(pb) {
                break;
            }
            assert!(bytes.starts_with(b"k8s\0"), "{}", what("protobuf envelope"));
            let (status, _, answer) = client.send("PUT", &at(follower, &item), "application/json", Some((pb, bytes)));
            if status == 409 && attempt < 5 {
                continue;
            }
            assert_eq!(status, 200, "{}: {}", what("protobuf write"), String::from_utf8_lossy(&answer));
            let back: Value = serde_json::from_slice(&answer).unwrap();
            assert_eq!(back["metadata"]["labels"], applied["metadata"]["labels"], "{}", what("protobuf round trip"));
            break;
        }

        // The invalid example: 422, naming kube's field.
        let mut invalid = ex["invalid"].clone();
        if ex["invalidField"] != "metadata.name" {
            invalid["metadata"]["name"] = json!(format!("{name}-invalid"));
        }
        let (status, refused) = client.json("POST", &at(follower, &coll), "application/json", Some(&invalid));
        assert_eq!(status, 422, "{}: {refused}", what("invalid"));
        let fields: Vec<&str> =
            refused["details"]["causes"].as_array().into_iter().flatten().filter_map(|c| c["field"].as_str()).collect();
        assert!(fields.contains(&ex["invalidField"].as_str().unwrap()), "{}: {fields:?}", what("invalid field"));

        // Delete: gone, or (a namespace) terminating.
        let (status, deleted) = client.json("DELETE", &at(follower, &item), "", None);
        assert!(status == 200 || status == 202, "{}: {deleted}", what("delete"));
        let (status, after) = client.json("GET", &at(other, &item), "", None);
        assert!(
            status == 404 || after["metadata"]["deletionTimestamp"].is_string(),
            "{}: {status} {after}",
            what("deleted")
        );
    }
}
