//! CertificateSigningRequest (certificates.k8s.io/v1): cluster-scoped, any path-segment
//! name; `approval` and `status` subresources; the request must be a PEM `CERTIFICATE
//! REQUEST` for a valid signer with known, unique usages; created without status (no
//! client creates a pre-approved request); printed with its signer, requestor and
//! Approved/Denied/Pending condition.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::signer::{base64_decode, pem_block_types, validate_signer_name};
use crate::kinds::common::{at, required, str_at as field_str};
use crate::kinds::printing::*;
use crate::kinds::{child, each, with_part_of, Object, Strategy};
use crate::registry::{ResourceDef, Scope, SubresourceDef, ALL_VERBS, STATUS};
use crate::validation::{BadValue, FieldError, NameRule};

/// The `approval` subresource, where approvers add `Approved`/`Denied` conditions; the
/// same verbs as `status`.
pub const APPROVAL: SubresourceDef =
    SubresourceDef { name: "approval", response: None, verbs: &["get", "patch", "update"] };

pub static DEF: ResourceDef = ResourceDef {
    group: "certificates.k8s.io",
    version: "v1",
    kind: "CertificateSigningRequest",
    plural: "certificatesigningrequests",
    singular: "certificatesigningrequest",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &["csr"],
    categories: &[],
    subresources: &[APPROVAL, STATUS],
    list_kind: "CertificateSigningRequestList",
    tracks_generation: false,
};

/// The key usages kube knows (`allValidUsages`), sorted as its messages list them.
const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// Conditions that may only be `True`.
const TRUE_ONLY: &[&str] = &["Approved", "Denied", "Failed"];

const SIGNER_NAME_DOC: &str = "signerName indicates the requested signer, and is a qualified name.\n\nList/watch requests for CertificateSigningRequests can filter on this field using a \"spec.signerName=NAME\" fieldSelector.\n\nWell-known Kubernetes signers are:\n 1. \"kubernetes.io/kube-apiserver-client\": issues client certificates that can be used to authenticate to kube-apiserver.\n  Requests for this signer are never auto-approved by kube-controller-manager, can be issued by the \"csrsigning\" controller in kube-controller-manager.\n 2. \"kubernetes.io/kube-apiserver-client-kubelet\": issues client certificates that kubelets use to authenticate to kube-apiserver.\n  Requests for this signer can be auto-approved by the \"csrapproving\" controller in kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n 3. \"kubernetes.io/kubelet-serving\" issues serving certificates that kubelets use to serve TLS endpoints, which kube-apiserver can connect to securely.\n  Requests for this signer are never auto-approved by kube-controller-manager, and can be issued by the \"csrsigning\" controller in kube-controller-manager.\n\nMore details are available at https://k8s.io/docs/reference/access-authn-authz/certificate-signing-requests/#kubernetes-signers\n\nCustom signerNames can also be specified. The signer defines:\n 1. Trust distribution: how trust (CA bundles) are distributed.\n 2. Permitted subjects: and behavior when a disallowed subject is requested.\n 3. Required, permitted, or forbidden x509 extensions in the request (including whether subjectAltNames are allowed, which types, restrictions on allowed values) and behavior when a disallowed extension is requested.\n 4. Required, permitted, or forbidden key usages / extended key usages.\n 5. Expiration/certificate lifetime: whether it is fixed by the signer, configurable by the admin.\n 6. Whether or not requests for CA certificates are allowed.";
const REQUEST_DOC: &str = "request contains an x509 certificate signing request encoded in a \"CERTIFICATE REQUEST\" PEM block. When serialized as JSON or YAML, the data is additionally base64-encoded.";
const EXPIRATION_DOC: &str = "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.";
const CONDITIONS_DOC: &str =
    "conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\".";

const CSR_COLUMNS: &[Column] = &[
    NAME,
    AGE,
    col("SignerName", "string", SIGNER_NAME_DOC),
    col("Requestor", "string", REQUEST_DOC),
    col("RequestedDuration", "string", EXPIRATION_DOC),
    col("Condition", "string", CONDITIONS_DOC),
];

pub struct CertificateSigningRequest;

impl Strategy for CertificateSigningRequest {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// Kube does not care what requests are called (`ValidateCertificateRequestName`).
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    /// A condition without a status is `True`.
    fn defaults(&self, obj: &mut Object) {
        if let Some(status) = child(obj, "status") {
            for c in each(status, "conditions") {
                if c.get("status").and_then(Value::as_str).is_none_or(str::is_empty) {
                    c.insert("status".into(), json!("True"));
                }
            }
        }
    }

    /// The requestor's identity is the server's to fill in, and a new request is
    /// neither approved, denied nor issued.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        if let Some(spec) = child(obj, "spec") {
            for field in ["username", "uid", "groups", "extra"] {
                spec.remove(field);
            }
        }
        obj.insert("status".into(), json!({}));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        validate_request(obj, &mut errs);
        let usages = at(obj, "spec.usages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        if usages.is_empty() {
            errs.push(FieldError::required("spec.usages", ""));
        }
        // Requests stored before a rule existed keep what they had.
        let old_usages = old.and_then(|o| at(o, "spec.usages")).and_then(Value::as_array);
        let old_has = |bad: &dyn Fn(&[Value]) -> bool| old_usages.is_some_and(|u| bad(u));
        let unknown = |u: &[Value]| u.iter().any(|v| !USAGES.contains(&v.as_str().unwrap_or("")));
        if !old_has(&unknown) {
            for (i, u) in usages.iter().enumerate() {
                let u = u.as_str().unwrap_or("");
                if !USAGES.contains(&u) {
                    errs.push(FieldError::not_supported(&format!("spec.usages[{i}]"), u, USAGES));
                }
            }
        }
        // Linear, whatever the number of usages a stored request carries.
        let duplicated = |u: &[Value]| {
            let mut seen = HashSet::new();
            u.iter().any(|v| !seen.insert(v.to_string()))
        };
        if !old_has(&duplicated) {
            let mut seen = HashSet::new();
            for (i, u) in usages.iter().enumerate() {
                let u = u.as_str().unwrap_or("");
                if !seen.insert(u) {
                    errs.push(FieldError::duplicate(&format!("spec.usages[{i}]"), BadValue::Str(u.into())));
                }
            }
        }
        let signer = field_str(obj, "spec.signerName");
        let legacy_old = old.is_some_and(|o| field_str(o, "spec.signerName") == LEGACY_SIGNER);
        if signer == LEGACY_SIGNER && !legacy_old {
            errs.push(FieldError::invalid(
                "spec.signerName",
                signer,
                "the legacy signerName is not allowed via this API version",
            ));
        } else if signer != LEGACY_SIGNER {
            validate_signer_name("spec.signerName", signer, &mut errs);
        }
        if let Some(secs) = at(obj, "spec.expirationSeconds").and_then(Value::as_i64).filter(|s| *s < 600) {
            errs.push(FieldError::invalid_value(
                "spec.expirationSeconds",
                BadValue::Raw(secs.to_string()),
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
        validate_conditions(obj, &mut errs);
        errs
    }

    /// `approval` writes the conditions only (approvers add Approved or Denied).
    fn write_subresource(&self, name: &str, old: &Object, new: &Object) -> Option<Object> {
        (name == "approval").then(|| with_part_of(old, new, &["status", "conditions"]))
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.signerName"]
    }

    fn columns(&self) -> &'static [Column] {
        CSR_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let duration = obj.pointer("/spec/expirationSeconds").and_then(Value::as_i64);
        Row::plain(vec![
            name(obj).into(),
            age(obj, now).into(),
            or_none(str_at(obj, "/spec/signerName")).into(),
            str_at(obj, "/spec/username").into(),
            duration.map_or("<none>".into(), human_duration).into(),
            csr_condition(obj).into(),
        ])
    }
}

/// The signer of requests made before signers existed; v1 refuses it on create.
const LEGACY_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// `spec.request` must hold a PEM `CERTIFICATE REQUEST` block (kube also parses it and
/// checks its signature; kuorum does not parse X.509).
fn validate_request(obj: &Object, errs: &mut Vec<FieldError>) {
    if !required(obj, "spec.request", errs) {
        return;
    }
    let encoded = field_str(obj, "spec.request");
    let bytes = base64_decode(encoded).unwrap_or_default();
    let pem = String::from_utf8_lossy(&bytes);
    if pem_block_types(&pem).first() != Some(&"CERTIFICATE REQUEST") {
        errs.push(FieldError::invalid_value(
            "spec.request",
            BadValue::Raw(go_bytes(&bytes)),
            "PEM block type must be CERTIFICATE REQUEST",
        ));
    }
}

/// Go's `%#v` of a `[]byte`, as kube shows a bad request.
fn go_bytes(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(|b| format!("0x{b:x}")).collect();
    format!("[]byte{{{}}}", items.join(", "))
}

/// Each condition typed and with a status (`True` only for Approved, Denied and
/// Failed), types unique, never both Approved and Denied.
fn validate_conditions(obj: &Object, errs: &mut Vec<FieldError>) {
    let conditions = at(obj, "status.conditions").and_then(Value::as_array);
    let (mut seen, mut approved, mut denied) = (HashSet::new(), false, false);
    for (i, c) in conditions.into_iter().flatten().enumerate() {
        let p = format!("status.conditions[{i}]");
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
        if ty.is_empty() {
            errs.push(FieldError::required(&format!("{p}.type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&ty) { &["True"] } else { &["False", "True", "Unknown"] };
        match c.get("status").and_then(Value::as_str).unwrap_or("") {
            "" => errs.push(FieldError::required(&format!("{p}.status"), "")),
            s if !allowed.contains(&s) => errs.push(FieldError::not_supported(&format!("{p}.status"), s, allowed)),
            _ => {}
        }
        approved |= ty == "Approved";
        denied |= ty == "Denied";
        if (ty == "Approved" || ty == "Denied") && approved && denied {
            errs.push(FieldError::invalid(
                &format!("{p}.type"),
                ty,
                "Approved and Denied conditions are mutually exclusive",
            ));
        }
        if !seen.insert(ty) {
            errs.push(FieldError::duplicate(&format!("{p}.type"), BadValue::Str(ty.into())));
        }
    }
}

/// The Condition cell (`extractCSRStatus`): Denied over Approved over Pending, then
/// `,Failed` and `,Issued`.
fn csr_condition(obj: &Value) -> String {
    let has = |ty: &str| arr_at(obj, "/status/conditions").iter().any(|c| str_at(c, "/type") == ty);
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !str_at(obj, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    /// `-----BEGIN CERTIFICATE REQUEST-----\n...` in base64.
    const REQUEST: &str =
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQgotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K";

    fn shown(v: Value) -> Vec<String> {
        CertificateSigningRequest.validate(&obj(v), None).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn requests_need_a_signer_and_known_usages() {
        let ok = json!({"spec": {"request": REQUEST, "signerName": "example.com/signer", "usages": ["client auth"]}});
        assert!(shown(ok).is_empty());
        assert_eq!(
            shown(json!({"spec": {"request": REQUEST, "signerName": "example.com/s",
                "usages": ["client auth", "flying", "client auth"], "expirationSeconds": 60}})),
            [
                format!("spec.usages[1]: Unsupported value: \"flying\": supported values: {}",
                    USAGES.iter().map(|u| format!("{u:?}")).collect::<Vec<_>>().join(", ")),
                "spec.usages[2]: Duplicate value: \"client auth\"".to_string(),
                "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)"
                    .to_string(),
            ]
        );
        assert_eq!(
            shown(json!({"spec": {"request": "aGk=", "signerName": "example.com/s", "usages": ["any"]}})),
            ["spec.request: Invalid value: []byte{0x68, 0x69}: PEM block type must be CERTIFICATE REQUEST"]
        );
        assert_eq!(
            shown(json!({"spec": {"usages": ["any"]}})),
            ["spec.request: Required value", "spec.signerName: Required value"]
        );
    }

    #[test]
    fn created_without_status_or_identity() {
        let mut csr = obj(json!({"spec": {"username": "me", "groups": ["admins"]},
            "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "eA=="}}));
        CertificateSigningRequest.prepare_for_create(&mut csr, "2024-01-01T00:00:00Z");
        assert_eq!(Value::Object(csr), json!({"spec": {}, "status": {}}));
    }

    #[test]
    fn approved_and_denied_exclude_each_other() {
        let both = json!({"spec": {"request": REQUEST, "signerName": "example.com/s", "usages": ["any"]},
            "status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "False"}]}});
        assert_eq!(
            shown(both),
            [
                "status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
            ]
        );
    }

    #[test]
    fn condition_cell_as_kubectl_prints_it() {
        let cell = |status: Value| csr_condition(&json!({"status": status}));
        assert_eq!(cell(json!({})), "Pending");
        assert_eq!(cell(json!({"conditions": [{"type": "Approved"}], "certificate": "eA=="})), "Approved,Issued");
        assert_eq!(cell(json!({"conditions": [{"type": "Approved"}, {"type": "Denied"}]})), "Denied");
        assert_eq!(cell(json!({"conditions": [{"type": "Approved"}, {"type": "Failed"}]})), "Approved,Failed");
        let row = CertificateSigningRequest.row(
            &json!({"metadata": {"name": "c"}, "spec": {"signerName": "a.b/c", "username": "u", "expirationSeconds": 3600}}),
            0,
        );
        assert_eq!(row.cells[2..], [json!("a.b/c"), json!("u"), json!("60m"), json!("Pending")]);
    }
}
