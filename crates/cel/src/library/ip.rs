//! Owns kube's IP and CIDR libraries (`kubernetes.net.ip`, `kubernetes.net.cidr`):
//! `ip(string)`, `isIP(string)`, `ip.isCanonical(string)`, `string(ip)`, and on a
//! `net.IP`: `family()`, `isUnspecified()`, `isLoopback()`, `isLinkLocalMulticast()`,
//! `isLinkLocalUnicast()`, `isGlobalUnicast()`; `cidr(string)`, `isCIDR(string)`,
//! `string(cidr)`, and on a `net.CIDR`: `containsIP(ip|string)`,
//! `containsCIDR(cidr|string)`, `ip()`, `masked()`, `prefixLength()`.
//!
//! Addresses are read as Go's `netip.ParseAddr`/`ParsePrefix` read them (dotted quads
//! without leading zeros, RFC 4291 text), then, as kube does, IPv4-mapped IPv6
//! addresses and zones are refused. A CIDR keeps the address it was written with
//! (`cidr('10.0.0.1/8').ip()` is `10.0.0.1`); `masked()` clears the host bits.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use cel::common::types::{CelBool, CelInt, CelString, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};

use super::{go_quote, opaque, opaque_type, owned, string_arg, take, with_opaque};

pub(crate) const IP_TYPE: &str = "net.IP";
pub(crate) const CIDR_TYPE: &str = "net.CIDR";

pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let ip = || opaque_type(IP_TYPE);
    let cidr = || opaque_type(CIDR_TYPE);
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], to_ip)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload("ip.isCanonical", "ip_is_canonical", vec![STRING_TYPE], is_canonical)?;
    env.add_overload("string", "ip_to_string", vec![ip()], ip_to_string)?;
    env.add_member_overload("family", "ip_family", ip(), vec![], family)?;
    env.add_member_overload("isUnspecified", "ip_is_unspecified", ip(), vec![], is_unspecified)?;
    env.add_member_overload("isLoopback", "ip_is_loopback", ip(), vec![], is_loopback)?;
    env.add_member_overload(
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        ip(),
        vec![],
        is_link_local_multicast,
    )?;
    env.add_member_overload("isLinkLocalUnicast", "ip_is_link_local_unicast", ip(), vec![], is_link_local_unicast)?;
    env.add_member_overload("isGlobalUnicast", "ip_is_global_unicast", ip(), vec![], is_global_unicast)?;

    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], to_cidr)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_overload("string", "cidr_to_string", vec![cidr()], cidr_to_string)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_string", cidr(), vec![STRING_TYPE], contains_ip)?;
    env.add_member_overload("containsIP", "cidr_contains_ip_ip", cidr(), vec![ip()], contains_ip)?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr_string", cidr(), vec![STRING_TYPE], contains_cidr)?;
    env.add_member_overload("containsCIDR", "cidr_contains_cidr", cidr(), vec![cidr()], contains_cidr)?;
    env.add_member_overload("ip", "cidr_ip", cidr(), vec![], cidr_ip)?;
    env.add_member_overload("prefixLength", "cidr_prefix_length", cidr(), vec![], prefix_length)?;
    env.add_member_overload("masked", "cidr_masked", cidr(), vec![], masked)?;
    Ok(())
}

/// A `net.IP`: an address with no zone, not IPv4-mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ip(pub IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        IP_TYPE
    }
}

/// A `net.CIDR`: an address and a prefix length, the host bits as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub bits: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        CIDR_TYPE
    }
}

/// Go's `netip.ParseAddr` error text: `ParseAddr("in"): msg (at "rest")`.
fn addr_error(input: &str, msg: &str, at: &str) -> String {
    if at.is_empty() {
        format!("ParseAddr({}): {msg}", go_quote(input))
    } else {
        format!("ParseAddr({}): {msg} (at {})", go_quote(input), go_quote(at))
    }
}

/// `netip.ParseAddr`, with its messages: the address, and whether it had a zone.
fn parse_addr(s: &str) -> Result<(IpAddr, bool), String> {
    for c in s.bytes() {
        match c {
            b'.' => return parse_ipv4_fields(s, s).map(|o| (IpAddr::V4(Ipv4Addr::from(o)), false)),
            b':' => return parse_ipv6(s),
            b'%' => return Err(addr_error(s, "missing IPv6 address", "")),
            _ => {}
        }
    }
    Err(addr_error(s, "unable to parse IP", ""))
}

/// `netip.parseIPv4Fields`: the dotted quad `s`, part of `input`.
fn parse_ipv4_fields(input: &str, s: &str) -> Result<[u8; 4], String> {
    let b = s.as_bytes();
    let mut fields = [0u8; 4];
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                if digits == 1 && val == 0 {
                    return Err(addr_error(input, "IPv4 field has octet with leading zero", ""));
                }
                val = val * 10 + u32::from(c - b'0');
                digits += 1;
                if val > 255 {
                    return Err(addr_error(input, "IPv4 field has value >255", ""));
                }
            }
            b'.' => {
                if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                    return Err(addr_error(input, "IPv4 field must have at least one digit", &s[i..]));
                }
                if pos == 3 {
                    return Err(addr_error(input, "IPv4 address too long", ""));
                }
                fields[pos] = val as u8;
                pos += 1;
                val = 0;
                digits = 0;
            }
            _ => return Err(addr_error(input, "unexpected character", &s[i..])),
        }
    }
    if pos < 3 {
        return Err(addr_error(input, "IPv4 address too short", ""));
    }
    fields[3] = val as u8;
    Ok(fields)
}

/// `netip.parseIPv6`, with its messages.
fn parse_ipv6(input: &str) -> Result<(IpAddr, bool), String> {
    let fail = |msg: &str, at: &str| Err(addr_error(input, msg, at));
    let (mut s, zone) = match input.split_once('%') {
        Some((_, "")) => return fail("zone must be a non-empty string", ""),
        Some((addr, _)) => (addr, true),
        None => (input, false),
    };
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if let Some(rest) = s.strip_prefix("::") {
        ellipsis = Some(0);
        s = rest;
        if s.is_empty() {
            return Ok((IpAddr::V6(Ipv6Addr::UNSPECIFIED), zone));
        }
    }
    let mut i = 0;
    while i < 16 {
        let b = s.as_bytes();
        let mut off = 0;
        let mut acc = 0u32;
        while off < b.len() {
            let Some(d) = (b[off] as char).to_digit(16) else { break };
            acc = (acc << 4) + d;
            if off > 3 {
                return fail("each group must have 4 or less digits", s);
            }
            if acc > 0xffff {
                return fail("IPv6 field has value >=2^16", s);
            }
            off += 1;
        }
        if off == 0 {
            return fail("each colon-separated field must have at least one digit", s);
        }
        if b.get(off) == Some(&b'.') {
            if ellipsis.is_none() && i != 12 {
                return fail("embedded IPv4 address must replace the final 2 fields of the address", s);
            }
            if i + 4 > 16 {
                return fail("too many hex fields to fit an embedded IPv4 at the end of the address", s);
            }
            ip[i..i + 4].copy_from_slice(&parse_ipv4_fields(input, s)?);
            s = "";
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return fail("unexpected character, want colon", s);
        } else if s.len() == 1 {
            return fail("colon must be followed by more characters", s);
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return fail("multiple :: in address", s);
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return fail("trailing garbage after address", s);
    }
    if i < 16 {
        let Some(at) = ellipsis else {
            return fail("address string too short", "");
        };
        // The groups after the `::` move to the end; zeros fill the gap.
        let n = 16 - i;
        ip.copy_within(at..i, at + n);
        ip[at..at + n].fill(0);
    } else if ellipsis.is_some() {
        return fail("the :: must expand to at least one field of zeros", "");
    }
    Ok((IpAddr::V6(Ipv6Addr::from(ip)), zone))
}

fn is_4in6(addr: &IpAddr) -> bool {
    matches!(addr, IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some())
}

/// kube's `parseIPAddr`.
fn parse_ip(s: &str) -> Result<IpAddr, String> {
    let (addr, zone) = parse_addr(s)
        .map_err(|e| format!("IP Address {} parse error during conversion from string: {e}", go_quote(s)))?;
    if zone {
        return Err(format!("IP address {} with zone value is not allowed", go_quote(s)));
    }
    if is_4in6(&addr) {
        return Err(format!("IPv4-mapped IPv6 address {} is not allowed", go_quote(s)));
    }
    Ok(addr)
}

/// `netip.ParsePrefix`, or its error text.
fn parse_prefix(s: &str) -> Result<Cidr, String> {
    let fail = |why: &str| format!("netip.ParsePrefix({}): {why}", go_quote(s));
    let Some((addr, bits)) = s.rsplit_once('/') else {
        return Err(fail("no '/'"));
    };
    let (addr, zone) = parse_addr(addr).map_err(|e| fail(&e))?;
    if zone {
        return Err(fail("IPv6 zones cannot be present in a prefix"));
    }
    let bad_bits = || fail(&format!("bad bits after slash: {}", go_quote(bits)));
    // No sign, no leading zero (but "0" itself).
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) || (bits.len() > 1 && bits.starts_with('0')) {
        return Err(bad_bits());
    }
    let max = if addr.is_ipv4() { 32 } else { 128 };
    match bits.parse::<u32>() {
        Ok(b) if b <= max => Ok(Cidr { addr, bits: b as u8 }),
        _ if bits.len() > 18 => Err(bad_bits()),
        _ => Err(fail("prefix length out of range")),
    }
}

/// kube's `parseCIDR` (its message repeats the prefix, as kube's does).
fn parse_cidr(s: &str) -> Result<Cidr, String> {
    let cidr =
        parse_prefix(s).map_err(|e| format!("network address parse error during conversion from string: {e}"))?;
    if is_4in6(&cidr.addr) {
        return Err(format!("IPv4-mapped IPv6 address {} is not allowed", go_quote(s)));
    }
    Ok(cidr)
}

/// The address as a number, and its width in bits.
fn bits_of(addr: &IpAddr) -> (u128, u32) {
    match addr {
        IpAddr::V4(a) => (u128::from(u32::from(*a)), 32),
        IpAddr::V6(a) => (u128::from(*a), 128),
    }
}

/// `addr` with all but its first `bits` bits cleared.
fn mask(addr: &IpAddr, bits: u8) -> IpAddr {
    let (n, width) = bits_of(addr);
    let keep = u32::from(bits).min(width);
    let host = width - keep;
    let masked = if host >= 128 { 0 } else { (n >> host) << host };
    match addr {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(masked as u32)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(masked)),
    }
}

impl Cidr {
    /// `Prefix.Contains`: same family, and the network bits agree.
    fn contains(&self, ip: &IpAddr) -> bool {
        self.addr.is_ipv4() == ip.is_ipv4() && mask(&self.addr, self.bits) == mask(ip, self.bits)
    }

    /// kube's `containsCIDR`: the prefixes overlap and `other` is no wider.
    fn contains_cidr(&self, other: &Cidr) -> bool {
        self.bits <= other.bits && self.contains(&other.addr)
    }

    /// `Prefix.String()`.
    fn text(&self) -> String {
        format!("{}/{}", self.addr, self.bits)
    }
}

fn is_multicast(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[0] & 0xf0 == 0xe0,
        IpAddr::V6(a) => a.segments()[0] >> 8 == 0xff,
    }
}

fn is_link_local_unicast_addr(addr: &IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[..2] == [169, 254],
        IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// `netip.Addr.IsGlobalUnicast`: private and unique-local addresses included.
fn is_global_unicast_addr(addr: &IpAddr) -> bool {
    if let IpAddr::V4(a) = addr {
        if a.is_unspecified() || a.is_broadcast() {
            return false;
        }
    }
    !addr.is_unspecified() && !addr.is_loopback() && !is_multicast(addr) && !is_link_local_unicast_addr(addr)
}

fn err(function: &str, message: String) -> ExecutionError {
    ExecutionError::function_error(function, message)
}

fn to_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    opaque(Ip(parse_ip(string_arg(s.as_ref())?).map_err(|e| err("ip", e))?))
}

fn is_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    owned(CelBool::from(parse_ip(string_arg(s.as_ref())?).is_ok()))
}

fn is_canonical<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    let s = string_arg(s.as_ref())?;
    let addr = parse_ip(s).map_err(|e| err("ip.isCanonical", e))?;
    owned(CelBool::from(addr.to_string() == s))
}

/// The `net.IP` receiver of a one-argument overload, handed to `f`.
fn on_ip<'b, 'v, R: Val + 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: impl FnOnce(&IpAddr) -> R,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [ip] = take(args)?;
    owned(with_opaque(ip.as_ref(), |ip: &Ip| f(&ip.0))?)
}

fn ip_to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_ip(args, |a| CelString::from(a.to_string()))
}

fn family<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_ip(args, |a| CelInt::from(if a.is_ipv4() { 4 } else { 6 }))
}

fn is_unspecified<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_ip(args, |a| CelBool::from(a.is_unspecified()))
}

fn is_loopback<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_ip(args, |a| CelBool::from(a.is_loopback()))
}

fn is_link_local_multicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_ip(args, |a| {
        CelBool::from(match a {
            IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
            IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
        })
    })
}

fn is_link_local_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_ip(args, |a| CelBool::from(is_link_local_unicast_addr(a)))
}

fn is_global_unicast<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_ip(args, |a| CelBool::from(is_global_unicast_addr(a)))
}

fn to_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    opaque(parse_cidr(string_arg(s.as_ref())?).map_err(|e| err("cidr", e))?)
}

fn is_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    owned(CelBool::from(parse_cidr(string_arg(s.as_ref())?).is_ok()))
}

/// The `net.CIDR` receiver of a one-argument overload, handed to `f`.
fn on_cidr<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: impl FnOnce(&Cidr) -> Result<CowVal<'b, 'v>, ExecutionError>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [cidr] = take(args)?;
    with_opaque(cidr.as_ref(), f)?
}

fn cidr_to_string<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_cidr(args, |c| owned(CelString::from(c.text())))
}

fn cidr_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_cidr(args, |c| opaque(Ip(c.addr)))
}

fn prefix_length<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_cidr(args, |c| owned(CelInt::from(i64::from(c.bits))))
}

fn masked<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    on_cidr(args, |c| opaque(Cidr { addr: mask(&c.addr, c.bits), bits: c.bits }))
}

/// `containsIP`, given an IP or the string of one (parsed as `ip()` parses it).
fn contains_ip<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [cidr, other] = take(args)?;
    let ip = match other.downcast_ref::<cel::common::types::CelString>() {
        Some(s) => parse_ip(s.inner()).map_err(|e| err("containsIP", e))?,
        None => with_opaque(other.as_ref(), |ip: &Ip| ip.0)?,
    };
    owned(CelBool::from(with_opaque(cidr.as_ref(), |c: &Cidr| c.contains(&ip))?))
}

/// `containsCIDR`, given a CIDR or the string of one (parsed as `cidr()` parses it).
fn contains_cidr<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [cidr, other] = take(args)?;
    let inner = match other.downcast_ref::<cel::common::types::CelString>() {
        Some(s) => parse_cidr(s.inner()).map_err(|e| err("containsCIDR", e))?,
        None => with_opaque(other.as_ref(), |c: &Cidr| *c)?,
    };
    owned(CelBool::from(with_opaque(cidr.as_ref(), |c: &Cidr| c.contains_cidr(&inner))?))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_err, assert_true, eval, eval_with};
    use crate::Value;
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn parses_as_kube_does() {
        assert_true("isIP('1.2.3.4') && isIP('::1') && isIP('2001:db8::68') && isIP('::ffff:ffff')");
        assert_true("!isIP('1.2.3') && !isIP('1.2.3.4.5') && !isIP('01.2.3.4') && !isIP('256.0.0.1')");
        assert_true("!isIP('') && !isIP('fe80::1%eth0') && !isIP('::ffff:1.2.3.4') && !isIP('1.2.3.4/8')");
        assert_err("ip('::ffff:1.2.3.4')", "IPv4-mapped IPv6 address \"::ffff:1.2.3.4\" is not allowed");
        assert_err("ip('fe80::1%eth0')", "IP address \"fe80::1%eth0\" with zone value is not allowed");
        assert_err(
            "ip('1.2.3')",
            "IP Address \"1.2.3\" parse error during conversion from string: ParseAddr(\"1.2.3\"): IPv4 address too short",
        );
        assert_err("ip('01.2.3.4')", "IPv4 field has octet with leading zero");
        assert_err("ip('zzz')", "unable to parse IP");
        // kube's own cases.
        assert_err(
            "ip('192.168.0.1.0')",
            "IP Address \"192.168.0.1.0\" parse error during conversion from string: ParseAddr(\"192.168.0.1.0\"): IPv4 address too long",
        );
        assert_err(
            "ip('2001:db8:::68')",
            "ParseAddr(\"2001:db8:::68\"): each colon-separated field must have at least one digit (at \":68\")",
        );
        assert_err("ip('1::2::3')", "multiple :: in address");
        assert_err("ip('1:2:3:4:5:6:7:8:9')", "trailing garbage after address");
        assert_err("ip('1:2:3')", "address string too short");
        assert_err("ip('1.2.3.4%eth0')", "unexpected character (at \"%eth0\")");
        assert_err("ip('%eth0')", "missing IPv6 address");
        assert_true("ip('1:2:3:4:5:6:1.2.3.4') == ip('1:2:3:4:5:6:102:304') && ip('::1.2.3.4') == ip('::102:304')");
        assert_true("ip('1::') == ip('1:0:0:0:0:0:0:0') && ip('1::8') == ip('1:0:0:0:0:0:0:8')");
    }

    #[test]
    fn addresses() {
        assert_true("ip('1.2.3.4').family() == 4 && ip('::1').family() == 6");
        assert_true("ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified() && !ip('::1').isUnspecified()");
        assert_true("ip('127.0.0.5').isLoopback() && ip('::1').isLoopback() && !ip('10.0.0.1').isLoopback()");
        assert_true("ip('224.0.0.1').isLinkLocalMulticast() && ip('ff02::1').isLinkLocalMulticast()");
        assert_true("!ip('224.0.1.1').isLinkLocalMulticast() && !ip('ff05::1').isLinkLocalMulticast()");
        assert_true("ip('169.254.1.1').isLinkLocalUnicast() && ip('fe80::1').isLinkLocalUnicast()");
        assert_true("ip('10.0.0.1').isGlobalUnicast() && ip('2001:db8::1').isGlobalUnicast()");
        assert_true("!ip('255.255.255.255').isGlobalUnicast() && !ip('ff00::1').isGlobalUnicast()");
        assert_true("!ip('127.0.0.1').isGlobalUnicast() && !ip('fe80::1').isGlobalUnicast()");
        assert_true("ip('1.2.3.4') == ip('1.2.3.4') && ip('1.2.3.4') != ip('1.2.3.5')");
        assert_true("ip('::1') == ip('0:0:0:0:0:0:0:1')");
        assert_eq!(eval("string(ip('2001:DB8:0::1'))"), Ok(Value::String(Arc::new("2001:db8::1".into()))));
        assert_true("ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')");
        assert_err("ip.isCanonical('bad')", "parse error");
    }

    #[test]
    fn types_are_named() {
        let env = crate::environment();
        let program = env.compile("type(ip('1.2.3.4')) == net.IP && type(cidr('::/0')) == net.CIDR").unwrap();
        let context = cel::Context::with_env(env);
        assert_eq!(program.execute(&context), Ok(Value::Bool(true)));
    }

    #[test]
    fn cidrs() {
        assert_true("isCIDR('10.0.0.0/8') && isCIDR('::/0') && isCIDR('10.0.0.1/32')");
        assert_true(
            "!isCIDR('10.0.0.0') && !isCIDR('10.0.0.0/33') && !isCIDR('10.0.0.0/08') && !isCIDR('::ffff:1.2.3.4/96')",
        );
        assert_true("!isCIDR('fe80::1%eth0/64') && !isCIDR('10.0.0.0/-1') && !isCIDR('10.0.0.0/')");
        assert_err("cidr('10.0.0.0/33')", "prefix length out of range");
        assert_err("cidr('10.0.0.0')", "no '/'");
        assert_err("cidr('::ffff:1.2.3.4/96')", "IPv4-mapped IPv6 address");
        assert_true("cidr('10.0.0.0/8').containsIP(ip('10.1.2.3')) && cidr('10.0.0.0/8').containsIP('10.1.2.3')");
        assert_true("!cidr('10.0.0.0/8').containsIP('11.0.0.0') && !cidr('::/0').containsIP('1.2.3.4')");
        assert_err("cidr('10.0.0.0/8').containsIP('bad')", "parse error");
        assert_true(
            "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.1.0.0/16').containsCIDR('10.0.0.0/8')",
        );
        assert_true(
            "cidr('10.0.0.0/8').containsCIDR(cidr('10.0.0.0/8')) && !cidr('10.0.0.0/8').containsCIDR('11.0.0.0/16')",
        );
        assert_true("cidr('10.0.0.1/8').ip() == ip('10.0.0.1') && cidr('10.0.0.1/8').prefixLength() == 8");
        assert_true("cidr('10.0.0.1/8').masked() == cidr('10.0.0.0/8') && cidr('10.0.0.1/8') != cidr('10.0.0.0/8')");
        assert_true("cidr('::1/0').masked() == cidr('::/0') && cidr('1.2.3.4/32').masked() == cidr('1.2.3.4/32')");
        assert_eq!(
            eval("string(cidr('2001:db8::1/64').masked())"),
            Ok(Value::String(Arc::new("2001:db8::/64".into())))
        );
        assert_eq!(eval_with("cidr(self).containsIP('192.168.0.9')", json!("192.168.0.0/24")), Ok(Value::Bool(true)));
    }
}
