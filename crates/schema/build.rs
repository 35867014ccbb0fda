//! Compiles `proto/openapiv2.proto` (gnostic's OpenAPI v2 messages, as far as
//! `/openapi/v2` emits them) into Rust types with prost-build, which runs `protoc`
//! (PROTOC, or `protoc` on PATH; the project's setup installs Debian's `protobuf-compiler`).

fn main() {
    println!("cargo:rerun-if-changed=proto/openapiv2.proto");
    println!("cargo:rerun-if-env-changed=PROTOC");
    prost_build::Config::new().compile_protos(&["proto/openapiv2.proto"], &["proto"]).unwrap_or_else(|e| {
        panic!("compiling proto/openapiv2.proto failed ({e}); install protoc (Debian: protobuf-compiler) or set PROTOC")
    });
}
