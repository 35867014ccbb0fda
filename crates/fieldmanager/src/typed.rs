//! Walks over JSON values guided by a schema, as structured-merge-diff's `typed` package does:
//! validation of list keys, the field set of a value, the comparison of two values, the merge
//! of an applied configuration into an object, and the removal of a field set from a value.
//!
//! How a node is treated comes from its schema and its value:
//!
//! | schema                                   | JSON object      | JSON array          |
//! |------------------------------------------|------------------|---------------------|
//! | struct / map, `map-type: granular`       | granular map     | leaf                |
//! | struct / map, `map-type: atomic`         | atomic (leaf)    | leaf                |
//! | list, `list-type: map` with keys         | leaf             | keyed list          |
//! | list, `list-type: set`                   | leaf             | set                 |
//! | list, atomic (or no list-type)           | leaf             | atomic (leaf)       |
//! | none / `Any` (preserve-unknown-fields)   | granular map     | atomic (leaf)       |
//!
//! Scalars and `null` are leaves. A map field that is not a declared property of its struct is
//! "undeclared": it is owned as a node of its own (`f:key` is a member even when it has
//! children), as structured-merge-diff does for map keys and unknown fields.

use std::collections::{BTreeMap, BTreeSet};

use kuorum_schema::{Schema, Shape};
use serde_json::{Map, Value};

use crate::path::{path_string, values_equal, Path, PathElement};
use crate::set::Set;

/// A schema node, or none (anything goes: maps granular, lists atomic).
#[derive(Clone, Copy)]
pub(crate) struct Ty<'a> {
    s: Option<Schema<'a>>,
    /// `s`'s shape, read once: it takes several lookups in the schema's JSON, and a walk
    /// asks for it at every node and again for each of the node's fields.
    shape: Shape,
    /// The object's root, where `apiVersion`, `kind` and `metadata` are always known.
    root: bool,
}

/// How one node is walked.
#[derive(Clone)]
enum Node<'a> {
    Leaf,
    Map(Ty<'a>),
    Assoc(Assoc<'a>),
}

#[derive(Clone)]
struct Assoc<'a> {
    items: Ty<'a>,
    /// The list-map keys; empty for a set.
    keys: Vec<&'a str>,
}

impl<'a> Ty<'a> {
    pub(crate) fn of(s: Option<Schema<'a>>) -> Ty<'a> {
        Ty { s, shape: s.map(|s| s.shape()).unwrap_or(Shape::Any), root: false }
    }

    /// The type of a whole object. As kube-apiserver does for custom resources, `apiVersion`
    /// and `kind` are declared strings and `metadata` is ObjectMeta even when the schema (a
    /// CRD's `openAPIV3Schema`) does not say so.
    pub(crate) fn root(s: Schema<'a>) -> Ty<'a> {
        Ty { s: Some(s), shape: s.shape(), root: true }
    }

    fn shape(&self) -> Shape {
        self.shape
    }

    /// The node kind for a (non-null) value.
    fn node(&self, v: &Value) -> Node<'a> {
        let shape = self.shape();
        match v {
            Value::Object(_) => match shape {
                Shape::Struct | Shape::Map if self.s.and_then(|s| s.map_type()) == Some("atomic") => Node::Leaf,
                Shape::Struct | Shape::Map | Shape::Any => Node::Map(*self),
                _ => Node::Leaf,
            },
            Value::Array(_) => match (shape, self.s) {
                (Shape::List, Some(s)) => match s.list_type() {
                    Some("map") => Node::Assoc(Assoc { items: Ty::of(s.items()), keys: s.list_map_keys() }),
                    Some("set") => Node::Assoc(Assoc { items: Ty::of(s.items()), keys: Vec::new() }),
                    _ => Node::Leaf,
                },
                _ => Node::Leaf,
            },
            _ => Node::Leaf,
        }
    }

    /// The node kind for a pair of values: from whichever side is neither absent nor null; a
    /// leaf when both are, or when the two sides disagree on their kind.
    fn node_pair(&self, l: Option<&Value>, r: Option<&Value>) -> Node<'a> {
        fn present(v: Option<&Value>) -> Option<&Value> {
            v.filter(|v| !v.is_null())
        }
        match (present(l), present(r)) {
            (None, None) => Node::Leaf,
            (Some(v), None) | (None, Some(v)) => self.node(v),
            (Some(a), Some(b)) => match (self.node(a), self.node(b)) {
                (Node::Map(t), Node::Map(_)) => Node::Map(t),
                (Node::Assoc(x), Node::Assoc(_)) => Node::Assoc(x),
                _ => Node::Leaf,
            },
        }
    }

    /// The schema of field `key` and whether it is a declared property.
    pub(crate) fn field(&self, key: &str) -> (Ty<'a>, bool) {
        if self.root && matches!(key, "apiVersion" | "kind" | "metadata") {
            let declared = self.s.and_then(|s| s.property(key));
            return match (declared, key) {
                (Some(p), "metadata") if p.shape() != Shape::Struct => (Ty::of(object_meta()), true),
                (None, "metadata") => (Ty::of(object_meta()), true),
                (p, _) => (Ty::of(p), true),
            };
        }
        match self.s {
            Some(s) => match self.shape {
                Shape::Struct => match s.property(key) {
                    Some(p) => (Ty::of(Some(p)), true),
                    None => (Ty::of(s.values()), false),
                },
                Shape::Map => (Ty::of(s.values()), false),
                _ => (Ty::of(None), false),
            },
            None => (Ty::of(None), false),
        }
    }

    /// Whether a field not among the properties is an error (a struct that neither has
    /// `additionalProperties` nor preserves unknown fields).
    fn closed(&self) -> bool {
        self.shape == Shape::Struct && self.s.is_some_and(|s| s.values().is_none() && !s.preserves_unknown_fields())
    }
}

/// The built-in ObjectMeta schema (for roots whose schema does not describe `metadata`).
fn object_meta() -> Option<Schema<'static>> {
    kuorum_schema::Schemas::builtin().named("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
}

/// A validation error at a path, printed `path: message` as structured-merge-diff does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeError {
    path: String,
    message: String,
}

impl TypeError {
    fn new(path: &[PathElement], message: String) -> TypeError {
        TypeError { path: path_string(path), message }
    }
}

/// Joins errors the way structured-merge-diff's `ValidationErrors` prints them.
pub(crate) fn errors_string(errs: &[TypeError]) -> String {
    let one = |e: &TypeError| if e.path.is_empty() { e.message.clone() } else { format!("{}: {}", e.path, e.message) };
    match errs {
        [e] => one(e),
        _ => std::iter::once("errors:".to_string())
            .chain(errs.iter().map(|e| format!("  {}", one(e))))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The default of a list-map key field: the schema's `default`, else `TCP` for the
/// `protocol` of the port lists (kube's OpenAPI has `default: TCP` there, from
/// `+default="TCP"` on ContainerPort and ServicePort; kuorum's definitions drop defaults).
fn key_default(assoc: &Assoc<'_>, key: &str) -> Option<Value> {
    if let Some(d) = assoc.items.s.and_then(|s| s.property(key)).and_then(|p| p.ext("default")) {
        return Some(d.clone());
    }
    let port_list = matches!(assoc.keys.as_slice(), ["containerPort", "protocol"] | ["port", "protocol"]);
    (port_list && key == "protocol").then(|| Value::String("TCP".to_string()))
}

/// The path element of one list element.
fn item_element(assoc: &Assoc<'_>, item: &Value) -> Result<PathElement, String> {
    if assoc.keys.is_empty() {
        return match item {
            Value::Object(_) => Err("associative list without keys has an element that's a map type".to_string()),
            Value::Array(_) => Err("not supported: associative list with lists as elements".to_string()),
            Value::Null => Err("associative list without keys has an element that's an explicit null".to_string()),
            v => Ok(PathElement::Value(v.clone())),
        };
    }
    let m = match item {
        Value::Object(m) => m,
        Value::Null => return Err("associative list with keys may not have a null element".to_string()),
        _ => return Err("associative list with keys may not have non-map elements".to_string()),
    };
    let mut fields = Vec::new();
    for k in &assoc.keys {
        if let Some(v) = m.get(*k) {
            fields.push((k.to_string(), v.clone()));
        } else if let Some(d) = key_default(assoc, k) {
            fields.push((k.to_string(), d));
        }
    }
    if fields.is_empty() {
        let quoted: Vec<String> = assoc.keys.iter().map(|k| Value::String(k.to_string()).to_string()).collect();
        return Err(format!(
            "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
            quoted.join(" ")
        ));
    }
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(PathElement::Key(fields))
}

/// Checks that `v` can be typed: list elements have their keys; with `strict` (an applied
/// configuration), no duplicate keys and no fields a struct does not declare.
pub(crate) fn validate(ty: Ty<'_>, v: &Value, strict: bool) -> Result<(), Vec<TypeError>> {
    let mut errs = Vec::new();
    validate_at(ty, v, strict, &mut Vec::new(), &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

fn validate_at(ty: Ty<'_>, v: &Value, strict: bool, path: &mut Path, errs: &mut Vec<TypeError>) {
    match (ty.node(v), v) {
        (Node::Map(t), Value::Object(m)) => {
            for (k, cv) in m {
                let (ct, declared) = t.field(k);
                path.push(PathElement::Field(k.clone()));
                if strict && !declared && t.closed() {
                    errs.push(TypeError::new(path, "field not declared in schema".to_string()));
                } else {
                    validate_at(ct, cv, strict, path, errs);
                }
                path.pop();
            }
        }
        (Node::Assoc(a), Value::Array(items)) => {
            let mut seen = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let pe = match item_element(&a, item) {
                    Ok(pe) => pe,
                    Err(e) => {
                        errs.push(TypeError::new(path, format!("element {i}: {e}")));
                        return;
                    }
                };
                if !seen.insert(pe.clone()) && strict {
                    errs.push(TypeError::new(path, format!("duplicate entries for key {pe}")));
                }
                path.push(pe);
                validate_at(a.items, item, strict, path, errs);
                path.pop();
            }
        }
        _ => {
            // Atomic lists and maps are leaves for ownership, but what they hold is still typed.
            if let (Some(s), Value::Array(items)) = (ty.s, v) {
                if ty.shape == Shape::List {
                    for (i, item) in items.iter().enumerate() {
                        path.push(PathElement::Index(i));
                        validate_at(Ty::of(s.items()), item, strict, path, errs);
                        path.pop();
                    }
                }
            } else if let (Some(_), Value::Object(m)) = (ty.s, v) {
                if matches!(ty.shape, Shape::Struct | Shape::Map) {
                    for (k, cv) in m {
                        path.push(PathElement::Field(k.clone()));
                        validate_at(ty.field(k).0, cv, strict, path, errs);
                        path.pop();
                    }
                }
            }
        }
    }
}

/// The atomic lists, maps and structs `v` sets, as structured-merge-diff paths
/// (`.spec.containers[0].args`): kube refuses a mutating policy's apply configuration that
/// sets any (`findAtomics`), since it would replace what it does not name. Only declared
/// fields are looked into, and a list only when the schema says it is one.
pub(crate) fn atomics(ty: Ty<'_>, v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    atomics_at(ty, v, &mut String::new(), &mut out);
    out
}

fn atomics_at(ty: Ty<'_>, v: &Value, path: &mut String, out: &mut Vec<String>) {
    let len = path.len();
    match v {
        Value::Object(m) if matches!(ty.shape, Shape::Struct | Shape::Map) => {
            if ty.s.and_then(|s| s.map_type()) == Some("atomic") {
                out.push(path.clone());
            }
            for (k, cv) in m {
                let (ct, declared) = ty.field(k);
                if declared {
                    path.push('.');
                    path.push_str(k);
                    atomics_at(ct, cv, path, out);
                    path.truncate(len);
                }
            }
        }
        Value::Array(items) if ty.shape == Shape::List => {
            let Some(s) = ty.s else { return };
            if !matches!(s.list_type(), Some("map") | Some("set")) {
                out.push(path.clone());
            }
            for (i, item) in items.iter().enumerate() {
                path.push_str(&format!("[{i}]"));
                atomics_at(Ty::of(s.items()), item, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// The fields `v` sets (structured-merge-diff's `ToFieldSet`): every leaf; list elements as
/// nodes of their own; map fields that are null, empty, or undeclared as nodes of their own.
/// An empty keyed list or set owns nothing.
pub(crate) fn field_set(ty: Ty<'_>, v: &Value) -> Set {
    let mut set = Set::new();
    field_set_at(ty, v, &mut Vec::new(), &mut set);
    set
}

fn field_set_at(ty: Ty<'_>, v: &Value, path: &mut Path, set: &mut Set) {
    match (ty.node(v), v) {
        (Node::Map(t), Value::Object(m)) => {
            for (k, cv) in m {
                let (ct, declared) = t.field(k);
                path.push(PathElement::Field(k.clone()));
                field_set_at(ct, cv, path, set);
                let empty = cv.is_null() || cv.as_object().is_some_and(Map::is_empty);
                if empty || !declared {
                    set.insert(path);
                }
                path.pop();
            }
        }
        (Node::Assoc(a), Value::Array(items)) => {
            let pes: Vec<Option<PathElement>> = items.iter().map(|i| item_element(&a, i).ok()).collect();
            let mut count: BTreeMap<&PathElement, usize> = BTreeMap::new();
            for pe in pes.iter().flatten() {
                *count.entry(pe).or_default() += 1;
            }
            for (item, pe) in items.iter().zip(&pes) {
                let Some(pe) = pe else { continue };
                path.push(pe.clone());
                if count[pe] == 1 {
                    field_set_at(a.items, item, path, set);
                }
                // A duplicated key is owned as one node.
                set.insert(path);
                path.pop();
            }
        }
        _ => set.insert(path),
    }
}

/// What changed from `lhs` to `rhs`, by path.
#[derive(Debug, Default, Clone)]
pub(crate) struct Comparison {
    pub(crate) added: Set,
    pub(crate) modified: Set,
    pub(crate) removed: Set,
}

impl Comparison {
    pub(crate) fn exclude(self, ignored: &Set) -> Comparison {
        Comparison {
            added: self.added.into_recursive_difference(ignored),
            modified: self.modified.into_recursive_difference(ignored),
            removed: self.removed.into_recursive_difference(ignored),
        }
    }
}

/// Compares two values (structured-merge-diff's `Compare`): leaves are added, removed, or
/// modified; a map or list node that appears or disappears as a whole is added or removed too.
pub(crate) fn compare(ty: Ty<'_>, lhs: &Value, rhs: &Value) -> Result<Comparison, Vec<TypeError>> {
    let mut cmp = Comparison::default();
    let mut errs = Vec::new();
    compare_at(ty, Some(lhs), Some(rhs), &mut Vec::new(), &mut cmp, &mut errs);
    if errs.is_empty() {
        Ok(cmp)
    } else {
        Err(errs)
    }
}

fn leaf_change(l: Option<&Value>, r: Option<&Value>, path: &[PathElement], cmp: &mut Comparison) {
    match (l, r) {
        (None, Some(_)) => cmp.added.insert(path),
        (Some(_), None) => cmp.removed.insert(path),
        (Some(a), Some(b)) if !values_equal(a, b) => cmp.modified.insert(path),
        _ => {}
    }
}

fn empty_obj(v: Option<&Value>) -> bool {
    v.and_then(Value::as_object).is_none_or(Map::is_empty)
}

fn empty_arr(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_none_or(Vec::is_empty)
}

fn compare_at(
    ty: Ty<'_>,
    l: Option<&Value>,
    r: Option<&Value>,
    path: &mut Path,
    cmp: &mut Comparison,
    errs: &mut Vec<TypeError>,
) {
    let as_leaf = match ty.node_pair(l, r) {
        Node::Leaf => true,
        Node::Map(_) if empty_obj(l) && empty_obj(r) => true,
        Node::Assoc(_) if empty_arr(l) && empty_arr(r) => true,
        Node::Map(t) => {
            let lm = l.and_then(Value::as_object);
            let rm = r.and_then(Value::as_object);
            let mut keys: Vec<&String> = lm.into_iter().flat_map(|m| m.keys()).collect();
            keys.extend(rm.into_iter().flat_map(|m| m.keys()).filter(|k| !lm.is_some_and(|m| m.contains_key(*k))));
            for k in keys {
                path.push(PathElement::Field(k.clone()));
                compare_at(t.field(k).0, lm.and_then(|m| m.get(k)), rm.and_then(|m| m.get(k)), path, cmp, errs);
                path.pop();
            }
            false
        }
        Node::Assoc(a) => {
            compare_lists(&a, l, r, path, cmp, errs);
            false
        }
    };
    if as_leaf {
        leaf_change(l, r, path, cmp);
    } else if l.is_none() {
        cmp.added.insert(path);
    } else if r.is_none() {
        cmp.removed.insert(path);
    }
}

/// Groups a list's elements by path element, in first-seen order; duplicates stay together.
fn index_items<'v>(
    a: &Assoc<'_>,
    list: Option<&'v Value>,
    path: &[PathElement],
    errs: &mut Vec<TypeError>,
) -> Vec<(PathElement, Vec<&'v Value>)> {
    let mut out: Vec<(PathElement, Vec<&'v Value>)> = Vec::new();
    let mut at: BTreeMap<PathElement, usize> = BTreeMap::new();
    for (i, item) in list.and_then(Value::as_array).into_iter().flatten().enumerate() {
        match item_element(a, item) {
            Ok(pe) => match at.get(&pe) {
                Some(&j) => out[j].1.push(item),
                None => {
                    at.insert(pe.clone(), out.len());
                    out.push((pe, vec![item]));
                }
            },
            Err(e) => errs.push(TypeError::new(path, format!("element {i}: {e}"))),
        }
    }
    out
}

fn compare_lists(
    a: &Assoc<'_>,
    l: Option<&Value>,
    r: Option<&Value>,
    path: &mut Path,
    cmp: &mut Comparison,
    errs: &mut Vec<TypeError>,
) {
    let lv = index_items(a, l, path, errs);
    let rv = index_items(a, r, path, errs);
    let lmap: BTreeMap<&PathElement, &Vec<&Value>> = lv.iter().map(|(pe, v)| (pe, v)).collect();
    let rmap: BTreeMap<&PathElement, &Vec<&Value>> = rv.iter().map(|(pe, v)| (pe, v)).collect();
    let mut all: Vec<&PathElement> = lv.iter().map(|(pe, _)| pe).collect();
    all.extend(rv.iter().map(|(pe, _)| pe).filter(|pe| !lmap.contains_key(pe)));
    let none: Vec<&Value> = Vec::new();
    for pe in all {
        let ll = lmap.get(pe).copied().unwrap_or(&none);
        let rl = rmap.get(pe).copied().unwrap_or(&none);
        path.push(pe.clone());
        match (ll.len(), rl.len()) {
            (0..=1, 0..=1) => compare_at(a.items, ll.first().copied(), rl.first().copied(), path, cmp, errs),
            (2.., 2..) => {
                let same = ll.len() == rl.len() && ll.iter().zip(rl.iter()).all(|(x, y)| values_equal(x, y));
                if !same {
                    cmp.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(x) = rl.first() {
                    compare_at(a.items, None, Some(x), path, cmp, errs);
                }
                cmp.removed.insert(path);
            }
            (_, _) => {
                if let Some(x) = ll.first() {
                    compare_at(a.items, Some(x), None, path, cmp, errs);
                }
                cmp.added.insert(path);
            }
        }
        path.pop();
    }
}

/// Merges `rhs` (an applied configuration) into `lhs` (structured-merge-diff's `Merge`):
/// leaves and atomic nodes from `rhs`, granular maps field by field (live fields first, in
/// their order, then new ones), keyed lists and sets element by element in structured-merge-
/// diff's order (elements only in `lhs` keep their place, shared and new ones follow `rhs`).
pub(crate) fn merge(ty: Ty<'_>, lhs: &Value, rhs: &Value) -> Result<Value, Vec<TypeError>> {
    let mut errs = Vec::new();
    let out = merge_at(ty, Some(lhs), Some(rhs), &mut Vec::new(), &mut errs);
    if errs.is_empty() {
        Ok(out.unwrap_or_else(|| Value::Object(Map::new())))
    } else {
        Err(errs)
    }
}

fn merge_at(
    ty: Ty<'_>,
    l: Option<&Value>,
    r: Option<&Value>,
    path: &mut Path,
    errs: &mut Vec<TypeError>,
) -> Option<Value> {
    let keep_rhs = || r.or(l).cloned();
    match ty.node_pair(l, r) {
        Node::Leaf => keep_rhs(),
        Node::Map(_) if empty_obj(l) && empty_obj(r) => keep_rhs(),
        Node::Assoc(_) if empty_arr(l) && empty_arr(r) => keep_rhs(),
        Node::Map(t) => {
            let lm = l.and_then(Value::as_object);
            let rm = r.and_then(Value::as_object);
            let mut out = Map::new();
            let mut keys: Vec<&String> = lm.into_iter().flat_map(|m| m.keys()).collect();
            keys.extend(rm.into_iter().flat_map(|m| m.keys()).filter(|k| !lm.is_some_and(|m| m.contains_key(*k))));
            for k in keys {
                path.push(PathElement::Field(k.clone()));
                if let Some(v) =
                    merge_at(t.field(k).0, lm.and_then(|m| m.get(k)), rm.and_then(|m| m.get(k)), path, errs)
                {
                    out.insert(k.clone(), v);
                }
                path.pop();
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        Node::Assoc(a) => merge_lists(&a, l, r, path, errs),
    }
}

/// Indexes one side of a list merge; `allow_duplicates` marks a duplicated element with null
/// (it is then replaced by the applied one, or kept as is when not applied).
fn index_for_merge(
    a: &Assoc<'_>,
    list: Option<&Value>,
    allow_duplicates: bool,
    path: &[PathElement],
    errs: &mut Vec<TypeError>,
) -> (Vec<PathElement>, BTreeMap<PathElement, Value>) {
    let mut pes = Vec::new();
    let mut observed: BTreeMap<PathElement, Value> = BTreeMap::new();
    for (i, item) in list.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let pe = match item_element(a, item) {
            Ok(pe) => pe,
            Err(e) => {
                errs.push(TypeError::new(path, format!("element {i}: {e}")));
                continue;
            }
        };
        if observed.contains_key(&pe) {
            if !allow_duplicates {
                errs.push(TypeError::new(path, format!("duplicate entries for key {pe}")));
                continue;
            }
            observed.insert(pe.clone(), Value::Null);
        } else {
            observed.insert(pe.clone(), item.clone());
        }
        pes.push(pe);
    }
    (pes, observed)
}

fn merge_lists(
    a: &Assoc<'_>,
    l: Option<&Value>,
    r: Option<&Value>,
    path: &mut Path,
    errs: &mut Vec<TypeError>,
) -> Option<Value> {
    let n = errs.len();
    let (rpes, robs) = index_for_merge(a, r, false, path, errs);
    let (lpes, lobs) = index_for_merge(a, l, true, path, errs);
    if errs.len() > n {
        return None;
    }
    let litems: Vec<&Value> = l.and_then(Value::as_array).map(|v| v.iter().collect()).unwrap_or_default();
    let mut shared = rpes.iter().filter(|pe| lobs.contains_key(pe));
    let mut next_shared = shared.next();
    let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
    let mut out = Vec::new();
    let mut item = |pe: &PathElement, lc: Option<&Value>, rc: Option<&Value>, errs: &mut Vec<TypeError>| {
        path.push(pe.clone());
        let v = merge_at(a.items, lc, rc, path, errs);
        path.pop();
        v
    };
    let (mut li, mut ri) = (0, 0);
    while li < lpes.len() || ri < rpes.len() {
        if li < lpes.len() && ri < rpes.len() {
            let pe = &lpes[li];
            if *pe == rpes[ri] {
                merged_rhs.insert(pe);
                out.extend(item(pe, lobs.get(pe), robs.get(pe), errs));
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if robs.contains_key(pe) && next_shared.is_some_and(|s| s != pe) {
                // Shared, but applied later on: it comes in the applied order.
                li += 1;
                continue;
            }
        }
        if li < lpes.len() {
            let pe = &lpes[li];
            if !robs.contains_key(pe) {
                out.extend(item(pe, litems.get(li).copied(), None, errs));
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if ri < rpes.len() {
            let pe = &rpes[ri];
            merged_rhs.insert(pe);
            out.extend(item(pe, lobs.get(pe), robs.get(pe), errs));
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    (!out.is_empty()).then_some(Value::Array(out))
}

/// `v` without the members of `remove` and what is under them (structured-merge-diff's
/// `RemoveItems`). `None` when nothing is left of a map or list that was walked into.
pub(crate) fn remove_items(ty: Ty<'_>, v: &Value, remove: &Set) -> Value {
    remove_at(ty, v, remove).unwrap_or_else(|| Value::Object(Map::new()))
}

fn remove_at(ty: Ty<'_>, v: &Value, remove: &Set) -> Option<Value> {
    match (ty.node(v), v) {
        (Node::Map(t), Value::Object(m)) => {
            let mut out = Map::new();
            for (k, cv) in m {
                let pe = PathElement::Field(k.clone());
                if remove.has_member(&pe) {
                    continue;
                }
                let kept = match remove.child(&pe) {
                    Some(sub) => remove_at(t.field(k).0, cv, sub).unwrap_or(Value::Null),
                    None => cv.clone(),
                };
                out.insert(k.clone(), kept);
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Node::Assoc(a), Value::Array(items)) => {
            let mut out = Vec::new();
            for item in items {
                let Ok(pe) = item_element(&a, item) else {
                    out.push(item.clone());
                    continue;
                };
                if remove.has_member(&pe) {
                    continue;
                }
                out.push(match remove.child(&pe) {
                    Some(sub) => remove_at(a.items, item, sub).unwrap_or(Value::Null),
                    None => item.clone(),
                });
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        (Node::Leaf, Value::Object(_) | Value::Array(_)) => None,
        _ => Some(v.clone()),
    }
}

/// `s` with every declared struct field that has members under it made a member too
/// (structured-merge-diff's `EnsureNamedFieldsAreMembers`), so that removing it removes the
/// whole field.
pub(crate) fn ensure_named_fields_are_members(ty: Ty<'_>, s: &Set) -> Set {
    let mut members: BTreeSet<PathElement> = s.members().cloned().collect();
    let mut children = BTreeMap::new();
    for (pe, c) in s.children() {
        let child_ty = match pe {
            PathElement::Field(name) => {
                let (ct, declared) = ty.field(name);
                if declared {
                    members.insert(pe.clone());
                }
                ct
            }
            PathElement::Key(_) if ty.shape() == Shape::List => Ty::of(ty.s.and_then(|s| s.items())),
            // Below a set value or an index nothing is named.
            _ => Ty::of(None),
        };
        children.insert(pe.clone(), ensure_named_fields_are_members(child_ty, c));
    }
    Set::from_parts(members, children)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Ty<'static> {
        Ty::root(kuorum_schema::Schemas::builtin().kind("", "v1", "Pod").unwrap())
    }

    fn paths(s: &Set) -> Vec<String> {
        s.paths().iter().map(|p| path_string(p)).collect()
    }

    #[test]
    fn atomic_values_are_found_by_path() {
        let v = json!({"metadata": {"labels": {"a": "b"}, "finalizers": ["x"]}, "spec": {
            "containers": [{"name": "c", "args": ["--x"], "env": [{"name": "E", "value": "1"}]}],
            "nodeSelector": {"k": "v"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}});
        assert_eq!(
            atomics(pod(), &v),
            [
                ".spec.containers[0].args",
                ".spec.nodeSelector",
                ".spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                ".spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            ]
        );
    }

    #[test]
    fn list_merge_order_follows_structured_merge_diff() {
        let containers = |names: &[&str]| json!({"spec": {"containers": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}});
        let cases: [(&[&str], &[&str], &[&str]); 5] = [
            (&["a", "b", "c"], &["c", "d"], &["a", "b", "c", "d"]),
            (&["a", "b", "c"], &["c", "a"], &["b", "c", "a"]),
            (&["a", "b"], &["b", "a"], &["b", "a"]),
            (&["a"], &["b"], &["a", "b"]),
            (&["x", "a"], &["a", "y"], &["x", "a", "y"]),
        ];
        for (l, r, want) in cases {
            let m = merge(pod(), &containers(l), &containers(r)).unwrap();
            assert_eq!(m, containers(want), "{l:?} + {r:?}");
        }
    }

    #[test]
    fn compare_marks_new_nodes_and_changed_leaves() {
        let l = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": "i1"}]}});
        let r = json!({"metadata": {"labels": {"a": "2"}, "annotations": {"x": "y"}},
                       "spec": {"containers": [{"name": "c", "image": "i1"}, {"name": "d", "image": "i2"}]}});
        let c = compare(pod(), &l, &r).unwrap();
        assert_eq!(paths(&c.modified), [".metadata.labels.a"]);
        assert_eq!(
            paths(&c.added),
            [
                ".metadata.annotations",
                ".metadata.annotations.x",
                r#".spec.containers[name="d"]"#,
                r#".spec.containers[name="d"].image"#,
                r#".spec.containers[name="d"].name"#
            ]
        );
        assert!(c.removed.is_empty());
    }

    #[test]
    fn remove_and_ensure_named() {
        let v = json!({"spec": {"hostname": "h", "containers": [{"name": "c", "image": "i"}, {"name": "d"}]}});
        let mut s = Set::new();
        s.insert(&[PathElement::Field("spec".into()), PathElement::Field("hostname".into())]);
        let key = PathElement::Key(vec![("name".into(), json!("d"))]);
        s.insert(&[PathElement::Field("spec".into()), PathElement::Field("containers".into()), key]);
        assert_eq!(remove_items(pod(), &v, &s), json!({"spec": {"containers": [{"name": "c", "image": "i"}]}}));
        let e = ensure_named_fields_are_members(pod(), &s);
        assert_eq!(paths(&e), [".spec", ".spec.containers", ".spec.hostname", r#".spec.containers[name="d"]"#]);
    }

    #[test]
    fn validation_messages() {
        let v = json!({"spec": {"containers": [{"image": "i"}]}});
        let e = validate(pod(), &v, true).unwrap_err();
        assert_eq!(
            errors_string(&e),
            r#".spec.containers: element 0: associative list with keys has an element that omits all key fields ["name"] (and doesn't have default values for any key fields)"#
        );
        let v = json!({"spec": {"containers": [{"name": "c"}, {"name": "c"}], "bogus": 1}});
        let e = validate(pod(), &v, true).unwrap_err();
        assert_eq!(
            errors_string(&e),
            "errors:\n  .spec.containers: duplicate entries for key [name=\"c\"]\n  .spec.bogus: field not declared in schema"
        );
        assert!(validate(pod(), &json!({"spec": {"containers": [{"name": "c"}, {"name": "c"}]}}), false).is_ok());
    }
}
