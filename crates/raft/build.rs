fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=../../proto/peer.proto");
    // A vendored protoc, so a fresh machine needs no system package for it.
    if std::env::var_os("PROTOC").is_none() {
        std::env::set_var("PROTOC", protoc_bin_vendored::protoc_bin_path()?);
    }
    tonic_prost_build::configure().bytes(".").compile_protos(&["../../proto/peer.proto"], &["../../proto"])?;
    Ok(())
}
