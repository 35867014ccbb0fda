//! Replacing a member, step by step, as docs/operations.md tells an operator to: a
//! follower is removed while it is up and connected (so it never applies its removal:
//! the leader stops replicating to it first), and it must refuse to serve, even reads
//! at `resourceVersion=0`, told so by the leader; its data directory is wiped, it starts in join mode, is added as a
//! learner that catches up by snapshot (the log it would need is purged), is promoted,
//! and serves everything written before and while it was out.

use std::time::Duration;

use kuorum_raft::RaftTiming;
use kuorum_sim::client::{request_within, Reply, TurmoilDial};
use kuorum_sim::cluster::{host_name, SimCluster, PEER_PORT};
use kuorum_sim::membership::MemberOps;
use kuorum_sim::run::wait_ready;
use serde_json::json;

async fn call(node: u64, method: &str, path: &str, body: Option<serde_json::Value>) -> Reply {
    for _ in 0..50 {
        if let Some(r) = request_within(Duration::from_secs(10), &TurmoilDial, node, method, path, body.as_ref()).await
        {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("node {node} never answered {method} {path}");
}

fn configmap(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}})
}

#[test]
fn a_removed_follower_refuses_then_a_wiped_replacement_catches_up_by_snapshot() {
    let seed = 23;
    println!("seed {seed}");
    let mut sim = turmoil::Builder::new().simulation_duration(Duration::from_secs(300)).rng_seed(seed).build();
    let timing = RaftTiming { snapshot_every: 20, logs_to_keep: 5, ..RaftTiming::default() };
    let cluster = SimCluster::start_with(&mut sim, 3, seed, timing);
    let ops = MemberOps::default();
    let operator = ops.clone();
    let taps: Vec<_> = (1..=3).map(|id| cluster.disks[&id].tap.clone()).collect();

    sim.client("operator", async move {
        wait_ready(3).await;
        let view = call(1, "GET", "/kuorum/v1/members", None).await;
        let leader = view.body["leader"].as_u64().expect("a leader");
        let gone = if leader == 3 { 2 } else { 3 };
        let cms = "/api/v1/namespaces/default/configmaps";
        for i in 0..10 {
            assert_eq!(call(leader, "POST", cms, Some(configmap(&format!("before-{i}")))).await.status, 201);
        }

        let r = call(leader, "DELETE", &format!("/kuorum/v1/members/{gone}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        // The removed follower never applies its removal; the leader tells it, when it
        // asks for a read index. A node that serves only resourceVersion=0 reads asks too
        // (every 5 s), even after it stopped hearing from the leader and started
        // campaigning on its own: it asks a peer, which names the leader.
        tokio::time::sleep(Duration::from_secs(15)).await;
        let r = call(gone, "GET", &format!("{cms}?resourceVersion=0"), None).await;
        assert_eq!(r.status, 503, "{}", r.body);
        assert!(r.body["message"].as_str().unwrap_or("").contains("not a member"), "{}", r.body);
        let r = call(gone, "GET", cms, None).await;
        assert_eq!(r.status, 503, "{}", r.body);
        assert!(r.body["message"].as_str().unwrap_or("").contains("not a member"), "{}", r.body);
        let r = call(gone, "GET", "/readyz", None).await;
        assert_eq!(r.status, 500, "{}", r.body);
        // Writes go on without it, past several snapshots: its catch-up needs one.
        for i in 0..60 {
            assert_eq!(call(leader, "POST", cms, Some(configmap(&format!("while-{i}")))).await.status, 201);
        }

        operator.wipe(gone).await;
        let resets_before = taps[gone as usize - 1].resets();
        let r = call(gone, "GET", cms, None).await;
        assert_eq!(r.status, 503, "a node waiting to join serves nothing: {}", r.body);
        let add = json!({"id": gone, "peerAddress": format!("{}:{PEER_PORT}", host_name(gone))});
        let r = call(leader, "POST", "/kuorum/v1/members", Some(add)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        assert!(taps[gone as usize - 1].resets() > resets_before, "the learner caught up without a snapshot");
        let r = call(leader, "POST", &format!("/kuorum/v1/members/{gone}/promote"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let voters: Vec<u64> = r.body["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "voter")
            .map(|m| m["id"].as_u64().unwrap())
            .collect();
        assert_eq!(voters.len(), 3, "{}", r.body);

        let r = call(gone, "GET", cms, None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let names: Vec<&str> =
            r.body["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names.len(), 70, "{names:?}");
        assert!(names.contains(&"before-0") && names.contains(&"while-59"), "{names:?}");
        assert_eq!(call(gone, "GET", "/readyz", None).await.status, 200);
        Ok(())
    });

    loop {
        match sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => panic!("simulation: {e}"),
        }
        for id in ops.take_wipes() {
            cluster.wipe_and_rejoin(&mut sim, id);
            ops.wiped(id);
        }
    }
}
