//! Pod (core/v1): tracks generation; status subresource; the pod spec's defaults (shared
//! by every pod template); container ports in range; selectable by node, phase and the
//! fields the scheduler and kubelets select by; printed as `kubectl get pods` shows it.

use serde_json::{json, Value};

use crate::kinds::printing::*;
use crate::kinds::{child, each, set_default, with_part_of, Object, Strategy};
use crate::registry::{core, core_subresource, ResourceDef, Scope, SubresourceDef, PROXY_VERBS, STATUS};
use crate::time::unix_seconds;
use crate::validation::{BadValue, FieldError, PORT_RANGE};

/// The subresources of a pod, by name: the kubelet's (attach, exec, log, portforward,
/// proxy: listed, answered with a Status), and the writes of one part of a pod.
const SUBRESOURCES: &[SubresourceDef] = &[
    core_subresource("attach", "PodAttachOptions", &["create", "get"]),
    SubresourceDef { name: "ephemeralcontainers", response: None, verbs: &["get", "patch", "update"] },
    core_subresource("exec", "PodExecOptions", &["create", "get"]),
    SubresourceDef { name: "log", response: None, verbs: &["get"] },
    core_subresource("portforward", "PodPortForwardOptions", &["create", "get"]),
    core_subresource("proxy", "PodProxyOptions", PROXY_VERBS),
    SubresourceDef { name: "resize", response: None, verbs: &["get", "patch", "update"] },
    STATUS,
];

pub static DEF: ResourceDef = ResourceDef {
    tracks_generation: true,
    ..core("Pod", "pods", "pod", Scope::Namespaced, &["po"], &["all"], SUBRESOURCES, "PodList")
};

const POD_COLUMNS: &[Column] = &[
    NAME,
    col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    col("Status", "string", "The aggregate status of the containers in this pod."),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod \
         has restarted.",
    ),
    AGE,
    wide(
        "IP",
        "string",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
    ),
    wide(
        "Node",
        "string",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by \
         the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes \
         responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to \
         be scheduled on a specific node. \
         https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
    ),
    wide(
        "Nominated Node",
        "string",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled \
         right away as preemption victims receive their graceful termination periods. This field does not guarantee \
         that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes \
         become available sooner. Scheduler may also decide to give the resources on this node to a higher priority \
         pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when \
         the pod is scheduled.",
    ),
    wide(
        "Readiness Gates",
        "string",
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its \
         containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More \
         info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
    ),
];

pub struct Pod;

impl Strategy for Pod {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = child(obj, "spec") {
            pod_spec_defaults(spec);
        }
    }

    /// A new pod is Pending, with the QoS class its containers' resources give it; what a
    /// client sent as status is dropped (kubelets and the scheduler write it).
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        let qos = obj.get("spec").map_or("BestEffort", qos_class);
        obj.insert("status".into(), json!({"phase": "Pending", "qosClass": qos}));
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(spec) = obj.get("spec").and_then(Value::as_object) {
            container_ports(spec, "spec", &mut errs);
        }
        errs
    }

    /// `ephemeralcontainers` writes `spec.ephemeralContainers`; `resize` the containers'
    /// `resources` and `resizePolicy` (matched by name).
    fn write_subresource(&self, name: &str, old: &Object, new: &Object) -> Option<Object> {
        match name {
            "ephemeralcontainers" => Some(with_part_of(old, new, &["spec", "ephemeralContainers"])),
            "resize" => {
                let mut out = old.clone();
                for list in ["initContainers", "containers"] {
                    let wanted = new.get("spec").and_then(|s| s.get(list)).and_then(Value::as_array);
                    let Some(spec) = child(&mut out, "spec") else { break };
                    for c in each(spec, list) {
                        let name = c.get("name").cloned();
                        let Some(w) = wanted.into_iter().flatten().find(|w| w.get("name") == name.as_ref()) else {
                            continue;
                        };
                        for field in ["resources", "resizePolicy"] {
                            match w.get(field) {
                                Some(v) => c.insert(field.into(), v.clone()),
                                None => c.remove(field),
                            };
                        }
                    }
                }
                Some(out)
            }
            _ => None,
        }
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ]
    }

    fn columns(&self) -> &'static [Column] {
        POD_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        pod_row(obj, now)
    }
}

/// kube's `GetPodQOS`: `Guaranteed` when every container (init containers too) limits
/// CPU and memory and requests equal the limits (requests default to them), `BestEffort`
/// when none requests or limits anything, else `Burstable`. Pod-level resources, when
/// set, decide instead.
fn qos_class(spec: &Value) -> &'static str {
    let resources = |c: &Value, which: &str| -> Vec<(String, String)> {
        let m = c.pointer(&format!("/resources/{which}")).and_then(Value::as_object);
        let mut out: Vec<(String, String)> = m
            .into_iter()
            .flatten()
            .filter(|(k, _)| matches!(k.as_str(), "cpu" | "memory"))
            .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string)))
            .collect();
        out.sort();
        out
    };
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|l| spec.get(*l).and_then(Value::as_array).into_iter().flatten())
        .collect();
    let pod_level = spec.get("resources").filter(|r| r.is_object());
    let subjects: Vec<&Value> = match pod_level {
        Some(_) => vec![spec],
        None => containers,
    };
    let none = subjects.iter().all(|c| resources(c, "requests").is_empty() && resources(c, "limits").is_empty());
    if none {
        return "BestEffort";
    }
    let guaranteed = subjects.iter().all(|c| {
        let limits = resources(c, "limits");
        let requests = resources(c, "requests");
        limits.len() == 2 && (requests.is_empty() || requests == limits)
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A pod spec's defaults (`SetDefaults_PodSpec` and its containers'), for pods and every
/// pod template.
pub(crate) fn pod_spec_defaults(spec: &mut Object) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    for list in ["initContainers", "containers"] {
        for c in each(spec, list) {
            container_defaults(c);
        }
    }
}

fn container_defaults(c: &mut Object) {
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    set_default(c, "imagePullPolicy", json!(pull_policy(image)));
    set_default(c, "resources", json!({}));
    for port in each(c, "ports") {
        set_default(port, "protocol", json!("TCP"));
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

/// The port errors of a pod spec's containers (at `path`): `containerPort`, and
/// `hostPort` when not 0.
pub(crate) fn container_ports(pod: &Object, path: &str, errs: &mut Vec<FieldError>) {
    for list in ["initContainers", "containers"] {
        for (i, c) in pod.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            for (j, port) in c.get("ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
                for field in ["containerPort", "hostPort"] {
                    let Some(n) = port.get(field).and_then(Value::as_i64) else { continue };
                    if (field != "hostPort" || n != 0) && !(1..=65535).contains(&n) {
                        errs.push(FieldError::invalid_value(
                            &format!("{path}.{list}[{i}].ports[{j}].{field}"),
                            BadValue::Raw(n.to_string()),
                            PORT_RANGE,
                        ));
                    }
                }
            }
        }
    }
}

fn pod_row(pod: &Value, now: i64) -> Row {
    let status = pod.get("status").unwrap_or(&Value::Null);
    let phase = non_empty(str_at(status, "/phase")).unwrap_or("Pending");
    let mut reason = non_empty(str_at(status, "/reason")).unwrap_or(phase).to_string();
    let pod_conditions = arr_at(status, "/conditions");
    if pod_conditions.iter().any(|c| str_at(c, "/type") == "PodScheduled" && str_at(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let conditions = match phase {
        "Succeeded" => Some(json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
                                     "message": "The pod has completed successfully."}])),
        "Failed" => Some(json!([{"type": "Completed", "status": "True", "reason": "Failed",
                                  "message": "The pod failed."}])),
        _ => None,
    };

    let init_specs = arr_at(pod, "/spec/initContainers");
    let restartable =
        |name: &str| init_specs.iter().any(|c| str_at(c, "/name") == name && str_at(c, "/restartPolicy") == "Always");
    let total = arr_at(pod, "/spec/containers").len()
        + init_specs.iter().filter(|c| str_at(c, "/restartPolicy") == "Always").count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut restartable_restarts = 0i64;
    // Unix seconds of the latest lastState.terminated.finishedAt (None: Go's zero time).
    let mut last_restart: Option<i64> = None;
    let mut last_restartable_restart: Option<i64> = None;
    let later = |cur: Option<i64>, c: &Value| -> Option<i64> {
        let finished = c
            .pointer("/lastState/terminated")
            .filter(|t| t.is_object())
            .and_then(|t| unix_seconds(str_at(t, "/finishedAt")));
        match (cur, finished) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    };

    let mut initializing = false;
    for (i, c) in arr_at(status, "/initContainerStatuses").iter().enumerate() {
        restarts += int_at(c, "/restartCount");
        last_restart = later(last_restart, c);
        let cname = str_at(c, "/name");
        if restartable(cname) {
            restartable_restarts += int_at(c, "/restartCount");
            last_restartable_restart = later(last_restartable_restart, c);
        }
        let terminated = c.pointer("/state/terminated").filter(|t| t.is_object());
        let waiting = c.pointer("/state/waiting").filter(|w| w.is_object());
        if terminated.is_some_and(|t| int_at(t, "/exitCode") == 0) {
            continue;
        }
        if restartable(cname) && c.get("started").and_then(Value::as_bool) == Some(true) {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = match non_empty(str_at(t, "/reason")) {
                Some(r) => format!("Init:{r}"),
                None if int_at(t, "/signal") != 0 => format!("Init:Signal:{}", int_at(t, "/signal")),
                None => format!("Init:ExitCode:{}", int_at(t, "/exitCode")),
            };
        } else if let Some(r) =
            waiting.and_then(|w| non_empty(str_at(w, "/reason"))).filter(|r| *r != "PodInitializing")
        {
            reason = format!("Init:{r}");
        } else {
            reason = format!("Init:{i}/{}", init_specs.len());
        }
        initializing = true;
        break;
    }

    let initialized =
        pod_conditions.iter().any(|c| str_at(c, "/type") == "Initialized" && str_at(c, "/status") == "True");
    if !initializing || initialized {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for c in arr_at(status, "/containerStatuses").iter().rev() {
            restarts += int_at(c, "/restartCount");
            last_restart = later(last_restart, c);
            let terminated = c.pointer("/state/terminated").filter(|t| t.is_object());
            let waiting = c.pointer("/state/waiting").filter(|w| w.is_object());
            let running = c.pointer("/state/running").is_some_and(Value::is_object);
            if let Some(r) = waiting.and_then(|w| non_empty(str_at(w, "/reason"))) {
                reason = r.to_string();
            } else if let Some(r) = terminated.and_then(|t| non_empty(str_at(t, "/reason"))) {
                reason = r.to_string();
            } else if let Some(t) = terminated {
                reason = if int_at(t, "/signal") != 0 {
                    format!("Signal:{}", int_at(t, "/signal"))
                } else {
                    format!("ExitCode:{}", int_at(t, "/exitCode"))
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true) && running {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready =
                pod_conditions.iter().any(|c| str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }

    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null());
    if deleting && str_at(status, "/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Failed" && phase != "Succeeded" {
        reason = "Terminating".into();
    }

    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", human_duration(now - t)),
        _ => restarts.to_string(),
    };

    let pod_ip = arr_at(status, "/podIPs")
        .first()
        .map(|ip| str_at(ip, "/ip"))
        .or_else(|| non_empty(str_at(status, "/podIP")))
        .unwrap_or("");
    let gates = arr_at(pod, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_count = gates
            .iter()
            .filter(|g| {
                let ty = str_at(g, "/conditionType");
                pod_conditions.iter().find(|c| str_at(c, "/type") == ty).is_some_and(|c| str_at(c, "/status") == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };
    Row {
        cells: vec![
            name(pod).into(),
            format!("{ready}/{total}").into(),
            reason.into(),
            restarts_cell.into(),
            age(pod, now).into(),
            or_none(pod_ip).into(),
            or_none(str_at(pod, "/spec/nodeName")).into(),
            or_none(str_at(status, "/nominatedNodeName")).into(),
            readiness_gates.into(),
        ],
        conditions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_pods_are_pending_with_their_qos_class() {
        let create = |spec: Value| {
            let mut pod = json!({"spec": spec, "status": {"phase": "Running"}}).as_object().unwrap().clone();
            Pod.prepare_for_create(&mut pod, "2026-11-27T08:00:00Z");
            pod["status"].clone()
        };
        let c = |r: Value| json!({"containers": [{"name": "c", "image": "x", "resources": r}]});
        assert_eq!(create(c(json!({}))), json!({"phase": "Pending", "qosClass": "BestEffort"}));
        let both = json!({"cpu": "1", "memory": "1Gi"});
        assert_eq!(create(c(json!({"limits": both})))["qosClass"], "Guaranteed");
        assert_eq!(create(c(json!({"limits": both, "requests": both})))["qosClass"], "Guaranteed");
        assert_eq!(
            create(c(json!({"limits": both, "requests": {"cpu": "500m", "memory": "1Gi"}})))["qosClass"],
            "Burstable"
        );
        assert_eq!(create(c(json!({"requests": {"cpu": "1"}})))["qosClass"], "Burstable");
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
