//! Service addresses and node ports on a real three-node cluster: `kubectl expose` gives
//! a ClusterIP; 1,000 NodePort services created at once through all three nodes get
//! 1,000 distinct addresses and node ports, each claimed by one IPAddress; deleting
//! them frees both; an address another service holds is refused with kube's 422.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use kuorum_e2e::{Cluster, Http};
use serde_json::{json, Value};

const SVCS: &str = "/api/v1/namespaces/default/services";
const IPS: &str = "/apis/networking.k8s.io/v1/ipaddresses";
const SERVICES: usize = 1000;
const CLIENTS: usize = 24;

fn names(list: &Value, path: &str) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| {
            i.pointer(path).and_then(|v| v.as_str().map(str::to_string).or_else(|| v.as_i64().map(|n| n.to_string())))
        })
        .collect()
}

#[test]
fn services_through_three_nodes_get_distinct_addresses_and_node_ports_freed_on_delete() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };

    // kubectl expose makes a service with a real address.
    c.kubectl(2, &["create", "deployment", "web", "--image=nginx:1.27"]).unwrap().ok("create deployment");
    c.kubectl(2, &["expose", "deployment", "web", "--port=80"]).unwrap().ok("expose");
    let web = c.get_json(3, &["service", "web"]);
    let web_ip = web["spec"]["clusterIP"].as_str().unwrap_or("").to_string();
    assert!(web_ip.starts_with("10."), "kubectl expose gave {web}");

    // 1,000 services at once, each client through its own node.
    let next = Arc::new(AtomicUsize::new(0));
    let urls = c.urls();
    let handles: Vec<_> = (0..CLIENTS)
        .map(|k| {
            let (next, url) = (next.clone(), urls[k % urls.len()].clone());
            thread::spawn(move || {
                let http = Http::with_timeout(Duration::from_secs(30));
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= SERVICES {
                        return;
                    }
                    let svc = json!({"metadata": {"name": format!("s{i}"), "labels": {"load": "yes"}},
                                     "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
                    let r = http.post(&format!("{url}{SVCS}"), &svc).expect("POST");
                    assert_eq!(r.status, 201, "s{i} through {url}: {}", r.text);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }

    let http = c.http();
    let list = http.get(&format!("{}{SVCS}", c.url(1))).unwrap().body;
    let ips: BTreeSet<String> = names(&list, "/spec/clusterIP").into_iter().collect();
    let ports: BTreeSet<String> = names(&list, "/spec/ports/0/nodePort").into_iter().collect();
    // Theirs, web's, and the `kubernetes` Service's.
    assert_eq!(ips.len(), SERVICES + 2, "distinct addresses");
    assert!(ips.contains("10.96.0.1"));
    assert_eq!(ports.len(), SERVICES, "distinct node ports");
    for id in 1..=3 {
        let claims: BTreeSet<String> =
            names(&http.get(&format!("{}{IPS}", c.url(id))).unwrap().body, "/metadata/name").into_iter().collect();
        assert_eq!(claims, ips, "node {id}'s IPAddresses are the services' addresses");
    }

    // An address another service holds is refused, through any node.
    let taken = json!({"metadata": {"name": "copy"}, "spec": {"clusterIP": web_ip, "ports": [{"port": 80}]}});
    let r = http.post(&format!("{}{SVCS}", c.url(3)), &taken).unwrap();
    assert_eq!(r.status, 422, "{}", r.text);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .ends_with(&format!("failed to allocate IP {web_ip}: provided IP is already allocated")),
        "{}",
        r.text
    );

    // Deleting them frees both: no IPAddress is left, and their node ports can be asked for.
    // One request deletes the 1,000 one by one (each freeing its two claims).
    let started = std::time::Instant::now();
    let r = Http::with_timeout(Duration::from_secs(300))
        .delete(&format!("{}{SVCS}?labelSelector=load%3Dyes", c.url(2)))
        .unwrap();
    eprintln!("deleting {SERVICES} services took {:?}", started.elapsed());
    assert_eq!(r.status, 200, "{}", r.text);
    let left: BTreeSet<String> =
        names(&http.get(&format!("{}{IPS}", c.url(1))).unwrap().body, "/metadata/name").into_iter().collect();
    assert_eq!(
        left,
        BTreeSet::from(["10.96.0.1".to_string(), web_ip.clone()]),
        "IPAddresses left after the services went"
    );
    let port: i64 = ports.iter().next().unwrap().parse().unwrap();
    let freed_ip = ips.iter().find(|ip| **ip != web_ip && *ip != "10.96.0.1").unwrap();
    let again = json!({"metadata": {"name": "again"},
                       "spec": {"type": "NodePort", "clusterIP": freed_ip, "ports": [{"port": 80, "nodePort": port}]}});
    let r = http.post(&format!("{}{SVCS}", c.url(1)), &again).unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
}
