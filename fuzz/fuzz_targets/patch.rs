//! The patch formats: JSON Patch, JSON merge patch and strategic merge patch (with the
//! Deployment schema's merge keys), applied to a fixed object; the first byte picks the
//! format. (Server-side apply bodies are decoded by the body target.)
#![no_main]
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let original = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a"]},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                                                       "env": [{"name": "A", "value": "1"}]}]}}},
    });
    match pick % 3 {
        0 => {
            let _ = kuorum_patch::json_patch(&original, body);
        }
        1 => {
            let _ = kuorum_patch::merge_patch(&original, body);
        }
        _ => {
            let schema = kuorum_schema::Schemas::builtin().kind("apps", "v1", "Deployment").expect("Deployment schema");
            let _ = kuorum_patch::strategic_merge_patch(&original, body, schema);
        }
    }
});
