//! Reading and setting members of an object's `metadata` in its JSON text, without
//! building a tree.
//!
//! Apply stamps every object it writes with its resourceVersion, on every node. For a
//! create that was a parse of the whole object into a `serde_json::Map` and an encoding
//! of it again, on each of the three nodes. The proposer's bytes are compact JSON written
//! by serde_json, so replacing the member's value in place (or appending the member at
//! the end of `metadata`, where inserting into the map puts it) gives the bytes the tree
//! would have given.
//!
//! Worked example, rv 42:
//! `{"kind":"ConfigMap","metadata":{"name":"a"},"data":{}}` becomes
//! `{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"42"},"data":{}}`.
//!
//! The text is not parsed: it is what the proposing node's serde_json wrote (kuorum-rest
//! proposes every object encoded from a parsed tree), and apply trusts a command's bytes
//! as it trusts its key. Checking that with a full parse on every node was a third of
//! apply's CPU under creates. What the scanner does check is what it relies on: UTF-8
//! text, one object at the top with only whitespace after it, members it can delimit.
//! Anything it does not expect (a top-level value that is not an object, no `metadata`
//! object, a member named twice or with an escape in its name) answers `None`, and the
//! caller takes the tree path, which parses (and refuses what is not JSON).

use std::io::Write;

/// `json` with `metadata.resourceVersion` set to `rv` (as a string), or `None` when the
/// caller must edit the parsed tree instead (see the module docs).
pub fn with_resource_version(json: &[u8], rv: u64) -> Option<Vec<u8>> {
    let meta = metadata_members(json)?;
    // Where the new value goes, and from where the text after it resumes.
    let existing = meta.lookup(b"resourceVersion")?;
    let (at, tail) = existing.map_or((meta.close, meta.close), |old| (old.start, old.end));
    let mut out = Vec::with_capacity(json.len() + 40);
    out.extend_from_slice(&json[..at]);
    if existing.is_none() {
        if !meta.values.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(b"\"resourceVersion\":");
    }
    // Writing to a Vec cannot fail.
    let _ = write!(out, "\"{rv}\"");
    out.extend_from_slice(&json[tail..]);
    Some(out)
}

/// Whether `metadata` has a member named `name` (whatever its value), or `None` when
/// only a tree can tell.
pub fn metadata_has(json: &[u8], name: &str) -> Option<bool> {
    Some(metadata_members(json)?.lookup(name.as_bytes())?.is_some())
}

/// The members of the object's `metadata`. `metadata`'s members are read once, on the
/// way through the top-level object (not skipped over and then read again).
fn metadata_members(json: &[u8]) -> Option<Members<'_>> {
    std::str::from_utf8(json).ok()?;
    let mut metadata = None;
    let top_close = scan_members(json, skip_ws(json, 0), |key, start| {
        if key != b"metadata" {
            return skip_value(json, start);
        }
        if metadata.is_some() {
            return None;
        }
        let m = members(json, start)?;
        let end = m.close + 1;
        metadata = Some(m);
        Some(end)
    })?;
    if skip_ws(json, top_close + 1) != json.len() {
        return None;
    }
    metadata
}

/// Where a value lies in the text: `json[start..end]`.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
}

/// The members of one JSON object: each raw key (between its quotes, escapes left as
/// they are) with its value's span, and the index of the closing brace.
struct Members<'a> {
    values: Vec<(&'a [u8], Span)>,
    close: usize,
}

impl Members<'_> {
    /// The value of the member named `key`: `Some(None)` if absent, `None` if named more
    /// than once (serde_json would keep the last; a tree edit decides).
    fn lookup(&self, key: &[u8]) -> Option<Option<Span>> {
        let mut found = self.values.iter().filter(|(k, _)| *k == key).map(|(_, span)| *span);
        let first = found.next();
        found.next().is_none().then_some(first)
    }
}

/// Reads the object that starts at `json[at]`; `None` if no object starts there.
fn members(json: &[u8], at: usize) -> Option<Members<'_>> {
    let mut values = Vec::new();
    let close = scan_members(json, at, |key, start| {
        let end = skip_value(json, start)?;
        values.push((key, Span { start, end }));
        Some(end)
    })?;
    Some(Members { values, close })
}

/// Walks the members of the object that starts at `json[at]`, handing each raw key and
/// the index its value starts at to `value`, which answers the index just past the
/// value. Answers the index of the closing brace; `None` if no object starts there, a
/// name has an escape, or `value` answers `None`.
fn scan_members<'a>(
    json: &'a [u8],
    at: usize,
    mut value: impl FnMut(&'a [u8], usize) -> Option<usize>,
) -> Option<usize> {
    if json.get(at) != Some(&b'{') {
        return None;
    }
    let mut i = skip_ws(json, at + 1);
    if json.get(i) == Some(&b'}') {
        return Some(i);
    }
    loop {
        let key_end = skip_string(json, i)?;
        let key = &json[i + 1..key_end - 1];
        if key.contains(&b'\\') {
            // An escaped name may spell a member we look for: let the tree decode it.
            return None;
        }
        i = skip_ws(json, key_end);
        if json.get(i) != Some(&b':') {
            return None;
        }
        let end = value(key, skip_ws(json, i + 1))?;
        i = skip_ws(json, end);
        match json.get(i) {
            Some(b',') => i = skip_ws(json, i + 1),
            Some(b'}') => return Some(i),
            _ => return None,
        }
    }
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while matches!(json.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The index just past the string that starts at `json[at]`.
fn skip_string(json: &[u8], at: usize) -> Option<usize> {
    if json.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    loop {
        i += memchr::memchr2(b'"', b'\\', json.get(i..)?)?;
        match json[i] {
            b'"' => return Some(i + 1),
            _ => i += 2,
        }
    }
}

/// The index just past the (well-formed) value that starts at `json[at]`.
fn skip_value(json: &[u8], at: usize) -> Option<usize> {
    match json.get(at)? {
        b'"' => skip_string(json, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match json.get(i)? {
                    b'"' => {
                        i = skip_string(json, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        // A number or a literal: up to the next delimiter.
        _ => {
            let mut i = at;
            while json.get(i).is_some_and(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')) {
                i += 1;
            }
            Some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map, Value};

    /// What apply's tree path gives: parse, insert, encode.
    fn by_tree(json: &[u8], rv: u64) -> Vec<u8> {
        let mut obj: Map<String, Value> = serde_json::from_slice(json).unwrap();
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        meta.as_object_mut().unwrap().insert("resourceVersion".into(), Value::String(rv.to_string()));
        serde_json::to_vec(&obj).unwrap()
    }

    #[test]
    fn the_worked_example() {
        let out = with_resource_version(br#"{"kind":"ConfigMap","metadata":{"name":"a"},"data":{}}"#, 42).unwrap();
        assert_eq!(out, br#"{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"42"},"data":{}}"#);
    }

    #[test]
    fn gives_the_bytes_the_tree_gives_for_serde_json_output() {
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
            json!({"metadata": {"name": "a", "resourceVersion": "7", "labels": {"x": "}\"{"}}, "data": {"k": "v\\\"}"}}),
            json!({"apiVersion": "v1", "metadata": {"name": "b", "managedFields": [{"fieldsV1": {"f:data": {".": {}}}}],
                   "annotations": {"resourceVersion": "not this one"}}, "spec": {"n": [1, 2.5, -3e10, true, null]}}),
            json!({"metadata": {"name": "ünïcode ☃", "generation": 3}, "data": {"e": "\u{1}\n\t"}}),
            json!({"kind": "Namespace", "spec": {"finalizers": ["kubernetes"]}, "metadata": {"resourceVersion": 5}}),
        ];
        for (i, obj) in objects.iter().enumerate() {
            let bytes = serde_json::to_vec(obj).unwrap();
            for rv in [1, 42, u64::MAX] {
                let fast = with_resource_version(&bytes, rv).unwrap_or_else(|| panic!("object {i} took the tree path"));
                assert_eq!(String::from_utf8(fast).unwrap(), String::from_utf8(by_tree(&bytes, rv)).unwrap());
            }
        }
    }

    #[test]
    fn metadata_members_are_found_by_name() {
        let ns =
            br#"{"kind":"Namespace","metadata":{"name":"a","deletionTimestamp":null},"spec":{"deletionTimestamp":1}}"#;
        assert_eq!(metadata_has(ns, "deletionTimestamp"), Some(true));
        assert_eq!(metadata_has(ns, "finalizers"), Some(false));
        assert_eq!(
            metadata_has(br#"{"metadata":{},"spec":{"deletionTimestamp":"x"}}"#, "deletionTimestamp"),
            Some(false)
        );
        assert_eq!(metadata_has(br#"{"spec":{}}"#, "deletionTimestamp"), None);
    }

    #[test]
    fn whitespace_is_kept_and_the_result_is_the_same_object() {
        let text = b" { \"metadata\" : { \"name\" : \"a\" } , \"data\" : { } } ";
        let fast: Value = serde_json::from_slice(&with_resource_version(text, 9).unwrap()).unwrap();
        assert_eq!(fast, json!({"metadata": {"name": "a", "resourceVersion": "9"}, "data": {}}));
    }

    #[test]
    fn anything_unusual_is_left_to_the_tree() {
        for text in [
            &br#"[1,2]"#[..],
            br#"{"kind":"x"}"#,
            br#"{"metadata":[]}"#,
            br#"{"metadata":"m"}"#,
            br#"{"metadata":{},"metadata":{}}"#,
            br#"{"metadata":{"resourceVersion":"1","resourceVersion":"2"}}"#,
            br#"{"metadata":{"name":"a"}"#,
            br#"{"metadata":{"name":"a"}} trailing"#,
            br#"{"metadata":{"name":"a"}}}"#,
            b"{\"metadata\":{\"name\":\"\xff\"}}",
            br#"{"metadata":{"resource\u0056ersion":"1"}}"#,
            br#"not json"#,
            b"",
        ] {
            assert_eq!(with_resource_version(text, 3), None, "{}", String::from_utf8_lossy(text));
        }
    }
}
