//! Owns CRD conversion webhooks. A custom resource whose CRD says
//! `spec.conversion.strategy: Webhook` is converted between its versions by a
//! `ConversionReview` (v1, or v1beta1 when the CRD accepts only that) posted to the CRD's
//! webhook, on the node that serves the request:
//!
//! - **Reads** (get, list, watch, and the object a write answers with) convert what is
//!   stored at another version to the version the request names; a list's objects go in
//!   reviews of at most [`BATCH`] objects and 1 MiB, only those at another version.
//! - **Writes** convert the object the write starts from to the request's version, and
//!   the result to the storage version before it is proposed: a conversion that fails
//!   leaves nothing in the log.
//!
//! Answers are checked as kube-apiserver checks them: the review's `uid`,
//! `result.status: Success`, one object per object sent, each at the desired apiVersion
//! with the original kind, name, namespace and uid. Of the metadata, only labels and
//! annotations may change; the rest is restored from the original. A failure is kube's
//! 500 `conversion webhook for <group/version, Kind=kind> failed: ...`.
//!
//! With strategy `None` (or for built-in kinds) nothing here runs: the callers fall
//! through to [`object`]'s synchronous reads. [`convert`] (an object to another version,
//! for admission's equivalent resources) also converts those, without a webhook.

use std::borrow::Cow;
use std::time::Duration;

use bytes::Bytes;
use kuorum_api::crd::{Conversion, CONVERSION_REVIEW_VERSIONS};
use kuorum_api::validation::validate_labels;
use kuorum_api::{ApiError, ResourceDef};
use serde_json::{json, Map, Value};

use crate::custom::CustomRef;
use crate::object::{self, Object};
use crate::target::Target;
use crate::webhook::{post_json, service_client, PostError};
use crate::RestState;

/// How long a conversion webhook may take: kube-apiserver's client for them waits 30 s.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The most objects sent in one `ConversionReview`, so that a list of 10,000 objects is
/// not one request (and one answer) of its whole size.
pub(crate) const BATCH: usize = 100;

/// The most stored bytes sent in one review (but at least one object): the answer must
/// fit in what a webhook answer may be ([`crate::webhook::post_json`] reads at most the
/// body limit), and a review's request is held in memory whole.
const BATCH_BYTES: usize = 1 << 20;

/// The CRD of `t` when it converts through a webhook.
fn webhook(t: &Target) -> Option<&CustomRef> {
    t.custom.as_ref().filter(|c| matches!(c.conversion(), Conversion::Webhook { .. }))
}

/// Whether objects of `t` convert through a webhook.
pub(crate) fn by_webhook(t: &Target) -> bool {
    webhook(t).is_some()
}

/// Stored bytes as `t` serves them ([`object::served_bytes`]), converted by the webhook
/// when they are at another version.
pub(crate) async fn served_bytes(st: &RestState, t: &Target, bytes: &Bytes) -> Result<Bytes, ApiError> {
    if webhook(t).is_none() || object::has_type_meta(bytes, t.def) {
        return object::served_bytes(bytes, t.def);
    }
    Ok(Bytes::from(object::to_vec(&parse_served(st, t, bytes).await?)))
}

/// Stored bytes parsed and read as `t` serves them ([`object::parse_served`]), converted
/// by the webhook when they are at another version.
pub(crate) async fn parse_served(st: &RestState, t: &Target, bytes: &[u8]) -> Result<Object, ApiError> {
    if webhook(t).is_none() {
        return object::parse_served(bytes, t.def);
    }
    let obj = object::parse_stored(bytes)?;
    let mut converted = to_version(st, t, vec![obj], t.def).await?;
    let mut obj = converted.pop().ok_or_else(|| ApiError::internal("the conversion lost the object"))?;
    object::set_type_meta(&mut obj, t.def);
    Ok(obj)
}

/// Stored objects' bytes as `t` serves them: `None` for those served as they are, the
/// converted bytes for those at another version (one review per [`BATCH`]).
pub(crate) async fn served_many(st: &RestState, t: &Target, items: &[&[u8]]) -> Result<Vec<Option<Bytes>>, ApiError> {
    let mut out = vec![None; items.len()];
    if webhook(t).is_none() {
        return Ok(out);
    }
    let want = t.def.api_version();
    let mut pending: Vec<(usize, Object)> = Vec::new();
    for (i, bytes) in items.iter().enumerate() {
        if object::has_type_meta(bytes, t.def) {
            continue;
        }
        let obj = object::parse_stored(bytes)?;
        if api_version(&obj) != want {
            pending.push((i, obj));
        }
    }
    while !pending.is_empty() {
        // At most BATCH objects and BATCH_BYTES of them, at least one.
        let mut take = 0;
        let mut size = 0;
        while take < pending.len().min(BATCH) {
            size += items[pending[take].0].len();
            if take > 0 && size > BATCH_BYTES {
                break;
            }
            take += 1;
        }
        let batch: Vec<(usize, Object)> = pending.drain(..take).collect();
        let (slots, objs): (Vec<usize>, Vec<Object>) = batch.into_iter().unzip();
        for (slot, mut obj) in slots.into_iter().zip(to_version(st, t, objs, t.def).await?) {
            object::set_type_meta(&mut obj, t.def);
            out[slot] = Some(Bytes::from(object::to_vec(&obj)));
        }
    }
    Ok(out)
}

/// The bytes `obj` (at the request's version) is stored as ([`crate::strategy::stored`]),
/// converted to the storage version by the webhook first when that is another version.
pub(crate) async fn stored(st: &RestState, t: &Target, obj: &Object) -> Result<Vec<u8>, ApiError> {
    let storage = t.storage_def();
    let obj = match webhook(t) {
        Some(_) if !std::ptr::eq(storage, t.def) => {
            let mut converted = to_version(st, t, vec![obj.clone()], storage).await?;
            Cow::Owned(converted.pop().ok_or_else(|| ApiError::internal("the conversion lost the object"))?)
        }
        _ => Cow::Borrowed(obj),
    };
    crate::strategy::stored(t, &obj)
}

/// `obj` (an object of `t`) at `to`'s version, another version of the same resource: for
/// a built-in kind through its stored kind; for a custom resource by the webhook when its
/// CRD has one, else with only its `apiVersion` changed (strategy `None`).
pub(crate) async fn convert(st: &RestState, t: &Target, obj: &Object, to: &ResourceDef) -> Result<Object, ApiError> {
    if t.custom.is_none() {
        // A built-in kind: through the version it is stored at, as every write and read of
        // it converts.
        let mut obj = obj.clone();
        if let Some(s) = t.strategy() {
            if !std::ptr::eq(t.storage_def(), t.def) {
                s.to_stored(&mut obj);
            }
        }
        object::set_type_meta(&mut obj, t.storage_def());
        object::to_served(&mut obj, to);
        object::set_type_meta(&mut obj, to);
        return Ok(obj);
    }
    let mut converted = to_version(st, t, vec![obj.clone()], to).await?;
    let mut obj = converted.pop().ok_or_else(|| ApiError::internal("the conversion lost the object"))?;
    object::set_type_meta(&mut obj, to);
    Ok(obj)
}

fn api_version(obj: &Object) -> &str {
    top_str(obj, "apiVersion")
}

fn top_str<'a>(obj: &'a Object, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

/// kube's `GroupVersionKind` string: `group/version, Kind=kind`.
fn gvk(obj: &Object) -> String {
    format!("{}, Kind={}", api_version(obj), top_str(obj, "kind"))
}

/// `objects` converted to `to`'s version: those already there as they are, the others by
/// one review to the webhook of `t`'s CRD.
async fn to_version(
    st: &RestState,
    t: &Target,
    mut objects: Vec<Object>,
    to: &ResourceDef,
) -> Result<Vec<Object>, ApiError> {
    let Some(c) = webhook(t) else { return Ok(objects) };
    let Conversion::Webhook { client_config, review_versions } = c.conversion() else { return Ok(objects) };
    let desired = to.api_version();
    let slots: Vec<usize> = (0..objects.len()).filter(|&i| api_version(&objects[i]) != desired).collect();
    let Some(&first) = slots.first() else { return Ok(objects) };
    let failed = |why: &dyn std::fmt::Display| {
        ApiError::internal(format!("conversion webhook for {} failed: {why}", gvk(&objects[first])))
    };
    let sent: Vec<&Object> = slots.iter().map(|&i| &objects[i]).collect();
    let review_version = review_versions
        .iter()
        .map(String::as_str)
        .find(|v| CONVERSION_REVIEW_VERSIONS.contains(v))
        .unwrap_or(CONVERSION_REVIEW_VERSIONS[0]);
    let uid = kuorum_api::seams::new_uid(&*st.entropy);
    let review = json!({
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": sent},
    });
    let body = serde_json::to_vec(&review).map_err(|e| failed(&e))?;
    let builder = || reqwest::Client::builder().timeout(TIMEOUT).connect_timeout(TIMEOUT);
    let (client, url) = service_client(st, client_config, "conversion", builder).map_err(|e| failed(&e))?;
    let answer = post_json(&client, &url, body).await.map_err(|e| match e {
        PostError::Invalid(e) => failed(&format!("received invalid webhook response: {e}")),
        other => failed(&other),
    })?;
    let converted = converted_objects(&answer, &uid).map_err(|e| failed(&e))?;
    if converted.len() != slots.len() {
        return Err(ApiError::internal(format!(
            "conversion webhook for {} returned {} objects, expected {}",
            gvk(&objects[first]),
            converted.len(),
            slots.len()
        )));
    }
    for (n, (slot, out)) in slots.into_iter().zip(converted).enumerate() {
        let checked = checked_object(&objects[slot], out, &desired).map_err(|why| {
            ApiError::internal(format!(
                "conversion webhook for {} returned invalid converted object at index {n}: {why}",
                gvk(&objects[slot])
            ))
        })?;
        objects[slot] = checked;
    }
    Ok(objects)
}

/// `response.convertedObjects` of a review answer, once its uid and result say it is
/// the answer to this review and a success.
fn converted_objects(answer: &Value, uid: &str) -> Result<Vec<Value>, String> {
    let response = answer.get("response").and_then(Value::as_object).ok_or("no response provided")?;
    let got = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(format!("expected response uid {uid:?}, got {got:?}"));
    }
    let status = response.get("result").and_then(|r| r.get("status")).and_then(Value::as_str).unwrap_or("");
    if status != "Success" {
        let message = response.get("result").and_then(|r| r.get("message")).and_then(Value::as_str).unwrap_or("");
        return Err(format!("conversion webhook error: {message}"));
    }
    Ok(response.get("convertedObjects").and_then(Value::as_array).cloned().unwrap_or_default())
}

/// A converted object checked against its original (kube's `validateConvertedObject`
/// and `restoreObjectMeta`): the desired apiVersion, the same kind, name, namespace and
/// uid; the original's metadata but for labels and annotations, which the webhook may
/// change (valid ones only).
fn checked_object(original: &Object, converted: Value, desired: &str) -> Result<Object, String> {
    let Value::Object(mut out) = converted else { return Err("the converted object is not an object".into()) };
    if api_version(&out) != desired {
        return Err(format!("invalid groupVersion (expected {desired}, received {})", api_version(&out)));
    }
    let (kind, got) = (top_str(original, "kind"), top_str(&out, "kind"));
    if kind != got {
        return Err(format!("invalid kind (expected {kind}, received {got})"));
    }
    for field in ["name", "namespace", "uid"] {
        let (e, a) = (object::meta_str(original, field).unwrap_or(""), object::meta_str(&out, field).unwrap_or(""));
        if e != a {
            let what = if field == "uid" { "UID" } else { field };
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    let Some(Value::Object(answered)) = out.remove("metadata") else {
        return Err("missing metadata in converted object".into());
    };
    let mut meta: Map<String, Value> = object::meta(original).cloned().unwrap_or_default();
    for field in ["labels", "annotations"] {
        match answered.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
            }
            Some(Value::Object(m)) => {
                if let Some((k, _)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(format!("metadata.{field}[{k}] must be a string in converted object"));
                }
                if meta.get(field) != Some(&Value::Object(m.clone())) && field == "labels" {
                    if let Some(e) = validate_labels(m, "metadata.labels").first() {
                        return Err(e.to_string());
                    }
                }
                meta.insert(field.into(), Value::Object(m.clone()));
            }
            Some(other) => {
                return Err(format!("invalid metadata.{field} of type {} in converted object", kind_of(other)))
            }
        }
    }
    out.insert("metadata".into(), Value::Object(meta));
    Ok(out)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn original() -> Object {
        obj(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "labels": {"x": "1"}},
            "spec": {"size": "3"}}))
    }

    #[test]
    fn converted_objects_keep_their_identity_and_metadata() {
        let converted = json!({"apiVersion": "example.com/v2", "kind": "Widget",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "999",
                         "labels": {"x": "2"}, "finalizers": ["added"]},
            "spec": {"replicas": 3}});
        let out = checked_object(&original(), converted, "example.com/v2").unwrap();
        assert_eq!(out["spec"], json!({"replicas": 3}));
        // The webhook's labels; the original's resourceVersion; its finalizer is dropped.
        assert_eq!(
            out["metadata"],
            json!({"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7", "labels": {"x": "2"}})
        );
    }

    #[test]
    fn converted_objects_that_change_identity_are_refused() {
        let at = |v: Value| checked_object(&original(), v, "example.com/v2").unwrap_err();
        let base = json!({"apiVersion": "example.com/v2", "kind": "Widget",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u1"}});
        let mut v = base.clone();
        v["apiVersion"] = json!("example.com/v1");
        assert_eq!(at(v), "invalid groupVersion (expected example.com/v2, received example.com/v1)");
        let mut v = base.clone();
        v["kind"] = json!("Gadget");
        assert_eq!(at(v), "invalid kind (expected Widget, received Gadget)");
        let mut v = base.clone();
        v["metadata"]["name"] = json!("b");
        assert_eq!(at(v), "must have the same name: a != b");
        let mut v = base.clone();
        v["metadata"]["uid"] = json!("u2");
        assert_eq!(at(v), "must have the same UID: u1 != u2");
        let mut v = base.clone();
        v["metadata"]["labels"] = json!({"bad key!": "v"});
        assert!(at(v).starts_with("metadata.labels: Invalid value: \"bad key!\""));
        let mut v = base;
        v.as_object_mut().unwrap().remove("metadata");
        // kube checks the name first, so an answer without metadata has lost its name.
        assert_eq!(at(v), "must have the same name: a != ");
    }

    #[test]
    fn answers_must_be_this_reviews_success() {
        let answer = |uid: &str, result: Value| json!({"response": {"uid": uid, "result": result, "convertedObjects": [{"a": 1}]}});
        assert_eq!(converted_objects(&answer("u", json!({"status": "Success"})), "u").unwrap().len(), 1);
        assert_eq!(
            converted_objects(&answer("v", json!({"status": "Success"})), "u").unwrap_err(),
            "expected response uid \"u\", got \"v\""
        );
        assert_eq!(
            converted_objects(&answer("u", json!({"status": "Failure", "message": "no"})), "u").unwrap_err(),
            "conversion webhook error: no"
        );
        assert_eq!(converted_objects(&json!({}), "u").unwrap_err(), "no response provided");
    }
}
