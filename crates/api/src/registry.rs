//! The registry of built-in resources kuorum serves: for each one its group, version,
//! kind, plural and singular names, scope, verbs, short names, categories and
//! subresources, as kube-apiserver describes them in discovery.
//!
//! Everything that routes a request, builds discovery or names an object in an error
//! message starts from a [`ResourceDef`] found here with [`lookup`].

use std::fmt;

/// The verbs kube-apiserver lists for a fully featured resource, in its (sorted) order.
pub const ALL_VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// Namespaces cannot be deleted as a collection.
const NAMESPACE_VERBS: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];

/// The verbs of `status` and `scale` subresources.
const SUB_VERBS: &[&str] = &["get", "patch", "update"];

/// The scope of a resource: inside a namespace or across the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Namespaced,
    Cluster,
}

impl Scope {
    /// The spelling aggregated discovery uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Namespaced => "Namespaced",
            Scope::Cluster => "Cluster",
        }
    }
}

/// A subresource as discovery lists it, e.g. `deployments/scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubresourceDef {
    /// The path segment after the object name, e.g. `status`.
    pub name: &'static str,
    /// The group/version/kind of what the subresource answers; the parent's when `None`.
    pub response: Option<(&'static str, &'static str, &'static str)>,
    pub verbs: &'static [&'static str],
}

const STATUS: SubresourceDef = SubresourceDef { name: "status", response: None, verbs: SUB_VERBS };
const SCALE: SubresourceDef =
    SubresourceDef { name: "scale", response: Some(("autoscaling", "v1", "Scale")), verbs: SUB_VERBS };

/// One built-in resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceDef {
    /// The API group; `""` for the core (legacy) group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// The plural resource name used in URLs, e.g. `configmaps`.
    pub plural: &'static str,
    pub singular: &'static str,
    pub scope: Scope,
    pub verbs: &'static [&'static str],
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    pub subresources: &'static [SubresourceDef],
    /// The kind of a list of these, e.g. `ConfigMapList`.
    pub list_kind: &'static str,
    /// Whether the server tracks `metadata.generation` (kinds whose `spec` is desired state).
    pub tracks_generation: bool,
}

impl ResourceDef {
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }

    /// The `apiVersion` of objects of this kind: `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        group_version(self.group, self.version)
    }

    /// The group and plural resource, as error messages name them (`deployments.apps`).
    pub fn group_resource(&self) -> GroupResource<'static> {
        GroupResource { group: self.group, resource: self.plural }
    }

    /// The group and kind, as validation errors name them (`Deployment.apps`).
    pub fn group_kind(&self) -> GroupKind<'static> {
        GroupKind { group: self.group, kind: self.kind }
    }

    pub fn subresource(&self, name: &str) -> Option<&'static SubresourceDef> {
        self.subresources.iter().find(|s| s.name == name)
    }
}

/// `v1` for the core group, `group/version` otherwise.
pub fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// A resource qualified by its group, displayed `resource.group` (or `resource` for core).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupResource<'a> {
    pub group: &'a str,
    pub resource: &'a str,
}

impl fmt::Display for GroupResource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// A kind qualified by its group, displayed `Kind.group` (or `Kind` for core).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupKind<'a> {
    pub group: &'a str,
    pub kind: &'a str,
}

impl fmt::Display for GroupKind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

#[allow(clippy::too_many_arguments)]
const fn core(
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    scope: Scope,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    subresources: &'static [SubresourceDef],
    list_kind: &'static str,
) -> ResourceDef {
    ResourceDef {
        group: "",
        version: "v1",
        kind,
        plural,
        singular,
        scope,
        verbs: ALL_VERBS,
        short_names,
        categories,
        subresources,
        list_kind,
        tracks_generation: false,
    }
}

/// Every resource kuorum serves, grouped by group/version, sorted by plural within one.
pub static RESOURCES: &[ResourceDef] = &[
    core("ConfigMap", "configmaps", "configmap", Scope::Namespaced, &["cm"], &[], &[], "ConfigMapList"),
    core("Event", "events", "event", Scope::Namespaced, &["ev"], &[], &[], "EventList"),
    ResourceDef {
        verbs: NAMESPACE_VERBS,
        ..core("Namespace", "namespaces", "namespace", Scope::Cluster, &["ns"], &[], &[STATUS], "NamespaceList")
    },
    core("Node", "nodes", "node", Scope::Cluster, &["no"], &[], &[STATUS], "NodeList"),
    ResourceDef {
        tracks_generation: true,
        ..core("Pod", "pods", "pod", Scope::Namespaced, &["po"], &["all"], &[STATUS], "PodList")
    },
    core("Secret", "secrets", "secret", Scope::Namespaced, &[], &[], &[], "SecretList"),
    core(
        "ServiceAccount",
        "serviceaccounts",
        "serviceaccount",
        Scope::Namespaced,
        &["sa"],
        &[],
        &[],
        "ServiceAccountList",
    ),
    core("Service", "services", "service", Scope::Namespaced, &["svc"], &["all"], &[STATUS], "ServiceList"),
    ResourceDef {
        group: "apps",
        version: "v1",
        kind: "Deployment",
        plural: "deployments",
        singular: "deployment",
        scope: Scope::Namespaced,
        verbs: ALL_VERBS,
        short_names: &["deploy"],
        categories: &["all"],
        subresources: &[SCALE, STATUS],
        list_kind: "DeploymentList",
        tracks_generation: true,
    },
    ResourceDef {
        group: "coordination.k8s.io",
        version: "v1",
        kind: "Lease",
        plural: "leases",
        singular: "lease",
        scope: Scope::Namespaced,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        subresources: &[],
        list_kind: "LeaseList",
        tracks_generation: false,
    },
];

/// The resource served at `(group, version, plural)`, if kuorum serves it.
pub fn lookup(group: &str, version: &str, plural: &str) -> Option<&'static ResourceDef> {
    RESOURCES.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The resource of objects with this `apiVersion` and `kind`.
pub fn lookup_kind(api_version: &str, kind: &str) -> Option<&'static ResourceDef> {
    RESOURCES.iter().find(|r| r.kind == kind && r.api_version() == api_version)
}

/// Every resource of one group/version, in registry order.
pub fn resources_in<'a>(group: &'a str, version: &'a str) -> impl Iterator<Item = &'static ResourceDef> + 'a {
    RESOURCES.iter().filter(move |r| r.group == group && r.version == version)
}

/// The named API groups (not the core group), each with its versions, newest first.
pub fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in RESOURCES.iter().filter(|r| !r.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => {
                if !versions.contains(&r.version) {
                    versions.push(r.version);
                }
            }
            None => out.push((r.group, vec![r.version])),
        }
    }
    out
}

/// Whether kuorum serves this group/version (`""`/`v1` is the core group).
pub fn serves_group_version(group: &str, version: &str) -> bool {
    RESOURCES.iter().any(|r| r.group == group && r.version == version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_find_each_kind() {
        let cm = lookup("", "v1", "configmaps").unwrap();
        assert_eq!(cm.kind, "ConfigMap");
        assert_eq!(cm.list_kind, "ConfigMapList");
        assert!(cm.namespaced());
        assert_eq!(cm.api_version(), "v1");
        let d = lookup("apps", "v1", "deployments").unwrap();
        assert_eq!(d.api_version(), "apps/v1");
        assert_eq!(d.group_resource().to_string(), "deployments.apps");
        assert_eq!(d.group_kind().to_string(), "Deployment.apps");
        assert!(d.tracks_generation);
        assert_eq!(d.subresource("scale").unwrap().response, Some(("autoscaling", "v1", "Scale")));
        assert!(lookup("", "v1", "deployments").is_none());
        assert!(lookup("apps", "v1", "configmaps").is_none());
        assert_eq!(lookup_kind("coordination.k8s.io/v1", "Lease").unwrap().plural, "leases");
        assert!(!lookup("", "v1", "namespaces").unwrap().namespaced());
        assert!(!lookup("", "v1", "namespaces").unwrap().verbs.contains(&"deletecollection"));
    }

    #[test]
    fn short_names_and_categories_match_upstream() {
        let short = |p: &str| RESOURCES.iter().find(|r| r.plural == p).unwrap().short_names;
        assert_eq!(short("namespaces"), ["ns"]);
        assert_eq!(short("nodes"), ["no"]);
        assert_eq!(short("services"), ["svc"]);
        assert_eq!(short("serviceaccounts"), ["sa"]);
        assert_eq!(short("pods"), ["po"]);
        assert_eq!(short("events"), ["ev"]);
        assert_eq!(short("deployments"), ["deploy"]);
        let all: Vec<_> = RESOURCES.iter().filter(|r| r.categories.contains(&"all")).map(|r| r.plural).collect();
        assert_eq!(all, ["pods", "services", "deployments"]);
    }

    #[test]
    fn groups_list_named_groups_only() {
        assert_eq!(groups(), vec![("apps", vec!["v1"]), ("coordination.k8s.io", vec!["v1"])]);
        assert!(serves_group_version("", "v1"));
        assert!(!serves_group_version("apps", "v1beta1"));
    }
}
