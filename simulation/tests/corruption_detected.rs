//! A node whose stored state changes behind Raft's back (a value's bytes altered on its
//! "disk") finds it by its consistency check and stops serving (503 for requests, `/readyz`
//! fails), and the other nodes, which agree with each other,
//! keep serving.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuorum_sim::client::request;
use kuorum_sim::cluster::{ClusterSpec, SimCluster, REST_PORT};
use kuorum_store::engine::ObjectWrite;
use kuorum_store::{ObjectBatch, ObjectEngine};
use serde_json::{json, Value};

const KEY: &str = "/registry/core/configmaps/default/c3";

#[test]
fn a_node_whose_state_was_altered_finds_it_and_stops_serving() {
    let seed = 7;
    println!("seed {seed}");
    let mut sim = turmoil::Builder::new().simulation_duration(Duration::from_secs(300)).rng_seed(seed).build();
    let spec = ClusterSpec {
        compaction_window: Duration::from_secs(2),
        consistency_check_every: Some(Duration::from_secs(1)),
        ..ClusterSpec::new(3, seed)
    };
    let cluster = SimCluster::start_spec(&mut sim, spec);
    let damaged = cluster.disks[&2].objects.clone();
    let lives = cluster.lives.clone();
    let agreed = move |id: u64| {
        let lives = lives.lock().unwrap();
        let (_, c) = lives.iter().rev().find(|(n, _)| *n == id).expect("node started");
        (c.integrity().agreed.load(std::sync::atomic::Ordering::Relaxed), c.integrity().corrupt())
    };
    let agreed = Arc::new(agreed);

    sim.client("client", async move {
        for host in ["node1", "node2", "node3"] {
            while !matches!(request(host, REST_PORT, "GET", "/api/v1/namespaces/default", None).await, Ok(ref r) if r.status == 200) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        for i in 0..8 {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}, "data": {"i": i.to_string()}});
            let r = request("node1", REST_PORT, "POST", "/api/v1/namespaces/default/configmaps", Some(&cm)).await.map_err(|e| e.to_string())?;
            assert_eq!(r.status, 201);
        }
        // Compactions go on while writes do (one every 400 ms of a 2 s window), and every
        // node's checks agree with a majority: no false alarm.
        for i in 0..40 {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ticker"}, "data": {"i": i.to_string()}});
            let _ = request("node1", REST_PORT, "PUT", "/api/v1/namespaces/default/configmaps/ticker", Some(&cm)).await;
            if i == 0 {
                let _ = request("node1", REST_PORT, "POST", "/api/v1/namespaces/default/configmaps", Some(&cm)).await;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        for id in 1..=3 {
            let (ok, corrupt) = agreed(id);
            assert!(ok >= 3, "node {id} agreed with a majority {ok} times");
            assert_eq!(corrupt, None, "node {id}");
        }

        // Node 2's copy of c3, at the version every node holds, changes on its "disk".
        let stored = damaged.get(KEY).unwrap().expect("c3 is stored on node 2");
        let mut obj: Value = serde_json::from_slice(&stored).unwrap();
        let rv: u64 = obj["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
        obj["data"]["i"] = json!("tampered");
        let tampered = Bytes::from(serde_json::to_vec(&obj).unwrap());
        damaged
            .write(ObjectBatch { objects: vec![ObjectWrite { key: KEY.into(), rv, value: Some(tampered) }], meta: vec![] })
            .await
            .unwrap();

        // The next scan of node 2's state (a cached hash answers for at most 30 s) finds it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
        while agreed(2).1.is_none() {
            assert!(tokio::time::Instant::now() < deadline, "node 2 never found its state corrupt");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let why = agreed(2).1.unwrap();
        assert!(why.contains("nodes [1, 3] agree"), "{why}");

        // Node 2 serves nothing of its state; nodes 1 and 3 serve the true value.
        let r = request("node2", REST_PORT, "GET", "/api/v1/namespaces/default/configmaps/c3", None).await.map_err(|e| e.to_string())?;
        assert_eq!(r.status, 503, "{}", r.body);
        assert!(r.body["message"].as_str().unwrap().contains("consistency check"), "{}", r.body);
        let r = request("node2", REST_PORT, "GET", "/api/v1/namespaces/default/configmaps?watch=1", None).await.map_err(|e| e.to_string())?;
        assert_eq!(r.status, 503);
        let r = request("node2", REST_PORT, "GET", "/readyz", None).await.map_err(|e| e.to_string())?;
        assert_eq!(r.status, 500, "not ready");
        for host in ["node1", "node3"] {
            let r = request(host, REST_PORT, "GET", "/api/v1/namespaces/default/configmaps/c3", None).await.map_err(|e| e.to_string())?;
            assert_eq!(r.status, 200, "{host}");
            assert_eq!(r.body["data"]["i"], "3", "{host}");
            let r = request(host, REST_PORT, "GET", "/readyz", None).await.map_err(|e| e.to_string())?;
            assert_eq!(r.status, 200, "{host}");
        }
        for id in [1, 3] {
            assert_eq!(agreed(id).1, None, "node {id} stays healthy");
        }
        // Writes through the healthy nodes go on.
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}});
        let r = request("node3", REST_PORT, "POST", "/api/v1/namespaces/default/configmaps", Some(&cm)).await.map_err(|e| e.to_string())?;
        assert_eq!(r.status, 201);
        Ok(())
    });
    sim.run().expect("simulation");
}
