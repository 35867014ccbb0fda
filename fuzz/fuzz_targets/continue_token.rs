//! Continue tokens. The input is the token's JSON (`{"v":"meta.k8s.io/v1","rv":N,
//! "start":"..."}`), base64-encoded here as clients send it, so that the fuzzer explores
//! what is inside the token and not only its base64; the input is also tried as a raw
//! token.
#![no_main]
use libfuzzer_sys::fuzz_target;

const PREFIX: &str = "/registry/core/configmaps/";

fn base64url(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(data.len() * 4 / 3 + 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..=chunk.len() {
            out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    if let Ok(start) = kuorum_rest::parse::continue_token(&base64url(data), PREFIX) {
        // A token may only ever resume inside its collection: the scan starts after
        // `start`, which lies between just below the prefix and the prefix's end.
        assert!(
            start.as_str() >= "/registry/core/configmaps." && start.as_str() < "/registry/core/configmaps0",
            "{start:?}"
        );
    }
    if let Ok(raw) = std::str::from_utf8(data) {
        let _ = kuorum_rest::parse::continue_token(raw, PREFIX);
    }
});
