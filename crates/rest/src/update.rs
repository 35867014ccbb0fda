//! PUT of one object: parse → decode → default/validate → read → store → encode.
//!
//! The body's name must be the URL's (and its namespace, when given). A resourceVersion
//! in the body becomes a precondition checked at apply (409 Conflict if the object moved
//! on); without one the update is unconditional: it is stored on condition of the
//! version read (for its managedFields) and redone if that moved on. A uid in the body is
//! a uid precondition. Apply keeps uid, creationTimestamp and generation, and bumps
//! generation on spec changes.

use axum::http::StatusCode;
use axum::response::Response;
use kuorum_api::ApiError;
use kuorum_store::{Command, Precondition, WriteError};

use crate::alloc;
use crate::consistency::read_for_write;
use crate::defaults;
use crate::error::{cluster_error, write_error};
use crate::fields::{self, FieldValidation};
use crate::negotiate::{self, json_response};
use crate::object::{self, BodyFormat, Object};
use crate::strategy;
use crate::subresource;
use crate::target::{Ctx, Target};
use crate::RestState;

pub(crate) async fn update(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    // Parse.
    let t = &ctx.target;
    let def = t.def;
    let name = t.name().to_string();
    let dry_run = object::query_dry_run(&ctx.query)?;
    let validation = FieldValidation::parse(&ctx.query, "UpdateOptions")?;
    let manager = fields::manager(&ctx.query, &ctx.headers, "UpdateOptions", false)?;

    // Decode.
    let format = BodyFormat::of(&ctx.headers)?;
    let body = negotiate::read_body(&ctx.headers, ctx.body).await?;
    let mut obj = object::decode_body(format, body.clone()).await?;
    object::check_type_meta(&mut obj, def)?;
    let json_body = (format == BodyFormat::Json).then_some(&body[..]);
    let warnings = fields::check_fields(t, &mut obj, json_body, validation)?;

    // Default/validate.
    defaults::apply(t, &mut obj);
    object::place_at_url(&mut obj, &name, t.namespace.as_deref())?;
    let precondition = Precondition {
        resource_version: object::parse_rv(object::meta_str(&obj, "resourceVersion"))?,
        uid: object::meta_str(&obj, "uid").map(str::to_string),
    };
    object::meta_mut(&mut obj).remove("resourceVersion");
    if let Some(s) = t.strategy() {
        s.prepare_for_update(&mut obj);
    }

    // Read, record the fields this update sets, store; without a client precondition,
    // again if the object moved on in between (kube-apiserver's GuaranteedUpdate).
    let deadline = tokio::time::Instant::now() + st.request_timeout;
    for attempt in 1.. {
        let Some(old) = read_for_write(st, &t.key(), attempt).await? else {
            return Err(ApiError::not_found(def.group_resource(), &name));
        };
        // An object stored at another version reads as this one.
        let old = crate::conversion::parse_served(st, t, &old).await?;
        let sub = t.subresource.as_deref();
        let now = st.clock.now_rfc3339();
        let new = subresource::shape_write(def, sub, &old, obj.clone());
        let mut new = fields::track_update(t, Some(&old), new, &manager, sub.unwrap_or(""), &now)?;
        let mut warnings = warnings.clone();
        warnings.extend(strategy::before_write(st, ctx.user.as_ref(), t, Some(&old), &mut new, &now, dry_run).await?);
        crate::admission::resource_quota::charge(st, t, &new, Some(&old), dry_run).await?;
        if dry_run {
            let resp = dry_run_update(t, &old, new, &precondition)?;
            return Ok(fields::with_warnings(resp, &warnings));
        }
        let read_rv = object::parse_rv(object::meta_str(&old, "resourceVersion"))?;
        let p =
            Precondition { resource_version: precondition.resource_version.or(read_rv), uid: precondition.uid.clone() };

        // Store.
        let claims = alloc::claim(st, t, Some(&old), &mut new).await?;
        let (stored, claims) = alloc::checked(st, claims, crate::conversion::stored(st, t, &new).await).await?;
        let cmd = Command::Update { key: t.key(), object: stored.into(), precondition: p, finalizing: t.finalizing() };
        let result = st.cluster.write(cmd, st.request_timeout).await;
        alloc::settle(st, claims, alloc::written(&result)).await;
        match result.map_err(cluster_error)? {
            // Encode.
            Ok(stored) => {
                let resp = json_response(StatusCode::OK, crate::conversion::served_bytes(st, t, &stored).await?);
                return Ok(fields::with_warnings(resp, &warnings));
            }
            Err(WriteError::Conflict | WriteError::NotFound)
                if precondition.resource_version.is_none() && tokio::time::Instant::now() < deadline =>
            {
                continue
            }
            Err(e) => return Err(write_error(e, def, &name)),
        }
    }
    unreachable!("the loop returns")
}

/// `dryRun=All`: check against the object read and answer what would be stored.
fn dry_run_update(t: &Target, old: &Object, mut obj: Object, p: &Precondition) -> Result<Response, ApiError> {
    let gr = t.def.group_resource();
    let old_uid = object::meta_str(old, "uid").unwrap_or("").to_string();
    if let Some(uid) = &p.uid {
        if *uid != old_uid {
            return Err(ApiError::uid_precondition_conflict(gr, t.name(), uid, &old_uid));
        }
    }
    let old_rv = object::meta_str(old, "resourceVersion").unwrap_or("");
    if let Some(rv) = p.resource_version {
        if rv.to_string() != old_rv {
            return Err(ApiError::conflict(gr, t.name()));
        }
    }
    let old_meta = object::meta(old).cloned().unwrap_or_default();
    let meta = object::meta_mut(&mut obj);
    for field in ["uid", "creationTimestamp", "generation", "resourceVersion"] {
        match old_meta.get(field) {
            Some(v) => meta.insert(field.into(), v.clone()),
            None => meta.remove(field),
        };
    }
    object::set_type_meta(&mut obj, t.def);
    Ok(json_response(StatusCode::OK, object::to_vec(&obj)))
}
