//! What kube-apiserver itself creates, on a real cluster: the `kube-node-lease` namespace,
//! the system PriorityClasses, and the `kubernetes` Service, which holds the first address
//! of the service range and whose Endpoints and EndpointSlices list every member's REST
//! address, following a `kuorum member add` and a `kuorum member remove`.

use std::collections::BTreeSet;
use std::thread;
use std::time::{Duration, Instant};

use kuorum_e2e::Cluster;
use serde_json::Value;

const ENDPOINTS: &str = "/api/v1/namespaces/default/endpoints/kubernetes";
const SLICES: &str =
    "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io/service-name%3Dkubernetes";

/// The REST ports the Endpoints list (every member listens on 127.0.0.1).
fn endpoint_ports(ep: &Value) -> BTreeSet<u16> {
    let mut ports = BTreeSet::new();
    for subset in ep["subsets"].as_array().into_iter().flatten() {
        let n = subset["addresses"].as_array().map_or(0, Vec::len);
        assert_eq!(subset["ports"].as_array().map_or(0, Vec::len), 1, "{subset}");
        assert_eq!(n, 1, "one member per port: {subset}");
        assert_eq!(subset["addresses"][0]["ip"], "127.0.0.1");
        ports.insert(subset["ports"][0]["port"].as_u64().unwrap() as u16);
    }
    ports
}

fn slice_ports(list: &Value) -> BTreeSet<u16> {
    let items = list["items"].as_array().unwrap();
    items
        .iter()
        .inspect(|s| assert_eq!(s["endpoints"].as_array().map_or(0, Vec::len), 1, "{s}"))
        .map(|s| s["ports"][0]["port"].as_u64().unwrap() as u16)
        .collect()
}

/// Waits until node `via`'s Endpoints and EndpointSlices list exactly the members `ids`.
fn wait_listed(c: &Cluster, via: u64, ids: &[u64]) {
    let want: BTreeSet<u16> = ids.iter().map(|id| c.node(*id).rest_port).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ep = c.http().get(&format!("{}{ENDPOINTS}", c.url(via))).unwrap();
        let slices = c.http().get(&format!("{}{SLICES}", c.url(via))).unwrap();
        let (got, got_slices) = if ep.status == 200 && slices.status == 200 {
            (endpoint_ports(&ep.body), slice_ports(&slices.body))
        } else {
            Default::default()
        };
        if got == want && got_slices == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "members {ids:?} (ports {want:?}) not listed: {} / {}",
            ep.text,
            slices.text
        );
        thread::sleep(Duration::from_millis(500));
    }
}

#[test]
fn the_kubernetes_service_lists_the_members_and_follows_membership() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    wait_listed(&c, 2, &[1, 2, 3]);
    let ns = c.http().get(&format!("{}/api/v1/namespaces/kube-node-lease", c.url(1))).unwrap();
    assert_eq!(ns.status, 200, "{}", ns.text);
    for (name, value) in [("system-node-critical", 2_000_001_000i64), ("system-cluster-critical", 2_000_000_000)] {
        let pc = c.http().get(&format!("{}/apis/scheduling.k8s.io/v1/priorityclasses/{name}", c.url(2))).unwrap();
        assert_eq!(pc.status, 200, "{}", pc.text);
        assert_eq!(pc.body["value"], value);
    }
    let svc = c.http().get(&format!("{}/api/v1/namespaces/default/services/kubernetes", c.url(3))).unwrap();
    assert_eq!(svc.status, 200, "{}", svc.text);
    assert_eq!(svc.body["spec"]["clusterIP"], "10.96.0.1");
    assert_eq!(svc.body["spec"]["ports"][0]["port"], 443);
    let claim = c.http().get(&format!("{}/apis/networking.k8s.io/v1/ipaddresses/10.96.0.1", c.url(1))).unwrap();
    assert_eq!(claim.status, 200, "{}", claim.text);
    assert_eq!(claim.body["spec"]["parentRef"]["name"], "kubernetes");

    // A member added is listed once it is a voter.
    let servers = c.urls().join(",");
    let new = c.start_joining_node().unwrap();
    let peer = format!("127.0.0.1:{}", c.node(new).peer_port);
    c.cli(&["member", "add", &new.to_string(), &peer, "--server", &servers]).unwrap();
    c.wait_node_ready(new, Duration::from_secs(30)).unwrap();
    c.cli(&["member", "promote", &new.to_string(), "--server", &servers]).unwrap();
    wait_listed(&c, 1, &[1, 2, 3, new]);

    // A member removed is not.
    let gone = c.followers().unwrap()[0];
    let all = format!("{servers},{}", c.url(new));
    c.cli(&["member", "remove", &gone.to_string(), "--server", &all]).unwrap();
    c.stop(gone, Duration::from_secs(5));
    let left: Vec<u64> = [1, 2, 3, new].into_iter().filter(|id| *id != gone).collect();
    wait_listed(&c, left[0], &left);
}
