//! Owns each request's id and its log lines. Every request gets an id, kube-apiserver's
//! `Audit-Id`: the one the client sent, if it sent a usable one, else a new UUID. It is
//! answered in the `Audit-Id` response header. A request the server failed (5xx) is
//! logged at warn level with its id, method, path, status and duration. At debug level
//! (`RUST_LOG=kuorum_rest=debug`) the id also names a span the request is served in, so
//! every line logged while serving it carries `request{id=... user=...}`, and every
//! served request is logged with its status and duration.
//!
//! Ids are not drawn from the node's entropy seam: they never influence what the server
//! does, and drawing them there would shift every simulated run's random choices.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use axum::extract::Request;
use axum::http::{HeaderValue, Method};
use axum::response::Response;

/// The header kube-apiserver names a request's id in.
pub const AUDIT_ID: &str = "audit-id";

/// A new id: UUID-shaped, unique within the process (a counter) and across processes
/// (a random half).
fn new_id() -> String {
    // The first three groups name the process and never change; only the counter's two
    // groups are written per request (a `format!` of all five was 0.4% of a create's CPU).
    static PREFIX: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| {
        let seed = RandomState::new().hash_one(std::process::id());
        format!("{:08x}-{:04x}-4{:03x}-", seed >> 32, (seed >> 16) & 0xFFFF, seed & 0xFFF)
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut id = String::with_capacity(36);
    id.push_str(prefix);
    push_hex(&mut id, 0x8000 | ((n >> 48) & 0x3FFF), 4);
    id.push('-');
    push_hex(&mut id, n & 0xFFFF_FFFF_FFFF, 12);
    id
}

/// Appends the low `digits` hex digits of `v`, most significant first.
fn push_hex(s: &mut String, v: u64, digits: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for i in (0..digits).rev() {
        s.push(HEX[((v >> (4 * i)) & 0xF) as usize] as char);
    }
}

/// A client's id is kept if it is short and printable (it goes into logs and headers).
fn usable(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A request being served: what its log line and `Audit-Id` need.
pub(crate) struct Traced {
    id: String,
    pub(crate) span: tracing::Span,
    method: Method,
    path: String,
    started: tokio::time::Instant,
}

impl Traced {
    /// The request's `Audit-Id`.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }
}

/// Gives `req` its id and span (see the module docs); [`end`] logs it as answered.
pub(crate) fn begin(req: &Request) -> Traced {
    let id = match req.headers().get(AUDIT_ID).and_then(|v| v.to_str().ok()) {
        Some(given) if usable(given) => given.to_string(),
        _ => new_id(),
    };
    // A debug-level span: at the default level (info) it costs nothing per request (an
    // info span was 8% more CPU per create, measured); the failure line names the id.
    let span = tracing::debug_span!(
        "request",
        id = %id,
        method = %req.method(),
        path = %req.uri().path(),
        user = tracing::field::Empty,
    );
    Traced {
        id,
        span,
        method: req.method().clone(),
        path: req.uri().path().to_string(),
        started: tokio::time::Instant::now(),
    }
}

/// Logs the request as answered with `resp` and names its id in the response.
pub(crate) fn end(t: Traced, mut resp: Response) -> Response {
    let status = resp.status().as_u16();
    let micros = t.started.elapsed().as_micros() as u64;
    let (id, method, path) = (&t.id, &t.method, &t.path);
    t.span.in_scope(|| {
        if status >= 500 {
            tracing::warn!(id = %id, %method, path, status, micros, "request failed");
        } else {
            tracing::debug!(status, micros, "served");
        }
    });
    if let Ok(v) = HeaderValue::from_str(&t.id) {
        resp.headers_mut().insert(AUDIT_ID, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_uuids_and_only_tidy_client_ids_are_kept() {
        let (a, b) = (new_id(), new_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
        assert_eq!(a[..24], b[..24], "one process, one prefix");
        let (n, m) = (u64::from_str_radix(&a[24..], 16).unwrap(), u64::from_str_radix(&b[24..], 16).unwrap());
        // Other tests running at once may take ids in between.
        assert!(m > n, "{a} then {b}");
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()), "{a}");
        assert_eq!(&a[14..15], "4");
        let mut s = String::new();
        push_hex(&mut s, 0x8abc, 4);
        push_hex(&mut s, 0x1f, 12);
        assert_eq!(s, "8abc00000000001f");
        assert!(usable("0f5e1c2a-aaaa-4bbb-8ccc-123456789abc"));
        assert!(!usable("two words"));
        assert!(!usable(&"x".repeat(65)));
        assert!(!usable(""));
    }
}
