//! Owns the `/openapi/v3` documents: the index and one OpenAPI 3.0 document per
//! group-version, built from the registry and the built-in definitions.
//!
//! The shapes are kube-apiserver's (kube-openapi `handler3`):
//!
//! ```text
//! GET /openapi/v3            {"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=<HASH>"}, ...}}
//! GET /openapi/v3/api/v1     {"openapi": "3.0.0", "info": {...}, "paths": {...}, "components": {"schemas": {...}}}
//! ```
//!
//! A group-version document has, per resource, the collection path (list, create,
//! deletecollection), the object path (read, replace, patch, delete), the all-namespaces
//! list of a namespaced resource and one path per subresource, each operation with its
//! `operationId`, `x-kubernetes-action` and `x-kubernetes-group-version-kind`; and the
//! definitions those reference, transitively, as `components.schemas`. What clients rely
//! on:
//!
//! - kubectl (`create -f`, `apply`) allows `fieldValidation` for a kind when the first PATCH
//!   operation carrying that kind's `x-kubernetes-group-version-kind` lists a query
//!   parameter `fieldValidation` — so every PATCH operation lists it;
//! - `kubectl explain` finds the kind from the GVK of the resource paths' operations, then
//!   the component schema whose `x-kubernetes-group-version-kind` list contains it.
//!
//! The documents for the built-in resources are built once ([`OpenApiV3::builtin`]).
//! Custom resources are served by [`OpenApiV3::with`] those documents and one
//! [`custom_group_version_document`] per group-version of custom resources: their
//! [`Resource`]s, and a [`Definitions`] that layers their kinds' schemas
//! ([`crate::custom::definitions`]) over the built-in ones. Documents are shared, so only
//! the new ones are built.
//!
//! The paths of a group-version ([`group_version_paths`]) are also what the one
//! `/openapi/v2` document ([`crate::openapi_v2`]) is converted from.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use kuorum_api::registry::{self, ResourceDef};
use serde_json::{json, Map, Value};

use crate::Schemas;

/// The OpenAPI version of the documents.
pub const OPENAPI_VERSION: &str = "3.0.0";

/// The path of the index; group-version documents are served below it.
pub const INDEX_PATH: &str = "/openapi/v3";

/// How a `$ref` names a definition in these documents.
pub const SCHEMA_PREFIX: &str = "#/components/schemas/";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";

/// The request body types a PATCH operation declares.
pub const PATCH_CONTENT_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

/// The PATCH body types of a custom resource (or an aggregated one): no strategic merge
/// patch, which is what tells kubectl's client-side apply to send a merge patch.
pub const CUSTOM_PATCH_CONTENT_TYPES: &[&str] =
    &["application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json"];

/// A group, version and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gvk<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
}

impl Gvk<'_> {
    /// The `x-kubernetes-group-version-kind` object of an operation.
    fn to_value(self) -> Value {
        json!({"group": self.group, "kind": self.kind, "version": self.version})
    }
}

/// A subresource as the documents describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subresource<'a> {
    /// The path segment after the object name: `status`, `scale`.
    pub name: &'a str,
    /// The kind it reads and writes (the parent's for `status`, `autoscaling/v1 Scale`
    /// for `scale`).
    pub gvk: Gvk<'a>,
    /// Among `get`, `update`, `patch`.
    pub verbs: &'a [&'a str],
}

/// A resource as the documents describe it: what discovery says about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub list_kind: &'a str,
    /// The plural name in URLs.
    pub plural: &'a str,
    pub namespaced: bool,
    /// Discovery's verbs: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`.
    pub verbs: &'a [&'a str],
    pub subresources: Vec<Subresource<'a>>,
    /// The body types its PATCH operations declare.
    pub patch_types: &'static [&'static str],
}

impl Resource<'static> {
    /// A resource of the registry (built in, or a custom resource's entry).
    pub fn builtin(def: &'static ResourceDef) -> Self {
        let subresources = def
            .subresources
            .iter()
            .map(|s| {
                let (group, version, kind) = s.response.unwrap_or((def.group, def.version, def.kind));
                Subresource { name: s.name, gvk: Gvk { group, version, kind }, verbs: s.verbs }
            })
            .collect();
        Resource {
            group: def.group,
            version: def.version,
            kind: def.kind,
            list_kind: def.list_kind,
            plural: def.plural,
            namespaced: def.namespaced(),
            verbs: def.verbs,
            subresources,
            patch_types: PATCH_CONTENT_TYPES,
        }
    }

    /// A custom resource's: no strategic merge patch.
    pub fn custom(def: &'static ResourceDef) -> Self {
        Resource { patch_types: CUSTOM_PATCH_CONTENT_TYPES, ..Resource::builtin(def) }
    }
}

impl Resource<'_> {
    fn gvk(&self) -> Gvk<'_> {
        Gvk { group: self.group, version: self.version, kind: self.kind }
    }

    fn can(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }
}

/// Where component schemas come from: layers of definitions keyed by their OpenAPI name,
/// searched in order (a custom resource's schemas first, then the built-in ones its
/// `$ref`s reach, such as `ObjectMeta`).
#[derive(Clone)]
pub struct Definitions<'a> {
    layers: Vec<&'a Map<String, Value>>,
}

impl Definitions<'static> {
    /// The built-in definitions alone.
    pub fn builtin() -> Self {
        Definitions { layers: vec![Schemas::builtin().definitions()] }
    }
}

impl<'a> Definitions<'a> {
    /// These definitions with `extra` searched first.
    pub fn with(&self, extra: &'a Map<String, Value>) -> Definitions<'a> {
        let mut layers = vec![extra];
        layers.extend(self.layers.iter().copied());
        Definitions { layers }
    }

    /// The definition named `name`.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.layers.iter().find_map(|l| l.get(name))
    }

    /// The name of the definition whose `x-kubernetes-group-version-kind` lists `gvk`.
    pub fn name_of(&self, gvk: Gvk<'_>) -> Option<&'a str> {
        self.layers
            .iter()
            .find_map(|layer| layer.iter().find_map(|(name, def)| lists_gvk(def, gvk).then_some(name.as_str())))
    }
}

fn lists_gvk(def: &Value, gvk: Gvk<'_>) -> bool {
    let Some(list) = def.get("x-kubernetes-group-version-kind").and_then(Value::as_array) else {
        return false;
    };
    list.iter().any(|g| {
        g.get("group").and_then(Value::as_str) == Some(gvk.group)
            && g.get("version").and_then(Value::as_str) == Some(gvk.version)
            && g.get("kind").and_then(Value::as_str) == Some(gvk.kind)
    })
}

/// The index key and URL path of a group-version: `api/v1`, `apis/apps/v1`.
pub fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The hash clients see in `serverRelativeURL` and the `ETag`: FNV-1a (128 bits) of the
/// bytes, in upper-case hex.
pub fn content_hash(bytes: &[u8]) -> String {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let h = bytes.iter().fold(OFFSET, |h, &b| (h ^ u128::from(b)).wrapping_mul(PRIME));
    format!("{h:032X}")
}

/// One served document.
#[derive(Debug, Clone)]
pub struct Document {
    /// The JSON bytes as served.
    pub json: Vec<u8>,
    /// [`content_hash`] of `json`.
    pub hash: String,
}

impl Document {
    /// `json` as served, with its hash.
    pub fn new(json: Vec<u8>) -> Document {
        let hash = content_hash(&json);
        Document { json, hash }
    }
}

impl AsRef<[u8]> for Document {
    fn as_ref(&self) -> &[u8] {
        &self.json
    }
}

/// A set of served documents: the index and one document per group-version.
#[derive(Debug, Clone)]
pub struct OpenApiV3 {
    index: Arc<Document>,
    /// Keyed by [`group_version_path`].
    docs: BTreeMap<String, Arc<Document>>,
}

fn document_of(doc: &Value) -> Arc<Document> {
    Arc::new(Document::new(serde_json::to_vec(doc).expect("a JSON value serializes")))
}

impl OpenApiV3 {
    /// Serves `docs`, each keyed by its [`group_version_path`].
    pub fn new(docs: impl IntoIterator<Item = (String, Value)>) -> OpenApiV3 {
        OpenApiV3::of(docs.into_iter().map(|(path, doc)| (path, document_of(&doc))).collect())
    }

    fn of(docs: BTreeMap<String, Arc<Document>>) -> OpenApiV3 {
        let mut paths = Map::new();
        for (path, doc) in &docs {
            paths.insert(path.clone(), json!({"serverRelativeURL": server_relative_url(path, &doc.hash)}));
        }
        OpenApiV3 { index: document_of(&json!({"paths": paths})), docs }
    }

    /// These documents and `extra` (which replace any at the same path), sharing the ones
    /// kept.
    pub fn with(&self, extra: impl IntoIterator<Item = (String, Value)>) -> OpenApiV3 {
        let mut docs = self.docs.clone();
        docs.extend(extra.into_iter().map(|(path, doc)| (path, document_of(&doc))));
        OpenApiV3::of(docs)
    }

    /// These documents and `extra`, documents as served by someone else (extension API
    /// servers), which replace any at the same path; all shared, none copied.
    pub fn with_served(&self, extra: impl IntoIterator<Item = (String, Arc<Document>)>) -> OpenApiV3 {
        let mut docs = self.docs.clone();
        docs.extend(extra);
        OpenApiV3::of(docs)
    }

    /// The documents of the built-in resources, built once.
    pub fn builtin() -> &'static OpenApiV3 {
        static BUILT: OnceLock<OpenApiV3> = OnceLock::new();
        BUILT.get_or_init(|| OpenApiV3::new(builtin_documents()))
    }

    /// The index, `GET /openapi/v3`.
    pub fn index(&self) -> &Arc<Document> {
        &self.index
    }

    /// The document of `path` (`api/v1`, `apis/apps/v1`).
    pub fn document(&self, path: &str) -> Option<&Arc<Document>> {
        self.docs.get(path)
    }

    /// The group-version paths served, sorted.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.docs.keys().map(String::as_str)
    }

    /// Where the document of `path` is served, hash included.
    pub fn url_of(&self, path: &str) -> Option<String> {
        self.docs.get(path).map(|d| server_relative_url(path, &d.hash))
    }
}

/// `/openapi/v3/<path>?hash=<hash>`, as the index lists it.
pub fn server_relative_url(path: &str, hash: &str) -> String {
    format!("{INDEX_PATH}/{path}?hash={hash}")
}

/// The group-versions of the registry, in registry order.
pub fn builtin_group_versions() -> Vec<(&'static str, &'static str)> {
    let mut gvs: Vec<(&'static str, &'static str)> = Vec::new();
    for r in registry::resources() {
        if !gvs.contains(&(r.group, r.version)) {
            gvs.push((r.group, r.version));
        }
    }
    gvs
}

/// The resources of the registry in one group-version.
pub fn builtin_resources(group: &str, version: &str) -> Vec<Resource<'static>> {
    registry::resources_in(group, version).map(Resource::builtin).collect()
}

/// One document per group-version of the registry, keyed by [`group_version_path`].
pub fn builtin_documents() -> Vec<(String, Value)> {
    let defs = Definitions::builtin();
    builtin_group_versions()
        .into_iter()
        .map(|(group, version)| {
            let resources = builtin_resources(group, version);
            (group_version_path(group, version), group_version_document(group, version, &resources, &defs))
        })
        .collect()
}

/// The kind and list definitions ([`crate::custom::definitions`]) of custom resources:
/// each served version's registry entry with its `openAPIV3Schema`.
pub fn custom_definitions(resources: &[(&'static ResourceDef, &Value)]) -> Map<String, Value> {
    let mut extra = Map::new();
    for (def, schema) in resources {
        extra.extend(crate::custom::definitions(def.group, def.version, def.kind, def.list_kind, schema));
    }
    extra
}

/// The document of one group-version of custom resources: each served version's
/// registry entry with its `openAPIV3Schema`, whose kind and list definitions
/// ([`custom_definitions`]) are layered over the built-in ones.
pub fn custom_group_version_document(
    group: &str,
    version: &str,
    resources: &[(&'static ResourceDef, &Value)],
) -> Value {
    let extra = custom_definitions(resources);
    let defs = Definitions::builtin().with(&extra);
    let resources: Vec<Resource<'static>> = resources.iter().map(|(def, _)| Resource::custom(def)).collect();
    group_version_document(group, version, &resources, &defs)
}

/// The paths of [`custom_group_version_document`] alone (what `/openapi/v2` lists).
pub fn custom_group_version_paths(
    group: &str,
    version: &str,
    resources: &[(&'static ResourceDef, &Value)],
) -> Map<String, Value> {
    let extra = custom_definitions(resources);
    let defs = Definitions::builtin().with(&extra);
    let resources: Vec<Resource<'static>> = resources.iter().map(|(def, _)| Resource::custom(def)).collect();
    group_version_paths(group, version, &resources, &defs)
}

/// The OpenAPI 3.0 document of one group-version serving `resources`, with the
/// definitions its paths reference (transitively) from `defs`.
pub fn group_version_document(group: &str, version: &str, resources: &[Resource<'_>], defs: &Definitions<'_>) -> Value {
    let paths = group_version_paths(group, version, resources, defs);
    let schemas = referenced_definitions(&Value::Object(paths.clone()), defs);
    json!({
        "openapi": OPENAPI_VERSION,
        "info": {"title": "Kubernetes", "version": format!("v{}", Schemas::builtin().kubernetes_version)},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// The paths of one group-version serving `resources`, sorted, each operation's schemas
/// a `$ref` into `defs` (or a free object for a kind `defs` does not have). Shared by the
/// OpenAPI 3.0 documents and the Swagger 2.0 one ([`crate::openapi_v2`]), which converts
/// them.
pub fn group_version_paths(
    group: &str,
    version: &str,
    resources: &[Resource<'_>],
    defs: &Definitions<'_>,
) -> Map<String, Value> {
    let ids = OpIds::new(group, version);
    let prefix = if group.is_empty() { format!("/api/{version}") } else { format!("/apis/{group}/{version}") };
    let mut paths: BTreeMap<String, Value> = BTreeMap::new();

    paths.insert(
        format!("{prefix}/"),
        json!({"get": {
            "description": "get available resources",
            "operationId": format!("get{}APIResources", ids.prefix),
            "responses": responses(&[("200", "OK")], &schema_ref(API_RESOURCE_LIST), &["application/json"]),
            "tags": [ids.tag],
        }}),
    );

    for r in resources {
        let gvk = r.gvk();
        let object_schema = kind_schema(defs, gvk);
        let list_schema = kind_schema(defs, Gvk { kind: r.list_kind, ..gvk });
        let (ns, kind) = (if r.namespaced { "Namespaced" } else { "" }, r.kind);
        let (collection, object) = if r.namespaced {
            let c = format!("{prefix}/namespaces/{{namespace}}/{}", r.plural);
            (c.clone(), format!("{c}/{{name}}"))
        } else {
            (format!("{prefix}/{}", r.plural), format!("{prefix}/{}/{{name}}", r.plural))
        };
        let scope_params = |named: bool| {
            let mut p = Vec::new();
            if named {
                p.push(path_param("name", &format!("name of the {kind}")));
            }
            if r.namespaced {
                p.push(path_param("namespace", "object name and auth scope, such as for teams and projects"));
            }
            p.push(pretty());
            Value::Array(p)
        };
        let op = |id: String, action: &str, description: String, gvk: Gvk<'_>| Op {
            id,
            action: action.to_string(),
            description,
            gvk: gvk.to_value(),
            tag: ids.tag.clone(),
            patch_types: r.patch_types,
        };

        // The collection: list, create, deletecollection.
        let mut item = Map::new();
        if r.can("list") {
            let o = op(ids.id("list", ns, kind, ""), "list", format!("list or watch objects of kind {kind}"), gvk);
            item.insert("get".into(), o.list(&list_schema));
        }
        if r.can("create") {
            let o = op(ids.id("create", ns, kind, ""), "post", format!("create a {kind}"), gvk);
            let codes = [("200", "OK"), ("201", "Created"), ("202", "Accepted")];
            item.insert("post".into(), o.write(&object_schema, &codes));
        }
        if r.can("deletecollection") {
            let id = ids.id("delete", &format!("Collection{ns}"), kind, "");
            let o = op(id, "deletecollection", format!("delete collection of {kind}"), gvk);
            item.insert("delete".into(), o.delete_collection());
        }
        if !item.is_empty() {
            item.insert("parameters".into(), scope_params(false));
            paths.insert(collection, Value::Object(item));
        }

        // The object: read, replace, patch, delete.
        let mut item = Map::new();
        if r.can("get") {
            let o = op(ids.id("read", ns, kind, ""), "get", format!("read the specified {kind}"), gvk);
            item.insert("get".into(), o.read(&object_schema));
        }
        if r.can("update") {
            let o = op(ids.id("replace", ns, kind, ""), "put", format!("replace the specified {kind}"), gvk);
            item.insert("put".into(), o.write(&object_schema, &[("200", "OK"), ("201", "Created")]));
        }
        if r.can("patch") {
            let o = op(ids.id("patch", ns, kind, ""), "patch", format!("partially update the specified {kind}"), gvk);
            item.insert("patch".into(), o.patch(&object_schema));
        }
        if r.can("delete") {
            let o = op(ids.id("delete", ns, kind, ""), "delete", format!("delete a {kind}"), gvk);
            item.insert("delete".into(), o.delete());
        }
        if !item.is_empty() {
            item.insert("parameters".into(), scope_params(true));
            paths.insert(object.clone(), Value::Object(item));
        }

        // Every namespace's objects at once.
        if r.namespaced && r.can("list") {
            let id = format!("{}ForAllNamespaces", ids.id("list", "", kind, ""));
            let o = op(id, "list", format!("list or watch objects of kind {kind}"), gvk);
            paths.insert(
                format!("{prefix}/{}", r.plural),
                json!({"get": o.list(&list_schema), "parameters": [pretty()]}),
            );
        }

        // Subresources.
        for s in &r.subresources {
            let schema = kind_schema(defs, s.gvk);
            let (name, sub) = (s.name, ToId(s.name, true).to_string());
            let mut item = Map::new();
            if s.verbs.contains(&"get") {
                let o =
                    op(ids.id("read", ns, kind, &sub), "get", format!("read {name} of the specified {kind}"), s.gvk);
                item.insert("get".into(), o.read(&schema));
            }
            if s.verbs.contains(&"update") {
                let d = format!("replace {name} of the specified {kind}");
                let o = op(ids.id("replace", ns, kind, &sub), "put", d, s.gvk);
                item.insert("put".into(), o.write(&schema, &[("200", "OK"), ("201", "Created")]));
            }
            if s.verbs.contains(&"patch") {
                let d = format!("partially update {name} of the specified {kind}");
                let o = op(ids.id("patch", ns, kind, &sub), "patch", d, s.gvk);
                item.insert("patch".into(), o.patch(&schema));
            }
            if !item.is_empty() {
                item.insert("parameters".into(), scope_params(true));
                paths.insert(format!("{object}/{name}"), Value::Object(item));
            }
        }
    }

    paths.into_iter().collect()
}

/// A `$ref` to the kind's definition, or a free object when there is none.
fn kind_schema(defs: &Definitions<'_>, gvk: Gvk<'_>) -> Value {
    match defs.name_of(gvk) {
        Some(name) => schema_ref(name),
        None => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    }
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("{SCHEMA_PREFIX}{name}")})
}

/// The definitions `root` references, and those they reference, sorted by name.
fn referenced_definitions(root: &Value, defs: &Definitions<'_>) -> Map<String, Value> {
    let mut found: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = Vec::new();
    collect_refs(root, &mut todo);
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    while let Some(name) = todo.pop() {
        if !found.insert(name.clone()) {
            continue;
        }
        if let Some(def) = defs.get(&name) {
            collect_refs(def, &mut todo);
            out.insert(name, def.clone());
        }
    }
    out.into_iter().collect()
}

/// Every `#/components/schemas/<name>` under `v`, by name.
fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.strip_prefix(SCHEMA_PREFIX) {
                            out.push(name.to_string());
                        }
                    }
                    _ => collect_refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// kube-apiserver's operation-id spelling (`ToValidOperationID`): letters and `_` kept,
/// digits kept except first, anything else dropped and the next letter capitalized.
struct ToId<'a>(&'a str, bool);

impl std::fmt::Display for ToId<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut capitalize = self.1;
        for (i, c) in self.0.chars().enumerate() {
            if c.is_alphabetic() || c == '_' || (i != 0 && c.is_ascii_digit()) {
                if capitalize {
                    for u in c.to_uppercase() {
                        write!(f, "{u}")?;
                    }
                    capitalize = false;
                } else {
                    write!(f, "{c}")?;
                }
            } else {
                capitalize = true;
            }
        }
        Ok(())
    }
}

/// Operation ids and the tag of one group-version: `readCoreV1NamespacedPod`, `apps_v1`.
struct OpIds {
    /// `CoreV1`, `AppsV1`, `CoordinationV1`.
    prefix: String,
    tag: String,
}

impl OpIds {
    fn new(group: &str, version: &str) -> OpIds {
        let g = if group.is_empty() { "core" } else { group.strip_suffix(".k8s.io").unwrap_or(group) };
        OpIds {
            prefix: format!("{}{}", ToId(g, true), ToId(version, true)),
            tag: format!("{}_{}", ToId(g, false), ToId(version, false)),
        }
    }

    /// `<verb><Group><Version><scope><Kind><Sub>`.
    fn id(&self, verb: &str, scope: &str, kind: &str, sub: &str) -> String {
        format!("{verb}{}{scope}{kind}{sub}", self.prefix)
    }
}

/// One operation's identity; its parameters and bodies depend on the verb.
struct Op {
    id: String,
    action: String,
    description: String,
    gvk: Value,
    tag: String,
    patch_types: &'static [&'static str],
}

impl Op {
    fn finish(&self, mut fields: Map<String, Value>) -> Value {
        fields.insert("description".into(), json!(self.description));
        fields.insert("operationId".into(), json!(self.id));
        fields.insert("tags".into(), json!([self.tag]));
        fields.insert("x-kubernetes-action".into(), json!(self.action));
        fields.insert("x-kubernetes-group-version-kind".into(), self.gvk.clone());
        Value::Object(fields)
    }

    fn read(&self, schema: &Value) -> Value {
        let mut m = Map::new();
        m.insert("responses".into(), responses(&[("200", "OK")], schema, &["application/json"]));
        self.finish(m)
    }

    fn list(&self, list_schema: &Value) -> Value {
        let mut m = Map::new();
        m.insert("parameters".into(), Value::Array(list_params(true)));
        m.insert(
            "responses".into(),
            responses(&[("200", "OK")], list_schema, &["application/json", "application/json;stream=watch"]),
        );
        self.finish(m)
    }

    /// create (POST) and replace (PUT).
    fn write(&self, schema: &Value, codes: &[(&str, &str)]) -> Value {
        let mut m = Map::new();
        m.insert("parameters".into(), json!([dry_run(), field_manager(false), field_validation()]));
        m.insert("requestBody".into(), json!({"content": {"*/*": {"schema": schema}}, "required": true}));
        m.insert("responses".into(), responses(codes, schema, &["application/json"]));
        self.finish(m)
    }

    fn patch(&self, schema: &Value) -> Value {
        let mut content = Map::new();
        for ct in self.patch_types {
            content.insert((*ct).into(), json!({"schema": schema_ref(PATCH)}));
        }
        let mut m = Map::new();
        m.insert("parameters".into(), json!([dry_run(), field_manager(true), field_validation(), force()]));
        m.insert("requestBody".into(), json!({"content": content, "required": true}));
        m.insert("responses".into(), responses(&[("200", "OK"), ("201", "Created")], schema, &["application/json"]));
        self.finish(m)
    }

    fn delete(&self) -> Value {
        let mut m = Map::new();
        m.insert("parameters".into(), Value::Array(delete_params()));
        m.insert("requestBody".into(), json!({"content": {"*/*": {"schema": schema_ref(DELETE_OPTIONS)}}}));
        m.insert(
            "responses".into(),
            responses(&[("200", "OK"), ("202", "Accepted")], &schema_ref(STATUS), &["application/json"]),
        );
        self.finish(m)
    }

    fn delete_collection(&self) -> Value {
        let mut params = delete_params();
        params.extend(list_params(false));
        params.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        let mut m = Map::new();
        m.insert("parameters".into(), Value::Array(params));
        m.insert("requestBody".into(), json!({"content": {"*/*": {"schema": schema_ref(DELETE_OPTIONS)}}}));
        m.insert("responses".into(), responses(&[("200", "OK")], &schema_ref(STATUS), &["application/json"]));
        self.finish(m)
    }
}

fn responses(codes: &[(&str, &str)], schema: &Value, media_types: &[&str]) -> Value {
    let mut content = Map::new();
    for mt in media_types {
        content.insert((*mt).into(), json!({"schema": schema}));
    }
    let mut out = Map::new();
    for (code, description) in codes {
        out.insert((*code).into(), json!({"content": content, "description": description}));
    }
    Value::Object(out)
}

fn param(location: &str, name: &str, ty: &str, description: &str) -> Value {
    let mut p = json!({
        "description": description,
        "in": location,
        "name": name,
        "schema": {"type": ty, "uniqueItems": true},
    });
    if location == "path" {
        p["required"] = json!(true);
    }
    p
}

fn path_param(name: &str, description: &str) -> Value {
    param("path", name, "string", description)
}

fn query(name: &str, ty: &str, description: &str) -> Value {
    param("query", name, ty, description)
}

fn pretty() -> Value {
    query("pretty", "string", "If 'true', then the output is pretty printed.")
}

fn dry_run() -> Value {
    query(
        "dryRun",
        "string",
        "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry \
         run stages will be processed",
    )
}

fn field_manager(patch: bool) -> Value {
    let mut d = "fieldManager is a name associated with the actor or entity that is making these changes. It \
                 must be at most 128 characters long and contain only printable characters."
        .to_string();
    if patch {
        d.push_str(" It is required for apply requests (application/apply-patch) and optional otherwise.");
    }
    query("fieldManager", "string", &d)
}

fn field_validation() -> Value {
    query(
        "fieldValidation",
        "string",
        "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) \
         containing unknown or duplicate fields. Valid values are: - Ignore: unknown fields are dropped \
         silently. - Warn: a warning is returned for each unknown or duplicate field (the default). - Strict: \
         the request fails with BadRequest if any unknown or duplicate field is present.",
    )
}

fn force() -> Value {
    query(
        "force",
        "boolean",
        "Force is going to \"force\" Apply requests: the applier takes over fields other managers own. It must \
         be unset for non-apply patch requests.",
    )
}

fn delete_params() -> Vec<Value> {
    vec![
        dry_run(),
        query(
            "gracePeriodSeconds",
            "integer",
            "The duration in seconds before the object should be deleted; zero means immediately.",
        ),
        query(
            "orphanDependents",
            "boolean",
            "Deprecated: please use the PropagationPolicy. Whether the dependent objects should be orphaned.",
        ),
        query(
            "propagationPolicy",
            "string",
            "Whether and how garbage collection will be performed: 'Orphan', 'Background' or 'Foreground'.",
        ),
    ]
}

/// The parameters of a list (`with_watch`: also of a watch).
fn list_params(with_watch: bool) -> Vec<Value> {
    let mut p = Vec::new();
    if with_watch {
        p.push(query(
            "allowWatchBookmarks",
            "boolean",
            "allowWatchBookmarks requests watch events with type \"BOOKMARK\".",
        ));
    }
    p.push(query(
        "continue",
        "string",
        "The continue option should be set when retrieving more results from the server: the continue value of \
         a previous list result with otherwise identical query parameters.",
    ));
    p.push(query(
        "fieldSelector",
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
    ));
    p.push(query(
        "labelSelector",
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
    ));
    p.push(query(
        "limit",
        "integer",
        "limit is a maximum number of responses to return for a list call; when more exist, the list's \
         metadata carries a continue token.",
    ));
    p.push(query(
        "resourceVersion",
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from. See \
         https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.",
    ));
    p.push(query(
        "resourceVersionMatch",
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ));
    p.push(query(
        "sendInitialEvents",
        "boolean",
        "With watch=true, start the watch with synthetic events for the current state of the collection, \
         followed by a bookmark annotated \"k8s.io/initial-events-end\".",
    ));
    p.push(query(
        "timeoutSeconds",
        "integer",
        "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or \
         inactivity.",
    ));
    if with_watch {
        p.push(query(
            "watch",
            "boolean",
            "Watch for changes to the described resources and return them as a stream of add, update, and remove \
             notifications.",
        ));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str) -> Value {
        serde_json::from_slice(&OpenApiV3::builtin().document(path).unwrap().json).unwrap()
    }

    #[test]
    fn the_index_lists_every_group_version_with_its_hash() {
        let api = OpenApiV3::builtin();
        let index: Value = serde_json::from_slice(&api.index().json).unwrap();
        let paths = index["paths"].as_object().unwrap();
        let keys: Vec<&str> = paths.keys().map(String::as_str).collect();
        // Every group-version of the registry, sorted: the core group's first.
        let mut want: Vec<String> = vec!["api/v1".to_string()];
        for (group, versions) in registry::groups() {
            want.extend(versions.iter().map(|v| format!("apis/{group}/{v}")));
        }
        want.sort();
        assert_eq!(keys, want);
        for gv in ["api/v1", "apis/apps/v1", "apis/batch/v1", "apis/apiextensions.k8s.io/v1"] {
            assert!(keys.contains(&gv), "{gv}");
        }
        for (path, entry) in paths {
            let url = entry["serverRelativeURL"].as_str().unwrap();
            let d = api.document(path).unwrap();
            assert_eq!(url, format!("/openapi/v3/{path}?hash={}", d.hash));
            assert_eq!(d.hash, content_hash(&d.json));
            assert_eq!(d.hash.len(), 32);
            assert!(d.hash.chars().all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()), "{}", d.hash);
            assert_eq!(api.url_of(path).as_deref(), Some(url));
        }
        assert!(api.document("apis/apps/v2").is_none());
        assert_eq!(api.paths().count(), want.len());
    }

    #[test]
    fn documents_are_stable() {
        let again = OpenApiV3::new(builtin_documents());
        let once = OpenApiV3::builtin();
        assert_eq!(again.index().json, once.index().json);
        for p in once.paths() {
            assert_eq!(again.document(p).unwrap().hash, once.document(p).unwrap().hash);
        }
        assert_ne!(once.document("api/v1").unwrap().hash, once.document("apis/apps/v1").unwrap().hash);
        // FNV-1a 128 of "" is its offset basis; of "a", the published test vector.
        assert_eq!(content_hash(b""), "6C62272E07BB014262B821756295C58D");
        assert_eq!(content_hash(b"a"), "D228CB696F1A8CAF78912B704E4A8964");
    }

    #[test]
    fn document_header() {
        let d = doc("apis/apps/v1");
        assert_eq!(d["openapi"], "3.0.0");
        assert_eq!(d["info"], json!({"title": "Kubernetes", "version": "v1.37.0"}));
    }

    #[test]
    fn namespaced_resource_paths() {
        let d = doc("api/v1");
        let p = &d["paths"];
        let coll = &p["/api/v1/namespaces/{namespace}/configmaps"];
        assert_eq!(coll["get"]["operationId"], "listCoreV1NamespacedConfigMap");
        assert_eq!(coll["get"]["x-kubernetes-action"], "list");
        assert_eq!(coll["post"]["operationId"], "createCoreV1NamespacedConfigMap");
        assert_eq!(coll["post"]["x-kubernetes-action"], "post");
        assert_eq!(coll["delete"]["operationId"], "deleteCoreV1CollectionNamespacedConfigMap");
        assert_eq!(coll["delete"]["x-kubernetes-action"], "deletecollection");
        assert_eq!(coll["get"]["tags"], json!(["core_v1"]));
        let names: Vec<&str> =
            coll["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["namespace", "pretty"]);
        assert_eq!(
            coll["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.ConfigMapList"
        );

        let obj = &p["/api/v1/namespaces/{namespace}/configmaps/{name}"];
        for (method, id, action) in [
            ("get", "readCoreV1NamespacedConfigMap", "get"),
            ("put", "replaceCoreV1NamespacedConfigMap", "put"),
            ("patch", "patchCoreV1NamespacedConfigMap", "patch"),
            ("delete", "deleteCoreV1NamespacedConfigMap", "delete"),
        ] {
            assert_eq!(obj[method]["operationId"], id);
            assert_eq!(obj[method]["x-kubernetes-action"], action);
            assert_eq!(
                obj[method]["x-kubernetes-group-version-kind"],
                json!({"group": "", "version": "v1", "kind": "ConfigMap"})
            );
        }
        let names: Vec<&str> =
            obj["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["name", "namespace", "pretty"]);
        assert_eq!(obj["parameters"][0]["in"], "path");
        assert_eq!(obj["parameters"][0]["required"], true);
        assert_eq!(
            obj["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.ConfigMap"
        );

        let all = &p["/api/v1/configmaps"];
        assert_eq!(all["get"]["operationId"], "listCoreV1ConfigMapForAllNamespaces");
        assert!(all.get("post").is_none());

        let status = &p["/api/v1/namespaces/{namespace}/pods/{name}/status"];
        assert_eq!(status["get"]["operationId"], "readCoreV1NamespacedPodStatus");
        assert_eq!(status["patch"]["operationId"], "patchCoreV1NamespacedPodStatus");
        assert_eq!(status["put"]["x-kubernetes-group-version-kind"]["kind"], "Pod");
        assert!(p.get("/api/v1/namespaces/{namespace}/configmaps/{name}/status").is_none());
    }

    #[test]
    fn cluster_scoped_resource_paths() {
        let d = doc("api/v1");
        let p = &d["paths"];
        let coll = &p["/api/v1/namespaces"];
        assert_eq!(coll["get"]["operationId"], "listCoreV1Namespace");
        assert_eq!(coll["post"]["operationId"], "createCoreV1Namespace");
        assert!(coll.get("delete").is_none(), "namespaces have no deletecollection");
        let names: Vec<&str> =
            coll["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["pretty"]);
        let obj = &p["/api/v1/nodes/{name}"];
        assert_eq!(obj["get"]["operationId"], "readCoreV1Node");
        let names: Vec<&str> =
            obj["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["name", "pretty"]);
        assert_eq!(p["/api/v1/namespaces/{name}/status"]["put"]["operationId"], "replaceCoreV1NamespaceStatus");
        assert!(p.get("/api/v1/namespaces/{namespace}/namespaces").is_none());
        assert_eq!(p["/api/v1/"]["get"]["operationId"], "getCoreV1APIResources");
    }

    #[test]
    fn group_names_in_ids_tags_and_scale() {
        let d = doc("apis/apps/v1");
        let p = &d["paths"];
        let scale = &p["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"];
        assert_eq!(scale["patch"]["operationId"], "patchAppsV1NamespacedDeploymentScale");
        assert_eq!(
            scale["patch"]["x-kubernetes-group-version-kind"],
            json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
        );
        assert_eq!(
            scale["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"
        );
        assert_eq!(p["/apis/apps/v1/deployments"]["get"]["operationId"], "listAppsV1DeploymentForAllNamespaces");
        assert_eq!(p["/apis/apps/v1/"]["get"]["tags"], json!(["apps_v1"]));
        let d = doc("apis/coordination.k8s.io/v1");
        let lease = &d["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"];
        assert_eq!(lease["patch"]["operationId"], "patchCoordinationV1NamespacedLease");
        assert_eq!(lease["patch"]["tags"], json!(["coordination_v1"]));
        assert_eq!(ToId("rbac.authorization", true).to_string(), "RbacAuthorization");
        assert_eq!(ToId("v1beta1", true).to_string(), "V1beta1");
        assert_eq!(OpIds::new("stable.example.com", "v1").prefix, "StableExampleComV1");
    }

    /// kubectl's check (`supportsQueryParamV3`): the first PATCH operation with the kind's
    /// GVK must list `fieldValidation` in the query — so every PATCH must.
    #[test]
    fn every_patch_operation_declares_field_validation() {
        let api = OpenApiV3::builtin();
        let mut patches = 0;
        for path in api.paths() {
            let d = doc(path);
            for (url, item) in d["paths"].as_object().unwrap() {
                let Some(op) = item.get("patch") else { continue };
                patches += 1;
                let params = op["parameters"].as_array().unwrap();
                for name in ["fieldValidation", "fieldManager", "dryRun", "force"] {
                    assert!(params.iter().any(|p| p["name"] == name && p["in"] == "query"), "{url} lacks {name}");
                }
                let gvk = op["x-kubernetes-group-version-kind"].as_object().unwrap();
                assert_eq!(gvk.len(), 3, "{url}");
                let content = op["requestBody"]["content"].as_object().unwrap();
                for ct in PATCH_CONTENT_TYPES {
                    assert_eq!(content[*ct]["schema"]["$ref"], format!("{SCHEMA_PREFIX}{PATCH}"), "{url} {ct}");
                }
                assert_eq!(op["requestBody"]["required"], true);
            }
            for method in ["post", "put"] {
                for (url, item) in d["paths"].as_object().unwrap() {
                    let Some(op) = item.get(method) else { continue };
                    let params = op["parameters"].as_array().unwrap();
                    assert!(params.iter().any(|p| p["name"] == "fieldValidation"), "{method} {url}");
                }
            }
        }
        // One PATCH per resource and per subresource that lists the verb (the proxies and
        // the other kubelet subresources included).
        let want: usize = registry::resources()
            .iter()
            .filter(|d| d.verbs.contains(&"patch"))
            .map(|d| 1 + d.subresources.iter().filter(|s| s.verbs.contains(&"patch")).count())
            .sum();
        assert_eq!(patches, want);
    }

    /// `kubectl explain` finds the kind through an operation's GVK, then the component
    /// whose GVK list contains exactly that object.
    #[test]
    fn explain_finds_each_kind_through_its_operations() {
        let api = OpenApiV3::builtin();
        for def in registry::resources() {
            let d = doc(&group_version_path(def.group, def.version));
            let prefix = if def.group.is_empty() {
                "/api/v1".to_string()
            } else {
                format!("/apis/{}/{}", def.group, def.version)
            };
            // A review is only created: its operation is the collection's POST.
            let (path, method) = if def.verbs == ["create"] && def.namespaced() {
                (format!("{prefix}/namespaces/{{namespace}}/{}", def.plural), "post")
            } else if def.verbs == ["create"] {
                (format!("{prefix}/{}", def.plural), "post")
            } else if def.namespaced() {
                (format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", def.plural), "get")
            } else {
                (format!("{prefix}/{}/{{name}}", def.plural), "get")
            };
            let gvk = &d["paths"][&path][method]["x-kubernetes-group-version-kind"];
            assert_eq!(gvk["kind"], def.kind, "{path}");
            let found: Vec<&String> = d["components"]["schemas"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(_, s)| s["x-kubernetes-group-version-kind"].as_array().is_some_and(|l| l.contains(gvk)))
                .map(|(n, _)| n)
                .collect();
            assert_eq!(found.len(), 1, "{path}: {found:?}");
        }
        assert!(api.paths().all(|p| !p.is_empty()));
    }

    #[test]
    fn components_hold_exactly_what_is_referenced() {
        for path in OpenApiV3::builtin().paths() {
            let d = doc(path);
            let schemas = d["components"]["schemas"].as_object().unwrap();
            let mut refs = Vec::new();
            collect_refs(&d, &mut refs);
            for r in &refs {
                assert!(schemas.contains_key(r), "{path}: dangling $ref {r}");
            }
            let refs: BTreeSet<String> = refs.into_iter().collect();
            for name in schemas.keys() {
                assert!(refs.contains(name), "{path}: unreferenced {name}");
            }
            let keys: Vec<&String> = schemas.keys().collect();
            let mut sorted = keys.clone();
            sorted.sort();
            assert_eq!(keys, sorted);
        }
        let apps = doc("apis/apps/v1");
        let s = apps["components"]["schemas"].as_object().unwrap();
        for name in [
            "io.k8s.api.apps.v1.Deployment",
            "io.k8s.api.apps.v1.DeploymentList",
            "io.k8s.api.autoscaling.v1.Scale",
            "io.k8s.api.core.v1.PodTemplateSpec",
            "io.k8s.api.core.v1.Container",
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
            "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
            "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
            "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
        ] {
            assert!(s.contains_key(name), "apps/v1 lacks {name}");
        }
        assert!(!s.contains_key("io.k8s.api.core.v1.ConfigMap"));
        assert!(!s.contains_key("io.k8s.api.coordination.v1.Lease"));
        let lease = doc("apis/coordination.k8s.io/v1");
        assert!(!lease["components"]["schemas"].as_object().unwrap().contains_key("io.k8s.api.core.v1.Pod"));
        // The schema explain prints for deployment.spec.replicas.
        assert_eq!(s["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]["type"], "integer");
    }

    #[test]
    fn custom_documents_join_the_built_in_ones() {
        let def = kuorum_api::registry::intern_def(ResourceDef {
            group: "stable.example.com",
            version: "v1",
            kind: "CronTab",
            plural: "crontabs",
            singular: "crontab",
            list_kind: "CronTabList",
            subresources: kuorum_api::registry::custom_subresources(true, true),
            ..*registry::lookup("", "v1", "configmaps").unwrap()
        });
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "description": "the spec",
            "properties": {"cronSpec": {"type": "string"}}}}});
        let doc = custom_group_version_document("stable.example.com", "v1", &[(def, &schema)]);
        let p = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale"];
        assert_eq!(p["get"]["x-kubernetes-group-version-kind"]["kind"], "Scale");
        let list = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"]["get"];
        assert_eq!(
            list["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/com.example.stable.v1.CronTabList"
        );
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        assert_eq!(schemas["com.example.stable.v1.CronTab"]["properties"]["spec"]["description"], "the spec");
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"));
        let base = OpenApiV3::builtin();
        let served = base.with([(group_version_path("stable.example.com", "v1"), doc)]);
        assert_eq!(served.paths().count(), base.paths().count() + 1);
        assert!(Arc::ptr_eq(served.document("api/v1").unwrap(), base.document("api/v1").unwrap()), "shared");
        assert_ne!(served.index().hash, base.index().hash);
    }

    /// A custom resource's group-version, its schema layered over the built-in ones.
    #[test]
    fn custom_resources_get_documents_too() {
        let mut extra = Map::new();
        extra.insert(
            "com.example.stable.v1.CronTab".into(),
            json!({"type": "object", "properties": {
                "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
                "spec": {"type": "object", "properties": {"cronSpec": {"type": "string"}}}},
                "x-kubernetes-group-version-kind": [{"group": "stable.example.com", "version": "v1", "kind": "CronTab"}]}),
        );
        let defs = Definitions::builtin().with(&extra);
        let r = Resource {
            group: "stable.example.com",
            version: "v1",
            kind: "CronTab",
            list_kind: "CronTabList",
            plural: "crontabs",
            namespaced: true,
            verbs: registry::ALL_VERBS,
            patch_types: CUSTOM_PATCH_CONTENT_TYPES,
            subresources: vec![Subresource {
                name: "status",
                gvk: Gvk { group: "stable.example.com", version: "v1", kind: "CronTab" },
                verbs: &["get", "patch", "update"],
            }],
        };
        let d = group_version_document("stable.example.com", "v1", &[r], &defs);
        let p = &d["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"];
        assert_eq!(p["patch"]["operationId"], "patchStableExampleComV1NamespacedCronTab");
        // No strategic merge patch: kubectl's client-side apply sends a merge patch then.
        let types: Vec<&String> = p["patch"]["requestBody"]["content"].as_object().unwrap().keys().collect();
        assert_eq!(types, CUSTOM_PATCH_CONTENT_TYPES.to_vec());
        assert_eq!(
            p["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/com.example.stable.v1.CronTab"
        );
        // No CronTabList definition: the list answers a free object.
        let list = &d["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"]["get"];
        assert_eq!(list["responses"]["200"]["content"]["application/json"]["schema"]["type"], "object");
        let schemas = d["components"]["schemas"].as_object().unwrap();
        assert!(schemas.contains_key("com.example.stable.v1.CronTab"));
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        let served = OpenApiV3::new(
            builtin_documents().into_iter().chain([(group_version_path("stable.example.com", "v1"), d)]),
        );
        assert_eq!(served.paths().count(), builtin_documents().len() + 1);
        assert!(served
            .url_of("apis/stable.example.com/v1")
            .unwrap()
            .starts_with("/openapi/v3/apis/stable.example.com/v1?hash="));
    }
}
