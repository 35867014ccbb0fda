//! Server-side apply: the input is an apply configuration in YAML (as
//! `application/apply-patch+yaml` sends it), decoded as a YAML body is and applied, forced
//! or not by the first byte, to a live Deployment that another manager owns fields of.
#![no_main]
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let Ok(config) = kuorum_rest::parse::body("application/yaml", body) else { return };
    let Some(schema) = kuorum_schema::Schemas::builtin().kind("apps", "v1", "Deployment") else { return };
    let w = kuorum_fieldmanager::Writer {
        manager: "kubectl",
        api_version: "apps/v1",
        subresource: "",
        time: "2026-11-26T20:00:00Z",
    };
    let live = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}}},
    });
    let Ok(live) = kuorum_fieldmanager::update(schema, None, live, &w) else { return };
    let w = kuorum_fieldmanager::Writer { manager: "applier", ..w };
    let _ = kuorum_fieldmanager::apply(schema, Some(&live), &Value::Object(config), &w, pick & 1 == 1);
});
