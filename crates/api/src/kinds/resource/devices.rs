//! What the resource.k8s.io kinds share: a claim's device requests (each named by a DNS
//! label, exactly one of `exactly` and `firstAvailable`, a device class, a known
//! allocation mode with a positive count) and their defaults (`ExactCount` of one).

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::kinds::{child, each, set_default, Object};
use crate::validation::{is_dns1123_label, is_dns1123_subdomain, BadValue, FieldError};

const ALLOCATION_MODES: &[&str] = &["All", "ExactCount"];

/// Defaults of the device claim at `devices` (a claim's `spec.devices`): each exact
/// request and each subrequest allocates `ExactCount`, one device.
pub(crate) fn claim_defaults(devices: &mut Object) {
    for request in each(devices, "requests") {
        if let Some(exactly) = child(request, "exactly") {
            request_defaults(exactly);
        }
        for sub in each(request, "firstAvailable") {
            request_defaults(sub);
        }
    }
}

fn request_defaults(request: &mut Object) {
    set_default(request, "allocationMode", json!("ExactCount"));
    if request.get("allocationMode").and_then(Value::as_str) == Some("ExactCount") {
        set_default(request, "count", json!(1));
    }
}

/// The requests of a device claim at `path` (`spec.devices`).
pub(crate) fn validate_claim(devices: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) {
    let requests = devices.and_then(|d| d.get("requests")).and_then(Value::as_array);
    let mut names = HashSet::new();
    for (i, request) in requests.into_iter().flatten().enumerate() {
        let p = format!("{path}.requests[{i}]");
        let name = request.get("name").and_then(Value::as_str).unwrap_or("");
        dns_label(name, &format!("{p}.name"), errs);
        if !name.is_empty() && !names.insert(name) {
            errs.push(FieldError::duplicate(&format!("{p}.name"), BadValue::Str(name.into())));
        }
        let exactly = request.get("exactly").filter(|e| e.is_object());
        let first = request.get("firstAvailable").and_then(Value::as_array);
        match (exactly, first) {
            (Some(_), Some(_)) => errs.push(FieldError::invalid_value(
                &p,
                BadValue::Raw("{\"exactly\", \"firstAvailable\"}".into()),
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
            )),
            (None, None) => {
                errs.push(FieldError::required(&p, "exactly one of `exactly` or `firstAvailable` is required"))
            }
            (Some(e), None) => validate_request(e, &format!("{p}.exactly"), errs),
            (None, Some(subs)) => {
                if subs.is_empty() {
                    errs.push(FieldError::required(&format!("{p}.firstAvailable"), ""));
                }
                for (j, sub) in subs.iter().enumerate() {
                    let sp = format!("{p}.firstAvailable[{j}]");
                    dns_label(sub.get("name").and_then(Value::as_str).unwrap_or(""), &format!("{sp}.name"), errs);
                    validate_request(sub, &sp, errs);
                }
            }
        }
    }
}

/// A request's device class (a DNS subdomain), allocation mode and count.
fn validate_request(request: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let class = request.get("deviceClassName").and_then(Value::as_str).unwrap_or("");
    let class_path = format!("{path}.deviceClassName");
    if class.is_empty() {
        errs.push(FieldError::required(&class_path, ""));
    }
    for msg in is_dns1123_subdomain(class).into_iter().filter(|_| !class.is_empty()) {
        errs.push(FieldError::invalid(&class_path, class, msg));
    }
    match request.get("allocationMode").and_then(Value::as_str).unwrap_or("") {
        "ExactCount" => {
            let count = request.get("count").and_then(Value::as_i64).unwrap_or(0);
            if count <= 0 {
                errs.push(FieldError::invalid_value(
                    &format!("{path}.count"),
                    BadValue::Raw(count.to_string()),
                    "must be greater than zero",
                ));
            }
        }
        "All" => {}
        other => errs.push(FieldError::not_supported(&format!("{path}.allocationMode"), other, ALLOCATION_MODES)),
    }
    for (i, s) in request.get("selectors").and_then(Value::as_array).into_iter().flatten().enumerate() {
        cel_selector(s, &format!("{path}.selectors[{i}]"), errs);
    }
}

/// A device selector needs its CEL expression (kuorum does not compile it).
pub(crate) fn cel_selector(selector: &Value, path: &str, errs: &mut Vec<FieldError>) {
    match selector.get("cel").filter(|c| c.is_object()) {
        None => errs.push(FieldError::required(&format!("{path}.cel"), "")),
        Some(cel) => {
            if cel.get("expression").and_then(Value::as_str).unwrap_or("").trim().is_empty() {
                errs.push(FieldError::required(&format!("{path}.cel.expression"), ""));
            }
        }
    }
}

/// Required, and a DNS label.
pub(crate) fn dns_label(name: &str, path: &str, errs: &mut Vec<FieldError>) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    for msg in is_dns1123_label(name) {
        errs.push(FieldError::invalid(path, name, msg));
    }
}

/// Required, and a DNS subdomain (a driver's or a class's name).
pub(crate) fn dns_subdomain(name: &str, path: &str, errs: &mut Vec<FieldError>) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    for msg in is_dns1123_subdomain(name) {
        errs.push(FieldError::invalid(path, name, msg));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_default_to_one_device_and_need_a_class() {
        let mut devices = json!({"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
            {"name": "nic", "firstAvailable": [{"name": "fast", "deviceClassName": "nic", "allocationMode": "All"}]}]})
        .as_object()
        .unwrap()
        .clone();
        claim_defaults(&mut devices);
        assert_eq!(devices["requests"][0]["exactly"]["allocationMode"], "ExactCount");
        assert_eq!(devices["requests"][0]["exactly"]["count"], 1);
        assert!(devices["requests"][1]["firstAvailable"][0].get("count").is_none());
        let mut errs = Vec::new();
        validate_claim(Some(&Value::Object(devices)), "spec.devices", &mut errs);
        assert!(errs.is_empty(), "{errs:?}");

        let bad = json!({"requests": [{"name": "GPU", "exactly": {"allocationMode": "Some"}}, {"name": "x"}]});
        validate_claim(Some(&bad), "spec.devices", &mut errs);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.devices.requests[0].name",
                "spec.devices.requests[0].exactly.deviceClassName",
                "spec.devices.requests[0].exactly.allocationMode",
                "spec.devices.requests[1]",
            ]
        );
    }
}
