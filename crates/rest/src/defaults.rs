//! Owns the defaults kube-apiserver fills in on create and update of built-in kinds
//! (its `SetDefaults_*` functions), for the fields clients read back and kubectl
//! prints: a Secret's type, a Service's type, ports and session affinity, a pod
//! template's policies, a container's pull policy and termination message settings, a
//! Deployment's strategy and limits.
//!
//! ```text
//! {"kind": "Secret", "data": {...}}                  -> + "type": "Opaque"
//! containers: [{"name": "c", "image": "nginx"}]       -> + "imagePullPolicy": "Always", ...
//! ports: [{"port": 80}]                               -> + "protocol": "TCP", "targetPort": 80
//! ```
//!
//! A default is only ever added where the field is absent; nothing a client set changes.
//! A CustomResourceDefinition gets kube-apiserver's defaults for its names and conversion,
//! and a custom resource the `default`s of its version's schema.

use kuorum_api::ResourceDef;
use serde_json::{json, Map, Value};

use crate::object::Object;
use crate::route::Target;
use crate::strategy;

/// Fills in the defaults of an object written through `t`.
pub(crate) fn apply(t: &Target, obj: &mut Object) {
    match &t.custom {
        Some(c) => crate::custom::apply_defaults(c, obj),
        None if strategy::is_crd(t) => kuorum_api::crd::set_defaults(obj),
        None => builtin(t.def, obj),
    }
}

/// Fills in `obj`'s defaults for its built-in kind.
pub(crate) fn builtin(def: &ResourceDef, obj: &mut Object) {
    match (def.group, def.kind) {
        ("", "Secret") => {
            set(obj, "type", json!("Opaque"));
        }
        ("", "Service") => {
            if let Some(spec) = child(obj, "spec") {
                service_spec(spec);
            }
        }
        ("", "Pod") => {
            if let Some(spec) = child(obj, "spec") {
                pod_spec(spec);
            }
        }
        ("apps", "Deployment") => {
            if let Some(spec) = child(obj, "spec") {
                deployment_spec(spec);
            }
        }
        _ => {}
    }
}

/// Sets `key` to `value` when absent (or null).
fn set(m: &mut Map<String, Value>, key: &str, value: Value) {
    if m.get(key).is_none_or(Value::is_null) {
        m.insert(key.into(), value);
    }
}

/// The object at `key`, if it is one.
fn child<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

fn each<'a>(m: &'a mut Map<String, Value>, key: &str) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten().filter_map(Value::as_object_mut)
}

fn service_spec(spec: &mut Map<String, Value>) {
    set(spec, "type", json!("ClusterIP"));
    set(spec, "sessionAffinity", json!("None"));
    for port in each(spec, "ports") {
        set(port, "protocol", json!("TCP"));
        if let Some(p) = port.get("port").cloned() {
            set(port, "targetPort", p);
        }
    }
}

fn deployment_spec(spec: &mut Map<String, Value>) {
    set(spec, "replicas", json!(1));
    set(spec, "revisionHistoryLimit", json!(10));
    set(spec, "progressDeadlineSeconds", json!(600));
    set(spec, "strategy", json!({}));
    if let Some(strategy) = child(spec, "strategy") {
        set(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            set(strategy, "rollingUpdate", json!({}));
            if let Some(ru) = child(strategy, "rollingUpdate") {
                set(ru, "maxUnavailable", json!("25%"));
                set(ru, "maxSurge", json!("25%"));
            }
        }
    }
    if let Some(pod) = child(spec, "template").and_then(|t| child(t, "spec")) {
        pod_spec(pod);
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    set(spec, "restartPolicy", json!("Always"));
    set(spec, "terminationGracePeriodSeconds", json!(30));
    set(spec, "dnsPolicy", json!("ClusterFirst"));
    set(spec, "securityContext", json!({}));
    set(spec, "schedulerName", json!("default-scheduler"));
    for list in ["initContainers", "containers"] {
        for c in each(spec, list) {
            container(c);
        }
    }
}

fn container(c: &mut Map<String, Value>) {
    set(c, "terminationMessagePath", json!("/dev/termination-log"));
    set(c, "terminationMessagePolicy", json!("File"));
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    set(c, "imagePullPolicy", json!(pull_policy(image)));
    set(c, "resources", json!({}));
    for port in each(c, "ports") {
        set(port, "protocol", json!("TCP"));
    }
}

/// `Always` for `:latest` or an untagged image, else `IfNotPresent` (digests count as
/// tags).
fn pull_policy(image: &str) -> &'static str {
    let name = image.rsplit('/').next().unwrap_or(image);
    if image.contains('@') {
        return "IfNotPresent";
    }
    match name.rsplit_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuorum_api::registry;

    fn run(plural: &str, group: &str, v: Value) -> Value {
        let def = registry::lookup(group, "v1", plural).unwrap();
        let mut o = v.as_object().unwrap().clone();
        builtin(def, &mut o);
        Value::Object(o)
    }

    #[test]
    fn defaults_fill_only_what_is_absent() {
        assert_eq!(run("secrets", "", json!({}))["type"], "Opaque");
        assert_eq!(run("secrets", "", json!({"type": "kubernetes.io/tls"}))["type"], "kubernetes.io/tls");
        let svc = run(
            "services",
            "",
            json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}}),
        );
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(svc["spec"]["ports"][0], json!({"port": 80, "protocol": "TCP", "targetPort": 80}));
        assert_eq!(svc["spec"]["ports"][1], json!({"port": 53, "protocol": "UDP", "targetPort": "dns"}));
        let d = run(
            "deployments",
            "apps",
            json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "nginx"}, {"name": "b", "image": "reg:5000/x/y:1.2", "imagePullPolicy": "Never"}]}}}}),
        );
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        let cs = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(cs[0]["imagePullPolicy"], "Always");
        assert_eq!(cs[1]["imagePullPolicy"], "Never");
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
        let recreate = run("deployments", "apps", json!({"spec": {"strategy": {"type": "Recreate"}}}));
        assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn pull_policies() {
        for (image, want) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("localhost:5000/nginx", "Always"),
            ("localhost:5000/nginx:1", "IfNotPresent"),
            ("nginx@sha256:abc", "IfNotPresent"),
        ] {
            assert_eq!(pull_policy(image), want, "{image}");
        }
    }
}
