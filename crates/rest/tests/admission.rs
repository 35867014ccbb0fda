//! The default admission plugins through the router (`oneshot`) over a real single-node
//! cluster: what each adds to a new pod (ServiceAccount, LimitRanger, Priority,
//! DefaultTolerationSeconds), what each refuses with kube's message (a missing service
//! account or PriorityClass, a LimitRange's max, PodSecurity's levels, a ResourceQuota),
//! quota charging (exactly the quota's worth of concurrent creates get in; dry runs are
//! not charged), and `--disable-admission-plugins`.

mod common;

use axum::http::StatusCode;
use common::{app, App};
use kuorum_rest::admission::Plugins;
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";
const QUOTAS: &str = "/api/v1/namespaces/default/resourcequotas";

fn pod(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("containers").is_none() {
        spec["containers"] = json!([{"name": "c", "image": "nginx:1.27"}]);
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

async fn created(app: &App, uri: &str, body: Value) -> Value {
    let r = app.post(uri, body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    r.json()
}

/// A quota as its controller has seen it: `status.hard` from `spec.hard`, nothing used.
async fn quota(app: &App, name: &str, hard: Value) -> Value {
    let q = created(app, QUOTAS, json!({"metadata": {"name": name}, "spec": {"hard": hard}})).await;
    let used: serde_json::Map<String, Value> =
        hard.as_object().unwrap().keys().map(|k| (k.clone(), json!("0"))).collect();
    let mut q = q;
    q["status"] = json!({"hard": hard, "used": used});
    let r = app.put(&format!("{QUOTAS}/{name}/status"), q).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    r.json()
}

#[tokio::test]
async fn a_new_pod_gets_its_account_its_token_volume_its_priority_and_tolerations() {
    let app = app().await;
    app.namespace("default").await;
    let p = created(&app, PODS, pod("web", json!({}))).await;
    let spec = &p["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    let volume = &spec["volumes"][0];
    let name = volume["name"].as_str().unwrap();
    assert!(name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5, "{name}");
    assert_eq!(
        volume["projected"]["sources"][0],
        json!({"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}})
    );
    assert_eq!(volume["projected"]["defaultMode"], 420);
    assert_eq!(
        spec["containers"][0]["volumeMounts"],
        json!([{"name": name, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}])
    );
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(
        spec["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        ])
    );

    // An account that turns automounting off; a toleration of every NoExecute taint.
    created(
        &app,
        "/api/v1/namespaces/default/serviceaccounts",
        json!({"metadata": {"name": "quiet"}, "automountServiceAccountToken": false}),
    )
    .await;
    let p = created(
        &app,
        PODS,
        pod(
            "quiet",
            json!({"serviceAccountName": "quiet",
        "tolerations": [{"operator": "Exists", "effect": "NoExecute"}]}),
        ),
    )
    .await;
    assert!(p["spec"].get("volumes").is_none(), "{p}");
    assert_eq!(p["spec"]["tolerations"].as_array().unwrap().len(), 1);

    // A named account must exist; a named class too.
    let r = app.post(PODS, pod("lost", json!({"serviceAccountName": "ghost"}))).await;
    r.status_of(
        403,
        "Forbidden",
        r#"pods "lost" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found"#,
    );
    let r = app.post(PODS, pod("vip", json!({"priorityClassName": "gold"}))).await;
    r.status_of(403, "Forbidden", r#"pods "vip" is forbidden: no PriorityClass with name gold was found"#);

    // A class gives its value; a global default applies to pods that name none.
    created(&app, "/apis/scheduling.k8s.io/v1/priorityclasses", json!({"metadata": {"name": "gold"}, "value": 1000}))
        .await;
    created(
        &app,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        json!({"metadata": {"name": "base"}, "value": 10, "globalDefault": true, "preemptionPolicy": "Never"}),
    )
    .await;
    let p = created(&app, PODS, pod("vip", json!({"priorityClassName": "gold"}))).await;
    assert_eq!(p["spec"]["priority"], 1000);
    let p = created(&app, PODS, pod("plain", json!({}))).await;
    assert_eq!((&p["spec"]["priorityClassName"], &p["spec"]["priority"]), (&json!("base"), &json!(10)));
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");
    let r = app.post(PODS, pod("liar", json!({"priorityClassName": "gold", "priority": 5}))).await;
    r.status_of(403, "Forbidden", "pods \"liar\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name");
}

#[tokio::test]
async fn limit_ranges_default_and_bound_containers() {
    let app = app().await;
    app.namespace("default").await;
    created(
        &app,
        "/api/v1/namespaces/default/limitranges",
        json!({"metadata": {"name": "limits"}, "spec": {"limits": [
            {"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "100m"},
             "max": {"cpu": "1"}}
        ]}}),
    )
    .await;
    let p = created(
        &app,
        PODS,
        pod(
            "web",
            json!({"containers": [
                {"name": "app", "image": "nginx:1.27"},
                {"name": "side", "image": "nginx:1.27", "resources": {"limits": {"memory": "64Mi"}}}
            ]}),
        ),
    )
    .await;
    // The range's defaultRequest took its memory from its default.
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "100m", "memory": "256Mi"}})
    );
    assert_eq!(
        p["spec"]["containers"][1]["resources"],
        json!({"limits": {"memory": "64Mi", "cpu": "500m"}, "requests": {"memory": "64Mi", "cpu": "100m"}})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app; cpu request for container side; cpu limit for container side"
    );
    let big = pod(
        "big",
        json!({"containers": [{"name": "app", "image": "nginx:1.27", "resources": {"limits": {"cpu": "2"}}}]}),
    );
    app.post(PODS, big).await.status_of(
        403,
        "Forbidden",
        r#"pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2"#,
    );
}

async fn labelled_namespace(app: &App, labels: Value) {
    let ns = app.get("/api/v1/namespaces/default").await.json();
    let mut ns = ns;
    ns["metadata"]["labels"] = labels;
    assert_eq!(app.put("/api/v1/namespaces/default", ns).await.status, StatusCode::OK);
}

#[tokio::test]
async fn pod_security_enforces_and_warns() {
    let app = app().await;
    app.namespace("default").await;
    labelled_namespace(
        &app,
        json!({"pod-security.kubernetes.io/enforce": "baseline",
                                     "pod-security.kubernetes.io/warn": "restricted"}),
    )
    .await;
    let privileged =
        pod("root", json!({"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": true}}]}));
    app.post(PODS, privileged).await.status_of(
        403,
        "Forbidden",
        r#"pods "root" is forbidden: violates PodSecurity "baseline:latest": privileged (container "c" must not set securityContext.privileged=true)"#,
    );
    // Baseline admits a plain pod, and the restricted warning says what it lacks.
    let r = app.post(PODS, pod("plain", json!({}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let warning = r.headers.get("warning").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(
        warning.starts_with(
            r#"299 - "would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false"#
        ),
        "{warning}"
    );

    labelled_namespace(&app, json!({"pod-security.kubernetes.io/enforce": "restricted"})).await;
    let r = app.post(PODS, pod("loose", json!({}))).await;
    r.status_of(403, "Forbidden", concat!(
        r#"pods "loose" is forbidden: violates PodSecurity "restricted:latest": "#,
        r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), "#,
        r#"unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), "#,
        r#"runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), "#,
        r#"seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
    ));
    let tight = pod(
        "tight",
        json!({"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "x", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}),
    );
    let r = app.post(PODS, tight).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    assert!(r.headers.get("warning").is_none());

    // A Deployment's template is warned about, never refused.
    let d = json!({"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    let r = app.post("/apis/apps/v1/namespaces/default/deployments", d).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let warning = r.headers.get("warning").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(warning.contains(r#"would violate PodSecurity \"restricted:latest\""#), "{warning}");
}

#[tokio::test]
async fn quotas_admit_exactly_their_worth() {
    let app = app().await;
    app.namespace("default").await;
    quota(&app, "pods", json!({"pods": "10"})).await;
    // A dry run is checked but not charged.
    let r = app.post(&format!("{PODS}?dryRun=All"), pod("dry", json!({}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    assert_eq!(app.get(&format!("{QUOTAS}/pods")).await.json()["status"]["used"]["pods"], "0");

    // 20 at once: 10 get in, the others meet kube's message.
    let mut tasks = Vec::new();
    for i in 0..20 {
        let a = App { router: app.router.clone(), state: app.state.clone() };
        tasks.push(tokio::spawn(async move {
            let r = a.post(PODS, pod(&format!("p{i}"), json!({}))).await;
            (r.status, r.json())
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        let (status, body) = t.await.unwrap();
        match status {
            StatusCode::CREATED => admitted += 1,
            StatusCode::FORBIDDEN => {
                let m = body["message"].as_str().unwrap();
                assert!(
                    m.ends_with(
                        "is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10"
                    ),
                    "{m}"
                );
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(admitted, 10);
    assert_eq!(app.get(PODS).await.json()["items"].as_array().unwrap().len(), 10);
    assert_eq!(app.get(&format!("{QUOTAS}/pods")).await.json()["status"]["used"]["pods"], "10");
}

#[tokio::test]
async fn quotas_on_compute_want_it_named() {
    let app = app().await;
    app.namespace("default").await;
    quota(&app, "compute", json!({"requests.cpu": "1", "limits.memory": "1Gi"})).await;
    let r = app.post(PODS, pod("bare", json!({}))).await;
    r.status_of(
        403,
        "Forbidden",
        r#"pods "bare" is forbidden: failed quota: compute: must specify limits.memory for: c; requests.cpu for: c"#,
    );
    let sized = |name: &str, cpu: &str| {
        pod(
            name,
            json!({"containers": [{"name": "c", "image": "x",
        "resources": {"requests": {"cpu": cpu}, "limits": {"memory": "512Mi"}}}]}),
        )
    };
    created(&app, PODS, sized("a", "600m")).await;
    let q = app.get(&format!("{QUOTAS}/compute")).await.json();
    assert_eq!(q["status"]["used"], json!({"limits.memory": "512Mi", "requests.cpu": "600m"}));
    let r = app.post(PODS, sized("b", "500m")).await;
    r.status_of(403, "Forbidden",
        r#"pods "b" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1"#);
    created(&app, PODS, sized("c", "400m")).await;
    // Objects a quota does not track are not charged to it.
    created(&app, "/api/v1/namespaces/default/configmaps", json!({"metadata": {"name": "cm"}})).await;
}

#[tokio::test]
async fn disabled_plugins_do_nothing() {
    let mut app = app().await;
    app.state.admission =
        Plugins::with_disabled(&["ServiceAccount,Priority,DefaultTolerationSeconds,ResourceQuota"]).unwrap();
    app.router = kuorum_rest::router(app.state.clone());
    app.namespace("default").await;
    quota(&app, "none", json!({"pods": "0"})).await;
    let p = created(&app, PODS, pod("web", json!({}))).await;
    for field in ["serviceAccountName", "volumes", "priority", "tolerations"] {
        assert!(p["spec"].get(field).is_none(), "{field}: {p}");
    }
}

/// A create that cannot get its quota charged (here: this node's charging turn held)
/// gives up at the request timeout with a 504, and stores nothing.
#[tokio::test]
async fn a_charge_that_cannot_proceed_times_out() {
    let mut app = app().await;
    app.state.request_timeout = std::time::Duration::from_millis(300);
    app.router = kuorum_rest::router(app.state.clone());
    app.namespace("default").await;
    quota(&app, "pods", json!({"pods": "10"})).await;
    let turn = app.state.quota_charging.clone();
    let _held = turn.lock().await;
    let started = std::time::Instant::now();
    let r = app.post(PODS, pod("waits", json!({}))).await;
    assert_eq!(r.status, StatusCode::GATEWAY_TIMEOUT, "{}", r.json());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(app.get(&format!("{PODS}/waits")).await.status, StatusCode::NOT_FOUND);
}

/// TaintNodesByCondition, DefaultStorageClass, DefaultIngressClass and
/// StorageObjectInUseProtection fill in what a new Node, claim, volume and Ingress lack.
#[tokio::test]
async fn new_nodes_claims_volumes_and_ingresses_get_kubes_defaults() {
    let app = app().await;
    app.namespace("default").await;
    let node = created(&app, "/api/v1/nodes", json!({"metadata": {"name": "n1"}})).await;
    assert_eq!(node["spec"]["taints"], json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]));
    let tainted = json!({"metadata": {"name": "n2"}, "spec": {"taints": [
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}, {"key": "x", "effect": "NoExecute"}]}});
    let node = created(&app, "/api/v1/nodes", tainted).await;
    assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 2, "not added twice: {node}");

    const CLAIMS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";
    let claim = |name: &str, class: Option<&str>| {
        let mut c = json!({"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                               "resources": {"requests": {"storage": "1Gi"}}}});
        if let Some(class) = class {
            c["spec"]["storageClassName"] = json!(class);
        }
        c
    };
    // No default class yet: the claim stays without one.
    let c = created(&app, CLAIMS, claim("a", None)).await;
    assert!(c["spec"].get("storageClassName").is_none(), "{c}");
    assert_eq!(c["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));
    let class = |name: &str, default: bool| {
        let annotations =
            if default { json!({"storageclass.kubernetes.io/is-default-class": "true"}) } else { json!({}) };
        json!({"metadata": {"name": name, "annotations": annotations}, "provisioner": "example.com/p"})
    };
    const CLASSES: &str = "/apis/storage.k8s.io/v1/storageclasses";
    created(&app, CLASSES, class("fast", false)).await;
    created(&app, CLASSES, class("standard", true)).await;
    let c = created(&app, CLAIMS, claim("b", None)).await;
    assert_eq!(c["spec"]["storageClassName"], "standard");
    let c = created(&app, CLAIMS, claim("c", Some(""))).await;
    assert_eq!(c["spec"]["storageClassName"], "", "an empty class asks for none");
    let c = created(&app, CLAIMS, claim("d", Some("fast"))).await;
    assert_eq!(c["spec"]["storageClassName"], "fast");

    let pv = json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "hostPath": {"path": "/tmp/pv1"}}});
    let pv = created(&app, "/api/v1/persistentvolumes", pv).await;
    assert_eq!(pv["metadata"]["finalizers"], json!(["kubernetes.io/pv-protection"]));
    // The finalizer holds a deleted claim until the protection controller lets it go.
    let r = app.delete(&format!("{CLAIMS}/a")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.json()["metadata"]["deletionTimestamp"].is_string(), "{}", r.json());

    const INGRESSES: &str = "/apis/networking.k8s.io/v1/namespaces/default/ingresses";
    let ingress = |name: &str| json!({"metadata": {"name": name}, "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}});
    let i = created(&app, INGRESSES, ingress("plain")).await;
    assert!(i["spec"].get("ingressClassName").is_none(), "{i}");
    created(
        &app,
        "/apis/networking.k8s.io/v1/ingressclasses",
        json!({"metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
               "spec": {"controller": "k8s.io/ingress-nginx"}}),
    )
    .await;
    let i = created(&app, INGRESSES, ingress("classy")).await;
    assert_eq!(i["spec"]["ingressClassName"], "nginx");
}

/// RuntimeClass: a pod that names a class gets its overhead and scheduling, and is
/// refused with kube's messages when the class is missing or the pod disagrees with it.
#[tokio::test]
async fn runtime_classes_give_pods_their_overhead_and_scheduling() {
    let app = app().await;
    app.namespace("default").await;
    let r = app.post(PODS, pod("a", json!({"runtimeClassName": "gvisor"}))).await;
    r.status_of(403, "Forbidden", r#"pods "a" is forbidden: pod rejected: RuntimeClass "gvisor" not found"#);
    created(
        &app,
        "/apis/node.k8s.io/v1/runtimeclasses",
        json!({"metadata": {"name": "gvisor"}, "handler": "runsc",
               "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
               "scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                              "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}}),
    )
    .await;
    let p = created(&app, PODS, pod("a", json!({"runtimeClassName": "gvisor", "nodeSelector": {"disk": "ssd"}}))).await;
    assert_eq!(p["spec"]["overhead"], json!({"cpu": "250m", "memory": "64Mi"}));
    assert_eq!(p["spec"]["nodeSelector"], json!({"disk": "ssd", "sandbox": "gvisor"}));
    let tolerations = p["spec"]["tolerations"].as_array().unwrap();
    assert!(tolerations.iter().any(|t| t["key"] == "sandbox"), "{p}");
    // The same overhead written otherwise is the same.
    created(&app, PODS, pod("b", json!({"runtimeClassName": "gvisor", "overhead": {"cpu": "0.25", "memory": "64Mi"}})))
        .await;
    let r = app.post(PODS, pod("c", json!({"runtimeClassName": "gvisor", "overhead": {"cpu": "1"}}))).await;
    r.status_of(
        403,
        "Forbidden",
        r#"pods "c" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"#,
    );
    let r = app.post(PODS, pod("d", json!({"runtimeClassName": "gvisor", "nodeSelector": {"sandbox": "kata"}}))).await;
    r.status_of(403, "Forbidden", r#"pods "d" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor; pod.spec.nodeSelector[sandbox] = kata"#);
    let r = app.post(PODS, pod("e", json!({"overhead": {"cpu": "1"}}))).await;
    r.status_of(
        403,
        "Forbidden",
        r#"pods "e" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"#,
    );
}

/// An update that uses more is charged by what it adds: a Service that becomes a
/// NodePort takes a `services.nodeports` slot, and the next one that would is refused.
#[tokio::test]
async fn an_update_that_uses_more_is_charged() {
    let app = app().await;
    app.namespace("default").await;
    quota(&app, "ports", json!({"services.nodeports": "1"})).await;
    const SERVICES: &str = "/api/v1/namespaces/default/services";
    let service = |name: &str| json!({"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}});
    let a = created(&app, SERVICES, service("a")).await;
    let b = created(&app, SERVICES, service("b")).await;
    let mut a = a;
    a["spec"]["type"] = json!("NodePort");
    let r = app.put(&format!("{SERVICES}/a"), a).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    let q = app.get(&format!("{QUOTAS}/ports")).await.json();
    assert_eq!(q["status"]["used"]["services.nodeports"], "1");
    let mut b = b;
    b["spec"]["type"] = json!("NodePort");
    let r = app.put(&format!("{SERVICES}/b"), b).await;
    r.status_of(
        403,
        "Forbidden",
        r#"services "b" is forbidden: exceeded quota: ports, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1"#,
    );
    // A patch is charged the same way.
    let r = app
        .request(
            axum::http::Method::PATCH,
            &format!("{SERVICES}/b"),
            &[("content-type", "application/merge-patch+json")],
            axum::body::Body::from(r#"{"spec":{"type":"NodePort"}}"#),
        )
        .await;
    assert_eq!(r.status.as_u16(), 403, "{}", r.json());
}
