//! What a resource path names, and the request a verb handler is given: [`Target`] (the
//! resource, namespace, name and subresource, with the kind's strategy and storage), the
//! [`target`] a parsed path resolves to, and [`Ctx`]. A leaf: the verb handlers and the
//! router read it, it reads none of them.
//!
//! Paths under `/api/v1/` and `/apis/{group}/{version}/`:
//!
//! ```text
//! {resource}                                  collection (cluster-scoped, or all namespaces)
//! {resource}/{name}[/{sub}]                   cluster-scoped object
//! namespaces/{ns}/{resource}                  namespaced collection
//! namespaces/{ns}/{resource}/{name}[/{sub}]   namespaced object
//! namespaces/{name}[/status|/finalize]        the Namespace object itself
//! ```

use axum::body::Body;
use axum::http::HeaderMap;
use kuorum_api::kinds::{self, Strategy};
use kuorum_api::registry::{self, ResourceDef};
use kuorum_api::validation::{is_valid_path_segment_name, NameRule};
use kuorum_api::ApiError;
use kuorum_schema::{Schema, Schemas};

use crate::auth::UserInfo;
use crate::custom::CustomRef;
use crate::query::Query;
use crate::request::ResourcePath;

/// What a resource path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    pub def: &'static ResourceDef,
    /// The namespace in the path; `None` for cluster-scoped resources and for
    /// all-namespaces collections.
    pub namespace: Option<String>,
    /// The object name; `None` for a collection.
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// The CRD and version, for a custom resource.
    pub custom: Option<CustomRef>,
}

impl Target {
    /// The object name, or `""` for a collection.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// The storage key of the named object (under its stored kind's resource).
    pub fn key(&self) -> String {
        crate::object::key(self.storage_def(), self.namespace.as_deref(), self.name())
    }

    /// The schema of the resource's objects: the built-in kind's, or the custom resource
    /// version's.
    pub fn schema(&self) -> Option<Schema<'_>> {
        match &self.custom {
            Some(c) => Some(c.schema()),
            None => Schemas::builtin().kind(self.def.group, self.def.version, self.def.kind),
        }
    }

    /// What is special about a built-in kind; `None` for a custom resource, whose CRD says
    /// what is special about it.
    pub fn strategy(&self) -> Option<&'static dyn Strategy> {
        match self.custom {
            Some(_) => None,
            None => kinds::of(self.def),
        }
    }

    /// The rule the object names must follow: the kind's, or a DNS subdomain for custom
    /// resources.
    pub fn name_rule(&self) -> NameRule {
        self.strategy().map_or(NameRule::Dns1123Subdomain, |s| s.name_rule())
    }

    /// The fields besides the name and namespace a field selector may name.
    pub fn selectable_fields(&self) -> &'static [&'static str] {
        self.strategy().map_or(&[], |s| s.selectable_fields())
    }

    /// What holds a deletion of the objects back and what marking one sets
    /// ([`Strategy::finalizing`]); nothing special for a custom resource.
    pub fn finalizing(&self) -> kinds::Finalizing {
        self.strategy().map(|s| s.finalizing()).unwrap_or_default()
    }

    /// The version objects are stored at: the resource's own, the kind's stored version
    /// ([`Strategy::stored_as`]), or the CRD's storage version.
    pub fn storage_def(&self) -> &'static ResourceDef {
        match &self.custom {
            Some(c) => c.storage_def().unwrap_or(self.def),
            None => kinds::storage_def(self.def),
        }
    }

    /// The resources kube calls equivalent to this one, as targets of the same object: a
    /// CRD's other served versions, in its order; for a built-in kind, the other resources
    /// stored as the same kind (autoscaling/v1 and v2 HorizontalPodAutoscalers, core and
    /// events.k8s.io Events), the stored one first (`matchPolicy: Equivalent`).
    pub(crate) fn equivalents(&self) -> Vec<Target> {
        let same = |def, custom| Target { def, custom, ..self.clone() };
        if let Some(c) = &self.custom {
            return c.equivalents().into_iter().map(|(def, custom)| same(def, Some(custom))).collect();
        }
        let storage = kinds::storage_def(self.def);
        let mut defs: Vec<&'static ResourceDef> = kinds::all()
            .iter()
            .filter_map(|s| {
                let (def, stored) = (s.def(), s.stored_as().map_or(s.def(), |k| k.def()));
                (!std::ptr::eq(def, self.def) && std::ptr::eq(stored, storage)).then_some(def)
            })
            .collect();
        defs.sort_by_key(|d| !std::ptr::eq(*d, storage));
        defs.into_iter().map(|d| same(d, None)).collect()
    }
}

/// How a path's group, version and resource are found: the built-in registry first, then
/// the node's custom resources.
pub(crate) type Resolve<'a> = &'a dyn Fn(&str, &str, &str) -> Option<(&'static ResourceDef, Option<CustomRef>)>;

/// The built-in resources only.
pub(crate) fn builtin(group: &str, version: &str, plural: &str) -> Option<(&'static ResourceDef, Option<CustomRef>)> {
    registry::lookup(group, version, plural).map(|d| (d, None))
}

/// A request on its way to a verb handler.
pub(crate) struct Ctx {
    pub target: Target,
    pub query: Query,
    pub headers: HeaderMap,
    pub body: Body,
    /// Who asks, as authentication (and impersonation) found it (none on the open paths).
    pub user: Option<UserInfo>,
    /// The user's `extra` (a service account token's pod and node, impersonated extras).
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// The target a resource path names (404 NotFound when it names nothing `resolve` finds).
pub(crate) fn target(r: &ResourcePath, resolve: Resolve<'_>) -> Result<Target, ApiError> {
    if r.malformed || r.group.is_empty() && r.version != "v1" {
        return Err(ApiError::path_not_found());
    }
    let (def, custom) = resolve(&r.group, &r.version, &r.resource).ok_or_else(ApiError::path_not_found)?;
    let namespace = if r.namespaced_path {
        if !def.namespaced() {
            return Err(ApiError::path_not_found());
        }
        r.namespace.clone()
    } else {
        // A namespaced resource's objects are named only under their namespace.
        if def.namespaced() && r.name.is_some() {
            return Err(ApiError::path_not_found());
        }
        None
    };
    if r.subresource.as_deref().is_some_and(|sub| def.subresource(sub).is_none()) {
        return Err(ApiError::path_not_found());
    }
    for segment in namespace.iter().chain(r.name.iter()) {
        let problems = is_valid_path_segment_name(segment);
        if !problems.is_empty() {
            return Err(ApiError::bad_request(format!("invalid resource name {segment:?}: [{}]", problems.join(", "))));
        }
    }
    Ok(Target { def, namespace, name: r.name.clone(), subresource: r.subresource.clone(), custom })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::RequestInfo;

    fn parse_path(path: &str, resolve: Resolve<'_>) -> Result<Target, ApiError> {
        let info = RequestInfo::parse("GET", path, None);
        target(info.resource.as_ref().ok_or_else(ApiError::path_not_found)?, resolve)
    }

    fn t(path: &str) -> Target {
        parse_path(path, &builtin).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn resource_paths() {
        let x = t("/api/v1/configmaps");
        assert_eq!((x.def.plural, x.namespace, x.name), ("configmaps", None, None));
        let x = t("/api/v1/namespaces/default/configmaps");
        assert_eq!((x.namespace.as_deref(), x.name.as_deref()), (Some("default"), None));
        let x = t("/api/v1/namespaces/default/configmaps/a/");
        assert_eq!(x.name.as_deref(), Some("a"));
        assert_eq!(x.key(), "/registry/core/configmaps/default/a");
        let x = t("/api/v1/namespaces/kube-system");
        assert_eq!((x.def.plural, x.namespace, x.name.as_deref()), ("namespaces", None, Some("kube-system")));
        let x = t("/api/v1/namespaces/x/status");
        assert_eq!(
            (x.def.plural, x.name.as_deref(), x.subresource.as_deref()),
            ("namespaces", Some("x"), Some("status"))
        );
        let x = t("/api/v1/nodes/n1");
        assert_eq!(x.key(), "/registry/core/nodes/n1");
        let x = t("/apis/apps/v1/namespaces/ns/deployments/web/scale");
        assert_eq!(x.subresource.as_deref(), Some("scale"));
        assert_eq!(x.key(), "/registry/apps/deployments/ns/web");
        let x = t("/apis/coordination.k8s.io/v1/leases");
        assert_eq!(x.def.kind, "Lease");
        let x = t("/api/v1/namespaces/default/configmaps/a%2Eb");
        assert_eq!(x.name.as_deref(), Some("a.b"));
    }

    #[test]
    fn unknown_paths_are_not_found() {
        for p in [
            "/api/v1/foos",
            "/api/v1/deployments",
            "/apis/apps/v1/configmaps",
            "/apis/apps/v2/deployments",
            "/apis/apps/v1/namespaces",
            "/api/v1/configmaps/a",
            "/api/v1/namespaces/x/nodes",
            "/api/v1/namespaces/x/configmaps/a/status",
            "/api/v1/namespaces/x/configmaps/a/b/c",
            "/api/v1/namespaces//configmaps",
            "/api/v2/pods",
        ] {
            let e = parse_path(p, &builtin).unwrap_err();
            assert_eq!((e.code, e.message.as_str()), (404, "the server could not find the requested resource"), "{p}");
        }
        assert_eq!(parse_path("/api/v1/namespaces/default/configmaps/%2E%2E", &builtin).unwrap_err().code, 400);
        assert_eq!(parse_path("/api/v1/namespaces/default/configmaps/a%2Fb", &builtin).unwrap_err().code, 400);
    }
}
