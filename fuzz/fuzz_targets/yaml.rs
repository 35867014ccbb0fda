//! YAML request bodies (`Content-Type: application/yaml`), the whole input as the body:
//! the decoder every YAML write and server-side apply runs, with its nesting (flow and
//! block), anchors and aliases, tags and multi-document streams. Bad input must be an
//! error, never a panic, a hang or a runaway allocation.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = kuorum_rest::parse::body("application/yaml", data);
});
