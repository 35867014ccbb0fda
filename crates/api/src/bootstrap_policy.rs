//! kube-apiserver's bootstrap RBAC policy, for the resources kuorum serves: the
//! ClusterRoles every cluster starts with and the bindings that give them to the system
//! groups. `view`, `edit` and `admin` are written out here rather than aggregated from
//! labelled roles (kuorum does not aggregate ClusterRoles).

use serde_json::{json, Value};

/// One rule: `verbs` on `resources` of `group`.
fn rule(group: &str, resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": [group], "resources": resources, "verbs": verbs})
}

fn urls(paths: &[&str], verbs: &[&str]) -> Value {
    json!({"nonResourceURLs": paths, "verbs": verbs})
}

fn metadata(name: &str) -> Value {
    json!({
        "name": name,
        "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    })
}

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

fn cluster_role(name: &str, rules: Vec<Value>) -> (&'static str, Value) {
    (
        "clusterroles",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": metadata(name), "rules": rules}),
    )
}

/// The bootstrap ClusterRoles, as `(resource, object)`.
pub fn cluster_roles() -> Vec<(&'static str, Value)> {
    let view = vec![
        rule(
            "",
            &["configmaps", "events", "pods", "pods/status", "services", "services/status", "serviceaccounts"],
            READ,
        ),
        rule("", &["namespaces", "namespaces/status"], READ),
        rule("apps", &["deployments", "deployments/scale", "deployments/status"], READ),
        rule("coordination.k8s.io", &["leases"], READ),
    ];
    let mut edit = view.clone();
    edit.extend([
        rule("", &["configmaps", "events", "pods", "services", "serviceaccounts", "secrets"], WRITE),
        rule("", &["secrets"], READ),
        rule("apps", &["deployments", "deployments/scale"], WRITE),
        rule("coordination.k8s.io", &["leases"], WRITE),
    ]);
    let mut admin = edit.clone();
    admin.push(rule(
        "rbac.authorization.k8s.io",
        &["roles", "rolebindings"],
        &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    ));
    vec![
        cluster_role("cluster-admin", vec![rule("*", &["*"], &["*"]), urls(&["*"], &["*"])]),
        cluster_role("admin", admin),
        cluster_role("edit", edit),
        cluster_role("view", view),
        cluster_role(
            "system:discovery",
            vec![urls(
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                &["get"],
            )],
        ),
        cluster_role(
            "system:public-info-viewer",
            vec![urls(&["/healthz", "/livez", "/readyz", "/version", "/version/"], &["get"])],
        ),
        cluster_role(
            "system:basic-user",
            vec![
                rule("authorization.k8s.io", &["selfsubjectaccessreviews", "selfsubjectrulesreviews"], &["create"]),
                rule("authentication.k8s.io", &["selfsubjectreviews"], &["create"]),
            ],
        ),
        // The service account issuer's OIDC discovery documents, for workloads that
        // verify other workloads' tokens.
        cluster_role(
            "system:service-account-issuer-discovery",
            vec![urls(
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
                &["get"],
            )],
        ),
        cluster_role(
            "system:monitoring",
            vec![urls(
                &["/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"],
                &["get"],
            )],
        ),
    ]
}

/// The bootstrap ClusterRoleBindings, as `(resource, object)`: each role to its groups.
pub fn cluster_role_bindings() -> Vec<(&'static str, Value)> {
    [
        ("cluster-admin", &["system:masters"][..]),
        ("system:discovery", &["system:authenticated"][..]),
        ("system:public-info-viewer", &["system:authenticated", "system:unauthenticated"][..]),
        ("system:basic-user", &["system:authenticated"][..]),
        ("system:monitoring", &["system:monitoring"][..]),
        ("system:service-account-issuer-discovery", &["system:serviceaccounts"][..]),
    ]
    .into_iter()
    .map(|(name, groups)| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
            .collect();
        (
            "clusterrolebindings",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": metadata(name),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": subjects,
            }),
        )
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use crate::rbac::{validate_binding, validate_role};

    use super::*;

    #[test]
    fn the_bootstrap_policy_is_valid_and_every_binding_names_a_role() {
        let roles = cluster_roles();
        for (_, r) in &roles {
            assert!(validate_role(r, false).is_empty(), "{r}");
        }
        for (_, b) in cluster_role_bindings() {
            assert!(validate_binding(&b, None, false).is_empty(), "{b}");
            assert!(roles.iter().any(|(_, r)| r["metadata"]["name"] == b["roleRef"]["name"]));
        }
    }
}
