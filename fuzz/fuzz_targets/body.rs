//! Request bodies: JSON, YAML or a protobuf envelope, picked by the first byte, decoded
//! as the verbs decode them. Bad input must be an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

const TYPES: [&str; 4] = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "text/plain"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, bytes)) = data.split_first() else { return };
    let _ = kuorum_rest::parse::body(TYPES[pick as usize % TYPES.len()], bytes);
});
