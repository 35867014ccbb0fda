//! Owns CustomResourceDefinitions (`apiextensions.k8s.io/v1`) as the rest of the server
//! reads them:
//!
//! - [`CustomResourceDefinition::parse`]: a stored CRD's names, scope and versions, each
//!   with its schema, subresources and printer columns, and the registry entry
//!   ([`ResourceDef`]) of each served version;
//! - [`set_defaults`] and [`set_status`]: what kube-apiserver defaults in a CRD, and the
//!   status its naming and establishing controllers give it;
//! - [`validate`]: the checks kube-apiserver makes before storing one, with its field paths
//!   and messages (422 Invalid).
//!
//! ```text
//! widgets.example.com   spec.group example.com, names {plural: widgets, kind: Widget}
//!   versions v1 (served, storage), v1beta1 (served)
//!   -> /apis/example.com/v1/widgets and /apis/example.com/v1beta1/widgets, stored as v1
//! ```
//!
//! kube-apiserver accepts a CRD's names and establishes it asynchronously, in controllers.
//! kuorum decides both when the CRD is written: its names cannot clash with another CRD's
//! (the object name is `plural.group`), so a stored CRD is `Established` at once, in the
//! same log entry, on every node.

use serde_json::{json, Map, Value};

use crate::registry::{self, intern, intern_all, intern_def, ResourceDef, Scope};
use crate::validation::{is_dns1035_label, is_dns1123_subdomain, BadValue, FieldError};

/// The API group of CustomResourceDefinitions.
pub const GROUP: &str = "apiextensions.k8s.io";
/// Their resource name.
pub const PLURAL: &str = "customresourcedefinitions";
/// The finalizer that holds a deleted CRD until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
/// The annotation a CRD in a protected group (`*.k8s.io`, `*.kubernetes.io`) must carry.
pub const API_APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// The types a printer column may have.
const COLUMN_TYPES: &[&str] = &["boolean", "date", "integer", "number", "string"];
/// The formats a printer column may have.
const COLUMN_FORMATS: &[&str] = &["byte", "date", "date-time", "double", "float", "int32", "int64", "password"];
/// The types a schema node may have.
const SCHEMA_TYPES: &[&str] = &["array", "boolean", "integer", "number", "object", "string"];

/// The names of a custom resource.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
}

/// The `scale` subresource of a version: where the replica counts and the selector are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSubresource {
    /// e.g. `.spec.replicas`
    pub spec_replicas_path: String,
    /// e.g. `.status.replicas`
    pub status_replicas_path: String,
    /// e.g. `.status.selector`
    pub label_selector_path: Option<String>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub column_type: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    /// A simple JSONPath: `.spec.replicas`.
    pub json_path: String,
}

/// One entry of `spec.versions`.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    /// `schema.openAPIV3Schema` (`null` when absent).
    pub schema: Value,
    /// Whether the `status` subresource is enabled.
    pub status: bool,
    pub scale: Option<ScaleSubresource>,
    pub columns: Vec<PrinterColumn>,
}

/// `spec.conversion`: how an object stored at one version is served at another.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Conversion {
    /// Only `apiVersion` changes.
    #[default]
    None,
    /// A `ConversionReview` to the webhook converts the objects.
    Webhook {
        /// `webhook.clientConfig`: `url` or `service`, and `caBundle`.
        client_config: Value,
        /// `webhook.conversionReviewVersions`, in the CRD's order of preference.
        review_versions: Vec<String>,
    },
}

/// The `ConversionReview` versions kube-apiserver speaks.
pub const CONVERSION_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A CRD as stored: what serving its resources needs.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomResourceDefinition {
    /// `metadata.name`: `<plural>.<group>`.
    pub name: String,
    pub group: String,
    pub names: Names,
    pub scope: Scope,
    pub versions: Vec<Version>,
    pub conversion: Conversion,
    /// Marked for deletion: its objects are being removed, and no new ones are accepted.
    pub terminating: bool,
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

fn strings_at(v: &Value, ptr: &str) -> Vec<String> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn names_of(v: &Value) -> Names {
    Names {
        plural: str_at(v, "/plural").to_string(),
        singular: str_at(v, "/singular").to_string(),
        kind: str_at(v, "/kind").to_string(),
        list_kind: str_at(v, "/listKind").to_string(),
        short_names: strings_at(v, "/shortNames"),
        categories: strings_at(v, "/categories"),
    }
}

fn version_of(v: &Value) -> Version {
    let scale = v.pointer("/subresources/scale").filter(|s| s.is_object()).map(|s| ScaleSubresource {
        spec_replicas_path: str_at(s, "/specReplicasPath").to_string(),
        status_replicas_path: str_at(s, "/statusReplicasPath").to_string(),
        label_selector_path: s.get("labelSelectorPath").and_then(Value::as_str).map(str::to_string),
    });
    let columns = v
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| PrinterColumn {
            name: str_at(c, "/name").to_string(),
            column_type: str_at(c, "/type").to_string(),
            format: str_at(c, "/format").to_string(),
            description: str_at(c, "/description").to_string(),
            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
            json_path: str_at(c, "/jsonPath").to_string(),
        })
        .collect();
    Version {
        name: str_at(v, "/name").to_string(),
        served: v.get("served").and_then(Value::as_bool).unwrap_or(false),
        storage: v.get("storage").and_then(Value::as_bool).unwrap_or(false),
        schema: v.pointer("/schema/openAPIV3Schema").cloned().unwrap_or(Value::Null),
        status: v.pointer("/subresources/status").is_some_and(Value::is_object),
        scale,
        columns,
    }
}

fn conversion_of(spec: &Value) -> Conversion {
    match str_at(spec, "/conversion/strategy") {
        "Webhook" => Conversion::Webhook {
            client_config: spec.pointer("/conversion/webhook/clientConfig").cloned().unwrap_or(Value::Null),
            review_versions: strings_at(spec, "/conversion/webhook/conversionReviewVersions"),
        },
        _ => Conversion::None,
    }
}

impl CustomResourceDefinition {
    /// Reads a stored CRD; `None` if it lacks what serving it needs (a group, plural and
    /// kind, a scope), which a validated CRD never does.
    pub fn parse(crd: &Value) -> Option<CustomResourceDefinition> {
        let spec = crd.get("spec")?;
        let mut names = names_of(spec.get("names")?);
        if names.singular.is_empty() {
            names.singular = names.kind.to_lowercase();
        }
        if names.list_kind.is_empty() {
            names.list_kind = format!("{}List", names.kind);
        }
        let scope = match str_at(spec, "/scope") {
            "Namespaced" => Scope::Namespaced,
            "Cluster" => Scope::Cluster,
            _ => return None,
        };
        let group = str_at(spec, "/group").to_string();
        if group.is_empty() || names.plural.is_empty() || names.kind.is_empty() {
            return None;
        }
        let versions = spec.get("versions").and_then(Value::as_array).into_iter().flatten().map(version_of).collect();
        Some(CustomResourceDefinition {
            name: str_at(crd, "/metadata/name").to_string(),
            group,
            names,
            scope,
            versions,
            conversion: conversion_of(spec),
            terminating: crd.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()),
        })
    }

    /// The version named `name`.
    pub fn version(&self, name: &str) -> Option<&Version> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// The version objects are stored at.
    pub fn storage_version(&self) -> Option<&Version> {
        self.versions.iter().find(|v| v.storage)
    }

    /// The registry entry of `version` (interned: the same CRD version always gives the
    /// same `&'static` entry).
    pub fn resource_def(&self, version: &Version) -> &'static ResourceDef {
        intern_def(ResourceDef {
            group: intern(&self.group),
            version: intern(&version.name),
            kind: intern(&self.names.kind),
            plural: intern(&self.names.plural),
            singular: intern(&self.names.singular),
            scope: self.scope,
            verbs: registry::ALL_VERBS,
            short_names: intern_all(&self.names.short_names),
            categories: intern_all(&self.names.categories),
            subresources: registry::custom_subresources(version.status, version.scale.is_some()),
            list_kind: intern(&self.names.list_kind),
            tracks_generation: true,
        })
    }
}

fn child_object<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = m.entry(key).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    match entry {
        Value::Object(o) => o,
        _ => unreachable!("made an object above"),
    }
}

/// kube-apiserver's defaults for a CRD (`SetDefaults_CustomResourceDefinitionSpec`):
/// `names.singular` is the lower-cased kind, `names.listKind` is `<kind>List`, and
/// `conversion` is `{strategy: None}`.
pub fn set_defaults(crd: &mut Map<String, Value>) {
    let spec = child_object(crd, "spec");
    if !spec.get("conversion").is_some_and(Value::is_object) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    let names = child_object(spec, "names");
    let kind = names.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    if kind.is_empty() {
        return;
    }
    if names.get("singular").and_then(Value::as_str).unwrap_or("").is_empty() {
        names.insert("singular".into(), Value::from(kind.to_lowercase()));
    }
    if names.get("listKind").and_then(Value::as_str).unwrap_or("").is_empty() {
        names.insert("listKind".into(), Value::from(format!("{kind}List")));
    }
}

/// One status condition; `since` is when its status last changed.
fn condition(kind: &str, status: &str, reason: &str, message: &str, since: &str) -> Value {
    json!({"type": kind, "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
}

/// Sets `cond` in `conditions`, keeping the old `lastTransitionTime` if its status is the same.
pub fn set_condition(conditions: &mut Vec<Value>, mut cond: Value) {
    let kind = cond["type"].clone();
    match conditions.iter_mut().find(|c| c["type"] == kind) {
        Some(old) => {
            if old["status"] == cond["status"] {
                cond["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
            *old = cond;
        }
        None => conditions.push(cond),
    }
}

/// The status of a CRD about to be stored, from the one it had (`old`, none on create):
/// its names accepted, `NamesAccepted` and `Established` true, and the storage version
/// added to `storedVersions` (which keeps every version objects were ever stored at).
/// Other conditions (`Terminating`) are kept.
pub fn set_status(crd: &mut Map<String, Value>, old: Option<&Value>, now: &str) {
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let mut accepted = Map::new();
    if let Some(Value::Object(names)) = spec.get("names") {
        for key in ["plural", "singular", "shortNames", "kind", "listKind", "categories"] {
            if let Some(v) = names.get(key) {
                accepted.insert(key.into(), v.clone());
            }
        }
    }
    let mut conditions: Vec<Value> =
        old.and_then(|s| s.get("conditions")).and_then(Value::as_array).cloned().unwrap_or_default();
    set_condition(&mut conditions, condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", now));
    set_condition(
        &mut conditions,
        condition("Established", "True", "InitialNamesAccepted", "the initial names have been accepted", now),
    );
    let mut stored: Vec<Value> =
        old.and_then(|s| s.get("storedVersions")).and_then(Value::as_array).cloned().unwrap_or_default();
    let storage = spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").cloned());
    if let Some(name) = storage {
        if !stored.contains(&name) {
            stored.push(name);
        }
    }
    crd.insert(
        "status".into(),
        json!({"conditions": conditions, "acceptedNames": Value::Object(accepted), "storedVersions": stored}),
    );
}

/// The condition the deletion controller sets while it removes a CRD's objects.
pub fn terminating_condition(now: &str) -> Value {
    condition("Terminating", "True", "InstanceDeletionInProgress", "CustomResource deletion is in progress", now)
}

/// A value as a field error shows it when it is not a scalar: its JSON.
fn json_value(v: Option<&Value>) -> BadValue {
    match v {
        None | Some(Value::Null) => BadValue::Raw("null".into()),
        Some(v @ (Value::Array(_) | Value::Object(_))) => BadValue::Raw(v.to_string()),
        Some(v) => BadValue::of_json(v),
    }
}

/// kube-apiserver's checks on a CRD about to be stored (`ValidateCustomResourceDefinition`,
/// and `...Update` against `old`): the essentials of metadata, spec and status, each a
/// field error with kube's path and message. Empty when the CRD may be stored.
pub fn validate(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let group = str_at(&spec, "/group");
    let names = spec.get("names").map(names_of).unwrap_or_default();

    // metadata
    let name = str_at(crd, "/metadata/name");
    if name.is_empty() {
        errs.push(FieldError::required("metadata.name", "name or generateName is required"));
    } else {
        let mut problems = is_dns1123_subdomain(name);
        if name != format!("{}.{group}", names.plural) {
            problems.push("must be spec.names.plural+\".\"+spec.group".into());
        }
        for p in problems {
            errs.push(FieldError::invalid("metadata.name", name, p));
        }
    }

    // spec.group, spec.scope
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if let problems @ [_, ..] = is_dns1123_subdomain(group).as_slice() {
        errs.push(FieldError::invalid("spec.group", group, problems.join(",")));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid("spec.group", group, "should be a domain with at least one dot"));
    }
    match str_at(&spec, "/scope") {
        "" => errs.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errs.push(FieldError::not_supported("spec.scope", other, &["Cluster", "Namespaced"])),
    }

    // spec.versions
    let versions: Vec<&Value> = spec.get("versions").and_then(Value::as_array).into_iter().flatten().collect();
    let mut seen: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let vname = str_at(v, "/name");
        if seen.contains(&vname) {
            unique = false;
        }
        seen.push(vname);
        let problems = is_dns1035_label(vname);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(&format!("{path}.name"), vname, problems.join(",")));
        }
        let version = version_of(v);
        match v.pointer("/schema/openAPIV3Schema") {
            None | Some(Value::Null) => {
                errs.push(FieldError::required(&format!("{path}.schema.openAPIV3Schema"), "schemas are required"))
            }
            Some(schema) => {
                validate_schema(schema, &format!("{path}.schema.openAPIV3Schema"), version.status, &mut errs)
            }
        }
        if let Some(scale) = &version.scale {
            let sp = format!("{path}.subresources.scale");
            validate_scale_path(&scale.spec_replicas_path, ".spec", &format!("{sp}.specReplicasPath"), &mut errs);
            validate_scale_path(&scale.status_replicas_path, ".status", &format!("{sp}.statusReplicasPath"), &mut errs);
            if let Some(sel) = &scale.label_selector_path {
                if !sel.starts_with(".spec.") && !sel.starts_with(".status.") {
                    errs.push(FieldError::invalid(
                        &format!("{sp}.labelSelectorPath"),
                        sel,
                        "should be a json path under either .spec or .status",
                    ));
                }
            }
        }
        for (j, c) in version.columns.iter().enumerate() {
            validate_column(c, &format!("{path}.additionalPrinterColumns[{j}]"), &mut errs);
        }
    }
    let versions_value = || json_value(spec.get("versions"));
    if !unique {
        errs.push(FieldError::invalid_value("spec.versions", versions_value(), "must contain unique version names"));
    }
    if versions.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true)).count() != 1 {
        errs.push(FieldError::invalid_value(
            "spec.versions",
            versions_value(),
            "must have exactly one version marked as storage version",
        ));
    }

    validate_conversion(&spec, &mut errs);

    // spec.names
    for (value, field) in [
        (&names.plural, "plural"),
        (&names.singular, "singular"),
        (&names.kind, "kind"),
        (&names.list_kind, "listKind"),
    ] {
        if value.is_empty() {
            errs.push(FieldError::required(&format!("spec.names.{field}"), ""));
        }
    }
    validate_names(&names, "spec.names", &mut errs);

    // An update may not move the objects: scope, kind, group and plural stay.
    if let Some(old) = old {
        let old_spec = old.get("spec").cloned().unwrap_or(Value::Null);
        for (ptr, field) in [
            ("/scope", "spec.scope"),
            ("/names/kind", "spec.names.kind"),
            ("/group", "spec.group"),
            ("/names/plural", "spec.names.plural"),
        ] {
            let (new_v, old_v) = (str_at(&spec, ptr), str_at(&old_spec, ptr));
            if new_v != old_v {
                errs.push(FieldError::invalid(field, new_v, "field is immutable"));
            }
        }
    }

    // status.storedVersions: every version ever stored must still be listed.
    let stored = strings_at(crd, "/status/storedVersions");
    if crd.pointer("/status/storedVersions").is_some() {
        for (i, v) in stored.iter().enumerate() {
            if !seen.contains(&v.as_str()) {
                errs.push(FieldError::invalid(
                    &format!("status.storedVersions[{i}]"),
                    v,
                    "must appear in spec.versions",
                ));
            }
        }
    }

    // Protected groups need an approval.
    if group == "k8s.io" || group.ends_with(".k8s.io") || group == "kubernetes.io" || group.ends_with(".kubernetes.io")
    {
        let annotation = crd.pointer(&format!("/metadata/annotations/{API_APPROVAL_ANNOTATION}"));
        if annotation.and_then(Value::as_str).unwrap_or("").is_empty() {
            errs.push(FieldError::required(
                &format!("metadata.annotations[{API_APPROVAL_ANNOTATION}]"),
                format!(
                    "protected groups must have approval annotation {API_APPROVAL_ANNOTATION:?}, see \
                     https://github.com/kubernetes/enhancements/pull/1111"
                ),
            ));
        }
    }
    errs
}

/// `validateCustomResourceConversion`. Paths are kube's, which name the fields of its
/// internal form: `spec.conversion.webhookClientConfig` for v1's
/// `spec.conversion.webhook.clientConfig`.
fn validate_conversion(spec: &Value, errs: &mut Vec<FieldError>) {
    let Some(conversion) = spec.get("conversion").filter(|c| !c.is_null()) else { return };
    let strategy = str_at(conversion, "/strategy");
    match strategy {
        "" => errs.push(FieldError::required("spec.conversion.strategy", "")),
        "None" | "Webhook" => {}
        other => errs.push(FieldError::not_supported("spec.conversion.strategy", other, &["None", "Webhook"])),
    }
    let client_config = conversion.pointer("/webhook/clientConfig").filter(|c| !c.is_null());
    let review_versions = conversion.pointer("/webhook/conversionReviewVersions").and_then(Value::as_array);
    if strategy != "Webhook" {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                "spec.conversion.webhookClientConfig",
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if review_versions.is_some_and(|v| !v.is_empty()) {
            errs.push(FieldError::forbidden(
                "spec.conversion.conversionReviewVersions",
                "should not be set when strategy is not set to Webhook",
            ));
        }
        return;
    }
    const CC: &str = "spec.conversion.webhookClientConfig";
    match client_config {
        None => errs.push(FieldError::required(CC, "required when strategy is set to Webhook")),
        Some(cc) => match (cc.get("url").and_then(Value::as_str), cc.get("service").filter(|s| !s.is_null())) {
            (Some(url), None) => {
                if !url.starts_with("https://") {
                    errs.push(FieldError::invalid(&format!("{CC}.url"), url, "'https' is the only allowed URL scheme"));
                }
            }
            (None, Some(service)) => {
                for field in ["name", "namespace"] {
                    if str_at(service, &format!("/{field}")).is_empty() {
                        errs.push(FieldError::required(
                            &format!("{CC}.service.{field}"),
                            format!("service {field} is required"),
                        ));
                    }
                }
            }
            _ => errs.push(FieldError::required(CC, "exactly one of url or service is required")),
        },
    }
    const VERSIONS: &str = "spec.conversion.conversionReviewVersions";
    let versions: Vec<&str> = review_versions.into_iter().flatten().filter_map(Value::as_str).collect();
    if versions.is_empty() {
        errs.push(FieldError::required(VERSIONS, ""));
    } else if !versions.iter().any(|v| CONVERSION_REVIEW_VERSIONS.contains(v)) {
        errs.push(FieldError::invalid_value(
            VERSIONS,
            json_value(conversion.pointer("/webhook/conversionReviewVersions")),
            format!("must include at least one of {}", CONVERSION_REVIEW_VERSIONS.join(", ")),
        ));
    }
}

/// `ValidateCustomResourceDefinitionNames`.
fn validate_names(names: &Names, path: &str, errs: &mut Vec<FieldError>) {
    for (value, field, mixed_case) in [
        (&names.plural, "plural", false),
        (&names.singular, "singular", false),
        (&names.kind, "kind", true),
        (&names.list_kind, "listKind", true),
    ] {
        if value.is_empty() {
            continue;
        }
        let problems = is_dns1035_label(&if mixed_case { value.to_lowercase() } else { value.clone() });
        if !problems.is_empty() {
            let detail = problems.join(",");
            let detail =
                if mixed_case { format!("may have mixed case, but should otherwise match: {detail}") } else { detail };
            errs.push(FieldError::invalid(&format!("{path}.{field}"), value, detail));
        }
    }
    for (list, field) in [(&names.short_names, "shortNames"), (&names.categories, "categories")] {
        for (i, s) in list.iter().enumerate() {
            let problems = is_dns1035_label(s);
            if !problems.is_empty() {
                errs.push(FieldError::invalid(&format!("{path}.{field}[{i}]"), s, problems.join(",")));
            }
        }
    }
    if !names.kind.is_empty() && names.kind == names.list_kind {
        errs.push(FieldError::invalid(
            &format!("{path}.listKind"),
            &names.list_kind,
            "kind and listKind may not be the same",
        ));
    }
}

fn validate_scale_path(p: &str, under: &str, field: &str, errs: &mut Vec<FieldError>) {
    if p.is_empty() {
        errs.push(FieldError::required(field, ""));
    } else if !p.starts_with(&format!("{under}.")) || !is_simple_json_path(p) {
        errs.push(FieldError::invalid(field, p, format!("should be a json path under {under}")));
    }
}

/// `.a.b.c`: what printer columns and scale paths may use.
pub fn is_simple_json_path(p: &str) -> bool {
    p.strip_prefix('.').is_some_and(|rest| !rest.is_empty() && rest.split('.').all(|s| !s.is_empty()))
}

/// `ValidateCustomResourceColumnDefinition`.
fn validate_column(c: &PrinterColumn, path: &str, errs: &mut Vec<FieldError>) {
    if c.name.is_empty() {
        errs.push(FieldError::required(&format!("{path}.name"), ""));
    }
    let types = COLUMN_TYPES.join(",");
    if c.column_type.is_empty() {
        errs.push(FieldError::required(&format!("{path}.type"), format!("must be one of {types}")));
    } else if !COLUMN_TYPES.contains(&c.column_type.as_str()) {
        errs.push(FieldError::invalid(&format!("{path}.type"), &c.column_type, format!("must be one of {types}")));
    }
    if !c.format.is_empty() && !COLUMN_FORMATS.contains(&c.format.as_str()) {
        errs.push(FieldError::invalid(
            &format!("{path}.format"),
            &c.format,
            format!("must be one of {}", COLUMN_FORMATS.join(",")),
        ));
    }
    if c.json_path.is_empty() {
        errs.push(FieldError::required(&format!("{path}.JSONPath"), ""));
    } else if !is_simple_json_path(&c.json_path) {
        errs.push(FieldError::invalid(
            &format!("{path}.JSONPath"),
            &c.json_path,
            "must be a simple json path starting with .",
        ));
    }
}

/// Where a schema node sits, for the message about its missing type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Field,
    Item,
}

/// The structural-schema rules kube-apiserver enforces on a version's `openAPIV3Schema`:
/// an object at the root, a known type on every node (unless it is int-or-string, an
/// embedded resource, or preserves unknown fields), `items` on every array, and
/// `properties` and `additionalProperties` not together.
fn validate_schema(schema: &Value, path: &str, status_enabled: bool, errs: &mut Vec<FieldError>) {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {}
        None | Some("") => errs.push(FieldError::required(&format!("{path}.type"), "must not be empty at the root")),
        Some(other) if status_enabled => errs.push(FieldError::invalid(
            &format!("{path}.type"),
            other,
            "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
        )),
        Some(other) => errs.push(FieldError::invalid(&format!("{path}.type"), other, "must be object at the root")),
    }
    if schema.get("nullable").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::forbidden(&format!("{path}.nullable"), "nullable cannot be true at the root"));
    }
    validate_node(schema, path, Level::Root, errs);
}

fn validate_node(node: &Value, path: &str, level: Level, errs: &mut Vec<FieldError>) {
    let flag = |k: &str| node.get(k).and_then(Value::as_bool) == Some(true);
    let ty = node.get("type").and_then(Value::as_str).unwrap_or("");
    if level != Level::Root {
        if ty.is_empty() {
            if !flag("x-kubernetes-int-or-string")
                && !flag("x-kubernetes-embedded-resource")
                && !flag("x-kubernetes-preserve-unknown-fields")
            {
                let detail = match level {
                    Level::Item => "must not be empty for specified array items",
                    _ => "must not be empty for specified object fields",
                };
                errs.push(FieldError::required(&format!("{path}.type"), detail));
            }
        } else if !SCHEMA_TYPES.contains(&ty) {
            errs.push(FieldError::not_supported(&format!("{path}.type"), ty, SCHEMA_TYPES));
        }
    }
    if ty == "array" && node.get("items").is_none() {
        errs.push(FieldError::required(&format!("{path}.items"), "must be specified"));
    }
    let properties = node.get("properties").and_then(Value::as_object);
    if let Some(extra) = node.get("additionalProperties") {
        if properties.is_some_and(|p| !p.is_empty()) && extra != &Value::Bool(true) {
            errs.push(FieldError::forbidden(
                &format!("{path}.additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if extra.is_object() {
            validate_node(extra, &format!("{path}.additionalProperties"), Level::Field, errs);
        }
    }
    for (key, child) in properties.into_iter().flatten() {
        validate_node(child, &format!("{path}.properties[{key}]"), Level::Field, errs);
    }
    if let Some(items) = node.get("items").filter(|i| i.is_object()) {
        validate_node(items, &format!("{path}.items"), Level::Item, errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget() -> Value {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}},
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
                     "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]},
                    {"name": "v1beta1", "served": true, "storage": false,
                     "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
                ]
            }
        });
        set_defaults(crd.as_object_mut().unwrap());
        crd
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::to_string).collect()
    }

    #[test]
    fn a_crd_parses_into_its_versions() {
        let crd = widget();
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        let c = CustomResourceDefinition::parse(&crd).unwrap();
        assert_eq!(
            (c.name.as_str(), c.group.as_str(), c.scope),
            ("widgets.example.com", "example.com", Scope::Namespaced)
        );
        assert_eq!((c.names.singular.as_str(), c.names.list_kind.as_str()), ("widget", "WidgetList"));
        assert_eq!(c.storage_version().unwrap().name, "v1");
        let v1 = c.version("v1").unwrap();
        assert!(v1.status);
        assert_eq!(v1.scale.as_ref().unwrap().label_selector_path.as_deref(), Some(".status.selector"));
        assert_eq!(v1.columns[0].json_path, ".spec.replicas");
        let def = c.resource_def(v1);
        assert_eq!((def.api_version(), def.kind, def.plural), ("example.com/v1".to_string(), "Widget", "widgets"));
        assert_eq!(def.short_names, ["wd"]);
        assert!(def.subresource("scale").is_some() && def.subresource("status").is_some());
        assert!(std::ptr::eq(def, c.resource_def(v1)), "interned");
        let beta = c.resource_def(c.version("v1beta1").unwrap());
        assert!(beta.subresources.is_empty());
        assert!(!c.terminating);
        assert!(validate(&crd, None).is_empty(), "{:?}", messages(&validate(&crd, None)));
    }

    #[test]
    fn webhook_conversion_parses_and_is_checked_with_kubes_paths() {
        let mut crd = widget();
        crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://conv.example.com/convert", "caBundle": "Zm9v"},
            "conversionReviewVersions": ["v2", "v1"]}});
        assert!(validate(&crd, None).is_empty(), "{:?}", messages(&validate(&crd, None)));
        let c = CustomResourceDefinition::parse(&crd).unwrap();
        let Conversion::Webhook { client_config, review_versions } = &c.conversion else {
            panic!("{:?}", c.conversion)
        };
        assert_eq!(client_config["url"], "https://conv.example.com/convert");
        assert_eq!(review_versions, &["v2", "v1"]);

        crd["spec"]["conversion"]["webhook"] = json!({"clientConfig": {"url": "http://x", "service": {"name": "s"}},
            "conversionReviewVersions": ["v2"]});
        assert_eq!(
            messages(&validate(&crd, None)),
            [
                "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required",
                "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
            ]
        );
        crd["spec"]["conversion"]["webhook"] = json!({"clientConfig": {"service": {"name": "s"}}});
        assert_eq!(
            messages(&validate(&crd, None)),
            [
                "spec.conversion.webhookClientConfig.service.namespace: Required value: service namespace is required",
                "spec.conversion.conversionReviewVersions: Required value",
            ]
        );
        crd["spec"]["conversion"]["strategy"] = json!("None");
        crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = json!(["v1"]);
        assert_eq!(
            messages(&validate(&crd, None)),
            [
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to \
                 Webhook",
            ]
        );
        assert_eq!(CustomResourceDefinition::parse(&crd).unwrap().conversion, Conversion::None);
        crd["spec"]["conversion"] = json!({"strategy": "Magic"});
        assert_eq!(
            messages(&validate(&crd, None)),
            ["spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""]
        );
    }

    #[test]
    fn status_accepts_names_and_records_stored_versions() {
        let mut crd = widget();
        let o = crd.as_object_mut().unwrap();
        set_status(o, None, "2026-01-01T00:00:00Z");
        let status = o["status"].clone();
        assert_eq!(status["acceptedNames"]["kind"], "Widget");
        assert_eq!(status["acceptedNames"]["listKind"], "WidgetList");
        assert_eq!(status["storedVersions"], json!(["v1"]));
        let types: Vec<&str> =
            status["conditions"].as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["NamesAccepted", "Established"]);
        assert_eq!(status["conditions"][1]["status"], "True");
        // A new storage version joins the stored ones; transition times stay.
        o["spec"]["versions"][0]["storage"] = json!(false);
        o["spec"]["versions"][1]["storage"] = json!(true);
        set_status(o, Some(&status), "2027-01-01T00:00:00Z");
        assert_eq!(o["status"]["storedVersions"], json!(["v1", "v1beta1"]));
        assert_eq!(o["status"]["conditions"][1]["lastTransitionTime"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn the_essentials_are_checked_with_kubes_messages() {
        let mut bad = widget();
        bad["metadata"]["name"] = json!("gadgets.example.com");
        bad["spec"]["scope"] = json!("Global");
        bad["spec"]["versions"][1]["storage"] = json!(true);
        bad["spec"]["names"]["kind"] = json!("");
        assert_eq!(
            messages(&validate(&bad, None)),
            [
                "metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group",
                "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
                format!(
                    "spec.versions: Invalid value: {}: must have exactly one version marked as storage version",
                    bad["spec"]["versions"]
                )
                .as_str(),
                "spec.names.kind: Required value",
            ]
        );
        let mut bad = widget();
        bad["spec"]["group"] = json!("example");
        bad["metadata"]["name"] = json!("widgets.example");
        bad["spec"]["versions"][1]["name"] = json!("v1");
        bad["spec"]["versions"][0]["schema"] = json!(null);
        bad["spec"]["versions"][1]["schema"]["openAPIV3Schema"] =
            json!({"type": "object", "properties": {"a": {}, "b": {"type": "array"}, "c": {"type": "strin"}}});
        let got = messages(&validate(&bad, None));
        assert_eq!(got[0], "spec.group: Invalid value: \"example\": should be a domain with at least one dot");
        assert_eq!(got[1], "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required");
        assert_eq!(
            &got[2..5],
            [
                "spec.versions[1].schema.openAPIV3Schema.properties[a].type: Required value: must not be empty for \
                 specified object fields",
                "spec.versions[1].schema.openAPIV3Schema.properties[b].items: Required value: must be specified",
                "spec.versions[1].schema.openAPIV3Schema.properties[c].type: Unsupported value: \"strin\": supported \
                 values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            ]
        );
        assert!(
            got[5].starts_with("spec.versions: Invalid value: ")
                && got[5].ends_with("must contain unique version names")
        );
        let mut root = widget();
        root["spec"]["versions"][1]["schema"]["openAPIV3Schema"] = json!({"type": "string"});
        assert_eq!(
            messages(&validate(&root, None)),
            ["spec.versions[1].schema.openAPIV3Schema.type: Invalid value: \"string\": must be object at the root"]
        );
    }

    #[test]
    fn updates_keep_what_locates_the_objects() {
        let old = widget();
        let mut new = widget();
        new["spec"]["scope"] = json!("Cluster");
        new["status"] = json!({"storedVersions": ["v1", "v0"]});
        assert_eq!(
            messages(&validate(&new, Some(&old))),
            [
                "spec.scope: Invalid value: \"Cluster\": field is immutable",
                "status.storedVersions[1]: Invalid value: \"v0\": must appear in spec.versions",
            ]
        );
        let mut k8s = widget();
        k8s["metadata"]["name"] = json!("widgets.x.k8s.io");
        k8s["spec"]["group"] = json!("x.k8s.io");
        assert_eq!(messages(&validate(&k8s, None)).len(), 1);
        k8s["metadata"]["annotations"] =
            json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"});
        assert!(validate(&k8s, None).is_empty());
    }

    #[test]
    fn printer_columns_and_scale_paths() {
        let mut bad = widget();
        bad["spec"]["versions"][0]["additionalPrinterColumns"] = json!([{"name": "", "type": "int", "jsonPath": "spec.x"}, {"name": "A", "type": "date", "format": "x", "jsonPath": ".a"}]);
        bad["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = json!(".status.replicas");
        assert_eq!(
            messages(&validate(&bad, None)),
            [
                "spec.versions[0].subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
                "spec.versions[0].additionalPrinterColumns[0].name: Required value",
                "spec.versions[0].additionalPrinterColumns[0].type: Invalid value: \"int\": must be one of boolean,date,integer,number,string",
                "spec.versions[0].additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.x\": must be a simple json path starting with .",
                "spec.versions[0].additionalPrinterColumns[1].format: Invalid value: \"x\": must be one of byte,date,date-time,double,float,int32,int64,password",
            ]
        );
        assert!(is_simple_json_path(".spec.replicas"));
        assert!(!is_simple_json_path(".spec..x") && !is_simple_json_path(".") && !is_simple_json_path("spec"));
    }
}
