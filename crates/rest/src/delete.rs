//! DELETE of one object: parse → decode the optional DeleteOptions → refuse protected
//! namespaces → store → encode the object as apply removed it.
//!
//! `preconditions.uid` and `preconditions.resourceVersion` are checked at apply. kube-rs
//! sends `{}`, kubectl `{"propagationPolicy":"Background"}`, Python no body at all.

use axum::http::StatusCode;
use axum::response::Response;
use kuorum_api::ApiError;
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::Value;

use crate::error::{cluster_error, write_error};
use crate::negotiate::{self, json_response};
use crate::object;
use crate::route::Ctx;
use crate::RestState;

/// Namespaces kube-apiserver never lets go.
const UNDELETABLE_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// What kuorum honours of a DeleteOptions body.
#[derive(Debug, Default)]
struct DeleteOptions {
    precondition: Precondition,
    dry_run: bool,
}

pub(crate) async fn delete(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    // Parse.
    let t = &ctx.target;
    let def = t.def;
    let name = t.name().to_string();
    let query_dry_run = object::query_dry_run(&ctx.query)?;

    // Decode.
    let body = negotiate::read_body(&ctx.headers, ctx.body).await?;
    let mut opts = if body.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else {
        negotiate::check_body_content_type(&ctx.headers)?;
        decode_options(&body)?
    };
    opts.dry_run |= query_dry_run;

    // Validate.
    if def.kind == "Namespace" && def.group.is_empty() && UNDELETABLE_NAMESPACES.contains(&name.as_str()) {
        return Err(ApiError::namespace_undeletable(&name));
    }
    if opts.dry_run {
        crate::consistency::wait_fresh(st, crate::consistency::Freshness::MostRecent).await?;
        return match st.cluster.get(&t.key()).map_err(cluster_error)? {
            Some(stored) => Ok(json_response(StatusCode::OK, object::encode_stored(&stored, def)?)),
            None => Err(ApiError::not_found(def.group_resource(), &name)),
        };
    }

    // Store.
    let wanted_rv = opts.precondition.resource_version;
    let cmd = Command::Delete {
        key: t.key(),
        precondition: opts.precondition,
        deletion_timestamp: Some(st.clock.now_rfc3339()),
    };
    match st.cluster.write(cmd, st.request_timeout).await.map_err(cluster_error)? {
        // Encode.
        Ok(stored) => Ok(json_response(StatusCode::OK, object::encode_stored(&stored, def)?)),
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

/// Reads `preconditions` and `dryRun` from a DeleteOptions body (400 if malformed).
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
    }
}
