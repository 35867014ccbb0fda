//! Field sets: a tree of path elements in which any node may be a member, and their FieldsV1
//! encoding.
//!
//! The algebra is structured-merge-diff's `fieldpath.Set`: `difference` and `intersection`
//! work member by member (removing a parent does not remove its children), while
//! `recursive_difference` drops whole subtrees. Children are never left empty.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::path::{Path, PathElement};

/// A set of field paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Set {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, Set>,
}

impl Set {
    pub(crate) fn new() -> Set {
        Set::default()
    }

    /// Adds `path` (not its parents). The empty path (the whole object) is never owned.
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        // Path elements are cloned only when they are new here: a walk over an object
        // inserts each node's path, and the parents are mostly there already.
        match path {
            [] => {}
            [pe] => {
                if !self.members.contains(pe) {
                    self.members.insert(pe.clone());
                }
            }
            [pe, rest @ ..] => match self.children.get_mut(pe) {
                Some(child) => child.insert(rest),
                None => {
                    let mut child = Set::new();
                    child.insert(rest);
                    self.children.insert(pe.clone(), child);
                }
            },
        }
    }

    /// Whether `path` is a member.
    #[cfg(test)]
    pub(crate) fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [pe] => self.members.contains(pe),
            [pe, rest @ ..] => self.children.get(pe).is_some_and(|c| c.has(rest)),
        }
    }

    pub(crate) fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The paths under `pe`, without it.
    pub(crate) fn child(&self, pe: &PathElement) -> Option<&Set> {
        self.children.get(pe)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(Set::is_empty)
    }

    pub(crate) fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, c) in &other.children {
            match out.children.get_mut(pe) {
                Some(mine) => *mine = mine.union(c),
                None => {
                    out.children.insert(pe.clone(), c.clone());
                }
            }
        }
        out
    }

    pub(crate) fn intersection(&self, other: &Set) -> Set {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| {
                let i = c.intersection(other.children.get(pe)?);
                (!i.is_empty()).then(|| (pe.clone(), i))
            })
            .collect();
        Set { members, children }
    }

    /// Members of `self` not members of `other`; a parent in `other` does not remove children.
    pub(crate) fn difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| match other.children.get(pe) {
                Some(o) => {
                    let d = c.difference(o);
                    (!d.is_empty()).then(|| (pe.clone(), d))
                }
                None => Some((pe.clone(), c.clone())),
            })
            .collect();
        Set { members, children }
    }

    /// Like `difference`, but a member of `other` also removes everything under it.
    pub(crate) fn recursive_difference(&self, other: &Set) -> Set {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !other.members.contains(pe))
            .filter_map(|(pe, c)| match other.children.get(pe) {
                Some(o) => {
                    let d = c.recursive_difference(o);
                    (!d.is_empty()).then(|| (pe.clone(), d))
                }
                None => Some((pe.clone(), c.clone())),
            })
            .collect();
        Set { members, children }
    }

    // The `into_*` forms below take `self` and give what the borrowing forms give, at the
    // cost of `other` instead of a copy of `self`: the update path folds a create's whole
    // field set through a union and two differences with small sets (the ignored fields,
    // the stripped metadata), and copying it each time was a third of that path's CPU.

    /// `self.union(&other)`, both taken.
    pub(crate) fn into_union(mut self, mut other: Set) -> Set {
        if self.is_empty() {
            return other;
        }
        self.members.append(&mut other.members);
        for (pe, c) in other.children {
            let merged = match self.children.remove(&pe) {
                Some(mine) => mine.into_union(c),
                None => c,
            };
            self.children.insert(pe, merged);
        }
        self
    }

    /// `self.difference(other)`, `self` taken.
    pub(crate) fn into_difference(self, other: &Set) -> Set {
        self.remove_all(other, false)
    }

    /// `self.recursive_difference(other)`, `self` taken.
    pub(crate) fn into_recursive_difference(self, other: &Set) -> Set {
        self.remove_all(other, true)
    }

    /// Removes `other`'s members, and with `subtrees` everything under them too.
    fn remove_all(mut self, other: &Set, subtrees: bool) -> Set {
        for pe in &other.members {
            self.members.remove(pe);
            if subtrees {
                self.children.remove(pe);
            }
        }
        for (pe, o) in &other.children {
            if let Some(c) = self.children.remove(pe) {
                let d = c.remove_all(o, subtrees);
                if !d.is_empty() {
                    self.children.insert(pe.clone(), d);
                }
            }
        }
        self
    }

    /// Every member path, depth first: a node's members, then its children's subtrees.
    pub(crate) fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for pe in &self.members {
            let mut p = prefix.clone();
            p.push(pe.clone());
            out.push(p);
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    pub(crate) fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    pub(crate) fn children(&self) -> impl Iterator<Item = (&PathElement, &Set)> {
        self.children.iter()
    }

    pub(crate) fn from_parts(members: BTreeSet<PathElement>, children: BTreeMap<PathElement, Set>) -> Set {
        let children = children.into_iter().filter(|(_, c)| !c.is_empty()).collect();
        Set { members, children }
    }

    /// The FieldsV1 object: one key per element (`f:`, `k:`, `v:`, `i:`), `{}` for a member
    /// with nothing under it, and `".": {}` first in the object of a member that also has
    /// members under it.
    pub(crate) fn to_fields_v1(&self) -> Value {
        Value::Object(self.fields_v1_contents(false))
    }

    fn fields_v1_contents(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !self.is_empty() {
            out.insert(".".to_string(), Value::Object(Map::new()));
        }
        let mut keys: BTreeSet<&PathElement> = self.members.iter().collect();
        keys.extend(self.children.iter().filter(|(_, c)| !c.is_empty()).map(|(pe, _)| pe));
        for pe in keys {
            let member = self.members.contains(pe);
            let inner = match self.children.get(pe).filter(|c| !c.is_empty()) {
                Some(c) => c.fields_v1_contents(member),
                None => Map::new(),
            };
            out.insert(pe.to_fields_key(), Value::Object(inner));
        }
        out
    }

    /// Reads a FieldsV1 object.
    pub(crate) fn from_fields_v1(v: &Value) -> Result<Set, String> {
        match v {
            Value::Object(m) => Ok(Set::read_v1(m)?.0),
            _ => Err("FieldsV1 must be a JSON object".to_string()),
        }
    }

    /// The set under one FieldsV1 object, and whether its node is itself a member (`"."`, or
    /// nothing under it).
    fn read_v1(m: &Map<String, Value>) -> Result<(Set, bool), String> {
        let mut set = Set::new();
        let mut is_member = false;
        let mut any_child = false;
        for (key, v) in m {
            if key == "." {
                is_member = true;
                continue;
            }
            let Some(pe) = PathElement::from_fields_key(key)? else { continue };
            let Value::Object(inner) = v else {
                return Err(format!("FieldsV1 value of {key:?} must be an object"));
            };
            let (grand, child_member) = Set::read_v1(inner)?;
            if child_member {
                set.members.insert(pe.clone());
                any_child = true;
            }
            if !grand.is_empty() {
                set.children.insert(pe, grand);
                any_child = true;
            }
        }
        if !any_child {
            is_member = true;
        }
        Ok((set, is_member))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    fn set(paths: &[&[&str]]) -> Set {
        let mut s = Set::new();
        for p in paths {
            s.insert(&p.iter().map(|n| f(n)).collect::<Vec<_>>());
        }
        s
    }

    #[test]
    fn algebra() {
        let a = set(&[&["a"], &["a", "b"], &["a", "c"], &["d"]]);
        let b = set(&[&["a"], &["a", "b"]]);
        assert_eq!(a.difference(&b), set(&[&["a", "c"], &["d"]]));
        assert_eq!(a.recursive_difference(&set(&[&["a"]])), set(&[&["d"]]));
        assert_eq!(a.intersection(&set(&[&["a", "c"], &["x"]])), set(&[&["a", "c"]]));
        assert_eq!(b.union(&set(&[&["d"]])), set(&[&["a"], &["a", "b"], &["d"]]));
        assert!(a.difference(&a).is_empty());
        assert!(a.has(&[f("a"), f("c")]) && !a.has(&[f("a"), f("x")]));
        let shown: Vec<String> = a.paths().iter().map(|p| crate::path::path_string(p)).collect();
        assert_eq!(shown, [".a", ".d", ".a.b", ".a.c"]);
    }

    /// Sets drawn from a small tree of names, so that pairs overlap at every depth.
    fn random_set(seed: &mut u64) -> Set {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let names = ["a", "b", "c"];
        let mut s = Set::new();
        for _ in 0..(next() % 8) {
            let depth = 1 + (next() % 3) as usize;
            let path: Vec<PathElement> = (0..depth).map(|_| f(names[(next() % 3) as usize])).collect();
            s.insert(&path);
        }
        s
    }

    #[test]
    fn taking_forms_give_what_borrowing_forms_give() {
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            let (a, b) = (random_set(&mut seed), random_set(&mut seed));
            assert_eq!(a.clone().into_union(b.clone()), a.union(&b), "{a:?} ∪ {b:?}");
            assert_eq!(a.clone().into_difference(&b), a.difference(&b), "{a:?} - {b:?}");
            assert_eq!(a.clone().into_recursive_difference(&b), a.recursive_difference(&b), "{a:?} -r {b:?}");
        }
    }

    #[test]
    fn fields_v1_round_trip() {
        let v = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}, "f:replicas": {}}
        });
        let s = Set::from_fields_v1(&v).unwrap();
        assert!(s.has(&[f("metadata"), f("labels")]));
        assert!(!s.has(&[f("metadata")]));
        assert!(s.has(&[f("spec"), f("replicas")]));
        assert_eq!(s.to_fields_v1(), v);
        assert_eq!(serde_json::to_string(&s.to_fields_v1()).unwrap(), serde_json::to_string(&v).unwrap());
        assert!(Set::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(Set::from_fields_v1(&json!({})).unwrap().is_empty());
    }
}
