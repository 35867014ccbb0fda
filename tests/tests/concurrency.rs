//! Optimistic concurrency across nodes: racing writers with the same resourceVersion
//! precondition get exactly one success and 409 Conflicts, and no update is lost.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use kuorum_e2e::{configmap, Cluster, Http, Reply};
use serde_json::{json, Value};

const ROUNDS: usize = 50;
const PER_NODE: usize = 2;
const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn racing_updates_one_winner_per_round_no_lost_update() {
    let Some(c) = Cluster::start_or_skip(3) else { return };
    let http = Http::default();
    let r = http.post(&format!("{}{CM_PATH}", c.url(1)), &configmap("default", "race", json!({"log": ""}))).unwrap();
    assert_eq!(r.status, 201, "create: {}", r.text);

    // Clients 0..K, client k talks to node (k % 3) + 1, so every round races through all nodes.
    let clients: Vec<(usize, String)> = (0..3 * PER_NODE).map(|k| (k, c.url((k % 3) as u64 + 1))).collect();
    let k = clients.len();
    let mut expected_log = String::new();
    let mut last_rv: u64 = 0;

    for round in 0..ROUNDS {
        let barrier = Arc::new(Barrier::new(k));
        let handles: Vec<_> = clients
            .iter()
            .cloned()
            .map(|(id, url)| {
                let barrier = barrier.clone();
                thread::spawn(move || -> (usize, Reply, Reply) {
                    let http = Http::with_timeout(Duration::from_secs(10));
                    let obj_url = format!("{url}{CM_PATH}/race");
                    // Linearizable read (no resourceVersion) through this client's node.
                    let read = http.get(&obj_url).expect("GET");
                    let mut obj: Value = read.body.clone();
                    let token = format!("r{round}c{id};");
                    let old = obj["data"]["log"].as_str().unwrap_or_default().to_string();
                    obj["data"]["log"] = Value::String(old + &token);
                    barrier.wait();
                    // PUT carries the read resourceVersion: the precondition.
                    let put = http.put(&obj_url, &obj).expect("PUT");
                    (id, read, put)
                })
            })
            .collect();
        let results: Vec<(usize, Reply, Reply)> = handles.into_iter().map(|h| h.join().unwrap()).collect();

        // Every linearizable read saw the state after the previous round.
        for (id, read, _) in &results {
            assert_eq!(read.status, 200, "round {round} client {id}: GET {}", read.text);
            assert_eq!(
                read.body["data"]["log"].as_str(),
                Some(expected_log.as_str()),
                "round {round} client {id} read a stale object (node {})",
                id % 3 + 1
            );
        }
        let rvs: Vec<&str> = results.iter().map(|(_, r, _)| r.rv().unwrap_or("")).collect();
        assert!(rvs.windows(2).all(|w| w[0] == w[1]), "round {round}: reads saw different resourceVersions {rvs:?}");

        let winners: Vec<&(usize, Reply, Reply)> = results.iter().filter(|(_, _, p)| p.status == 200).collect();
        let losers: Vec<&(usize, Reply, Reply)> = results.iter().filter(|(_, _, p)| p.status != 200).collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: expected exactly one 200, got {:?}",
            results.iter().map(|(id, _, p)| (*id, p.status, p.reason().map(str::to_string))).collect::<Vec<_>>()
        );
        for (id, _, put) in &losers {
            assert_eq!(put.status, 409, "round {round} client {id}: {}", put.text);
            assert_eq!(put.reason(), Some("Conflict"), "round {round} client {id}: {}", put.text);
            assert_eq!(put.body["kind"], "Status");
        }
        let (winner, _, put) = winners[0];
        let token = format!("r{round}c{winner};");
        expected_log.push_str(&token);
        assert_eq!(put.body["data"]["log"].as_str(), Some(expected_log.as_str()), "winner's reply");
        let rv: u64 = put.rv().and_then(|s| s.parse().ok()).expect("numeric resourceVersion");
        assert!(rv > last_rv, "resourceVersion must grow: {rv} after {last_rv}");
        last_rv = rv;
    }

    // The final object equals the winners' sequence, on every node.
    for id in c.ids() {
        let r = http.get(&format!("{}{CM_PATH}/race", c.url(id))).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.body["data"]["log"].as_str(), Some(expected_log.as_str()), "node {id}");
        assert_eq!(r.rv(), Some(last_rv.to_string().as_str()), "node {id}");
    }
    assert_eq!(expected_log.matches(';').count(), ROUNDS);
}

#[test]
fn racing_creates_of_one_name_one_201_rest_already_exists() {
    let Some(c) = Cluster::start_or_skip(3) else { return };
    for round in 0..10 {
        let name = format!("same-name-{round}");
        let barrier = Arc::new(Barrier::new(6));
        let handles: Vec<_> = (0..6)
            .map(|k| {
                let url = format!("{}{CM_PATH}", c.url(k % 3 + 1));
                let (name, barrier) = (name.clone(), barrier.clone());
                thread::spawn(move || {
                    let http = Http::with_timeout(Duration::from_secs(10));
                    let body = configmap("default", &name, json!({"writer": k.to_string()}));
                    barrier.wait();
                    http.post(&url, &body).expect("POST")
                })
            })
            .collect();
        let replies: Vec<Reply> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let created: Vec<&Reply> = replies.iter().filter(|r| r.status == 201).collect();
        assert_eq!(
            created.len(),
            1,
            "round {round}: {:?}",
            replies.iter().map(|r| (r.status, r.reason())).collect::<Vec<_>>()
        );
        for r in replies.iter().filter(|r| r.status != 201) {
            assert_eq!(r.status, 409, "{}", r.text);
            assert_eq!(r.reason(), Some("AlreadyExists"), "{}", r.text);
        }
        // The stored object is the winner's, on every node.
        let writer = created[0].body["data"]["writer"].clone();
        let http = Http::default();
        for id in c.ids() {
            let r = http.get(&format!("{}{CM_PATH}/{name}", c.url(id))).unwrap();
            assert_eq!(r.status, 200);
            assert_eq!(r.body["data"]["writer"], writer, "node {id}");
            assert_eq!(r.body["metadata"]["uid"], created[0].body["metadata"]["uid"], "node {id}");
        }
    }
}
