//! PodCertificateRequest (certificates.k8s.io/v1): namespaced, status subresource; a
//! kubelet's request for a pod's certificate; the pod, service account and node must be
//! named, `maxExpirationSeconds` defaults to a day and stays within the signer's range;
//! created without status; the spec never changes.

use serde_json::{json, Value};

use super::signer::validate_signer_name;
use crate::kinds::common::{at, immutable, required, str_at as field_str};
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{is_dns1123_subdomain, BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "certificates.k8s.io",
    version: "v1",
    kind: "PodCertificateRequest",
    plural: "podcertificaterequests",
    singular: "podcertificaterequest",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "PodCertificateRequestList",
    tracks_generation: false,
};

/// The shortest certificate lifetime a request may allow (an hour).
const MIN_MAX_EXPIRATION: i64 = 3600;
/// The longest for `kubernetes.io` signers (a day), which is also the default.
const KUBERNETES_MAX_MAX_EXPIRATION: i64 = 86400;
/// The longest for any other signer (91 days).
const MAX_MAX_EXPIRATION: i64 = 7_862_400;

pub struct PodCertificateRequest;

impl Strategy for PodCertificateRequest {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = child(obj, "spec") {
            set_default(spec, "maxExpirationSeconds", json!(KUBERNETES_MAX_MAX_EXPIRATION));
        }
    }

    /// Only the signer issues, denies or fails a request.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({}));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if old.is_some() {
            // Every spec field is immutable after creation.
            immutable(obj, old, "spec", &mut errs);
            return errs;
        }
        let signer = field_str(obj, "spec.signerName");
        validate_signer_name("spec.signerName", signer, &mut errs);
        for (name, uid) in [("podName", "podUID"), ("serviceAccountName", "serviceAccountUID"), ("nodeName", "nodeUID")]
        {
            let path = format!("spec.{name}");
            let value = field_str(obj, &path);
            for msg in is_dns1123_subdomain(value) {
                errs.push(FieldError::invalid(&path, value, msg));
            }
            let path = format!("spec.{uid}");
            match field_str(obj, &path) {
                "" => errs.push(FieldError::invalid(&path, "", "must not be empty")),
                v if v.len() > 128 => errs.push(FieldError::too_long(&path, 128)),
                _ => {}
            }
        }
        match at(obj, "spec.maxExpirationSeconds").and_then(Value::as_i64) {
            None => errs.push(FieldError::required("spec.maxExpirationSeconds", "must be set")),
            Some(secs) => {
                let max = if is_kubernetes_signer(signer) { KUBERNETES_MAX_MAX_EXPIRATION } else { MAX_MAX_EXPIRATION };
                if !(MIN_MAX_EXPIRATION..=max).contains(&secs) {
                    errs.push(FieldError::invalid_value(
                        "spec.maxExpirationSeconds",
                        BadValue::Raw(secs.to_string()),
                        format!("must be in the range [{MIN_MAX_EXPIRATION}, {max}]"),
                    ));
                }
            }
        }
        required(obj, "spec.stubPKCS10Request", &mut errs);
        errs
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.signerName", "spec.podName", "spec.nodeName"]
    }
}

/// Signers of the Kubernetes project (`kubernetes.io/...` or a subdomain of it).
fn is_kubernetes_signer(signer: &str) -> bool {
    let domain = signer.split('/').next().unwrap_or("");
    domain == "kubernetes.io" || domain.ends_with(".kubernetes.io")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(max: Option<i64>, signer: &str) -> Object {
        let mut spec = json!({"signerName": signer, "podName": "web-0", "podUID": "u1",
            "serviceAccountName": "default", "serviceAccountUID": "u2", "nodeName": "node-1", "nodeUID": "u3",
            "stubPKCS10Request": "MIIB"});
        if let Some(max) = max {
            spec["maxExpirationSeconds"] = json!(max);
        }
        json!({"spec": spec}).as_object().unwrap().clone()
    }

    fn shown(obj: &Object) -> Vec<String> {
        PodCertificateRequest.validate(obj, None).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn lifetime_defaults_to_a_day_within_the_signers_range() {
        let mut req = request(None, "kubernetes.io/kube-apiserver-client-pod");
        PodCertificateRequest.defaults(&mut req);
        assert_eq!(req["spec"]["maxExpirationSeconds"], 86400);
        assert!(shown(&req).is_empty());
        assert_eq!(
            shown(&request(Some(172800), "kubernetes.io/kube-apiserver-client-pod")),
            ["spec.maxExpirationSeconds: Invalid value: 172800: must be in the range [3600, 86400]"]
        );
        assert!(shown(&request(Some(172800), "example.com/pods")).is_empty());
        assert_eq!(
            shown(&request(Some(60), "example.com/pods")),
            ["spec.maxExpirationSeconds: Invalid value: 60: must be in the range [3600, 7862400]"]
        );
    }

    #[test]
    fn spec_is_immutable() {
        let old = request(Some(3600), "example.com/pods");
        let new = request(Some(7200), "example.com/pods");
        let errs = PodCertificateRequest.validate(&new, Some(&old));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec");
    }
}
