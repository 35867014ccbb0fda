//! Owns JSON Patch (RFC 6902, `application/json-patch+json`): decoding the operation list
//! and applying it with the `json-patch` crate, within the bounds of [`crate::limits`].
//!
//! kube-apiserver (evanphx/json-patch) decodes the body as a list of objects first and only
//! looks inside each operation when applying it, so the split of errors follows that: a
//! body that is not a JSON array of objects is 400, more than
//! [`MAX_JSON_PATCH_OPERATIONS`] operations is 413, while an operation it cannot apply (an
//! unknown `op`, a missing `path` or `value`, a path that does not exist, a failed `test`,
//! a `copy` past [`MAX_COPY_BYTES`]) is 422 with the library's message.
//!
//! Operations apply one at a time so that each is bounded before it runs: a `copy` is
//! measured (stopping at what is left of the copy budget) before it clones, and the depth
//! of the document is tracked so that no operation can nest it past [`MAX_DEPTH`] (deep
//! documents are what make cloning, comparing and dropping recurse).

use json_patch::jsonptr::Pointer;
use json_patch::PatchOperation;
use serde_json::Value;

use crate::limits::{
    depth_within, json_len_within, too_deep_message, MAX_ARRAY_SHIFTS, MAX_COPY_BYTES, MAX_DEPTH,
    MAX_JSON_PATCH_OPERATIONS,
};
use crate::PatchError;

/// Applies the RFC 6902 patch `body` to `original`. Operations apply in order and all or
/// nothing: the first that fails fails the patch.
pub fn json_patch(original: &Value, body: &[u8]) -> Result<Value, PatchError> {
    let ops = decode(body)?;
    let mut doc = original.clone();
    let mut bounds = Bounds::new(&doc)?;
    for (i, op) in ops.iter().enumerate() {
        bounds.check(i, op, &doc)?;
        // `patch_unsafe` skips the undo log: on failure the copy is dropped anyway.
        json_patch::patch_unsafe(&mut doc, std::slice::from_ref(op)).map_err(|mut e| {
            e.operation = i;
            PatchError::Invalid(e.to_string())
        })?;
        bounds.after(i, op, &doc)?;
    }
    Ok(doc)
}

/// What the operations applied so far have spent, and what they may still do.
struct Bounds {
    /// Bytes added by `copy` operations so far.
    copied: usize,
    /// An upper bound on the document's depth: exact at the start, raised by each
    /// operation by what it can add at most, and made exact again (one walk of the
    /// document) when it passes [`MAX_DEPTH`].
    depth: usize,
    /// Nodes visited by those exact walks, bounded like the bytes copies add: a patch of
    /// moves that each look deepening cannot make a walk per operation.
    walked: usize,
    /// Array elements shifted by inserting or removing in the middle of arrays.
    shifted: usize,
}

impl Bounds {
    fn new(doc: &Value) -> Result<Bounds, PatchError> {
        let depth = depth_within(doc, MAX_DEPTH).ok_or_else(|| PatchError::Invalid(too_deep_message("the object")))?;
        Ok(Bounds { copied: 0, depth, walked: 0, shifted: 0 })
    }

    /// Before operation `i`: refuses a `copy` that would pass the copy budget, or any
    /// operation that would nest the document past [`MAX_DEPTH`], without doing it.
    fn check(&mut self, i: usize, op: &PatchOperation, doc: &Value) -> Result<(), PatchError> {
        self.shifted += match op {
            PatchOperation::Add(op) => shifts(doc, &op.path),
            PatchOperation::Remove(op) => shifts(doc, &op.path),
            PatchOperation::Copy(op) => shifts(doc, &op.path),
            // Removing, then inserting: the second shift is measured before the first, a
            // bound all the same (the array is at most one element longer).
            PatchOperation::Move(op) => shifts(doc, &op.from) + shifts(doc, &op.path),
            PatchOperation::Replace(_) | PatchOperation::Test(_) => 0,
        };
        if self.shifted > MAX_ARRAY_SHIFTS {
            return Err(PatchError::Invalid(format!(
                "the patch inserts into and removes from the middle of arrays more than {MAX_ARRAY_SHIFTS} \
                 elements' worth (operation {i})"
            )));
        }
        let placed = match op {
            PatchOperation::Add(op) => Some((&op.path, depth_within(&op.value, MAX_DEPTH))),
            PatchOperation::Replace(op) => Some((&op.path, depth_within(&op.value, MAX_DEPTH))),
            PatchOperation::Copy(op) => {
                // A missing `from` fails in the library, with its message.
                let Some(source) = doc.pointer(op.from.as_str()) else { return Ok(()) };
                let left = MAX_COPY_BYTES - self.copied;
                match json_len_within(source, left) {
                    Some(n) => self.copied += n,
                    None => {
                        return Err(PatchError::Invalid(format!(
                            "Unable to complete the copy, the accumulated size increase of copy is more than {}, \
                             exceeding the limit {MAX_COPY_BYTES} (operation {i})",
                            self.copied + left
                        )))
                    }
                }
                Some((&op.path, depth_within(source, MAX_DEPTH)))
            }
            // A move may place its value deeper than it was: by at most the difference
            // of the two paths' lengths.
            PatchOperation::Move(op) => {
                let deeper = tokens(&op.path).saturating_sub(tokens(&op.from));
                self.depth += deeper;
                None
            }
            PatchOperation::Remove(_) | PatchOperation::Test(_) => None,
        };
        if let Some((path, value_depth)) = placed {
            let depth = value_depth.map(|d| tokens(path) + d).filter(|d| *d <= MAX_DEPTH);
            match depth {
                Some(d) => self.depth = self.depth.max(d),
                None => return Err(too_deep(i)),
            }
        }
        Ok(())
    }

    /// After operation `i`: when the bound on the depth has passed the limit, measures
    /// the document (a move's bound is loose); refuses it if it really is too deep.
    fn after(&mut self, i: usize, op: &PatchOperation, doc: &Value) -> Result<(), PatchError> {
        if self.depth <= MAX_DEPTH {
            return Ok(());
        }
        debug_assert!(matches!(op, PatchOperation::Move(_)), "only a move is applied on a loose bound");
        // Both walks are safe however deep the move made the document (`node_count` is
        // iterative, `depth_within` stops a level past the limit), and together they visit
        // at most MAX_COPY_BYTES nodes.
        self.walked += node_count(doc);
        if self.walked > MAX_COPY_BYTES {
            return Err(PatchError::Invalid(format!(
                "the patch moves values deeper too often to check the depth of the object (operation {i})"
            )));
        }
        match depth_within(doc, MAX_DEPTH) {
            Some(d) => {
                self.depth = d;
                Ok(())
            }
            None => Err(too_deep(i)),
        }
    }
}

fn too_deep(i: usize) -> PatchError {
    PatchError::Invalid(format!("{} (operation {i})", too_deep_message("the patched object")))
}

/// How many elements inserting or removing at `path` moves, when its parent is an array:
/// those after the index (`-` is the end).
fn shifts(doc: &Value, path: &Pointer) -> usize {
    let Some((parent, last)) = path.as_str().rsplit_once('/') else { return 0 };
    let Some(Value::Array(items)) = doc.pointer(parent) else { return 0 };
    match last.parse::<usize>() {
        Ok(index) => items.len().saturating_sub(index),
        Err(_) => 0,
    }
}

/// The number of reference tokens in a JSON Pointer: how many containers lead to it.
fn tokens(path: &Pointer) -> usize {
    path.count()
}

/// How many values `v` holds, itself included (iterative: `v` may be deeper than the limit).
fn node_count(v: &Value) -> usize {
    let mut count = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        count += 1;
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            _ => {}
        }
    }
    count
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
    if items.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            items.len()
        )));
    }
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

    /// A value nested `levels` deep (`{"k": {"k": .. {}}}`), as `levels` containers.
    fn nested(levels: usize) -> Value {
        let mut v = json!({});
        for _ in 1..levels {
            v = json!({ "k": v });
        }
        v
    }

    fn ops(ops: Vec<Value>) -> Vec<u8> {
        Value::Array(ops).to_string().into_bytes()
    }

    fn assert_invalid(got: Result<Value, PatchError>, want: &str) {
        match got {
            Err(PatchError::Invalid(msg)) => assert!(msg.contains(want), "{msg}"),
            other => panic!("wanted 422 {want:?}, got {:?}", other.map(|v| serde_json::to_vec(&v).unwrap().len())),
        }
    }

    /// Copying a value into itself doubles it per operation: 40 ops of a 1 KiB value would
    /// make a terabyte. The copies stop at MAX_COPY_BYTES, before cloning, and fast.
    #[test]
    fn a_copy_chain_stops_at_the_copy_limit() {
        let doc = json!({"a": {"s": "x".repeat(1024)}});
        for (from, to) in [("/a", "/a/next"), ("/a", "/b")] {
            let chain: Vec<Value> = (0..40)
                .map(|i| {
                    if to == "/b" {
                        // Sideways: /b gets /a, then /a gets /b twice over, and so on.
                        json!({"op": "copy", "from": if i % 2 == 0 { from } else { to },
                               "path": if i % 2 == 0 { format!("{to}/c{i}") } else { format!("{from}/c{i}") }})
                    } else {
                        json!({"op": "copy", "from": from, "path": format!("{to}{i}")})
                    }
                })
                .collect();
            let doc = if to == "/b" { json!({"a": {"s": "x".repeat(1024)}, "b": {}}) } else { doc.clone() };
            let started = std::time::Instant::now();
            assert_invalid(json_patch(&doc, &ops(chain)), "the accumulated size increase of copy");
            assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
        }
    }

    #[test]
    fn copies_within_the_limit_apply() {
        // 20 copies of 100 KiB: 2 MiB, under 3 MiB.
        let doc = json!({"a": "x".repeat(100 * 1024)});
        let chain: Vec<Value> =
            (0..20).map(|i| json!({"op": "copy", "from": "/a", "path": format!("/c{i}")})).collect();
        let got = json_patch(&doc, &ops(chain)).unwrap();
        assert_eq!(got.as_object().unwrap().len(), 21);
        // One more of them passes the limit.
        let chain: Vec<Value> =
            (0..31).map(|i| json!({"op": "copy", "from": "/a", "path": format!("/c{i}")})).collect();
        assert_invalid(json_patch(&doc, &ops(chain)), "exceeding the limit 3145728");
    }

    #[test]
    fn at_most_10000_operations() {
        let doc = json!({"a": 1});
        let test = json!({"op": "test", "path": "/a", "value": 1});
        assert!(json_patch(&doc, &ops(vec![test.clone(); MAX_JSON_PATCH_OPERATIONS])).is_ok());
        match json_patch(&doc, &ops(vec![test; MAX_JSON_PATCH_OPERATIONS + 1])) {
            Err(PatchError::TooLarge(msg)) => {
                assert_eq!(msg, "The allowed maximum operations in a JSON patch is 10000, got 10001")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_operation_nests_the_document_past_the_limit() {
        // add: a value as deep as a body can carry, placed three levels down.
        let doc = json!({"a": {"b": {}}});
        let value = nested(MAX_DEPTH - 2);
        assert!(json_patch(&doc, &ops(vec![json!({"op": "add", "path": "/a/x", "value": value.clone()})])).is_ok());
        assert_invalid(
            json_patch(&doc, &ops(vec![json!({"op": "add", "path": "/a/b/x", "value": value.clone()})])),
            "more than 127 levels deep (operation 0)",
        );
        let doc3 = json!({"a": {"b": {"c": {}}}});
        assert_invalid(
            json_patch(&doc3, &ops(vec![json!({"op": "replace", "path": "/a/b/c", "value": value.clone()})])),
            "more than 127 levels deep",
        );
        // copy: a value copied into itself nests one level more per operation.
        let chain: Vec<Value> = (0..200).map(|_| json!({"op": "copy", "from": "/a", "path": "/a/b"})).collect();
        assert_invalid(json_patch(&doc, &ops(chain)), "more than 127 levels deep (operation 124)");
        // move: a deep branch moved under another deep branch.
        let doc = json!({"deep": nested(100), "other": nested(60)});
        let under = format!("/deep{}/x", "/k".repeat(80));
        let got = json_patch(&doc, &ops(vec![json!({"op": "move", "from": "/other", "path": under})]));
        assert_invalid(got, "more than 127 levels deep (operation 0)");
        // A move that only looks deepening applies.
        let doc = json!({"deep": nested(100), "leaf": "v"});
        let under = format!("/deep{}/x", "/k".repeat(80));
        let got = json_patch(&doc, &ops(vec![json!({"op": "move", "from": "/leaf", "path": under.clone()})])).unwrap();
        assert_eq!(got.pointer(&under), Some(&json!("v")));
    }

    /// Moves that each look deepening make the depth be measured again; many of them in a
    /// large document stop at the walk budget instead of walking it once per operation.
    #[test]
    fn deepening_moves_are_bounded() {
        let mut doc = json!({"deep": nested(120), "leaf": "v"});
        let wide: Vec<Value> = (0..50_000).map(Value::from).collect();
        doc["wide"] = Value::Array(wide);
        let under = format!("/deep{}/x", "/k".repeat(100));
        let there_and_back: Vec<Value> = (0..MAX_JSON_PATCH_OPERATIONS / 2)
            .flat_map(|_| {
                [
                    json!({"op": "move", "from": "/leaf", "path": under.clone()}),
                    json!({"op": "move", "from": under.clone(), "path": "/leaf"}),
                ]
            })
            .collect();
        let started = std::time::Instant::now();
        assert_invalid(json_patch(&doc, &ops(there_and_back)), "moves values deeper too often");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
        // A few of them apply.
        let few: Vec<Value> = (0..5)
            .flat_map(|_| {
                [
                    json!({"op": "move", "from": "/leaf", "path": under.clone()}),
                    json!({"op": "move", "from": under.clone(), "path": "/leaf"}),
                ]
            })
            .collect();
        assert_eq!(json_patch(&doc, &ops(few)).unwrap(), doc);
    }

    /// Inserting at the front of a large array moves every element: 10,000 of them into an
    /// array of 500,000 would move 5 billion. They stop at MAX_ARRAY_SHIFTS.
    #[test]
    fn inserts_into_the_middle_of_large_arrays_are_bounded() {
        let doc = json!({"list": vec![0; 500_000]});
        let front: Vec<Value> =
            (0..MAX_JSON_PATCH_OPERATIONS).map(|_| json!({"op": "add", "path": "/list/0", "value": 1})).collect();
        let started = std::time::Instant::now();
        assert_invalid(json_patch(&doc, &ops(front)), "the middle of arrays");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
        // At the end, or a few at the front, is fine.
        let end: Vec<Value> =
            (0..MAX_JSON_PATCH_OPERATIONS).map(|_| json!({"op": "add", "path": "/list/-", "value": 1})).collect();
        assert_eq!(json_patch(&doc, &ops(end)).unwrap()["list"].as_array().unwrap().len(), 510_000);
        let few: Vec<Value> = (0..10).map(|_| json!({"op": "remove", "path": "/list/0"})).collect();
        assert_eq!(json_patch(&doc, &ops(few)).unwrap()["list"].as_array().unwrap().len(), 499_990);
    }

    #[test]
    fn a_document_already_too_deep_is_refused() {
        let doc = json!({"a": nested(MAX_DEPTH)});
        assert_invalid(json_patch(&doc, b"[]"), "more than 127 levels deep");
    }
}
