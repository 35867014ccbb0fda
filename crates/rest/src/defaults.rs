//! Owns when defaults are filled in: on every create, update and patch, a built-in
//! kind's (its strategy's [`kuorum_api::kinds::Strategy::defaults`], kube-apiserver's
//! `SetDefaults_*`), a custom resource's (the `default`s of its version's schema).
//!
//! ```text
//! {"kind": "Secret", "data": {...}}                  -> + "type": "Opaque"
//! containers: [{"name": "c", "image": "nginx"}]       -> + "imagePullPolicy": "Always", ...
//! ports: [{"port": 80}]                               -> + "protocol": "TCP", "targetPort": 80
//! ```
//!
//! A default is only ever added where the field is absent; nothing a client set changes.

use kuorum_api::ResourceDef;

use crate::object::Object;
use crate::target::Target;

/// Fills in the defaults of an object written through `t`.
pub(crate) fn apply(t: &Target, obj: &mut Object) {
    match &t.custom {
        Some(c) => crate::custom::apply_defaults(c, obj),
        None => builtin(t.def, obj),
    }
}

/// Fills in `obj`'s defaults for its built-in kind.
pub(crate) fn builtin(def: &ResourceDef, obj: &mut Object) {
    if let Some(s) = kuorum_api::kinds::of(def) {
        s.defaults(obj);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuorum_api::registry;
    use serde_json::{json, Value};

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
}
