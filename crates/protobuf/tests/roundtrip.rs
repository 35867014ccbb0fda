//! JSON -> protobuf -> JSON for a realistic object of every kind, the exact bytes of special
//! types, watch frames, and malformed input.

use kuorum_protobuf::{decode, decode_watch_event, encode, encode_watch_event, split_watch_frame, supports, MAGIC};
use serde_json::{json, Value};

fn roundtrip(object: Value) -> Vec<u8> {
    let body = encode(&object).unwrap_or_else(|e| panic!("encode {}: {e}", object["kind"]));
    assert!(body.starts_with(&MAGIC));
    let (api_version, kind, back) = decode(&body).unwrap_or_else(|e| panic!("decode {}: {e}", object["kind"]));
    assert_eq!(api_version, object["apiVersion"]);
    assert_eq!(kind, object["kind"]);
    assert_eq!(back, object, "\n got: {back:#}\nwant: {object:#}");
    body
}

fn managed_fields() -> Value {
    json!([{
        "manager": "kubectl-client-side-apply",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-22T05:40:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}}}}}
    }, {
        "manager": "kubelet",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-22T05:40:03Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:phase": {}}},
        "subresource": "status"
    }])
}

/// A pod spec touching most of PodSpec: volumes, init and app containers, env sources,
/// quantities, probes with named and numbered ports, affinity, tolerations.
fn pod_spec() -> Value {
    serde_json::from_str(include_str!("fixtures/pod-spec.json")).unwrap()
}

fn pod() -> Value {
    json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "web-7d9f8b6c5d-x2x7q",
            "generateName": "web-7d9f8b6c5d-",
            "namespace": "default",
            "uid": "2f1c6c52-3f6f-4a43-9d6e-0c5a3f1e9b10",
            "resourceVersion": "1234",
            "creationTimestamp": "2026-11-22T05:40:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d9f8b6c5d"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-22T05:39:00Z", "empty": ""},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9f8b6c5d",
                "uid": "8e6a2a51-1c9d-4f0e-b8a4-1f2b3c4d5e6f", "controller": true, "blockOwnerDeletion": true
            }],
            "finalizers": ["example.com/cleanup"],
            "managedFields": managed_fields()
        },
        "spec": pod_spec(),
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-22T05:40:05Z"}],
            "hostIP": "10.0.0.11",
            "hostIPs": [{"ip": "10.0.0.11"}],
            "podIP": "10.244.1.7",
            "podIPs": [{"ip": "10.244.1.7"}, {"ip": "fd00::7"}],
            "startTime": "2026-11-22T05:40:01Z",
            "containerStatuses": [{
                "name": "web",
                "state": {"running": {"startedAt": "2026-11-22T05:40:02Z"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-11-22T05:30:00Z", "finishedAt": "2026-11-22T05:39:59Z", "containerID": "containerd://abc"}},
                "ready": true,
                "restartCount": 1,
                "image": "docker.io/library/nginx:1.27",
                "imageID": "docker.io/library/nginx@sha256:0123",
                "containerID": "containerd://def",
                "started": true,
                "allocatedResources": {"cpu": "250m"}
            }],
            "qosClass": "Burstable"
        }
    })
}

#[test]
fn pod_roundtrip() {
    roundtrip(pod());
    // null is unset: left out, as the zero time is.
    let mut with_null = pod();
    with_null["status"]["conditions"][0]["lastProbeTime"] = Value::Null;
    with_null["metadata"]["deletionTimestamp"] = Value::Null;
    assert_eq!(decode(&encode(&with_null).unwrap()).unwrap().2, pod());
}

#[test]
fn secret_configmap_binary() {
    roundtrip(json!({
        "kind": "Secret", "apiVersion": "v1",
        "metadata": {"name": "tls", "namespace": "default", "creationTimestamp": "2026-11-22T05:40:00Z"},
        "type": "kubernetes.io/tls",
        "immutable": false,
        "data": {"tls.crt": "LS0tLS1CRUdJTg==", "tls.key": "AAEC/f7/", "empty": ""}
    }));
    let body = roundtrip(json!({
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "cfg", "namespace": "kube-system", "labels": {"a": "b"}},
        "data": {"app.yaml": "a: 1\nb: [2]\n", "empty": ""},
        "binaryData": {"blob": "AP8QIA=="},
        "immutable": true
    }));
    // binaryData is raw bytes on the wire.
    assert!(body.windows(4).any(|w| w == [0x00, 0xff, 0x10, 0x20]));
    assert!(supports("v1", "ConfigMap") && supports("v1", "SecretList"));
}

#[test]
fn deployment_roundtrip() {
    roundtrip(json!({
        "kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": "web", "namespace": "default", "generation": 3, "annotations": {"deployment.kubernetes.io/revision": "2"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {}}]}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "paused": false
        },
        "status": {
            "observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
            "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "2026-11-22T05:40:00Z", "lastTransitionTime": "2026-11-22T05:40:00Z", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."}]
        }
    }));
    roundtrip(json!({
        "kind": "DeploymentList", "apiVersion": "apps/v1",
        "metadata": {"resourceVersion": "99", "continue": "eyJ2IjoxfQ", "remainingItemCount": 7},
        "items": [{"metadata": {"name": "a"}, "spec": {"selector": {}, "template": {}}}]
    }));
}

#[test]
fn lease_microtime() {
    let body = roundtrip(json!({
        "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "node-1_5f1c",
            "leaseDurationSeconds": 15,
            "acquireTime": "2026-11-22T05:40:00.000000Z",
            "renewTime": "2026-11-22T05:40:12.345678Z",
            "leaseTransitions": 0
        }
    }));
    // renewTime is seconds + nanos.
    let nanos: u32 = 345_678_000;
    let mut varint = Vec::new();
    prost::encoding::encode_varint(u64::from(nanos), &mut varint);
    assert!(body.windows(varint.len()).any(|w| w == varint.as_slice()));
    // Other spellings of the same instant are normalised.
    let (_, _, back) = decode(
        &encode(&json!({"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "metadata": {"name": "l"},
            "spec": {"renewTime": "2026-11-22T07:40:12.3456789+02:00"}}))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(back["spec"]["renewTime"], "2026-11-22T05:40:12.345678Z");
    roundtrip(
        json!({"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1", "metadata": {"resourceVersion": "5"}, "items": []}),
    );
}

#[test]
fn node_roundtrip() {
    roundtrip(json!({
        "kind": "Node", "apiVersion": "v1",
        "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}, "creationTimestamp": "2026-11-22T05:00:00Z"},
        "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24", "fd00:1::/64"], "providerID": "kind://docker/kind/node-1",
                 "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule", "timeAdded": "2026-11-22T05:00:01Z"}],
                 "unschedulable": true},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "hugepages-2Mi": "0"},
            "allocatable": {"cpu": "7800m", "memory": "31Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-22T05:40:00Z", "lastTransitionTime": "2026-11-22T05:00:10Z", "reason": "KubeletReady", "message": "kubelet is posting ready status"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.11"}, {"type": "Hostname", "address": "node-1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6.1.0", "osImage": "Debian", "containerRuntimeVersion": "containerd://2.0", "kubeletVersion": "v1.37.0", "kubeProxyVersion": "v1.37.0", "operatingSystem": "linux", "architecture": "amd64"},
            "images": [{"names": ["docker.io/library/nginx:1.27"], "sizeBytes": 72_000_000_000_i64}],
            "volumesInUse": ["kubernetes.io/csi/x"]
        }
    }));
}

#[test]
fn service_target_ports() {
    let body = roundtrip(json!({
        "kind": "Service", "apiVersion": "v1",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "ports": [
                {"name": "http", "protocol": "TCP", "port": 80, "targetPort": "http"},
                {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": 9091, "nodePort": 30090, "appProtocol": "http"}
            ],
            "selector": {"app": "web"},
            "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"],
            "type": "NodePort",
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
            "externalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "allocateLoadBalancerNodePorts": false,
            "internalTrafficPolicy": "Cluster"
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1", "ipMode": "VIP", "ports": [{"port": 80, "protocol": "TCP"}]}]}}
    }));
    // targetPort "http" is IntOrString{type: 1 (String), strVal: "http"}: 08 01 1a 04 "http".
    assert!(body.windows(8).any(|w| w == [0x08, 0x01, 0x1a, 0x04, b'h', b't', b't', b'p']));
    // targetPort 9091 is IntOrString{type: 0 (Int), intVal: 9091}.
    let mut int_val = vec![0x08, 0x00, 0x10];
    prost::encoding::encode_varint(9091, &mut int_val);
    assert!(body.windows(int_val.len()).any(|w| w == int_val.as_slice()));
}

#[test]
fn other_core_kinds() {
    roundtrip(json!({
        "kind": "Namespace", "apiVersion": "v1",
        "metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "team-a"}, "deletionTimestamp": "2026-11-22T05:41:00Z", "deletionGracePeriodSeconds": 0},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Terminating", "conditions": [{"type": "NamespaceContentRemaining", "status": "False", "lastTransitionTime": "2026-11-22T05:41:01Z"}]}
    }));
    roundtrip(json!({
        "kind": "ServiceAccount", "apiVersion": "v1",
        "metadata": {"name": "web", "namespace": "default"},
        "secrets": [{"name": "web-token"}],
        "imagePullSecrets": [{"name": "registry"}],
        "automountServiceAccountToken": false
    }));
    roundtrip(json!({
        "kind": "Event", "apiVersion": "v1",
        "metadata": {"name": "web.17a", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u", "apiVersion": "v1", "resourceVersion": "12", "fieldPath": "spec.containers{web}"},
        "reason": "Pulled", "message": "Successfully pulled image",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-11-22T05:40:00Z", "lastTimestamp": "2026-11-22T05:40:10Z",
        "count": 3, "type": "Normal",
        "eventTime": "2026-11-22T05:40:00.250000Z",
        "series": {"count": 2, "lastObservedTime": "2026-11-22T05:40:10.500000Z"},
        "action": "Pulling", "reportingComponent": "kubelet", "reportingInstance": "node-1",
        "related": {"kind": "Node", "name": "node-1"}
    }));
    for kind in [
        "ConfigMapList",
        "EventList",
        "NamespaceList",
        "NodeList",
        "PodList",
        "SecretList",
        "ServiceAccountList",
        "ServiceList",
    ] {
        roundtrip(
            json!({"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "42"}, "items": [{"metadata": {"name": "x"}}]}),
        );
    }
    let mut item = pod();
    let item = item.as_object_mut().unwrap();
    item.remove("kind");
    item.remove("apiVersion");
    roundtrip(
        json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "42"}, "items": [item, item]}),
    );
}

#[test]
fn scale_status_delete_options() {
    roundtrip(json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7"},
        "spec": {"replicas": 3},
        "status": {"replicas": 2, "selector": "app=web"}
    }));
    roundtrip(json!({
        "kind": "Status", "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "pods \"web\" already exists",
        "reason": "AlreadyExists",
        "details": {"name": "web", "kind": "pods", "causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": "spec.x"}], "retryAfterSeconds": 1},
        "code": 409
    }));
    roundtrip(
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}, "status": "Success", "details": {"name": "web", "kind": "pods", "uid": "u"}}),
    );
    for api_version in ["v1", "apps/v1", "coordination.k8s.io/v1", "meta.k8s.io/v1"] {
        roundtrip(json!({
            "kind": "DeleteOptions", "apiVersion": api_version,
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "u", "resourceVersion": "5"},
            "propagationPolicy": "Foreground",
            "dryRun": ["All"]
        }));
    }
}

#[test]
fn watch_frames() {
    let mut stream = encode_watch_event("ADDED", &pod()).unwrap();
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "too old", "reason": "Expired", "code": 410});
    stream.extend(encode_watch_event("ERROR", &status).unwrap());
    let (first, rest) = split_watch_frame(&stream).unwrap();
    assert_eq!(decode_watch_event(first).unwrap(), ("ADDED".to_string(), pod()));
    let (second, rest) = split_watch_frame(rest).unwrap();
    assert!(rest.is_empty());
    assert_eq!(decode_watch_event(second).unwrap(), ("ERROR".to_string(), status));
    assert!(split_watch_frame(&stream[..stream.len() - 1]).is_some()); // first frame still whole
    assert!(split_watch_frame(&stream[..3]).is_none());
    let first_len = 4 + first.len();
    assert!(split_watch_frame(&stream[first_len..stream.len() - 1]).is_none());
    assert!(encode_watch_event("ADDED", &json!({"kind": "Widget", "apiVersion": "v1"})).is_err());
}
