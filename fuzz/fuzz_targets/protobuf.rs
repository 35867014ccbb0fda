//! Protobuf envelopes (`k8s\0` + runtime.Unknown) and watch frames, decoded to JSON and,
//! when that works, encoded back.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok((_, _, object)) = kuorum_protobuf::decode(data) {
        let _ = kuorum_protobuf::encode(&object);
    }
    let _ = kuorum_protobuf::decode_watch_event(data);
    let _ = kuorum_protobuf::split_watch_frame(data);
});
