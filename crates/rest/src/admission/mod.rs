//! Owns admission: the plugins kube-apiserver runs by default that need no webhook, each
//! in its own module, run on every write ([`crate::strategy::before_write`]) in kube's
//! order: the mutating ones after defaults and before the kind's validation, the
//! validating ones after it:
//!
//! | plugin | what it does here |
//! |---|---|
//! | `LimitRanger` ([`limit_ranger`]) | containers' requests and limits from the namespace's LimitRanges, and their bounds |
//! | `ServiceAccount` ([`service_account`]) | a pod's `serviceAccountName` (default `default`), its API token volume |
//! | `NodeRestriction` ([`node_restriction`]) | a kubelet changes only its own Node, Lease and pods |
//! | `TaintNodesByCondition` ([`taint_nodes_by_condition`]) | a new Node is tainted not-ready |
//! | `PodSecurity` ([`pod_security`]) | a pod meets its namespace's Pod Security level |
//! | `Priority` ([`priority`]) | a pod's `priority` from its PriorityClass (or the global default) |
//! | `DefaultTolerationSeconds` ([`default_toleration_seconds`]) | a pod tolerates `not-ready`/`unreachable` for 300 s |
//! | `DefaultStorageClass` ([`default_storage_class`]) | a claim without a class gets the default StorageClass |
//! | `StorageObjectInUseProtection` ([`storage_object_in_use_protection`]) | claims and volumes get their protection finalizers |
//! | `RuntimeClass` ([`runtime_class`]) | a pod's overhead and scheduling from its RuntimeClass |
//! | `DefaultIngressClass` ([`default_ingress_class`]) | an Ingress without a class gets the default IngressClass |
//! | `ResourceQuota` ([`resource_quota`]) | a new object fits its namespace's quotas, charged before it is stored |
//!
//! Every plugin is on unless `--disable-admission-plugins` names it, as kube-apiserver.
//! The plugins read other objects from the node's watch cache, as kube's read informers;
//! the quota's charge is a write on condition of the quota's version, so it is exact.

pub(crate) mod default_ingress_class;
pub(crate) mod default_storage_class;
pub(crate) mod default_toleration_seconds;
pub(crate) mod limit_ranger;
pub(crate) mod node_restriction;
pub(crate) mod pod_security;
pub(crate) mod priority;
pub mod resource_quota;
pub(crate) mod runtime_class;
pub(crate) mod service_account;
pub mod storage_object_in_use_protection;
pub(crate) mod taint_nodes_by_condition;

use std::collections::BTreeSet;
use std::sync::Arc;

use kuorum_api::ApiError;
use kuorum_store::keys::ObjectKey;
use kuorum_watch::{PrefixCount, WatchCache, WatchFilter};
use serde_json::Value;

use crate::auth::UserInfo;
use crate::object::{self, Object};
use crate::target::Target;
use crate::RestState;

/// The plugins kuorum runs, by kube's names, in the order they run.
pub const PLUGINS: &[&str] = &[
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "RuntimeClass",
    "DefaultIngressClass",
    "ResourceQuota",
];

/// The plugins kube-apiserver has on by default that kuorum does by other means (or that
/// have nothing to do without a controller-manager), accepted by the flags.
const KNOWN_ELSEWHERE: &[&str] = &[
    "NamespaceLifecycle",
    "PersistentVolumeClaimResize",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
];

/// Which plugins are off (`--disable-admission-plugins`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plugins {
    disabled: BTreeSet<&'static str>,
}

impl Plugins {
    /// Every plugin on but those in `disabled` (kube's names, comma-separated lists
    /// allowed). An unknown name is an error, as kube-apiserver refuses to start.
    pub fn with_disabled<S: AsRef<str>>(disabled: &[S]) -> Result<Self, String> {
        let mut out = Plugins::default();
        for name in disabled.iter().flat_map(|s| s.as_ref().split(',')).map(str::trim).filter(|s| !s.is_empty()) {
            match PLUGINS.iter().chain(KNOWN_ELSEWHERE).find(|p| **p == name) {
                Some(p) => {
                    out.disabled.insert(p);
                }
                None => return Err(format!("admission plugin {name:?} is not known; known: {}", PLUGINS.join(", "))),
            }
        }
        Ok(out)
    }

    /// Whether the plugin `name` runs.
    pub fn on(&self, name: &str) -> bool {
        !self.disabled.contains(name)
    }
}

/// What a plugin knows of the write it admits (kube's `admission.Attributes`).
pub(crate) struct Attributes<'a> {
    pub st: &'a RestState,
    /// Who asks (none on the open paths).
    pub user: Option<&'a UserInfo>,
    pub target: &'a Target,
    /// The stored object an update replaces; none for a create.
    pub old: Option<&'a Object>,
}

impl Attributes<'_> {
    /// The write is a create of the resource itself (group, plural), not of a
    /// subresource.
    pub fn creates(&self, group: &str, plural: &str) -> bool {
        self.old.is_none() && self.is(group, plural)
    }

    /// The write is to the resource itself (group, plural), not to a subresource.
    pub fn is(&self, group: &str, plural: &str) -> bool {
        let t = self.target;
        t.custom.is_none() && t.def.group == group && t.def.plural == plural && t.subresource.is_none()
    }

    pub fn namespace(&self) -> &str {
        self.target.namespace.as_deref().unwrap_or("")
    }

    /// kube's `admission.NewForbidden`: `<resource> "<name>" is forbidden: <why>`.
    pub fn forbidden(&self, obj: &Object, why: &str) -> ApiError {
        let name = object::meta_str(obj, "name").unwrap_or("");
        ApiError::forbidden(self.target.def.group_resource(), name, why)
    }
}

/// The mutating plugins, on `obj` before its kind validates it (kube's mutating
/// admission).
pub(crate) fn mutate(a: &Attributes, obj: &mut Object) -> Result<(), ApiError> {
    let on = |name| a.st.admission.on(name);
    if on("LimitRanger") {
        limit_ranger::admit(a, obj);
    }
    if on("ServiceAccount") {
        service_account::admit(a, obj)?;
    }
    if on("NodeRestriction") {
        node_restriction::admit(a, obj)?;
    }
    if on("TaintNodesByCondition") {
        taint_nodes_by_condition::admit(a, obj);
    }
    if on("Priority") {
        priority::admit(a, obj)?;
    }
    if on("DefaultTolerationSeconds") {
        default_toleration_seconds::admit(a, obj);
    }
    if on("DefaultStorageClass") {
        default_storage_class::admit(a, obj);
    }
    if on("StorageObjectInUseProtection") {
        storage_object_in_use_protection::admit(a, obj);
    }
    if on("RuntimeClass") {
        runtime_class::admit(a, obj)?;
    }
    if on("DefaultIngressClass") {
        default_ingress_class::admit(a, obj);
    }
    Ok(())
}

/// The validating plugins, on `obj` once its kind found it valid (kube's validating
/// admission; ResourceQuota's charge comes last, in the verbs, just before the write).
/// Answers the warnings they give.
pub(crate) fn validate(a: &Attributes, obj: &Object) -> Result<Vec<String>, ApiError> {
    let on = |name| a.st.admission.on(name);
    if on("LimitRanger") {
        limit_ranger::validate(a, obj)?;
    }
    let mut warnings = Vec::new();
    if on("PodSecurity") {
        warnings = pod_security::validate(a, obj)?;
    }
    if on("RuntimeClass") {
        runtime_class::validate(a, obj)?;
    }
    Ok(warnings)
}

/// Admission of a delete of `existing` (read from the cache when `None`; an object not
/// there is left to the delete to report) at `t`, as kube runs admission on deletes too:
/// NodeRestriction, the mutating webhooks whose rules take `DELETE` (which may refuse,
/// not change: there is no new object), then the ValidatingAdmissionPolicies and
/// validating webhooks that take it. Each sees `object` null and `oldObject` the object.
/// Answers their warnings.
pub(crate) async fn validate_delete(
    st: &RestState,
    user: Option<&UserInfo>,
    t: &Target,
    existing: Option<&Object>,
    dry_run: bool,
) -> Result<Vec<String>, ApiError> {
    let read;
    let existing = match existing {
        Some(e) => e,
        None => {
            read = cached(st, t.storage_def().group, t.storage_def().plural, t.namespace.as_deref(), t.name());
            match &read {
                Some(o) => o,
                None => return Ok(Vec::new()),
            }
        }
    };
    if st.admission.on("NodeRestriction") && node_restriction::restricts(user) && t.custom.is_none() {
        node_restriction::admit_delete(user, t, existing)?;
    }
    let review = crate::webhook::Review {
        st,
        user,
        target: t,
        requested: None,
        operation: "DELETE",
        old: Some(existing),
        dry_run,
    };
    let mut warnings = crate::webhook::mutate(&review, &mut existing.clone()).await?;
    warnings.extend(crate::admission_policy::validate(&review, existing).await?);
    warnings.extend(crate::webhook::validate(&review, existing).await?);
    Ok(warnings)
}

/// Admission of an eviction of the pod `t` names.
pub(crate) fn validate_eviction(st: &RestState, user: Option<&UserInfo>, t: &Target) -> Result<(), ApiError> {
    if st.admission.on("NodeRestriction") {
        node_restriction::admit_eviction(st, user, t)?;
    }
    Ok(())
}

/// Admission of a TokenRequest (its `spec`) for the service account `t` names.
pub(crate) fn validate_token_request(
    st: &RestState,
    user: Option<&UserInfo>,
    t: &Target,
    spec: &serde_json::Map<String, Value>,
) -> Result<(), ApiError> {
    if st.admission.on("NodeRestriction") {
        node_restriction::admit_token_request(st, user, t, spec)?;
    }
    Ok(())
}

/// The name of the default class among the cluster-scoped `group`/`plural` objects: one
/// annotated `"true"` (case-insensitive) by any of `annotations`, the newest, then the
/// first by name (kube's `GetDefaultClass`).
pub(crate) fn newest_default(st: &RestState, group: &str, plural: &str, annotations: &[&str]) -> Option<String> {
    let is_default = |o: &Object| {
        let given = object::meta(o).and_then(|m| m.get("annotations"));
        annotations.iter().any(|k| {
            given.and_then(|a| a.get(*k)).and_then(Value::as_str).is_some_and(|v| v.eq_ignore_ascii_case("true"))
        })
    };
    let created = |o: &Object| object::meta_str(o, "creationTimestamp").unwrap_or("").to_string();
    let name = |o: &Object| object::meta_str(o, "name").unwrap_or("").to_string();
    cached_list(&st.cache, group, plural, None)
        .into_iter()
        .filter(is_default)
        .max_by(|a, b| created(a).cmp(&created(b)).then_with(|| name(b).cmp(&name(a))))
        .map(|o| name(&o))
}

/// An object of a built-in resource from this node's cache.
pub(crate) fn cached(st: &RestState, group: &str, plural: &str, namespace: Option<&str>, name: &str) -> Option<Object> {
    let key = ObjectKey { group, resource: plural, namespace, name }.encode();
    match st.cache.get(&key).1.and_then(|o| o.value().cloned()) {
        Some(Value::Object(o)) => Some(o),
        _ => None,
    }
}

/// The collections a write reads whenever they hold anything (webhook configurations,
/// policy bindings, quotas, limit ranges), each counted by the node's cache: a write skips
/// the lookup of one that holds nothing without taking the cache's lock, which is the
/// common case and keeps an unconfigured cluster's writes as cheap as they were before
/// any of this existed.
pub struct Configured {
    counts: Vec<(&'static str, &'static str, Arc<PrefixCount>)>,
}

impl Configured {
    const COUNTED: &'static [(&'static str, &'static str)] = &[
        (crate::webhook::GROUP, "mutatingwebhookconfigurations"),
        (crate::webhook::GROUP, "validatingwebhookconfigurations"),
        (crate::webhook::GROUP, "mutatingadmissionpolicybindings"),
        (crate::webhook::GROUP, "validatingadmissionpolicybindings"),
        ("", "resourcequotas"),
        ("", "limitranges"),
    ];

    pub fn new(cache: &WatchCache) -> Self {
        let counts = Self::COUNTED
            .iter()
            .map(|&(group, plural)| {
                (group, plural, cache.counter(&kuorum_store::keys::collection_prefix(group, plural, None)))
            })
            .collect();
        Configured { counts }
    }

    /// Whether `group`/`plural` may hold objects anywhere: false only for a counted
    /// collection the cache holds none of.
    pub(crate) fn any(&self, group: &str, plural: &str) -> bool {
        self.counts.iter().find(|(g, p, _)| *g == group && *p == plural).is_none_or(|(_, _, c)| c.get() > 0)
    }
}

/// Every object of a resource in a namespace (or cluster-wide), from a node's cache.
pub fn cached_list(cache: &WatchCache, group: &str, plural: &str, namespace: Option<&str>) -> Vec<Object> {
    let prefix = kuorum_store::keys::collection_prefix(group, plural, namespace);
    let listed = cache.list(&WatchFilter::prefix(prefix), None, usize::MAX);
    listed
        .items
        .into_iter()
        .filter_map(|item| match item.parse() {
            Some(Value::Object(o)) => Some(o),
            _ => None,
        })
        .collect()
}

/// The containers of a pod spec of each kind (`initContainers`, `containers`), mutable.
pub(crate) fn containers_mut<'a>(
    spec: &'a mut serde_json::Map<String, Value>,
    fields: &'static [&'static str],
) -> impl Iterator<Item = &'a mut Object> {
    spec.iter_mut()
        .filter(move |(k, _)| fields.contains(&k.as_str()))
        .filter_map(|(_, v)| v.as_array_mut())
        .flatten()
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugins_are_on_unless_disabled() {
        let p = Plugins::with_disabled(&["ResourceQuota,PodSecurity", " Priority "]).unwrap();
        assert!(!p.on("ResourceQuota") && !p.on("PodSecurity") && !p.on("Priority"));
        assert!(p.on("LimitRanger"));
        assert!(Plugins::with_disabled(&["NamespaceLifecycle"]).is_ok());
        assert!(Plugins::with_disabled(&["NoSuchPlugin"]).unwrap_err().contains("NoSuchPlugin"));
        assert!(Plugins::default().on("ServiceAccount"));
    }
}
