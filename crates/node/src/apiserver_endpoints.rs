//! Owns the `kubernetes` Service of `default` and the Endpoints and EndpointSlices that
//! list the members' REST addresses, kept as kube-apiserver's lease endpoint reconciler
//! keeps them, so that pods and tools that find the API servers through the Service
//! (client-side balancers, Patroni's `bypass_api_service`) find every member:
//!
//! - every node renews its own lease every [`RENEW`]: `/registry/masterleases/<id>`
//!   (where kube keeps its master leases; no resource serves it) with its advertised
//!   address and port and when it renewed;
//! - the leader creates the Service (the first address of the service range, port 443,
//!   claimed by its `IPAddress`) if it is missing, and rewrites the Endpoints and
//!   EndpointSlices when the fresh leases of the current voters say otherwise: a member
//!   removed, stopped or added is out or in within a lease's [`TTL`] and one renewal.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuorum_api::kinds::allocation::{claim_object, Parent, Pool};
use kuorum_api::seams::{new_uid, Clock, Entropy};
use kuorum_raft::Cluster;
use kuorum_store::keys::ObjectKey;
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::{json, Value};
use tokio::time::Instant;

/// How often a node renews its lease, and the leader reconciles (kube's 10 s).
pub const RENEW: Duration = Duration::from_secs(10);
/// How long a lease counts without renewal (kube's master lease TTL, 15 s).
pub const TTL: u64 = 15;
const WRITE_DEADLINE: Duration = Duration::from_secs(5);

/// The REST address this node gives others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advertised {
    pub ip: String,
    pub port: u16,
}

fn lease_key(id: u64) -> String {
    format!("/registry/masterleases/{id}")
}

fn endpoints_key() -> String {
    ObjectKey { group: "", resource: "endpoints", namespace: Some("default"), name: "kubernetes" }.encode()
}

fn service_key() -> String {
    ObjectKey { group: "", resource: "services", namespace: Some("default"), name: "kubernetes" }.encode()
}

fn slice_key(name: &str) -> String {
    ObjectKey { group: "discovery.k8s.io", resource: "endpointslices", namespace: Some("default"), name }.encode()
}

/// Renews this node's lease and, on the leader, reconciles, every [`RENEW`].
pub async fn run(
    cluster: Cluster,
    clock: Arc<dyn Clock>,
    entropy: Arc<dyn Entropy>,
    me: Advertised,
    service_ip: String,
) {
    let mut seen = Seen::default();
    loop {
        if cluster.leader().is_some() {
            renew(&cluster, clock.as_ref(), &me).await;
            // Every node watches the leases, so a new leader knows how old they are.
            let live = seen.observe(&cluster, Instant::now());
            if cluster.leader() == Some(cluster.node_id()) {
                if let Err(e) = reconcile(&cluster, clock.as_ref(), entropy.as_ref(), &service_ip, &live).await {
                    tracing::debug!("reconciling the kubernetes endpoints: {e}");
                }
            }
        }
        tokio::time::sleep(if cluster.leader().is_some() { RENEW } else { Duration::from_millis(500) }).await;
    }
}

/// When this node last saw each voter's lease change, by its own monotonic clock: nodes'
/// wall clocks may disagree, so a lease's age is never read from the time written in it.
#[derive(Default)]
struct Seen {
    leases: BTreeMap<u64, (Bytes, Instant)>,
}

impl Seen {
    /// The voters' addresses whose leases changed within [`TTL`] (or were first seen
    /// now), as (ip, port), sorted.
    fn observe(&mut self, cluster: &Cluster, now: Instant) -> Vec<(String, u16)> {
        let voters = cluster.status().voters;
        self.leases.retain(|id, _| voters.contains(id));
        let mut out = Vec::new();
        for id in voters {
            let Ok(Some(lease)) = cluster.get(&lease_key(id)) else { continue };
            let changed = match self.leases.get(&id) {
                Some((last, at)) if *last == lease => *at,
                _ => now,
            };
            self.leases.insert(id, (lease.clone(), changed));
            if now.duration_since(changed) > Duration::from_secs(TTL) {
                continue;
            }
            let Ok(l) = serde_json::from_slice::<Value>(&lease) else { continue };
            if let (Some(ip), Some(port)) = (l["ip"].as_str(), l["port"].as_u64().and_then(|p| u16::try_from(p).ok())) {
                out.push((ip.to_string(), port));
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

async fn renew(cluster: &Cluster, clock: &dyn Clock, me: &Advertised) {
    let id = cluster.node_id();
    let lease = json!({"metadata": {"name": id.to_string()}, "ip": me.ip, "port": me.port,
                       "renewTime": clock.now_unix_seconds()});
    let key = lease_key(id);
    let object = Bytes::from(serde_json::to_vec(&lease).expect("json"));
    let cmd = match cluster.get(&key) {
        Ok(Some(_)) => {
            Command::Update { key, object, precondition: Precondition::default(), finalizing: Default::default() }
        }
        _ => Command::Create { key, namespace: None, object },
    };
    if let Err(e) = cluster.write(cmd, WRITE_DEADLINE).await {
        tracing::debug!("renewing this node's API server lease: {e}");
    }
}

/// The Endpoints' subsets: one per port (the nodes of one machine listen on several).
fn subsets(addresses: &[(String, u16)]) -> Value {
    let mut by_port: BTreeMap<u16, Vec<Value>> = BTreeMap::new();
    for (ip, port) in addresses {
        by_port.entry(*port).or_default().push(json!({"ip": ip}));
    }
    Value::Array(
        by_port
            .into_iter()
            .map(|(port, addrs)| json!({"addresses": addrs, "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}))
            .collect(),
    )
}

/// The EndpointSlices, one per port: `kubernetes` for the lowest, `kubernetes-<port>`
/// for the others.
fn slices(addresses: &[(String, u16)]) -> BTreeMap<String, Value> {
    let mut by_port: BTreeMap<u16, Vec<Value>> = BTreeMap::new();
    for (ip, port) in addresses {
        by_port.entry(*port).or_default().push(json!({"addresses": [ip], "conditions": {"ready": true}}));
    }
    by_port
        .into_iter()
        .enumerate()
        .map(|(i, (port, endpoints))| {
            let name = if i == 0 { "kubernetes".to_string() } else { format!("kubernetes-{port}") };
            let slice = json!({
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {"name": name, "namespace": "default",
                             "labels": {"kubernetes.io/service-name": "kubernetes"}},
                "addressType": "IPv4",
                "endpoints": endpoints,
                "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            });
            (name, slice)
        })
        .collect()
}

async fn reconcile(
    cluster: &Cluster,
    clock: &dyn Clock,
    entropy: &dyn Entropy,
    service_ip: &str,
    addresses: &[(String, u16)],
) -> Result<(), String> {
    if addresses.is_empty() {
        return Ok(());
    }
    ensure_service(cluster, clock, entropy, service_ip, addresses[0].1).await?;
    let endpoints = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": subsets(addresses),
    });
    put(cluster, clock, entropy, endpoints_key(), endpoints, &["subsets"]).await?;
    let wanted = slices(addresses);
    for (name, slice) in &wanted {
        put(cluster, clock, entropy, slice_key(name), slice.clone(), &["endpoints", "ports"]).await?;
    }
    // Slices of ports no live member listens on any more.
    let prefix = slice_key("kubernetes-");
    for (key, bytes) in cluster.scan(&prefix, None, usize::MAX).map_err(|e| e.to_string())? {
        let ours = serde_json::from_slice::<Value>(&bytes)
            .is_ok_and(|v| v.pointer("/metadata/labels/kubernetes.io~1service-name") == Some(&json!("kubernetes")));
        let port_named =
            ours && key.strip_prefix(&prefix).is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        if port_named && !wanted.keys().any(|n| slice_key(n) == key) {
            let cmd = Command::Delete {
                key,
                precondition: Precondition::default(),
                deletion_timestamp: None,
                finalizing: Default::default(),
            };
            cluster.write(cmd, WRITE_DEADLINE).await.map_err(|e| e.to_string())?.map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// The `kubernetes` Service, and the `IPAddress` that claims its address, unless they
/// exist (an administrator's later changes are kept).
async fn ensure_service(
    cluster: &Cluster,
    clock: &dyn Clock,
    entropy: &dyn Entropy,
    ip: &str,
    port: u16,
) -> Result<(), String> {
    if matches!(cluster.get(&service_key()), Ok(Some(_))) {
        return Ok(());
    }
    let parent = Parent { group: "", resource: "services", namespace: Some("default"), name: "kubernetes" };
    let claim = Value::Object(claim_object(Pool::ServiceIp, ip, &parent, &new_uid(entropy), &clock.now_rfc3339()));
    let claim_key =
        ObjectKey { group: "networking.k8s.io", resource: "ipaddresses", namespace: None, name: ip }.encode();
    create(cluster, claim_key.clone(), &claim).await?;
    // Created now, or before by an earlier round: unless another object holds it.
    let held =
        cluster.get(&claim_key).map_err(|e| e.to_string())?.and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    if !held.is_some_and(|c| parent.owns(&c)) {
        return Err(format!("{ip}, the kubernetes Service's address, is held by another object"));
    }
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default", "uid": new_uid(entropy),
                     "creationTimestamp": clock.now_rfc3339(),
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip], "ipFamilies": ["IPv4"],
                 "ipFamilyPolicy": "SingleStack", "internalTrafficPolicy": "Cluster", "sessionAffinity": "None",
                 "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]},
        "status": {"loadBalancer": {}},
    });
    create(cluster, service_key(), &service).await
}

async fn create(cluster: &Cluster, key: String, object: &Value) -> Result<(), String> {
    let cmd = Command::Create { key, namespace: None, object: Bytes::from(serde_json::to_vec(object).expect("json")) };
    match cluster.write(cmd, WRITE_DEADLINE).await.map_err(|e| e.to_string())? {
        Ok(_) | Err(WriteError::AlreadyExists) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Writes `object` at `key` when it is missing or its `fields` differ.
async fn put(
    cluster: &Cluster,
    clock: &dyn Clock,
    entropy: &dyn Entropy,
    key: String,
    mut object: Value,
    fields: &[&str],
) -> Result<(), String> {
    let current = cluster.get(&key).map_err(|e| e.to_string())?.and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    let cmd = match current {
        Some(c) if fields.iter().all(|f| c.get(*f) == object.get(*f)) => return Ok(()),
        Some(c) => {
            let rv = c.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|s| s.parse().ok());
            Command::Update {
                key,
                object: Bytes::from(serde_json::to_vec(&object).expect("json")),
                precondition: Precondition { resource_version: rv, uid: None },
                finalizing: Default::default(),
            }
        }
        None => {
            object["metadata"]["uid"] = json!(new_uid(entropy));
            object["metadata"]["creationTimestamp"] = json!(clock.now_rfc3339());
            Command::Create {
                key,
                namespace: Some("default".into()),
                object: Bytes::from(serde_json::to_vec(&object).expect("json")),
            }
        }
    };
    match cluster.write(cmd, WRITE_DEADLINE).await.map_err(|e| e.to_string())? {
        // A conflict is another leader's write: the next round looks again.
        Ok(_) | Err(WriteError::Conflict | WriteError::AlreadyExists) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_of_one_port_share_a_subset_and_a_slice() {
        let a = [("10.0.0.1".to_string(), 6443), ("10.0.0.2".to_string(), 6443), ("127.0.0.1".to_string(), 7443)];
        let s = subsets(&a);
        assert_eq!(s[0]["addresses"], json!([{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]));
        assert_eq!(s[0]["ports"][0]["port"], 6443);
        assert_eq!(s[1]["addresses"], json!([{"ip": "127.0.0.1"}]));
        let sl = slices(&a);
        assert_eq!(sl.keys().collect::<Vec<_>>(), ["kubernetes", "kubernetes-7443"]);
        assert_eq!(sl["kubernetes"]["endpoints"][1]["addresses"], json!(["10.0.0.2"]));
        assert_eq!(sl["kubernetes"]["metadata"]["labels"]["kubernetes.io/service-name"], "kubernetes");
    }
}
