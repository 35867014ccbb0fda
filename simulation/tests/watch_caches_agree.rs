//! Every node's watch cache holds the same events, with the same resourceVersions, in
//! the same order: also a node that was crashed, missed writes, and came back. This is
//! what lets a watch resume on any node from any resourceVersion.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kuorum_sim::client::request;
use kuorum_sim::cluster::{SimCluster, REST_PORT};
use kuorum_watch::{WatchFilter, WatchItem, WatchStart};
use serde_json::json;

const CRASH: u32 = 1;
const DOWN: u32 = 2;
const RESTART: u32 = 3;
const BACK: u32 = 4;

fn events_of(cache: &Arc<kuorum_watch::WatchCache>) -> Vec<(u64, &'static str, String)> {
    let mut w =
        cache.watch(WatchFilter::prefix("/registry/core/configmaps/"), WatchStart::After(0), false).unwrap().watch;
    let mut out = Vec::new();
    while let Ok(WatchItem::Event(t, e)) = w.rx.try_recv() {
        out.push((e.rv, t.as_str(), e.object.key.clone()));
    }
    out
}

#[test]
fn caches_agree_across_nodes_and_restarts() {
    let seed = 23;
    println!("seed {seed}");
    let mut sim = turmoil::Builder::new().simulation_duration(Duration::from_secs(200)).rng_seed(seed).build();
    let cluster = SimCluster::start(&mut sim, 3, seed);
    let caches = cluster.caches.clone();
    let phase = Arc::new(AtomicU32::new(0));
    let p = phase.clone();

    sim.client("client", async move {
        for host in ["node1", "node2", "node3"] {
            while !matches!(request(host, REST_PORT, "GET", "/api/v1/namespaces/default", None).await, Ok(ref r) if r.status == 200) {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let write = |i: usize, host: &'static str| async move {
            loop {
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{}", i % 4)}, "data": {"i": i.to_string()}});
                let path = format!("/api/v1/namespaces/default/configmaps/c{}", i % 4);
                let r = match request(host, REST_PORT, "PUT", &path, Some(&cm)).await {
                    Ok(r) if r.status == 404 => request(host, REST_PORT, "POST", "/api/v1/namespaces/default/configmaps", Some(&cm)).await,
                    other => other,
                };
                if matches!(r, Ok(ref r) if r.status == 200 || r.status == 201) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        for i in 0..10 {
            write(i, ["node1", "node2", "node3"][i % 3]).await;
        }
        request("node1", REST_PORT, "DELETE", "/api/v1/namespaces/default/configmaps/c0", None).await.map_err(|e| e.to_string())?;
        p.store(CRASH, Ordering::SeqCst);
        while p.load(Ordering::SeqCst) != DOWN {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for i in 10..20 {
            write(i, ["node1", "node2"][i % 2]).await;
        }
        p.store(RESTART, Ordering::SeqCst);
        while p.load(Ordering::SeqCst) != BACK {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Node 3 catches up (a linearizable read there waits for it).
        loop {
            if let Ok(r) = request("node3", REST_PORT, "GET", "/api/v1/namespaces/default/configmaps", None).await {
                if r.status == 200 {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Every node applies what the leader committed within a few heartbeats; the
        // leader's own controllers may write meanwhile, so wait (bounded) for the caches to
        // be at one resourceVersion rather than taking them at one instant.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let c = caches.lock().unwrap().clone();
            let at_one_rv = [2, 3].iter().all(|id| c[id].rv() == c[&1].rv());
            if at_one_rv || tokio::time::Instant::now() >= deadline {
                break;
            }
        }
        let caches = caches.lock().unwrap().clone();
        let reference = events_of(&caches[&1]);
        assert!(reference.len() >= 21, "every write is an event: {}", reference.len());
        let rvs: Vec<u64> = reference.iter().map(|e| e.0).collect();
        assert!(rvs.windows(2).all(|w| w[0] < w[1]), "one event per resourceVersion, ascending");
        for id in [2, 3] {
            assert_eq!(events_of(&caches[&id]), reference, "node {id}'s events differ from node 1's");
            assert_eq!(caches[&id].rv(), caches[&1].rv(), "node {id} is at the same rv");
        }
        Ok(())
    });

    loop {
        match phase.load(Ordering::SeqCst) {
            CRASH => {
                sim.crash("node3");
                cluster.disks[&3].crash();
                phase.store(DOWN, Ordering::SeqCst);
            }
            RESTART => {
                sim.bounce("node3");
                phase.store(BACK, Ordering::SeqCst);
            }
            _ => {}
        }
        if sim.step().expect("simulation step") {
            break;
        }
    }
}
