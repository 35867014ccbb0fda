//! Compiles the vendored Kubernetes `generated.proto` files (see README.md) into one
//! FileDescriptorSet with `protoc` (PROTOC, or `protoc` on PATH; the project's setup installs
//! Debian's `protobuf-compiler`). The crate decodes it at run time with prost-reflect: no Rust
//! types are generated.

use std::path::PathBuf;
use std::process::Command;

/// The files compiled (every group's GA version vendored); their imports come along
/// (`--include_imports`).
const FILES: &[&str] = &[
    "api/core/v1/generated.proto",
    "api/admissionregistration/v1/generated.proto",
    "api/apps/v1/generated.proto",
    "api/authentication/v1/generated.proto",
    "api/authorization/v1/generated.proto",
    "api/autoscaling/v1/generated.proto",
    "api/autoscaling/v2/generated.proto",
    "api/batch/v1/generated.proto",
    "api/certificates/v1/generated.proto",
    "api/coordination/v1/generated.proto",
    "api/discovery/v1/generated.proto",
    "api/events/v1/generated.proto",
    "api/flowcontrol/v1/generated.proto",
    "api/networking/v1/generated.proto",
    "api/node/v1/generated.proto",
    "api/policy/v1/generated.proto",
    "api/rbac/v1/generated.proto",
    "api/resource/v1/generated.proto",
    "api/scheduling/v1/generated.proto",
    "api/storage/v1/generated.proto",
    "kube_aggregator/pkg/apis/apiregistration/v1/generated.proto",
    "apimachinery/pkg/apis/meta/v1/generated.proto",
];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let proto = manifest.join("proto");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("k8s.fds");
    println!("cargo:rerun-if-changed=proto");
    println!("cargo:rerun-if-env-changed=PROTOC");
    let protoc = std::env::var_os("PROTOC").unwrap_or_else(|| "protoc".into());
    let mut cmd = Command::new(&protoc);
    cmd.arg("--include_imports").arg(format!("--proto_path={}", proto.display()));
    cmd.arg(format!("--descriptor_set_out={}", out.display()));
    cmd.args(FILES);
    let status = cmd.status().unwrap_or_else(|e| {
        panic!("running {protoc:?} failed ({e}); install protoc (Debian: protobuf-compiler) or set PROTOC")
    });
    assert!(status.success(), "{protoc:?} failed on the vendored protos: {status}");
}
