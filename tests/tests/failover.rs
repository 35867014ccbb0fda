//! Kill the leader under write load: writes resume through the survivors, every
//! acknowledged write survives, and the killed node catches up after a restart.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use kuorum_e2e::{configmap, eventually, Cluster, Http, WAIT};
use serde_json::json;

const CLIENTS: usize = 8;
const NS: &str = "default";
const CM_PATH: &str = "/api/v1/namespaces/default/configmaps";

struct Ack {
    name: String,
    node: u64,
    started: Instant,
    done: Instant,
}

#[test]
fn leader_kill_under_load_loses_no_acknowledged_write() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    let old_leader = c.leader().unwrap();
    let urls: Vec<(u64, String)> = c.ids().into_iter().map(|id| (id, c.url(id))).collect();
    eprintln!("leader is node {old_leader}");

    let stop = Arc::new(AtomicBool::new(false));
    let acks: Arc<Mutex<Vec<Ack>>> = Arc::default();
    let errors: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let test_start = Instant::now();

    let workers: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let (stop, acks, errors, urls) = (stop.clone(), acks.clone(), errors.clone(), urls.clone());
            thread::spawn(move || {
                let http = Http::with_timeout(Duration::from_secs(5));
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) && i < 20_000 {
                    let (node, url) = &urls[(t + i) % urls.len()];
                    let name = format!("fo-{t}-{i}");
                    let body = configmap(NS, &name, json!({"client": t.to_string(), "seq": i.to_string()}));
                    let started = Instant::now();
                    match http.post(&format!("{url}{CM_PATH}"), &body) {
                        Ok(r) if r.is_success() => {
                            acks.lock().unwrap().push(Ack { name, node: *node, started, done: Instant::now() })
                        }
                        Ok(r) => {
                            let key = format!("node {node}: HTTP {} {}", r.status, r.reason().unwrap_or(""));
                            *errors.lock().unwrap().entry(key).or_default() += 1;
                            thread::sleep(Duration::from_millis(20));
                        }
                        Err(e) => {
                            let msg = format!("{e:#}");
                            let kind = if msg.contains("refused") {
                                "connection refused"
                            } else if msg.contains("timed out") || msg.contains("timeout") {
                                "timeout"
                            } else {
                                "transport error"
                            };
                            *errors.lock().unwrap().entry(format!("node {node}: {kind}")).or_default() += 1;
                            thread::sleep(Duration::from_millis(20));
                        }
                    }
                    i += 1;
                }
            })
        })
        .collect();

    // Let writes flow, then kill the leader.
    let before = eventually(Duration::from_secs(20), "writes acknowledged before the kill", || {
        let n = acks.lock().unwrap().len();
        Ok((n >= 200 || (n > 0 && test_start.elapsed() > Duration::from_secs(4))).then_some(n))
    });
    let before = match before {
        Ok(n) => n,
        Err(e) => {
            stop.store(true, Ordering::Relaxed);
            panic!("{e:#}; errors: {:?}", errors.lock().unwrap());
        }
    };
    let kill_at = Instant::now();
    c.kill(old_leader);
    eprintln!("{before} writes acknowledged; SIGKILLed leader {old_leader}");

    // Writes must resume: first ack of a request sent after the kill.
    let resumed = eventually(Duration::from_secs(20), "a write acknowledged after the kill", || {
        let acks = acks.lock().unwrap();
        Ok(acks.iter().filter(|a| a.started >= kill_at).map(|a| a.done).min())
    });
    // Keep writing a little after recovery, then stop.
    if resumed.is_ok() {
        thread::sleep(Duration::from_secs(2));
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let errors = errors.lock().unwrap().clone();
    let acks = std::mem::take(&mut *acks.lock().unwrap());
    let resumed = resumed.unwrap_or_else(|e| panic!("{e:#}; errors: {errors:?}"));
    let resume_time = resumed.duration_since(kill_at);
    let after = acks.iter().filter(|a| a.started >= kill_at).count();
    let mut per_node = BTreeMap::<u64, usize>::new();
    for a in &acks {
        *per_node.entry(a.node).or_default() += 1;
    }
    eprintln!(
        "writes resumed {resume_time:?} after the kill; {} acknowledged in all ({after} after the kill; per node {per_node:?}); errors: {errors:?}",
        acks.len()
    );
    assert!(resume_time < Duration::from_secs(10), "writes resumed only after {resume_time:?}");

    // Exactly the acknowledged writes, no duplicates in our own bookkeeping.
    let acked: BTreeSet<String> = acks.iter().map(|a| a.name.clone()).collect();
    assert_eq!(acked.len(), acks.len());

    let new_leader = c.wait_leader(WAIT).unwrap();
    assert_ne!(new_leader, old_leader, "a killed node cannot be leader");
    let survivors = c.running();
    assert_eq!(survivors.len(), 2);

    // Each survivor saw the leader change: no leader, then the new one, at least.
    for &id in &survivors {
        let text = Http::default().get(&format!("{}/metrics", c.url(id))).unwrap().text;
        let seen: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("kuorum_raft_leader_changes_seen_total "))
            .unwrap_or_else(|| panic!("node {id}: no leader change counter in /metrics"))
            .trim()
            .parse()
            .unwrap();
        assert!(seen >= 2.0, "node {id} counted {seen} leader changes (the first leader, then the kill)");
    }

    // Every acknowledged configmap is on both survivors (linearizable LIST and GETs).
    let http = Http::default();
    let mut survivor_sets = Vec::new();
    for &id in &survivors {
        let names = http.list_names(&c.url(id), CM_PATH).unwrap();
        let missing: Vec<&String> = acked.difference(&names).collect();
        assert!(
            missing.is_empty(),
            "node {id} lost {} acknowledged writes, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(10)]
        );
        // And a linearizable GET of every acknowledged object, content checked.
        for a in &acks {
            let r = http.get(&format!("{}{CM_PATH}/{}", c.url(id), a.name)).unwrap();
            assert_eq!(r.status, 200, "node {id}: GET {}: {}", a.name, r.text);
            assert_eq!(r.body["metadata"]["name"], a.name.as_str());
            let (t, i) = a.name.trim_start_matches("fo-").split_once('-').unwrap();
            assert_eq!(r.body["data"]["client"], t);
            assert_eq!(r.body["data"]["seq"], i);
        }
        survivor_sets.push(names);
    }
    // Both survivors serve the same set (a timed-out write may still commit: wait for it).
    let reference = eventually(WAIT, "survivors agree", || {
        let a = http.list_names(&c.url(survivors[0]), CM_PATH)?;
        let b = http.list_names(&c.url(survivors[1]), CM_PATH)?;
        Ok((a == b).then_some(a))
    })
    .unwrap();

    // Restart the killed node from its data dir: it catches up and serves the same set.
    let restart_at = Instant::now();
    c.restart(old_leader).unwrap();
    let caught_up = eventually(Duration::from_secs(30), "restarted node serves every write", || {
        let names = http.list_names(&c.url(old_leader), CM_PATH)?;
        Ok((names == reference).then_some(()))
    });
    if let Err(e) = caught_up {
        let names = http.list_names(&c.url(old_leader), CM_PATH).unwrap_or_default();
        panic!(
            "{e:#}: restarted node has {} names, survivors {} ({} acked missing)",
            names.len(),
            reference.len(),
            acked.difference(&names).count()
        );
    }
    eprintln!("restarted node {old_leader} caught up in {:?}", restart_at.elapsed());
    c.wait_leader(WAIT).unwrap(); // all three agree on one leader again

    // And it takes writes again (forwarded or as leader).
    let r = http
        .post(&format!("{}{CM_PATH}", c.url(old_leader)), &configmap(NS, "after-restart", json!({"ok": "yes"})))
        .unwrap();
    assert_eq!(r.status, 201, "write through restarted node: {}", r.text);
    for id in c.ids() {
        let r = http.get(&format!("{}{CM_PATH}/after-restart", c.url(id))).unwrap();
        assert_eq!(r.status, 200, "node {id}: {}", r.text);
    }
    c.check_alive().unwrap();
}

/// A node is not ready before it has the bootstrap roles and bindings (kube's
/// `poststarthook/rbac/bootstrap-roles`), and one an administrator deleted does not keep
/// a restarted follower from ever being ready: the follower makes it again itself.
#[test]
fn a_follower_restarted_after_a_bootstrap_binding_was_deleted_makes_it_again() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    let follower = c.followers().unwrap()[0];
    let url = format!("{}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:basic-user", c.url(follower));
    let before = c.http().get(&url).unwrap();
    assert_eq!(before.status, 200, "{}", before.text);
    let r = c.http().delete(&url).unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    c.restart(follower).unwrap(); // waits for its /readyz
    let after = c.http().get(&url).unwrap();
    assert_eq!(after.status, 200, "made again before the node was ready: {}", after.text);
    assert_ne!(after.body["metadata"]["uid"], before.body["metadata"]["uid"], "a new object");
}
