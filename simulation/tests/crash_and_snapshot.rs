//! A node that is crashed (losing what it had not fsynced) while the others go on far
//! enough to purge their logs catches up by a snapshot streamed from the leader, and
//! then serves the same objects.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kuorum_raft::RaftTiming;
use kuorum_sim::client::request;
use kuorum_sim::cluster::{SimCluster, REST_PORT};
use serde_json::json;

const WRITES: usize = 60;

// Phases the client and the test driver hand to each other.
const CRASH_NODE3: u32 = 1;
const NODE3_DOWN: u32 = 2;
const RESTART_NODE3: u32 = 3;
const NODE3_BACK: u32 = 4;

async fn wait_phase(phase: &AtomicU32, want: u32) {
    while phase.load(Ordering::SeqCst) != want {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn crashed_node_catches_up_by_snapshot() {
    let seed = 7;
    println!("seed {seed}");
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(300))
        .rng_seed(seed)
        .tcp_capacity(1 << 16)
        .build();
    let timing = RaftTiming { snapshot_every: 20, logs_to_keep: 5, ..RaftTiming::default() };
    let cluster = SimCluster::start_with(&mut sim, 3, seed, timing);
    let phase = Arc::new(AtomicU32::new(0));

    let p = phase.clone();
    sim.client("client", async move {
        // Every node has the system namespaces: the cluster is up.
        for host in ["node1", "node2", "node3"] {
            loop {
                let r = request(host, REST_PORT, "GET", "/api/v1/namespaces/default", None).await;
                if matches!(r, Ok(ref r) if r.status == 200) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        p.store(CRASH_NODE3, Ordering::SeqCst);
        wait_phase(&p, NODE3_DOWN).await;

        let mut i = 0;
        while i < WRITES {
            let host = if i % 2 == 0 { "node1" } else { "node2" };
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}, "data": {"i": i.to_string()}});
            match request(host, REST_PORT, "POST", "/api/v1/namespaces/default/configmaps", Some(&cm)).await {
                Ok(r) if r.status == 201 => i += 1,
                // Leader election after the crash: retry.
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        let leader_view = request("node1", REST_PORT, "GET", "/debug/kuorum/raft", None).await.map_err(|e| e.to_string())?;
        assert!(leader_view.body["snapshot"].as_u64().unwrap_or(0) > 0, "node1 built a snapshot: {:?}", leader_view.body);

        p.store(RESTART_NODE3, Ordering::SeqCst);
        wait_phase(&p, NODE3_BACK).await;

        // A linearizable list on node3 must show every object.
        loop {
            if let Ok(r) = request("node3", REST_PORT, "GET", "/api/v1/namespaces/default/configmaps", None).await {
                if r.status == 200 {
                    let n = r.body["items"].as_array().map(|a| a.len()).unwrap_or(0);
                    assert_eq!(n, WRITES, "a linearizable list on node3 shows every acknowledged write");
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let view = request("node3", REST_PORT, "GET", "/debug/kuorum/raft", None).await.map_err(|e| e.to_string())?;
        assert!(view.body["snapshot"].as_u64().unwrap_or(0) > 0, "node3 installed a snapshot: {:?}", view.body);
        Ok(())
    });

    loop {
        match phase.load(Ordering::SeqCst) {
            CRASH_NODE3 => {
                sim.crash("node3");
                cluster.disks[&3].crash();
                phase.store(NODE3_DOWN, Ordering::SeqCst);
            }
            RESTART_NODE3 => {
                sim.bounce("node3");
                phase.store(NODE3_BACK, Ordering::SeqCst);
            }
            _ => {}
        }
        if sim.step().expect("simulation step") {
            break;
        }
    }
}
