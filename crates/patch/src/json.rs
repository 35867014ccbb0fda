//! Owns JSON Patch (RFC 6902, `application/json-patch+json`): decoding the operation list
//! and applying it with the `json-patch` crate.
//!
//! kube-apiserver (evanphx/json-patch) decodes the body as a list of objects first and only
//! looks inside each operation when applying it, so the split of errors follows that: a
//! body that is not a JSON array of objects is 400, while an operation it cannot apply (an
//! unknown `op`, a missing `path` or `value`, a path that does not exist, a failed `test`)
//! is 422 with the library's message.

use json_patch::PatchOperation;
use serde_json::Value;

use crate::PatchError;

/// Applies the RFC 6902 patch `body` to `original`. Operations apply in order and all or
/// nothing: the first that fails fails the patch.
pub fn json_patch(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let ops = decode(body)?;
    let mut doc = original.clone();
    // `patch_unsafe` skips the undo log: on failure the copy is dropped anyway.
    json_patch::patch_unsafe(&mut doc, &ops).map_err(|e| PatchError::Invalid(e.to_string()))?;
    Ok(doc)
}

fn decode(body: &[u8]) -> Result<Vec<PatchOperation>, PatchError> {
    let items = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(items)) => items,
        Ok(other) => {
            return Err(PatchError::BadRequest(format!(
                "a JSON patch must be an array of operations, not {}",
                kind_of(&other)
            )))
        }
        Err(e) => return Err(PatchError::BadRequest(format!("error decoding JSON patch: {e}"))),
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Object(_) => serde_json::from_value(item)
                .map_err(|e| PatchError::Invalid(format!("JSON patch operation {i} is not valid: {e}"))),
            // Go decodes `null` into an empty operation, which then fails to apply.
            Value::Null => Err(PatchError::Invalid(format!("JSON patch operation {i} is not valid: it is null"))),
            other => Err(PatchError::BadRequest(format!(
                "a JSON patch operation must be an object, but operation {i} is {}",
                kind_of(&other)
            ))),
        })
        .collect()
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(doc: Value, patch: Value) -> Result<Value, PatchError> {
        json_patch(&doc, patch.to_string().as_bytes())
    }

    #[test]
    fn operations_apply() {
        let doc = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"args": ["p", "q"]}});
        let cases = [
            (
                "add a map key",
                json!([{"op": "add", "path": "/metadata/labels/y", "value": "2"}]),
                json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "spec": {"args": ["p", "q"]}}),
            ),
            (
                "add to the end of a list with -",
                json!([{"op": "add", "path": "/spec/args/-", "value": "r"}]),
                json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"args": ["p", "q", "r"]}}),
            ),
            (
                "remove",
                json!([{"op": "remove", "path": "/metadata/labels/x"}]),
                json!({"metadata": {"name": "a", "labels": {}}, "spec": {"args": ["p", "q"]}}),
            ),
            (
                "replace",
                json!([{"op": "replace", "path": "/spec/args/0", "value": "z"}]),
                json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"args": ["z", "q"]}}),
            ),
            (
                "move",
                json!([{"op": "move", "from": "/metadata/labels/x", "path": "/metadata/labels/moved"}]),
                json!({"metadata": {"name": "a", "labels": {"moved": "1"}}, "spec": {"args": ["p", "q"]}}),
            ),
            (
                "copy",
                json!([{"op": "copy", "from": "/spec/args", "path": "/spec/command"}]),
                json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"args": ["p", "q"], "command": ["p", "q"]}}),
            ),
            (
                "test then replace",
                json!([{"op": "test", "path": "/metadata/name", "value": "a"},
                       {"op": "replace", "path": "/metadata/name", "value": "b"}]),
                json!({"metadata": {"name": "b", "labels": {"x": "1"}}, "spec": {"args": ["p", "q"]}}),
            ),
            ("an empty patch changes nothing", json!([]), doc.clone()),
        ];
        for (name, patch, want) in cases {
            assert_eq!(run(doc.clone(), patch).unwrap(), want, "{name}");
        }
    }

    #[test]
    fn operations_that_cannot_apply_are_invalid() {
        let doc = json!({"metadata": {"name": "a"}, "spec": {"args": ["p"]}});
        let cases = [
            ("failed test", json!([{"op": "test", "path": "/metadata/name", "value": "b"}]), "value did not match"),
            (
                "failed test after a good op leaves nothing applied",
                json!([{"op": "add", "path": "/x", "value": 1}, {"op": "test", "path": "/metadata/name", "value": "b"}]),
                "operation '/1'",
            ),
            ("remove a missing key", json!([{"op": "remove", "path": "/metadata/labels"}]), "path is invalid"),
            (
                "replace a missing key",
                json!([{"op": "replace", "path": "/spec/replicas", "value": 3}]),
                "path is invalid",
            ),
            (
                "add under a missing parent",
                json!([{"op": "add", "path": "/status/phase", "value": "x"}]),
                "path is invalid",
            ),
            ("index out of range", json!([{"op": "add", "path": "/spec/args/5", "value": "x"}]), "path is invalid"),
            (
                "move from a missing path",
                json!([{"op": "move", "from": "/nope", "path": "/x"}]),
                "\"from\" path is invalid",
            ),
            ("unknown op", json!([{"op": "frobnicate", "path": "/x"}]), "operation 0"),
            ("missing path", json!([{"op": "remove"}]), "operation 0"),
            ("missing value", json!([{"op": "add", "path": "/x"}]), "operation 0"),
            ("null operation", json!([null]), "operation 0"),
        ];
        for (name, patch, want) in cases {
            match run(doc.clone(), patch) {
                Err(PatchError::Invalid(msg)) => assert!(msg.contains(want), "{name}: {msg}"),
                other => panic!("{name}: {other:?}"),
            }
        }
    }

    #[test]
    fn malformed_bodies_are_bad_requests() {
        let doc = json!({"a": 1});
        let cases: [&[u8]; 7] = [
            b"",
            b"not json",
            b"[{\"op\": \"add\"",
            b"{\"op\": \"add\", \"path\": \"/b\", \"value\": 1}",
            b"\"add\"",
            b"null",
            b"[1, 2]",
        ];
        for body in cases {
            match json_patch(&doc, body) {
                Err(PatchError::BadRequest(_)) => {}
                other => panic!("{}: {other:?}", String::from_utf8_lossy(body)),
            }
        }
    }

    /// RFC 6902 Appendix A (A.13, a duplicate `op` member, is left out: JSON decoders keep
    /// the last member, as Go's does).
    #[test]
    fn rfc6902_appendix_a() {
        let ok = [
            (
                "A.1 adding an object member",
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz", "value": "qux"}]),
                json!({"baz": "qux", "foo": "bar"}),
            ),
            (
                "A.2 adding an array element",
                json!({"foo": ["bar", "baz"]}),
                json!([{"op": "add", "path": "/foo/1", "value": "qux"}]),
                json!({"foo": ["bar", "qux", "baz"]}),
            ),
            (
                "A.3 removing an object member",
                json!({"baz": "qux", "foo": "bar"}),
                json!([{"op": "remove", "path": "/baz"}]),
                json!({"foo": "bar"}),
            ),
            (
                "A.4 removing an array element",
                json!({"foo": ["bar", "qux", "baz"]}),
                json!([{"op": "remove", "path": "/foo/1"}]),
                json!({"foo": ["bar", "baz"]}),
            ),
            (
                "A.5 replacing a value",
                json!({"baz": "qux", "foo": "bar"}),
                json!([{"op": "replace", "path": "/baz", "value": "boo"}]),
                json!({"baz": "boo", "foo": "bar"}),
            ),
            (
                "A.6 moving a value",
                json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
                json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]),
                json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
            ),
            (
                "A.7 moving an array element",
                json!({"foo": ["all", "grass", "cows", "eat"]}),
                json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}]),
                json!({"foo": ["all", "cows", "eat", "grass"]}),
            ),
            (
                "A.8 testing a value: success",
                json!({"baz": "qux", "foo": ["a", 2, "c"]}),
                json!([{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}]),
                json!({"baz": "qux", "foo": ["a", 2, "c"]}),
            ),
            (
                "A.10 adding a nested member object",
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/child", "value": {"grandchild": {}}}]),
                json!({"foo": "bar", "child": {"grandchild": {}}}),
            ),
            (
                "A.11 ignoring unrecognized elements",
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]),
                json!({"foo": "bar", "baz": "qux"}),
            ),
            (
                "A.14 ~ escape ordering",
                json!({"/": 9, "~1": 10}),
                json!([{"op": "test", "path": "/~01", "value": 10}]),
                json!({"/": 9, "~1": 10}),
            ),
            (
                "A.16 adding an array value",
                json!({"foo": ["bar"]}),
                json!([{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]),
                json!({"foo": ["bar", ["abc", "def"]]}),
            ),
        ];
        for (name, doc, patch, want) in ok {
            assert_eq!(run(doc, patch).unwrap(), want, "{name}");
        }
        let failing = [
            (
                "A.9 testing a value: error",
                json!({"baz": "qux"}),
                json!([{"op": "test", "path": "/baz", "value": "bar"}]),
            ),
            (
                "A.12 adding to a nonexistent target",
                json!({"foo": "bar"}),
                json!([{"op": "add", "path": "/baz/bat", "value": "qux"}]),
            ),
            (
                "A.15 comparing strings and numbers",
                json!({"/": 9, "~1": 10}),
                json!([{"op": "test", "path": "/~01", "value": "10"}]),
            ),
        ];
        for (name, doc, patch) in failing {
            assert!(matches!(run(doc, patch), Err(PatchError::Invalid(_))), "{name}");
        }
    }
}
