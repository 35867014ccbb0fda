//! Continue tokens in kube-apiserver's shape: unpadded URL-safe base64 of
//! `{"v":"meta.k8s.io/v1","rv":N,"start":"<key after the collection prefix>\u0000"}`.
//!
//! `start` is the key of the last item served, relative to the collection prefix, with a
//! NUL appended: the next page starts at the first key >= it, that is strictly after the
//! last item. `rv` is the resourceVersion of the list's snapshot, so every page comes from
//! the same snapshot; `-1` (what kube-apiserver hands out with a 410 when the snapshot is
//! compacted) means "continue at the newest state".
//!
//! One field is kuorum's own: `remaining`, how many objects of the snapshot follow the
//! last item (written when the list has no selectors). The next page's
//! `remainingItemCount` is that count less the page's items, where counting again would
//! read every object after the page: each page of a paged list would cost the whole rest
//! of the list, and the list quadratic time. Clients treat tokens as opaque and
//! kube-apiserver ignores unknown fields; a token that lies about it gets a wrong count
//! for its own list and nothing else.
//!
//! Worked example: a page of `/registry/core/configmaps/` ending at `default/b`, read at
//! rv 12, gives `{"v":"meta.k8s.io/v1","rv":12,"start":"default/b\u0000"}`, which encodes
//! as `eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIsInN0YXJ0IjoiZGVmYXVsdC9iXHUwMDAwIn0`; with 40
//! objects after it, `..."start":"default/b\u0000","remaining":40}`.

use kuorum_api::ApiError;
use serde::{Deserialize, Serialize};

const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// A decoded continue token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ContinueToken {
    /// The snapshot's resourceVersion; -1 means "the newest state".
    pub rv: i64,
    /// The full storage key the next page starts at (inclusive).
    pub from_key: String,
    /// How many objects of the snapshot are at or after `from_key`, when the page that
    /// handed out the token knew it.
    pub remaining: Option<usize>,
}

impl ContinueToken {
    /// The exclusive lower bound to scan from: every key > it is >= `from_key`.
    pub fn start_after(&self) -> String {
        just_before(&self.from_key)
    }
}

#[derive(Serialize, Deserialize)]
struct Wire {
    #[serde(default)]
    v: String,
    #[serde(default)]
    rv: i64,
    #[serde(default)]
    start: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remaining: Option<usize>,
}

/// The token for the page after `last_key` of the collection under `prefix`, read at `rv`,
/// with `remaining` objects after it when that is known.
pub(crate) fn encode(prefix: &str, last_key: &str, rv: i64, remaining: Option<usize>) -> String {
    let rel = last_key.strip_prefix(prefix).unwrap_or(last_key);
    let wire = Wire { v: TOKEN_VERSION.to_string(), rv, start: format!("{rel}\0"), remaining };
    base64_url_encode(&serde_json::to_vec(&wire).unwrap_or_default())
}

/// The token for a page starting at `from_key` (inclusive), as [`encode`] would write it.
pub(crate) fn encode_from(prefix: &str, from_key: &str, rv: i64) -> String {
    let rel = from_key.strip_prefix(prefix).unwrap_or(from_key);
    let wire = Wire { v: TOKEN_VERSION.to_string(), rv, start: rel.to_string(), remaining: None };
    base64_url_encode(&serde_json::to_vec(&wire).unwrap_or_default())
}

/// Decodes a token for the collection under `prefix` (400 BadRequest, with kube's
/// messages, when it is not one).
pub(crate) fn decode(token: &str, prefix: &str) -> Result<ContinueToken, ApiError> {
    let invalid = |why: String| ApiError::bad_request(format!("invalid continue token: {why}"));
    let raw = base64_decode(token).ok_or_else(|| invalid("continue key is not valid: illegal base64 data".into()))?;
    let wire: Wire = serde_json::from_slice(&raw).map_err(|e| invalid(format!("continue key is not valid: {e}")))?;
    if wire.v != TOKEN_VERSION {
        return Err(invalid(format!(
            "continue key is not valid: server does not recognize this encoded version {:?}",
            wire.v
        )));
    }
    if wire.rv == 0 || wire.rv < -1 {
        return Err(invalid(format!(
            "continue key is not valid: incorrect encoded start resourceVersion (version {TOKEN_VERSION})"
        )));
    }
    if wire.start.is_empty() {
        return Err(invalid(format!("continue key is not valid: encoded start key empty (version {TOKEN_VERSION})")));
    }
    // As kube-apiserver: the start key must be a clean relative path, so that prefixing
    // it cannot range over anything outside the collection.
    let key = if wire.start.starts_with('/') { wire.start.clone() } else { format!("/{}", wire.start) };
    if !is_clean_path(&key) {
        return Err(invalid(format!("continue key is not valid: {}", wire.start)));
    }
    // A count belongs to the snapshot at rv; "the newest state" has none.
    let remaining = wire.remaining.filter(|_| wire.rv > 0);
    Ok(ContinueToken { rv: wire.rv, from_key: format!("{prefix}{}", &key[1..]), remaining })
}

/// Whether `p` (starting with `/`) is what Go's `path.Clean` would leave unchanged.
fn is_clean_path(p: &str) -> bool {
    if p == "/" {
        return true;
    }
    if p.ends_with('/') {
        return false;
    }
    p[1..].split('/').all(|seg| !seg.is_empty() && seg != "." && seg != "..")
}

/// The greatest practical string below `k`: scanning strictly after it starts at `k`.
/// Exact for keys ending in NUL (what tokens carry): the key without it.
fn just_before(k: &str) -> String {
    let mut s = k.to_string();
    match s.pop() {
        None => String::new(),
        Some('\0') => s,
        Some(c) => {
            // k = p + c: every string between p + (c-1) + U+10FFFF... and k would have to
            // start with p + (c-1) + U+10FFFF, which no storage key does.
            let prev = char::from_u32(c as u32 - 1).unwrap_or('\0');
            s.push(prev);
            s.push(char::MAX);
            s
        }
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 with the URL-safe alphabet and no padding (Go's `base64.RawURLEncoding`).
pub(crate) fn base64_url_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// Decodes base64 leniently: either alphabet, padding optional. None if malformed.
pub(crate) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A lone sixth bit group cannot come from whole bytes.
    if bits >= 6 {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "/registry/core/configmaps/";

    #[test]
    fn tokens_have_kubes_shape() {
        let t = encode(P, "/registry/core/configmaps/default/b", 12, None);
        assert_eq!(t, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIsInN0YXJ0IjoiZGVmYXVsdC9iXHUwMDAwIn0");
        assert!(!t.contains('=') && !t.contains('+') && !t.contains('/'));
        let raw = String::from_utf8(base64_decode(&t).unwrap()).unwrap();
        assert_eq!(raw, r#"{"v":"meta.k8s.io/v1","rv":12,"start":"default/b\u0000"}"#);
        let d = decode(&t, P).unwrap();
        assert_eq!(
            d,
            ContinueToken { rv: 12, from_key: "/registry/core/configmaps/default/b\0".into(), remaining: None }
        );
        assert_eq!(d.start_after(), "/registry/core/configmaps/default/b");
        let d = decode(&encode_from(P, "/registry/core/configmaps/default/b\0", -1), P).unwrap();
        assert_eq!((d.rv, d.start_after().as_str()), (-1, "/registry/core/configmaps/default/b"));
    }

    #[test]
    fn a_token_carries_the_count_of_its_snapshot_only() {
        let t = encode(P, "/registry/core/configmaps/default/b", 12, Some(40));
        let raw = String::from_utf8(base64_decode(&t).unwrap()).unwrap();
        assert_eq!(raw, r#"{"v":"meta.k8s.io/v1","rv":12,"start":"default/b\u0000","remaining":40}"#);
        assert_eq!(decode(&t, P).unwrap().remaining, Some(40));
        // kube-apiserver's tokens have none; "the newest state" keeps none.
        let kube = base64_url_encode(br#"{"v":"meta.k8s.io/v1","rv":12,"start":"default/b\u0000"}"#);
        assert_eq!(decode(&kube, P).unwrap().remaining, None);
        let newest = base64_url_encode(br#"{"v":"meta.k8s.io/v1","rv":-1,"start":"default/b","remaining":3}"#);
        assert_eq!(decode(&newest, P).unwrap().remaining, None);
    }

    #[test]
    fn bad_tokens_are_bad_requests() {
        let enc = |s: &str| base64_url_encode(s.as_bytes());
        for (token, msg) in [
            ("%%%".to_string(), "invalid continue token: continue key is not valid: illegal base64 data"),
            (enc("nope"), "invalid continue token: continue key is not valid: expected ident at line 1 column 2"),
            (
                enc(r#"{"v":"x","rv":1,"start":"a"}"#),
                "invalid continue token: continue key is not valid: server does not recognize this encoded version \"x\"",
            ),
            (
                enc(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#),
                "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version \
                 meta.k8s.io/v1)",
            ),
            (
                enc(r#"{"v":"meta.k8s.io/v1","rv":3,"start":""}"#),
                "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)",
            ),
            (
                enc(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../secrets/x"}"#),
                "invalid continue token: continue key is not valid: ../secrets/x",
            ),
        ] {
            let e = decode(&token, P).unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (400, msg), "{token}");
        }
    }

    #[test]
    fn base64_round_trips() {
        for n in 0..20 {
            let data: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            assert_eq!(base64_decode(&base64_url_encode(&data)).unwrap(), data);
        }
        assert_eq!(base64_url_encode(b"\xfb\xff"), "-_8");
        assert_eq!(base64_decode("+/8=").unwrap(), b"\xfb\xff");
        assert_eq!(base64_decode("A"), None);
        assert_eq!(just_before("ab"), format!("aa{}", char::MAX));
    }
}
