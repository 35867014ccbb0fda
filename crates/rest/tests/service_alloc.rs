//! Service cluster IPs and node ports through the router (`oneshot`) over a real
//! single-node cluster: allocated on create from kube's default ranges, each claimed by an
//! object written through the log (an `IPAddress` for an address), refused with kube's 422
//! when taken or out of range, kept across updates that leave them out, freed when the
//! service gives them up or is deleted.

mod common;

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use axum::http::StatusCode;
use common::{app, App};
use serde_json::{json, Value};

const SVCS: &str = "/api/v1/namespaces/default/services";
const IPS: &str = "/apis/networking.k8s.io/v1/ipaddresses";

/// A cluster with the `default` namespace.
async fn cluster() -> App {
    let app = app().await;
    app.namespace("default").await;
    app
}

fn service(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("ports").is_none() {
        spec["ports"] = json!([{"port": 80}]);
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

async fn create(app: &App, name: &str, spec: Value) -> Value {
    let r = app.post(SVCS, service(name, spec)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    r.json()
}

async fn refused(app: &App, name: &str, spec: Value) -> String {
    let r = app.post(SVCS, service(name, spec)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.json());
    r.json()["message"].as_str().unwrap_or("").to_string()
}

fn in_default_range(ip: &str) -> bool {
    let n = u32::from(ip.parse::<Ipv4Addr>().unwrap());
    let net = u32::from(Ipv4Addr::new(10, 96, 0, 0));
    n & 0xfff0_0000 == net && n != net && n != net | 0x000f_ffff
}

async fn ip_addresses(app: &App) -> BTreeSet<String> {
    let r = app.get(IPS).await;
    assert_eq!(r.status, StatusCode::OK);
    r.json()["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_new_service_gets_an_address_its_ipaddress_claims() {
    let app = cluster().await;
    let svc = create(&app, "web", json!({"selector": {"app": "web"}})).await;
    let ip = svc["spec"]["clusterIP"].as_str().unwrap().to_string();
    assert!(in_default_range(&ip), "{ip}");
    assert_eq!(svc["spec"]["clusterIPs"], json!([ip]));
    assert_eq!(svc["spec"]["ipFamilies"], json!(["IPv4"]));
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(svc["spec"]["internalTrafficPolicy"], "Cluster");
    // Dynamic addresses come from the upper band: the first 256 are for asking by number.
    let offset = u32::from(ip.parse::<Ipv4Addr>().unwrap()) - u32::from(Ipv4Addr::new(10, 96, 0, 0));
    assert!(offset > 256, "{ip}");

    let r = app.get(&format!("{IPS}/{ip}")).await;
    assert_eq!(r.status, StatusCode::OK);
    let claim = r.json();
    assert_eq!(
        claim["spec"]["parentRef"],
        json!({"group": "", "resource": "services", "namespace": "default", "name": "web"})
    );
    assert_eq!(claim["metadata"]["labels"]["ipaddress.kubernetes.io/managed-by"], "ipallocator.k8s.io");
    assert_eq!(claim["metadata"]["labels"]["ipaddress.kubernetes.io/ip-family"], "IPv4");

    // Headless and ExternalName services hold no address.
    let headless = create(&app, "headless", json!({"clusterIP": "None"})).await;
    assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    let external = create(&app, "ext", json!({"type": "ExternalName", "externalName": "example.com"})).await;
    assert!(external["spec"].get("clusterIP").is_none(), "{external}");
    assert_eq!(ip_addresses(&app).await, BTreeSet::from([ip]));
}

#[tokio::test]
async fn an_address_asked_for_is_given_once_and_only_from_the_range() {
    let app = cluster().await;
    let svc = create(&app, "dns", json!({"clusterIP": "10.96.0.10"})).await;
    assert_eq!(svc["spec"]["clusterIPs"], json!(["10.96.0.10"]));
    assert_eq!(
        refused(&app, "dns2", json!({"clusterIP": "10.96.0.10"})).await,
        "Service \"dns2\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.10\"]: failed to allocate IP \
         10.96.0.10: provided IP is already allocated"
    );
    assert_eq!(
        refused(&app, "far", json!({"clusterIP": "192.168.0.1"})).await,
        "Service \"far\" is invalid: spec.clusterIPs: Invalid value: [\"192.168.0.1\"]: failed to allocate IP \
         192.168.0.1: the provided network does not match the current range"
    );
    assert_eq!(
        refused(&app, "net", json!({"clusterIP": "10.96.0.0"})).await,
        "Service \"net\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.0\"]: failed to allocate IP \
         10.96.0.0: the provided IP (10.96.0.0) is not in the valid range. The range of valid IPs is 10.96.0.0/12"
    );
    // Refusals claim nothing.
    assert_eq!(ip_addresses(&app).await, BTreeSet::from(["10.96.0.10".to_string()]));

    // Deleting the service frees its address for another.
    let r = app.delete(&format!("{SVCS}/dns")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(ip_addresses(&app).await.is_empty());
    create(&app, "dns2", json!({"clusterIP": "10.96.0.10"})).await;
}

#[tokio::test]
async fn node_ports_are_allocated_shared_by_one_port_number_and_refused_when_taken() {
    let app = cluster().await;
    let svc = create(
        &app,
        "np",
        json!({"type": "NodePort", "ports": [
            {"name": "dns", "port": 53, "protocol": "UDP"},
            {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
            {"name": "http", "port": 80}]}),
    )
    .await;
    let ports = svc["spec"]["ports"].as_array().unwrap();
    let np: Vec<i64> = ports.iter().map(|p| p["nodePort"].as_i64().unwrap()).collect();
    assert!(np.iter().all(|p| (30000..=32767).contains(p)), "{np:?}");
    assert_eq!(np[0], np[1], "53/UDP and 53/TCP share a node port");
    assert_ne!(np[0], np[2]);
    assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");

    let taken = np[2];
    assert_eq!(
        refused(&app, "np2", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": taken}]})).await,
        format!("Service \"np2\" is invalid: spec.ports[0].nodePort: Invalid value: {taken}: provided port is already allocated")
    );
    assert_eq!(
        refused(&app, "np3", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 8080}]})).await,
        "Service \"np3\" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid \
         range. The range of valid ports is 30000-32767"
    );
    assert_eq!(
        refused(&app, "np4", json!({"ports": [{"port": 80, "nodePort": 30001}]})).await,
        "Service \"np4\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"
    );
    // The refused services' addresses were freed again: only np's is held.
    assert_eq!(ip_addresses(&app).await.len(), 1);

    // Turned into a ClusterIP service, np gives its node ports up.
    let mut svc = svc;
    svc["spec"]["type"] = json!("ClusterIP");
    let r = app.put(&format!("{SVCS}/np"), svc).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert!(r.json()["spec"]["ports"].as_array().unwrap().iter().all(|p| p.get("nodePort").is_none()), "{}", r.json());
    create(&app, "np2", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": taken}]})).await;
}

#[tokio::test]
async fn updates_keep_what_they_leave_out_and_may_not_move_an_address() {
    let app = cluster().await;
    let svc = create(&app, "web", json!({"type": "NodePort"})).await;
    let ip = svc["spec"]["clusterIP"].clone();
    let np = svc["spec"]["ports"][0]["nodePort"].clone();

    // A client that sends the service without its allocated values keeps them.
    let mut bare = service("web", json!({"type": "NodePort", "ports": [{"port": 80}]}));
    bare["metadata"]["resourceVersion"] = svc["metadata"]["resourceVersion"].clone();
    let r = app.put(&format!("{SVCS}/web"), bare).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert_eq!(r.json()["spec"]["clusterIP"], ip);
    assert_eq!(r.json()["spec"]["ports"][0]["nodePort"], np);

    let mut moved = r.json();
    moved["spec"]["clusterIP"] = json!("10.96.0.99");
    moved["spec"]["clusterIPs"] = json!(["10.96.0.99"]);
    let r = app.put(&format!("{SVCS}/web"), moved).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.json());
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .contains("spec.clusterIPs[0]: Invalid value: \"10.96.0.99\": may not change once set"),
        "{}",
        r.json()
    );

    // Turned into an ExternalName service, it gives its address up.
    let mut ext = app.get(&format!("{SVCS}/web")).await.json();
    ext["spec"]["type"] = json!("ExternalName");
    ext["spec"]["externalName"] = json!("example.com");
    let r = app.put(&format!("{SVCS}/web"), ext).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert!(r.json()["spec"].get("clusterIP").is_none(), "{}", r.json());
    assert!(ip_addresses(&app).await.is_empty());
}

#[tokio::test]
async fn services_created_at_once_get_distinct_addresses_and_node_ports() {
    let app = std::sync::Arc::new(cluster().await);
    let mut tasks = Vec::new();
    for i in 0..100 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            let r = app.post(SVCS, service(&format!("s{i}"), json!({"type": "NodePort"}))).await;
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
            let s = r.json();
            (s["spec"]["clusterIP"].as_str().unwrap().to_string(), s["spec"]["ports"][0]["nodePort"].as_i64().unwrap())
        }));
    }
    let mut ips = BTreeSet::new();
    let mut ports = BTreeSet::new();
    for t in tasks {
        let (ip, port) = t.await.unwrap();
        ips.insert(ip);
        ports.insert(port);
    }
    assert_eq!((ips.len(), ports.len()), (100, 100));
    assert_eq!(ip_addresses(&app).await, ips);
}

#[tokio::test]
async fn a_claim_left_by_a_failed_write_is_replaced_and_another_objects_is_respected() {
    let app = cluster().await;
    let claim = |ip: &str, name: &str| {
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", "metadata": {"name": ip},
               "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": name}}})
    };
    // A claim naming `web`, which does not exist (as a failed create leaves one).
    let r = app.post(IPS, claim("10.96.0.20", "web")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let left_uid = r.json()["metadata"]["uid"].clone();
    create(&app, "web", json!({"clusterIP": "10.96.0.20"})).await;
    let now = app.get(&format!("{IPS}/10.96.0.20")).await.json();
    assert_ne!(now["metadata"]["uid"], left_uid, "the left claim was made again for web");

    // Another object's claim is its own, and a second `web` does not take web's.
    let r = app.post(IPS, claim("10.96.0.21", "other")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    assert!(refused(&app, "web2", json!({"clusterIP": "10.96.0.21"}))
        .await
        .ends_with("provided IP is already allocated"));
    let r = app.post(SVCS, service("web", json!({"clusterIP": "10.96.0.20"}))).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.json());
    assert_eq!(app.get(&format!("{IPS}/10.96.0.20")).await.json()["metadata"]["uid"], now["metadata"]["uid"]);
}

#[tokio::test]
async fn headless_stays_headless_and_a_load_balancer_keeps_the_node_ports_it_asked_for() {
    let app = cluster().await;
    let svc = create(&app, "h", json!({"clusterIP": "None"})).await;
    let mut bare = service("h", json!({}));
    bare["metadata"]["resourceVersion"] = svc["metadata"]["resourceVersion"].clone();
    let r = app.put(&format!("{SVCS}/h"), bare).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert_eq!(r.json()["spec"]["clusterIP"], "None");
    assert!(ip_addresses(&app).await.is_empty());

    let lb = create(
        &app,
        "lb",
        json!({"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
               "ports": [{"name": "a", "port": 80, "nodePort": 30500}, {"name": "b", "port": 81}]}),
    )
    .await;
    assert_eq!(lb["spec"]["ports"][0]["nodePort"], 30500);
    assert!(lb["spec"]["ports"][1].get("nodePort").is_none(), "{lb}");
    let taken = refused(&app, "np", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30500}]})).await;
    assert!(taken.ends_with("provided port is already allocated"), "{taken}");
}
