//! Owns the built-in schema definitions and the [`Schema`] view over one node of them.
//!
//! A property's metadata sits on the property, not on the type it references:
//!
//! ```text
//! PodSpec.properties.containers = { type: array, items: {$ref: Container},
//!                                   x-kubernetes-patch-merge-key: name, ... }
//! PodSpec.properties.affinity   = { description: ..., allOf: [{$ref: Affinity}] }
//! ```
//!
//! so a [`Schema`] keeps both: `site` (the property node, where the metadata is) and `node`
//! (the resolved type, where the properties are). Metadata is looked up on the site first,
//! then on the type (a type may itself be `x-kubernetes-map-type: atomic`).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

const BUILTIN: &str = include_str!("../k8s/definitions.json");

/// The built-in definitions, keyed by their OpenAPI name (`io.k8s.api.core.v1.Pod`).
pub struct Schemas {
    /// `components.schemas` of the documents served at `/openapi/v3`.
    defs: Map<String, Value>,
    /// The Kubernetes version the definitions come from.
    pub kubernetes_version: String,
    /// `(group, version, definition name)` by kind, from each definition's
    /// `x-kubernetes-group-version-kind`: every write looks its kind up here, so the
    /// lookup borrows its three strings instead of building a key (a kind has a few
    /// group-versions at most).
    by_kind: HashMap<String, Vec<(String, String, String)>>,
}

impl Schemas {
    /// The definitions compiled into kuorum (parsed once).
    pub fn builtin() -> &'static Schemas {
        static BUILT: OnceLock<Schemas> = OnceLock::new();
        BUILT.get_or_init(|| {
            let mut doc: Map<String, Value> =
                serde_json::from_str(BUILTIN).expect("k8s/definitions.json is valid JSON");
            let defs = match doc.remove("schemas") {
                Some(Value::Object(m)) => m,
                _ => panic!("k8s/definitions.json has no schemas"),
            };
            let kubernetes_version = doc.get("kubernetesVersion").and_then(Value::as_str).unwrap_or("").to_string();
            let mut by_kind: HashMap<String, Vec<(String, String, String)>> = HashMap::new();
            for (name, def) in &defs {
                let gvks = def.get("x-kubernetes-group-version-kind").and_then(Value::as_array);
                for g in gvks.into_iter().flatten() {
                    let field = |f: &str| g.get(f).and_then(Value::as_str).unwrap_or("").to_string();
                    let (group, version) = (field("group"), field("version"));
                    let named = by_kind.entry(field("kind")).or_default();
                    // The first definition naming a kind keeps it, as a scan in order would.
                    if !named.iter().any(|(g, v, _)| *g == group && *v == version) {
                        named.push((group, version, name.clone()));
                    }
                }
            }
            Schemas { defs, kubernetes_version, by_kind }
        })
    }

    /// Every definition by name, as served in `components.schemas`.
    pub fn definitions(&self) -> &Map<String, Value> {
        &self.defs
    }

    /// The definition named `name`.
    pub fn named(&self, name: &str) -> Option<Schema<'_>> {
        self.defs.get_key_value(name).map(|(name, node)| Schema {
            defs: &self.defs,
            node,
            site: None,
            name: Some(name.as_str()),
        })
    }

    /// The definition name of the kind `group/version/kind`, as its
    /// `x-kubernetes-group-version-kind` says.
    pub fn name_of(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        let named = self.by_kind.get(kind)?;
        named.iter().find(|(g, v, _)| g == group && v == version).map(|(_, _, name)| name.as_str())
    }

    /// The schema of the kind `group/version/kind`.
    pub fn kind(&self, group: &str, version: &str, kind: &str) -> Option<Schema<'_>> {
        self.named(self.name_of(group, version, kind)?)
    }

    /// The definition `name` with every `$ref` in it replaced by the definition it names,
    /// recursively, and single-element `allOf`s folded into their node: a schema that
    /// stands alone, as a custom resource's `metadata` does. A reference back into a
    /// definition being inlined becomes a free object.
    pub fn inlined(&self, name: &str) -> Option<Value> {
        let def = self.defs.get(name)?;
        Some(self.inline(def, &mut vec![name.to_string()]))
    }

    fn inline(&self, v: &Value, open: &mut Vec<String>) -> Value {
        let Value::Object(m) = v else {
            return match v {
                Value::Array(a) => Value::Array(a.iter().map(|x| self.inline(x, open)).collect()),
                other => other.clone(),
            };
        };
        if let Some(r) = m.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or(r).to_string();
            let mut out = match self.defs.get(&name) {
                Some(def) if !open.contains(&name) => {
                    open.push(name);
                    let out = self.inline(def, open);
                    open.pop();
                    out
                }
                _ => serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            };
            // What the referring site says (its description) wins over the type's.
            if let Value::Object(o) = &mut out {
                for (k, x) in m.iter().filter(|(k, _)| *k != "$ref") {
                    o.insert(k.clone(), self.inline(x, open));
                }
            }
            return out;
        }
        let mut out = Map::new();
        for (k, x) in m {
            match (k.as_str(), x.as_array().map(Vec::as_slice)) {
                ("allOf", Some([one])) => {
                    if let Value::Object(folded) = self.inline(one, open) {
                        for (fk, fx) in folded {
                            out.entry(fk).or_insert(fx);
                        }
                    }
                }
                _ => {
                    out.insert(k.clone(), self.inline(x, open));
                }
            }
        }
        Value::Object(out)
    }
}

/// What a schema node holds, as patching sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// An object with named properties.
    Struct,
    /// An object whose keys are free (`additionalProperties`).
    Map,
    /// A list.
    List,
    /// A string, number, boolean, or int-or-string.
    Scalar,
    /// Anything (no type, or `x-kubernetes-preserve-unknown-fields` without properties).
    Any,
}

/// One node of a schema, with the property that led to it.
#[derive(Clone, Copy)]
pub struct Schema<'a> {
    defs: &'a Map<String, Value>,
    /// The type, `$ref` and `allOf` resolved.
    node: &'a Value,
    /// The property (or `items` / `additionalProperties`) node that led here.
    site: Option<&'a Value>,
    /// The name of the definition `node` is (the last `$ref` followed), if any.
    name: Option<&'a str>,
}

/// Schema nodes with up to this many keys are searched by comparing keys, larger ones by
/// hash. Nearly every node of the built-in definitions is that small (one to four keys:
/// `type`, `description`, `items`, an extension), and for those comparing a few short
/// strings costs less than hashing the name (SipHash) to probe the map's index. Lookups
/// here run for every field of every write (validation, pruning, managedFields).
const SCAN_UP_TO: usize = 8;

/// The member `key` of the schema node `node` (None if it is not an object or lacks it).
fn field<'v>(node: &'v Value, key: &str) -> Option<&'v Value> {
    let m = node.as_object()?;
    if m.len() <= SCAN_UP_TO {
        m.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        m.get(key)
    }
}

fn empty_defs() -> &'static Map<String, Value> {
    static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
    EMPTY.get_or_init(Map::new)
}

impl<'a> Schema<'a> {
    /// A schema with no `$ref`s to resolve, such as a CRD version's `openAPIV3Schema`.
    pub fn standalone(root: &'a Value) -> Schema<'a> {
        Schema { defs: empty_defs(), node: root, site: None, name: None }
    }

    /// Follows `$ref` and single-element `allOf` to the type a site names.
    fn at(&self, site: &'a Value) -> Schema<'a> {
        let mut node = site;
        let mut name = None;
        for _ in 0..8 {
            if let Some(r) = field(node, "$ref").and_then(Value::as_str) {
                let short = r.rsplit('/').next().unwrap_or(r);
                match self.defs.get_key_value(short) {
                    Some((k, n)) => {
                        node = n;
                        name = Some(k.as_str());
                    }
                    None => break,
                }
            } else if let Some([one]) = field(node, "allOf").and_then(Value::as_array).map(Vec::as_slice) {
                node = one;
            } else {
                break;
            }
        }
        Schema { defs: self.defs, node, site: Some(site), name }
    }

    /// The name of the definition this node is (`io.k8s.api.core.v1.PodSpec`), when it was
    /// reached through a `$ref` or by name.
    pub fn definition_name(&self) -> Option<&'a str> {
        self.name
    }

    /// A keyword of the resolved node itself (`type`, `format`, `oneOf`).
    pub(crate) fn keyword(&self, key: &str) -> Option<&'a Value> {
        field(self.node, key)
    }

    /// The resolved schema node.
    pub fn node(&self) -> &'a Value {
        self.node
    }

    /// An extension or keyword, on the property first, then on its type.
    pub fn ext(&self, key: &str) -> Option<&'a Value> {
        self.site.and_then(|s| field(s, key)).or_else(|| field(self.node, key))
    }

    fn ext_str(&self, key: &str) -> Option<&'a str> {
        self.ext(key).and_then(Value::as_str)
    }

    /// The property `name` of a struct.
    pub fn property(&self, name: &str) -> Option<Schema<'a>> {
        field(field(self.node, "properties")?, name).map(|p| self.at(p))
    }

    /// The names of a struct's properties.
    pub fn property_names(&self) -> impl Iterator<Item = &'a str> {
        field(self.node, "properties").and_then(Value::as_object).into_iter().flat_map(|m| m.keys().map(String::as_str))
    }

    /// The schema of a list's elements.
    pub fn items(&self) -> Option<Schema<'a>> {
        field(self.node, "items").map(|i| self.at(i))
    }

    /// The schema of a map's values.
    pub fn values(&self) -> Option<Schema<'a>> {
        match field(self.node, "additionalProperties")? {
            Value::Bool(_) => None,
            v => Some(self.at(v)),
        }
    }

    /// The schema of the child `key` of an object with this schema: the property, or the
    /// map value schema.
    pub fn child(&self, key: &str) -> Option<Schema<'a>> {
        match self.shape() {
            Shape::Struct => self.property(key).or_else(|| self.values()),
            Shape::Map => self.values(),
            _ => None,
        }
    }

    /// What the node holds.
    pub fn shape(&self) -> Shape {
        let ty = field(self.node, "type").and_then(Value::as_str);
        if self.ext("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) || self.is_scalar_union() {
            return Shape::Scalar;
        }
        match ty {
            Some("array") => Shape::List,
            Some("object") | None if field(self.node, "properties").is_some() => Shape::Struct,
            Some("object") if field(self.node, "additionalProperties").is_some_and(|a| a.is_object()) => Shape::Map,
            Some("object") if self.preserves_unknown_fields() => Shape::Any,
            Some("object") => Shape::Map,
            Some("string" | "integer" | "number" | "boolean") => Shape::Scalar,
            _ => Shape::Any,
        }
    }

    /// `oneOf` scalar types, as IntOrString and Quantity are written.
    fn is_scalar_union(&self) -> bool {
        field(self.node, "oneOf").and_then(Value::as_array).is_some_and(|alts| {
            alts.iter()
                .all(|a| matches!(field(a, "type").and_then(Value::as_str), Some("string" | "integer" | "number")))
        })
    }

    /// `x-kubernetes-patch-strategy`, split: `merge`, `replace`, `retainKeys`.
    pub fn patch_strategies(&self) -> Vec<&'a str> {
        self.ext_str("x-kubernetes-patch-strategy").map(|s| s.split(',').map(str::trim).collect()).unwrap_or_default()
    }

    /// `x-kubernetes-patch-merge-key`.
    pub fn patch_merge_key(&self) -> Option<&'a str> {
        self.ext_str("x-kubernetes-patch-merge-key")
    }

    /// `x-kubernetes-list-type`: `atomic` (the default), `set` or `map`.
    pub fn list_type(&self) -> Option<&'a str> {
        self.ext_str("x-kubernetes-list-type")
    }

    /// `x-kubernetes-list-map-keys`.
    pub fn list_map_keys(&self) -> Vec<&'a str> {
        self.ext("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// `x-kubernetes-map-type`: `granular` (the default) or `atomic`.
    pub fn map_type(&self) -> Option<&'a str> {
        self.ext_str("x-kubernetes-map-type")
    }

    /// Whether fields not in `properties` are kept (`x-kubernetes-preserve-unknown-fields`).
    pub fn preserves_unknown_fields(&self) -> bool {
        self.ext("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(true)
    }

    /// The description, property first.
    pub fn description(&self) -> Option<&'a str> {
        self.ext_str("description")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_finds_members_of_small_and_large_nodes_alike() {
        let small = serde_json::json!({"type": "string", "format": "byte"});
        let large: Value = Value::Object((0..20).map(|i| (format!("p{i}"), Value::from(i))).collect());
        assert_eq!(field(&small, "format"), Some(&Value::from("byte")));
        assert_eq!(field(&small, "form"), None);
        assert!(large.as_object().unwrap().len() > SCAN_UP_TO);
        for i in 0..20 {
            assert_eq!(field(&large, &format!("p{i}")), Some(&Value::from(i)));
        }
        assert_eq!(field(&large, "p20"), None);
        assert_eq!(field(&Value::from("type"), "type"), None);
        assert_eq!(field(&serde_json::json!(["type"]), "type"), None);
    }

    #[test]
    fn kinds_resolve_by_group_version_kind() {
        let s = Schemas::builtin();
        assert_eq!(s.name_of("", "v1", "ConfigMap"), Some("io.k8s.api.core.v1.ConfigMap"));
        assert_eq!(s.name_of("apps", "v1", "Deployment"), Some("io.k8s.api.apps.v1.Deployment"));
        assert_eq!(s.name_of("autoscaling", "v1", "Scale"), Some("io.k8s.api.autoscaling.v1.Scale"));
        assert!(s.name_of("apps", "v1", "ConfigMap").is_none());
        assert_eq!(s.kubernetes_version, "1.37.0");
    }

    #[test]
    fn patch_metadata_is_read_from_the_property() {
        let s = Schemas::builtin();
        let pod = s.kind("", "v1", "Pod").unwrap();
        let spec = pod.property("spec").unwrap();
        assert_eq!(spec.shape(), Shape::Struct);
        let containers = spec.property("containers").unwrap();
        assert_eq!(containers.shape(), Shape::List);
        assert_eq!(containers.patch_strategies(), vec!["merge"]);
        assert_eq!(containers.patch_merge_key(), Some("name"));
        assert_eq!(containers.list_type(), Some("map"));
        assert_eq!(containers.list_map_keys(), vec!["name"]);
        let c = containers.items().unwrap();
        assert_eq!(c.shape(), Shape::Struct);
        let ports = c.property("ports").unwrap();
        assert_eq!(ports.patch_merge_key(), Some("containerPort"));
        assert_eq!(ports.list_map_keys(), vec!["containerPort", "protocol"]);
        assert_eq!(c.property("image").unwrap().shape(), Shape::Scalar);
        let vols = spec.property("volumes").unwrap();
        assert_eq!(vols.patch_strategies(), vec!["merge", "retainKeys"]);
        // A description on the property wins over the type's.
        assert_eq!(
            spec.property("affinity").unwrap().description(),
            Some("If specified, the pod's scheduling constraints")
        );
    }

    #[test]
    fn maps_and_atomic_types() {
        let s = Schemas::builtin();
        let cm = s.kind("", "v1", "ConfigMap").unwrap();
        let data = cm.property("data").unwrap();
        assert_eq!(data.shape(), Shape::Map);
        assert_eq!(data.values().unwrap().shape(), Shape::Scalar);
        let meta = cm.property("metadata").unwrap();
        assert_eq!(meta.property("labels").unwrap().shape(), Shape::Map);
        assert_eq!(meta.property("ownerReferences").unwrap().patch_merge_key(), Some("uid"));
        assert_eq!(meta.property("finalizers").unwrap().list_type(), Some("set"));
        let selector =
            s.kind("apps", "v1", "Deployment").unwrap().property("spec").unwrap().property("selector").unwrap();
        assert_eq!(selector.map_type(), Some("atomic"));
        let replicas =
            s.kind("apps", "v1", "Deployment").unwrap().property("spec").unwrap().property("replicas").unwrap();
        assert_eq!(replicas.shape(), Shape::Scalar);
        let port = s.named("io.k8s.api.core.v1.ServicePort").unwrap().property("targetPort").unwrap();
        assert_eq!(port.shape(), Shape::Scalar);
    }

    #[test]
    fn inlined_definitions_stand_alone() {
        let meta = Schemas::builtin().inlined("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").unwrap();
        assert!(!meta.to_string().contains("$ref"), "every reference resolved");
        assert!(!meta.to_string().contains("allOf"), "single allOfs folded");
        let s = Schema::standalone(&meta);
        assert_eq!(s.property("labels").unwrap().shape(), Shape::Map);
        let owners = s.property("ownerReferences").unwrap();
        assert_eq!(owners.patch_merge_key(), Some("uid"));
        assert_eq!(owners.items().unwrap().property("uid").unwrap().shape(), Shape::Scalar);
        assert_eq!(s.property("creationTimestamp").unwrap().node()["format"], "date-time");
        assert!(s.property("creationTimestamp").unwrap().description().unwrap().starts_with("CreationTimestamp"));
    }

    #[test]
    fn standalone_schemas_need_no_definitions() {
        let root = serde_json::json!({"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                      "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}});
        let s = Schema::standalone(&root);
        assert_eq!(s.property("spec").unwrap().shape(), Shape::Any);
        let items = s.property("items").unwrap();
        assert_eq!((items.list_type(), items.list_map_keys()), (Some("map"), vec!["k"]));
        assert_eq!(items.items().unwrap().shape(), Shape::Struct);
    }
}
