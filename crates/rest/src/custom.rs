//! Owns the custom resources this node serves, and what a request on one of them needs.
//!
//! They are derived from the node's own replicated state: the CustomResourceDefinitions in
//! its watch cache. Nothing is process-global (several nodes share one process in the
//! simulator and in the tests): each [`RestState`] holds its own [`CustomResources`], a
//! memo of parsed CRDs keyed by their resourceVersion, so a CRD is parsed (and its schemas
//! prepared) once per version, not once per request. A CRD is served as soon as this node
//! has applied it, and stops being served once it has applied its removal.
//!
//! - [`CustomResources::resolve`]: the served version a path names, as a [`CustomRef`].
//! - [`CustomResources::served`]: every served version, for discovery.
//! - [`CustomResources::openapi`]: the `/openapi/v3` documents with the custom
//!   group-versions, rebuilt only when the set of CRDs changes;
//!   [`CustomResources::openapi_v2`]: the `/openapi/v2` document, likewise.
//! - [`CustomRef`]: the CRD and version a request is on: its schema, storage version,
//!   printer columns and scale paths; [`validate`] checks an object against the schema.
//!
//! Objects are stored at the CRD's storage version and read or written through any served
//! version: with only `apiVersion` rewritten (conversion strategy `None`), or converted by
//! the CRD's conversion webhook ([`crate::conversion`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use kuorum_api::crd::{CustomResourceDefinition, PrinterColumn, ScaleSubresource, Version};
use kuorum_api::registry::{self, compare_versions, ResourceDef};
use kuorum_api::validation::{BadValue, FieldError, FieldErrorKind};
use kuorum_api::ApiError;
use kuorum_schema::openapi::{custom_group_version_document, group_version_path, OpenApiV3};
use kuorum_schema::openapi_v2::OpenApiV2;
use kuorum_schema::Schema;
use kuorum_store::keys::{collection_prefix, ObjectKey};
use kuorum_watch::{Obj, WatchCache, WatchFilter};
use serde_json::Value;

use crate::object::Object;

/// The storage key of the CRD named `name`.
pub(crate) fn crd_key(name: &str) -> String {
    ObjectKey { group: kuorum_api::crd::GROUP, resource: kuorum_api::crd::PLURAL, namespace: None, name }.encode()
}

/// One version of a parsed CRD, ready to serve.
struct PreparedVersion {
    def: &'static ResourceDef,
    /// The version's schema with resource metadata declared
    /// ([`kuorum_schema::custom::resource_schema`]), what objects are checked against.
    schema: Value,
    /// The version's `x-kubernetes-validations`, compiled.
    rules: crate::custom_rules::Rules,
}

/// A parsed CRD with its versions prepared.
pub(crate) struct Crd {
    spec: CustomResourceDefinition,
    versions: Vec<PreparedVersion>,
    /// The registry entry of the storage version.
    storage: Option<&'static ResourceDef>,
}

impl Crd {
    fn prepare(spec: CustomResourceDefinition) -> Crd {
        let versions = spec
            .versions
            .iter()
            .map(|v| PreparedVersion {
                def: spec.resource_def(v),
                schema: kuorum_schema::custom::resource_schema(&v.schema),
                rules: crate::custom_rules::Rules::compile(&v.schema, "").0,
            })
            .collect();
        let storage = spec.storage_version().map(|v| spec.resource_def(v));
        Crd { spec, versions, storage }
    }

    fn served(&self) -> impl Iterator<Item = (&Version, &PreparedVersion)> {
        self.spec.versions.iter().zip(&self.versions).filter(|(v, _)| v.served)
    }
}

/// The CRD and served version a request is on.
#[derive(Clone)]
pub(crate) struct CustomRef {
    crd: Arc<Crd>,
    version: usize,
}

impl std::fmt::Debug for CustomRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CustomRef({} {})", self.crd.spec.name, self.spec().name)
    }
}

impl PartialEq for CustomRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.crd, &other.crd) && self.version == other.version
    }
}

impl Eq for CustomRef {}

impl CustomRef {
    fn spec(&self) -> &Version {
        &self.crd.spec.versions[self.version]
    }

    /// The schema objects of this version are pruned, defaulted and validated with.
    pub(crate) fn schema(&self) -> Schema<'_> {
        Schema::standalone(&self.crd.versions[self.version].schema)
    }

    fn schema_value(&self) -> &Value {
        &self.crd.versions[self.version].schema
    }

    /// The registry entry of the version objects are stored at.
    pub(crate) fn storage_def(&self) -> Option<&'static ResourceDef> {
        self.crd.storage
    }

    /// The printer columns of this version (the default `Age` column when it has none).
    pub(crate) fn columns(&self) -> &[PrinterColumn] {
        &self.spec().columns
    }

    /// The `scale` subresource of this version.
    pub(crate) fn scale(&self) -> Option<&ScaleSubresource> {
        self.spec().scale.as_ref()
    }

    /// Whether the CRD is being deleted.
    pub(crate) fn terminating(&self) -> bool {
        self.crd.spec.terminating
    }

    /// How objects stored at one version are served at another (`spec.conversion`).
    pub(crate) fn conversion(&self) -> &kuorum_api::crd::Conversion {
        &self.crd.spec.conversion
    }

    /// The CRD's other served versions, in its order, with their registry entries: the
    /// resources kube calls equivalent to this one (`matchPolicy: Equivalent`).
    pub(crate) fn equivalents(&self) -> Vec<(&'static ResourceDef, CustomRef)> {
        self.crd
            .spec
            .versions
            .iter()
            .zip(&self.crd.versions)
            .enumerate()
            .filter(|(i, (v, _))| v.served && *i != self.version)
            .map(|(i, (_, p))| (p.def, CustomRef { crd: Arc::clone(&self.crd), version: i }))
            .collect()
    }
}

/// Fills in the `default`s of the custom resource's schema.
pub(crate) fn apply_defaults(c: &CustomRef, obj: &mut Object) {
    let mut value = Value::Object(std::mem::take(obj));
    kuorum_schema::custom::apply_defaults(c.schema_value(), &mut value);
    if let Value::Object(o) = value {
        *obj = o;
    }
}

/// Checks `obj` (over `old`, on an update) against the version's schema, then its
/// validation rules: 422 Invalid with every failing field; the warnings of rules that
/// failed on values the update left unchanged.
pub(crate) fn validate(
    def: &ResourceDef,
    c: &CustomRef,
    obj: &Object,
    old: Option<&Object>,
) -> Result<Vec<String>, ApiError> {
    let value = Value::Object(obj.clone());
    let mut errs = kuorum_schema::custom::validate(c.schema_value(), &value);
    let mut warnings = Vec::new();
    // As kube-apiserver: rules run only on an object that has the schema's shape.
    let blocking = errs.iter().any(|e| {
        matches!(
            e.kind,
            FieldErrorKind::NotSupported(_)
                | FieldErrorKind::Required
                | FieldErrorKind::TooLong
                | FieldErrorKind::TooMany(_)
                | FieldErrorKind::TypeInvalid(_)
        )
    });
    let rules = &c.crd.versions[c.version].rules;
    if blocking {
        if !rules.is_empty() {
            errs.push(FieldError::invalid_value(
                "<nil>",
                BadValue::Raw("null".into()),
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        }
    } else {
        let old = old.map(|o| Value::Object(o.clone()));
        let checked = rules.check(&value, old.as_ref());
        errs.extend(checked.errors);
        warnings = checked.warnings;
    }
    if errs.is_empty() {
        return Ok(warnings);
    }
    let name = crate::object::meta_str(obj, "name").unwrap_or("");
    Err(ApiError::invalid(def.group_kind(), name, &errs))
}

/// The CRDs (name, resourceVersion) a set of documents was built from.
type Fingerprint = Vec<(String, u64)>;

/// The node's custom resources: a memo over the CRDs in its watch cache.
#[derive(Default)]
pub struct CustomResources {
    /// Parsed CRDs by name, each with the resourceVersion it was parsed at.
    parsed: Mutex<HashMap<String, (u64, Arc<Crd>)>>,
    /// The served documents, with the CRDs they were built from.
    openapi: Mutex<Option<(Fingerprint, Arc<OpenApiV3>)>>,
    /// The served `/openapi/v2` document, with the CRDs it was built from.
    openapi_v2: Mutex<Option<(Fingerprint, Arc<OpenApiV2>)>>,
}

impl CustomResources {
    /// The parsed form of the stored CRD `obj` (parsed again only when it changed).
    fn parsed(&self, obj: &Obj) -> Option<Arc<Crd>> {
        let value = obj.value()?;
        let name = value.pointer("/metadata/name").and_then(Value::as_str)?;
        let mut memo = self.parsed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((rv, crd)) = memo.get(name) {
            if *rv == obj.rv {
                return Some(crd.clone());
            }
        }
        let crd = Arc::new(Crd::prepare(CustomResourceDefinition::parse(value)?));
        memo.insert(name.to_string(), (obj.rv, crd.clone()));
        Some(crd)
    }

    /// The served version `(group, version, plural)` of a CRD this node has, if any.
    pub(crate) fn resolve(
        &self,
        cache: &WatchCache,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<(&'static ResourceDef, CustomRef)> {
        if registry::serves_group_version(group, version) {
            // A built-in group-version is not extended (nor listed, see `served`).
            return None;
        }
        let name = format!("{plural}.{group}");
        let Some(obj) = cache.get(&crd_key(&name)).1 else {
            // Gone: forget it.
            self.parsed.lock().unwrap_or_else(|e| e.into_inner()).remove(&name);
            return None;
        };
        let crd = self.parsed(&obj)?;
        if crd.spec.group != group || crd.spec.names.plural != plural {
            return None;
        }
        let index = crd.spec.versions.iter().position(|v| v.name == version && v.served)?;
        let def = crd.versions[index].def;
        Some((def, CustomRef { crd, version: index }))
    }

    /// Every CRD this node has, parsed, in name order.
    fn all(&self, cache: &WatchCache) -> Vec<(u64, Arc<Crd>)> {
        let prefix = collection_prefix(kuorum_api::crd::GROUP, kuorum_api::crd::PLURAL, None);
        let list = cache.list(&WatchFilter::prefix(prefix), None, usize::MAX);
        let crds: Vec<(u64, Arc<Crd>)> =
            list.items.iter().filter_map(|obj| self.parsed(obj).map(|c| (obj.rv, c))).collect();
        let names: Vec<&str> = crds.iter().map(|(_, c)| c.spec.name.as_str()).collect();
        self.parsed.lock().unwrap_or_else(|e| e.into_inner()).retain(|name, _| names.contains(&name.as_str()));
        crds
    }

    /// Every served custom resource version, by group, version priority and plural; none
    /// that would stand in for a built-in group-version.
    pub(crate) fn served(&self, cache: &WatchCache) -> Vec<&'static ResourceDef> {
        let mut out: Vec<&'static ResourceDef> = self
            .all(cache)
            .iter()
            .flat_map(|(_, crd)| crd.served().map(|(_, p)| p.def).collect::<Vec<_>>())
            .filter(|d| !registry::serves_group_version(d.group, d.version))
            .collect();
        out.sort_by(|a, b| {
            a.group.cmp(b.group).then(compare_versions(a.version, b.version)).then(a.plural.cmp(b.plural))
        });
        out
    }

    /// The built-in resources, then the served custom ones: what discovery lists.
    pub(crate) fn with_builtin(&self, cache: &WatchCache) -> Vec<&'static ResourceDef> {
        let mut all = registry::builtin();
        all.extend(self.served(cache));
        all
    }

    /// The `/openapi/v3` documents: the built-in ones and one per custom group-version.
    pub(crate) fn openapi(&self, cache: &WatchCache) -> Arc<OpenApiV3> {
        let crds = self.all(cache);
        let fingerprint: Fingerprint = crds.iter().map(|(rv, c)| (c.spec.name.clone(), *rv)).collect();
        let mut built = self.openapi.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, docs)) = built.as_ref() {
            if *seen == fingerprint {
                return docs.clone();
            }
        }
        let mut by_gv: BTreeMap<(&str, &str), Vec<(&'static ResourceDef, &Value)>> = BTreeMap::new();
        for (_, crd) in &crds {
            for (v, p) in crd.served() {
                if !registry::serves_group_version(p.def.group, p.def.version) {
                    by_gv.entry((p.def.group, p.def.version)).or_default().push((p.def, &v.schema));
                }
            }
        }
        let docs = by_gv.iter().map(|((group, version), resources)| {
            (group_version_path(group, version), custom_group_version_document(group, version, resources))
        });
        let served = Arc::new(OpenApiV3::builtin().with(docs));
        *built = Some((fingerprint, served.clone()));
        served
    }

    /// The `/openapi/v2` document: the built-in resources and every served custom one,
    /// rebuilt only when the set of CRDs changes (`now`: its `Last-Modified`).
    pub(crate) fn openapi_v2(&self, cache: &WatchCache, now: impl FnOnce() -> i64) -> Arc<OpenApiV2> {
        let crds = self.all(cache);
        let fingerprint: Fingerprint = crds.iter().map(|(rv, c)| (c.spec.name.clone(), *rv)).collect();
        let mut built = self.openapi_v2.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, doc)) = built.as_ref() {
            if *seen == fingerprint {
                return doc.clone();
            }
        }
        let custom: Vec<(&'static ResourceDef, &Value)> = crds
            .iter()
            .flat_map(|(_, crd)| crd.served().map(|(v, p)| (p.def, &v.schema)))
            .filter(|(def, _)| !registry::serves_group_version(def.group, def.version))
            .collect();
        let doc = Arc::new(OpenApiV2::new(&custom, now()));
        *built = Some((fingerprint, doc.clone()));
        doc
    }
}
