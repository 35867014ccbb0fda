//! Owns the bounds on what applying a patch may cost: how many JSON Patch operations a
//! body may hold, how many bytes its `copy` operations may add, how many array elements
//! its inserts and removals may shift, and how deep a patched document may nest. Each is checked before the work it guards, so a patch that would
//! amplify (a chain of `copy` ops doubles the document per op) fails before it allocates.
//!
//! kube-apiserver's bounds (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go` and
//! `pkg/server/config.go`): at most 10,000 JSON Patch operations (413), and
//! `JSONPatchMaxCopyBytes` = 3 MiB for the bytes `copy` operations add, which
//! evanphx/json-patch reports as a failed operation (422). Its JSON decoder allows 10,000
//! levels of nesting; kuorum's stored objects are read back with `serde_json`, which reads
//! [`MAX_DEPTH`] levels, so that is the deepest a patched document may be (422, as
//! kube-apiserver answers a patched object that does not decode).

use std::io;

use serde_json::Value;

/// The most operations one JSON Patch may hold (kube-apiserver's `maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The most bytes (as compact JSON) that the `copy` operations of one JSON Patch may add,
/// all together (kube-apiserver's `JSONPatchMaxCopyBytes` default).
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// The most array elements the operations of one JSON Patch may shift, all together, by
/// inserting into or removing from the middle of arrays (each such operation moves every
/// element after it). kube-apiserver has no such bound; without it, 10,000 inserts at the
/// front of a 500,000-element array move 5 billion elements.
pub const MAX_ARRAY_SHIFTS: usize = 1 << 24;

/// The deepest nesting of objects and arrays a document may have: `{}` is 1, `{"a": []}`
/// is 2. `serde_json` refuses to read the 128th level, and every stored object must read
/// back.
pub const MAX_DEPTH: usize = 127;

/// Whether `v` nests more than `max` levels of objects and arrays. Recurses at most
/// `max + 1` levels, so it is safe on any document; it visits each node at most once.
pub fn exceeds_depth(v: &Value, max: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return false,
    };
    if max == 0 {
        return true;
    }
    for child in children {
        if exceeds_depth(child, max - 1) {
            return true;
        }
    }
    false
}

/// The nesting depth of `v` (see [`MAX_DEPTH`]), or `None` when it is more than `max`.
/// Visits each node at most once and recurses at most `max + 1` levels.
pub fn depth_within(v: &Value, max: usize) -> Option<usize> {
    let children: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return Some(0),
    };
    if max == 0 {
        return None;
    }
    let mut deepest = 0;
    for child in children {
        deepest = deepest.max(depth_within(child, max - 1)?);
    }
    Some(deepest + 1)
}

/// The length of `v` as compact JSON, or `None` once it passes `max` (the count stops
/// there, so this costs at most `max` bytes of output, whatever the size of `v`). `v` must
/// be no deeper than [`MAX_DEPTH`]: serializing recurses once per level.
pub fn json_len_within(v: &Value, max: usize) -> Option<usize> {
    let mut counter = ByteCounter { count: 0, max };
    match serde_json::to_writer(&mut counter, v) {
        Ok(()) => Some(counter.count),
        Err(_) => None,
    }
}

/// A writer that counts bytes and fails once more than `max` have been written.
struct ByteCounter {
    count: usize,
    max: usize,
}

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.count += buf.len();
        if self.count > self.max {
            return Err(io::Error::other("over the limit"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The message of a document nested deeper than [`MAX_DEPTH`].
pub(crate) fn too_deep_message(what: &str) -> String {
    format!("{what} nests objects and arrays more than {MAX_DEPTH} levels deep")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(levels: usize) -> Value {
        let mut v = json!("leaf");
        for i in 0..levels {
            v = if i % 2 == 0 { json!([v]) } else { json!({ "k": v }) };
        }
        v
    }

    #[test]
    fn depth_is_counted_in_containers() {
        for (v, want) in [(json!(1), 0), (json!({}), 1), (json!({"a": []}), 2), (json!([[1], [[2]]]), 3)] {
            assert_eq!(depth_within(&v, MAX_DEPTH), Some(want), "{v}");
            assert!(!exceeds_depth(&v, want), "{v}");
            assert!(want == 0 || exceeds_depth(&v, want - 1), "{v}");
        }
        assert_eq!(depth_within(&nested(MAX_DEPTH), MAX_DEPTH), Some(MAX_DEPTH));
        assert_eq!(depth_within(&nested(MAX_DEPTH + 1), MAX_DEPTH), None);
    }

    /// What is within [`MAX_DEPTH`] reads back with serde_json's default limit, and one
    /// level more does not: the limit is exactly what a stored object may be.
    #[test]
    fn max_depth_is_what_serde_json_reads_back() {
        let ok = serde_json::to_string(&nested(MAX_DEPTH)).unwrap();
        assert!(serde_json::from_str::<Value>(&ok).is_ok());
        let deep = serde_json::to_string(&nested(MAX_DEPTH + 1)).unwrap();
        let err = serde_json::from_str::<Value>(&deep).unwrap_err();
        assert!(err.to_string().contains("recursion limit"), "{err}");
    }

    #[test]
    fn json_len_stops_at_the_limit() {
        let v = json!({"a": [1, "xy", null]});
        let len = serde_json::to_vec(&v).unwrap().len();
        assert_eq!(json_len_within(&v, len), Some(len));
        assert_eq!(json_len_within(&v, len - 1), None);
        let big = Value::String("x".repeat(10 << 20));
        assert_eq!(json_len_within(&big, 1024), None);
    }
}
