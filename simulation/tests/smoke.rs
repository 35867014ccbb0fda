//! Smoke test of the seams: three whole nodes in one simulation elect a leader, take a
//! write through a follower, and answer a linearizable read from the third node.

use std::time::Duration;

use kuorum_sim::client::request;
use kuorum_sim::cluster::{host_name, SimCluster, REST_PORT};
use serde_json::json;

async fn leader_of(host: &str) -> Option<u64> {
    let r = request(host, REST_PORT, "GET", "/debug/kuorum/raft", None).await.ok()?;
    r.body["leader"].as_u64()
}

#[test]
fn three_nodes_write_through_follower_read_from_third() {
    let seed = 42;
    println!("seed {seed}");
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(120))
        .rng_seed(seed)
        .tcp_capacity(1 << 16)
        .build();
    SimCluster::start(&mut sim, 3, seed);

    sim.client("client", async move {
        // Wait for a leader everyone agrees on.
        let leader = loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut seen = Vec::new();
            for id in 1..=3 {
                seen.push(leader_of(&host_name(id)).await);
            }
            if let Some(Some(l)) = seen.first() {
                if seen.iter().all(|s| *s == Some(*l)) {
                    break *l;
                }
            }
        };
        let followers: Vec<u64> = (1..=3).filter(|i| *i != leader).collect();
        let (writer, reader) = (host_name(followers[0]), host_name(followers[1]));

        // The system namespaces appear once there is a leader.
        loop {
            let r = request(&writer, REST_PORT, "GET", "/api/v1/namespaces/default", None)
                .await
                .map_err(|e| e.to_string())?;
            if r.status == 200 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "smoke"}, "data": {"k": "v"}});
        let created = request(&writer, REST_PORT, "POST", "/api/v1/namespaces/default/configmaps", Some(&cm))
            .await
            .map_err(|e| e.to_string())?;
        assert_eq!(created.status, 201, "create through follower {writer}: {:?}", created.body);
        let rv: u64 = created.body["metadata"]["resourceVersion"].as_str().unwrap().parse()?;

        // A read without resourceVersion is linearizable: it must see the write at once.
        let got = request(&reader, REST_PORT, "GET", "/api/v1/namespaces/default/configmaps/smoke", None)
            .await
            .map_err(|e| e.to_string())?;
        assert_eq!(got.status, 200, "read from {reader}: {:?}", got.body);
        assert_eq!(got.body["data"]["k"], "v");
        assert_eq!(got.body["metadata"]["resourceVersion"].as_str().unwrap().parse::<u64>()?, rv);

        let list = request(&reader, REST_PORT, "GET", "/api/v1/namespaces/default/configmaps", None)
            .await
            .map_err(|e| e.to_string())?;
        assert_eq!(list.status, 200);
        let list_rv: u64 = list.body["metadata"]["resourceVersion"].as_str().unwrap().parse()?;
        assert!(list_rv >= rv, "a list's resourceVersion covers the write it shows");
        Ok(())
    });
    sim.run().expect("simulation");
}
