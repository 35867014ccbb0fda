//! Discovery documents built from a set of resources (the [`registry`](crate::registry)'s
//! built-in ones, then a node's custom resources): legacy `/api` (APIVersions), `/apis`
//! (APIGroupList), `/apis/G` (APIGroup), `/api/v1` and `/apis/G/V` (APIResourceList);
//! aggregated discovery v2 (APIGroupDiscoveryList) for `/api` and `/apis`; and the
//! `/version` payload.

use serde_json::{json, Map, Value};

use crate::registry::{self, group_version, ResourceDef};

/// The Content-Type of an aggregated discovery reply; kubectl insists on it exactly.
pub const AGGREGATED_CONTENT_TYPE: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The Kubernetes version kuorum speaks.
pub const KUBE_MAJOR: &str = "1";
pub const KUBE_MINOR: &str = "37";
pub const GIT_VERSION: &str = "v1.37.0-kuorum";

/// `GET /api`: the legacy APIVersions document.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(name: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> =
        versions.iter().map(|v| json!({"groupVersion": group_version(name, v), "version": v})).collect();
    json!({
        "name": name,
        "versions": versions,
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
    })
}

/// `GET /apis`: the legacy APIGroupList document (named groups only).
pub fn api_group_list(resources: &[&'static ResourceDef]) -> Value {
    let groups: Vec<Value> = registry::groups_of(resources).iter().map(|(g, vs)| group_entry(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/{group}`: one APIGroup, if `resources` has the group.
pub fn api_group(resources: &[&'static ResourceDef], group: &str) -> Option<Value> {
    let (name, versions) = registry::groups_of(resources).into_iter().find(|(g, _)| *g == group)?;
    let mut entry = group_entry(name, &versions);
    let obj = entry.as_object_mut()?;
    let mut out = Map::new();
    out.insert("kind".into(), json!("APIGroup"));
    out.insert("apiVersion".into(), json!("v1"));
    out.append(obj);
    Some(Value::Object(out))
}

/// Resources of one group/version, sorted by plural, as discovery lists them.
fn sorted_resources(resources: &[&'static ResourceDef], group: &str, version: &str) -> Vec<&'static ResourceDef> {
    let mut rs: Vec<_> = registry::resources_of(resources, group, version).collect();
    rs.sort_by_key(|r| r.plural);
    rs
}

fn strings(v: &[&str]) -> Value {
    Value::Array(v.iter().map(|s| json!(s)).collect())
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`: the APIResourceList, subresources
/// included, if `served` has the group/version.
pub fn api_resource_list(served: &[&'static ResourceDef], group: &str, version: &str) -> Option<Value> {
    let found = sorted_resources(served, group, version);
    if found.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for r in found {
        let mut m = Map::new();
        m.insert("name".into(), json!(r.plural));
        m.insert("singularName".into(), json!(r.singular));
        m.insert("namespaced".into(), json!(r.namespaced()));
        m.insert("kind".into(), json!(r.kind));
        m.insert("verbs".into(), strings(r.verbs));
        if !r.short_names.is_empty() {
            m.insert("shortNames".into(), strings(r.short_names));
        }
        if !r.categories.is_empty() {
            m.insert("categories".into(), strings(r.categories));
        }
        resources.push(Value::Object(m));
        let mut subs: Vec<_> = r.subresources.iter().collect();
        subs.sort_by_key(|s| s.name);
        for s in subs {
            let mut m = Map::new();
            m.insert("name".into(), json!(format!("{}/{}", r.plural, s.name)));
            m.insert("singularName".into(), json!(""));
            m.insert("namespaced".into(), json!(r.namespaced()));
            let kind = match s.response {
                Some((g, v, k)) => {
                    m.insert("group".into(), json!(g));
                    m.insert("version".into(), json!(v));
                    k
                }
                None => r.kind,
            };
            m.insert("kind".into(), json!(kind));
            m.insert("verbs".into(), strings(s.verbs));
            resources.push(Value::Object(m));
        }
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version),
        "resources": resources,
    }))
}

fn aggregated_resource(r: &ResourceDef) -> Value {
    let mut m = Map::new();
    m.insert("resource".into(), json!(r.plural));
    m.insert("responseKind".into(), json!({"group": r.group, "version": r.version, "kind": r.kind}));
    m.insert("scope".into(), json!(r.scope.as_str()));
    m.insert("singularResource".into(), json!(r.singular));
    m.insert("verbs".into(), strings(r.verbs));
    if !r.short_names.is_empty() {
        m.insert("shortNames".into(), strings(r.short_names));
    }
    if !r.categories.is_empty() {
        m.insert("categories".into(), strings(r.categories));
    }
    if !r.subresources.is_empty() {
        let mut subs: Vec<_> = r.subresources.iter().collect();
        subs.sort_by_key(|s| s.name);
        let subs: Vec<Value> = subs
            .into_iter()
            .map(|s| {
                let (g, v, k) = s.response.unwrap_or((r.group, r.version, r.kind));
                json!({
                    "subresource": s.name,
                    "responseKind": {"group": g, "version": v, "kind": k},
                    "verbs": strings(s.verbs),
                })
            })
            .collect();
        m.insert("subresources".into(), Value::Array(subs));
    }
    Value::Object(m)
}

fn aggregated_group(served: &[&'static ResourceDef], metadata: Value, group: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> =
                sorted_resources(served, group, v).into_iter().map(aggregated_resource).collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    json!({"metadata": metadata, "versions": versions})
}

fn aggregated_list(items: Vec<Value>) -> Value {
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

/// `GET /api` with the aggregated Accept: one item (the core group, no name).
pub fn aggregated_core() -> Value {
    aggregated_list(vec![aggregated_group(&registry::builtin(), json!({}), "", &["v1"])])
}

/// `GET /apis` with the aggregated Accept: one item per named group of `served`.
pub fn aggregated_groups(served: &[&'static ResourceDef]) -> Value {
    let items =
        registry::groups_of(served).iter().map(|(g, vs)| aggregated_group(served, json!({"name": g}), g, vs)).collect();
    aggregated_list(items)
}

/// `GET /version`.
pub fn version_info() -> Value {
    json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "gitVersion": GIT_VERSION,
        "gitCommit": option_env!("KUORUM_GIT_COMMIT").unwrap_or("0000000000000000000000000000000000000000"),
        "gitTreeState": "clean",
        "buildDate": option_env!("KUORUM_BUILD_DATE").unwrap_or("1970-01-01T00:00:00Z"),
        "goVersion": "n/a (kuorum is written in Rust)",
        "compiler": "rustc",
        "platform": "linux/amd64",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_documents() {
        assert_eq!(
            api_versions("10.0.0.1:6443"),
            json!({"kind":"APIVersions","versions":["v1"],
                   "serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"10.0.0.1:6443"}]})
        );
        let builtin = registry::builtin();
        let groups = api_group_list(&builtin);
        assert_eq!(groups["kind"], "APIGroupList");
        assert_eq!(
            groups["groups"].as_array().unwrap().iter().find(|g| g["name"] == "apps").unwrap(),
            &json!({"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],
                   "preferredVersion":{"groupVersion":"apps/v1","version":"v1"}})
        );
        let names: Vec<&str> =
            groups["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
        let want: Vec<&str> = registry::groups().into_iter().map(|(g, _)| g).collect();
        assert_eq!(names, want);
        for g in ["apps", "authentication.k8s.io", "coordination.k8s.io", "rbac.authorization.k8s.io"] {
            assert!(names.contains(&g), "{g}");
        }
        assert_eq!(api_group(&builtin, "apps").unwrap()["kind"], "APIGroup");
        assert!(api_group(&builtin, "example.com").is_none());
    }

    #[test]
    fn resource_lists_include_subresources() {
        let builtin = registry::builtin();
        let apps = api_resource_list(&builtin, "apps", "v1").unwrap();
        assert_eq!(apps["groupVersion"], "apps/v1");
        let rs = apps["resources"].as_array().unwrap();
        let at = |name: &str| rs.iter().position(|r| r["name"] == name).unwrap();
        let d = at("deployments");
        assert_eq!(
            rs[d],
            json!({"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment",
                   "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
                   "shortNames":["deploy"],"categories":["all"]})
        );
        assert_eq!(
            rs[d + 1],
            json!({"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling",
                   "version":"v1","kind":"Scale","verbs":["get","patch","update"]})
        );
        assert_eq!(
            rs[d + 2],
            json!({"name":"deployments/status","singularName":"","namespaced":true,"kind":"Deployment",
                   "verbs":["get","patch","update"]})
        );
        let core = api_resource_list(&builtin, "", "v1").unwrap();
        assert_eq!(core["groupVersion"], "v1");
        let names: Vec<&str> =
            core["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        // Each resource, then its subresources.
        let pods = names.iter().position(|n| *n == "pods").unwrap();
        assert!(names[pods + 1..].iter().take_while(|n| n.starts_with("pods/")).any(|n| *n == "pods/status"));
        for (i, n) in names.iter().enumerate().filter(|(_, n)| n.contains('/')) {
            let parent = n.split('/').next().unwrap();
            assert!(names[..i].contains(&parent), "{n} after {parent}");
        }
        assert!(api_resource_list(&builtin, "apps", "v2").is_none());
    }

    #[test]
    fn aggregated_documents() {
        let core = aggregated_core();
        assert_eq!(core["kind"], "APIGroupDiscoveryList");
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
        assert_eq!(core["items"].as_array().unwrap().len(), 1);
        assert_eq!(core["items"][0]["metadata"], json!({}));
        let v1 = &core["items"][0]["versions"][0];
        assert_eq!(v1["version"], "v1");
        assert_eq!(v1["freshness"], "Current");
        let cm = v1["resources"].as_array().unwrap().iter().find(|r| r["resource"] == "configmaps").unwrap();
        assert_eq!(
            *cm,
            json!({"resource":"configmaps","responseKind":{"group":"","version":"v1","kind":"ConfigMap"},
                   "scope":"Namespaced","singularResource":"configmap",
                   "verbs":["create","delete","deletecollection","get","list","patch","update","watch"],
                   "shortNames":["cm"]})
        );
        let groups = aggregated_groups(&registry::builtin());
        let apps = groups["items"].as_array().unwrap().iter().find(|g| g["metadata"]["name"] == "apps").unwrap();
        let deploy = apps["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "deployments")
            .unwrap();
        assert_eq!(deploy["scope"], "Namespaced");
        assert_eq!(deploy["categories"], json!(["all"]));
        assert_eq!(
            deploy["subresources"],
            json!([{"subresource":"scale","responseKind":{"group":"autoscaling","version":"v1","kind":"Scale"},
                    "verbs":["get","patch","update"]},
                   {"subresource":"status","responseKind":{"group":"apps","version":"v1","kind":"Deployment"},
                    "verbs":["get","patch","update"]}])
        );
        let coordination =
            groups["items"].as_array().unwrap().iter().find(|g| g["metadata"]["name"] == "coordination.k8s.io");
        assert_eq!(coordination.unwrap()["versions"][0]["resources"][0]["resource"], "leases");
        let ns = core["items"][0]["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "namespaces")
            .unwrap()
            .clone();
        assert_eq!(ns["scope"], "Cluster");
    }

    #[test]
    fn custom_resources_join_their_group() {
        let widget = registry::intern_def(ResourceDef {
            group: "example.com",
            version: "v1beta1",
            kind: "Widget",
            plural: "widgets",
            singular: "widget",
            list_kind: "WidgetList",
            subresources: registry::custom_subresources(true, true),
            short_names: &[],
            categories: &[],
            ..*registry::lookup("", "v1", "configmaps").unwrap()
        });
        let mut served = registry::builtin();
        served.push(widget);
        served.push(registry::intern_def(ResourceDef { version: "v1", ..*widget }));
        let group = api_group(&served, "example.com").unwrap();
        assert_eq!(group["preferredVersion"], json!({"groupVersion": "example.com/v1", "version": "v1"}));
        assert_eq!(group["versions"][1]["version"], "v1beta1");
        let list = api_resource_list(&served, "example.com", "v1beta1").unwrap();
        let names: Vec<&str> =
            list["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["widgets", "widgets/scale", "widgets/status"]);
        let agg = aggregated_groups(&served);
        let item = agg["items"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(item["metadata"]["name"], "example.com");
        assert_eq!(item["versions"][0]["version"], "v1");
        assert_eq!(item["versions"][1]["resources"][0]["responseKind"]["version"], "v1beta1");
    }

    #[test]
    fn version_payload() {
        let v = version_info();
        assert_eq!(v["major"], "1");
        assert_eq!(v["minor"], "37");
        assert_eq!(v["gitVersion"], "v1.37.0-kuorum");
        assert_eq!(v["platform"], "linux/amd64");
        for f in ["gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler"] {
            assert!(v[f].is_string(), "{f}");
        }
    }
}
