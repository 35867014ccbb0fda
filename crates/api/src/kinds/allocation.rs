//! Owns what a kind holds from the cluster's pools (a Service's cluster IP and node
//! ports): the pools and their ranges, which values an object holds, which it still needs,
//! and what claiming a value writes. A value is claimed by creating one object for it (an
//! `IPAddress` for an address, an entry under `/registry/ranges/servicenodeports/` for a
//! node port) through the log: the replicated apply answers "already exists" to the second
//! claim of a value, whichever nodes the two writers reached, so no value is held twice.
//! The verbs (kuorum-rest's `alloc`) make the claims; this module never writes.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use crate::kinds::Object;
use crate::validation::{BadValue, FieldError};

/// A cluster-wide set of values an object can hold one of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pool {
    /// Service cluster IPs, from `--service-cluster-ip-range`.
    ServiceIp,
    /// Service node ports, from `--service-node-port-range`.
    NodePort,
}

/// A value an object holds, and the field that names it (for errors).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub pool: Pool,
    pub value: String,
    /// The field path an error about this value names (`spec.clusterIPs`).
    pub field: String,
}

/// What is special about a kind that holds pool values. The verbs call, in order:
/// [`Allocating::carry`] (on update), [`Allocating::held`] to claim what the object names,
/// [`Allocating::wanted`] and [`Allocating::fill`] to allocate what it leaves empty.
pub trait Allocating: Sync {
    /// Keeps what `old` holds when `obj` leaves it out (a client that sends a Service
    /// without its cluster IP keeps the address), and drops what `obj` no longer needs
    /// and did not change (a Service turned `ClusterIP` loses its node ports).
    fn carry(&self, old: &Object, obj: &mut Object);
    /// The values `obj` names, each once.
    fn held(&self, obj: &Object) -> Vec<Held>;
    /// The pools of the values `obj` needs and leaves empty, one per value.
    fn wanted(&self, obj: &Object) -> Vec<Pool>;
    /// Puts `values` (one per [`Allocating::wanted`] entry, in its order) into `obj`.
    fn fill(&self, obj: &mut Object, values: &[String]);
}

/// The cluster's pools: an IPv4 service range and a node-port range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pools {
    /// The range's network address.
    network: u32,
    prefix: u8,
    node_ports: (u16, u16),
}

/// kube-apiserver's defaults.
pub const DEFAULT_SERVICE_CIDR: &str = "10.96.0.0/12";
pub const DEFAULT_NODE_PORTS: &str = "30000-32767";

impl Default for Pools {
    fn default() -> Self {
        Pools::new(DEFAULT_SERVICE_CIDR, DEFAULT_NODE_PORTS).expect("the defaults parse")
    }
}

impl Pools {
    /// From `--service-cluster-ip-range` (IPv4 CIDR, /8 to /30) and
    /// `--service-node-port-range` (`FIRST-LAST`, or `FIRST+COUNT`).
    pub fn new(cidr: &str, node_ports: &str) -> Result<Pools, String> {
        let (addr, bits) = cidr.split_once('/').ok_or_else(|| format!("{cidr:?} is not a CIDR"))?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| format!("{cidr:?}: only IPv4 service ranges are served"))?;
        let prefix: u8 = bits.parse().map_err(|_| format!("{cidr:?} is not a CIDR"))?;
        if !(8..=30).contains(&prefix) {
            return Err(format!("{cidr:?}: the prefix must be /8 to /30"));
        }
        let mask = u32::MAX << (32 - prefix);
        let parse_port = |s: &str| s.trim().parse::<u16>().map_err(|_| format!("{node_ports:?} is not a port range"));
        let (first, last) = match (node_ports.split_once('-'), node_ports.split_once('+')) {
            (Some((a, b)), _) => (parse_port(a)?, parse_port(b)?),
            (None, Some((a, n))) => {
                let a = parse_port(a)?;
                (a, a.checked_add(parse_port(n)?.saturating_sub(1)).ok_or("the node-port range ends past 65535")?)
            }
            _ => return Err(format!("{node_ports:?} is not a port range")),
        };
        if first == 0 || last < first {
            return Err(format!("{node_ports:?} is not a port range"));
        }
        Ok(Pools { network: u32::from(addr) & mask, prefix, node_ports: (first, last) })
    }

    /// How many values `pool` has: a range's addresses but its network and broadcast
    /// ones; every port of the node-port range.
    pub fn size(&self, pool: Pool) -> u64 {
        match pool {
            Pool::ServiceIp => (1u64 << (32 - self.prefix)) - 2,
            Pool::NodePort => u64::from(self.node_ports.1 - self.node_ports.0) + 1,
        }
    }

    /// The `i`th value of `pool` (`i < size`): addresses from the range's first usable one.
    pub fn nth(&self, pool: Pool, i: u64) -> String {
        match pool {
            Pool::ServiceIp => Ipv4Addr::from(self.network + 1 + i as u32).to_string(),
            Pool::NodePort => (u64::from(self.node_ports.0) + i).to_string(),
        }
    }

    /// The first usable address, which the `kubernetes` Service holds.
    pub fn first_address(&self) -> String {
        self.nth(Pool::ServiceIp, 0)
    }

    /// The values a dynamic allocation tries first: the upper band of the pool, as kube
    /// keeps the lower band (1/16 of the addresses, 16 to 256; 1/32 of the ports, 16 to
    /// 128) for values clients ask for by number. A pool too small to split has no band.
    pub fn dynamic_band(&self, pool: Pool) -> std::ops::Range<u64> {
        let size = self.size(pool);
        let lower = match pool {
            Pool::ServiceIp => (size / 16).clamp(16, 256),
            Pool::NodePort => (size / 32).clamp(16, 128),
        };
        if size <= lower * 2 {
            0..size
        } else {
            lower..size
        }
    }

    /// Whether `value` is in `pool`; otherwise kube's text for why not.
    pub fn check(&self, pool: Pool, value: &str) -> Result<(), String> {
        match pool {
            Pool::ServiceIp => {
                let range = self.cidr();
                let ip: Ipv4Addr = value.parse().map_err(|_| format!("the provided IP ({value}) is not a valid IP"))?;
                let n = u32::from(ip);
                let mask = u32::MAX << (32 - self.prefix);
                if n & mask != self.network {
                    // Outside every service range (kuorum has one), as kube's allocator
                    // over its ServiceCIDRs says it.
                    return Err("the provided network does not match the current range".into());
                }
                if n == self.network || n == self.network | !mask {
                    return Err(format!(
                        "the provided IP ({value}) is not in the valid range. The range of valid IPs is {range}"
                    ));
                }
                Ok(())
            }
            Pool::NodePort => {
                let (first, last) = self.node_ports;
                match value.parse::<u16>() {
                    Ok(p) if (first..=last).contains(&p) => Ok(()),
                    _ => Err(format!(
                        "provided port is not in the valid range. The range of valid ports is {first}-{}",
                        last
                    )),
                }
            }
        }
    }

    /// The service range as kube prints it.
    pub fn cidr(&self) -> String {
        format!("{}/{}", Ipv4Addr::from(self.network), self.prefix)
    }
}

/// The 422 detail for a value another object holds.
pub fn taken(pool: Pool) -> &'static str {
    match pool {
        Pool::ServiceIp => "provided IP is already allocated",
        Pool::NodePort => "provided port is already allocated",
    }
}

/// Why a dynamic allocation failed when the pool has nothing left (kube answers 500).
pub fn full(pool: Pool) -> String {
    match pool {
        Pool::ServiceIp => "failed to allocate a serviceIP: range is full".into(),
        Pool::NodePort => "failed to allocate a nodePort: range is full".into(),
    }
}

/// The field error for `held` that could not be claimed for `why`, as kube words it.
pub fn claim_error(held: &Held, obj: &Object, why: &str) -> FieldError {
    match held.pool {
        Pool::ServiceIp => {
            let ips = obj.get("spec").and_then(|s| s.get("clusterIPs")).cloned().unwrap_or(json!([held.value]));
            FieldError::invalid_value(
                &held.field,
                BadValue::Raw(ips.to_string()),
                format!("failed to allocate IP {}: {why}", held.value),
            )
        }
        Pool::NodePort => FieldError::invalid_value(&held.field, BadValue::Raw(held.value.clone()), why),
    }
}

/// The object whose owner holds a pool value, as an `IPAddress`'s `parentRef` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl Parent<'_> {
    fn to_json(&self) -> Value {
        let mut p = json!({"group": self.group, "resource": self.resource, "name": self.name});
        if let Some(ns) = self.namespace {
            p["namespace"] = json!(ns);
        }
        p
    }

    /// Whether `claim` (an object [`claim_object`] made) names this parent.
    pub fn owns(&self, claim: &Value) -> bool {
        claim.pointer("/spec/parentRef") == Some(&self.to_json())
    }
}

/// The object that claims `value` of `pool` for `parent` (uid and creation time decided by
/// the proposer): an `IPAddress` as kube's allocator writes it, or a node-port entry of
/// the same shape.
pub fn claim_object(pool: Pool, value: &str, parent: &Parent, uid: &str, now: &str) -> Object {
    let spec = json!({"parentRef": parent.to_json()});
    let v = match pool {
        Pool::ServiceIp => json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IPAddress",
            "metadata": {
                "name": value,
                "uid": uid,
                "creationTimestamp": now,
                "labels": {
                    "ipaddress.kubernetes.io/ip-family": "IPv4",
                    "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io",
                },
            },
            "spec": spec,
        }),
        Pool::NodePort => json!({
            "apiVersion": "v1",
            "kind": "NodePortAllocation",
            "metadata": {"name": value, "uid": uid, "creationTimestamp": now},
            "spec": spec,
        }),
    };
    match v {
        Value::Object(m) => m,
        _ => unreachable!("built as an object"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_pools_are_kubes() {
        let p = Pools::default();
        assert_eq!(p.cidr(), "10.96.0.0/12");
        assert_eq!(p.first_address(), "10.96.0.1");
        assert_eq!(p.size(Pool::ServiceIp), (1 << 20) - 2);
        assert_eq!(p.nth(Pool::ServiceIp, p.size(Pool::ServiceIp) - 1), "10.111.255.254");
        assert_eq!(p.size(Pool::NodePort), 2768);
        assert_eq!(p.nth(Pool::NodePort, 0), "30000");
        assert_eq!(p.dynamic_band(Pool::ServiceIp), 256..(1 << 20) - 2);
        assert_eq!(p.dynamic_band(Pool::NodePort), 86..2768);
    }

    #[test]
    fn values_out_of_range_are_refused_with_kubes_words() {
        let p = Pools::new("10.0.0.0/24", "30000+100").unwrap();
        assert!(p.check(Pool::ServiceIp, "10.0.0.1").is_ok());
        assert!(p.check(Pool::ServiceIp, "10.0.0.254").is_ok());
        for bad in ["10.0.0.0", "10.0.0.255"] {
            assert_eq!(
                p.check(Pool::ServiceIp, bad).unwrap_err(),
                format!("the provided IP ({bad}) is not in the valid range. The range of valid IPs is 10.0.0.0/24")
            );
        }
        for outside in ["10.0.1.1", "9.255.255.255"] {
            assert_eq!(
                p.check(Pool::ServiceIp, outside).unwrap_err(),
                "the provided network does not match the current range"
            );
        }
        assert!(p.check(Pool::NodePort, "30099").is_ok());
        assert_eq!(
            p.check(Pool::NodePort, "30100").unwrap_err(),
            "provided port is not in the valid range. The range of valid ports is 30000-30099"
        );
        assert!(Pools::new("10.0.0.0/31", "1-2").is_err());
        assert!(Pools::new("fd00::/108", "1-2").is_err());
        assert!(Pools::new("10.0.0.0/24", "5-4").is_err());
    }

    #[test]
    fn a_claim_names_its_parent() {
        let parent = Parent { group: "", resource: "services", namespace: Some("default"), name: "web" };
        let ip = Value::Object(claim_object(Pool::ServiceIp, "10.96.0.10", &parent, "u", "t"));
        assert_eq!(ip["metadata"]["labels"]["ipaddress.kubernetes.io/managed-by"], "ipallocator.k8s.io");
        assert!(parent.owns(&ip));
        assert!(!Parent { name: "other", ..parent.clone() }.owns(&ip));
    }
}
