//! Owns the `/openapi/v2` document: one Swagger 2.0 document with the paths of every
//! built-in and custom resource and every definition, as kube-apiserver serves it (its
//! own spec merged with the one apiextensions-apiserver builds per CRD version), in JSON
//! and in protobuf (gnostic's `openapi.v2.Document`, what client-go's `OpenAPISchema()`
//! asks for and decodes).
//!
//! It is made of what the `/openapi/v3` documents are made of ([`crate::openapi`]):
//!
//! - paths: [`openapi::group_version_paths`] of every group-version, each operation in
//!   Swagger 2.0 form: the request body a `body` parameter, a parameter's `schema` spread
//!   beside its name, `consumes`/`produces` from the media types, `schemes: [https]`, a
//!   `401 Unauthorized` response, one `schema` per response;
//! - definitions: every built-in definition with OpenAPI 3's `allOf: [{$ref}]` (a
//!   reference with siblings) written as `$ref` beside its siblings, `#/components/schemas/`
//!   as `#/definitions/`, and `IntOrString` and `Quantity` as kube publishes them (strings,
//!   not the `oneOf` of the JSON-Schema source);
//! - a custom kind: its CRD version's `openAPIV3Schema` converted as apiextensions-apiserver
//!   converts it for v2 ([`crd_schema_v2`]), with `apiVersion`, `kind` and `metadata`, and
//!   its list ([`crate::custom::definitions`]);
//! - `securityDefinitions` (`BearerToken`) and `security`.
//!
//! ```text
//! GET /openapi/v2   {"swagger": "2.0", "info": {...}, "paths": {...}, "definitions": {...},
//!                    "securityDefinitions": {"BearerToken": {...}}, "security": [{"BearerToken": []}]}
//! ```
//!
//! The built-in paths and definitions are converted once; a document ([`OpenApiV2::new`])
//! is built once per set of CRDs, JSON and protobuf together, and borrows the built-in
//! parts while it is serialized.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use kuorum_api::registry::ResourceDef;
use prost::Message;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::openapi::{self, content_hash, Definitions, SCHEMA_PREFIX};
use crate::Schemas;

/// gnostic's OpenAPI v2 messages, as far as `/openapi/v2` uses them
/// (`proto/openapiv2.proto`).
#[allow(clippy::large_enum_variant)] // generated: the oneofs hold the messages inline
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/openapi.v2.rs"));

    /// Encoding and decoding of the messages.
    pub use prost::Message;
}

/// Where the document is served.
pub const PATH: &str = "/openapi/v2";

/// The Swagger version of the document.
pub const SWAGGER_VERSION: &str = "2.0";

/// The protobuf form's media type, as kube-apiserver answers it.
pub const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The protobuf form's older media type, still accepted (client-go asks for it); the
/// answer is labelled [`PROTOBUF`].
pub const PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// How a `$ref` names a definition in Swagger 2.0.
pub const DEFINITION_PREFIX: &str = "#/definitions/";

const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

const PRESERVE_UNKNOWN: &str = "x-kubernetes-preserve-unknown-fields";
const EMBEDDED_RESOURCE: &str = "x-kubernetes-embedded-resource";
const GVK: &str = "x-kubernetes-group-version-kind";

/// The security scheme kube-apiserver declares.
const BEARER_TOKEN: &str = "BearerToken";
const BEARER_DESCRIPTION: &str = "Bearer Token authentication";

/// The descriptions apiextensions-apiserver gives an embedded resource's `apiVersion`
/// and `kind`.
const EMBEDDED_API_VERSION: &str = "apiVersion defines the versioned schema of this representation of an object. \
     More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND: &str = "kind is a string value representing the type of this object. In CamelCase. \
     More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// The document, in both forms.
#[derive(Debug, Clone)]
pub struct OpenApiV2 {
    /// The JSON bytes as served.
    pub json: Vec<u8>,
    /// The same document as a gnostic `openapi.v2.Document`.
    pub protobuf: Vec<u8>,
    /// [`content_hash`] of `json`: the `ETag` of both forms (kube-apiserver shares it too,
    /// with `Vary: Accept`).
    pub hash: String,
    /// When it was built (seconds since the Unix epoch): its `Last-Modified`.
    pub last_modified: i64,
}

impl OpenApiV2 {
    /// The document of the built-in resources and of `custom`: each served version of a
    /// custom resource (not in a built-in group-version) with its `openAPIV3Schema`.
    pub fn new(custom: &[(&'static ResourceDef, &Value)], last_modified: i64) -> OpenApiV2 {
        let builtin = Builtin::get();
        let mut by_gv: BTreeMap<(&str, &str), Vec<(&'static ResourceDef, &Value)>> = BTreeMap::new();
        for (def, schema) in custom {
            by_gv.entry((def.group, def.version)).or_default().push((*def, *schema));
        }
        let mut custom_paths: Vec<(String, Value)> = Vec::new();
        let mut custom_definitions: Vec<(String, Value)> = Vec::new();
        for ((group, version), resources) in &by_gv {
            let paths = openapi::custom_group_version_paths(group, version, resources);
            custom_paths.extend(paths.iter().map(|(path, item)| (path.clone(), path_item(item))));
            for (def, schema) in resources {
                custom_definitions.extend(custom_kind_definitions(def, schema));
            }
        }

        let mut paths: BTreeMap<&str, &Value> = builtin.paths.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let mut definitions: BTreeMap<&str, &Value> =
            builtin.definitions.iter().map(|(k, v)| (k.as_str(), v)).collect();
        // Custom group-versions are never built-in ones (callers leave those out); a custom
        // definition named like a built-in one (a group spelled to collide) does not
        // replace it.
        for (path, item) in &custom_paths {
            paths.entry(path).or_insert(item);
        }
        for (name, def) in &custom_definitions {
            definitions.entry(name).or_insert(def);
        }
        let doc = Swagger {
            swagger: SWAGGER_VERSION,
            info: Info { title: "Kubernetes", version: format!("v{}", Schemas::builtin().kubernetes_version) },
            paths,
            definitions,
            security_definitions: json!({BEARER_TOKEN: {
                "description": BEARER_DESCRIPTION, "type": "apiKey", "name": "authorization", "in": "header"}}),
            security: json!([{BEARER_TOKEN: []}]),
        };
        let json = serde_json::to_vec(&doc).expect("a JSON value serializes");
        let protobuf = doc.to_protobuf().encode_to_vec();
        OpenApiV2 { hash: content_hash(&json), json, protobuf, last_modified }
    }
}

/// The document as it is serialized, borrowing the built-in parts.
#[derive(Serialize)]
struct Swagger<'a> {
    swagger: &'static str,
    info: Info,
    paths: BTreeMap<&'a str, &'a Value>,
    definitions: BTreeMap<&'a str, &'a Value>,
    #[serde(rename = "securityDefinitions")]
    security_definitions: Value,
    security: Value,
}

#[derive(Serialize)]
struct Info {
    title: &'static str,
    version: String,
}

/// The built-in paths and definitions in Swagger 2.0 form, converted once.
struct Builtin {
    paths: BTreeMap<String, Value>,
    definitions: BTreeMap<String, Value>,
}

impl Builtin {
    fn get() -> &'static Builtin {
        static BUILT: OnceLock<Builtin> = OnceLock::new();
        BUILT.get_or_init(|| {
            let defs = Definitions::builtin();
            let mut paths = BTreeMap::new();
            for (group, version) in openapi::builtin_group_versions() {
                let resources = openapi::builtin_resources(group, version);
                for (path, item) in openapi::group_version_paths(group, version, &resources, &defs) {
                    paths.insert(path, path_item(&item));
                }
            }
            let definitions =
                Schemas::builtin().definitions().iter().map(|(n, d)| (n.clone(), builtin_definition(n, d))).collect();
            Builtin { paths, definitions }
        })
    }
}

/// A built-in definition as kube-apiserver's `/openapi/v2` has it.
fn builtin_definition(name: &str, def: &Value) -> Value {
    match name {
        INT_OR_STRING => json!({"format": "int-or-string", "type": "string"}),
        QUANTITY => json!({"type": "string"}),
        _ => schema_v2(def),
    }
}

// ---- paths ---------------------------------------------------------------------------

const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch"];

/// An OpenAPI 3 path item in Swagger 2.0 form.
fn path_item(item: &Value) -> Value {
    let mut out = Map::new();
    for (k, v) in item.as_object().into_iter().flatten() {
        if METHODS.contains(&k.as_str()) {
            out.insert(k.clone(), operation(v));
        } else if k == "parameters" {
            out.insert(k.clone(), Value::Array(v.as_array().into_iter().flatten().map(parameter).collect()));
        } else if k.starts_with("x-") {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

/// An OpenAPI 3 operation in Swagger 2.0 form, with kube's `schemes` and `401`.
fn operation(op: &Value) -> Value {
    let mut out = Map::new();
    if let Some(d) = op.get("description") {
        out.insert("description".into(), d.clone());
    }
    let body = op.get("requestBody");
    let body_content = body.and_then(|b| b.get("content")).and_then(Value::as_object);
    let consumes: Vec<&str> = match body_content {
        Some(c) => c.keys().map(String::as_str).collect(),
        None => vec!["*/*"],
    };
    out.insert("consumes".into(), json!(consumes));
    let responses = op.get("responses").and_then(Value::as_object);
    let mut produces: Vec<&str> = Vec::new();
    for r in responses.into_iter().flat_map(|r| r.values()) {
        for media_type in r.get("content").and_then(Value::as_object).into_iter().flat_map(|c| c.keys()) {
            if !produces.contains(&media_type.as_str()) {
                produces.push(media_type);
            }
        }
    }
    out.insert("produces".into(), json!(produces));
    out.insert("schemes".into(), json!(["https"]));
    for key in ["tags", "operationId"] {
        if let Some(v) = op.get(key) {
            out.insert(key.into(), v.clone());
        }
    }

    let mut params = Vec::new();
    if let Some(schema) = body_content.and_then(|c| c.values().next()).and_then(|m| m.get("schema")) {
        let mut p = json!({"name": "body", "in": "body", "schema": schema_v2(schema)});
        if body.and_then(|b| b.get("required")) == Some(&Value::Bool(true)) {
            p["required"] = json!(true);
        }
        params.push(p);
    }
    params.extend(op.get("parameters").and_then(Value::as_array).into_iter().flatten().map(parameter));
    if !params.is_empty() {
        out.insert("parameters".into(), Value::Array(params));
    }

    let mut codes = Map::new();
    for (code, r) in responses.into_iter().flatten() {
        let mut response = Map::new();
        response.insert("description".into(), r.get("description").cloned().unwrap_or_else(|| json!("")));
        let content = r.get("content").and_then(Value::as_object);
        let media = content.and_then(|c| c.get("application/json").or_else(|| c.values().next()));
        if let Some(schema) = media.and_then(|m| m.get("schema")) {
            response.insert("schema".into(), schema_v2(schema));
        }
        codes.insert(code.clone(), Value::Object(response));
    }
    codes.entry("401").or_insert_with(|| json!({"description": "Unauthorized"}));
    out.insert("responses".into(), Value::Object(codes));

    for (k, v) in op.as_object().into_iter().flatten() {
        if k.starts_with("x-") {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
}

/// An OpenAPI 3 parameter in Swagger 2.0 form: its `schema` (type, uniqueItems) spread
/// beside its name.
fn parameter(p: &Value) -> Value {
    let mut out = Map::new();
    for (k, v) in p.get("schema").and_then(Value::as_object).into_iter().flatten() {
        out.insert(k.clone(), v.clone());
    }
    for key in ["description", "name", "in", "required"] {
        if let Some(v) = p.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    Value::Object(out)
}

// ---- schemas -------------------------------------------------------------------------

/// The keys of a Swagger 2.0 schema kept besides `$ref`, `allOf`, `properties`, `items`,
/// `additionalProperties` and the `x-` extensions. What is not here is OpenAPI 3 only
/// (`nullable`, `oneOf`, `anyOf`, `not`, ...) or `default`, which kube-apiserver prunes from
/// every definition of `/openapi/v2`.
const SCHEMA_KEYS: &[&str] = &[
    "description",
    "enum",
    "example",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "externalDocs",
    "format",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "pattern",
    "readOnly",
    "required",
    "title",
    "type",
    "uniqueItems",
];

/// An OpenAPI 3 schema in Swagger 2.0 form: references into `#/definitions/`, a
/// reference with siblings (`allOf: [{$ref}]` in OpenAPI 3) as `$ref` beside them.
pub fn schema_v2(schema: &Value) -> Value {
    let Value::Object(m) = schema else { return schema.clone() };
    let mut out = Map::new();
    for (k, v) in m {
        match k.as_str() {
            "$ref" => {
                out.insert(k.clone(), ref_v2(v));
            }
            "allOf" => match single_ref(v) {
                Some(r) => {
                    out.insert("$ref".into(), ref_v2(r));
                }
                None => {
                    let all: Vec<Value> = v.as_array().into_iter().flatten().map(schema_v2).collect();
                    out.insert(k.clone(), Value::Array(all));
                }
            },
            "properties" => {
                let props: Map<String, Value> =
                    v.as_object().into_iter().flatten().map(|(n, s)| (n.clone(), schema_v2(s))).collect();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" => {
                out.insert(k.clone(), if v.is_object() { schema_v2(v) } else { v.clone() });
            }
            _ if k.starts_with("x-") || SCHEMA_KEYS.contains(&k.as_str()) => {
                out.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// The `$ref` of `allOf: [{"$ref": ...}]`.
fn single_ref(all_of: &Value) -> Option<&Value> {
    match all_of.as_array().map(Vec::as_slice) {
        Some([only]) => only.as_object().filter(|o| o.len() == 1).and_then(|o| o.get("$ref")),
        _ => None,
    }
}

fn ref_v2(r: &Value) -> Value {
    match r.as_str().and_then(|s| s.strip_prefix(SCHEMA_PREFIX)) {
        Some(name) => json!(format!("{DEFINITION_PREFIX}{name}")),
        None => r.clone(),
    }
}

/// A custom kind's and its list's definitions in `/openapi/v2`: the schema converted
/// ([`crd_schema_v2`]), or `{type: object}` alone where kube publishes nothing more (no
/// schema, or one that preserves unknown fields at its root: kubectl would refuse the
/// fields it does not list).
fn custom_kind_definitions(def: &ResourceDef, schema: &Value) -> Vec<(String, Value)> {
    let converted = crd_schema_v2(schema);
    let mut defs = crate::custom::definitions(
        def.group,
        def.version,
        def.kind,
        def.list_kind,
        converted.as_ref().unwrap_or(schema),
    );
    if converted.is_none() {
        defs.insert(
            crate::custom::definition_name(def.group, def.version, def.kind),
            json!({"type": "object", GVK: [{"group": def.group, "kind": def.kind, "version": def.version}]}),
        );
    }
    defs.iter().map(|(name, d)| (name.clone(), schema_v2(d))).collect()
}

/// The keys a structural schema node keeps (apiextensions-apiserver's `Structural`:
/// generic fields, value validations, extensions), less `default` (pruned from v2) and
/// the junctors `allOf`, `anyOf`, `oneOf`, `not` (dropped for v2).
const STRUCTURAL_KEYS: &[&str] = &[
    "description",
    "enum",
    "example",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "externalDocs",
    "format",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "multipleOf",
    "nullable",
    "pattern",
    "required",
    "title",
    "type",
    "uniqueItems",
    PRESERVE_UNKNOWN,
    EMBEDDED_RESOURCE,
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// A CRD version's `openAPIV3Schema` as apiextensions-apiserver publishes it in
/// `/openapi/v2` (`BuildOpenAPIV2`, `ToStructuralOpenAPIV2`, `PruneDefaults`), before
/// `apiVersion`, `kind` and `metadata` are added at its root. `None` where kube publishes
/// `{type: object}` alone: no schema, or `x-kubernetes-preserve-unknown-fields` at the root.
///
/// - only what a structural schema holds is kept; `default`s are pruned; `allOf`, `anyOf`,
///   `oneOf` and `not` are dropped (so `x-kubernetes-int-or-string` stays, without the
///   `anyOf` it unfolds to);
/// - a `nullable` node loses `nullable`, `type`, `items` and `properties`, and leaves its
///   parent's `required` (all of it, for nullable `additionalProperties`);
/// - a node that preserves unknown fields loses `items` and `properties`, and `type`
///   when it was `object`; an `array` without `items` loses `type`;
/// - an `x-kubernetes-embedded-resource` that does not preserve unknown fields gets
///   `apiVersion`, `kind` and `metadata` (ObjectMeta), and requires `kind` and `apiVersion`.
pub fn crd_schema_v2(schema: &Value) -> Option<Value> {
    if !schema.is_object() || flag(schema, PRESERVE_UNKNOWN) {
        return None;
    }
    let mut s = structural(schema);
    to_v2(&mut s);
    add_embedded_properties(&mut s);
    Some(s)
}

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

/// A Go zero value: kube's structs leave it out of their JSON.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn structural(node: &Value) -> Value {
    let mut out = Map::new();
    for (k, v) in node.as_object().into_iter().flatten() {
        match k.as_str() {
            "properties" => {
                let props: Map<String, Value> =
                    v.as_object().into_iter().flatten().map(|(n, s)| (n.clone(), structural(s))).collect();
                if !props.is_empty() {
                    out.insert(k.clone(), Value::Object(props));
                }
            }
            "items" if v.is_object() => {
                out.insert(k.clone(), structural(v));
            }
            "additionalProperties" if v.is_object() => {
                out.insert(k.clone(), structural(v));
            }
            "additionalProperties" if v.is_boolean() => {
                out.insert(k.clone(), v.clone());
            }
            "example" if !v.is_null() => {
                out.insert(k.clone(), v.clone());
            }
            _ if STRUCTURAL_KEYS.contains(&k.as_str()) && !is_zero(v) => {
                out.insert(k.clone(), v.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// `ToStructuralOpenAPIV2` on one node, then on its children (a node looks at its
/// properties' `nullable` before they are converted).
fn to_v2(node: &mut Value) {
    let preserve = flag(node, PRESERVE_UNKNOWN);
    let Value::Object(m) = node else { return };
    if m.remove("nullable") == Some(Value::Bool(true)) {
        for key in ["type", "items", "properties"] {
            m.remove(key);
        }
    }
    if preserve {
        m.remove("items");
        m.remove("properties");
    }
    let ty = m.get("type").and_then(Value::as_str).map(str::to_string);
    if !m.contains_key("items") && ty.as_deref() == Some("array") {
        m.remove("type");
    }
    if preserve && ty.as_deref() == Some("object") {
        m.remove("type");
    }
    let nullable: Vec<String> = m
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, s)| flag(s, "nullable"))
        .map(|(n, _)| n.clone())
        .collect();
    if let Some(Value::Array(required)) = m.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| nullable.iter().any(|n| n == r)));
    }
    if m.get("additionalProperties").is_some_and(|a| flag(a, "nullable")) {
        m.remove("required");
    }
    if m.get("required").is_some_and(is_zero) {
        m.remove("required");
    }
    if let Some(items) = m.get_mut("items") {
        to_v2(items);
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        props.values_mut().for_each(to_v2);
    }
    if let Some(additional) = m.get_mut("additionalProperties") {
        to_v2(additional);
    }
}

/// apiextensions-apiserver's `addEmbeddedProperties` for v2: children first.
fn add_embedded_properties(node: &mut Value) {
    let Value::Object(m) = node else { return };
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        props.values_mut().for_each(add_embedded_properties);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = m.get_mut(key) {
            add_embedded_properties(child);
        }
    }
    if flag(node, PRESERVE_UNKNOWN) || !flag(node, EMBEDDED_RESOURCE) {
        return;
    }
    let Value::Object(m) = node else { return };
    let metadata_description = Schemas::builtin()
        .named("io.k8s.api.core.v1.ConfigMap")
        .and_then(|cm| cm.property("metadata"))
        .and_then(|p| p.description())
        .map(Value::from)
        .unwrap_or(Value::Null);
    let props = m.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(props) = props {
        props.insert("apiVersion".into(), json!({"description": EMBEDDED_API_VERSION, "type": "string"}));
        props.insert("kind".into(), json!({"description": EMBEDDED_KIND, "type": "string"}));
        props.insert(
            "metadata".into(),
            json!({"$ref": format!("{DEFINITION_PREFIX}{OBJECT_META}"), "description": metadata_description}),
        );
    }
    let required = m.entry("required").or_insert_with(|| json!([]));
    if let Value::Array(required) = required {
        for field in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == field) {
                required.push(json!(field));
            }
        }
    }
}

// ---- protobuf ------------------------------------------------------------------------

impl Swagger<'_> {
    /// The document as gnostic's `openapi_v2.ParseDocument` reads its JSON.
    fn to_protobuf(&self) -> proto::Document {
        use proto::security_definitions_item::Oneof as Security;
        proto::Document {
            swagger: self.swagger.into(),
            info: Some(proto::Info { title: self.info.title.into(), version: self.info.version.clone() }),
            paths: Some(proto::Paths {
                path: self
                    .paths
                    .iter()
                    .map(|(name, item)| proto::NamedPathItem {
                        name: name.to_string(),
                        value: Some(pb_path_item(item)),
                    })
                    .collect(),
            }),
            definitions: Some(proto::Definitions {
                additional_properties: self
                    .definitions
                    .iter()
                    .map(|(name, s)| proto::NamedSchema { name: name.to_string(), value: Some(pb_schema(s)) })
                    .collect(),
            }),
            security: vec![proto::SecurityRequirement {
                additional_properties: vec![proto::NamedStringArray {
                    name: BEARER_TOKEN.into(),
                    value: Some(proto::StringArray { value: Vec::new() }),
                }],
            }],
            security_definitions: Some(proto::SecurityDefinitions {
                additional_properties: vec![proto::NamedSecurityDefinitionsItem {
                    name: BEARER_TOKEN.into(),
                    value: Some(proto::SecurityDefinitionsItem {
                        oneof: Some(Security::ApiKeySecurity(proto::ApiKeySecurity {
                            r#type: "apiKey".into(),
                            name: "authorization".into(),
                            r#in: "header".into(),
                            description: BEARER_DESCRIPTION.into(),
                        })),
                    }),
                }],
            }),
        }
    }
}

fn text(m: &Map<String, Value>, key: &str) -> String {
    m.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn texts(m: &Map<String, Value>, key: &str) -> Vec<String> {
    m.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(str::to_string).collect()
}

fn truth(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn float(m: &Map<String, Value>, key: &str) -> f64 {
    m.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn int(m: &Map<String, Value>, key: &str) -> i64 {
    m.get(key).and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))).unwrap_or(0)
}

/// gnostic keeps any value (an extension's, an `enum` entry, an `example`) as its YAML
/// text; JSON is YAML, and kube's readers parse it back with a YAML parser.
fn pb_any(v: &Value) -> proto::Any {
    proto::Any { yaml: format!("{v}\n") }
}

fn pb_extensions(m: &Map<String, Value>) -> Vec<proto::NamedAny> {
    m.iter()
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, v)| proto::NamedAny { name: k.clone(), value: Some(pb_any(v)) })
        .collect()
}

fn pb_path_item(item: &Value) -> proto::PathItem {
    let Some(m) = item.as_object() else { return proto::PathItem::default() };
    let op = |method: &str| m.get(method).map(pb_operation);
    proto::PathItem {
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        options: op("options"),
        head: op("head"),
        patch: op("patch"),
        parameters: pb_parameters(m.get("parameters")),
        vendor_extension: pb_extensions(m),
    }
}

fn pb_operation(op: &Value) -> proto::Operation {
    use proto::response_value::Oneof as Value_;
    use proto::schema_item::Oneof as Item;
    let Some(m) = op.as_object() else { return proto::Operation::default() };
    let responses = m.get("responses").and_then(Value::as_object).map(|codes| proto::Responses {
        response_code: codes
            .iter()
            .map(|(code, r)| {
                let r = r.as_object();
                let response = proto::Response {
                    description: r.map(|r| text(r, "description")).unwrap_or_default(),
                    schema: r
                        .and_then(|r| r.get("schema"))
                        .map(|s| proto::SchemaItem { oneof: Some(Item::Schema(pb_schema(s))) }),
                };
                proto::NamedResponseValue {
                    name: code.clone(),
                    value: Some(proto::ResponseValue { oneof: Some(Value_::Response(response)) }),
                }
            })
            .collect(),
    });
    proto::Operation {
        tags: texts(m, "tags"),
        description: text(m, "description"),
        operation_id: text(m, "operationId"),
        produces: texts(m, "produces"),
        consumes: texts(m, "consumes"),
        parameters: pb_parameters(m.get("parameters")),
        responses,
        schemes: texts(m, "schemes"),
        vendor_extension: pb_extensions(m),
    }
}

fn pb_parameters(params: Option<&Value>) -> Vec<proto::ParametersItem> {
    params.and_then(Value::as_array).into_iter().flatten().filter_map(pb_parameter).collect()
}

/// A body parameter, or a query or path one (the only kinds the document has).
fn pb_parameter(p: &Value) -> Option<proto::ParametersItem> {
    use proto::non_body_parameter::Oneof as NonBody;
    use proto::parameter::Oneof as Param;
    let m = p.as_object()?;
    let param = match m.get("in")?.as_str()? {
        "body" => Param::BodyParameter(proto::BodyParameter {
            description: text(m, "description"),
            name: text(m, "name"),
            r#in: "body".into(),
            required: truth(m, "required"),
            schema: m.get("schema").map(pb_schema),
        }),
        "query" => Param::NonBodyParameter(proto::NonBodyParameter {
            oneof: Some(NonBody::QueryParameterSubSchema(proto::QueryParameterSubSchema {
                required: truth(m, "required"),
                r#in: "query".into(),
                description: text(m, "description"),
                name: text(m, "name"),
                r#type: text(m, "type"),
                format: text(m, "format"),
                unique_items: truth(m, "uniqueItems"),
            })),
        }),
        "path" => Param::NonBodyParameter(proto::NonBodyParameter {
            oneof: Some(NonBody::PathParameterSubSchema(proto::PathParameterSubSchema {
                required: truth(m, "required"),
                r#in: "path".into(),
                description: text(m, "description"),
                name: text(m, "name"),
                r#type: text(m, "type"),
                format: text(m, "format"),
                unique_items: truth(m, "uniqueItems"),
            })),
        }),
        _ => return None,
    };
    Some(proto::ParametersItem {
        oneof: Some(proto::parameters_item::Oneof::Parameter(proto::Parameter { oneof: Some(param) })),
    })
}

fn pb_schema(s: &Value) -> proto::Schema {
    use proto::additional_properties_item::Oneof as Additional;
    let Some(m) = s.as_object() else { return proto::Schema::default() };
    let additional_properties = match m.get("additionalProperties") {
        Some(Value::Bool(b)) => Some(Additional::Boolean(*b)),
        Some(a @ Value::Object(_)) => Some(Additional::Schema(Box::new(pb_schema(a)))),
        _ => None,
    }
    .map(|oneof| Box::new(proto::AdditionalPropertiesItem { oneof: Some(oneof) }));
    let ty = match m.get("type") {
        Some(Value::String(t)) => Some(proto::TypeItem { value: vec![t.clone()] }),
        Some(Value::Array(_)) => Some(proto::TypeItem { value: texts(m, "type") }),
        _ => None,
    };
    proto::Schema {
        r#ref: text(m, "$ref"),
        format: text(m, "format"),
        title: text(m, "title"),
        description: text(m, "description"),
        multiple_of: float(m, "multipleOf"),
        maximum: float(m, "maximum"),
        exclusive_maximum: truth(m, "exclusiveMaximum"),
        minimum: float(m, "minimum"),
        exclusive_minimum: truth(m, "exclusiveMinimum"),
        max_length: int(m, "maxLength"),
        min_length: int(m, "minLength"),
        pattern: text(m, "pattern"),
        max_items: int(m, "maxItems"),
        min_items: int(m, "minItems"),
        unique_items: truth(m, "uniqueItems"),
        max_properties: int(m, "maxProperties"),
        min_properties: int(m, "minProperties"),
        required: texts(m, "required"),
        r#enum: m.get("enum").and_then(Value::as_array).into_iter().flatten().map(pb_any).collect(),
        additional_properties,
        r#type: ty,
        items: m.get("items").filter(|i| i.is_object()).map(|i| proto::ItemsItem { schema: vec![pb_schema(i)] }),
        all_of: m.get("allOf").and_then(Value::as_array).into_iter().flatten().map(pb_schema).collect(),
        properties: m.get("properties").and_then(Value::as_object).map(|props| proto::Properties {
            additional_properties: props
                .iter()
                .map(|(name, s)| proto::NamedSchema { name: name.clone(), value: Some(pb_schema(s)) })
                .collect(),
        }),
        read_only: truth(m, "readOnly"),
        external_docs: m
            .get("externalDocs")
            .and_then(Value::as_object)
            .map(|d| proto::ExternalDocs { description: text(d, "description"), url: text(d, "url") }),
        example: m.get("example").map(pb_any),
        vendor_extension: pb_extensions(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::{builtin_documents, group_version_path, OpenApiV3};
    use kuorum_api::registry;

    fn builtin() -> (OpenApiV2, Value) {
        let doc = OpenApiV2::new(&[], 1_795_304_728);
        let v = serde_json::from_slice(&doc.json).unwrap();
        (doc, v)
    }

    fn crontab_def() -> &'static ResourceDef {
        registry::intern_def(ResourceDef {
            group: "stable.example.com",
            version: "v1",
            kind: "CronTab",
            plural: "crontabs",
            singular: "crontab",
            list_kind: "CronTabList",
            subresources: registry::custom_subresources(true, true),
            ..*registry::lookup("", "v1", "configmaps").unwrap()
        })
    }

    /// Every `$ref` under `v`.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    match (k.as_str(), x) {
                        ("$ref", Value::String(r)) => out.push(r.clone()),
                        _ => refs(x, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }

    #[test]
    fn header_and_security() {
        let (doc, d) = builtin();
        assert_eq!(d["swagger"], "2.0");
        assert_eq!(d["info"], json!({"title": "Kubernetes", "version": "v1.37.0"}));
        assert_eq!(
            d["securityDefinitions"]["BearerToken"],
            json!({"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"})
        );
        assert_eq!(d["security"], json!([{"BearerToken": []}]));
        assert_eq!(doc.hash, content_hash(&doc.json));
        assert_eq!(doc.last_modified, 1_795_304_728);
        // Built the same way twice: the same bytes, so the same ETag.
        assert_eq!(OpenApiV2::new(&[], 0).hash, doc.hash);
    }

    /// Every path and operation of every `/openapi/v3` group-version document is in the
    /// one v2 document, with the same ids, actions and kinds.
    #[test]
    fn every_path_of_every_group_version_is_present() {
        let (_, d) = builtin();
        let v2 = d["paths"].as_object().unwrap();
        let mut want = 0;
        for (path, v3) in builtin_documents() {
            for (url, item) in v3["paths"].as_object().unwrap() {
                want += 1;
                let got = v2.get(url).unwrap_or_else(|| panic!("{path}: {url} missing"));
                for method in METHODS {
                    let (Some(a), Some(b)) = (item.get(*method), got.get(*method)) else {
                        assert_eq!(item.get(*method).is_some(), got.get(*method).is_some(), "{url} {method}");
                        continue;
                    };
                    for key in ["operationId", "x-kubernetes-action", "x-kubernetes-group-version-kind", "tags"] {
                        assert_eq!(a.get(key), b.get(key), "{url} {method} {key}");
                    }
                    assert_eq!(b["schemes"], json!(["https"]));
                    assert_eq!(b["responses"]["401"], json!({"description": "Unauthorized"}), "{url} {method}");
                }
            }
        }
        assert_eq!(v2.len(), want, "no path twice, none invented");
        assert_eq!(OpenApiV3::builtin().paths().count(), builtin_documents().len());
    }

    #[test]
    fn operations_in_swagger_form() {
        let (_, d) = builtin();
        let obj = &d["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
        let patch = &obj["patch"];
        assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
        let consumes: Vec<&str> = patch["consumes"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
        assert_eq!(consumes, openapi::PATCH_CONTENT_TYPES);
        assert_eq!(patch["produces"], json!(["application/json"]));
        let params = patch["parameters"].as_array().unwrap();
        assert_eq!(
            params[0],
            json!({"name": "body", "in": "body", "required": true,
                   "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}})
        );
        let fv = params.iter().find(|p| p["name"] == "fieldValidation").unwrap();
        assert_eq!(
            (fv["in"].as_str(), fv["type"].as_str(), fv["uniqueItems"].as_bool()),
            (Some("query"), Some("string"), Some(true))
        );
        assert!(fv.get("schema").is_none(), "no OpenAPI 3 parameter schema");
        assert_eq!(patch["responses"]["200"]["schema"]["$ref"], "#/definitions/io.k8s.api.apps.v1.Deployment");
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        assert_eq!(obj["get"]["consumes"], json!(["*/*"]));
        assert!(obj["get"].get("parameters").is_none());
        assert_eq!(
            obj["delete"]["parameters"][0],
            json!({"name": "body", "in": "body", "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"}})
        );
        assert_eq!(
            obj["parameters"][0],
            json!({"type": "string", "uniqueItems": true, "description": "name of the Deployment", "name": "name",
                   "in": "path", "required": true})
        );
        let list = &d["paths"]["/apis/apps/v1/deployments"]["get"];
        assert_eq!(list["produces"], json!(["application/json", "application/json;stream=watch"]));
        assert!(list.get("requestBody").is_none());
    }

    /// The built-in definitions: all of them, OpenAPI 3's reference forms rewritten, none
    /// left dangling, nothing gnostic's v2 model refuses.
    #[test]
    fn definitions_and_references_in_v2_form() {
        let (_, d) = builtin();
        let defs = d["definitions"].as_object().unwrap();
        assert_eq!(defs.len(), Schemas::builtin().definitions().len());
        let selector = &defs["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["selector"];
        assert_eq!(selector["$ref"], "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector");
        assert!(selector["description"].as_str().unwrap().starts_with("Label selector for pods."));
        assert!(selector.get("allOf").is_none());
        assert_eq!(defs[INT_OR_STRING], json!({"format": "int-or-string", "type": "string"}));
        assert_eq!(defs[QUANTITY], json!({"type": "string"}));
        assert_eq!(defs["io.k8s.api.apps.v1.Deployment"][GVK][0]["kind"], "Deployment");
        let text = String::from_utf8(serde_json::to_vec(&d).unwrap()).unwrap();
        assert!(!text.contains("#/components/schemas/"));
        for key in ["\"oneOf\"", "\"anyOf\"", "\"nullable\"", "\"requestBody\"", "\"content\""] {
            // Only as property names (JSONSchemaProps has `oneOf`, `nullable`...), never as keywords.
            let as_keyword = defs
                .values()
                .chain(d["paths"].as_object().unwrap().values())
                .any(|v| keyword(v, &key[1..key.len() - 1]));
            assert!(!as_keyword, "{key}");
        }
        let mut all = Vec::new();
        refs(&d, &mut all);
        assert!(all.len() > 1000);
        for r in &all {
            let name = r.strip_prefix(DEFINITION_PREFIX).unwrap_or_else(|| panic!("{r}"));
            assert!(defs.contains_key(name), "dangling {r}");
        }
    }

    /// Whether `key` is used as a schema keyword under `v` (not as a property's name).
    fn keyword(v: &Value, key: &str) -> bool {
        match v {
            Value::Object(m) => m.iter().any(|(k, x)| {
                if k == "properties" {
                    x.as_object().into_iter().flatten().any(|(_, s)| keyword(s, key))
                } else {
                    k == key || keyword(x, key)
                }
            }),
            Value::Array(a) => a.iter().any(|x| keyword(x, key)),
            _ => false,
        }
    }

    /// apiextensions-apiserver's v2 conversion, rule by rule.
    #[test]
    fn a_crd_schema_converts_as_kube_converts_it() {
        let schema = json!({"type": "object", "required": ["spec"], "properties": {
            "spec": {"type": "object", "required": ["cron", "note", "image"], "properties": {
                "cron": {"type": "string", "pattern": "^\\d+$", "default": "1", "description": "the schedule"},
                "note": {"type": "string", "nullable": true},
                "image": {"type": "string", "minLength": 1, "maxLength": 20},
                "port": {"x-kubernetes-int-or-string": true,
                         "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "either": {"type": "string", "oneOf": [{"pattern": "a"}, {"pattern": "b"}],
                           "allOf": [{"minLength": 1}], "not": {"enum": ["x"]}},
                "list": {"type": "array", "nullable": true, "items": {"type": "string"}},
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                           "properties": {"a": {"type": "string"}}},
                "any": {"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "nullable": true},
                           "required": ["x"]},
                "keys": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                         "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                "flags": {"type": "boolean", "default": false, "x-kubernetes-preserve-unknown-fields": false},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                             "properties": {"spec": {"type": "object"}}},
                "raw": {"type": "object", "x-kubernetes-embedded-resource": true,
                        "x-kubernetes-preserve-unknown-fields": true}}}}});
        let s = crd_schema_v2(&schema).unwrap();
        let spec = &s["properties"]["spec"];
        let p = &spec["properties"];
        assert_eq!(spec["required"], json!(["cron", "image"]), "a nullable property is not required");
        assert_eq!(
            p["cron"],
            json!({"type": "string", "pattern": "^\\d+$", "description": "the schedule"}),
            "defaults pruned"
        );
        assert_eq!(p["note"], json!({}), "nullable: no type");
        assert_eq!(p["port"], json!({"x-kubernetes-int-or-string": true}));
        assert_eq!(p["either"], json!({"type": "string"}), "junctors dropped");
        assert_eq!(p["list"], json!({}), "nullable: no type, no items");
        assert_eq!(p["config"], json!({"x-kubernetes-preserve-unknown-fields": true}));
        assert_eq!(
            p["any"],
            json!({"x-kubernetes-preserve-unknown-fields": true}),
            "an array without items has no type"
        );
        assert_eq!(
            p["labels"],
            json!({"type": "object", "additionalProperties": {}}),
            "nullable additional properties: no type, and nothing required"
        );
        assert_eq!(p["keys"]["x-kubernetes-list-map-keys"], json!(["name"]));
        assert_eq!(p["keys"]["items"]["required"], json!(["name"]));
        assert_eq!(p["flags"], json!({"type": "boolean"}), "false flags are left out");
        let template = &p["template"];
        assert_eq!(template["required"], json!(["kind", "apiVersion"]));
        assert_eq!(template["properties"]["apiVersion"]["description"], EMBEDDED_API_VERSION);
        assert_eq!(template["properties"]["kind"]["type"], "string");
        assert_eq!(template["properties"]["metadata"]["$ref"], format!("{DEFINITION_PREFIX}{OBJECT_META}"));
        assert_eq!(template["properties"]["spec"], json!({"type": "object"}));
        assert_eq!(
            p["raw"],
            json!({"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}),
            "an embedded resource that keeps unknown fields gets no metadata"
        );
        // Where kube publishes `{type: object}` alone.
        assert_eq!(crd_schema_v2(&Value::Null), None);
        assert_eq!(crd_schema_v2(&json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})), None);
    }

    #[test]
    fn custom_resources_join_the_document() {
        let def = crontab_def();
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "cronSpec": {"type": "string", "description": "the schedule"},
            "note": {"type": "string", "nullable": true}}}}});
        let doc = OpenApiV2::new(&[(def, &schema)], 0);
        let d: Value = serde_json::from_slice(&doc.json).unwrap();
        let defs = &d["definitions"];
        let ct = &defs["com.example.stable.v1.CronTab"];
        assert_eq!(ct["properties"]["spec"]["properties"]["cronSpec"]["description"], "the schedule");
        assert_eq!(ct["properties"]["spec"]["properties"]["note"], json!({}));
        assert_eq!(ct["properties"]["metadata"]["$ref"], format!("{DEFINITION_PREFIX}{OBJECT_META}"));
        assert!(ct["properties"]["metadata"].get("allOf").is_none());
        assert_eq!(ct["properties"]["kind"]["type"], "string");
        assert_eq!(ct[GVK], json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}]));
        let list = &defs["com.example.stable.v1.CronTabList"];
        assert_eq!(list["properties"]["items"]["items"]["$ref"], "#/definitions/com.example.stable.v1.CronTab");
        assert_eq!(
            list["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
        );
        // Every path of the group-version's v3 document, and the built-in ones still.
        let v3 = openapi::custom_group_version_document("stable.example.com", "v1", &[(def, &schema)]);
        for url in v3["paths"].as_object().unwrap().keys() {
            assert!(d["paths"].get(url).is_some(), "{url}");
        }
        let scale = &d["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale"]["put"];
        assert_eq!(scale["x-kubernetes-group-version-kind"]["kind"], "Scale");
        assert_eq!(scale["parameters"][0]["schema"]["$ref"], "#/definitions/io.k8s.api.autoscaling.v1.Scale");
        let (_, base) = builtin();
        assert_eq!(
            d["paths"].as_object().unwrap().len(),
            base["paths"].as_object().unwrap().len() + v3["paths"].as_object().unwrap().len()
        );
        assert_eq!(d["definitions"].as_object().unwrap().len(), base["definitions"].as_object().unwrap().len() + 2);
        assert_ne!(doc.hash, OpenApiV2::new(&[], 0).hash);
        assert!(group_version_path("stable.example.com", "v1").starts_with("apis/"));

        // A version that keeps every field: `{type: object}` and its kind, nothing more.
        let free = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let beta = registry::intern_def(ResourceDef { version: "v1beta1", ..*def });
        let doc = OpenApiV2::new(&[(def, &schema), (beta, &free)], 0);
        let d: Value = serde_json::from_slice(&doc.json).unwrap();
        assert_eq!(
            d["definitions"]["com.example.stable.v1beta1.CronTab"],
            json!({"type": "object", GVK: [{"group": "stable.example.com", "kind": "CronTab", "version": "v1beta1"}]})
        );
        assert!(d["paths"].get("/apis/stable.example.com/v1beta1/namespaces/{namespace}/crontabs/{name}").is_some());
    }

    /// The protobuf form says what the JSON says, in gnostic's messages.
    #[test]
    fn protobuf_carries_the_same_document() {
        let def = crontab_def();
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"replicas": {"type": "integer", "minimum": 1, "maximum": 10, "enum": [1, 2]}}}}});
        let doc = OpenApiV2::new(&[(def, &schema)], 0);
        let d: Value = serde_json::from_slice(&doc.json).unwrap();
        let pb = proto::Document::decode(doc.protobuf.as_slice()).unwrap();
        assert_eq!(pb.swagger, "2.0");
        assert_eq!(pb.info.as_ref().unwrap().version, "v1.37.0");
        let paths = &pb.paths.as_ref().unwrap().path;
        let names: Vec<&str> = paths.iter().map(|p| p.name.as_str()).collect();
        let want: Vec<&str> = d["paths"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(names, want);
        let item = paths.iter().find(|p| p.name == "/apis/apps/v1/namespaces/{namespace}/deployments/{name}").unwrap();
        let patch = item.value.as_ref().unwrap().patch.as_ref().unwrap();
        assert_eq!(patch.operation_id, "patchAppsV1NamespacedDeployment");
        let gvk = patch.vendor_extension.iter().find(|e| e.name == GVK).unwrap();
        let yaml = &gvk.value.as_ref().unwrap().yaml;
        assert_eq!(
            serde_json::from_str::<Value>(yaml).unwrap(),
            json!({"group": "apps", "version": "v1", "kind": "Deployment"})
        );
        use proto::parameter::Oneof as P;
        use proto::parameters_item::Oneof as I;
        let Some(I::Parameter(proto::Parameter { oneof: Some(P::BodyParameter(body)) })) = &patch.parameters[0].oneof
        else {
            panic!("{:?}", patch.parameters[0]);
        };
        assert_eq!(body.schema.as_ref().unwrap().r#ref, "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch");
        assert!(body.required);
        let params = &item.value.as_ref().unwrap().parameters;
        let Some(I::Parameter(proto::Parameter { oneof: Some(P::NonBodyParameter(nb)) })) = &params[0].oneof else {
            panic!("{:?}", params[0]);
        };
        let Some(proto::non_body_parameter::Oneof::PathParameterSubSchema(name)) = &nb.oneof else { panic!("{nb:?}") };
        assert_eq!((name.name.as_str(), name.r#type.as_str(), name.required), ("name", "string", true));

        let defs = &pb.definitions.as_ref().unwrap().additional_properties;
        assert_eq!(defs.len(), d["definitions"].as_object().unwrap().len());
        let ct = defs.iter().find(|n| n.name == "com.example.stable.v1.CronTab").unwrap().value.as_ref().unwrap();
        let props = &ct.properties.as_ref().unwrap().additional_properties;
        let spec = props.iter().find(|p| p.name == "spec").unwrap().value.as_ref().unwrap();
        let replicas = &spec.properties.as_ref().unwrap().additional_properties[0].value.as_ref().unwrap();
        assert_eq!(replicas.r#type.as_ref().unwrap().value, ["integer"]);
        assert_eq!((replicas.minimum, replicas.maximum), (1.0, 10.0));
        assert_eq!(replicas.r#enum.iter().map(|a| a.yaml.as_str()).collect::<Vec<_>>(), ["1\n", "2\n"]);
        let meta = props.iter().find(|p| p.name == "metadata").unwrap().value.as_ref().unwrap();
        assert_eq!(meta.r#ref, format!("{DEFINITION_PREFIX}{OBJECT_META}"));
        let labels = defs.iter().find(|n| n.name == "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta").unwrap();
        let labels = labels.value.as_ref().unwrap().properties.as_ref().unwrap();
        let labels = labels.additional_properties.iter().find(|p| p.name == "labels").unwrap().value.as_ref().unwrap();
        use proto::additional_properties_item::Oneof as A;
        let Some(A::Schema(s)) = &labels.additional_properties.as_ref().unwrap().oneof else { panic!() };
        assert_eq!(s.r#type.as_ref().unwrap().value, ["string"]);
        assert_eq!(pb.security_definitions.as_ref().unwrap().additional_properties[0].name, "BearerToken");
        assert_eq!(pb.security[0].additional_properties[0].name, "BearerToken");
        // What is encoded decodes back to the same bytes.
        assert_eq!(pb.encode_to_vec(), doc.protobuf);
    }
}
