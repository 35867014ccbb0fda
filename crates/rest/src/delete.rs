//! DELETE of one object, and of every object of a collection that matches the selectors
//! (deletecollection): parse → decode the optional DeleteOptions → refuse protected
//! namespaces → store → encode the object as apply removed it (the list of them).
//!
//! `preconditions.uid` and `preconditions.resourceVersion` are checked at apply.
//! `gracePeriodSeconds` (the body's, or the query's when there is no body) is the grace
//! period of a kind that deletes gracefully ([`crate::graceful`]: a bound pod is marked,
//! and goes with a later delete of grace 0). `propagationPolicy` (Orphan, Background,
//! Foreground) is accepted and checked; kuorum runs no garbage collector, so dependents
//! are not touched, and an object held by finalizers gets `deletionGracePeriodSeconds: 0`.
//! kube-rs sends `{}`, kubectl `{"propagationPolicy":"Background"}`, Python no body.
//!
//! A CustomResourceDefinition is first given the `customresourcecleanup.apiextensions.k8s.io`
//! finalizer, so the delete only marks it: the leader's CRD controller (kuorum-node)
//! deletes its objects, then drops the finalizer, and apply removes the CRD.

use axum::http::StatusCode;
use axum::response::Response;
use kuorum_api::validation::FieldError;
use kuorum_api::{crd, ApiError, GroupKind};
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::Value;

use crate::alloc;
use crate::consistency::read_for_write;
use crate::error::{cluster_error, write_error};
use crate::fields;
use crate::graceful::{self, Next};
use crate::negotiate::{self, json_response};
use crate::object;
use crate::strategy;
use crate::target::Ctx;
use crate::RestState;

/// How often adding the cleanup finalizer to a CRD is retried when the CRD moves on.
const FINALIZER_ATTEMPTS: usize = 5;

/// What kuorum honours of a DeleteOptions body.
#[derive(Debug, Default)]
struct DeleteOptions {
    precondition: Precondition,
    dry_run: bool,
    /// `gracePeriodSeconds`, when given.
    grace_period: Option<i64>,
}

pub(crate) async fn delete(st: &RestState, mut ctx: Ctx) -> Result<Response, ApiError> {
    // Decode.
    let opts = options(&mut ctx).await?;

    // Parse.
    let t = &ctx.target;
    let def = t.def;
    let name = t.name().to_string();

    // Validate.
    if let Some(s) = t.strategy() {
        s.check_delete(&name)?;
    }
    let warnings = crate::admission::validate_delete(st, ctx.user.as_ref(), t, None, opts.dry_run).await?;
    let answer = |body| fields::with_warnings(json_response(StatusCode::OK, body), &warnings);
    if opts.dry_run {
        crate::consistency::wait_fresh(st, crate::consistency::Freshness::MostRecent).await?;
        return match st.cluster.get(&t.key()).map_err(cluster_error)? {
            Some(stored) => Ok(answer(crate::conversion::served_bytes(st, t, &stored).await?)),
            None => Err(ApiError::not_found(def.group_resource(), &name)),
        };
    }

    // Store.
    if strategy::is_crd(t) {
        hold_for_cleanup(st, &t.key()).await?;
    }
    if let Next::Answer(marked) =
        graceful::before_delete(st, t, &t.key(), &opts.precondition, opts.grace_period).await?
    {
        return Ok(answer(crate::conversion::served_bytes(st, t, &marked).await?));
    }
    let wanted_rv = opts.precondition.resource_version;
    let cmd = Command::Delete {
        key: t.key(),
        precondition: opts.precondition,
        deletion_timestamp: Some(st.clock.now_rfc3339()),
        finalizing: t.finalizing(),
    };
    match st.cluster.write(cmd, st.request_timeout).await.map_err(cluster_error)? {
        // Encode.
        Ok(stored) => {
            alloc::free_deleted(st, t, &stored).await;
            Ok(answer(crate::conversion::served_bytes(st, t, &stored).await?))
        }
        Err(WriteError::Conflict) => {
            // Name the record's resourceVersion as kube-apiserver does, if we can see it.
            let actual = st
                .cluster
                .get(&t.key())
                .ok()
                .flatten()
                .and_then(|b| object::parse_stored(&b).ok())
                .and_then(|o| object::meta_str(&o, "resourceVersion").map(str::to_string));
            match (wanted_rv, actual) {
                (Some(w), Some(a)) => {
                    Err(ApiError::rv_precondition_conflict(def.group_resource(), &name, &w.to_string(), &a))
                }
                _ => Err(ApiError::conflict(def.group_resource(), &name)),
            }
        }
        Err(e) => Err(write_error(e, def, &name)),
    }
}

/// DELETE of a collection: every object the selectors match, each deleted on condition
/// of its uid (an object recreated meanwhile under the same name is left alone). Answers
/// the list of what was deleted, as kube-apiserver does.
pub(crate) async fn delete_collection(st: &RestState, mut ctx: Ctx) -> Result<Response, ApiError> {
    // Parse.
    let def = ctx.target.def;
    let filter = crate::list::filter_of(&ctx.query, &ctx.target)?;

    // Decode.
    let opts = options(&mut ctx).await?;
    if opts.precondition != Precondition::default() {
        return Err(ApiError::bad_request("preconditions are not supported on a collection"));
    }

    // Read what matches now.
    crate::consistency::wait_fresh(st, crate::consistency::Freshness::MostRecent).await?;
    let matching = st.cache.list(&filter, None, usize::MAX);

    // Store, one object at a time.
    let mut deleted = Vec::new();
    let mut warnings = Vec::new();
    for item in matching.items {
        let obj = object::parse_stored(&item.bytes)?;
        // What may not be deleted is left out of a collection's deletion.
        let kept = ctx
            .target
            .strategy()
            .is_some_and(|s| s.check_delete(object::meta_str(&obj, "name").unwrap_or("")).is_err());
        if kept {
            continue;
        }
        warnings.extend(
            crate::admission::validate_delete(st, ctx.user.as_ref(), &ctx.target, Some(&obj), opts.dry_run).await?,
        );
        if opts.dry_run {
            deleted.push(Value::Object(crate::conversion::parse_served(st, &ctx.target, &item.bytes).await?));
            continue;
        }
        if strategy::is_crd(&ctx.target) {
            hold_for_cleanup(st, &item.key).await?;
        }
        let precondition =
            Precondition { resource_version: None, uid: object::meta_str(&obj, "uid").map(str::to_string) };
        match graceful::before_delete(st, &ctx.target, &item.key, &precondition, opts.grace_period).await {
            Ok(Next::Answer(marked)) => {
                deleted.push(Value::Object(crate::conversion::parse_served(st, &ctx.target, &marked).await?));
                continue;
            }
            Ok(Next::Remove) => {}
            Err(e) if e.code == 409 => continue,
            Err(e) => return Err(e),
        }
        let cmd = Command::Delete {
            key: item.key.clone(),
            precondition,
            deletion_timestamp: Some(st.clock.now_rfc3339()),
            finalizing: ctx.target.finalizing(),
        };
        match st.cluster.write(cmd, st.request_timeout).await.map_err(cluster_error)? {
            Ok(stored) => {
                alloc::free_deleted(st, &ctx.target, &stored).await;
                deleted.push(Value::Object(crate::conversion::parse_served(st, &ctx.target, &stored).await?));
            }
            // Gone or replaced meanwhile: not ours to delete.
            Err(WriteError::NotFound | WriteError::UidMismatch { .. }) => {}
            Err(e) => return Err(write_error(e, def, object::meta_str(&obj, "name").unwrap_or(""))),
        }
    }

    // Encode.
    let list = serde_json::json!({
        "kind": def.list_kind,
        "apiVersion": def.api_version(),
        "metadata": {},
        "items": deleted,
    });
    Ok(fields::with_warnings(json_response(StatusCode::OK, serde_json::to_vec(&list).unwrap_or_default()), &warnings))
}

/// Gives the CRD at `key` the cleanup finalizer (unless it has it, or is being deleted
/// already), so that deleting it marks it and its objects go first. A CRD that is gone or
/// changes hands is left to the delete that follows to report.
async fn hold_for_cleanup(st: &RestState, key: &str) -> Result<(), ApiError> {
    for attempt in 1..=FINALIZER_ATTEMPTS {
        let Some(bytes) = read_for_write(st, key, attempt).await? else { return Ok(()) };
        let mut obj = object::parse_stored(&bytes)?;
        let meta = object::meta_mut(&mut obj);
        if meta.contains_key("deletionTimestamp") {
            return Ok(());
        }
        let finalizers = meta.entry("finalizers").or_insert_with(|| Value::Array(Vec::new()));
        if !finalizers.is_array() {
            *finalizers = Value::Array(Vec::new());
        }
        let Value::Array(list) = finalizers else { unreachable!("made a list above") };
        if list.iter().any(|f| f == crd::CLEANUP_FINALIZER) {
            return Ok(());
        }
        list.push(Value::from(crd::CLEANUP_FINALIZER));
        let rv = object::parse_rv(object::meta_str(&obj, "resourceVersion"))?;
        let cmd = Command::Update {
            key: key.to_string(),
            object: object::to_vec(&obj).into(),
            precondition: Precondition { resource_version: rv, uid: None },
            // A CRD's deletion is held by its metadata finalizers only.
            finalizing: Default::default(),
        };
        match st.cluster.write(cmd, st.request_timeout).await.map_err(cluster_error)? {
            Err(WriteError::Conflict) => continue,
            _ => return Ok(()),
        }
    }
    Ok(())
}

/// The DeleteOptions of a request: its body, with the query's `dryRun`,
/// `propagationPolicy` and `gracePeriodSeconds` on top.
async fn options(ctx: &mut Ctx) -> Result<DeleteOptions, ApiError> {
    let query_dry_run = object::query_dry_run(&ctx.query)?;
    let body = negotiate::read_body(&ctx.headers, std::mem::take(&mut ctx.body)).await?;
    let mut opts = if body.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else {
        match object::BodyFormat::of(&ctx.headers)? {
            object::BodyFormat::Json => decode_options(&body)?,
            format => decode_options(&object::to_vec(&object::decode_as(format, &body)?))?,
        }
    };
    opts.dry_run |= query_dry_run;
    if let Some(p) = ctx.query.get("propagationPolicy") {
        check_propagation_policy(p)?;
    }
    if let (None, Some(g)) = (opts.grace_period, ctx.query.get("gracePeriodSeconds")) {
        let g = g.parse::<i64>().map_err(|_| ApiError::bad_request(format!("invalid gracePeriodSeconds: {g:?}")))?;
        opts.grace_period = Some(g);
    }
    Ok(opts)
}

/// `propagationPolicy` must be one kube-apiserver knows (422 otherwise).
fn check_propagation_policy(p: &str) -> Result<(), ApiError> {
    match p {
        "Orphan" | "Background" | "Foreground" => Ok(()),
        other => Err(ApiError::invalid(
            GroupKind { group: "meta.k8s.io", kind: "DeleteOptions" },
            "",
            &[FieldError::not_supported("propagationPolicy", other, &["Foreground", "Background", "Orphan", "nil"])],
        )),
    }
}

/// Reads `preconditions`, `dryRun`, `propagationPolicy` and `gracePeriodSeconds` from a
/// DeleteOptions body (400 if malformed, 422 for an unknown policy).
fn decode_options(body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))?;
    let Value::Object(o) = value else {
        return Err(ApiError::bad_request("the DeleteOptions body must be a JSON object"));
    };
    let mut opts = DeleteOptions::default();
    match o.get("preconditions") {
        None | Some(Value::Null) => {}
        Some(Value::Object(p)) => {
            opts.precondition.uid = match p.get("uid") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err(ApiError::bad_request("preconditions.uid must be a string")),
            };
            opts.precondition.resource_version = match p.get("resourceVersion") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => object::parse_rv(Some(s))?,
                Some(_) => return Err(ApiError::bad_request("preconditions.resourceVersion must be a string")),
            };
        }
        Some(_) => return Err(ApiError::bad_request("preconditions must be an object")),
    }
    match o.get("dryRun") {
        None | Some(Value::Null) => {}
        Some(Value::Array(vs)) => {
            let strs: Option<Vec<&str>> = vs.iter().map(Value::as_str).collect();
            let strs = strs.ok_or_else(|| ApiError::bad_request("dryRun must be a list of strings"))?;
            opts.dry_run = object::dry_run(strs.into_iter())?;
        }
        Some(_) => return Err(ApiError::bad_request("dryRun must be a list of strings")),
    }
    match o.get("propagationPolicy") {
        None | Some(Value::Null) => {}
        Some(Value::String(p)) => check_propagation_policy(p)?,
        Some(_) => return Err(ApiError::bad_request("propagationPolicy must be a string")),
    }
    match o.get("gracePeriodSeconds") {
        None | Some(Value::Null) => {}
        Some(v) if v.is_i64() => opts.grace_period = v.as_i64(),
        Some(_) => return Err(ApiError::bad_request("gracePeriodSeconds must be an integer")),
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_options() {
        let o = decode_options(b"{}").unwrap();
        assert_eq!(o.precondition, Precondition::default());
        let o = decode_options(br#"{"propagationPolicy":"Background"}"#).unwrap();
        assert!(!o.dry_run);
        let o = decode_options(br#"{"preconditions":{"uid":"u","resourceVersion":"4"},"dryRun":["All"]}"#).unwrap();
        assert_eq!(o.precondition, Precondition { resource_version: Some(4), uid: Some("u".into()) });
        assert!(o.dry_run);
        assert_eq!(decode_options(b"[").unwrap_err().code, 400);
        assert_eq!(decode_options(b"[]").unwrap_err().code, 400);
        assert_eq!(decode_options(br#"{"preconditions":{"resourceVersion":"x"}}"#).unwrap_err().code, 400);
        let o = decode_options(br#"{"propagationPolicy":"Orphan","gracePeriodSeconds":0}"#).unwrap();
        assert_eq!(o.grace_period, Some(0));
        let e = decode_options(br#"{"propagationPolicy":"Sometimes"}"#).unwrap_err();
        assert_eq!(e.code, 422);
        assert!(e.message.contains(r#"propagationPolicy: Unsupported value: "Sometimes""#), "{}", e.message);
        assert_eq!(decode_options(br#"{"gracePeriodSeconds":"soon"}"#).unwrap_err().code, 400);
    }
}
