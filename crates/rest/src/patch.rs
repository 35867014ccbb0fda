//! PATCH of one object: parse → read → patch → validate → store → encode, retried when
//! the object moved on underneath.
//!
//! The body's Content-Type picks the engine: `application/json-patch+json` (RFC 6902),
//! `application/merge-patch+json` (RFC 7386), `application/strategic-merge-patch+json`
//! (merge keys and strategies from the kind's schema) or `application/apply-patch+yaml`
//! (server-side apply, YAML or JSON, `fieldManager` required, conflicts 409 unless
//! `force=true`, creates the object when it is absent). A custom resource has no patch
//! strategies: a strategic merge patch of one is 415, as kube-apiserver answers, and its
//! server-side apply follows its version's schema.
//!
//! Each attempt patches the object as read and stores the result on condition that the
//! object still has the resourceVersion read. If it moved on, the patch is applied again
//! to the new version (up to [`MAX_ATTEMPTS`] times), as kube-apiserver's patcher does. A
//! resourceVersion written in the patch itself is the client's precondition: a mismatch
//! is answered 409 at once.
//!
//! What a patch may cost is bounded where it is applied ([`kuorum_patch::limits`]: JSON
//! Patch operations, bytes copied, depth), and what it produces is bounded where every
//! write makes its bytes ([`strategy::stored`]: the object's size and depth), so neither a
//! patch nor an apply can store more than a client could have sent.

use axum::http::{header, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use kuorum_api::validation::{validate_name, FieldError};
use kuorum_api::{ApiError, ResourceDef};
use kuorum_fieldmanager::{ApplyError, Writer};
use kuorum_patch::{PatchError, PatchType};
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::Value;

use crate::admission::resource_quota;
use crate::alloc;
use crate::auth::UserInfo;
use crate::consistency::read_for_write;
use crate::defaults;
use crate::error::{cluster_error, write_error};
use crate::fields::{self, FieldValidation};
use crate::negotiate::{self, json_response};
use crate::object::{self, Object};
use crate::strategy;
use crate::subresource;
use crate::target::{Ctx, Target};
use crate::RestState;

/// How often a patch is re-applied after the object changed underneath it.
const MAX_ATTEMPTS: usize = 5;

/// The patch media types kuorum accepts, in kube-apiserver's order.
const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// The patch media types of a custom resource (no strategic merge patch).
const CUSTOM_PATCH_TYPES: &[&str] =
    &["application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml"];

/// What the body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Patch(PatchType),
    Apply,
}

/// Everything an attempt needs, decided once per request.
struct Request<'a> {
    target: &'a Target,
    user: Option<&'a UserInfo>,
    kind: Kind,
    body: &'a [u8],
    /// The decoded apply configuration (apply only).
    config: Option<Object>,
    manager: String,
    force: bool,
    dry_run: bool,
    validation: FieldValidation,
}

pub(crate) async fn patch(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    // Parse.
    let t = &ctx.target;
    let kind = patch_kind(&ctx)?;
    let dry_run = object::query_dry_run(&ctx.query)?;
    let validation = FieldValidation::parse(&ctx.query, "PatchOptions")?;
    let manager = fields::manager(&ctx.query, &ctx.headers, "PatchOptions", kind == Kind::Apply)?;
    let force = match ctx.query.get("force") {
        None => false,
        Some(_) if kind != Kind::Apply => {
            return Err(fields::options_invalid(
                "PatchOptions",
                FieldError::forbidden("force", "may not be specified for non-apply patch"),
            ))
        }
        Some("true" | "1") => true,
        Some("false" | "0" | "") => false,
        Some(other) => return Err(ApiError::bad_request(format!("invalid value for force: {other:?}"))),
    };

    // Decode.
    let body = negotiate::read_body(&ctx.headers, ctx.body).await?;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the body of the request was empty; a patch is required"));
    }
    let mut warnings = Vec::new();
    let config = match kind {
        Kind::Apply => Some(decode_apply_config(t, &body, validation, &mut warnings)?),
        Kind::Patch(_) => None,
    };
    let req =
        Request { target: t, user: ctx.user.as_ref(), kind, body: &body, config, manager, force, dry_run, validation };

    // Read, patch, store; again if the object moved on.
    for attempt in 1..=MAX_ATTEMPTS {
        let current = match read_for_write(st, &t.key(), attempt).await? {
            Some(bytes) => Some(crate::conversion::parse_served(st, t, &bytes).await?),
            None => None,
        };
        let mut attempt_warnings = warnings.clone();
        let (status, outcome) = match current {
            None if kind == Kind::Apply => {
                (StatusCode::CREATED, create_by_apply(st, &req, &mut attempt_warnings).await?)
            }
            None => return Err(ApiError::not_found(t.def.group_resource(), t.name())),
            Some(current) => (StatusCode::OK, update_by_patch(st, &req, current, &mut attempt_warnings).await?),
        };
        match outcome {
            Attempt::Done(body) => {
                return Ok(fields::with_warnings(json_response(status, body), &attempt_warnings));
            }
            Attempt::Retry => continue,
        }
    }
    Err(ApiError::conflict(t.def.group_resource(), t.name()))
}

/// How one attempt ended.
enum Attempt {
    /// The response body.
    Done(Bytes),
    /// The object moved on (or appeared, or vanished) underneath: read it again.
    Retry,
}

/// The patch type named by Content-Type (415 for anything else).
fn patch_kind(ctx: &Ctx) -> Result<Kind, ApiError> {
    let ct = ctx.headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = negotiate::MediaType::parse(ct).essence;
    if essence == "application/apply-patch+yaml" {
        return Ok(Kind::Apply);
    }
    match PatchType::from_content_type(&essence) {
        Some(PatchType::Strategic) if ctx.target.custom.is_some() => {
            Err(ApiError::unsupported_media_type(CUSTOM_PATCH_TYPES))
        }
        Some(pt) => Ok(Kind::Patch(pt)),
        None if ctx.target.custom.is_some() => Err(ApiError::unsupported_media_type(CUSTOM_PATCH_TYPES)),
        None => Err(ApiError::unsupported_media_type(PATCH_TYPES)),
    }
}

/// Decodes and checks an apply configuration: YAML or JSON, an object of the URL's kind
/// and name. Unknown fields are dropped (or refused) as for any write.
fn decode_apply_config(
    t: &Target,
    body: &[u8],
    validation: FieldValidation,
    warnings: &mut Vec<String>,
) -> Result<Object, ApiError> {
    let value = object::decode_yaml(body, "the apply configuration")?;
    let Value::Object(mut config) = value else {
        return Err(ApiError::bad_request("the apply configuration must be an object"));
    };
    let def = t.def;
    let api_version = config.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = config.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version.is_empty() || kind.is_empty() {
        return Err(ApiError::bad_request(
            "invalid object type: apiVersion and kind must be set in an apply configuration",
        ));
    }
    object::check_type_meta(&mut config, def)?;
    match config.get("metadata") {
        Some(Value::Object(_)) | None => {}
        Some(_) => return Err(ApiError::bad_request("metadata must be an object")),
    }
    object::place_at_url(&mut config, t.name(), t.namespace.as_deref())?;
    let json_body = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    warnings.extend(fields::check_fields(t, &mut config, json_body.then_some(body), validation)?);
    Ok(config)
}

/// Patches `current` and stores it, conditional on its resourceVersion.
async fn update_by_patch(
    st: &RestState,
    req: &Request<'_>,
    mut current: Object,
    warnings: &mut Vec<String>,
) -> Result<Attempt, ApiError> {
    let t = req.target;
    let def = t.def;
    // A custom resource stored at another version reads as this one.
    object::set_type_meta(&mut current, def);
    let current_rv = object::meta_str(&current, "resourceVersion").unwrap_or("").to_string();
    let now = st.clock.now_rfc3339();
    let api_version = def.api_version();
    let sub = t.subresource.as_deref();
    let writer =
        Writer { manager: &req.manager, api_version: &api_version, subresource: sub.unwrap_or(""), time: &now };

    // Patch.
    let mut new = match (req.kind, &req.config) {
        (Kind::Apply, Some(config)) => {
            let mut config = config.clone();
            // A resourceVersion in the configuration is a precondition, checked below.
            let wanted = object::meta_str(&config, "resourceVersion").map(str::to_string);
            if let Some(rv) = &wanted {
                if *rv != current_rv {
                    return Err(ApiError::conflict(def.group_resource(), t.name()));
                }
                object::meta_mut(&mut config).remove("resourceVersion");
            }
            let mut applied = apply_config(t, Some(&current), &config, &writer, req.force)?;
            defaults::apply(t, &mut applied);
            subresource::shape_write(def, sub, &current, applied)
        }
        (Kind::Patch(pt), _) => {
            let mut patched = run_patch(pt, def, &current, req.body)?;
            warnings.extend(fields::check_fields(t, &mut patched, body_if_object(pt, req.body), req.validation)?);
            defaults::apply(t, &mut patched);
            let patched = subresource::shape_write(def, sub, &current, patched);
            fields::track_update(t, Some(&current), patched, &req.manager, sub.unwrap_or(""), &now)?
        }
        (Kind::Apply, None) => unreachable!("apply requests carry their configuration"),
    };

    // Validate: the patch may not move the object; a resourceVersion or uid it sets is a
    // precondition.
    object::place_at_url(&mut new, t.name(), t.namespace.as_deref())?;
    object::set_type_meta(&mut new, def);
    let patched_rv = object::meta_str(&new, "resourceVersion").unwrap_or("").to_string();
    let client_rv = (!patched_rv.is_empty() && patched_rv != current_rv).then_some(patched_rv);
    let current_uid = object::meta_str(&current, "uid").map(str::to_string);
    let new_uid = object::meta_str(&new, "uid").map(str::to_string);
    let precondition = Precondition {
        resource_version: match &client_rv {
            Some(rv) => object::parse_rv(Some(rv))?,
            None => object::parse_rv(Some(&current_rv))?,
        },
        uid: new_uid.filter(|u| Some(u) != current_uid.as_ref()),
    };
    if let Some(s) = t.strategy() {
        s.prepare_for_update(&mut new);
    }
    warnings.extend(strategy::before_write(st, req.user, t, Some(&current), &mut new, &now, req.dry_run).await?);
    resource_quota::charge(st, t, &new, Some(&current), req.dry_run).await?;
    if req.dry_run {
        if let Some(rv) = client_rv {
            return Err(ApiError::rv_precondition_conflict(def.group_resource(), t.name(), &rv, &current_rv));
        }
        object::meta_mut(&mut new).insert("resourceVersion".into(), Value::from(current_rv));
        return Ok(Attempt::Done(object::to_vec(&new).into()));
    }
    object::meta_mut(&mut new).remove("resourceVersion");

    // Store.
    let claims = alloc::claim(st, t, Some(&current), &mut new).await?;
    let (stored, claims) = alloc::checked(st, claims, crate::conversion::stored(st, t, &new).await).await?;
    let cmd = Command::Update { key: t.key(), object: stored.into(), precondition, finalizing: t.finalizing() };
    let result = st.cluster.write(cmd, st.request_timeout).await;
    alloc::settle(st, claims, alloc::written(&result)).await;
    match result.map_err(cluster_error)? {
        // Encode.
        Ok(stored) => Ok(Attempt::Done(crate::conversion::served_bytes(st, t, &stored).await?)),
        Err(WriteError::Conflict | WriteError::NotFound) if client_rv.is_none() => Ok(Attempt::Retry),
        Err(e) => Err(write_error(e, def, t.name())),
    }
}

/// Server-side apply to an absent object: the configuration becomes the new object.
async fn create_by_apply(st: &RestState, req: &Request<'_>, warnings: &mut Vec<String>) -> Result<Attempt, ApiError> {
    let t = req.target;
    let def = t.def;
    let Some(config) = &req.config else { unreachable!("apply requests carry their configuration") };
    if object::meta_str(config, "resourceVersion").is_some() {
        // A precondition on an object that does not exist.
        return Err(ApiError::not_found(def.group_resource(), t.name()));
    }
    let now = st.clock.now_rfc3339();
    let api_version = def.api_version();
    let writer = Writer { manager: &req.manager, api_version: &api_version, subresource: "", time: &now };
    if t.subresource.is_some() {
        return Err(ApiError::not_found(def.group_resource(), t.name()));
    }
    let mut obj = apply_config(t, None, config, &writer, req.force)?;
    defaults::apply(t, &mut obj);
    object::set_type_meta(&mut obj, def);
    crate::create::prepare_new_object(st, &mut obj, t)?;
    let errs = validate_name(t.name_rule(), Some(t.name()), None);
    if !errs.is_empty() {
        return Err(ApiError::invalid(def.group_kind(), t.name(), &errs));
    }
    warnings.extend(strategy::before_write(st, req.user, t, None, &mut obj, &now, req.dry_run).await?);
    resource_quota::charge(st, t, &obj, None, req.dry_run).await?;
    if req.dry_run {
        return Ok(Attempt::Done(object::to_vec(&obj).into()));
    }
    let claims = alloc::claim(st, t, None, &mut obj).await?;
    let (stored, claims) = alloc::checked(st, claims, crate::conversion::stored(st, t, &obj).await).await?;
    let cmd = Command::Create { key: t.key(), namespace: t.namespace.clone(), object: stored.into() };
    let result = st.cluster.write(cmd, st.request_timeout).await;
    alloc::settle(st, claims, alloc::written(&result)).await;
    match result.map_err(cluster_error)? {
        Ok(stored) => Ok(Attempt::Done(crate::conversion::served_bytes(st, t, &stored).await?)),
        Err(WriteError::AlreadyExists) => Ok(Attempt::Retry),
        Err(e) => Err(write_error(e, def, t.name())),
    }
}

/// Runs server-side apply; conflicts become kube-apiserver's 409.
fn apply_config(
    t: &Target,
    live: Option<&Object>,
    config: &Object,
    w: &Writer<'_>,
    force: bool,
) -> Result<Object, ApiError> {
    let def = t.def;
    let Some(schema) = t.schema() else {
        return Err(ApiError::internal(format!("no schema for {}", def.group_kind())));
    };
    let live = live.map(|o| Value::Object(o.clone()));
    let config = Value::Object(config.clone());
    match kuorum_fieldmanager::apply(schema, live.as_ref(), &config, w, force) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(ApiError::internal("server-side apply returned a non-object")),
        Err(e @ ApplyError::Conflicts(_)) => {
            Err(apply_conflict(def, config.pointer("/metadata/name").and_then(Value::as_str).unwrap_or(""), &e))
        }
        Err(ApplyError::Invalid(msg)) => Err(ApiError::new(kuorum_api::Reason::Invalid, msg)),
    }
}

/// 409 Conflict with one `FieldManagerConflict` cause per conflicting field.
fn apply_conflict(def: &ResourceDef, name: &str, e: &ApplyError) -> ApiError {
    let ApplyError::Conflicts(conflicts) = e else { unreachable!("only conflicts get here") };
    let causes: Vec<(String, String)> = conflicts.iter().map(|c| (c.cause_message(), c.field.clone())).collect();
    ApiError::apply_conflict(def.group_resource(), name, e.message(), &causes)
}

/// Applies a JSON, merge or strategic merge patch to `current`.
fn run_patch(pt: PatchType, def: &ResourceDef, current: &Object, body: &[u8]) -> Result<Object, ApiError> {
    let original = Value::Object(current.clone());
    let patched = match pt {
        PatchType::Json => kuorum_patch::json_patch(&original, body),
        PatchType::Merge => kuorum_patch::merge_patch(&original, body),
        PatchType::Strategic => match fields::schema_of(def) {
            Some(schema) => kuorum_patch::strategic_merge_patch(&original, body, schema),
            None => {
                Err(PatchError::BadRequest(format!("strategic merge patch is not supported for {}", def.group_kind())))
            }
        },
    }
    .map_err(|e| match e {
        PatchError::BadRequest(msg) => ApiError::bad_request(msg),
        PatchError::Invalid(msg) => ApiError::new(kuorum_api::Reason::Invalid, msg),
        PatchError::TooLarge(msg) => ApiError::new(kuorum_api::Reason::RequestEntityTooLarge, msg),
    })?;
    match patched {
        Value::Object(o) => Ok(o),
        _ => Err(ApiError::new(kuorum_api::Reason::Invalid, "the patched object is not a JSON object")),
    }
}

/// The patch body, when it is shaped like the object (merge and strategic patches), for
/// the duplicate-field check.
fn body_if_object(pt: PatchType, body: &[u8]) -> Option<&[u8]> {
    (pt != PatchType::Json).then_some(body)
}
