//! What arrives before a body: the path (as authorization and the router read it), the
//! query string with every option read from it, a continue token, an Accept header.
//! The input is split on newlines into those parts.
#![no_main]
use libfuzzer_sys::fuzz_target;

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    let mut parts = s.splitn(4, '\n');
    let path = parts.next().unwrap_or("");
    let query = parts.next().unwrap_or("");
    let token = parts.next().unwrap_or("");
    let accept = parts.next().unwrap_or("");
    let method = METHODS[path.len() % METHODS.len()];
    let _ = kuorum_rest::parse::path(method, path, query);
    let _ = kuorum_rest::parse::query(query);
    let _ = kuorum_rest::parse::continue_token(token, "/registry/core/configmaps/default/");
    let _ = kuorum_rest::parse::accept(accept);
});
