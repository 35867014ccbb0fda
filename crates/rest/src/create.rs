//! POST to a collection: parse → decode → default/validate → store → encode.
//!
//! The body must be a JSON object whose apiVersion/kind (when given) match the URL; its
//! namespace, when given, must be the URL's. The name comes from `metadata.name`, or from
//! `generateName` plus a random suffix (retried a few times if taken). The proposing node
//! decides everything apply must not: uid, creationTimestamp, the generated name.

use axum::http::StatusCode;
use axum::response::Response;
use kuorum_api::seams::{name_suffix, new_uid};
use kuorum_api::validation::{generate_name, validate_name};
use kuorum_api::{ApiError, ResourceDef};
use kuorum_store::{Command, WriteError};
use serde_json::Value;

use crate::admission::resource_quota;
use crate::alloc;
use crate::defaults;
use crate::error::{cluster_error, write_error};
use crate::fields::{self, FieldValidation};
use crate::negotiate::{self, json_response};
use crate::object::{self, BodyFormat, Object};
use crate::strategy;
use crate::target::{Ctx, Target};
use crate::RestState;

/// How many generated names are tried before a conflict is reported.
const GENERATE_NAME_ATTEMPTS: usize = 8;

/// Metadata only the server writes; a client's values are dropped on create.
const SERVER_OWNED_META: &[&str] =
    &["resourceVersion", "uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"];

pub(crate) async fn create(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    // Parse.
    let def = ctx.target.def;
    let namespace = ctx.target.namespace.clone();
    let dry_run = object::query_dry_run(&ctx.query)?;

    let validation = FieldValidation::parse(&ctx.query, "CreateOptions")?;
    let manager = fields::manager(&ctx.query, &ctx.headers, "CreateOptions", false)?;

    // Decode.
    let format = BodyFormat::of(&ctx.headers)?;
    let body = negotiate::read_body(&ctx.headers, ctx.body).await?;
    let mut obj = object::decode_body(format, body.clone()).await?;
    object::check_type_meta(&mut obj, def)?;
    let json_body = (format == BodyFormat::Json).then_some(&body[..]);
    let warnings = fields::check_fields(&ctx.target, &mut obj, json_body, validation)?;

    // Default.
    defaults::apply(&ctx.target, &mut obj);
    place_in_namespace(&mut obj, def, namespace.as_deref())?;
    set_system_fields(st, &mut obj, def);
    let now = st.clock.now_rfc3339();
    obj = fields::track_update(&ctx.target, None, obj, &manager, "", &now)?;
    let given_name = object::meta_str(&obj, "name").map(str::to_string);
    let prefix = object::meta_str(&obj, "generateName").map(str::to_string);

    let attempts = if given_name.is_none() && prefix.is_some() { GENERATE_NAME_ATTEMPTS } else { 1 };
    // Each attempt allocates afresh: what a failed one filled in was freed.
    let unfilled =
        (attempts > 1 && ctx.target.strategy().is_some_and(|s| s.allocating().is_some())).then(|| obj.clone());
    for attempt in 1..=attempts {
        if let (Some(o), true) = (&unfilled, attempt > 1) {
            obj = o.clone();
        }
        let name = match (&given_name, &prefix) {
            (Some(n), _) => n.clone(),
            (None, Some(p)) => generate_name(p, &name_suffix(&*st.entropy)),
            (None, None) => String::new(),
        };
        object::meta_mut(&mut obj).insert("name".into(), Value::from(name.as_str()));
        if let Some(s) = ctx.target.strategy() {
            s.prepare_for_create(&mut obj, &now);
        }

        // Validate.
        let errs = validate_name(ctx.target.name_rule(), Some(&name), prefix.as_deref());
        if !errs.is_empty() {
            return Err(ApiError::invalid(def.group_kind(), &name, &errs));
        }
        let mut warnings = warnings.clone();
        warnings
            .extend(strategy::before_write(st, ctx.user.as_ref(), &ctx.target, None, &mut obj, &now, dry_run).await?);
        resource_quota::charge(st, &ctx.target, &obj, None, dry_run).await?;
        if dry_run {
            return Ok(fields::with_warnings(json_response(StatusCode::CREATED, object::to_vec(&obj)), &warnings));
        }

        // Store.
        let claims = alloc::claim(st, &ctx.target, None, &mut obj).await?;
        let (stored, claims) =
            alloc::checked(st, claims, crate::conversion::stored(st, &ctx.target, &obj).await).await?;
        let cmd = Command::Create {
            key: object::key(ctx.target.storage_def(), namespace.as_deref(), &name),
            namespace: namespace.clone(),
            object: stored.into(),
        };
        let result = st.cluster.write(cmd, st.request_timeout).await;
        alloc::settle(st, claims, alloc::written(&result)).await;
        match result.map_err(cluster_error)? {
            // Encode.
            Ok(stored) => {
                let resp = json_response(
                    StatusCode::CREATED,
                    crate::conversion::served_bytes(st, &ctx.target, &stored).await?,
                );
                return Ok(fields::with_warnings(resp, &warnings));
            }
            Err(WriteError::AlreadyExists) if attempt < attempts => continue,
            Err(e) => return Err(write_error(e, def, &name)),
        }
    }
    Err(ApiError::internal("generateName attempts exhausted"))
}

/// Makes `obj` (named already) a new object of `t` in its namespace: the namespace
/// placement, system fields and what the kind sets on create. Used by create-on-apply.
pub(crate) fn prepare_new_object(st: &RestState, obj: &mut Object, t: &Target) -> Result<(), ApiError> {
    place_in_namespace(obj, t.def, t.namespace.as_deref())?;
    set_system_fields(st, obj, t.def);
    if let Some(s) = t.strategy() {
        let now = object::meta_str(obj, "creationTimestamp").unwrap_or("").to_string();
        s.prepare_for_create(obj, &now);
    }
    Ok(())
}

/// Namespaced objects take the URL's namespace (a different one in the body is 400);
/// cluster-scoped objects have none.
fn place_in_namespace(obj: &mut Object, def: &ResourceDef, namespace: Option<&str>) -> Result<(), ApiError> {
    let meta = object::meta_mut(obj);
    match (namespace, meta.get("namespace").and_then(Value::as_str)) {
        (Some(url), Some(body)) if !body.is_empty() && body != url => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        (Some(url), _) if def.namespaced() => {
            meta.insert("namespace".into(), Value::from(url));
            Ok(())
        }
        _ => {
            meta.remove("namespace");
            Ok(())
        }
    }
}

/// uid, creationTimestamp and generation from this node; kind-specific defaults.
fn set_system_fields(st: &RestState, obj: &mut Object, def: &ResourceDef) {
    let uid = new_uid(&*st.entropy);
    let now = st.clock.now_rfc3339();
    let meta = object::meta_mut(obj);
    for field in SERVER_OWNED_META {
        meta.remove(*field);
    }
    meta.insert("uid".into(), Value::from(uid));
    meta.insert("creationTimestamp".into(), Value::from(now));
    if def.tracks_generation {
        meta.insert("generation".into(), Value::from(1));
    } else {
        meta.remove("generation");
    }
}
