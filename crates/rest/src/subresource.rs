//! Owns what the `status` subresource means for writes, and the `scale` subresource: an
//! `autoscaling/v1` Scale read from and written into a built-in kind whose strategy says
//! where its replicas and selector are ([`kuorum_api::kinds::ScaleOf`]), or a custom
//! resource whose CRD says (`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`).
//!
//! For a kind with a status subresource, a write to the object keeps the stored status
//! and a write to `/status` changes only the status; another subresource (a namespace's
//! `/finalize`, a CertificateSigningRequest's `/approval`) writes the part its kind's
//! strategy says: spec and status have separate
//! writers (controllers own status), as in kube-apiserver's status strategies.
//!
//! ```text
//! stored {spec: {replicas: 1}, status: {ready: 1}}
//! PUT    {spec: {replicas: 2}, status: {ready: 9}}          -> {spec: {replicas: 2}, status: {ready: 1}}
//! PUT /status {spec: {replicas: 7}, status: {ready: 2}}     -> {spec: {replicas: 1}, status: {ready: 2}}
//! ```

use axum::http::StatusCode;
use axum::response::Response;
use kuorum_api::kinds::printing::label_selector_string;
use kuorum_api::validation::FieldError;
use kuorum_api::{ApiError, GroupKind, ResourceDef};
use kuorum_patch::{PatchError, PatchType};
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::{json, Map, Value};

use crate::consistency::read_for_write;
use crate::error::{cluster_error, write_error};
use crate::fields;
use crate::negotiate::{self, json_response};
use crate::object::{self, BodyFormat, Object};
use crate::strategy;
use crate::target::{Ctx, Target};
use crate::RestState;

/// How often a scale write is redone after the object changed underneath it.
const MAX_ATTEMPTS: usize = 5;

/// Shapes `new` for a write to `subresource` (`None`: the object itself) of an object
/// stored as `old`.
pub(crate) fn shape_write(def: &ResourceDef, subresource: Option<&str>, old: &Object, new: Object) -> Object {
    match subresource {
        None if def.subresource("status").is_some() => {
            let mut new = new;
            match old.get("status") {
                Some(s) => new.insert("status".into(), s.clone()),
                None => new.remove("status"),
            };
            new
        }
        Some("status") => {
            let mut out = old.clone();
            match new.get("status") {
                Some(s) => out.insert("status".into(), s.clone()),
                None => out.remove("status"),
            };
            // The writer's managedFields bookkeeping travels with the status.
            if let Some(m) = object::meta(&new).and_then(|m| m.get("managedFields")) {
                object::meta_mut(&mut out).insert("managedFields".into(), m.clone());
            }
            out
        }
        // Another subresource writes the part of the object its kind says.
        Some(other) => {
            let Some(mut out) = kuorum_api::kinds::of(def).and_then(|k| k.write_subresource(other, old, &new)) else {
                return new;
            };
            // The writer's managedFields bookkeeping travels with the part it wrote.
            if let Some(m) = object::meta(&new).and_then(|m| m.get("managedFields")) {
                object::meta_mut(&mut out).insert("managedFields".into(), m.clone());
            }
            out
        }
        _ => new,
    }
}

/// The segments of a simple JSONPath (`.spec.replicas` -> `spec`, `replicas`).
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('.').filter(|s| !s.is_empty())
}

/// The value at a simple JSONPath.
fn at_path<'a>(obj: &'a Object, path: &str) -> Option<&'a Value> {
    let mut segs = segments(path);
    let mut v = obj.get(segs.next()?)?;
    for seg in segs {
        v = v.get(seg)?;
    }
    Some(v)
}

/// Sets the value at a simple JSONPath, making the objects on the way.
fn set_path(obj: &mut Object, path: &str, value: Value) {
    let segs: Vec<&str> = segments(path).collect();
    let Some((last, parents)) = segs.split_last() else { return };
    let mut m = obj;
    for seg in parents {
        let entry = m.entry(seg.to_string()).or_insert_with(|| json!({}));
        if !entry.is_object() {
            *entry = json!({});
        }
        m = match entry {
            Value::Object(o) => o,
            _ => unreachable!("made an object above"),
        };
    }
    m.insert(last.to_string(), value);
}

/// Where an object of `t` keeps its desired replicas.
fn spec_replicas_path(t: &Target) -> &str {
    match (t.custom.as_ref().and_then(|c| c.scale()), t.strategy().and_then(|s| s.scale())) {
        (Some(s), _) => &s.spec_replicas_path,
        (None, Some(s)) => s.spec_replicas,
        (None, None) => ".spec.replicas",
    }
}

/// The Scale of an object of `t`: a built-in kind with a scale subresource (its strategy
/// says where), or a custom resource with one (its CRD says); absent counts read as the
/// kind's default, or 0, as kube-apiserver reads them.
fn scale_of(t: &Target, obj: &Object) -> Object {
    let meta = object::meta(obj).cloned().unwrap_or_default();
    let mut m = Map::new();
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = meta.get(field) {
            m.insert(field.into(), v.clone());
        }
    }
    let int_at = |path: &str, absent: i64| at_path(obj, path).filter(|v| v.is_i64()).cloned().unwrap_or(json!(absent));
    let (replicas, status_replicas, selector) =
        match (t.custom.as_ref().and_then(|c| c.scale()), t.strategy().and_then(|s| s.scale())) {
            (Some(paths), _) => (
                int_at(&paths.spec_replicas_path, 0),
                int_at(&paths.status_replicas_path, 0),
                paths
                    .label_selector_path
                    .as_deref()
                    .and_then(|p| at_path(obj, p))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            (None, Some(of)) => {
                let selector = match at_path(obj, of.selector) {
                    None => String::new(),
                    Some(map) if of.selector_is_map => label_selector_string(Some(&json!({"matchLabels": map}))),
                    Some(sel) => label_selector_string(Some(sel)),
                };
                (int_at(of.spec_replicas, of.default_replicas), int_at(of.status_replicas, 0), selector)
            }
            (None, None) => (json!(0), json!(0), String::new()),
        };
    let v = json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": Value::Object(m),
        "spec": {"replicas": replicas},
        "status": {"replicas": status_replicas, "selector": selector},
    });
    match v {
        Value::Object(o) => o,
        _ => unreachable!("json! of an object"),
    }
}

/// GET of `/scale`.
pub(crate) async fn get_scale(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let t = &ctx.target;
    crate::consistency::wait_fresh(st, crate::consistency::get_freshness(&ctx.query)?).await?;
    let (_, found) = st.cache.get(&t.key());
    let Some(obj) = found else {
        return Err(ApiError::not_found(t.def.group_resource(), t.name()));
    };
    let parent = object::parse_stored(&obj.bytes)?;
    Ok(json_response(StatusCode::OK, object::to_vec(&scale_of(t, &parent))))
}

/// PUT (a Scale body) or PATCH (merge, JSON or strategic, applied to the Scale) of
/// `/scale`: the object's desired replicas become the Scale's.
pub(crate) async fn write_scale(st: &RestState, ctx: Ctx, patch: bool) -> Result<Response, ApiError> {
    // Parse.
    let t = &ctx.target;
    let dry_run = object::query_dry_run(&ctx.query)?;
    let options = if patch { "PatchOptions" } else { "UpdateOptions" };
    let manager = fields::manager(&ctx.query, &ctx.headers, options, false)?;
    let patch_type = if patch {
        let ct = ctx.headers.get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        Some(PatchType::from_content_type(&negotiate::MediaType::parse(ct).essence).ok_or_else(|| {
            ApiError::unsupported_media_type(&[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            ])
        })?)
    } else {
        None
    };
    let format = if patch { BodyFormat::Json } else { BodyFormat::of(&ctx.headers)? };

    // Decode.
    let body = negotiate::read_body(&ctx.headers, ctx.body).await?;

    for attempt in 1..=MAX_ATTEMPTS {
        // Read.
        let Some(stored) = read_for_write(st, &t.key(), attempt).await? else {
            return Err(ApiError::not_found(t.def.group_resource(), t.name()));
        };
        let old = crate::conversion::parse_served(st, t, &stored).await?;
        let scale = scale_of(t, &old);
        let new_scale = match patch_type {
            Some(pt) => patch_scale(pt, &scale, &body)?,
            None => object::decode_body(format, body.clone()).await?,
        };

        // Validate.
        let replicas = scale_replicas(t, &new_scale)?;
        let current_rv = object::meta_str(&old, "resourceVersion").unwrap_or("").to_string();
        let client_rv =
            object::meta_str(&new_scale, "resourceVersion").filter(|rv| *rv != current_rv).map(str::to_string);
        if !patch && object::meta_str(&new_scale, "name") != Some(t.name()) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({})",
                object::meta_str(&new_scale, "name").unwrap_or(""),
                t.name()
            )));
        }
        let mut new = old.clone();
        set_path(&mut new, spec_replicas_path(t), Value::from(replicas));
        let now = st.clock.now_rfc3339();
        let mut new = fields::track_update(t, Some(&old), new, &manager, "scale", &now)?;
        // A scale changes no pod template: admission warns of nothing here.
        strategy::before_write(st, ctx.user.as_ref(), t, Some(&old), &mut new, &now, dry_run).await?;
        if dry_run {
            if let Some(rv) = client_rv {
                return Err(ApiError::rv_precondition_conflict(t.def.group_resource(), t.name(), &rv, &current_rv));
            }
            return Ok(json_response(StatusCode::OK, object::to_vec(&scale_of(t, &new))));
        }
        let mut new = new;
        object::meta_mut(&mut new).remove("resourceVersion");
        let precondition = Precondition {
            resource_version: object::parse_rv(Some(client_rv.as_deref().unwrap_or(&current_rv)))?,
            uid: None,
        };

        // Store.
        let cmd = Command::Update {
            key: t.key(),
            object: crate::conversion::stored(st, t, &new).await?.into(),
            precondition,
            finalizing: t.finalizing(),
        };
        match st.cluster.write(cmd, st.request_timeout).await.map_err(cluster_error)? {
            // Encode.
            Ok(stored) => {
                let parent = object::parse_stored(&stored)?;
                return Ok(json_response(StatusCode::OK, object::to_vec(&scale_of(t, &parent))));
            }
            Err(WriteError::Conflict) if client_rv.is_none() => continue,
            Err(e) => return Err(write_error(e, t.def, t.name())),
        }
    }
    Err(ApiError::conflict(t.def.group_resource(), t.name()))
}

fn patch_scale(pt: PatchType, scale: &Object, body: &[u8]) -> Result<Object, ApiError> {
    let original = Value::Object(scale.clone());
    let patched = match pt {
        PatchType::Json => kuorum_patch::json_patch(&original, body),
        PatchType::Merge => kuorum_patch::merge_patch(&original, body),
        PatchType::Strategic => match kuorum_schema::Schemas::builtin().kind("autoscaling", "v1", "Scale") {
            Some(schema) => kuorum_patch::strategic_merge_patch(&original, body, schema),
            None => kuorum_patch::merge_patch(&original, body),
        },
    }
    .map_err(|e| match e {
        PatchError::BadRequest(m) => ApiError::bad_request(m),
        PatchError::Invalid(m) => ApiError::new(kuorum_api::Reason::Invalid, m),
        PatchError::TooLarge(m) => ApiError::new(kuorum_api::Reason::RequestEntityTooLarge, m),
    })?;
    match patched {
        Value::Object(o) => Ok(o),
        _ => Err(ApiError::bad_request("the patched Scale is not an object")),
    }
}

/// `spec.replicas` of a Scale: a non-negative integer (422 otherwise).
fn scale_replicas(t: &Target, scale: &Object) -> Result<i64, ApiError> {
    let gk = GroupKind { group: "autoscaling", kind: "Scale" };
    let v = scale.get("spec").and_then(|s| s.get("replicas"));
    match v.and_then(Value::as_i64) {
        // An int32, as the Scale's Go type holds it: a larger one does not decode.
        Some(n) if n > i64::from(i32::MAX) => Err(ApiError::bad_request(format!(
            "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal number {n} into Go struct field ScaleSpec.spec.replicas of type int32"
        ))),
        Some(n) if n >= 0 => Ok(n),
        Some(n) => Err(ApiError::invalid(
            gk,
            t.name(),
            &[FieldError::invalid("spec.replicas", &n.to_string(), "must be greater than or equal to 0")],
        )),
        None if v.is_none() => Ok(0),
        None => Err(ApiError::bad_request(format!(
            "Scale in version \"v1\" cannot be handled as a Scale: spec.replicas must be an integer, got {}",
            v.map(Value::to_string).unwrap_or_default()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuorum_api::registry;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn scale_replicas_are_an_int32_and_not_negative() {
        let def = registry::lookup("apps", "v1", "deployments").unwrap();
        let t = Target {
            def,
            namespace: Some("a".into()),
            name: Some("d".into()),
            subresource: Some("scale".into()),
            custom: None,
        };
        let scale = |r: Value| obj(json!({"spec": {"replicas": r}}));
        assert_eq!(scale_replicas(&t, &scale(json!(3))).unwrap(), 3);
        assert_eq!(scale_replicas(&t, &scale(json!(2_147_483_647))).unwrap(), 2_147_483_647);
        assert_eq!(scale_replicas(&t, &scale(json!(2_147_483_648u64))).unwrap_err().code, 400);
        assert_eq!(scale_replicas(&t, &scale(json!(-1))).unwrap_err().code, 422);
        assert_eq!(scale_replicas(&t, &scale(json!(1.5))).unwrap_err().code, 400);
    }

    #[test]
    fn status_and_spec_have_separate_writers() {
        let deploy = registry::lookup("apps", "v1", "deployments").unwrap();
        let old = obj(
            json!({"metadata": {"name": "d", "labels": {"a": "1"}}, "spec": {"replicas": 1}, "status": {"ready": 1}}),
        );
        let new = obj(
            json!({"metadata": {"name": "d", "labels": {"a": "2"}}, "spec": {"replicas": 2}, "status": {"ready": 9}}),
        );
        let main = shape_write(deploy, None, &old, new.clone());
        assert_eq!(
            Value::Object(main),
            json!({"metadata": {"name": "d", "labels": {"a": "2"}}, "spec": {"replicas": 2}, "status": {"ready": 1}})
        );
        let status = shape_write(deploy, Some("status"), &old, new.clone());
        assert_eq!(
            Value::Object(status),
            json!({"metadata": {"name": "d", "labels": {"a": "1"}}, "spec": {"replicas": 1}, "status": {"ready": 9}})
        );
        let cm = registry::lookup("", "v1", "configmaps").unwrap();
        assert_eq!(shape_write(cm, None, &old, new.clone()), new, "kinds without /status keep what is written");
    }

    #[test]
    fn an_approval_writes_conditions_only() {
        let csr = registry::lookup("certificates.k8s.io", "v1", "certificatesigningrequests").unwrap();
        let old = obj(json!({"spec": {"request": "x"}, "status": {"certificate": "c"}}));
        let new = obj(json!({"spec": {"request": "y"},
                             "status": {"certificate": "d", "conditions": [{"type": "Approved", "status": "True"}]}}));
        assert_eq!(
            Value::Object(shape_write(csr, Some("approval"), &old, new)),
            json!({"spec": {"request": "x"}, "status": {"certificate": "c", "conditions": [{"type": "Approved", "status": "True"}]}})
        );
    }

    #[test]
    fn simple_paths_read_and_write() {
        let mut o = obj(json!({"spec": {"replicas": 2}, "status": "x"}));
        assert_eq!(at_path(&o, ".spec.replicas"), Some(&json!(2)));
        assert_eq!(at_path(&o, ".spec.nope"), None);
        set_path(&mut o, ".status.scale.replicas", json!(3));
        set_path(&mut o, ".spec.replicas", json!(4));
        assert_eq!(Value::Object(o), json!({"spec": {"replicas": 4}, "status": {"scale": {"replicas": 3}}}));
    }

    #[test]
    fn a_deployment_reads_as_a_scale() {
        let d = obj(
            json!({"metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "7", "labels": {"x": "y"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"tier": "fe", "app": "web"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}]}},
            "status": {"replicas": 2}}),
        );
        let deploy = registry::lookup("apps", "v1", "deployments").unwrap();
        let t = Target { def: deploy, namespace: None, name: None, subresource: None, custom: None };
        assert_eq!(
            Value::Object(scale_of(&t, &d)),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                   "metadata": {"name": "web", "namespace": "ns", "uid": "u", "resourceVersion": "7"},
                   "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=web,env in (a,b),tier=fe"}})
        );
    }
}
