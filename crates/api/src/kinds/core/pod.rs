//! Pod (core/v1): tracks generation; status subresource; the pod spec's defaults (shared
//! by every pod template); container ports in range; selectable by node, phase and the
//! fields the scheduler and kubelets select by; printed as `kubectl get pods` shows it.
//! Its `binding` and `eviction` subresources are created, not stored: what each writes to
//! the pod is here ([`Strategy::write_subresource`]); when they may (a pod bound once, the
//! disruption budgets) is the REST layer's, as it is kube-apiserver's pod storage's.

use serde_json::{json, Value};

use crate::kinds::printing::*;
use crate::kinds::{child, each, set_default, with_part_of, Object, Strategy};
use crate::registry::{core, core_subresource, ResourceDef, Scope, SubresourceDef, PROXY_VERBS, STATUS};
use crate::time::unix_seconds;
use crate::validation::{BadValue, FieldError, PORT_RANGE};

/// The subresources of a pod, by name: the kubelet's (attach, exec, log, portforward,
/// proxy: listed, answered with a Status), the writes of one part of a pod, and the two
/// created as other kinds (a scheduler's Binding, a policy/v1 Eviction).
const SUBRESOURCES: &[SubresourceDef] = &[
    core_subresource("attach", "PodAttachOptions", &["create", "get"]),
    core_subresource("binding", "Binding", &["create"]),
    SubresourceDef { name: "ephemeralcontainers", response: None, verbs: &["get", "patch", "update"] },
    SubresourceDef { name: "eviction", response: Some(("policy", "v1", "Eviction")), verbs: &["create"] },
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
            // kube's `SetDefaults_Pod` (a pod's, not a template's): a limit given without
            // its request requests as much.
            for list in ["initContainers", "containers"] {
                for c in each(spec, list) {
                    requests_from_limits(c);
                }
            }
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

    /// A pod runs somewhere once bound: its delete waits the grace period asked for, or its
    /// `terminationGracePeriodSeconds`, for the kubelet to stop it and confirm with a
    /// delete of grace 0. One that is not bound, or has finished, has nothing to stop.
    fn grace_period(&self, obj: &Object, requested: Option<i64>) -> Option<i64> {
        let spec = obj.get("spec");
        let bound = spec.and_then(|s| s.get("nodeName")).and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        let phase = obj.get("status").and_then(|s| s.get("phase")).and_then(Value::as_str);
        if !bound || matches!(phase, Some("Succeeded" | "Failed")) {
            return Some(0);
        }
        let own = spec.and_then(|s| s.get("terminationGracePeriodSeconds")).and_then(Value::as_i64);
        Some(requested.or(own).unwrap_or(0))
    }

    /// `ephemeralcontainers` writes `spec.ephemeralContainers`; `resize` the containers'
    /// `resources` and `resizePolicy` (matched by name). `binding` (`new` a Binding) and
    /// `eviction` (`new` an Eviction) write what kube's pod storage writes when it binds
    /// ([`bound`]) or evicts ([`evicted`]) the pod; the created object's
    /// `metadata.creationTimestamp` is the time the conditions they set changed.
    fn write_subresource(&self, name: &str, old: &Object, new: &Object) -> Option<Object> {
        let created = || new.get("metadata").and_then(|m| m.get("creationTimestamp")).and_then(Value::as_str);
        match name {
            "binding" => Some(bound(old, new, created().unwrap_or(""))),
            "eviction" => Some(evicted(old, created().unwrap_or(""))),
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

/// `pod` bound as `binding` says, at `now` (kube's `setPodNodeAndMetadata`): on the
/// target node, any nomination cleared (it was a hint for the scheduler, now moot), the
/// binding's annotations over the pod's, and `PodScheduled` true.
fn bound(pod: &Object, binding: &Object, now: &str) -> Object {
    let mut out = pod.clone();
    let node = binding.get("target").and_then(|t| t.get("name")).cloned().unwrap_or(Value::Null);
    if let Some(spec) = child(&mut out, "spec") {
        spec.insert("nodeName".into(), node);
    }
    if let Some(status) = child(&mut out, "status") {
        status.remove("nominatedNodeName");
    }
    let annotations = binding.get("metadata").and_then(|m| m.get("annotations")).and_then(Value::as_object);
    if let Some(given) = annotations.filter(|a| !a.is_empty()) {
        let meta = out.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            let mine = meta.entry("annotations").or_insert_with(|| json!({}));
            if !mine.is_object() {
                *mine = json!({});
            }
            if let Some(mine) = mine.as_object_mut() {
                mine.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
    }
    set_condition(&mut out, json!({"type": "PodScheduled", "status": "True"}), now);
    out
}

/// `pod` as the eviction API marks it before deleting it (kube's `addConditionAndDeletePod`):
/// `DisruptionTarget` true, for whoever sees the pod go (its finalizers' owners).
fn evicted(pod: &Object, now: &str) -> Object {
    let mut out = pod.clone();
    let condition = json!({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                           "message": "Eviction API: evicting"});
    set_condition(&mut out, condition, now);
    out
}

/// kube's `UpdatePodCondition`: `condition` replaces the pod's condition of its type (or is
/// added), with `lastTransitionTime` now, or the old one's when the status did not change.
fn set_condition(pod: &mut Object, condition: Value, now: &str) {
    let Value::Object(mut condition) = condition else { return };
    let status = pod.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let Some(status) = status.as_object_mut() else { return };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(conditions) = conditions.as_array_mut() else { return };
    let ty = condition.get("type").cloned();
    let old = conditions.iter().position(|c| c.get("type") == ty.as_ref());
    let transition = match old.map(|i| &conditions[i]) {
        Some(o) if o.get("status") == condition.get("status") => {
            o.get("lastTransitionTime").cloned().unwrap_or(Value::Null)
        }
        _ => Value::from(now),
    };
    condition.insert("lastProbeTime".into(), Value::Null);
    condition.insert("lastTransitionTime".into(), transition);
    match old {
        Some(i) => conditions[i] = Value::Object(condition),
        None => conditions.push(Value::Object(condition)),
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

fn requests_from_limits(c: &mut Object) {
    let Some(resources) = c.get_mut("resources").and_then(Value::as_object_mut) else { return };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).filter(|l| !l.is_empty()).cloned() else {
        return;
    };
    let requests = resources.entry("requests").or_insert_with(|| json!({}));
    if !requests.is_object() {
        *requests = json!({});
    }
    let requests = requests.as_object_mut().expect("made an object above");
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
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

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_binding_places_the_pod_and_marks_it_scheduled() {
        let pod = obj(json!({"metadata": {"name": "p", "annotations": {"a": "1", "b": "1"}},
            "spec": {"containers": []},
            "status": {"phase": "Pending", "nominatedNodeName": "n0",
                       "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
        let binding = obj(json!({"metadata": {"name": "p", "annotations": {"b": "2"},
            "creationTimestamp": "2026-11-27T08:00:00Z"}, "target": {"kind": "Node", "name": "n1"}}));
        let out = Pod.write_subresource("binding", &pod, &binding).unwrap();
        assert_eq!(out["spec"]["nodeName"], "n1");
        assert_eq!(out["metadata"]["annotations"], json!({"a": "1", "b": "2"}));
        assert!(out["status"].get("nominatedNodeName").is_none());
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": "2026-11-27T08:00:00Z"}])
        );
        // Without annotations the pod's stay as they are (none stays none).
        let bare = obj(json!({"metadata": {"name": "p"}, "spec": {}}));
        let b = obj(json!({"target": {"name": "n1"}, "metadata": {"creationTimestamp": "2026-11-27T08:00:00Z"}}));
        let out = Pod.write_subresource("binding", &bare, &b).unwrap();
        assert!(out["metadata"].get("annotations").is_none());
        assert_eq!(out["status"]["conditions"][0]["type"], "PodScheduled");
    }

    #[test]
    fn an_eviction_marks_the_pod_a_disruption_target() {
        let pod = obj(json!({"metadata": {"name": "p"}, "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "DisruptionTarget", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
        let eviction = obj(json!({"metadata": {"name": "p", "creationTimestamp": "2026-11-27T08:00:00Z"}}));
        let out = Pod.write_subresource("eviction", &pod, &eviction).unwrap();
        let conditions = out["status"]["conditions"].as_array().unwrap();
        assert_eq!(conditions.len(), 2);
        assert_eq!(
            conditions[1],
            json!({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                   "message": "Eviction API: evicting", "lastProbeTime": null,
                   "lastTransitionTime": "2026-01-01T00:00:00Z"}),
            "the status did not change: nor does the transition time"
        );
    }

    #[test]
    fn only_a_bound_running_pod_is_deleted_gracefully() {
        let pod = |v: Value| obj(v);
        let bound = pod(json!({"spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30}}));
        assert_eq!(Pod.grace_period(&bound, None), Some(30));
        assert_eq!(Pod.grace_period(&bound, Some(5)), Some(5));
        assert_eq!(Pod.grace_period(&bound, Some(0)), Some(0));
        assert_eq!(Pod.grace_period(&pod(json!({"spec": {"nodeName": "n1"}})), None), Some(0));
        let unbound = pod(json!({"spec": {"terminationGracePeriodSeconds": 30}}));
        assert_eq!(Pod.grace_period(&unbound, Some(10)), Some(0));
        let done = pod(json!({"spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30},
                              "status": {"phase": "Succeeded"}}));
        assert_eq!(Pod.grace_period(&done, None), Some(0));
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
