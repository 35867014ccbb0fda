//! Label and field selectors (`labelSelector=`, `fieldSelector=`), parsed and matched.
#![no_main]
use kuorum_api::selector::{FieldSelector, LabelSelector};
use libfuzzer_sys::fuzz_target;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(sel) = LabelSelector::parse(s) {
        let labels = json!({"app": "web", "tier": "front"});
        let _ = sel.matches(labels.as_object());
    }
    for kind in ["Pod", "Secret", "ConfigMap"] {
        let fields = kuorum_api::kinds::builtin("", kind).map_or(&[][..], |k| k.selectable_fields());
        let _ = FieldSelector::parse(s, fields);
    }
});
