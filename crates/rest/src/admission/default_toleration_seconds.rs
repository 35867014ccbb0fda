//! `DefaultTolerationSeconds`: a new pod that does not tolerate the `not-ready` and
//! `unreachable` NoExecute taints gets to, for 300 seconds (kube's
//! `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`),
//! so a node that goes away evicts its pods after five minutes, not at once.

use serde_json::{json, Value};

use super::Attributes;
use crate::object::Object;

const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const SECONDS: i64 = 300;

pub(crate) fn admit(a: &Attributes, obj: &mut Object) {
    if !a.creates("", "pods") {
        return;
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    let Some(list) = tolerations.as_array_mut() else { return };
    // kube: an empty key or effect tolerates every key or effect.
    let tolerates = |list: &[Value], key: &str| {
        list.iter().any(|t| {
            let field = |f: &str| t.get(f).and_then(Value::as_str).unwrap_or("");
            (field("key") == key || field("key").is_empty()) && matches!(field("effect"), "NoExecute" | "")
        })
    };
    for key in [NOT_READY, UNREACHABLE] {
        if !tolerates(list, key) {
            list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": SECONDS}));
        }
    }
}
