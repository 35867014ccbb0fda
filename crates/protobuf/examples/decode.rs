//! Prints protobuf bodies (files holding `k8s\0`-enveloped objects) as JSON:
//! `cargo run -p kuorum-protobuf --example decode -- body.bin...`

fn main() {
    let mut failed = false;
    for path in std::env::args().skip(1) {
        let result = std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|body| kuorum_protobuf::decode(&body).map_err(|e| e.to_string()));
        match result {
            Ok((_, _, object)) => println!("{}", serde_json::to_string_pretty(&object).unwrap_or_default()),
            Err(e) => {
                eprintln!("{path}: {e}");
                failed = true;
            }
        }
    }
    std::process::exit(i32::from(failed));
}
