//! The registry of built-in resources kuorum serves: for each one its group, version,
//! kind, plural and singular names, scope, verbs, short names, categories and
//! subresources, as kube-apiserver describes them in discovery.
//!
//! Everything that routes a request, builds discovery or names an object in an error
//! message starts from a [`ResourceDef`]: a built-in one found here with [`lookup`], or
//! one a node makes for a served version of a CustomResourceDefinition
//! ([`crate::crd`]). Those are `&'static` too, so every verb handles both alike: their
//! strings and the definitions themselves are interned ([`intern`], [`intern_def`]),
//! leaked once per distinct value for the life of the process. What leaks is bounded by
//! the distinct names and definitions ever served (a few hundred bytes each), never by
//! the number of requests or of CRD updates that change nothing in them.
//!
//! The functions over a list of resources ([`groups_of`], [`resources_of`]) build
//! discovery for any such set: the built-in [`resources`] followed by a node's custom
//! resources.

use std::collections::HashSet;
use std::fmt;
use std::hash::Hash;
use std::sync::{Mutex, OnceLock};

/// The groups of `kubectl auth whoami`, `kubectl auth can-i`, and of roles and bindings.
pub const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
pub const AUTHORIZATION_GROUP: &str = "authorization.k8s.io";
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The verbs kube-apiserver lists for a fully featured resource, in its (sorted) order.
pub const ALL_VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// The access reviews: answered at once, never stored.
const CREATE_ONLY: &[&str] = &["create"];

/// The verbs of `status` and `scale` subresources.
const SUB_VERBS: &[&str] = &["get", "patch", "update"];

/// The scope of a resource: inside a namespace or across the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubresourceDef {
    /// The path segment after the object name, e.g. `status`.
    pub name: &'static str,
    /// The group/version/kind of what the subresource answers; the parent's when `None`.
    pub response: Option<(&'static str, &'static str, &'static str)>,
    pub verbs: &'static [&'static str],
}

pub const STATUS: SubresourceDef = SubresourceDef { name: "status", response: None, verbs: SUB_VERBS };
pub(crate) const SCALE: SubresourceDef =
    SubresourceDef { name: "scale", response: Some(("autoscaling", "v1", "Scale")), verbs: SUB_VERBS };

/// The subresources a custom resource may have, sorted by name as discovery lists them.
pub fn custom_subresources(status: bool, scale: bool) -> &'static [SubresourceDef] {
    match (status, scale) {
        (false, false) => &[],
        (true, false) => &[STATUS],
        (false, true) => &[SCALE],
        (true, true) => &[SCALE, STATUS],
    }
}

/// The subresources a kubelet answers (through the node's or a service's proxy for
/// `proxy`): kuorum lists them as kube-apiserver does and answers each with a Status
/// saying it has no connection to the node.
pub const KUBELET_SUBRESOURCES: &[&str] = &["attach", "exec", "log", "portforward", "proxy"];

/// The verbs of the proxy subresources.
pub(crate) const PROXY_VERBS: &[&str] = &["create", "delete", "get", "patch", "update"];

/// A subresource answered as an object of the core group's `kind` (`PodExecOptions`).
pub(crate) const fn core_subresource(
    name: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
) -> SubresourceDef {
    SubresourceDef { name, response: Some(("", "v1", kind)), verbs }
}

/// One resource: built in, or a served version of a custom resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
pub(crate) const fn core(
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

/// A resource of a named group served with every verb, without subresources.
#[allow(clippy::too_many_arguments)]
pub(crate) const fn grouped(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
    scope: Scope,
    list_kind: &'static str,
) -> ResourceDef {
    ResourceDef { group, list_kind, ..core(kind, plural, singular, scope, &[], &[], &[], "") }
}

/// An access review of the authentication or authorization group: created, answered,
/// not stored.
pub(crate) const fn review(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    singular: &'static str,
) -> ResourceDef {
    ResourceDef { verbs: CREATE_ONLY, ..grouped(group, kind, plural, singular, Scope::Cluster, "") }
}

/// Every built-in resource, in discovery order: each kind's entry, from [`crate::kinds::all`].
pub fn resources() -> &'static [&'static ResourceDef] {
    static ALL: OnceLock<Vec<&'static ResourceDef>> = OnceLock::new();
    ALL.get_or_init(|| crate::kinds::all().iter().map(|s| s.def()).collect())
}

/// The resource served at `(group, version, plural)`, if kuorum serves it.
pub fn lookup(group: &str, version: &str, plural: &str) -> Option<&'static ResourceDef> {
    resources().iter().copied().find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The resource of objects with this `apiVersion` and `kind`.
pub fn lookup_kind(api_version: &str, kind: &str) -> Option<&'static ResourceDef> {
    resources().iter().copied().find(|r| r.kind == kind && r.api_version() == api_version)
}

/// Every resource of one group/version, in registry order.
pub fn resources_in<'a>(group: &'a str, version: &'a str) -> impl Iterator<Item = &'static ResourceDef> + 'a {
    resources().iter().copied().filter(move |r| r.group == group && r.version == version)
}

/// Every built-in resource, as the list the functions over resource sets take.
pub fn builtin() -> Vec<&'static ResourceDef> {
    resources().to_vec()
}

/// The named API groups (not the core group) of the built-in resources, each with its
/// versions, preferred first.
pub fn groups() -> Vec<(&'static str, Vec<&'static str>)> {
    groups_of(&builtin())
}

/// Whether kuorum serves this group/version built in (`""`/`v1` is the core group).
pub fn serves_group_version(group: &str, version: &str) -> bool {
    resources().iter().copied().any(|r| r.group == group && r.version == version)
}

/// The named API groups (not the core group) among `resources`, in order of first
/// appearance, each with its versions in kube-apiserver's priority order (the preferred
/// version first; see [`compare_versions`]).
pub fn groups_of(resources: &[&'static ResourceDef]) -> Vec<(&'static str, Vec<&'static str>)> {
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for r in resources.iter().filter(|r| !r.group.is_empty()) {
        match out.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => {
                if !versions.contains(&r.version) {
                    versions.push(r.version);
                }
            }
            None => out.push((r.group, vec![r.version])),
        }
    }
    for (_, versions) in &mut out {
        versions.sort_by(|a, b| compare_versions(a, b));
    }
    out
}

/// The resources of one group/version among `resources`, in their order.
pub fn resources_of<'a>(
    resources: &'a [&'static ResourceDef],
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = &'static ResourceDef> + 'a {
    resources.iter().copied().filter(move |r| r.group == group && r.version == version)
}

/// How a version string ranks, as apimachinery's `CompareKubeAwareVersionStrings` reads
/// it: `v<major>` (GA), `v<major>beta<minor>`, `v<major>alpha<minor>`, or anything else.
fn version_rank(v: &str) -> (u8, u64, u64) {
    let parse = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
    };
    let Some(rest) = v.strip_prefix('v') else { return (0, 0, 0) };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Some(major) = parse(&rest[..digits]).filter(|m| *m > 0) else { return (0, 0, 0) };
    match &rest[digits..] {
        "" => (3, major, 0),
        tail => match (tail.strip_prefix("beta"), tail.strip_prefix("alpha")) {
            (Some(minor), _) => parse(minor).map_or((0, 0, 0), |m| (2, major, m)),
            (_, Some(minor)) => parse(minor).map_or((0, 0, 0), |m| (1, major, m)),
            _ => (0, 0, 0),
        },
    }
}

/// Kubernetes' version priority: GA before beta before alpha, higher numbers first within
/// each; versions that follow no such pattern last, alphabetically (`v2`, `v1`,
/// `v2beta1`, `v1beta2`, `v1alpha1`, `foo`).
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    let (ra, rb) = (version_rank(a), version_rank(b));
    match (ra.0, rb.0) {
        (0, 0) => a.cmp(b),
        _ => rb.cmp(&ra),
    }
}

/// The set every interned value lives in, per type.
fn interned<T: Eq + Hash + ?Sized + 'static>(
    set: &'static OnceLock<Mutex<HashSet<&'static T>>>,
    value: &T,
    leak: impl FnOnce() -> &'static T,
) -> &'static T {
    let mut set = set.get_or_init(|| Mutex::new(HashSet::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = set.get(value) {
        return found;
    }
    let leaked = leak();
    set.insert(leaked);
    leaked
}

/// `s` with a `'static` lifetime: leaked the first time it is seen, shared after.
pub fn intern(s: &str) -> &'static str {
    static SET: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    interned(&SET, s, || Box::leak(s.to_string().into_boxed_str()))
}

/// A list of strings with a `'static` lifetime, interned as [`intern`] does.
pub fn intern_all(items: &[String]) -> &'static [&'static str] {
    static SET: OnceLock<Mutex<HashSet<&'static [&'static str]>>> = OnceLock::new();
    let strs: Vec<&'static str> = items.iter().map(|s| intern(s)).collect();
    interned(&SET, strs.as_slice(), || Box::leak(strs.clone().into_boxed_slice()))
}

/// A resource definition with a `'static` lifetime (its strings interned already):
/// leaked the first time it is seen, shared after.
pub fn intern_def(def: ResourceDef) -> &'static ResourceDef {
    static SET: OnceLock<Mutex<HashSet<&'static ResourceDef>>> = OnceLock::new();
    interned(&SET, &def, || Box::leak(Box::new(def)))
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
        let short = |p: &str| resources().iter().find(|r| r.plural == p).unwrap().short_names;
        assert_eq!(short("namespaces"), ["ns"]);
        assert_eq!(short("nodes"), ["no"]);
        assert_eq!(short("services"), ["svc"]);
        assert_eq!(short("serviceaccounts"), ["sa"]);
        assert_eq!(short("pods"), ["po"]);
        assert_eq!(short("events"), ["ev"]);
        assert_eq!(short("deployments"), ["deploy"]);
        let all: Vec<_> =
            resources().iter().copied().filter(|r| r.categories.contains(&"all")).map(|r| r.plural).collect();
        for p in ["pods", "services", "deployments"] {
            assert!(all.contains(&p), "{p}");
        }
    }

    #[test]
    fn groups_list_named_groups_only() {
        let groups = groups();
        for want in [
            "apps",
            "authentication.k8s.io",
            "coordination.k8s.io",
            "rbac.authorization.k8s.io",
            "apiextensions.k8s.io",
        ] {
            assert_eq!(groups.iter().filter(|(g, _)| *g == want).count(), 1, "{want}");
        }
        assert!(groups.iter().all(|(g, versions)| !g.is_empty() && !versions.is_empty()));
        assert!(serves_group_version("", "v1"));
        assert!(!serves_group_version("apps", "v1beta1"));
        let crd = lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions").unwrap();
        assert_eq!((crd.scope, crd.short_names), (Scope::Cluster, &["crd", "crds"][..]));
        assert_eq!(crd.subresource("status").unwrap().response, None);
        let review = lookup("authorization.k8s.io", "v1", "selfsubjectaccessreviews").unwrap();
        assert_eq!((review.scope, review.verbs), (Scope::Cluster, &["create"][..]));
        assert!(lookup("rbac.authorization.k8s.io", "v1", "rolebindings").unwrap().namespaced());
    }

    #[test]
    fn versions_sort_by_kube_priority() {
        let mut vs = vec!["v1alpha1", "foo", "v1", "v2beta1", "v1beta2", "v2", "v10", "bar", "v1beta1", "v11alpha2"];
        vs.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(vs, ["v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v11alpha2", "v1alpha1", "bar", "foo"]);
    }

    #[test]
    fn interning_shares_equal_values() {
        let (one, two) = (String::from("widgets"), String::from("widgets"));
        let (a, b) = (intern(one.as_str()), intern(two.as_str()));
        assert!(std::ptr::eq(a, b));
        let names = vec!["w".to_string(), "wd".to_string()];
        assert!(std::ptr::eq(intern_all(&names), intern_all(&names.clone())));
        let def = ResourceDef { group: intern("example.com"), kind: intern("Widget"), ..*resources()[0] };
        let (x, y) = (intern_def(def), intern_def(def));
        assert!(std::ptr::eq(x, y));
        assert!(!std::ptr::eq(intern_def(ResourceDef { version: "v2", ..def }), x));
        let custom: Vec<&'static ResourceDef> = vec![
            intern_def(ResourceDef { version: "v1beta1", ..def }),
            intern_def(ResourceDef { version: "v1", ..def }),
        ];
        assert_eq!(groups_of(&custom), vec![("example.com", vec!["v1", "v1beta1"])]);
        assert_eq!(resources_of(&custom, "example.com", "v1").count(), 1);
    }
}
