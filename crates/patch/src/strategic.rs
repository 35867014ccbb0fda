//! Owns the strategic merge patch (`application/strategic-merge-patch+json`): JSON merge
//! patch plus per-field list strategies and `$` directives, with the semantics of
//! kube-apiserver (`k8s.io/apimachinery/pkg/util/strategicpatch`, `StrategicMergeMapPatch`).
//!
//! How a field is patched comes from its schema, never from a list of known fields:
//!
//! - objects merge key by key; `null` removes a key. A field whose
//!   `x-kubernetes-patch-strategy` is `replace` is replaced whole. `x-kubernetes-map-type:
//!   atomic` does not change this: the strategicpatch package reads only the patch strategy
//!   and merge key (the map type is server-side apply's), so `spec.selector`,
//!   `nodeSelector` and `secretKeyRef` merge like any object, as `kubectl apply` expects
//!   when it sends only the changed keys of them;
//! - lists with strategy `merge` merge by `x-kubernetes-patch-merge-key` (lists of
//!   objects) or as a set (lists of scalars, e.g. `metadata.finalizers`); every other list
//!   is replaced whole;
//! - where the schema says nothing (no schema, a field it does not know, a
//!   `x-kubernetes-preserve-unknown-fields` subtree) the field has no strategy, which is
//!   JSON merge patch: objects merge, lists are replaced.
//!
//! Directives: in an object, `$patch: replace` (the object becomes the patch's keys) and
//! `$patch: delete` (the object becomes `{}`: kube-apiserver empties it rather than remove
//! the field); as elements of a merging list, `{"$patch": "replace"}` (the list becomes the
//! patch's other elements) and `{<key>: .., "$patch": "delete"}` (the element with that key
//! goes); `$retainKeys: [..]` (the object keeps only those keys); `$setElementOrder/<list>`
//! (the merged list's order); `$deleteFromPrimitiveList/<list>` (values to remove). Any
//! other `$patch` value is an error, `merge` included: kube-apiserver refuses it in objects
//! and in lists alike.
//!
//! Order of a merged list (kube's `normalizeElementOrder`): elements the patch names keep
//! the patch's relative order, the others keep the live order, and the two are interleaved
//! by their live positions; an element with no live position (a new one) goes before the
//! live element it is compared with. So without `$setElementOrder`, a new element lands
//! first, not last, which is what kube-apiserver does (kubectl sends `$setElementOrder`
//! to say where it goes).
//!
//! A subtree the patch adds where the object had nothing is patched against nothing: its
//! `null`s and directives are resolved, never stored. (kube-apiserver keeps such a subtree
//! raw except for `null`s and `$patch` objects, and leaves the rest to its typed decoding;
//! it also drops an added object that carries `$patch: replace`, where this keeps it.)

use std::collections::{HashMap, HashSet};

use kuorum_schema::Schema;
use serde_json::{Map, Value};

use crate::PatchError;

type Object = Map<String, Value>;
type Result<T> = std::result::Result<T, PatchError>;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

// A worked example. The live Pod has
//
//   metadata.finalizers: [a]                      (strategy merge, no key: a set)
//   spec.containers:     [{name: x, image: x:1}, {name: y, image: y:1}, {name: z}]
//                                                 (strategy merge, merge key `name`)
//   spec.containers[x].args: [--v=1]              (no strategy: replaced)
//
// and the patch is
//
//   {"metadata": {"finalizers": ["b"], "labels": {"team": "t"}},
//    "spec": {"containers": [{"name": "new", "image": "new:1"},
//                            {"name": "x", "image": "x:2", "args": ["--v=2"]},
//                            {"name": "z", "$patch": "delete"}]}}
//
// - finalizers: the union is [a, b]; b is the patch's and has no live position, so it goes
//   first: [b, a].
// - labels: absent before, so the patch's map is taken: {team: t}.
// - containers: the `$patch: delete` element removes z. x matches by name and merges
//   recursively: image becomes x:2, and args (no strategy) is replaced by [--v=2]. `new`
//   matches nothing and is added. Ordering: the patch names [new, x] (in that order), the
//   live list keeps [y]; interleaving by live position (x before y, `new` has none) gives
//   [new, x, y].
//
// kubectl says where elements go with `"$setElementOrder/containers": [{"name": "x"},
// {"name": "y"}, {"name": "new"}]`, and lists the patch's elements in that order (x, then
// new; an order the patch list contradicts is an error). The result is then [x, y, new].

/// Applies the strategic merge patch `body` to `original`, whose schema is `schema` (the
/// kind's: `Schemas::builtin().kind(..)`, or a CRD's with `Schema::standalone`).
pub fn strategic_merge_patch(original: &Value, body: &[u8], schema: Schema<'_>) -> Result<Value> {
    let patch = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(patch)) => patch,
        // Go decodes `null` into the empty patch it started with.
        Ok(Value::Null) => return Ok(original.clone()),
        Ok(_) => return Err(bad("a strategic merge patch must be a JSON object")),
        Err(e) => return Err(bad(format!("error decoding strategic merge patch: {e}"))),
    };
    let current = match original {
        Value::Object(o) => o.clone(),
        _ => Object::new(),
    };
    let patched = patch_object(Some(current), patch, Some(schema))?.unwrap_or_default();
    Ok(Value::Object(patched))
}

fn bad(message: impl Into<String>) -> PatchError {
    PatchError::BadRequest(message.into())
}

/// Patches an object field. `current` is `None` where the object had no object there;
/// the result is `None` where the field goes away.
fn patch_object(current: Option<Object>, mut patch: Object, schema: Option<Schema<'_>>) -> Result<Option<Object>> {
    if let Some(directive) = patch.shift_remove(DIRECTIVE) {
        return match directive.as_str() {
            // The patch's own keys, patched against nothing.
            Some("replace") => patch_object(None, patch, schema),
            // kube-apiserver empties the object rather than removing the field.
            Some("delete") => Ok(current.map(|_| Object::new())),
            _ => Err(bad(format!("unknown patch type: {directive} in map: {}", Value::Object(patch)))),
        };
    }
    let mut out = current.unwrap_or_default();
    if let Some(keys) = patch.shift_remove(RETAIN_KEYS) {
        retain_keys(&mut out, &patch, &keys)?;
    }
    // Lists with an element order are merged and ordered first, and leave the patch.
    set_element_orders(&mut out, &mut patch, schema)?;
    // Deletions from primitive lists apply after the merges (Go visits keys in random
    // order; for a sane patch the two orders agree).
    let mut deletions = Vec::new();
    // Keys to remove, removed in one pass at the end: removing one at a time keeps the
    // order but costs a shift of the map each, quadratic for a patch of many `null`s.
    let mut removed: HashSet<String> = HashSet::new();
    for (key, value) in patch {
        if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            let field = directive_field(&key, DELETE_FROM_PRIMITIVE_LIST)
                .ok_or_else(|| bad(format!("invalid patch format of primitive list: {key}")))?;
            deletions.push((field.to_string(), value));
            continue;
        }
        if value.is_null() {
            if out.contains_key(&key) {
                removed.insert(key);
            }
            continue;
        }
        let field_schema = schema.and_then(|s| s.child(&key));
        // Taking the value out leaves `null` in its slot, so the key keeps its position.
        let existing = out.get_mut(&key).map(std::mem::take);
        match patch_value(existing, value, field_schema)? {
            Some(v) => {
                out.insert(key, v);
            }
            None => {
                if out.contains_key(&key) {
                    removed.insert(key);
                }
            }
        }
    }
    for (field, values) in deletions {
        // Only a list from a list; anything else is ignored, as kube-apiserver does.
        if let (Some(Value::Array(list)), Value::Array(values)) = (out.get_mut(&field), &values) {
            let values: HashSet<&Value> = values.iter().collect();
            list.retain(|v| !values.contains(v));
        }
    }
    if !removed.is_empty() {
        out.retain(|k, _| !removed.contains(k));
    }
    Ok(Some(out))
}

/// Patches one field's value: objects and lists by their strategy, anything else (and any
/// change of JSON type) replaces.
fn patch_value(existing: Option<Value>, patch: Value, schema: Option<Schema<'_>>) -> Result<Option<Value>> {
    match patch {
        Value::Object(patch) => {
            let current = match existing {
                Some(Value::Object(o)) if !strategies(schema).contains(&"replace") => Some(o),
                _ => None,
            };
            Ok(patch_object(current, patch, schema)?.map(Value::Object))
        }
        Value::Array(patch) => {
            let current = match existing {
                Some(Value::Array(list)) => Some(list),
                _ => None,
            };
            Ok(Some(Value::Array(patch_list(current, patch, schema)?)))
        }
        scalar => Ok(Some(scalar)),
    }
}

fn strategies<'a>(schema: Option<Schema<'a>>) -> Vec<&'a str> {
    schema.map(|s| s.patch_strategies()).unwrap_or_default()
}

/// Patches a list field: merged if its strategy is `merge`, else replaced by the patch's
/// elements (each patched against nothing, which drops directives).
fn patch_list(current: Option<Vec<Value>>, patch: Vec<Value>, schema: Option<Schema<'_>>) -> Result<Vec<Value>> {
    let items = schema.and_then(|s| s.items());
    if strategies(schema).contains(&"merge") {
        let key = schema.and_then(|s| s.patch_merge_key());
        return merge_list(current.unwrap_or_default(), patch, key, items);
    }
    let mut out = Vec::with_capacity(patch.len());
    for element in patch {
        out.extend(patch_value(None, element, items)?);
    }
    Ok(out)
}

/// The JSON types a merging list may hold, one per list.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ElementKind {
    Object,
    String,
    Number,
    Bool,
    Null,
}

/// The one element kind of both lists, as Go's `sliceElementType` finds it: a list as the
/// first element is a list of lists (422 in kube-apiserver); any element of another kind
/// than the first is a mixed list.
fn element_kind(current: &[Value], patch: &[Value]) -> Result<Option<ElementKind>> {
    let kind_of = |v: &Value| match v {
        Value::Array(_) => None,
        Value::Object(_) => Some(ElementKind::Object),
        Value::String(_) => Some(ElementKind::String),
        Value::Number(_) => Some(ElementKind::Number),
        Value::Bool(_) => Some(ElementKind::Bool),
        Value::Null => Some(ElementKind::Null),
    };
    let mut all = current.iter().chain(patch);
    let Some(first) = all.next() else { return Ok(None) };
    let kind = kind_of(first).ok_or_else(|| PatchError::Invalid("lists of lists are not supported".into()))?;
    if all.any(|v| kind_of(v) != Some(kind)) {
        return Err(bad(format!(
            "list element types are not identical: {} and {}",
            Value::Array(current.to_vec()),
            Value::Array(patch.to_vec())
        )));
    }
    Ok(Some(kind))
}

/// Merges a list whose strategy is `merge`: by merge key for objects, as a set for scalars.
fn merge_list(
    current: Vec<Value>,
    patch: Vec<Value>,
    key: Option<&str>,
    items: Option<Schema<'_>>,
) -> Result<Vec<Value>> {
    match element_kind(&current, &patch)? {
        None => Ok(current),
        Some(ElementKind::Object) => {
            let key = key.ok_or_else(|| bad("cannot merge lists of objects without a merge key"))?;
            merge_objects_by_key(current, patch, key, items)
        }
        Some(_) => Ok(merge_scalars(current, patch)),
    }
}

/// A set union: the live elements, then the patch's new ones, without duplicates; ordered
/// as [`order`] says.
fn merge_scalars(current: Vec<Value>, patch: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::with_capacity(current.len() + patch.len());
    let mut seen: HashSet<&Value> = HashSet::with_capacity(current.len() + patch.len());
    for v in current.iter().chain(&patch) {
        if seen.insert(v) {
            merged.push(v.clone());
        }
    }
    let in_patch: HashSet<&Value> = patch.iter().collect();
    let (named, live_only): (Vec<Value>, Vec<Value>) = merged.into_iter().partition(|v| in_patch.contains(v));
    order(named, live_only, &patch, &current)
}

/// Merges a list of objects by `key`: `$patch: delete` elements remove their match, a
/// `$patch: replace` element makes the list the patch's other elements, and every other
/// patch element merges into the live element with its key, or is added.
fn merge_objects_by_key(
    current: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
    items: Option<Schema<'_>>,
) -> Result<Vec<Value>> {
    let mut base = current;
    let mut regular = Vec::with_capacity(patch.len());
    let mut replace = false;
    // The keys of `$patch: delete` elements, deleted in one pass.
    let mut deleted: HashSet<Value> = HashSet::new();
    for element in patch {
        let Value::Object(element) = element else { unreachable!("element_kind checked the list") };
        let Some(directive) = element.get(DIRECTIVE) else {
            regular.push(element);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let id = element.get(key).ok_or_else(|| no_merge_key(&element, key))?;
                deleted.insert(id.clone());
            }
            // Other directive elements are still checked, so keep going.
            Some("replace") => replace = true,
            Some("merge") => return Err(bad("merging lists cannot yet be specified in the patch")),
            _ => {
                return Err(bad(format!("unknown patch type: {directive} in map: {}", Value::Object(element.clone()))));
            }
        }
    }
    if !deleted.is_empty() {
        base.retain(|v| v.get(key).is_none_or(|id| !deleted.contains(id)));
    }
    if replace {
        let mut replaced = Vec::with_capacity(regular.len());
        for element in regular.drain(..) {
            replaced.extend(patch_object(None, element, items)?.map(Value::Object));
        }
        base = replaced;
    }
    let live_ids = identities(&base, Some(key))?;
    let patch_ids =
        regular.iter().map(|e| e.get(key).cloned().ok_or_else(|| no_merge_key(e, key))).collect::<Result<Vec<_>>>()?;
    let mut merged = base;
    // Where each key is in `merged`: its first element with that key, as a scan finds it.
    let mut index: HashMap<Value, usize> = HashMap::with_capacity(merged.len() + regular.len());
    for (i, v) in merged.iter().enumerate() {
        if let Some(id) = v.get(key) {
            index.entry(id.clone()).or_insert(i);
        }
    }
    for (element, id) in regular.into_iter().zip(&patch_ids) {
        match index.get(id) {
            Some(&i) => {
                let existing = match std::mem::take(&mut merged[i]) {
                    Value::Object(o) => Some(o),
                    _ => None,
                };
                merged[i] = Value::Object(patch_object(existing, element, items)?.unwrap_or_default());
            }
            None => {
                if let Some(added) = patch_object(None, element, items)? {
                    if let Some(id) = added.get(key) {
                        index.entry(id.clone()).or_insert(merged.len());
                    }
                    merged.push(Value::Object(added));
                }
            }
        }
    }
    let named_ids: HashSet<&Value> = patch_ids.iter().collect();
    let (named, live_only): (Vec<Value>, Vec<Value>) =
        merged.into_iter().partition(|v| v.get(key).is_some_and(|id| named_ids.contains(id)));
    Ok(order_by(named, live_only, &patch_ids, &live_ids, Some(key)))
}

fn no_merge_key(element: &Object, key: &str) -> PatchError {
    bad(format!("map: {} does not contain declared merge key: {key}", Value::Object(element.clone())))
}

/// What identifies a list element: its merge key's value, or the element itself.
fn identity(v: &Value, key: Option<&str>) -> Result<Value> {
    match (key, v) {
        (Some(key), Value::Object(o)) => o.get(key).cloned().ok_or_else(|| no_merge_key(o, key)),
        _ => Ok(v.clone()),
    }
}

fn identities(list: &[Value], key: Option<&str>) -> Result<Vec<Value>> {
    list.iter().map(|v| identity(v, key)).collect()
}

/// [`order_by`] for scalars, which are their own identities.
fn order(named: Vec<Value>, live_only: Vec<Value>, patch_order: &[Value], live_order: &[Value]) -> Vec<Value> {
    order_by(named, live_only, patch_order, live_order, None)
}

/// kube's `normalizeElementOrder`: `named` (the elements the patch, or its
/// `$setElementOrder`, names) sorted by `patch_order`, `live_only` sorted by `live_order`,
/// then interleaved: a live-only element goes first only when both it and the next named
/// element have live positions and its is earlier.
fn order_by(
    named: Vec<Value>,
    live_only: Vec<Value>,
    patch_order: &[Value],
    live_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    // An element's position in an order is that of the first entry with its identity;
    // the positions are looked up in maps, so ordering costs O(n log n), not O(n²).
    let positions = |order: &[Value]| {
        let mut at: HashMap<Value, usize> = HashMap::with_capacity(order.len());
        for (i, id) in order.iter().enumerate() {
            at.entry(id.clone()).or_insert(i);
        }
        at
    };
    let patch_at = positions(patch_order);
    let live_at = positions(live_order);
    let position = |at: &HashMap<Value, usize>, v: &Value| identity(v, key).ok().and_then(|id| at.get(&id).copied());
    // Each element with its position in the patch's order (or the live one) and in the
    // live order.
    let mut named: Vec<(usize, Option<usize>, Value)> =
        named.into_iter().map(|v| (position(&patch_at, &v).unwrap_or(usize::MAX), position(&live_at, &v), v)).collect();
    let mut live_only: Vec<(usize, Option<usize>, Value)> = live_only
        .into_iter()
        .map(|v| {
            let live = position(&live_at, &v);
            (live.unwrap_or(usize::MAX), live, v)
        })
        .collect();
    // Stable, and every element has a position here, so this is Go's SliceStable.
    named.sort_by_key(|e| e.0);
    live_only.sort_by_key(|e| e.0);
    let mut out = Vec::with_capacity(named.len() + live_only.len());
    let mut named = named.into_iter().peekable();
    let mut live_only = live_only.into_iter().peekable();
    loop {
        let take_live = match (live_only.peek(), named.peek()) {
            (Some(l), Some(n)) => matches!((l.1, n.1), (Some(a), Some(b)) if a < b),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        out.extend(if take_live { live_only.next() } else { named.next() }.map(|e| e.2));
    }
    out
}

/// `$retainKeys`: the object keeps only the listed keys, and the patch may set only those.
fn retain_keys(out: &mut Object, patch: &Object, keys: &Value) -> Result<()> {
    let Value::Array(keys) = keys else {
        return Err(bad(format!("invalid patch format of retainKeys: {keys} is not a list")));
    };
    let keys: HashSet<&str> = keys.iter().filter_map(Value::as_str).collect();
    let listed = |k: &str| keys.contains(k);
    for (k, v) in patch {
        let exempt = v.is_null() || k.starts_with(DELETE_FROM_PRIMITIVE_LIST) || k.starts_with(SET_ELEMENT_ORDER);
        if !exempt && !listed(k) {
            return Err(bad(format!(
                "invalid patch format of retainKeys: the patch sets {k}, which is not in {RETAIN_KEYS}"
            )));
        }
    }
    out.retain(|k, _| listed(k));
    Ok(())
}

/// `$setElementOrder/<list>`: merges `<list>` (if the patch has it) and orders the result
/// by the directive's list; elements it does not name keep their live order around them.
fn set_element_orders(out: &mut Object, patch: &mut Object, schema: Option<Schema<'_>>) -> Result<()> {
    let directives: Vec<String> = patch.keys().filter(|k| k.starts_with(SET_ELEMENT_ORDER)).cloned().collect();
    for directive in directives {
        let wanted = patch.shift_remove(&directive).unwrap_or_default();
        let field = directive_field(&directive, SET_ELEMENT_ORDER)
            .ok_or_else(|| bad(format!("invalid patch format of setElementOrder list: {directive}")))?;
        let Value::Array(wanted) = wanted else {
            return Err(bad(format!("invalid patch format of setElementOrder list: {directive} is not a list")));
        };
        let field_schema = schema.and_then(|s| s.child(field));
        let key = field_schema.and_then(|s| s.patch_merge_key());
        let current = match out.get_mut(field).map(std::mem::take) {
            None => None,
            Some(Value::Array(list)) => Some(list),
            Some(other) => return Err(bad(format!("{field} is not a list but {directive} orders it: {other}"))),
        };
        let patched = match patch.shift_remove(field) {
            None => None,
            Some(Value::Array(list)) => Some(list),
            Some(other) => return Err(bad(format!("{field} is not a list but {directive} orders it: {other}"))),
        };
        check_order(patched.as_deref().unwrap_or_default(), &wanted, key, &directive)?;
        let live = current.clone().unwrap_or_default();
        let merged = match (current, patched) {
            (None, None) => continue,
            (Some(current), None) => current,
            (current, Some(patched)) => patch_list(current, patched, field_schema)?,
        };
        // The identities are merge-key values only for lists of objects.
        let key = key.filter(|_| merged.iter().chain(&live).any(Value::is_object));
        let wanted_ids = identities(&wanted, key)?;
        let live_ids = identities(&live, key)?;
        let wanted_set: HashSet<&Value> = wanted_ids.iter().collect();
        let mut named = Vec::new();
        let mut live_only = Vec::new();
        for v in merged {
            if wanted_set.contains(&identity(&v, key)?) {
                named.push(v);
            } else {
                live_only.push(v);
            }
        }
        out.insert(field.to_string(), Value::Array(order_by(named, live_only, &wanted_ids, &live_ids, key)));
    }
    Ok(())
}

/// The patch list's elements (directive elements aside) must appear in the
/// `$setElementOrder` list, in the same relative order.
fn check_order(patch: &[Value], wanted: &[Value], key: Option<&str>, directive: &str) -> Result<()> {
    let mut next = 0;
    for element in patch {
        if element.get(DIRECTIVE).is_some() {
            continue;
        }
        let key = key.filter(|_| element.is_object());
        let id = identity(element, key)?;
        loop {
            let Some(w) = wanted.get(next) else {
                return Err(bad(format!(
                    "the order in patch list {} doesn't match {directive} list {}",
                    Value::Array(patch.to_vec()),
                    Value::Array(wanted.to_vec())
                )));
            };
            next += 1;
            if identity(w, key)? == id {
                break;
            }
        }
    }
    Ok(())
}

/// `<list>` from `<prefix>/<list>`.
fn directive_field<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    key.strip_prefix(prefix)?.strip_prefix('/')
}

#[cfg(test)]
mod tests {
    use kuorum_schema::Schemas;
    use serde_json::json;

    use super::*;

    /// What a case expects: values at JSON pointers of the result (`null` for "absent"),
    /// or an error of a kind whose message contains the text.
    enum Want {
        At(Vec<(&'static str, Value)>),
        BadRequest(&'static str),
        Invalid(&'static str),
    }

    struct Case {
        name: &'static str,
        schema: Schema<'static>,
        original: Value,
        patch: Value,
        want: Want,
    }

    fn kind(group: &str, version: &str, kind: &str) -> Schema<'static> {
        Schemas::builtin().kind(group, version, kind).unwrap()
    }

    fn standalone(schema: Value) -> Schema<'static> {
        Schema::standalone(Box::leak(Box::new(schema)))
    }

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "web", "tier": "front"}, "finalizers": ["a", "b"]},
            "spec": {
                "containers": [
                    {"name": "app", "image": "app:1", "args": ["--v=1"],
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                     "ports": [{"containerPort": 80, "protocol": "TCP"},
                               {"containerPort": 9090, "protocol": "TCP", "name": "metrics"}]},
                    {"name": "log", "image": "log:1"}
                ],
                "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c1"}}],
                "tolerations": [{"key": "k1", "operator": "Exists"}]
            }
        })
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "app", "image": "app:1"}]}}
            }
        })
    }

    fn service() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {
                "selector": {"app": "web"},
                "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                          {"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"}]
            }
        })
    }

    /// A custom resource's schema: a `replace` object, a merging list, a free subtree.
    fn custom() -> Schema<'static> {
        standalone(json!({"type": "object", "properties": {
            "rep": {"type": "object", "x-kubernetes-patch-strategy": "replace",
                    "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
            "items": {"type": "array", "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "k",
                      "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "string"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}))
    }

    fn cases() -> Vec<Case> {
        let pod_schema = kind("", "v1", "Pod");
        let deploy_schema = kind("apps", "v1", "Deployment");
        let svc_schema = kind("", "v1", "Service");
        let case = |name, schema, original, patch, want| Case { name, schema, original, patch, want };
        vec![
            // Containers: merge key `name`.
            case(
                "containers: one container's image changes, the rest stays",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "log", "image": "log:2"}]}}),
                Want::At(vec![
                    ("/spec/containers/0/name", json!("app")),
                    ("/spec/containers/0/env/1", json!({"name": "B", "value": "2"})),
                    ("/spec/containers/1", json!({"name": "log", "image": "log:2"})),
                    ("/spec/containers/2", Value::Null),
                    ("/metadata/labels", json!({"app": "web", "tier": "front"})),
                ]),
            ),
            case(
                "containers: a new container without $setElementOrder goes first, as in kube-apiserver",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "side", "image": "side:1"}]}}),
                Want::At(vec![
                    ("/spec/containers/0", json!({"name": "side", "image": "side:1"})),
                    ("/spec/containers/1/name", json!("app")),
                    ("/spec/containers/2/name", json!("log")),
                ]),
            ),
            case(
                "containers: $patch: delete removes the container with that name",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "app", "$patch": "delete"}]}}),
                Want::At(vec![("/spec/containers", json!([{"name": "log", "image": "log:1"}]))]),
            ),
            case(
                "containers: change, add and delete in one patch, in patch order",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [
                    {"name": "log", "$patch": "delete"},
                    {"name": "app", "image": "app:2"},
                    {"name": "side", "image": "side:1"}
                ]}}),
                Want::At(vec![
                    ("/spec/containers/0/image", json!("app:2")),
                    ("/spec/containers/0/args", json!(["--v=1"])),
                    ("/spec/containers/1", json!({"name": "side", "image": "side:1"})),
                    ("/spec/containers/2", Value::Null),
                ]),
            ),
            case(
                "containers: $setElementOrder places the new container last (kubectl's patch)",
                pod_schema,
                pod(),
                json!({"spec": {
                    "$setElementOrder/containers": [{"name": "app"}, {"name": "log"}, {"name": "side"}],
                    "containers": [{"name": "side", "image": "side:1"}]
                }}),
                Want::At(vec![
                    ("/spec/containers/0/name", json!("app")),
                    ("/spec/containers/1", json!({"name": "log", "image": "log:1"})),
                    ("/spec/containers/2", json!({"name": "side", "image": "side:1"})),
                    ("/spec/$setElementOrder~1containers", Value::Null),
                ]),
            ),
            case(
                "containers: $setElementOrder alone reorders the live list",
                pod_schema,
                pod(),
                json!({"spec": {"$setElementOrder/containers": [{"name": "log"}, {"name": "app"}]}}),
                Want::At(vec![
                    ("/spec/containers/0", json!({"name": "log", "image": "log:1"})),
                    ("/spec/containers/1/name", json!("app")),
                    ("/spec/containers/1/image", json!("app:1")),
                ]),
            ),
            case(
                "containers: {$patch: replace} makes the list the patch's other elements",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "solo", "image": "solo:1"}]}}),
                Want::At(vec![("/spec/containers", json!([{"name": "solo", "image": "solo:1"}]))]),
            ),
            case(
                "containers: an added container is patched against nothing (nulls dropped)",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "side", "image": "side:1",
                    "env": [{"name": "X", "value": null}], "resources": {"limits": null}}]}}),
                Want::At(vec![(
                    "/spec/containers/0",
                    json!({"name": "side", "image": "side:1", "env": [{"name": "X"}], "resources": {}}),
                )]),
            ),
            // Lists inside a container.
            case(
                "env: merged by name inside a container",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "app",
                    "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]}]}}),
                Want::At(vec![
                    (
                        "/spec/containers/0/env",
                        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "20"}, {"name": "C", "value": "3"}]),
                    ),
                    ("/spec/containers/0/image", json!("app:1")),
                ]),
            ),
            case(
                "env: $patch: delete inside a container",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "app", "env": [{"name": "A", "$patch": "delete"}]}]}}),
                Want::At(vec![("/spec/containers/0/env", json!([{"name": "B", "value": "2"}]))]),
            ),
            case(
                "ports: merged by containerPort",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "app", "ports": [
                    {"containerPort": 9090, "name": "prom"},
                    {"containerPort": 443, "protocol": "TCP"}
                ]}]}}),
                Want::At(vec![(
                    "/spec/containers/0/ports",
                    json!([{"containerPort": 80, "protocol": "TCP"},
                           {"containerPort": 9090, "protocol": "TCP", "name": "prom"},
                           {"containerPort": 443, "protocol": "TCP"}]),
                )]),
            ),
            case(
                "args: no patch strategy, so the list is replaced",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "app", "args": ["--v=2", "--x"]}]}}),
                Want::At(vec![("/spec/containers/0/args", json!(["--v=2", "--x"]))]),
            ),
            case(
                "args: $deleteFromPrimitiveList works whatever the list's strategy",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "app", "$deleteFromPrimitiveList/args": ["--v=1"]}]}}),
                Want::At(vec![("/spec/containers/0/args", json!([]))]),
            ),
            case(
                "tolerations: atomic list, replaced",
                pod_schema,
                pod(),
                json!({"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}}),
                Want::At(vec![("/spec/tolerations", json!([{"key": "k2", "operator": "Exists"}]))]),
            ),
            // Lists of scalars with strategy merge.
            case(
                "finalizers: union without duplicates, live order kept",
                pod_schema,
                pod(),
                json!({"metadata": {"finalizers": ["b", "c"]}}),
                Want::At(vec![("/metadata/finalizers", json!(["a", "b", "c"]))]),
            ),
            case(
                "finalizers: a new one with no live anchor goes first",
                pod_schema,
                pod(),
                json!({"metadata": {"finalizers": ["c"]}}),
                Want::At(vec![("/metadata/finalizers", json!(["c", "a", "b"]))]),
            ),
            case(
                "finalizers: $deleteFromPrimitiveList",
                pod_schema,
                pod(),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zz"]}}),
                Want::At(vec![("/metadata/finalizers", json!(["b"]))]),
            ),
            case(
                "finalizers: kubectl's order, addition and deletion together",
                pod_schema,
                pod(),
                json!({"metadata": {
                    "$setElementOrder/finalizers": ["b", "c"],
                    "$deleteFromPrimitiveList/finalizers": ["a"],
                    "finalizers": ["c"]
                }}),
                Want::At(vec![("/metadata/finalizers", json!(["b", "c"]))]),
            ),
            // Maps.
            case(
                "labels: merged, null deletes a key",
                pod_schema,
                pod(),
                json!({"metadata": {"labels": {"tier": null, "env": "prod", "absent": null}}}),
                Want::At(vec![("/metadata/labels", json!({"app": "web", "env": "prod"}))]),
            ),
            case(
                "labels: $patch: replace replaces the map",
                pod_schema,
                pod(),
                json!({"metadata": {"labels": {"$patch": "replace", "only": "x"}}}),
                Want::At(vec![("/metadata/labels", json!({"only": "x"})), ("/metadata/name", json!("p"))]),
            ),
            case(
                "labels: $patch: delete empties the map (kube-apiserver keeps an empty one)",
                pod_schema,
                pod(),
                json!({"metadata": {"labels": {"$patch": "delete"}}}),
                Want::At(vec![("/metadata/labels", json!({})), ("/metadata/name", json!("p"))]),
            ),
            case(
                "spec: $patch: replace on a struct drops every field the patch does not set",
                pod_schema,
                pod(),
                json!({"spec": {"$patch": "replace", "containers": [{"name": "solo", "image": "s:1"}]}}),
                Want::At(vec![("/spec", json!({"containers": [{"name": "solo", "image": "s:1"}]}))]),
            ),
            case(
                "volumes: $retainKeys clears the old volume source",
                pod_schema,
                pod(),
                json!({"spec": {"volumes": [
                    {"name": "data", "$retainKeys": ["name", "configMap"], "configMap": {"name": "c2"}}
                ]}}),
                Want::At(vec![(
                    "/spec/volumes",
                    json!([{"name": "data", "configMap": {"name": "c2"}}, {"name": "cfg", "configMap": {"name": "c1"}}]),
                )]),
            ),
            case(
                "ownerReferences: merged by uid (an atomic struct type still merges)",
                pod_schema,
                json!({"kind": "Pod", "metadata": {"name": "p", "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "u1", "controller": true}]}}),
                Want::At(vec![(
                    "/metadata/ownerReferences",
                    json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true}]),
                )]),
            ),
            case(
                "unknown field: no schema, so JSON merge patch (maps merge, lists replaced)",
                pod_schema,
                json!({"kind": "Pod", "spec": {"containers": [], "extra": {"keep": 1, "list": [{"name": "a"}, {"name": "b"}]}}}),
                json!({"spec": {"extra": {"add": 2, "list": [{"name": "c"}]}}}),
                Want::At(vec![("/spec/extra", json!({"keep": 1, "add": 2, "list": [{"name": "c"}]}))]),
            ),
            case("a null body changes nothing", pod_schema, pod(), Value::Null, Want::At(vec![("", pod())])),
            case("an empty patch changes nothing", pod_schema, pod(), json!({}), Want::At(vec![("", pod())])),
            // Deployments and Services.
            case(
                "Deployment spec.selector: x-kubernetes-map-type atomic, yet merged as in kube-apiserver",
                deploy_schema,
                deployment(),
                json!({"spec": {"selector": {"matchLabels": {"tier": "front"}}}}),
                Want::At(vec![("/spec/selector", json!({"matchLabels": {"app": "web", "tier": "front"}}))]),
            ),
            case(
                "Deployment spec.strategy: $retainKeys (strategy retainKeys) drops rollingUpdate",
                deploy_schema,
                deployment(),
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
                Want::At(vec![("/spec/strategy", json!({"type": "Recreate"})), ("/spec/replicas", json!(2))]),
            ),
            case(
                "Deployment: a pod template container changes by name",
                deploy_schema,
                deployment(),
                json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}}),
                Want::At(vec![
                    ("/spec/replicas", json!(3)),
                    ("/spec/template/spec/containers", json!([{"name": "app", "image": "app:2"}])),
                    ("/spec/template/metadata/labels", json!({"app": "web"})),
                ]),
            ),
            case(
                "Service spec.ports: merged by port",
                svc_schema,
                service(),
                json!({"spec": {"ports": [{"port": 443, "targetPort": 9443}]}}),
                Want::At(vec![(
                    "/spec/ports",
                    json!([{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                           {"name": "https", "port": 443, "targetPort": 9443, "protocol": "TCP"}]),
                )]),
            ),
            case(
                "Service spec.ports: a $patch: delete by port",
                svc_schema,
                service(),
                json!({"spec": {"ports": [{"port": 80, "$patch": "delete"}]}}),
                Want::At(vec![(
                    "/spec/ports",
                    json!([{"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"}]),
                )]),
            ),
            case(
                "Service spec.selector: merged (null is how a key goes)",
                svc_schema,
                service(),
                json!({"spec": {"selector": {"app": null, "role": "db"}}}),
                Want::At(vec![("/spec/selector", json!({"role": "db"}))]),
            ),
            case(
                "Scale: the /scale subresource's body",
                kind("autoscaling", "v1", "Scale"),
                json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 2}}),
                json!({"spec": {"replicas": 5}}),
                Want::At(vec![("/spec/replicas", json!(5)), ("/metadata/name", json!("d"))]),
            ),
            // Custom schemas.
            case(
                "patch strategy replace: the object is replaced whole",
                custom(),
                json!({"rep": {"a": "1", "b": "2"}}),
                json!({"rep": {"a": "3"}}),
                Want::At(vec![("/rep", json!({"a": "3"}))]),
            ),
            case(
                "custom merging list: merged by its merge key",
                custom(),
                json!({"items": [{"k": "x", "v": "1"}, {"k": "y", "v": "2"}]}),
                json!({"items": [{"k": "y", "v": "3"}]}),
                Want::At(vec![("/items", json!([{"k": "x", "v": "1"}, {"k": "y", "v": "3"}]))]),
            ),
            case(
                "preserve-unknown-fields subtree: JSON merge patch",
                custom(),
                json!({"free": {"m": {"x": 1}, "l": [{"k": "a", "v": "1"}]}}),
                json!({"free": {"m": {"y": 2}, "l": [{"k": "b"}]}}),
                Want::At(vec![("/free", json!({"m": {"x": 1, "y": 2}, "l": [{"k": "b"}]}))]),
            ),
            // Ordering, as kube-apiserver orders (each checked against its strategicpatch).
            case(
                "order: the patch's relative order wins over the live one",
                pod_schema,
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
                json!({"spec": {"containers": [{"name": "c", "image": "x"}, {"name": "a", "image": "y"}]}}),
                Want::At(vec![(
                    "/spec/containers",
                    json!([{"name": "b"}, {"name": "c", "image": "x"}, {"name": "a", "image": "y"}]),
                )]),
            ),
            case(
                "order: a new element right after a live one the patch names",
                pod_schema,
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
                json!({"spec": {"containers": [{"name": "b", "image": "x"}, {"name": "n", "image": "y"}]}}),
                Want::At(vec![(
                    "/spec/containers",
                    json!([{"name": "a"}, {"name": "b", "image": "x"}, {"name": "n", "image": "y"}, {"name": "c"}]),
                )]),
            ),
            case(
                "order: $setElementOrder naming some elements interleaves with the rest",
                pod_schema,
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]}}),
                json!({"spec": {"$setElementOrder/containers": [{"name": "d"}, {"name": "b"}],
                                "containers": [{"name": "d", "image": "x"}]}}),
                Want::At(vec![(
                    "/spec/containers",
                    json!([{"name": "a"}, {"name": "c"}, {"name": "d", "image": "x"}, {"name": "b"}]),
                )]),
            ),
            case(
                "order: $setElementOrder with a deletion",
                pod_schema,
                json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}}),
                json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
                                "containers": [{"name": "b", "$patch": "delete"}]}}),
                Want::At(vec![("/spec/containers", json!([{"name": "c"}, {"name": "a"}]))]),
            ),
            case(
                "order: $setElementOrder inside a list element (env of a container)",
                pod_schema,
                json!({"spec": {"containers": [{"name": "a", "env": [{"name": "X"}, {"name": "Y"}]}]}}),
                json!({"spec": {"containers": [{"name": "a",
                    "$setElementOrder/env": [{"name": "Y"}, {"name": "Z"}, {"name": "X"}],
                    "env": [{"name": "Z", "value": "z"}]}]}}),
                Want::At(vec![(
                    "/spec/containers/0/env",
                    json!([{"name": "Y"}, {"name": "Z", "value": "z"}, {"name": "X"}]),
                )]),
            ),
            case(
                "order: finalizers by $setElementOrder",
                pod_schema,
                pod(),
                json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
                Want::At(vec![("/metadata/finalizers", json!(["b", "a"]))]),
            ),
            case(
                "absent map: $patch: delete leaves it absent",
                pod_schema,
                json!({"metadata": {"name": "p"}}),
                json!({"metadata": {"labels": {"$patch": "delete"}}}),
                Want::At(vec![("/metadata", json!({"name": "p"}))]),
            ),
            case(
                "absent map: $patch: replace sets it (kube-apiserver drops it: a deliberate difference)",
                pod_schema,
                json!({"metadata": {"name": "p"}}),
                json!({"metadata": {"labels": {"$patch": "replace", "a": "b"}}}),
                Want::At(vec![("/metadata", json!({"name": "p", "labels": {"a": "b"}}))]),
            ),
            case(
                "$retainKeys: a null in the patch need not be listed",
                deploy_schema,
                deployment(),
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null}}}),
                Want::At(vec![("/spec/strategy", json!({"type": "Recreate"}))]),
            ),
            case(
                "a new JSON type replaces the old value",
                pod_schema,
                pod(),
                json!({"metadata": {"labels": "x", "finalizers": {"a": 1}}}),
                Want::At(vec![("/metadata/labels", json!("x")), ("/metadata/finalizers", json!({"a": 1}))]),
            ),
            // Errors.
            case(
                "unknown $patch on a map",
                pod_schema,
                pod(),
                json!({"metadata": {"labels": {"$patch": "frobnicate"}}}),
                Want::BadRequest("unknown patch type: \"frobnicate\""),
            ),
            case(
                "$patch: merge on a map is refused, as by kube-apiserver",
                pod_schema,
                pod(),
                json!({"metadata": {"labels": {"$patch": "merge", "x": "y"}}}),
                Want::BadRequest("unknown patch type: \"merge\""),
            ),
            case(
                "unknown $patch in a list element",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "app", "$patch": "nope"}]}}),
                Want::BadRequest("unknown patch type: \"nope\""),
            ),
            case(
                "$patch: merge in a list element",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"name": "app", "$patch": "merge"}]}}),
                Want::BadRequest("merging lists cannot yet be specified"),
            ),
            case(
                "a list element without its merge key",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"image": "x"}]}}),
                Want::BadRequest("does not contain declared merge key: name"),
            ),
            case(
                "$patch: delete without the merge key",
                pod_schema,
                pod(),
                json!({"spec": {"containers": [{"$patch": "delete"}]}}),
                Want::BadRequest("does not contain declared merge key: name"),
            ),
            case(
                "$retainKeys that is not a list",
                deploy_schema,
                deployment(),
                json!({"spec": {"strategy": {"$retainKeys": "type", "type": "Recreate"}}}),
                Want::BadRequest("retainKeys"),
            ),
            case(
                "a patch field missing from $retainKeys",
                deploy_schema,
                deployment(),
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "RollingUpdate",
                                             "rollingUpdate": {"maxSurge": 2}}}}),
                Want::BadRequest("rollingUpdate"),
            ),
            case(
                "$setElementOrder out of step with the patch list",
                pod_schema,
                pod(),
                json!({"spec": {
                    "$setElementOrder/containers": [{"name": "log"}, {"name": "app"}],
                    "containers": [{"name": "app", "image": "a"}, {"name": "log", "image": "l"}]
                }}),
                Want::BadRequest("doesn't match"),
            ),
            case(
                "$setElementOrder that is not a list",
                pod_schema,
                pod(),
                json!({"spec": {"$setElementOrder/containers": {"name": "app"}}}),
                Want::BadRequest("setElementOrder"),
            ),
            case(
                "a directive prefix without /<list>",
                pod_schema,
                pod(),
                json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
                Want::BadRequest("primitive list"),
            ),
            case(
                "mixed element types in a merging list",
                pod_schema,
                pod(),
                json!({"metadata": {"finalizers": ["c", 1]}}),
                Want::BadRequest("not identical"),
            ),
            case(
                "a list in a merging list of strings is a mixed list",
                pod_schema,
                pod(),
                json!({"metadata": {"finalizers": [["c"]]}}),
                Want::BadRequest("not identical"),
            ),
            case(
                "a list of lists in a merging list is 422",
                pod_schema,
                json!({"kind": "Pod", "metadata": {"name": "p", "finalizers": []}}),
                json!({"metadata": {"finalizers": [["c"]]}}),
                Want::Invalid("lists of lists"),
            ),
        ]
    }

    #[test]
    fn strategic_merge_patch_cases() {
        for c in cases() {
            let got = strategic_merge_patch(&c.original, c.patch.to_string().as_bytes(), c.schema);
            match (c.want, got) {
                (Want::At(checks), Ok(doc)) => {
                    for (pointer, want) in checks {
                        let at = doc.pointer(pointer).cloned().unwrap_or(Value::Null);
                        assert_eq!(at, want, "{}: at {pointer:?} of {doc}", c.name);
                    }
                }
                (Want::BadRequest(text), Err(PatchError::BadRequest(msg)))
                | (Want::Invalid(text), Err(PatchError::Invalid(msg))) => {
                    assert!(msg.contains(text), "{}: {msg:?} lacks {text:?}", c.name)
                }
                (_, got) => panic!("{}: unexpected {got:?}", c.name),
            }
        }
    }

    #[test]
    fn malformed_bodies_are_bad_requests() {
        for body in [&b""[..], b"{\"spec\":", b"not json", b"[]", b"\"spec\"", b"3"] {
            let got = strategic_merge_patch(&pod(), body, kind("", "v1", "Pod"));
            assert!(matches!(got, Err(PatchError::BadRequest(_))), "{}: {got:?}", String::from_utf8_lossy(body));
        }
    }

    /// The worked example in the comment at the top of this file.
    #[test]
    fn worked_example() {
        let original = json!({
            "metadata": {"name": "p", "finalizers": ["a"]},
            "spec": {"containers": [{"name": "x", "image": "x:1", "args": ["--v=1"]},
                                    {"name": "y", "image": "y:1"}, {"name": "z"}]}
        });
        let patch = json!({
            "metadata": {"finalizers": ["b"], "labels": {"team": "t"}},
            "spec": {"containers": [{"name": "new", "image": "new:1"},
                                    {"name": "x", "image": "x:2", "args": ["--v=2"]},
                                    {"name": "z", "$patch": "delete"}]}
        });
        let want = json!({
            "metadata": {"name": "p", "finalizers": ["b", "a"], "labels": {"team": "t"}},
            "spec": {"containers": [{"name": "new", "image": "new:1"},
                                    {"name": "x", "image": "x:2", "args": ["--v=2"]},
                                    {"name": "y", "image": "y:1"}]}
        });
        let pod = kind("", "v1", "Pod");
        assert_eq!(strategic_merge_patch(&original, patch.to_string().as_bytes(), pod), Ok(want));

        let mut ordered = patch;
        ordered["spec"]["$setElementOrder/containers"] = json!([{"name": "x"}, {"name": "y"}, {"name": "new"}]);
        ordered["spec"]["containers"].as_array_mut().unwrap().swap(0, 1);
        let got = strategic_merge_patch(&original, ordered.to_string().as_bytes(), pod).unwrap();
        let names: Vec<&str> =
            got["spec"]["containers"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["x", "y", "new"]);
    }

    /// Runs `patch` over `original` and fails if it takes more than a few seconds: each
    /// shape below is large enough that quadratic merging (a scan per element, a shift of
    /// the map per removed key) would take minutes.
    fn linear(name: &str, original: &Value, patch: &Value, schema: Schema<'static>) -> Value {
        let body = patch.to_string();
        let started = std::time::Instant::now();
        let got = strategic_merge_patch(original, body.as_bytes(), schema).unwrap();
        let took = started.elapsed();
        assert!(took < std::time::Duration::from_secs(5), "{name}: {took:?}");
        got
    }

    const N: usize = 100_000;

    #[test]
    fn large_lists_merge_in_linear_time() {
        let schema = custom();
        let keyed = |range: std::ops::Range<usize>, v: &str| -> Vec<Value> {
            range.map(|i| json!({"k": format!("k{i}"), "v": v})).collect()
        };
        // Half the live elements merged, the other half deleted, N new ones added.
        let original = json!({"items": keyed(0..N, "old")});
        let mut patch_items: Vec<Value> =
            (0..N / 2).map(|i| json!({"k": format!("k{}", 2 * i + 1), "v": "new"})).collect();
        patch_items.extend((0..N / 2).map(|i| json!({"k": format!("k{}", 2 * i), "$patch": "delete"})));
        patch_items.extend(keyed(N..2 * N, "added"));
        let got = linear("merge by key", &original, &json!({"items": patch_items}), schema);
        let items = got["items"].as_array().unwrap();
        assert_eq!(items.len(), N / 2 + N);
        assert_eq!(items[0], json!({"k": "k1", "v": "new"}));
        assert!(items.iter().all(|v| v["v"] != "old"));

        // The same list ordered by $setElementOrder, in reverse.
        let order: Vec<Value> = (0..N).rev().map(|i| json!({"k": format!("k{i}")})).collect();
        let patch = json!({"$setElementOrder/items": order, "items": [{"k": "k0", "v": "first"}]});
        let got = linear("$setElementOrder", &original, &patch, schema);
        let items = got["items"].as_array().unwrap();
        assert_eq!(items.len(), N);
        assert_eq!(items[0]["k"], format!("k{}", N - 1));
        assert_eq!(items[N - 1], json!({"k": "k0", "v": "first"}));
    }

    #[test]
    fn large_sets_merge_in_linear_time() {
        let pod_schema = kind("", "v1", "Pod");
        let names = |range: std::ops::Range<usize>| -> Vec<Value> { range.map(|i| json!(format!("f{i}"))).collect() };
        let original = json!({"metadata": {"name": "p", "finalizers": names(0..N)}});
        let patch = json!({"metadata": {"finalizers": names(N / 2..N + N / 2),
                                        "$deleteFromPrimitiveList/finalizers": names(0..N / 4)}});
        let got = linear("a set union and deletions", &original, &patch, pod_schema);
        let finalizers = got["metadata"]["finalizers"].as_array().unwrap();
        assert_eq!(finalizers.len(), N + N / 2 - N / 4);
    }

    #[test]
    fn removing_many_keys_is_linear_and_keeps_the_order() {
        let data: Map<String, Value> = (0..N).map(|i| (format!("k{i}"), json!("v"))).collect();
        let original = json!({"kind": "ConfigMap", "data": data});
        let removed: Map<String, Value> =
            (0..N).filter(|i| i % 2 == 0).map(|i| (format!("k{i}"), Value::Null)).collect();
        let got = linear("null per key", &original, &json!({"data": removed}), kind("", "v1", "ConfigMap"));
        let keys: Vec<&String> = got["data"].as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), N / 2);
        assert_eq!(keys[..3], [&"k1".to_string(), &"k3".to_string(), &"k5".to_string()]);
        // $retainKeys with as many keys.
        let keep: Vec<Value> = (0..N).filter(|i| i % 3 == 0).map(|i| json!(format!("k{i}"))).collect();
        let got =
            linear("$retainKeys", &json!({"free": data_map(N)}), &json!({"free": {"$retainKeys": keep}}), custom());
        assert_eq!(got["free"].as_object().unwrap().len(), N.div_ceil(3));
    }

    fn data_map(n: usize) -> Value {
        Value::Object((0..n).map(|i| (format!("k{i}"), json!("v"))).collect())
    }
}
