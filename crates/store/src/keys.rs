//! Storage keys. One key per object, laid out so one prefix scan answers each list:
//!
//! ```text
//! /registry/{group}/{resource}/{namespace}/{name}    namespaced (group "core" for "")
//! /registry/{group}/{resource}/{name}                cluster-scoped
//! ```
//!
//! e.g. `/registry/core/configmaps/default/app-config`. Names and namespaces never hold
//! `/` (name validation refuses it), so a prefix that ends in `/` never matches a sibling.

/// Where one object lives in the keyspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectKey<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

fn group_segment(group: &str) -> &str {
    if group.is_empty() {
        "core"
    } else {
        group
    }
}

impl ObjectKey<'_> {
    pub fn encode(&self) -> String {
        match self.namespace {
            Some(ns) => format!("/registry/{}/{}/{}/{}", group_segment(self.group), self.resource, ns, self.name),
            None => format!("/registry/{}/{}/{}", group_segment(self.group), self.resource, self.name),
        }
    }
}

/// The prefix of every object of one resource, in one namespace or in all of them.
pub fn collection_prefix(group: &str, resource: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("/registry/{}/{}/{}/", group_segment(group), resource, ns),
        None => format!("/registry/{}/{}/", group_segment(group), resource),
    }
}

/// The key a node writes once it has served as a member (etcd's "published" member): a
/// node that starts with an empty data directory although its peers hold this key for it
/// has lost its data, and must not vote (it forgot whom it voted for). Outside
/// `/registry/`, so no API lists it.
pub fn member_started_key(id: u64) -> String {
    format!("{MEMBERS_PREFIX}{id}/started")
}

/// The prefix of what the cluster keeps about its members.
pub const MEMBERS_PREFIX: &str = "/kuorum/members/";

/// The key of a namespace object.
/// The prefix of every namespace's key.
pub const NAMESPACES_PREFIX: &str = "/registry/core/namespaces/";

pub fn namespace_key(name: &str) -> String {
    ObjectKey { group: "", resource: "namespaces", namespace: None, name }.encode()
}

/// The namespace segment of a namespaced key (`/registry/g/r/NS/name`), if it has one.
pub fn namespace_of(key: &str) -> Option<&str> {
    let parts: Vec<&str> = key.split('/').collect();
    // ["", "registry", group, resource, ns, name]
    if parts.len() == 6 {
        Some(parts[4])
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_prefixes_nest() {
        let k = ObjectKey { group: "", resource: "configmaps", namespace: Some("default"), name: "a" };
        assert_eq!(k.encode(), "/registry/core/configmaps/default/a");
        assert!(k.encode().starts_with(&collection_prefix("", "configmaps", Some("default"))));
        assert!(k.encode().starts_with(&collection_prefix("", "configmaps", None)));
        assert!(!k.encode().starts_with(&collection_prefix("", "configmaps", Some("def"))));
        assert_eq!(namespace_of(&k.encode()), Some("default"));
        assert_eq!(namespace_of(&namespace_key("default")), None);
        assert_eq!(namespace_key("default"), format!("{NAMESPACES_PREFIX}default"));
        assert_eq!(collection_prefix("", "namespaces", None), NAMESPACES_PREFIX);
        let d = ObjectKey { group: "apps", resource: "deployments", namespace: Some("x"), name: "w" };
        assert_eq!(d.encode(), "/registry/apps/deployments/x/w");
    }
}
