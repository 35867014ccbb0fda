//! Owns what a write does with an object's fields before it is stored:
//!
//! - typed decoding: a value the kind's Go type cannot hold is a 400, as kube-apiserver
//!   cannot decode it; and the metadata limits of `ValidateObjectMeta` (label and
//!   annotation syntax, 256 KiB of annotations, owner references, finalizers), a 422;
//! - `fieldValidation` (`Ignore`, `Warn` — the default — or `Strict`): fields the kind's
//!   schema (a custom resource's: its version's `openAPIV3Schema`) does not know, and
//!   keys repeated in the body. They are dropped as
//!   kube-apiserver's typed decoding drops them; `Warn` answers one `Warning` header per
//!   field, `Strict` answers 400 naming all of them.
//! - the field manager: `fieldManager`, or the User-Agent's product name, as kube-apiserver
//!   defaults it.
//! - `metadata.managedFields`, recorded through `kuorum-fieldmanager` for every create,
//!   update and patch.

use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use kuorum_api::validation::{validate_object_meta, FieldError};
use kuorum_api::{ApiError, GroupKind, ResourceDef};
use kuorum_fieldmanager::Writer;
use kuorum_schema::unknown::{duplicate_fields, Typing};
use kuorum_schema::{Schema, Schemas};
use serde_json::Value;

use crate::object::Object;
use crate::query::Query;
use crate::target::Target;

/// The longest field manager name kube-apiserver accepts.
const MAX_MANAGER_LEN: usize = 128;

/// What to do with unknown and duplicate fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    /// The `fieldValidation` parameter; `options` names the options kind in the 422 an
    /// unsupported value gets (`CreateOptions`, `UpdateOptions`, `PatchOptions`).
    pub fn parse(q: &Query, options: &str) -> Result<FieldValidation, ApiError> {
        match q.get("fieldValidation").unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(options_invalid(
                options,
                FieldError::not_supported("fieldValidation", other, &["", "Ignore", "Strict", "Warn"]),
            )),
        }
    }
}

/// A 422 about the request's options (`PatchOptions.meta.k8s.io "" is invalid: ...`).
pub(crate) fn options_invalid(options: &str, error: FieldError) -> ApiError {
    ApiError::invalid(GroupKind { group: "meta.k8s.io", kind: options }, "", &[error])
}

/// The schema of a built-in kind.
pub(crate) fn schema_of(def: &ResourceDef) -> Option<Schema<'static>> {
    Schemas::builtin().kind(def.group, def.version, def.kind)
}

/// Checks the fields of `obj` against its kind's schema in one walk, and its metadata:
///
/// - a value the kind's Go type cannot hold (`labels: {"a": 1}`, `replicas: 1.5`) is a
///   400, in kube-apiserver's words (`ConfigMap in version "v1" cannot be handled as a
///   ConfigMap: json: cannot unmarshal number into Go struct field ...`): typed clients
///   could not read the object back. For a custom resource, only its `metadata` is typed
///   here; its schema's own validation checks the rest;
/// - fields the schema does not declare are dropped, as kube-apiserver's typed decoding
///   drops them; `body` (the raw request body, when it is the object itself) is also
///   checked for repeated keys. Under `Strict` any such field is a 400; under `Warn` they
///   are the warnings returned;
/// - labels, annotations (their keys, and 256 KiB in all), owner references, finalizers
///   and generation are checked as `ValidateObjectMeta` checks them, and a built-in
///   kind's replicas and ports for their ranges: a 422.
pub(crate) fn check_fields(
    t: &Target,
    obj: &mut Object,
    body: Option<&[u8]>,
    mode: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let def = t.def;
    let cannot_decode = |why: &str| {
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {why}",
            kind = def.kind,
            version = def.version,
        ))
    };
    let mut problems: Vec<String> =
        body.map(duplicate_fields).unwrap_or_default().iter().map(|f| format!("duplicate field {f:?}")).collect();
    if let Some(schema) = t.schema() {
        let typing = match t.custom {
            None => Typing::Builtin,
            Some(_) => Typing::Metadata { kind: def.kind },
        };
        let mut value = Value::Object(std::mem::take(obj));
        let checked = kuorum_schema::unknown::check_fields(schema, &mut value, typing);
        if let Value::Object(o) = value {
            *obj = o;
        }
        if let Some(why) = checked.decode_error {
            return Err(cannot_decode(&why));
        }
        problems.extend(checked.unknown.iter().map(|f| format!("unknown field {f:?}")));
    }
    if mode == FieldValidation::Strict && !problems.is_empty() {
        return Err(cannot_decode(&format!("strict decoding error: {}", problems.join(", "))));
    }
    let meta = obj.get("metadata").and_then(Value::as_object);
    let errs = meta.map(validate_object_meta).unwrap_or_default();
    if !errs.is_empty() {
        let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("");
        return Err(ApiError::invalid(def.group_kind(), name, &errs));
    }
    match mode {
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Ignore | FieldValidation::Strict => Ok(Vec::new()),
    }
}

/// The field manager of a write: `fieldManager`, else the User-Agent's product name
/// (`kubectl/v1.37.1 (linux/amd64)` → `kubectl`). Apply requires the parameter.
pub(crate) fn manager(q: &Query, headers: &HeaderMap, options: &str, apply: bool) -> Result<String, ApiError> {
    let name = match q.get("fieldManager").filter(|m| !m.is_empty()) {
        Some(m) => m.to_string(),
        None if apply => {
            return Err(options_invalid(options, FieldError::required("fieldManager", "is required for apply patch")))
        }
        None => {
            let ua = headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
            ua.split('/').next().unwrap_or("").trim().chars().take(MAX_MANAGER_LEN).collect()
        }
    };
    if name.chars().count() > MAX_MANAGER_LEN {
        return Err(options_invalid(
            options,
            FieldError::invalid("fieldManager", &name, format!("may not be longer than {MAX_MANAGER_LEN}")),
        ));
    }
    if name.chars().any(|c| c.is_control()) {
        return Err(options_invalid(
            options,
            FieldError::invalid("fieldManager", &name, "must only contain printable characters"),
        ));
    }
    Ok(name)
}

/// Records an Update (create, PUT, or a non-apply PATCH) by `manager` in `new`'s
/// managedFields. Kinds without a schema keep what they have.
pub(crate) fn track_update(
    t: &Target,
    old: Option<&Object>,
    new: Object,
    manager: &str,
    subresource: &str,
    now: &str,
) -> Result<Object, ApiError> {
    let def = t.def;
    let Some(schema) = t.schema() else { return Ok(new) };
    let name = crate::object::meta_str(&new, "name").unwrap_or("").to_string();
    let name = name.as_str();
    let old = old.map(|o| Value::Object(o.clone()));
    let api_version = def.api_version();
    let w = Writer { manager, api_version: &api_version, subresource, time: now };
    match kuorum_fieldmanager::update(schema, old.as_ref(), Value::Object(new), &w) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(ApiError::internal("field tracking returned a non-object")),
        Err(kuorum_fieldmanager::FieldManagerError::Invalid(msg)) => {
            Err(ApiError::invalid(def.group_kind(), name, &[FieldError::invalid("metadata.managedFields", "", msg)]))
        }
    }
}

/// Adds one `Warning: 299 - "<text>"` header per warning.
pub(crate) fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - {}", serde_json::to_string(w).unwrap_or_default());
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuorum_api::registry;
    use serde_json::json;

    fn cm() -> Target {
        let def: &'static ResourceDef = registry::lookup("", "v1", "configmaps").unwrap();
        Target { def, namespace: None, name: None, subresource: None, custom: None }
    }

    #[test]
    fn field_validation_modes() {
        let body = br#"{"metadata": {"name": "x"}, "data": {"a": "1"}, "dat": 1, "data": {"a": "2"}}"#;
        let obj = || serde_json::from_slice::<Value>(body).unwrap().as_object().unwrap().clone();

        let mut o = obj();
        let warnings = check_fields(&cm(), &mut o, Some(body), FieldValidation::Warn).unwrap();
        assert_eq!(warnings, vec![r#"duplicate field "data""#, r#"unknown field "dat""#]);
        assert_eq!(Value::Object(o), json!({"metadata": {"name": "x"}, "data": {"a": "2"}}));

        let mut o = obj();
        assert!(check_fields(&cm(), &mut o, Some(body), FieldValidation::Ignore).unwrap().is_empty());
        assert!(o.get("dat").is_none(), "Ignore still drops unknown fields");

        let e = check_fields(&cm(), &mut obj(), Some(body), FieldValidation::Strict).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data", unknown field "dat""#
        );
    }

    #[test]
    fn field_validation_parameter() {
        assert_eq!(FieldValidation::parse(&Query::parse(None), "CreateOptions").unwrap(), FieldValidation::Warn);
        assert_eq!(
            FieldValidation::parse(&Query::parse(Some("fieldValidation=Strict")), "CreateOptions").unwrap(),
            FieldValidation::Strict
        );
        let e = FieldValidation::parse(&Query::parse(Some("fieldValidation=strict")), "CreateOptions").unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.starts_with(
                r#"CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict""#
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn manager_names() {
        let mut h = HeaderMap::new();
        h.insert(header::USER_AGENT, HeaderValue::from_static("kubectl/v1.37.1 (linux/amd64) kubernetes/abc"));
        assert_eq!(manager(&Query::parse(None), &h, "UpdateOptions", false).unwrap(), "kubectl");
        assert_eq!(manager(&Query::parse(Some("fieldManager=me")), &h, "UpdateOptions", false).unwrap(), "me");
        let e = manager(&Query::parse(None), &h, "PatchOptions", true).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                r#"PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch"#
            )
        );
        let long = format!("fieldManager={}", "m".repeat(129));
        assert_eq!(manager(&Query::parse(Some(&long)), &h, "PatchOptions", true).unwrap_err().code, 422);
    }
}
