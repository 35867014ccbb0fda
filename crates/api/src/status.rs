//! [`ApiError`]: every failure kuorum answers, as the `metav1.Status` kube-apiserver would
//! send, with its exact reason, code and message text.
//!
//! Constructors mirror `k8s.io/apimachinery/pkg/api/errors` (`NewNotFound`,
//! `NewConflict`, ...), because clients match on reasons and people read the messages.

use std::fmt;

use serde_json::{json, Map, Value};

use crate::registry::{GroupKind, GroupResource};
use crate::validation::FieldError;

/// The machine-readable reason of a failure (`metav1.StatusReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    AlreadyExists,
    Conflict,
    Gone,
    Expired,
    Invalid,
    MethodNotAllowed,
    NotAcceptable,
    RequestEntityTooLarge,
    UnsupportedMediaType,
    TooManyRequests,
    InternalError,
    ServiceUnavailable,
    Timeout,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BadRequest => "BadRequest",
            Reason::Unauthorized => "Unauthorized",
            Reason::Forbidden => "Forbidden",
            Reason::NotFound => "NotFound",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::Gone => "Gone",
            Reason::Expired => "Expired",
            Reason::Invalid => "Invalid",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::NotAcceptable => "NotAcceptable",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
            Reason::UnsupportedMediaType => "UnsupportedMediaType",
            Reason::TooManyRequests => "TooManyRequests",
            Reason::InternalError => "InternalError",
            Reason::ServiceUnavailable => "ServiceUnavailable",
            Reason::Timeout => "Timeout",
        }
    }

    /// The HTTP status code kube-apiserver pairs with this reason.
    pub fn code(self) -> u16 {
        match self {
            Reason::BadRequest => 400,
            Reason::Unauthorized => 401,
            Reason::Forbidden => 403,
            Reason::NotFound => 404,
            Reason::AlreadyExists | Reason::Conflict => 409,
            Reason::Gone | Reason::Expired => 410,
            Reason::Invalid => 422,
            Reason::MethodNotAllowed => 405,
            Reason::NotAcceptable => 406,
            Reason::RequestEntityTooLarge => 413,
            Reason::UnsupportedMediaType => 415,
            Reason::TooManyRequests => 429,
            Reason::InternalError => 500,
            Reason::ServiceUnavailable => 503,
            Reason::Timeout => 504,
        }
    }
}

/// One cause in `details.causes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// The cause type, e.g. `FieldValueInvalid`; empty when there is none.
    pub reason: String,
    pub message: String,
    /// The field path, e.g. `metadata.name`; empty when there is none.
    pub field: String,
}

/// `details` of a Status. Empty strings are left out of the JSON.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    pub name: String,
    pub group: String,
    /// The plural resource for most errors, the kind for `Invalid`.
    pub kind: String,
    pub uid: String,
    pub causes: Vec<Cause>,
    pub retry_after_seconds: u32,
}

/// A failed request, ready to become a `metav1.Status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub reason: Reason,
    /// The HTTP status code (normally `reason.code()`).
    pub code: u16,
    pub message: String,
    /// `None` leaves `details` out; `Some(Details::default())` sends `"details":{}`.
    pub details: Option<Box<Details>>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.reason.as_str(), self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

/// The message of a resourceVersion conflict on update.
pub const OBJECT_MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

fn resource_details(gr: GroupResource<'_>, name: &str) -> Details {
    Details { name: name.into(), group: gr.group.into(), kind: gr.resource.into(), ..Details::default() }
}

impl ApiError {
    /// An error with `reason`'s code and no details.
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        ApiError { reason, code: reason.code(), message: message.into(), details: None }
    }

    fn with_details(mut self, details: Details) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// A server-side apply conflict (409 Conflict): `message` as the field manager words
    /// it, one `FieldManagerConflict` cause per conflicting field (`(message, field)`).
    pub fn apply_conflict(gr: GroupResource<'_>, name: &str, message: String, causes: &[(String, String)]) -> Self {
        let causes = causes
            .iter()
            .map(|(m, f)| Cause { reason: "FieldManagerConflict".into(), message: m.clone(), field: f.clone() })
            .collect();
        ApiError::new(Reason::Conflict, message).with_details(Details {
            name: name.into(),
            group: gr.group.into(),
            kind: gr.resource.into(),
            causes,
            ..Details::default()
        })
    }

    /// `configmaps "x" not found` (404 NotFound).
    pub fn not_found(gr: GroupResource<'_>, name: &str) -> Self {
        ApiError::new(Reason::NotFound, format!("{gr} {name:?} not found")).with_details(resource_details(gr, name))
    }

    /// A path that names nothing kuorum serves (404 NotFound, empty details).
    pub fn path_not_found() -> Self {
        ApiError::new(Reason::NotFound, "the server could not find the requested resource")
            .with_details(Details::default())
    }

    /// Creating into a namespace that does not exist: `namespaces "x" not found` (404).
    pub fn namespace_not_found(namespace: &str) -> Self {
        ApiError::not_found(GroupResource { group: "", resource: "namespaces" }, namespace)
    }

    /// `configmaps "x" already exists` (409 AlreadyExists).
    pub fn already_exists(gr: GroupResource<'_>, name: &str) -> Self {
        ApiError::new(Reason::AlreadyExists, format!("{gr} {name:?} already exists"))
            .with_details(resource_details(gr, name))
    }

    /// `Operation cannot be fulfilled on configmaps "x": <why>` (409 Conflict).
    pub fn conflict_because(gr: GroupResource<'_>, name: &str, why: &str) -> Self {
        ApiError::new(Reason::Conflict, format!("Operation cannot be fulfilled on {gr} {name:?}: {why}"))
            .with_details(resource_details(gr, name))
    }

    /// A resourceVersion conflict: the object was modified since the client read it (409).
    pub fn conflict(gr: GroupResource<'_>, name: &str) -> Self {
        ApiError::conflict_because(gr, name, OBJECT_MODIFIED)
    }

    /// A delete precondition on resourceVersion failed (409 Conflict).
    pub fn rv_precondition_conflict(gr: GroupResource<'_>, name: &str, wanted: &str, actual: &str) -> Self {
        ApiError::conflict_because(
            gr,
            name,
            &format!(
                "the ResourceVersion in the precondition ({wanted}) does not match the ResourceVersion in \
                 record ({actual}). The object might have been modified"
            ),
        )
    }

    /// A uid precondition failed (409 Conflict):
    /// `Operation cannot be fulfilled on configmaps "x": Precondition failed: UID in
    /// precondition: A, UID in object meta: B`.
    pub fn uid_precondition_conflict(gr: GroupResource<'_>, name: &str, wanted: &str, actual: &str) -> Self {
        ApiError::conflict_because(
            gr,
            name,
            &format!("Precondition failed: UID in precondition: {wanted}, UID in object meta: {actual}"),
        )
    }

    /// 400 BadRequest with `message` as is.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(Reason::BadRequest, message)
    }

    /// 422 Invalid: `ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: ...`,
    /// one cause per field error.
    pub fn invalid(gk: GroupKind<'_>, name: &str, errors: &[FieldError]) -> Self {
        let summary = match errors {
            [one] => one.to_string(),
            many => format!("[{}]", many.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ")),
        };
        let causes = errors
            .iter()
            .map(|e| Cause { reason: e.kind.cause_type().into(), message: e.body(), field: e.field.clone() })
            .collect();
        ApiError::new(Reason::Invalid, format!("{gk} {name:?} is invalid: {summary}")).with_details(Details {
            name: name.into(),
            group: gk.group.into(),
            kind: gk.kind.into(),
            causes,
            ..Details::default()
        })
    }

    /// `configmaps "x" is forbidden: <why>` (403 Forbidden).
    pub fn forbidden(gr: GroupResource<'_>, name: &str, why: &str) -> Self {
        let message = if gr.resource.is_empty() && gr.group.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{gr} is forbidden: {why}")
        } else {
            format!("{gr} {name:?} is forbidden: {why}")
        };
        ApiError::new(Reason::Forbidden, message).with_details(resource_details(gr, name))
    }

    /// Creating into a namespace that is being deleted (403 Forbidden).
    pub fn namespace_terminating(gr: GroupResource<'_>, name: &str, namespace: &str) -> Self {
        ApiError::forbidden(
            gr,
            name,
            &format!("unable to create new content in namespace {namespace} because it is being terminated"),
        )
    }

    /// Deleting `default`, `kube-system` or `kube-public` (403 Forbidden).
    pub fn namespace_undeletable(name: &str) -> Self {
        ApiError::forbidden(
            GroupResource { group: "", resource: "namespaces" },
            name,
            "this namespace may not be deleted",
        )
    }

    /// `<action> is not supported on resources of kind "configmaps"` (405 MethodNotAllowed).
    pub fn method_not_supported(gr: GroupResource<'_>, action: &str) -> Self {
        ApiError::new(
            Reason::MethodNotAllowed,
            format!("{action} is not supported on resources of kind {:?}", gr.to_string()),
        )
        .with_details(Details { group: gr.group.into(), kind: gr.resource.into(), ..Details::default() })
    }

    /// An HTTP method the path does not serve (405 MethodNotAllowed, empty details).
    pub fn method_not_allowed() -> Self {
        ApiError::new(Reason::MethodNotAllowed, "the server does not allow this method on the requested resource")
            .with_details(Details::default())
    }

    /// None of the media types in `Accept` can be produced (406 NotAcceptable).
    pub fn not_acceptable(supported: &[&str]) -> Self {
        ApiError::new(
            Reason::NotAcceptable,
            format!("only the following media types are accepted: {}", supported.join(", ")),
        )
    }

    /// The body is larger than the server accepts (413 RequestEntityTooLarge).
    pub fn request_entity_too_large(limit_bytes: usize) -> Self {
        ApiError::new(Reason::RequestEntityTooLarge, format!("Request entity too large: limit is {limit_bytes}"))
    }

    /// The body's Content-Type cannot be decoded (415 UnsupportedMediaType).
    pub fn unsupported_media_type(supported: &[&str]) -> Self {
        ApiError::new(
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                supported.join(", ")
            ),
        )
    }

    /// `Timeout: <message>` (504 Timeout), with `details.retryAfterSeconds` when nonzero.
    /// 401: no credentials, or credentials no authenticator accepts (kube-apiserver's
    /// message is just "Unauthorized").
    pub fn unauthorized() -> Self {
        ApiError::new(Reason::Unauthorized, "Unauthorized")
    }

    /// 403 on a non-resource path: `forbidden: User "alice" cannot get path "/debug/x"`.
    pub fn forbidden_path(user: &str, path: &str) -> Self {
        ApiError::new(Reason::Forbidden, format!("forbidden: User \"{user}\" cannot use path \"{path}\""))
    }

    /// 429: a user already holds as many watches on this node as it may.
    pub fn too_many_watches(user: &str, cap: usize) -> Self {
        ApiError::new(
            Reason::TooManyRequests,
            format!("too many watches: user \"{user}\" has {cap} open on this server, the most it may; close one or try another server"),
        )
        .with_details(Details { retry_after_seconds: 1, ..Details::default() })
    }

    /// 429: the server is at its in-flight limit (kube-apiserver's max-in-flight filter).
    pub fn too_many_requests(retry_after_seconds: u32) -> Self {
        ApiError::new(Reason::TooManyRequests, "Too many requests, please try again later.")
            .with_details(Details { retry_after_seconds, ..Details::default() })
    }

    pub fn timeout(message: &str, retry_after_seconds: u32) -> Self {
        ApiError::new(Reason::Timeout, format!("Timeout: {message}"))
            .with_details(Details { retry_after_seconds, ..Details::default() })
    }

    /// A read waited for a resourceVersion this node has not reached (504 Timeout, cause
    /// `ResourceVersionTooLarge`, retry after 1 s): what client-go's
    /// `IsTooLargeResourceVersion` recognises.
    pub fn too_large_resource_version(wanted: u64, current: u64) -> Self {
        let mut e = ApiError::timeout(&format!("Too large resource version: {wanted}, current: {current}"), 1);
        if let Some(d) = e.details.as_mut() {
            d.causes.push(Cause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            });
        }
        e
    }

    /// A resourceVersion older than the history kept (410 Expired).
    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(Reason::Expired, message)
    }

    /// 503 ServiceUnavailable with `message` as is.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        ApiError::new(Reason::ServiceUnavailable, message)
    }

    /// `Internal error occurred: <err>` (500 InternalError).
    pub fn internal(err: impl fmt::Display) -> Self {
        let err = err.to_string();
        ApiError::new(Reason::InternalError, format!("Internal error occurred: {err}")).with_details(Details {
            causes: vec![Cause { reason: String::new(), message: err, field: String::new() }],
            ..Details::default()
        })
    }

    /// Seconds a client should wait before retrying, if the error says so.
    pub fn retry_after_seconds(&self) -> Option<u32> {
        self.details.as_ref().map(|d| d.retry_after_seconds).filter(|s| *s > 0)
    }

    /// The `metav1.Status` object.
    pub fn to_json(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        status.insert("reason".into(), json!(self.reason.as_str()));
        if let Some(d) = &self.details {
            status.insert("details".into(), details_json(d));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }

    /// The Status as JSON bytes.
    pub fn to_body(&self) -> Vec<u8> {
        serde_json::to_vec(&self.to_json()).unwrap_or_default()
    }
}

fn details_json(d: &Details) -> Value {
    let mut m = Map::new();
    for (k, v) in [("name", &d.name), ("group", &d.group), ("kind", &d.kind), ("uid", &d.uid)] {
        if !v.is_empty() {
            m.insert(k.into(), json!(v));
        }
    }
    if !d.causes.is_empty() {
        let causes = d
            .causes
            .iter()
            .map(|c| {
                let mut cm = Map::new();
                for (k, v) in [("reason", &c.reason), ("message", &c.message), ("field", &c.field)] {
                    if !v.is_empty() {
                        cm.insert(k.into(), json!(v));
                    }
                }
                Value::Object(cm)
            })
            .collect();
        m.insert("causes".into(), Value::Array(causes));
    }
    if d.retry_after_seconds > 0 {
        m.insert("retryAfterSeconds".into(), json!(d.retry_after_seconds));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::lookup;
    use crate::validation::{validate_name, NameRule};

    fn cm() -> GroupResource<'static> {
        lookup("", "v1", "configmaps").unwrap().group_resource()
    }

    fn deploy() -> GroupResource<'static> {
        lookup("apps", "v1", "deployments").unwrap().group_resource()
    }

    #[test]
    fn not_found_matches_kube() {
        let e = ApiError::not_found(cm(), "x");
        assert_eq!(
            e.to_json(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                   "message":"configmaps \"x\" not found","reason":"NotFound",
                   "details":{"name":"x","kind":"configmaps"},"code":404})
        );
        let e = ApiError::not_found(deploy(), "web");
        assert_eq!(e.message, "deployments.apps \"web\" not found");
        assert_eq!(e.to_json()["details"], json!({"name":"web","group":"apps","kind":"deployments"}));
        let e = ApiError::namespace_not_found("x");
        assert_eq!(e.message, "namespaces \"x\" not found");
        assert_eq!(e.code, 404);
        let e = ApiError::path_not_found();
        assert_eq!(e.to_json()["details"], json!({}));
        assert_eq!(e.message, "the server could not find the requested resource");
    }

    #[test]
    fn conflicts_match_kube() {
        let e = ApiError::already_exists(cm(), "x");
        assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));
        assert_eq!(e.message, "configmaps \"x\" already exists");
        let e = ApiError::conflict(cm(), "x");
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on configmaps \"x\": the object has been modified; please apply \
             your changes to the latest version and try again"
        );
        let e = ApiError::uid_precondition_conflict(cm(), "x", "A", "B");
        assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
        assert!(e.message.ends_with("Precondition failed: UID in precondition: A, UID in object meta: B"));
        let e = ApiError::rv_precondition_conflict(cm(), "x", "5", "7");
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on configmaps \"x\": the ResourceVersion in the precondition (5) \
             does not match the ResourceVersion in record (7). The object might have been modified"
        );
    }

    #[test]
    fn invalid_lists_causes() {
        let errs = validate_name(NameRule::Dns1123Subdomain, Some("Bad_Name"), None);
        let e = ApiError::invalid(lookup("", "v1", "configmaps").unwrap().group_kind(), "Bad_Name", &errs);
        assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
        let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
                         '-' or '.', and must start and end with an alphanumeric character (e.g. \
                         'example.com', regex used for validation is \
                         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        assert_eq!(
            e.message,
            format!("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": {subdomain}")
        );
        assert_eq!(
            e.to_json()["details"],
            json!({"name":"Bad_Name","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid",
                   "message":format!("Invalid value: \"Bad_Name\": {subdomain}"),"field":"metadata.name"}]})
        );
        let long = "A".repeat(254);
        let errs = validate_name(NameRule::Dns1123Subdomain, Some(&long), None);
        let e = ApiError::invalid(lookup("apps", "v1", "deployments").unwrap().group_kind(), &long, &errs);
        assert!(e.message.starts_with(&format!("Deployment.apps \"{long}\" is invalid: [metadata.name: ")));
        assert!(e.message.contains("must be no more than 253 characters, metadata.name: Invalid value"));
        assert_eq!(e.details.unwrap().causes.len(), 2);
    }

    #[test]
    fn forbidden_and_namespace_lifecycle() {
        let e = ApiError::namespace_terminating(cm(), "a", "x");
        assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            e.message,
            "configmaps \"a\" is forbidden: unable to create new content in namespace x because it is being terminated"
        );
        let e = ApiError::namespace_undeletable("default");
        assert_eq!(e.message, "namespaces \"default\" is forbidden: this namespace may not be deleted");
        assert_eq!(e.to_json()["details"], json!({"name":"default","kind":"namespaces"}));
    }

    #[test]
    fn transport_errors() {
        let e = ApiError::bad_request("nope");
        assert_eq!(
            e.to_json(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nope",
                   "reason":"BadRequest","code":400})
        );
        let e = ApiError::method_not_supported(deploy(), "patch");
        assert_eq!((e.code, e.reason.as_str()), (405, "MethodNotAllowed"));
        assert_eq!(e.message, "patch is not supported on resources of kind \"deployments.apps\"");
        let e = ApiError::not_acceptable(&["application/json"]);
        assert_eq!((e.code, e.reason.as_str()), (406, "NotAcceptable"));
        let e = ApiError::request_entity_too_large(3 << 20);
        assert_eq!((e.code, e.reason.as_str()), (413, "RequestEntityTooLarge"));
        assert_eq!(e.message, "Request entity too large: limit is 3145728");
        let e = ApiError::unsupported_media_type(&["application/json"]);
        assert_eq!((e.code, e.reason.as_str()), (415, "UnsupportedMediaType"));
        assert_eq!(
            e.message,
            "the body of the request was in an unknown format - accepted media types include: application/json"
        );
        let e = ApiError::service_unavailable("no leader");
        assert_eq!((e.code, e.reason.as_str()), (503, "ServiceUnavailable"));
        let e = ApiError::internal("boom");
        assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
        assert_eq!(e.message, "Internal error occurred: boom");
        assert_eq!(ApiError::expired("too old").code, 410);
    }

    #[test]
    fn too_large_rv_is_a_retryable_timeout() {
        let e = ApiError::too_large_resource_version(9, 4);
        assert_eq!((e.code, e.reason.as_str()), (504, "Timeout"));
        assert_eq!(e.message, "Timeout: Too large resource version: 9, current: 4");
        assert_eq!(e.retry_after_seconds(), Some(1));
        assert_eq!(
            e.to_json()["details"],
            json!({"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],
                   "retryAfterSeconds":1})
        );
        assert_eq!(ApiError::timeout("x", 0).retry_after_seconds(), None);
    }
}
