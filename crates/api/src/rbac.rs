//! Role-based access control as kube-apiserver evaluates it, over plain values: what a
//! request asks ([`Attributes`]), what a rule grants ([`PolicyRule`]), whom a binding
//! names ([`subject_matches`]), and the validation of roles and bindings. Where the roles
//! and bindings come from (a node's watch cache) is the REST layer's business.
//!
//! A request is allowed when any rule of any role bound to the user allows it:
//! ClusterRoleBindings grant their ClusterRole everywhere; a RoleBinding grants its Role,
//! or the ClusterRole it names, in its own namespace only. Nothing denies.
//!
//! Worked example: `alice` GETs `/api/v1/namespaces/dev/pods/web/log`. Her attributes
//! are verb `get`, group `""`, resource `pods`, subresource `log`, namespace `dev`, name
//! `web`. A rule `{apiGroups: [""], resources: ["pods"], verbs: ["get"]}` does not allow
//! it (a subresource is its own resource, `pods/log`); `resources: ["pods/log"]` or
//! `["*/log"]` or `["*"]` does, and `resourceNames: ["web"]` narrows it to that pod.

use serde_json::Value;

use crate::validation::FieldError;

/// The group kube-apiserver lets do anything, without asking RBAC.
pub const MASTERS_GROUP: &str = "system:masters";

/// What a request asks to do, as kube-apiserver's request-info filter names it (the REST
/// layer's one parse of a request, `kuorum_rest::request`, makes it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`
    /// for a resource; the lowercase HTTP method for a non-resource path.
    pub verb: String,
    /// Whether the request is on an API resource (else on a path like `/version`).
    pub resource_request: bool,
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The request path, for a non-resource request.
    pub path: String,
}

impl Attributes {
    /// `resource` or `resource/subresource`, as rules name it.
    pub fn full_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// kube-apiserver's refusal text: `User "alice" cannot list resource "pods" in API
    /// group "" in the namespace "dev"`.
    pub fn denial(&self, user: &str) -> String {
        if !self.resource_request {
            return format!("User {user:?} cannot {} path {:?}", self.verb, self.path);
        }
        let mut s = format!("User {user:?} cannot {} resource {:?}", self.verb, self.full_resource());
        s += &format!(" in API group {:?}", self.api_group);
        if self.namespace.is_empty() {
            s += " at the cluster scope";
        } else {
            s += &format!(" in the namespace {:?}", self.namespace);
        }
        s
    }
}

/// One rule of a Role or ClusterRole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(String::from).collect()
}

impl PolicyRule {
    pub fn from_value(v: &Value) -> PolicyRule {
        PolicyRule {
            verbs: strings(v.get("verbs")),
            api_groups: strings(v.get("apiGroups")),
            resources: strings(v.get("resources")),
            resource_names: strings(v.get("resourceNames")),
            non_resource_urls: strings(v.get("nonResourceURLs")),
        }
    }

    /// The rules of a Role or ClusterRole object.
    pub fn of_role(role: &Value) -> Vec<PolicyRule> {
        role.get("rules").and_then(Value::as_array).into_iter().flatten().map(PolicyRule::from_value).collect()
    }

    pub fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("verbs".into(), self.verbs.clone().into());
        for (k, v) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !v.is_empty() {
                m.insert(k.into(), v.clone().into());
            }
        }
        Value::Object(m)
    }

    /// Whether this rule allows the request.
    pub fn allows(&self, a: &Attributes) -> bool {
        if !has(&self.verbs, &a.verb) {
            return false;
        }
        if !a.resource_request {
            return self.non_resource_urls.iter().any(|u| url_matches(u, &a.path));
        }
        has(&self.api_groups, &a.api_group)
            && resource_matches(&self.resources, &a.resource, &a.subresource)
            && (self.resource_names.is_empty() || (!a.name.is_empty() && self.resource_names.contains(&a.name)))
    }
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x == "*" || x == value)
}

fn resource_matches(rules: &[String], resource: &str, sub: &str) -> bool {
    rules.iter().any(|r| {
        r == "*"
            || if sub.is_empty() {
                r == resource
            } else {
                r.strip_prefix(resource).and_then(|t| t.strip_prefix('/')) == Some(sub)
                    || r.strip_prefix("*/") == Some(sub)
            }
    })
}

/// A rule's URL matches the path exactly, or as a prefix when it ends in `*`.
fn url_matches(rule: &str, path: &str) -> bool {
    match rule.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => rule == path,
    }
}

/// Whether a subject of a binding in `binding_namespace` (`""` for a ClusterRoleBinding)
/// names this user: by user name, by group, or as the service account
/// `system:serviceaccount:<namespace>:<name>`.
pub fn subject_matches(subject: &Value, user: &str, groups: &[String], binding_namespace: &str) -> bool {
    let name = subject.get("name").and_then(Value::as_str).unwrap_or("");
    match subject.get("kind").and_then(Value::as_str) {
        Some("User") => name == user,
        Some("Group") => groups.iter().any(|g| g == name),
        Some("ServiceAccount") => {
            let ns =
                subject.get("namespace").and_then(Value::as_str).filter(|n| !n.is_empty()).unwrap_or(binding_namespace);
            !ns.is_empty() && user == format!("system:serviceaccount:{ns}:{name}")
        }
        _ => false,
    }
}

/// Whether `owner` grants everything `rule` grants: kube-apiserver's check that a user
/// may only write a role whose rules they hold themselves (or have `escalate`).
pub fn covers(owner: &[PolicyRule], rule: &PolicyRule) -> bool {
    // Each atomic piece of `rule` (one verb on one group/resource/name, or one URL) must
    // be inside one owner rule; a `*` in `rule` is only covered by a `*`.
    let names: Vec<Option<&String>> =
        if rule.resource_names.is_empty() { vec![None] } else { rule.resource_names.iter().map(Some).collect() };
    for verb in &rule.verbs {
        for url in &rule.non_resource_urls {
            let ok = owner.iter().any(|o| {
                has(&o.verbs, verb)
                    && o.non_resource_urls.iter().any(|ou| ou == url || (ou.ends_with('*') && url_matches(ou, url)))
            });
            if !ok {
                return false;
            }
        }
        for group in &rule.api_groups {
            for resource in &rule.resources {
                for name in &names {
                    let ok = owner.iter().any(|o| {
                        (o.verbs.iter().any(|v| v == "*" || v == verb))
                            && o.api_groups.iter().any(|g| g == "*" || g == group)
                            && o.resources.iter().any(|r| {
                                r == "*" || r == resource || {
                                    let sub = resource.split_once('/').map(|(_, s)| s);
                                    sub.is_some_and(|s| r.strip_prefix("*/") == Some(s))
                                }
                            })
                            && match name {
                                None => o.resource_names.is_empty(),
                                Some(n) => o.resource_names.is_empty() || o.resource_names.contains(n),
                            }
                    });
                    if !ok {
                        return false;
                    }
                }
            }
        }
    }
    true
}

/// kube-apiserver's validation of a Role's or ClusterRole's rules.
pub fn validate_role(role: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, r) in role.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let path = |f: &str| format!("rules[{i}].{f}");
        let rule = PolicyRule::from_value(r);
        if rule.verbs.is_empty() {
            errs.push(FieldError::required(&path("verbs"), "verbs must contain at least one value"));
        }
        if !rule.non_resource_urls.is_empty() {
            if namespaced {
                errs.push(FieldError::invalid_value(
                    &path("nonResourceURLs"),
                    crate::validation::BadValue::of_json(r.get("nonResourceURLs").unwrap_or(&Value::Null)),
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            if !rule.api_groups.is_empty() || !rule.resources.is_empty() {
                errs.push(FieldError::invalid_value(
                    &path("nonResourceURLs"),
                    crate::validation::BadValue::of_json(r.get("nonResourceURLs").unwrap_or(&Value::Null)),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if rule.api_groups.is_empty() {
            errs.push(FieldError::required(&path("apiGroups"), "resource rules must supply at least one api group"));
        }
        if rule.resources.is_empty() {
            errs.push(FieldError::required(&path("resources"), "resource rules must supply at least one resource"));
        }
    }
    errs
}

/// kube-apiserver's validation of a RoleBinding's or ClusterRoleBinding's role reference
/// and subjects; `old` is the binding being updated (its role reference cannot change).
pub fn validate_binding(binding: &Value, old: Option<&Value>, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let role_ref = binding.get("roleRef");
    let field = |k: &str| role_ref.and_then(|r| r.get(k)).and_then(Value::as_str).unwrap_or("");
    if field("apiGroup") != crate::registry::RBAC_GROUP {
        errs.push(FieldError::not_supported("roleRef.apiGroup", field("apiGroup"), &[crate::registry::RBAC_GROUP]));
    }
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    if !kinds.contains(&field("kind")) {
        errs.push(FieldError::not_supported("roleRef.kind", field("kind"), kinds));
    }
    if field("name").is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    }
    if let Some(old_ref) = old.and_then(|o| o.get("roleRef")) {
        if Some(old_ref) != role_ref {
            errs.push(FieldError::invalid_value(
                "roleRef",
                crate::validation::BadValue::of_json(role_ref.unwrap_or(&Value::Null)),
                "cannot change roleRef",
            ));
        }
    }
    for (i, s) in binding.get("subjects").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let get = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
        if get("name").is_empty() {
            errs.push(FieldError::required(&format!("subjects[{i}].name"), ""));
        }
        match get("kind") {
            "User" | "Group" => {}
            "ServiceAccount" => {
                if !namespaced && get("namespace").is_empty() {
                    errs.push(FieldError::required(&format!("subjects[{i}].namespace"), ""));
                }
            }
            other => errs.push(FieldError::not_supported(
                &format!("subjects[{i}].kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    errs
}

/// kube's ClusterRole aggregation: the rules `role` aggregates from `roles` (sorted by
/// key, so by name), each rule once, in the order met, or `None` when it has no
/// `aggregationRule`.
pub fn aggregated(role: &Value, roles: &[(String, Value)]) -> Option<Value> {
    use crate::kinds::common::selector_matches;
    let selectors = role.pointer("/aggregationRule/clusterRoleSelectors")?.as_array()?;
    let name = role.pointer("/metadata/name");
    let mut rules: Vec<Value> = Vec::new();
    for (_, other) in roles {
        if other.pointer("/metadata/name") == name {
            continue;
        }
        let labels = other.pointer("/metadata/labels");
        if !selectors.iter().any(|s| selector_matches(s, labels)) {
            continue;
        }
        for rule in other.get("rules").and_then(Value::as_array).into_iter().flatten() {
            if !rules.contains(rule) {
                rules.push(rule.clone());
            }
        }
    }
    Some(Value::Array(rules))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A resource request: `verb` on `group`/`resource` (`res/sub` for a subresource).
    fn res(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Attributes {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            path: String::new(),
        }
    }

    /// A request on a path that names no resource.
    fn url(verb: &str, path: &str) -> Attributes {
        Attributes { verb: verb.into(), path: path.into(), ..Attributes::default() }
    }

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::from_value(&v)
    }

    #[test]
    fn rules_match_verbs_groups_resources_and_names() {
        let r = rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}));
        assert!(r.allows(&res("get", "", "pods", "dev", "web")));
        assert!(!r.allows(&res("delete", "", "pods", "dev", "web")));
        assert!(!r.allows(&res("list", "apps", "deployments", "dev", "")), "another group");
        assert!(!r.allows(&res("get", "", "pods/status", "dev", "web")), "a subresource is its own");
        let sub = rule(json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/status"]}));
        assert!(sub.allows(&res("get", "", "pods/status", "dev", "web")));
        assert!(!sub.allows(&res("get", "", "pods", "dev", "web")));
        let named =
            rule(json!({"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}));
        assert!(named.allows(&res("update", "", "configmaps", "dev", "a")));
        assert!(!named.allows(&res("update", "", "configmaps", "dev", "b")));
        assert!(!named.allows(&res("list", "", "configmaps", "dev", "")), "a list names nothing");
        let urls = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}));
        assert!(urls.allows(&url("get", "/healthz")));
        assert!(urls.allows(&url("get", "/apis/apps/v1")));
        assert!(!urls.allows(&url("get", "/metrics")));
        assert!(!urls.allows(&res("list", "", "pods", "dev", "")), "URL rules grant no resources");
    }

    #[test]
    fn subjects_name_users_groups_and_service_accounts() {
        let groups = vec!["dev".to_string(), "system:authenticated".to_string()];
        assert!(subject_matches(&json!({"kind": "User", "name": "alice"}), "alice", &groups, ""));
        assert!(!subject_matches(&json!({"kind": "User", "name": "bob"}), "alice", &groups, ""));
        assert!(subject_matches(&json!({"kind": "Group", "name": "dev"}), "alice", &groups, ""));
        let sa = json!({"kind": "ServiceAccount", "name": "ci"});
        assert!(subject_matches(&sa, "system:serviceaccount:dev:ci", &[], "dev"));
        assert!(!subject_matches(&sa, "system:serviceaccount:dev:ci", &[], ""), "no namespace, no match");
    }

    #[test]
    fn a_role_is_covered_only_by_as_much_or_more() {
        let owner = vec![
            rule(json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "configmaps"]})),
            rule(json!({"verbs": ["*"], "apiGroups": ["apps"], "resources": ["*"]})),
        ];
        assert!(covers(&owner, &rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}))));
        assert!(covers(
            &owner,
            &rule(json!({"verbs": ["delete"], "apiGroups": ["apps"], "resources": ["deployments"]}))
        ));
        assert!(!covers(&owner, &rule(json!({"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]}))));
        assert!(!covers(&owner, &rule(json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["pods"]}))));
        assert!(!covers(&owner, &rule(json!({"verbs": ["get"], "nonResourceURLs": ["/metrics"]}))));
    }

    #[test]
    fn roles_and_bindings_are_validated() {
        let bad = json!({"rules": [{"verbs": [], "resources": ["pods"]}]});
        let errs: Vec<String> = validate_role(&bad, true).iter().map(|e| e.field.clone()).collect();
        assert_eq!(errs, ["rules[0].verbs", "rules[0].apiGroups"]);
        let urls = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]});
        assert_eq!(validate_role(&urls, true).len(), 1);
        assert!(validate_role(&urls, false).is_empty());
        let binding = json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                             "subjects": [{"kind": "User", "name": "alice"}]});
        assert!(validate_binding(&binding, None, true).is_empty());
        assert_eq!(validate_binding(&binding, None, false).len(), 1, "a ClusterRoleBinding names a ClusterRole");
        let mut moved = binding.clone();
        moved["roleRef"]["name"] = json!("other");
        let errs = validate_binding(&moved, Some(&binding), true);
        assert_eq!(errs[0].field, "roleRef");
    }

    fn named_role(name: &str, labels: Value, rules: Value) -> (String, Value) {
        (format!("/r/{name}"), json!({"metadata": {"name": name, "labels": labels}, "rules": rules}))
    }

    #[test]
    fn an_aggregated_role_takes_the_rules_of_the_roles_it_selects_once_each() {
        let read = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]});
        let write = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["create"]});
        let roles = vec![
            named_role("a-read", json!({"agg": "view"}), json!([read])),
            named_role("b-write", json!({"agg": "edit"}), json!([write, read])),
            named_role("c-other", json!({}), json!([{"apiGroups": ["x"], "resources": ["y"], "verbs": ["*"]}])),
        ];
        let edit = json!({"metadata": {"name": "edit"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"agg": "edit"}}, {"matchLabels": {"agg": "view"}}]}});
        assert_eq!(aggregated(&edit, &roles).unwrap(), json!([read, write]));
        assert_eq!(aggregated(&json!({"metadata": {"name": "plain"}}), &roles), None);
        let none = json!({"metadata": {"name": "n"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "no"}}]}});
        assert_eq!(aggregated(&none, &roles).unwrap(), json!([]));
    }
}
