//! `TaintNodesByCondition`: a new Node is tainted `node.kubernetes.io/not-ready:NoSchedule`,
//! so nothing is scheduled to it before its kubelet reports it ready (the node lifecycle
//! controller then takes the taint off).

use serde_json::{json, Value};

use super::Attributes;
use crate::object::Object;

const NOT_READY: &str = "node.kubernetes.io/not-ready";
const EFFECT: &str = "NoSchedule";

pub(crate) fn admit(a: &Attributes, obj: &mut Object) {
    if !a.creates("", "nodes") {
        return;
    }
    let spec = obj.entry("spec").or_insert_with(|| json!({}));
    let Some(spec) = spec.as_object_mut() else { return };
    let taints = spec.entry("taints").or_insert_with(|| json!([]));
    if taints.is_null() {
        *taints = json!([]);
    }
    let Some(list) = taints.as_array_mut() else { return };
    let field = |t: &Value, f: &str| t.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    if !list.iter().any(|t| field(t, "key") == NOT_READY && field(t, "effect") == EFFECT) {
        list.push(json!({"key": NOT_READY, "effect": EFFECT}));
    }
}
