//! Query strings, the whole input as what follows `?`: every option a list, watch or write
//! reads from it, the request as authorization and routing read it (one parse), and the
//! label and field selectors it carries, parsed and matched.
#![no_main]
use kuorum_api::selector::{FieldSelector, LabelSelector};
use kuorum_rest::query::Query;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

/// The fields a pod can be selected by.
const POD_FIELDS: &[&str] = &["spec.nodeName", "status.phase", "spec.hostNetwork"];

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else { return };
    let _ = kuorum_rest::parse::query(raw);
    for (method, path) in [("GET", "/api/v1/namespaces/default/configmaps"), ("DELETE", "/api/v1/configmaps")] {
        let _ = kuorum_rest::parse::path(method, path, raw);
    }
    let q = Query::parse(Some(raw));
    if let Ok(sel) = LabelSelector::parse(q.get("labelSelector").unwrap_or("")) {
        let labels = json!({"app": "web", "n": "5"});
        let _ = sel.matches(labels.as_object());
    }
    if let Ok(sel) = FieldSelector::parse(q.get("fieldSelector").unwrap_or(""), POD_FIELDS) {
        let _ = sel.matches(&json!({"metadata": {"name": "p"}, "status": {"phase": "Running"}}));
    }
});
