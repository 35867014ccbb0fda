//! Owns binding a pod to a node, as a scheduler asks: `POST .../pods/{name}/binding`, or
//! `POST .../namespaces/{ns}/bindings` naming the pod in the Binding's `metadata.name`
//! (kube-apiserver's `BindingREST` and `LegacyBindingREST`). Nothing is stored of the
//! Binding: the pod is written, and the answer is `201` with a `Success` Status.
//!
//! parse → decode the Binding (apiVersion `v1`, kind `Binding`, the URL's namespace and,
//! on the subresource, the URL's name) → validate it (kube's `ValidatePodBinding`, 422) →
//! read the pod (404) → refuse, 409 on `pods/binding`, a pod being deleted, bound already
//! (`pod p is already assigned to node "n"`) or still gated → write what the pod's strategy
//! says binding writes (node, annotations, `PodScheduled`) on condition of the version
//! read, again from a fresh read if the pod moved on. Two schedulers binding one pod
//! through different nodes cannot both win: the second write's condition fails, and its
//! retry finds the pod bound.
//!
//! The Binding's `metadata.uid` and `metadata.resourceVersion`, when given, are
//! preconditions on the pod (409 when it is another pod or has moved on; no retry), as the
//! scheduler sends the uid. `dryRun=All` checks everything and writes nothing.

use std::time::Instant;

use axum::response::Response;
use kuorum_api::kinds::{self, Strategy};
use kuorum_api::{registry, ApiError, GroupResource, ResourceDef};
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::Value;

use crate::answered::created_success;
use crate::consistency::read_for_write;
use crate::error::{cluster_error, write_error};
use crate::negotiate;
use crate::object::{self, BodyFormat, Object};
use crate::strategy;
use crate::target::{Ctx, Target};
use crate::RestState;

/// What a refused binding's 409 names (kube's `pods/binding` conflict).
const PODS_BINDING: GroupResource<'static> = GroupResource { group: "", resource: "pods/binding" };

/// The registry entry of `kind` in the core group (a kind this module serves).
pub(crate) fn core_def(plural: &str) -> Result<&'static ResourceDef, ApiError> {
    registry::lookup("", "v1", plural).ok_or_else(|| ApiError::internal(format!("the registry has no v1 {plural}")))
}

/// The pod a request names, as a target of its own (not a subresource).
pub(crate) fn pod_target(namespace: Option<String>, name: &str) -> Result<Target, ApiError> {
    Ok(Target { def: core_def("pods")?, namespace, name: Some(name.to_string()), subresource: None, custom: None })
}

/// The strategy of pods, which says what binding and eviction write.
pub(crate) fn pod_strategy(t: &Target) -> Result<&'static dyn Strategy, ApiError> {
    t.strategy().ok_or_else(|| ApiError::internal("pods have no strategy"))
}

/// A Binding or an Eviction body checked against the URL: its apiVersion and kind (when
/// given), its namespace (when given) the URL's. Answers it with the URL's namespace.
pub(crate) fn check_body(
    obj: &mut Object,
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Result<(), ApiError> {
    let given = |k: &str| obj.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    if let Some(v) = given("apiVersion").filter(|v| v != api_version) {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({v}) does not match the expected API version ({api_version})"
        )));
    }
    if let Some(k) = given("kind").filter(|k| k != kind) {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({kind})"
        )));
    }
    if let (Some(url), Some(ns)) = (namespace, object::meta_str(obj, "namespace")) {
        if ns != url {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    }
    if let Some(url) = namespace {
        object::meta_mut(obj).insert("namespace".into(), Value::from(url));
    }
    Ok(())
}

/// POST of a Binding, to the `bindings` collection or a pod's `binding` subresource.
pub(crate) async fn create(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    // Parse.
    let t = &ctx.target;
    let bindings = core_def("bindings")?;
    let dry_run = object::query_dry_run(&ctx.query)?;

    // Decode.
    let format = BodyFormat::of(&ctx.headers)?;
    let body = negotiate::read_body(&ctx.headers, ctx.body).await?;
    let mut binding = object::decode_body(format, body).await?;
    check_body(&mut binding, "v1", "Binding", t.namespace.as_deref())?;
    let named = object::meta_str(&binding, "name").unwrap_or("").to_string();
    let pod_name = match &t.name {
        Some(url) if *url != named => {
            return Err(ApiError::bad_request("name in URL does not match name in Binding object"))
        }
        Some(url) => url.clone(),
        None => named,
    };

    // Validate.
    let errs = kinds::of(bindings).map(|s| s.validate(&binding, None)).unwrap_or_default();
    if !errs.is_empty() {
        return Err(ApiError::invalid(bindings.group_kind(), &pod_name, &errs));
    }
    if pod_name.is_empty() {
        return Err(ApiError::bad_request("Name parameter required."));
    }
    let pod_t = pod_target(t.namespace.clone(), &pod_name)?;
    let pods = pod_t.def;
    let kind = pod_strategy(&pod_t)?;
    let want_uid = object::meta_str(&binding, "uid").map(str::to_string);
    let want_rv = object::meta_str(&binding, "resourceVersion").map(str::to_string);
    let conditional = want_uid.is_some() || want_rv.is_some();
    // The time the pod's PodScheduled condition changes: the binding's creation.
    object::meta_mut(&mut binding).insert("creationTimestamp".into(), Value::from(st.clock.now_rfc3339()));

    let deadline = Instant::now() + st.request_timeout;
    for attempt in 1.. {
        // Read (from a fresh copy when the client's preconditions are checked against it).
        let read = read_for_write(st, &pod_t.key(), if conditional { attempt + 1 } else { attempt }).await?;
        let Some(stored) = read else {
            return Err(ApiError::not_found(pods.group_resource(), &pod_name));
        };
        let pod = object::parse_stored(&stored)?;
        let read_rv = object::meta_str(&pod, "resourceVersion").unwrap_or("").to_string();
        if let Some(uid) = &want_uid {
            let actual = object::meta_str(&pod, "uid").unwrap_or("");
            if uid != actual {
                return Err(ApiError::uid_precondition_conflict(pods.group_resource(), &pod_name, uid, actual));
            }
        }
        if let Some(rv) = want_rv.as_ref().filter(|rv| **rv != read_rv) {
            let why = format!(
                "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {read_rv}"
            );
            return Err(ApiError::conflict_because(pods.group_resource(), &pod_name, &why));
        }
        if let Some(why) = refusal(&pod, &pod_name) {
            return Err(ApiError::conflict_because(PODS_BINDING, &pod_name, &why));
        }
        let Some(new) = kind.write_subresource("binding", &pod, &binding) else {
            return Err(ApiError::internal("pods have no binding subresource"));
        };
        if dry_run {
            return Ok(created_success());
        }

        // Store.
        let cmd = Command::Update {
            key: pod_t.key(),
            object: strategy::stored(&pod_t, &new)?.into(),
            precondition: Precondition { resource_version: object::parse_rv(Some(&read_rv))?, uid: None },
            finalizing: pod_t.finalizing(),
        };
        match st.cluster.write(cmd, st.request_timeout).await.map_err(cluster_error)? {
            Ok(_) => return Ok(created_success()),
            Err(WriteError::Conflict | WriteError::NotFound) if !conditional && Instant::now() < deadline => continue,
            Err(WriteError::Conflict) => return Err(ApiError::conflict(pods.group_resource(), &pod_name)),
            Err(e) => return Err(write_error(e, pods, &pod_name)),
        }
    }
    unreachable!("the loop returns")
}

/// Why `pod` may not be bound, as kube's `setPodNodeAndMetadata` words it: it is being
/// deleted, it has a node, or scheduling gates still hold it.
fn refusal(pod: &Object, name: &str) -> Option<String> {
    if object::meta(pod).and_then(|m| m.get("deletionTimestamp")).is_some_and(|d| !d.is_null()) {
        return Some(format!("pod {name} is being deleted, cannot be assigned to a host"));
    }
    let spec = pod.get("spec");
    let node = spec.and_then(|s| s.get("nodeName")).and_then(Value::as_str).unwrap_or("");
    if !node.is_empty() {
        return Some(format!("pod {name} is already assigned to node {node:?}"));
    }
    let gates = spec.and_then(|s| s.get("schedulingGates")).and_then(Value::as_array);
    if gates.is_some_and(|g| !g.is_empty()) {
        return Some(format!("pod {name} has non-empty .spec.schedulingGates"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn bound_deleting_and_gated_pods_are_refused() {
        assert_eq!(refusal(&obj(json!({"spec": {}})), "p"), None);
        assert_eq!(refusal(&obj(json!({"spec": {"nodeName": ""}})), "p"), None);
        assert_eq!(
            refusal(&obj(json!({"spec": {"nodeName": "n1"}})), "p").unwrap(),
            r#"pod p is already assigned to node "n1""#
        );
        assert_eq!(
            refusal(&obj(json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {}})), "p").unwrap(),
            "pod p is being deleted, cannot be assigned to a host"
        );
        assert_eq!(
            refusal(&obj(json!({"spec": {"schedulingGates": [{"name": "g"}]}})), "p").unwrap(),
            "pod p has non-empty .spec.schedulingGates"
        );
    }

    #[test]
    fn bodies_are_checked_against_the_url() {
        let mut b = obj(json!({"metadata": {"name": "p"}}));
        check_body(&mut b, "v1", "Binding", Some("ns")).unwrap();
        assert_eq!(b["metadata"]["namespace"], "ns");
        let mut b = obj(json!({"apiVersion": "apps/v1", "metadata": {}}));
        assert_eq!(check_body(&mut b, "v1", "Binding", Some("ns")).unwrap_err().code, 400);
        let mut b = obj(json!({"kind": "Pod", "metadata": {}}));
        assert_eq!(check_body(&mut b, "v1", "Binding", Some("ns")).unwrap_err().code, 400);
        let mut b = obj(json!({"metadata": {"namespace": "other"}}));
        assert_eq!(check_body(&mut b, "v1", "Binding", Some("ns")).unwrap_err().code, 400);
    }
}
