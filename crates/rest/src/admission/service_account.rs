//! `ServiceAccount`: a new pod runs as a service account, `default` unless it names one;
//! a named account must exist (403 otherwise, kube's message). Unless the pod or its
//! account turns `automountServiceAccountToken` off, every container (init containers
//! first) mounts the API access volume at `/var/run/secrets/kubernetes.io/serviceaccount`,
//! and the pod gets that volume, `kube-api-access-<5 random>`: a projected bound token
//! (3607 s), the `kube-root-ca.crt` ConfigMap's `ca.crt`, and the namespace. A pod without
//! image pull secrets takes its account's.
//!
//! kuorum runs no service-account controller (kube-controller-manager makes `default` in
//! every namespace): a pod whose `default` account does not exist yet is admitted, where
//! kube-apiserver would wait for the controller.

use kuorum_api::seams::name_suffix;
use kuorum_api::ApiError;
use serde_json::{json, Value};

use super::{cached, containers_mut, Attributes};
use crate::object::Object;

const DEFAULT: &str = "default";
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const VOLUME_PREFIX: &str = "kube-api-access-";

pub(crate) fn admit(a: &Attributes, obj: &mut Object) -> Result<(), ApiError> {
    if !a.creates("", "pods") {
        return Ok(());
    }
    // Mirror pods come from a kubelet's manifests: kube leaves them as they are.
    let mirror =
        obj.get("metadata").and_then(|m| m.get("annotations")).and_then(|a| a.get("kubernetes.io/config.mirror"));
    if mirror.is_some() {
        return Ok(());
    }
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else { return Ok(()) };
    let name = match spec.get("serviceAccountName").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => {
            spec.insert("serviceAccountName".into(), Value::from(DEFAULT));
            DEFAULT.to_string()
        }
    };
    let account = cached(a.st, "", "serviceaccounts", Some(a.namespace()), &name);
    if account.is_none() && name != DEFAULT {
        let ns = a.namespace();
        let why = format!("error looking up service account {ns}/{name}: serviceaccount \"{name}\" not found");
        return Err(a.forbidden(obj, &why));
    }
    let automount = spec
        .get("automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| account.as_ref().and_then(|sa| sa.get("automountServiceAccountToken")).and_then(Value::as_bool))
        .unwrap_or(true);
    if automount {
        mount_token(spec, &name_suffix(&*a.st.entropy));
    }
    let pulls = spec.get("imagePullSecrets").and_then(Value::as_array).is_some_and(|l| !l.is_empty());
    if let (false, Some(from)) = (pulls, account.as_ref().and_then(|sa| sa.get("imagePullSecrets"))) {
        if from.as_array().is_some_and(|l| !l.is_empty()) {
            spec.insert("imagePullSecrets".into(), from.clone());
        }
    }
    Ok(())
}

/// kube's `mountServiceAccountToken`: the volume (an existing `kube-api-access-*` one, or
/// a new one named with `suffix`) mounted read-only by every container that mounts
/// nothing at the token path yet.
fn mount_token(spec: &mut serde_json::Map<String, Value>, suffix: &str) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .find(|n| n.starts_with(VOLUME_PREFIX))
        .map(str::to_string);
    let volume = existing.clone().unwrap_or_else(|| format!("{VOLUME_PREFIX}{suffix}"));
    let mut mounted = false;
    for c in containers_mut(spec, &["initContainers", "containers"]) {
        let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
        if !mounts.is_array() {
            *mounts = json!([]);
        }
        let list = mounts.as_array_mut().expect("made a list above");
        if list.iter().any(|m| m.get("mountPath").and_then(Value::as_str) == Some(MOUNT_PATH)) {
            continue;
        }
        list.push(json!({"name": volume, "readOnly": true, "mountPath": MOUNT_PATH}));
        mounted = true;
    }
    if existing.is_some() || !mounted {
        return;
    }
    let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
    if !volumes.is_array() {
        *volumes = json!([]);
    }
    volumes.as_array_mut().expect("made a list above").push(json!({
        "name": volume,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
            ],
            "defaultMode": 420
        }
    }));
}
