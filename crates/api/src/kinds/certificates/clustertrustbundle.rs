//! ClusterTrustBundle (certificates.k8s.io/v1): cluster-scoped; a bundle for a signer is
//! named `<signer with / as :>:<suffix>`; the trust bundle must hold PEM certificates,
//! at least one and none twice; the signer is immutable; printed with its signer.

use std::collections::HashMap;

use serde_json::Value;

use super::signer::{omitted, pem_block_types, validate_signer_name};
use crate::kinds::common::{immutable, str_at as field_str};
use crate::kinds::printing::*;
use crate::kinds::{Object, Strategy};
use crate::registry::{grouped, ResourceDef, Scope};
use crate::validation::{is_dns1123_subdomain, FieldError, NameRule};

pub static DEF: ResourceDef = grouped(
    "certificates.k8s.io",
    "ClusterTrustBundle",
    "clustertrustbundles",
    "clustertrustbundle",
    Scope::Cluster,
    "ClusterTrustBundleList",
);

/// kube's `MaxTrustBundleSize`.
const MAX_TRUST_BUNDLE_SIZE: usize = 1024 * 1024;

const SIGNER_NAME_DOC: &str = "signerName indicates the associated signer, if any.\n\nIn order to create or update a ClusterTrustBundle that sets signerName, you must have the following cluster-scoped permission: group=certificates.k8s.io resource=signers resourceName=<the signer name> verb=attest.\n\nIf signerName is not empty, then the ClusterTrustBundle object must be named with the signer name as a prefix (translating slashes to colons). For example, for the signer name `example.com/foo`, valid ClusterTrustBundle object names include `example.com:foo:abc` and `example.com:foo:v1`.\n\nIf signerName is empty, then the ClusterTrustBundle object's name must not have such a prefix.\n\nList/watch requests for ClusterTrustBundles can filter on this field using a `spec.signerName=NAME` field selector.";

/// kube prints no Age for trust bundles.
const CTB_COLUMNS: &[Column] = &[NAME, col("SignerName", "string", SIGNER_NAME_DOC)];

pub struct ClusterTrustBundle;

impl Strategy for ClusterTrustBundle {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// A signer's bundles carry `:` in their names; [`validate_name`] checks the rest.
    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let signer = field_str(obj, "spec.signerName");
        validate_name(field_str(obj, "metadata.name"), signer, &mut errs);
        if !signer.is_empty() {
            validate_signer_name("spec.signerName", signer, &mut errs);
        }
        // An update that leaves the bundle alone does not parse it again.
        let bundle = field_str(obj, "spec.trustBundle");
        if old.is_none_or(|o| field_str(o, "spec.trustBundle") != bundle) {
            validate_trust_bundle(bundle, &mut errs);
        }
        immutable(obj, old, "spec.signerName", &mut errs);
        errs
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &["spec.signerName"]
    }

    fn columns(&self) -> &'static [Column] {
        CTB_COLUMNS
    }

    fn row(&self, obj: &Value, _now: i64) -> Row {
        Row::plain(vec![name(obj).into(), or_none(str_at(obj, "/spec/signerName")).into()])
    }
}

/// kube's `ValidateClusterTrustBundleName`: without a signer, a DNS subdomain with no
/// `:`; with one, the signer's prefix followed by a DNS subdomain.
fn validate_name(name: &str, signer: &str, errs: &mut Vec<FieldError>) {
    if name.is_empty() {
        return;
    }
    let msgs = if signer.is_empty() {
        if name.contains(':') {
            vec!["ClusterTrustBundle without signer name must not have \":\" in its name".to_string()]
        } else {
            is_dns1123_subdomain(name)
        }
    } else {
        let prefix = format!("{}:", signer.replace('/', ":"));
        match name.strip_prefix(&prefix) {
            Some(rest) => is_dns1123_subdomain(rest),
            None => vec![format!("ClusterTrustBundle for signerName {signer} must be named with prefix {prefix}")],
        }
    };
    for msg in msgs {
        errs.push(FieldError::invalid("metadata.name", name, msg));
    }
}

/// The PEM blocks must all be `CERTIFICATE`s, at least one, none twice (kube also
/// parses each as an X.509 CA certificate; kuorum does not parse X.509).
fn validate_trust_bundle(bundle: &str, errs: &mut Vec<FieldError>) {
    const PATH: &str = "spec.trustBundle";
    if bundle.len() > MAX_TRUST_BUNDLE_SIZE {
        errs.push(FieldError::too_long(PATH, MAX_TRUST_BUNDLE_SIZE as i64));
        return;
    }
    let before = errs.len();
    for (i, ty) in pem_block_types(bundle).into_iter().enumerate() {
        if ty != "CERTIFICATE" {
            errs.push(FieldError::invalid_value(PATH, omitted(), format!("entry {i} has bad block type: {ty}")));
        }
    }
    if errs.len() > before {
        return;
    }
    let mut indices: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, block) in pem_blocks(bundle).into_iter().enumerate() {
        indices.entry(block).or_default().push(i);
    }
    if indices.is_empty() {
        errs.push(FieldError::invalid_value(PATH, omitted(), "at least one trust anchor must be provided"));
    }
    let mut dups: Vec<&Vec<usize>> = indices.values().filter(|v| v.len() > 1).collect();
    dups.sort();
    for v in dups {
        let list: Vec<String> = v.iter().map(ToString::to_string).collect();
        errs.push(FieldError::invalid_value(
            PATH,
            omitted(),
            format!("duplicate trust anchor (indices [{}])", list.join(" ")),
        ));
    }
}

/// The bodies of the PEM blocks in `text`, whitespace and all.
fn pem_blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start..];
        let Some(header_end) = after.find('\n') else { break };
        let Some(end) = after.find("-----END ") else { break };
        out.push(after[header_end..end].trim());
        rest = &after[end + 9..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----\n";

    fn shown(v: Value, old: Option<Value>) -> Vec<String> {
        let o = |v: Value| v.as_object().unwrap().clone();
        let old = old.map(o);
        ClusterTrustBundle.validate(&o(v), old.as_ref()).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn names_carry_the_signer_prefix() {
        let bundle = |name: &str, signer: &str| json!({"metadata": {"name": name}, "spec": {"signerName": signer, "trustBundle": CERT}});
        assert!(shown(bundle("example.com:foo:abc", "example.com/foo"), None).is_empty());
        assert_eq!(
            shown(bundle("abc", "example.com/foo"), None),
            ["metadata.name: Invalid value: \"abc\": ClusterTrustBundle for signerName example.com/foo must be named \
              with prefix example.com:foo:"]
        );
        assert_eq!(
            shown(json!({"metadata": {"name": "a:b"}, "spec": {"trustBundle": CERT}}), None),
            ["metadata.name: Invalid value: \"a:b\": ClusterTrustBundle without signer name must not have \":\" in its name"]
        );
    }

    #[test]
    fn bundles_hold_distinct_certificates() {
        let spec = |tb: String| json!({"metadata": {"name": "b"}, "spec": {"trustBundle": tb}});
        assert_eq!(
            shown(spec(String::new()), None),
            ["spec.trustBundle: Invalid value: \"<value omitted>\": at least one trust anchor must be provided"]
        );
        assert_eq!(
            shown(spec(format!("{CERT}{CERT}")), None),
            ["spec.trustBundle: Invalid value: \"<value omitted>\": duplicate trust anchor (indices [0 1])"]
        );
        assert_eq!(
            shown(spec("-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----".into()), None),
            ["spec.trustBundle: Invalid value: \"<value omitted>\": entry 0 has bad block type: RSA PRIVATE KEY"]
        );
        let old = json!({"metadata": {"name": "b"}, "spec": {"signerName": "a.b/c", "trustBundle": CERT}});
        assert_eq!(
            shown(spec(CERT.into()), Some(old)),
            ["spec.signerName: Invalid value: \"null\": field is immutable"]
        );
    }
}
