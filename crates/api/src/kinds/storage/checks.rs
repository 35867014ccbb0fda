//! The checks several storage kinds share, with kube-apiserver's messages: a provisioner
//! or driver name (a qualified name, read lowercased), provisioner parameters, a CSI driver
//! name, and the "is default class" annotations the printers mark.

use serde_json::Value;

use crate::kinds::common::at;
use crate::kinds::Object;
use crate::validation::{is_dns1123_subdomain, is_qualified_name, BadValue, FieldError};

/// At most this many parameters, of at most this many bytes together.
const MAX_PARAMETERS: usize = 512;
const MAX_PARAMETERS_SIZE: usize = 256 * 1024;

/// `validateProvisioner`: required, and a qualified name once lowercased.
pub fn provisioner(obj: &Object, field: &str, errs: &mut Vec<FieldError>) {
    let value = obj.get(field).and_then(Value::as_str).unwrap_or("");
    if value.is_empty() {
        errs.push(FieldError::required(field, ""));
        return;
    }
    let lower = value.to_lowercase();
    for msg in is_qualified_name(&lower) {
        errs.push(FieldError::invalid(field, &lower, msg));
    }
}

/// `validateParameters`: no empty key, not too many, not too large, and (unless
/// `allow_empty`) at least one.
pub fn parameters(obj: &Object, allow_empty: bool, errs: &mut Vec<FieldError>) {
    let params = obj.get("parameters").and_then(Value::as_object);
    let len = params.map_or(0, |p| p.len());
    if len > MAX_PARAMETERS {
        errs.push(FieldError::too_long("parameters", MAX_PARAMETERS as i64));
        return;
    }
    let mut size = 0;
    for (k, v) in params.into_iter().flatten() {
        if k.is_empty() {
            errs.push(FieldError::invalid("parameters", k, "field can not be empty."));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > MAX_PARAMETERS_SIZE {
        errs.push(FieldError::too_long("parameters", MAX_PARAMETERS_SIZE as i64));
    }
    if !allow_empty && len == 0 {
        errs.push(FieldError::required("parameters", "must contain at least one key/value pair"));
    }
}

/// Parameters compared as kube compares them on update (absent and empty alike).
pub fn same_parameters(a: &Object, b: &Object) -> bool {
    let of = |o: &Object| at(o, "parameters").and_then(Value::as_object).cloned().unwrap_or_default();
    of(a) == of(b)
}

/// `ValidateCSIDriverName`: required, at most 63 characters, a DNS subdomain once
/// lowercased.
pub fn csi_driver_name(name: &str, path: &str, errs: &mut Vec<FieldError>) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    if name.len() > 63 {
        errs.push(FieldError::too_long(path, 63));
    }
    for msg in is_dns1123_subdomain(&name.to_lowercase()) {
        errs.push(FieldError::invalid(path, name, msg));
    }
}

/// A value as Go's `%#v` prints a field compared whole (best effort for JSON objects).
pub fn shown(v: Option<&Value>) -> BadValue {
    BadValue::of_json(v.unwrap_or(&Value::Null))
}

/// Whether `obj` carries `annotation: "true"` for one of `keys`.
pub fn annotated_default(obj: &Value, keys: &[&str]) -> bool {
    let annotations = obj.pointer("/metadata/annotations");
    keys.iter().any(|k| annotations.and_then(|a| a.get(*k)).and_then(Value::as_str) == Some("true"))
}
