//! kube-apiserver's bootstrap RBAC policy: the ClusterRoles, ClusterRoleBindings and the
//! `kube-system`/`kube-public` Roles and RoleBindings every cluster starts with, those of
//! the system components (`system:kube-scheduler`, `system:kube-controller-manager`,
//! `system:node`, `system:node-proxier`, every `system:controller:*`), and `admin`,
//! `edit` and `view` with the `aggregationRule`s that make them the union of the
//! `aggregate-to-*` roles (kuorum-node's aggregation controller fills their rules in).
//!
//! The policy is data, kept as kube's golden files list it (`bootstrap_policy/*.json`,
//! taken from `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata` of the 1.36
//! development line). [`reconcile`] is kube's start-up reconciliation: what a stored
//! object lacks of the policy is added back, what it has more is kept, and one annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "false"` is left alone.

use serde_json::{json, Map, Value};

const CLUSTER_ROLES: &str = include_str!("bootstrap_policy/cluster-roles.json");
const CLUSTER_ROLE_BINDINGS: &str = include_str!("bootstrap_policy/cluster-role-bindings.json");
const ROLES: &str = include_str!("bootstrap_policy/roles.json");
const ROLE_BINDINGS: &str = include_str!("bootstrap_policy/role-bindings.json");

const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// One bootstrap object: its resource (`clusterroles`, `roles`, ...), namespace (for
/// Roles and RoleBindings) and the object.
pub struct Bootstrap {
    pub resource: &'static str,
    pub namespace: Option<String>,
    pub object: Value,
}

fn entries(text: &str) -> Vec<Map<String, Value>> {
    // The files are part of the build; a malformed one fails the tests below.
    serde_json::from_str::<Vec<Map<String, Value>>>(text).unwrap_or_default()
}

/// The object of kind `kind` an entry of the data files describes.
fn object(kind: &str, mut e: Map<String, Value>) -> (Option<String>, Value) {
    let namespace = e.remove("namespace").and_then(|n| n.as_str().map(str::to_string));
    let mut meta = Map::new();
    meta.insert("name".into(), e.remove("name").unwrap_or(Value::Null));
    if let Some(ns) = &namespace {
        meta.insert("namespace".into(), Value::from(ns.as_str()));
    }
    for field in ["labels", "annotations"] {
        if let Some(v) = e.remove(field).filter(|v| v.as_object().is_some_and(|m| !m.is_empty())) {
            meta.insert(field.into(), v);
        }
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), json!("rbac.authorization.k8s.io/v1"));
    obj.insert("kind".into(), json!(kind));
    obj.insert("metadata".into(), Value::Object(meta));
    for (k, v) in e {
        if !v.is_null() {
            obj.insert(k, v);
        }
    }
    (namespace, Value::Object(obj))
}

fn of(resource: &'static str, kind: &str, text: &str) -> Vec<Bootstrap> {
    entries(text)
        .into_iter()
        .map(|e| {
            let (namespace, object) = object(kind, e);
            Bootstrap { resource, namespace, object }
        })
        .collect()
}

/// Every bootstrap object: ClusterRoles, then ClusterRoleBindings, Roles, RoleBindings.
pub fn policy() -> Vec<Bootstrap> {
    let mut out = of("clusterroles", "ClusterRole", CLUSTER_ROLES);
    out.extend(of("clusterrolebindings", "ClusterRoleBinding", CLUSTER_ROLE_BINDINGS));
    out.extend(of("roles", "Role", ROLES));
    out.extend(of("rolebindings", "RoleBinding", ROLE_BINDINGS));
    out
}

/// The bootstrap ClusterRoles, as `(resource, object)`.
pub fn cluster_roles() -> Vec<(&'static str, Value)> {
    of("clusterroles", "ClusterRole", CLUSTER_ROLES).into_iter().map(|b| (b.resource, b.object)).collect()
}

/// The bootstrap ClusterRoles with the aggregated ones' rules filled in from the others
/// (to a fixed point: `edit` is aggregated into `admin`), as the aggregation controller
/// leaves them; for what runs without that controller (the REST tests).
pub fn cluster_roles_aggregated() -> Vec<(&'static str, Value)> {
    let mut roles: Vec<(String, Value)> = cluster_roles()
        .into_iter()
        .map(|(_, r)| (r["metadata"]["name"].as_str().unwrap_or("").to_string(), r))
        .collect();
    roles.sort_by(|a, b| a.0.cmp(&b.0));
    loop {
        let mut changed = false;
        for i in 0..roles.len() {
            if let Some(rules) = crate::rbac::aggregated(&roles[i].1, &roles) {
                if roles[i].1["rules"] != rules {
                    roles[i].1["rules"] = rules;
                    changed = true;
                }
            }
        }
        if !changed {
            return roles.into_iter().map(|(_, r)| ("clusterroles", r)).collect();
        }
    }
}

/// The bootstrap ClusterRoleBindings, as `(resource, object)`.
pub fn cluster_role_bindings() -> Vec<(&'static str, Value)> {
    of("clusterrolebindings", "ClusterRoleBinding", CLUSTER_ROLE_BINDINGS)
        .into_iter()
        .map(|b| (b.resource, b.object))
        .collect()
}

/// kube's reconciliation of a stored bootstrap object with the policy's `wanted`: the
/// object with what it lacks added (labels, annotations, rules, an aggregation rule's
/// selectors, subjects), or `None` when it lacks nothing or opted out.
pub fn reconcile(stored: &Value, wanted: &Value) -> Option<Value> {
    if stored.pointer(&format!("/metadata/annotations/{}", AUTOUPDATE.replace('/', "~1"))).and_then(Value::as_str)
        == Some("false")
    {
        return None;
    }
    let mut out = stored.clone();
    for field in ["labels", "annotations"] {
        for (k, v) in wanted.pointer(&format!("/metadata/{field}")).and_then(Value::as_object).into_iter().flatten() {
            let map = out["metadata"].as_object_mut().map(|m| m.entry(field).or_insert_with(|| json!({})));
            if let Some(Value::Object(m)) = map {
                m.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    let add_missing = |out: &mut Value, pointer: &str, field: &str| {
        let Some(want) = wanted.pointer(pointer).and_then(Value::as_array) else { return };
        let have = out.pointer(pointer).and_then(Value::as_array).cloned().unwrap_or_default();
        let missing: Vec<Value> = want.iter().filter(|w| !have.contains(w)).cloned().collect();
        if missing.is_empty() {
            return;
        }
        let mut all = have;
        all.extend(missing);
        match pointer.rsplit_once('/') {
            Some(("", _)) => out[field] = Value::Array(all),
            _ => out["aggregationRule"]["clusterRoleSelectors"] = Value::Array(all),
        }
    };
    if wanted.get("aggregationRule").is_some_and(|a| !a.is_null()) {
        // An aggregated role's rules are the aggregation controller's.
        add_missing(&mut out, "/aggregationRule/clusterRoleSelectors", "");
    } else {
        add_missing(&mut out, "/rules", "rules");
    }
    add_missing(&mut out, "/subjects", "subjects");
    (out != *stored).then_some(out)
}

#[cfg(test)]
mod tests {
    use crate::rbac::{validate_binding, validate_role};

    use super::*;

    #[test]
    fn the_bootstrap_policy_is_valid_and_every_binding_names_a_role() {
        let policy = policy();
        assert_eq!(policy.len(), 69 + 50 + 7 + 7, "every entry of the data files reads");
        let roles = cluster_roles();
        for (_, r) in &roles {
            assert!(validate_role(r, false).is_empty(), "{r}");
        }
        for (_, b) in cluster_role_bindings() {
            assert!(validate_binding(&b, None, false).is_empty(), "{b}");
            assert!(roles.iter().any(|(_, r)| r["metadata"]["name"] == b["roleRef"]["name"]), "{b}");
        }
        for b in policy.iter().filter(|b| b.resource == "rolebindings") {
            assert!(b.namespace.is_some());
            assert!(validate_binding(&b.object, None, true).is_empty(), "{}", b.object);
        }
        for r in policy.iter().filter(|b| b.resource == "roles") {
            assert!(validate_role(&r.object, true).is_empty(), "{}", r.object);
        }
        let names: Vec<String> =
            roles.iter().map(|(_, r)| r["metadata"]["name"].as_str().unwrap().to_string()).collect();
        for wanted in [
            "system:kube-scheduler",
            "system:kube-controller-manager",
            "system:node",
            "system:node-proxier",
            "system:controller:deployment-controller",
            "admin",
            "edit",
            "view",
            "cluster-admin",
        ] {
            assert!(names.iter().any(|n| n == wanted), "{wanted}");
        }
        let aggregated = cluster_roles_aggregated();
        let rules =
            |name: &str| aggregated.iter().find(|(_, r)| r["metadata"]["name"] == name).unwrap().1["rules"].clone();
        let has = |name: &str, resource: &str| {
            rules(name)
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["resources"].as_array().is_some_and(|l| l.contains(&json!(resource))))
        };
        assert!(has("view", "configmaps") && !has("view", "secrets"));
        assert!(has("edit", "secrets") && has("edit", "configmaps"));
        assert!(has("admin", "rolebindings") && has("admin", "configmaps"), "admin takes edit's, which takes view's");
        let view = &roles.iter().find(|(_, r)| r["metadata"]["name"] == "view").unwrap().1;
        assert_eq!(
            view["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]
                ["rbac.authorization.k8s.io/aggregate-to-view"],
            "true"
        );
    }

    #[test]
    fn reconciling_adds_back_what_is_missing_and_keeps_what_is_more() {
        let wanted = json!({"metadata": {"name": "r", "labels": {"a": "1"}},
                            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        let extra = json!({"apiGroups": ["x"], "resources": ["y"], "verbs": ["*"]});
        let stored = json!({"metadata": {"name": "r", "resourceVersion": "5"}, "rules": [extra]});
        let out = reconcile(&stored, &wanted).unwrap();
        assert_eq!(out["rules"], json!([extra, wanted["rules"][0]]));
        assert_eq!(out["metadata"]["labels"]["a"], "1");
        assert_eq!(reconcile(&out, &wanted), None, "nothing more to add");
        let opted_out =
            json!({"metadata": {"name": "r", "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "false"}}});
        assert_eq!(reconcile(&opted_out, &wanted), None);
        let binding = json!({"metadata": {"name": "b"}, "subjects": [{"kind": "Group", "name": "g"}]});
        let stored = json!({"metadata": {"name": "b"}, "subjects": []});
        assert_eq!(reconcile(&stored, &binding).unwrap()["subjects"], binding["subjects"]);
        let agg = json!({"metadata": {"name": "view"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"v": "1"}}]}, "rules": []});
        let stored = json!({"metadata": {"name": "view"}, "aggregationRule": {"clusterRoleSelectors": []},
                            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        let out = reconcile(&stored, &agg).unwrap();
        assert_eq!(out["aggregationRule"], agg["aggregationRule"]);
        assert_eq!(out["rules"], stored["rules"], "the controller's rules are left alone");
    }
}
