//! The address and name checks networking kinds share, with kube-apiserver's messages:
//! IPs and CIDRs read as Go's sloppy parsers read them (`k8s.io/utils/net`), the strict
//! forms newer fields demand (`IsValidIP`, `IsValidCIDR`: canonical, no leading zeros, no
//! IPv4-mapped IPv6), port names, wildcard hosts, and how Go prints a string list.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::validation::is_dns1123_subdomain;

pub const INVALID_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
pub const INVALID_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// Go's `ParseIPSloppy`: what `net.ParseIP` accepted before Go 1.17, IPv4 octets with
/// leading zeros included (read as decimal).
pub fn parse_ip_sloppy(s: &str) -> Option<IpAddr> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some(ip);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (octet, part) in octets.iter_mut().zip(&parts) {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *octet = part.parse::<u32>().ok().filter(|n| *n <= 255)? as u8;
    }
    Some(IpAddr::V4(Ipv4Addr::from(octets)))
}

/// Whether `ip` is an IPv4-mapped IPv6 address (`::ffff:1.2.3.4`).
fn is_4in6(ip: IpAddr) -> bool {
    matches!(ip, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// The IP family, as `IPFamilyOf` reads it: a mapped IPv4 address counts as IPv4.
pub fn is_ipv4(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(_) => true,
        IpAddr::V6(v6) => v6.to_ipv4_mapped().is_some(),
    }
}

/// The problems of an IP address in a field that predates strict validation
/// (`IsValidIPForLegacyField` without the strict gate): only that it parses.
pub fn legacy_ip_errors(value: &str) -> Vec<String> {
    match parse_ip_sloppy(value) {
        Some(_) => Vec::new(),
        None => vec![INVALID_IP.into()],
    }
}

/// `IsValidIP`: a valid IP, without leading zeros, not IPv4-mapped, in canonical form.
pub fn strict_ip_errors(value: &str) -> Vec<String> {
    let Some(ip) = parse_ip_sloppy(value) else { return vec![INVALID_IP.into()] };
    let mut errs = Vec::new();
    if value.parse::<IpAddr>().is_err() {
        errs.push("must not have leading 0s".to_string());
    }
    if is_4in6(ip) {
        errs.push("must not be an IPv4-mapped IPv6 address".to_string());
    }
    if errs.is_empty() && ip.to_string() != value {
        errs.push(format!("must be in canonical form ({:?})", ip.to_string()));
    }
    errs
}

/// A parsed CIDR: the address as written and the prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub ip: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// The network address (bits past the prefix cleared).
    pub fn network(&self) -> IpAddr {
        match self.ip {
            IpAddr::V4(v4) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix)).unwrap_or(0);
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
            }
            IpAddr::V6(v6) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix)).unwrap_or(0);
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
            }
        }
    }

    /// Whether `ip` lies in this network (`net.IPNet.Contains`).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let inner = Cidr { ip, prefix: self.prefix };
        self.ip.is_ipv4() == ip.is_ipv4() && inner.network() == self.network()
    }

    /// `net.IPNet.String()`: the network address and the prefix length.
    pub fn canonical(&self) -> String {
        format!("{}/{}", self.network(), self.prefix)
    }
}

/// Go's `ParseCIDRSloppy`: an address (leading zeros allowed) and a decimal prefix length
/// no longer than the address.
pub fn parse_cidr_sloppy(s: &str) -> Option<Cidr> {
    let (ip, prefix) = s.split_once('/')?;
    let ip = parse_ip_sloppy(ip)?;
    if prefix.is_empty() || !prefix.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits = if ip.is_ipv4() { 32 } else { 128 };
    let prefix = prefix.parse::<u32>().ok().filter(|p| *p <= bits)? as u8;
    Some(Cidr { ip, prefix })
}

/// The problems of a CIDR in a field that predates strict validation: only that it parses.
pub fn legacy_cidr_errors(value: &str) -> Vec<String> {
    match parse_cidr_sloppy(value) {
        Some(_) => Vec::new(),
        None => vec![INVALID_CIDR.into()],
    }
}

/// `IsValidCIDR`: a valid subnet, without leading zeros or bits past the prefix, not
/// IPv4-mapped, in canonical form.
pub fn strict_cidr_errors(value: &str) -> Vec<String> {
    let Some(cidr) = parse_cidr_sloppy(value) else { return vec![INVALID_CIDR.into()] };
    let (ip, prefix) = value.split_once('/').unwrap_or((value, ""));
    let leading_zero = ip.parse::<IpAddr>().is_err() || (prefix.len() > 1 && prefix.starts_with('0'));
    let problem = if leading_zero {
        Some("must not have leading 0s in IP or prefix length")
    } else if is_4in6(cidr.ip) {
        Some("must not have an IPv4-mapped IPv6 address")
    } else if cidr.ip != cidr.network() {
        Some("must not have bits set beyond the prefix length")
    } else {
        None
    };
    if let Some(p) = problem {
        return vec![p.into()];
    }
    if cidr.canonical() != value {
        return vec![format!("must be in canonical form ({:?})", cidr.canonical())];
    }
    Vec::new()
}

/// `IsValidPortName`: at most 15 characters of `[-a-z0-9]`, a letter among them, no `--`,
/// no leading or trailing `-`.
pub fn port_name_errors(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string());
    }
    if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// `IsWildcardDNS1123Subdomain`: `*.` followed by a DNS subdomain.
pub fn wildcard_subdomain_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let ok = value
        .strip_prefix("*.")
        .is_some_and(|rest| is_dns1123_subdomain(rest).iter().all(|e| e.starts_with("must be no more")));
    if !ok {
        errs.push(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must \
             consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. \
             '*.example.com', regex used for validation is \
             '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .to_string(),
        );
    }
    errs
}

/// How Go's `%#v` prints a list of strings of type `ty` (`[]string{"a", "b"}`).
pub fn go_strings(ty: &str, items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]{ty}{{{}}}", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ips_as_kube_reads_them() {
        assert!(strict_ip_errors("10.0.0.1").is_empty());
        assert!(strict_ip_errors("2001:db8::1").is_empty());
        assert_eq!(strict_ip_errors("2001:DB8::1"), [r#"must be in canonical form ("2001:db8::1")"#]);
        assert_eq!(strict_ip_errors("2001:db8:0:0:0:0:0:1"), [r#"must be in canonical form ("2001:db8::1")"#]);
        assert_eq!(strict_ip_errors("010.0.0.1"), ["must not have leading 0s"]);
        assert_eq!(strict_ip_errors("::ffff:10.0.0.1"), ["must not be an IPv4-mapped IPv6 address"]);
        assert_eq!(strict_ip_errors("10.0.0.256"), [INVALID_IP]);
        assert!(legacy_ip_errors("010.0.0.1").is_empty());
    }

    #[test]
    fn cidrs_as_kube_reads_them() {
        assert!(strict_cidr_errors("10.96.0.0/12").is_empty());
        assert!(strict_cidr_errors("fd00:10:96::/112").is_empty());
        assert_eq!(strict_cidr_errors("10.96.0.1/12"), ["must not have bits set beyond the prefix length"]);
        assert_eq!(strict_cidr_errors("10.96.0.0/012"), ["must not have leading 0s in IP or prefix length"]);
        assert_eq!(strict_cidr_errors("FD00::/64"), [r#"must be in canonical form ("fd00::/64")"#]);
        assert_eq!(strict_cidr_errors("10.0.0.0/33"), [INVALID_CIDR]);
        assert!(legacy_cidr_errors("10.0.0.1/8").is_empty());
        let net = parse_cidr_sloppy("10.0.0.0/8").unwrap();
        assert!(net.contains("10.1.0.0".parse().unwrap()));
        assert!(!net.contains("11.0.0.0".parse().unwrap()));
    }

    #[test]
    fn port_names_and_wildcards() {
        assert!(port_name_errors("http").is_empty());
        assert_eq!(port_name_errors("8080"), ["must contain at least one letter (a-z)"]);
        assert_eq!(port_name_errors("a--b").len(), 1);
        assert!(wildcard_subdomain_errors("*.example.com").is_empty());
        assert_eq!(wildcard_subdomain_errors("*example.com").len(), 1);
        assert_eq!(go_strings("string", &["a", "b"]), r#"[]string{"a", "b"}"#);
    }
}
