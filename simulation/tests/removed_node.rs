//! A node that applied its own removal from the cluster serves nothing of its state (503
//! "not a member", `/readyz` fails): its state no longer follows the log. Here the leader
//! removes itself, so it applies the removal before it steps down.

use std::collections::BTreeSet;
use std::time::Duration;

use kuorum_sim::client::request;
use kuorum_sim::cluster::{host_name, SimCluster, REST_PORT};
use openraft::async_runtime::WatchReceiver;
use openraft::ChangeMembers;

#[test]
fn a_node_that_applied_its_removal_refuses_requests() {
    let seed = 11;
    println!("seed {seed}");
    let mut sim = turmoil::Builder::new().simulation_duration(Duration::from_secs(120)).rng_seed(seed).build();
    let cluster = SimCluster::start(&mut sim, 3, seed);
    let rafts = cluster.rafts.clone();

    sim.client("client", async move {
        for host in ["node1", "node2", "node3"] {
            while !matches!(request(host, REST_PORT, "GET", "/api/v1/namespaces/default", None).await, Ok(ref r) if r.status == 200) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let raft = rafts.lock().unwrap()[&1].clone();
        let leader = raft.metrics().borrow_watched().current_leader.expect("a leader");
        let leader_raft = rafts.lock().unwrap()[&leader].clone();
        leader_raft.change_membership(ChangeMembers::RemoveVoters(BTreeSet::from([leader])), false).await.unwrap();

        let removed = host_name(leader);
        let r = request(&removed, REST_PORT, "GET", "/api/v1/namespaces/default/configmaps", None).await.map_err(|e| e.to_string())?;
        assert_eq!(r.status, 503, "{}", r.body);
        assert!(r.body["message"].as_str().unwrap().contains("not a member"), "{}", r.body);
        let r = request(&removed, REST_PORT, "GET", "/readyz", None).await.map_err(|e| e.to_string())?;
        assert_eq!(r.status, 500);
        // The two that remain elect a leader among themselves and serve.
        let other = host_name(if leader == 1 { 2 } else { 1 });
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let r = request(&other, REST_PORT, "GET", "/api/v1/namespaces/default/configmaps", None).await;
            if matches!(r, Ok(ref r) if r.status == 200) {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{other} does not serve: {r:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(())
    });
    sim.run().expect("simulation");
}
