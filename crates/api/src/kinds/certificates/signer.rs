//! What the certificates kinds share: kube's `ValidateSignerName` (`<domain>/<path>`)
//! and a small base64 decoder for the `[]byte` fields JSON carries as base64.

use crate::validation::{is_dns1123_label, is_dns1123_subdomain, BadValue, FieldError};

/// Errors of a signer name at `path` (kube's `ValidateSignerName`): one `/`, a domain
/// of at least two DNS labels before it and a DNS subdomain of at most 63 characters
/// after it.
pub(crate) fn validate_signer_name(path: &str, signer: &str, errs: &mut Vec<FieldError>) {
    if signer.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let segments: Vec<&str> = signer.split('/').collect();
    let [domain, name] = segments[..] else {
        errs.push(FieldError::invalid(
            path,
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        ));
        return;
    };
    if domain.len() > 253 {
        errs.push(FieldError::too_long(path, 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    // Only the first bad label is reported: the others would say the same.
    if let Some((label, msgs)) = labels.iter().map(|l| (l, is_dns1123_label(l))).find(|(_, m)| !m.is_empty()) {
        for msg in msgs {
            errs.push(FieldError::invalid(path, domain, format!("validating label {label:?}: {msg}")));
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(path, domain, "should be a domain with at least two segments separated by dots"));
    }
    if name.len() > 63 {
        errs.push(FieldError::too_long(path, 63));
    }
    for msg in is_dns1123_subdomain(name) {
        errs.push(FieldError::invalid(path, name, msg));
    }
}

/// The bytes of standard base64 `text` (padding optional), or `None` if it is not base64.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let body = text.trim_end_matches('=');
    if text.len() - body.len() > 2 || body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.as_bytes().chunks(4) {
        let mut acc = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            acc |= value(*c)? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// The types of the PEM blocks in `text`, in order (`-----BEGIN <type>-----`).
pub(crate) fn pem_block_types(text: &str) -> Vec<&str> {
    text.lines().filter_map(|l| l.trim().strip_prefix("-----BEGIN ").and_then(|r| r.strip_suffix("-----"))).collect()
}

/// A value too large to echo, as kube shows it.
pub(crate) fn omitted() -> BadValue {
    BadValue::Str("<value omitted>".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(signer: &str) -> Vec<String> {
        let mut errs = Vec::new();
        validate_signer_name("spec.signerName", signer, &mut errs);
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn signer_names_are_a_domain_and_a_path() {
        assert!(shown("example.com/my-signer").is_empty());
        assert!(shown("kubernetes.io/kube-apiserver-client").is_empty());
        assert_eq!(shown(""), ["spec.signerName: Required value"]);
        assert_eq!(
            shown("my-signer"),
            ["spec.signerName: Invalid value: \"my-signer\": must be a fully qualified domain and path of the form \
              'example.com/signer-name'"]
        );
        assert_eq!(
            shown("example/x"),
            ["spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"]
        );
    }

    #[test]
    fn base64_round_trips() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(base64_decode("YQ==").unwrap(), b"a");
        assert!(base64_decode("a$==").is_none());
    }
}
