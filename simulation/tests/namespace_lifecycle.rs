//! Deleting a namespace: it turns Terminating at once, the leader's namespace controller
//! deletes what is in it (each deletion its own resourceVersion), and then it is gone on
//! every node.

use std::time::Duration;

use kuorum_sim::client::request;
use kuorum_sim::cluster::{SimCluster, REST_PORT};
use serde_json::json;

#[test]
fn deleting_a_namespace_empties_then_removes_it() {
    let seed = 11;
    println!("seed {seed}");
    let mut sim = turmoil::Builder::new().simulation_duration(Duration::from_secs(120)).rng_seed(seed).build();
    SimCluster::start(&mut sim, 3, seed);

    sim.client("client", async move {
        loop {
            if matches!(request("node1", REST_PORT, "GET", "/api/v1/namespaces/default", None).await, Ok(ref r) if r.status == 200) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
        assert_eq!(request("node1", REST_PORT, "POST", "/api/v1/namespaces", Some(&ns)).await.map_err(|e| e.to_string())?.status, 201);
        let mut rvs = Vec::new();
        for i in 0..3 {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}});
            let r = request("node2", REST_PORT, "POST", "/api/v1/namespaces/team/configmaps", Some(&cm)).await.map_err(|e| e.to_string())?;
            assert_eq!(r.status, 201);
            rvs.push(r.body["metadata"]["resourceVersion"].as_str().unwrap().to_string());
        }

        let r = request("node3", REST_PORT, "DELETE", "/api/v1/namespaces/team", None).await.map_err(|e| e.to_string())?;
        assert_eq!(r.status, 200);
        assert_eq!(r.body["status"]["phase"], "Terminating");

        // Gone everywhere, contents first.
        for _ in 0..200 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let r = request("node2", REST_PORT, "GET", "/api/v1/namespaces/team", None).await.map_err(|e| e.to_string())?;
            if r.status == 404 {
                for host in ["node1", "node2", "node3"] {
                    let l = request(host, REST_PORT, "GET", "/api/v1/namespaces/team/configmaps", None).await.map_err(|e| e.to_string())?;
                    assert_eq!(l.body["items"].as_array().map(|a| a.len()), Some(0), "{host} still lists contents");
                    let n = request(host, REST_PORT, "GET", "/api/v1/namespaces/team", None).await.map_err(|e| e.to_string())?;
                    assert_eq!(n.status, 404, "{host} still has the namespace");
                }
                return Ok(());
            }
        }
        panic!("the namespace was never removed");
    });
    sim.run().expect("simulation");
}
