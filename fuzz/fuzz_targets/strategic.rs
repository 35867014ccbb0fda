//! Strategic merge patches against the schemas of several built-in kinds (their merge
//! keys, strategies and `$retainKeys`), each applied to a live object of that kind: the
//! first byte picks the kind, the rest is the patch body.
#![no_main]
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fn live(kind: &str) -> Value {
    let meta = json!({"name": "x", "namespace": "default", "labels": {"app": "web"}, "finalizers": ["a", "b"],
                      "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u"}]});
    let pod_spec = json!({
        "containers": [{"name": "c", "image": "nginx", "args": ["x"], "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "env": [{"name": "A", "value": "1"}], "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
                       {"name": "d", "image": "redis"}],
        "initContainers": [{"name": "i", "image": "busybox"}],
        "volumes": [{"name": "v", "configMap": {"name": "cm"}}],
        "tolerations": [{"key": "k", "operator": "Exists"}],
        "imagePullSecrets": [{"name": "s"}],
    });
    match kind {
        "Pod" => json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}),
        "Service" => json!({"apiVersion": "v1", "kind": "Service", "metadata": meta,
                            "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}], "selector": {"app": "web"}}}),
        "ConfigMap" => json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "1"}}),
        "ClusterRole" => json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta,
                                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        "Node" => json!({"apiVersion": "v1", "kind": "Node", "metadata": meta,
                         "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
                         "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                                    "conditions": [{"type": "Ready", "status": "True"}]}}),
        _ => json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                             "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
                             "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec}}}),
    }
}

const KINDS: [(&str, &str, &str); 6] = [
    ("apps", "v1", "Deployment"),
    ("", "v1", "Pod"),
    ("", "v1", "Service"),
    ("", "v1", "ConfigMap"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("", "v1", "Node"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let (group, version, kind) = KINDS[pick as usize % KINDS.len()];
    let Some(schema) = kuorum_schema::Schemas::builtin().kind(group, version, kind) else { return };
    let _ = kuorum_patch::strategic_merge_patch(&live(kind), body, schema);
});
