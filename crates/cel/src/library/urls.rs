//! Owns kube's URL library (`kubernetes.urls`): `url(string)`, `isURL(string)`, and on
//! a `kubernetes.URL`: `getScheme()`, `getHost()`, `getHostname()`, `getPort()`,
//! `getEscapedPath()`, `getQuery()`.
//!
//! As kube, a string is a URL when Go's `url.ParseRequestURI` takes it (an absolute
//! URL or an absolute path, no fragment expected), and the value is what `url.Parse`
//! makes of it. Both are written here after Go's `net/url`, with its error texts: one
//! pass over the text each.

use std::collections::HashMap;

use cel::common::types::{CelBool, CelList, CelMap, CelMapKey, CelString, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};

use super::{go_quote, opaque, opaque_type, owned, string_arg, take, with_opaque};

pub(crate) const TYPE: &str = "kubernetes.URL";

pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let url = || opaque_type(TYPE);
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", url(), vec![], get_scheme)?;
    env.add_member_overload("getHost", "url_get_host", url(), vec![], get_host)?;
    env.add_member_overload("getHostname", "url_get_hostname", url(), vec![], get_hostname)?;
    env.add_member_overload("getPort", "url_get_port", url(), vec![], get_port)?;
    env.add_member_overload("getEscapedPath", "url_get_escaped_path", url(), vec![], get_escaped_path)?;
    env.add_member_overload("getQuery", "url_get_query", url(), vec![], get_query)?;
    Ok(())
}

/// Go's `url.URL`, the parts kube reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Url {
    pub scheme: String,
    pub opaque: String,
    /// The userinfo as written, if any.
    pub user: Option<String>,
    /// Host and port, unescaped.
    pub host: String,
    /// The path, unescaped.
    pub path: String,
    /// The path as written, when escaping `path` would not give it back.
    pub raw_path: String,
    pub raw_query: String,
    pub fragment: Option<String>,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        TYPE
    }
}

/// Go's percent-encoding modes (`net/url.encoding`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// `net/url.shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => {
            return match mode {
                Mode::Path => c == b'?',
                Mode::UserPassword => matches!(c, b'@' | b'/' | b'?' | b':'),
                Mode::QueryComponent => true,
                Mode::Fragment => false,
                Mode::Host | Mode::Zone => true,
            };
        }
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

fn unhex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// `net/url.unescape`: `s` with its `%XX` decoded (and `+` as a space in a query
/// component), or Go's error text.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let (Some(hi), Some(lo)) = (b.get(i + 1).and_then(|&c| unhex(c)), b.get(i + 2).and_then(|&c| unhex(c)))
                else {
                    let bad = &b[i..b.len().min(i + 3)];
                    return Err(format!("invalid URL escape {}", go_quote(&String::from_utf8_lossy(bad))));
                };
                let decoded = hi << 4 | lo;
                // In a host, %-encoding is only for non-ASCII bytes, and %25 (RFC 6874).
                if mode == Mode::Host && hi < 8 && &b[i..i + 3] != b"%25" {
                    return Err(format!("invalid URL escape {}", go_quote(&s[i..i + 3])));
                }
                // In a zone, only what could be written unescaped (and spaces, for Windows).
                if mode == Mode::Zone && &b[i..i + 3] != b"%25" && decoded != b' ' && should_escape(decoded, Mode::Host)
                {
                    return Err(format!("invalid URL escape {}", go_quote(&s[i..i + 3])));
                }
                out.push(decoded);
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!("invalid character {} in host name", go_quote(&(c as char).to_string())));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    // Decoded bytes need not be UTF-8; CEL strings must be.
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `net/url.escape` in path mode.
fn escape_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if should_escape(c, Mode::Path) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

/// `net/url.validEncoded` in path mode.
fn valid_encoded_path(s: &str) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, Mode::Path)
    })
}

/// `net/url.getScheme`: the scheme and the rest, or an error for a leading `:`.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// `net/url.validOptionalPort`.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

/// `net/url.parseHost`.
fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
        if let Some(zone) = host[..i].find("%25") {
            let h1 = unescape(&host[..zone], Mode::Host)?;
            let h2 = unescape(&host[zone..i], Mode::Zone)?;
            let h3 = unescape(&host[i..], Mode::Host)?;
            return Ok(h1 + &h2 + &h3);
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", go_quote(colon_port)));
        }
    }
    unescape(host, Mode::Host)
}

/// `net/url.validUserinfo`.
fn valid_userinfo(s: &str) -> bool {
    s.bytes().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'.'
                    | b'_'
                    | b':'
                    | b'~'
                    | b'!'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'('
                    | b')'
                    | b'*'
                    | b'+'
                    | b','
                    | b';'
                    | b'='
                    | b'%'
                    | b'@'
            )
    })
}

/// `net/url.parse`: `via_request` for `ParseRequestURI`. The error is Go's, without the
/// `parse "..."` it is wrapped in.
fn parse_inner(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = "*".into();
        return Ok(url);
    }
    let (scheme, mut rest) = split_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, query)) = rest.split_once('?') {
        url.raw_query = query.to_owned();
        rest = before;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // Rootless paths are opaque (RFC 3986).
            url.opaque = rest.to_owned();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        if rest.split('/').next().is_some_and(|segment| segment.contains(':')) {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !via_request && !rest.starts_with("///")) && rest.starts_with("//") {
        let (authority, path) = match rest[2..].find('/') {
            Some(i) => (&rest[2..2 + i], &rest[2 + i..]),
            None => (&rest[2..], ""),
        };
        let (user, host) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        url.host = parse_host(host)?;
        if let Some(user) = user {
            if !valid_userinfo(user) {
                return Err("net/url: invalid userinfo".into());
            }
            let (name, password) = user.split_once(':').unwrap_or((user, ""));
            unescape(name, Mode::UserPassword)?;
            unescape(password, Mode::UserPassword)?;
            url.user = Some(user.to_owned());
        }
        rest = path;
    }
    url.path = unescape(rest, Mode::Path)?;
    if escape_path(&url.path) != rest {
        url.raw_path = rest.to_owned();
    }
    Ok(url)
}

fn wrap(raw: &str, e: String) -> String {
    format!("parse {}: {e}", go_quote(raw))
}

/// `url.ParseRequestURI`, or its error text.
pub fn parse_request_uri(raw: &str) -> Result<Url, String> {
    parse_inner(raw, true).map_err(|e| wrap(raw, e))
}

/// `url.Parse`, or its error text.
pub fn parse(raw: &str) -> Result<Url, String> {
    let (before, fragment) = match raw.split_once('#') {
        Some((before, fragment)) => (before, Some(fragment)),
        None => (raw, None),
    };
    let mut url = parse_inner(before, false).map_err(|e| wrap(raw, e))?;
    if let Some(fragment) = fragment {
        url.fragment = Some(unescape(fragment, Mode::Fragment).map_err(|e| wrap(raw, e))?);
    }
    Ok(url)
}

impl Url {
    /// `URL.EscapedPath`.
    pub fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty() && valid_encoded_path(&self.raw_path) {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".into();
        }
        escape_path(&self.path)
    }

    /// `net/url.splitHostPort` of the host.
    fn host_port(&self) -> (&str, &str) {
        let mut host = self.host.as_str();
        let mut port = "";
        if let Some(colon) = host.rfind(':') {
            if valid_optional_port(&host[colon..]) {
                port = &host[colon + 1..];
                host = &host[..colon];
            }
        }
        if host.len() >= 2 && host.starts_with('[') && host.ends_with(']') {
            host = &host[1..host.len() - 1];
        }
        (host, port)
    }

    /// `URL.Query()`: `&`-separated `key=value` pairs, unescaped; pairs with a `;`,
    /// or that fail to unescape, are skipped.
    pub fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut order: Vec<(String, Vec<String>)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (Ok(key), Ok(value)) = (unescape(key, Mode::QueryComponent), unescape(value, Mode::QueryComponent))
            else {
                continue;
            };
            match index.get(&key) {
                Some(&i) => order[i].1.push(value),
                None => {
                    index.insert(key.clone(), order.len());
                    order.push((key, vec![value]));
                }
            }
        }
        order
    }
}

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    let s = string_arg(s.as_ref())?;
    let url = parse_request_uri(s).and_then(|_| parse(s)).map_err(|e| {
        ExecutionError::function_error("url", format!("URL parse error during conversion from string: {e}"))
    })?;
    opaque(url)
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    owned(CelBool::from(parse_request_uri(string_arg(s.as_ref())?).is_ok()))
}

/// A string read from the `kubernetes.URL` receiver.
fn read<'b, 'v>(args: Vec<CowVal<'b, 'v>>, f: impl FnOnce(&Url) -> String) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [url] = take(args)?;
    owned(CelString::from(with_opaque(url.as_ref(), f)?))
}

fn get_scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    read(args, |u| u.scheme.clone())
}

fn get_host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    read(args, |u| u.host.clone())
}

fn get_hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    read(args, |u| u.host_port().0.to_owned())
}

fn get_port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    read(args, |u| u.host_port().1.to_owned())
}

fn get_escaped_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    read(args, Url::escaped_path)
}

fn get_query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [url] = take(args)?;
    let query = with_opaque(url.as_ref(), Url::query)?;
    let map: HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> = query
        .into_iter()
        .map(|(k, values)| {
            let values: Vec<Box<dyn Val + 'v>> =
                values.into_iter().map(|v| Box::new(CelString::from(v)) as Box<dyn Val + 'v>).collect();
            (CelMapKey::from(k), Box::new(CelList::from(values)) as Box<dyn Val + 'v>)
        })
        .collect();
    owned(CelMap::from(map))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_err, assert_true, eval};
    use super::*;
    use crate::Value;
    use std::sync::Arc;

    fn string(v: &str) -> Value {
        Value::String(Arc::new(v.to_owned()))
    }

    #[test]
    fn is_url() {
        assert_true(
            "isURL('https://example.com') && isURL('https://user:pass@example.com:80/path?query=val#fragment')",
        );
        assert_true("isURL('/absolute-path') && isURL('https://a:b@c/d') && isURL('*')");
        assert_true("!isURL('../relative-path') && !isURL('') && !isURL('example.com') && !isURL(':foo')");
        assert_true("!isURL('https://example.com/%zz') && !isURL('https://exa mple.com') && !isURL('https://[::1')");
        assert_true("!isURL('https://example.com:8a/')");
        assert_err(
            "url('../relative-path')",
            "URL parse error during conversion from string: parse \"../relative-path\": invalid URI for request",
        );
        assert_err("url('https://example.com/%zz')", "invalid URL escape \"%zz\"");
        assert_err("url('http://a b/')", "invalid character \" \" in host name");
    }

    #[test]
    fn parts() {
        assert_true("url('https://example.com/path').getScheme() == 'https'");
        assert_true("url('HTTPS://example.com').getScheme() == 'https'");
        assert_true("url('https://example.com:8080/').getHost() == 'example.com:8080'");
        assert_true("url('https://example.com:8080/').getHostname() == 'example.com'");
        assert_true("url('https://example.com:8080/').getPort() == '8080'");
        assert_true("url('https://example.com/').getPort() == ''");
        assert_true(
            "url('https://[::1]:80/').getHost() == '[::1]:80' && url('https://[::1]:80/').getHostname() == '::1'",
        );
        assert_true("url('https://[::1]/').getHostname() == '::1' && url('https://[::1]/').getPort() == ''");
        assert_true("url('/path').getHost() == '' && url('/path').getScheme() == ''");
        assert_true("url('https://example.com/path with spaces/').getEscapedPath() == '/path%20with%20spaces/'");
        assert_true("url('https://example.com/a%2Fb').getEscapedPath() == '/a%2Fb'");
        assert_true("url('https://example.com/a#frag').getEscapedPath() == '/a'");
        assert_true("url('https://example.com').getEscapedPath() == ''");
        assert_true("url('https://example.com/a') == url('https://example.com/a')");
    }

    #[test]
    fn query() {
        assert_true(
            "url('https://example.com/?a=1&a=2&b=x+y&c').getQuery() == {'a': ['1', '2'], 'b': ['x y'], 'c': ['']}",
        );
        assert_true("url('https://example.com/?k%20=v%21').getQuery() == {'k ': ['v!']}");
        assert_true("url('https://example.com/?a=1;b=2&c=%zz&d=3').getQuery() == {'d': ['3']}");
        assert_true("url('https://example.com/').getQuery() == {}");
        assert_eq!(eval("url('https://example.com/?x=1').getQuery()['x'][0]"), Ok(string("1")));
    }

    #[test]
    fn parse_matches_go() {
        let u = parse("http://user@host:1/p?q#f").unwrap();
        assert_eq!((u.host.as_str(), u.path.as_str(), u.raw_query.as_str()), ("host:1", "/p", "q"));
        assert_eq!(u.fragment.as_deref(), Some("f"));
        // Without a scheme, ParseRequestURI reads `//x` as a path; Parse as a host.
        assert_eq!(parse_request_uri("//x/y").unwrap().path, "//x/y");
        assert_eq!(parse("//x/y").unwrap().host, "x");
        assert_eq!(parse_request_uri("mailto:a@b").unwrap().opaque, "a@b");
        assert!(parse_request_uri("http://a\u{1}b")
            .unwrap_err()
            .ends_with("net/url: invalid control character in URL"));
    }
}
