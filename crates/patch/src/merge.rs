//! Owns JSON Merge Patch (RFC 7386, `application/merge-patch+json`): objects merge key by
//! key, `null` removes a key, anything else (lists included) replaces the value whole.
//!
//! The merge itself is `json_patch::merge`. What kube-apiserver adds is which bodies it
//! takes: evanphx/json-patch rejects a body that is not JSON, or that is `null` or a bare
//! scalar, as a bad patch (400); an array body merges, per the RFC, into that array, which
//! then fails to decode as an object (422).

use serde_json::Value;

use crate::PatchError;

/// Applies the RFC 7386 merge patch `body` to `original`.
pub fn merge_patch(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let patch: Value =
        serde_json::from_slice(body).map_err(|e| PatchError::BadRequest(format!("error decoding merge patch: {e}")))?;
    match patch {
        Value::Object(_) => Ok(merge_values(original, &patch)),
        Value::Array(_) => Err(PatchError::Invalid(
            "a merge patch that is a JSON array replaces the whole object with that array".into(),
        )),
        _ => Err(PatchError::BadRequest("a merge patch must be a JSON object".into())),
    }
}

/// RFC 7386 `MergePatch(Target, Patch)` for any two JSON values.
fn merge_values(original: &Value, patch: &Value) -> Value {
    let mut doc = original.clone();
    json_patch::merge(&mut doc, patch);
    doc
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// RFC 7386 Appendix A, every row, as (original, patch, result).
    fn appendix_a() -> Vec<(Value, Value, Value)> {
        vec![
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "b"}), json!({"b": "c"}), json!({"a": "b", "b": "c"})),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (json!({"a": "b", "b": "c"}), json!({"a": null}), json!({"b": "c"})),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (json!({"a": {"b": "c"}}), json!({"a": {"b": "d", "c": null}}), json!({"a": {"b": "d"}})),
            (json!({"a": [{"b": "c"}]}), json!({"a": [1]}), json!({"a": [1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (json!({"e": null}), json!({"a": 1}), json!({"e": null, "a": 1})),
            (json!([1, 2]), json!({"a": "b", "c": null}), json!({"a": "b"})),
            (json!({}), json!({"a": {"bb": {"ccc": null}}}), json!({"a": {"bb": {}}})),
        ]
    }

    #[test]
    fn rfc7386_appendix_a() {
        for (original, patch, want) in appendix_a() {
            assert_eq!(merge_values(&original, &patch), want, "{original} + {patch}");
        }
    }

    /// Through the HTTP entry point: object bodies give the RFC's result; the others are
    /// refused as kube-apiserver refuses them.
    #[test]
    fn rfc7386_appendix_a_as_request_bodies() {
        for (original, patch, want) in appendix_a() {
            let got = merge_patch(&original, patch.to_string().as_bytes());
            match &patch {
                Value::Object(_) => assert_eq!(got, Ok(want), "{original} + {patch}"),
                Value::Array(_) => assert!(matches!(got, Err(PatchError::Invalid(_))), "{patch}: {got:?}"),
                _ => assert!(matches!(got, Err(PatchError::BadRequest(_))), "{patch}: {got:?}"),
            }
        }
    }

    #[test]
    fn kubernetes_objects() {
        let pod = json!({
            "metadata": {"name": "p", "labels": {"app": "a", "tier": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}, {"name": "d", "image": "redis"}]},
        });
        let cases = [
            (
                "labels merge and null deletes",
                json!({"metadata": {"labels": {"tier": null, "env": "prod"}}}),
                json!({"metadata": {"name": "p", "labels": {"app": "a", "env": "prod"}},
                       "spec": {"containers": [{"name": "c", "image": "nginx"}, {"name": "d", "image": "redis"}]}}),
            ),
            (
                "lists are replaced, not merged by key",
                json!({"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}),
                json!({"metadata": {"name": "p", "labels": {"app": "a", "tier": "web"}},
                       "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}),
            ),
            ("an empty patch changes nothing", json!({}), pod.clone()),
        ];
        for (name, patch, want) in cases {
            assert_eq!(merge_patch(&pod, patch.to_string().as_bytes()), Ok(want), "{name}");
        }
    }

    #[test]
    fn malformed_bodies_are_bad_requests() {
        for body in [&b""[..], b"{", b"nope", b"null", b"42", b"true", b"\"x\""] {
            let got = merge_patch(&json!({"a": 1}), body);
            assert!(matches!(got, Err(PatchError::BadRequest(_))), "{}: {got:?}", String::from_utf8_lossy(body));
        }
    }
}
