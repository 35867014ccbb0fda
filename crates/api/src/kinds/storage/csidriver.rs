//! CSIDriver (storage.k8s.io/v1): cluster-scoped; its spec's flags default as kube
//! defaults them (attach required; no pod info, capacity tracking, republish or SELinux
//! mounts; fsGroup policy ReadWriteOnceWithFSType; Persistent volumes); `attachRequired`
//! and `volumeLifecycleModes` are fixed once created; printed with its flags.

use serde_json::{json, Value};

use crate::kinds::common::{immutable, one_of};
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS};
use crate::validation::{BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "storage.k8s.io",
    version: "v1",
    kind: "CSIDriver",
    plural: "csidrivers",
    singular: "csidriver",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[],
    list_kind: "CSIDriverList",
    // kube bumps the generation when the spec changes but sets none on create.
    tracks_generation: false,
};

const CSI_DRIVER_COLUMNS: &[Column] = &[
    NAME,
    col(
        "AttachRequired",
        "boolean",
        "attachRequired indicates this CSI volume driver requires an attach operation (because it implements the \
         CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the \
         attach volume interface which checks the volumeattachment status and waits until the volume is attached \
         before proceeding to mounting. The CSI external-attacher coordinates with CSI volume driver and updates \
         the volumeattachment status when the attach operation is complete. If the value is specified to false, \
         the attach operation will be skipped. Otherwise the attach operation will be called.\n\nThis field is \
         immutable.",
    ),
    col(
        "PodInfoOnMount",
        "boolean",
        "podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, \
         podUID, etc.) during mount operations, if set to true. If set to false, pod information will not be \
         passed on mount. Default is false.\n\nThe CSI driver specifies podInfoOnMount as part of driver \
         deployment. If true, Kubelet will pass pod information as VolumeContext in the CSI NodePublishVolume() \
         calls. The CSI driver is responsible for parsing and validating the information passed in as \
         VolumeContext.\n\nThe following VolumeContext will be passed if podInfoOnMount is set to true. This \
         list might grow, but the prefix will be used. \"csi.storage.k8s.io/pod.name\": pod.Name \
         \"csi.storage.k8s.io/pod.namespace\": pod.Namespace \"csi.storage.k8s.io/pod.uid\": string(pod.UID) \
         \"csi.storage.k8s.io/ephemeral\": \"true\" if the volume is an ephemeral inline \
         volume\n                                defined by a CSIVolumeSource, otherwise \
         \"false\"\n\n\"csi.storage.k8s.io/ephemeral\" is a new feature in Kubernetes 1.16. It is only required \
         for drivers which support both the \"Persistent\" and \"Ephemeral\" VolumeLifecycleMode. Other drivers \
         can leave pod info disabled and/or ignore this field. As Kubernetes 1.15 doesn't support this field, \
         drivers can only support one mode when deployed on such a cluster and the deployment determines which \
         mode that is, for example via a command line parameter of the driver.\n\nThis field was immutable in \
         Kubernetes < 1.29 and now is mutable.",
    ),
    col(
        "StorageCapacity",
        "boolean",
        "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage \
         capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity \
         information, if set to true.\n\nThe check can be enabled immediately when deploying a driver. In that \
         case, provisioning new volumes with late binding will pause until the driver deployment has published \
         some suitable CSIStorageCapacity object.\n\nAlternatively, the driver can be deployed with the field \
         unset or false and it can be flipped later when storage capacity information has been \
         published.\n\nThis field was immutable in Kubernetes <= 1.22 and now is mutable.",
    ),
    col(
        "TokenRequests",
        "string",
        "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to \
         do necessary authentication. Kubelet will pass the tokens in VolumeContext in the CSI NodePublishVolume \
         calls. The CSI driver should parse and validate the following VolumeContext: \
         \"csi.storage.k8s.io/serviceAccount.tokens\": {\n  \"<audience>\": {\n    \"token\": <token>,\n    \
         \"expirationTimestamp\": <expiration timestamp in RFC3339>,\n  },\n  ...\n}\n\nNote: Audience in each \
         TokenRequest should be different and at most one token is empty string. To receive a new token after \
         expiry, RequiresRepublish can be used to trigger NodePublishVolume periodically.",
    ),
    col(
        "RequiresRepublish",
        "boolean",
        "requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to \
         reflect any possible change in the mounted volume. This field defaults to false.\n\nNote: After a \
         successful initial NodePublishVolume call, subsequent calls to NodePublishVolume should only update the \
         contents of the volume. New mount points will not be seen by a running container.",
    ),
    col(
        "Modes",
        "string",
        "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports. The default if the \
         list is empty is \"Persistent\", which is the usage defined by the CSI specification and implemented in \
         Kubernetes via the usual PV/PVC mechanism.\n\nThe other mode is \"Ephemeral\". In this mode, volumes \
         are defined inline inside the pod spec with CSIVolumeSource and their lifecycle is tied to the \
         lifecycle of that pod. A driver has to be aware of this because it is only going to get a \
         NodePublishVolume call for such a volume.\n\nFor more information about implementing this mode, see \
         https://kubernetes-csi.github.io/docs/ephemeral-local-volumes.html A driver can support one or more of \
         these modes and more modes may be added in the future.\n\nThis field is beta. This field is immutable.",
    ),
    AGE,
];

/// Shortest and longest token lifetimes a driver may ask for (10 minutes, 2^32 s).
const MIN_TOKEN_SECONDS: i64 = 600;
const MAX_TOKEN_SECONDS: i64 = 1 << 32;

pub struct CSIDriver;

impl Strategy for CSIDriver {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        set_default(obj, "spec", json!({}));
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "attachRequired", json!(true));
        set_default(spec, "podInfoOnMount", json!(false));
        set_default(spec, "storageCapacity", json!(false));
        set_default(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
        if spec.get("volumeLifecycleModes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
        }
        set_default(spec, "requiresRepublish", json!(false));
        set_default(spec, "seLinuxMount", json!(false));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        // kube reports attachRequired under its misspelt path.
        for (field, path) in [
            ("attachRequired", "spec.attachedRequired"),
            ("podInfoOnMount", "spec.podInfoOnMount"),
            ("storageCapacity", "spec.storageCapacity"),
        ] {
            if spec.get(field).is_none_or(Value::is_null) {
                errs.push(FieldError::required(path, ""));
            }
        }
        one_of(obj, "spec.fsGroupPolicy", &["File", "None", "ReadWriteOnceWithFSType"], &mut errs);
        token_requests(spec, &mut errs);
        for mode in arr_at(spec, "/volumeLifecycleModes") {
            let mode = mode.as_str().unwrap_or("");
            if mode != "Persistent" && mode != "Ephemeral" {
                errs.push(FieldError::not_supported("spec.volumeLifecycleModes", mode, &["Persistent", "Ephemeral"]));
            }
        }
        if spec.get("seLinuxMount").is_none_or(Value::is_null) {
            errs.push(FieldError::required("spec.seLinuxMount", ""));
        }
        if let Some(period) = spec.get("nodeAllocatableUpdatePeriodSeconds").and_then(Value::as_i64).filter(|p| *p < 10)
        {
            errs.push(FieldError::invalid_value(
                "spec.nodeAllocatableUpdatePeriodSeconds",
                BadValue::Raw(period.to_string()),
                "must be greater than or equal to 10 seconds",
            ));
        }
        if let Some(old) = old {
            let mut fixed = Vec::new();
            immutable(obj, Some(old), "spec.attachRequired", &mut fixed);
            fixed.iter_mut().for_each(|e| e.field = "spec.attachedRequired".into());
            errs.extend(fixed);
            immutable(obj, Some(old), "spec.volumeLifecycleModes", &mut errs);
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        CSI_DRIVER_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let flag =
            |f: &str, default: bool| obj.pointer(&format!("/spec/{f}")).and_then(Value::as_bool).unwrap_or(default);
        let tokens = match obj.pointer("/spec/tokenRequests").and_then(Value::as_array) {
            None => "<unset>".to_string(),
            Some(requests) => requests.iter().map(|t| str_at(t, "/audience")).collect::<Vec<_>>().join(","),
        };
        let modes: Vec<&str> = arr_at(obj, "/spec/volumeLifecycleModes").iter().filter_map(Value::as_str).collect();
        Row::plain(vec![
            name(obj).into(),
            flag("attachRequired", true).into(),
            flag("podInfoOnMount", false).into(),
            flag("storageCapacity", false).into(),
            tokens.into(),
            flag("requiresRepublish", false).into(),
            or_none(&modes.join(",")).into(),
            age(obj, now).into(),
        ])
    }
}

/// Token requests: distinct audiences, lifetimes between 10 minutes and 2^32 seconds.
fn token_requests(spec: &Value, errs: &mut Vec<FieldError>) {
    let mut audiences = std::collections::HashSet::new();
    for (i, request) in arr_at(spec, "/tokenRequests").iter().enumerate() {
        let path = format!("spec.tokenRequests[{i}]");
        let audience = str_at(request, "/audience");
        if !audiences.insert(audience) {
            errs.push(FieldError::duplicate(&format!("{path}.audience"), BadValue::Str(audience.into())));
            continue;
        }
        let Some(seconds) = request.get("expirationSeconds").and_then(Value::as_i64) else { continue };
        let field = format!("{path}.expirationSeconds");
        if seconds < MIN_TOKEN_SECONDS {
            errs.push(FieldError::invalid_value(
                &field,
                BadValue::Raw(seconds.to_string()),
                "may not specify a duration less than 10 minutes",
            ));
        }
        if seconds > MAX_TOKEN_SECONDS {
            errs.push(FieldError::invalid_value(
                &field,
                BadValue::Raw(seconds.to_string()),
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn shown(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn flags_default_as_kube_defaults_them() {
        let mut d = obj(json!({"metadata": {"name": "ebs.csi.aws.com"}}));
        CSIDriver.defaults(&mut d);
        assert_eq!(
            d["spec"],
            json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
                "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
                "requiresRepublish": false, "seLinuxMount": false})
        );
        assert!(CSIDriver.validate(&d, None).is_empty());
        let row = CSIDriver.row(&Value::Object(d), 0);
        assert_eq!(
            &row.cells[1..7],
            [json!(true), json!(false), json!(false), json!("<unset>"), json!(false), json!("Persistent")]
        );
    }

    #[test]
    fn attach_required_is_fixed_under_its_kube_path() {
        let mut old = obj(json!({"spec": {}}));
        CSIDriver.defaults(&mut old);
        let mut new = obj(
            json!({"spec": {"attachRequired": false, "tokenRequests": [{"audience": "a", "expirationSeconds": 60}]}}),
        );
        CSIDriver.defaults(&mut new);
        assert_eq!(
            shown(&CSIDriver.validate(&new, Some(&old))),
            [
                "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
                "spec.attachedRequired: Invalid value: false: field is immutable",
            ]
        );
    }
}
