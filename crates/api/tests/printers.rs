//! The Table printers of the built-in kinds (`kinds::Strategy::columns` and `row`) against
//! what kube-apiserver 1.37 prints: cells per kind, column definitions, and the
//! durations and times every printer shares.

use kuorum_api::kinds::printing::*;
use kuorum_api::kinds::{self, Column, Row};
use kuorum_api::registry::{lookup, ResourceDef};
use kuorum_api::time::unix_seconds;
use serde_json::{json, Value};

const NOW: i64 = 1_795_304_728; // 2026-11-21T23:45:28Z

fn def(group: &str, plural: &str) -> &'static ResourceDef {
    lookup(group, "v1", plural).unwrap_or_else(|| panic!("{group}/{plural}"))
}

fn columns(d: &ResourceDef) -> &'static [Column] {
    kinds::of(d).unwrap().columns()
}

fn row(d: &ResourceDef, obj: &Value, now: i64) -> Row {
    kinds::of(d).unwrap().row(obj, now)
}

fn column_json(c: &Column) -> Value {
    c.to_json()
}

fn cells(group: &str, plural: &str, obj: Value) -> Vec<Value> {
    let d = def(group, plural);
    let r = row(d, &obj, NOW);
    assert_eq!(r.cells.len(), columns(d).len(), "one cell per column for {plural}");
    r.cells
}

fn ago(secs: i64) -> String {
    kuorum_api::time::format(NOW - secs)
}

#[test]
fn human_durations_match_apimachinery() {
    for (secs, want) in [
        (-5, "<invalid>"),
        (-2, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (182, "3m2s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (4 * 3600 + 5 * 60, "4h5m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 59 * 60, "47h"),
        (48 * 3600, "2d"),
        (51 * 3600, "2d3h"),
        (7 * 86400 + 23 * 3600, "7d23h"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400, "2y"),
        (740 * 86400, "2y10d"),
        (8 * 365 * 86400, "8y"),
        (20 * 365 * 86400 + 100 * 86400, "20y"),
    ] {
        assert_eq!(human_duration(secs), want, "{secs}s");
    }
}

#[test]
fn ages_read_times_as_go_does() {
    // The zero time kube writes for "never" reads as such (kuorum_api::time has the rest).
    assert_eq!(unix_seconds("0001-01-01T00:00:00Z"), Some(ZERO_TIME));
    assert_eq!(since("", NOW), "<unknown>");
    assert_eq!(since(&ago(3 * 60 + 2), NOW), "3m2s");
}

#[test]
fn configmap_secret_serviceaccount_namespace_lease() {
    let cm = json!({"metadata": {"name": "cfg", "creationTimestamp": ago(5)},
                    "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
    assert_eq!(cells("", "configmaps", cm), vec![json!("cfg"), json!(3), json!("5s")]);
    assert_eq!(
        cells("", "configmaps", json!({"metadata": {"name": "e"}})),
        vec![json!("e"), json!(0), json!("<unknown>")]
    );

    let s = json!({"metadata": {"name": "tls", "creationTimestamp": ago(4 * 3600)},
                   "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
    assert_eq!(cells("", "secrets", s), vec![json!("tls"), json!("kubernetes.io/tls"), json!(2), json!("4h")]);
    let s = json!({"metadata": {"name": "o"}, "data": {"a": ""}, "stringData": {"a": "x", "b": "y"}});
    assert_eq!(cells("", "secrets", s)[1..3], [json!("Opaque"), json!(2)]);

    let sa = json!({"metadata": {"name": "default", "creationTimestamp": ago(3 * 86400)}, "secrets": [{"name": "t"}]});
    assert_eq!(cells("", "serviceaccounts", sa), vec![json!("default"), json!(1), json!("3d")]);

    let ns = json!({"metadata": {"name": "kube-system", "creationTimestamp": ago(59)}, "status": {"phase": "Active"}});
    assert_eq!(cells("", "namespaces", ns), vec![json!("kube-system"), json!("Active"), json!("59s")]);

    let lease = json!({"metadata": {"name": "l", "creationTimestamp": ago(600)}, "spec": {"holderIdentity": "node-1"}});
    assert_eq!(cells("coordination.k8s.io", "leases", lease), vec![json!("l"), json!("node-1"), json!("10m")]);
    let lease = json!({"metadata": {"name": "l"}, "spec": {}});
    assert_eq!(cells("coordination.k8s.io", "leases", lease)[1], json!(""));
}

#[test]
fn pod_ready_status_restarts() {
    let pod = json!({
        "metadata": {"name": "web-1", "creationTimestamp": ago(3600)},
        "spec": {"nodeName": "n1", "containers": [{"name": "app"}, {"name": "sidecar"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.7"}], "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {"name": "app", "ready": true, "restartCount": 3, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(125)}}},
                {"name": "sidecar", "ready": false, "restartCount": 0, "state": {"running": {}}}
            ]}
    });
    assert_eq!(
        cells("", "pods", pod),
        vec![
            json!("web-1"),
            json!("1/2"),
            json!("Running"),
            json!("3 (2m5s ago)"),
            json!("60m"),
            json!("10.0.0.7"),
            json!("n1"),
            json!("<none>"),
            json!("<none>")
        ]
    );

    // No status yet: Pending (what kube-apiserver stores), nothing ready, no restarts.
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}});
    let c = cells("", "pods", pod);
    assert_eq!(c[1..5], [json!("0/1"), json!("Pending"), json!("0"), json!("<unknown>")]);
    assert_eq!(c[5..], [json!("<none>"), json!("<none>"), json!("<none>"), json!("<none>")]);

    // Waiting reason wins; restarts without a termination time have no "ago".
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Running", "containerStatuses": [
            {"name": "a", "restartCount": 5, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
    assert_eq!(cells("", "pods", pod)[1..4], [json!("0/1"), json!("CrashLoopBackOff"), json!("5")]);

    // Init containers: the first unfinished one decides.
    let pod = json!({"metadata": {"name": "p"},
        "spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]},
        "status": {"phase": "Pending", "initContainerStatuses": [
            {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
            {"name": "i2", "state": {"running": {}}}]}});
    assert_eq!(cells("", "pods", pod)[2], json!("Init:1/2"));
    let pod = json!({"metadata": {"name": "p"},
        "spec": {"initContainers": [{"name": "i1"}], "containers": [{"name": "a"}]},
        "status": {"phase": "Pending", "initContainerStatuses": [
            {"name": "i1", "restartCount": 2, "state": {"terminated": {"exitCode": 3}}}]}});
    assert_eq!(cells("", "pods", pod)[2..4], [json!("Init:ExitCode:3"), json!("2")]);

    // A restartable (sidecar) init container counts in READY's total.
    let pod = json!({"metadata": {"name": "p"},
        "spec": {"initContainers": [{"name": "s", "restartPolicy": "Always"}], "containers": [{"name": "a"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "s", "started": true, "ready": true, "state": {"running": {}}}],
            "containerStatuses": [{"name": "a", "ready": true, "state": {"running": {}}}]}});
    assert_eq!(cells("", "pods", pod)[1..3], [json!("2/2"), json!("Running")]);

    // Terminating, Completed (with its row condition), scheduling gates, readiness gates.
    let pod = json!({"metadata": {"name": "p", "deletionTimestamp": ago(1)}, "spec": {"containers": []},
                     "status": {"phase": "Running"}});
    assert_eq!(cells("", "pods", pod)[2], json!("Terminating"));
    let d = def("", "pods");
    let done = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
    let r = row(d, &done, NOW);
    assert_eq!(r.cells[1..3], [json!("0/1"), json!("Completed")]);
    assert_eq!(r.conditions.unwrap()[0]["reason"], "Succeeded");
    let gated = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}],
        "readinessGates": [{"conditionType": "x"}, {"conditionType": "y"}]},
        "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}, {"type": "x", "status": "True"}]}});
    let c = cells("", "pods", gated);
    assert_eq!((c[2].clone(), c[8].clone()), (json!("SchedulingGated"), json!("1/2")));
}

#[test]
fn deployment_ready_and_wide_columns() {
    let d = json!({
        "metadata": {"name": "web", "creationTimestamp": ago(2 * 86400 + 3 * 3600)},
        "spec": {"replicas": 3,
                 "selector": {"matchLabels": {"app": "web", "tier": "fe"},
                              "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]},
                 "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"},
                                                      {"name": "log", "image": "busybox"}]}}},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    });
    assert_eq!(
        cells("apps", "deployments", d),
        vec![
            json!("web"),
            json!("2/3"),
            json!(3),
            json!(2),
            json!("2d3h"),
            json!("nginx,log"),
            json!("nginx:1.27,busybox"),
            json!("app=web,env in (dev,prod),tier=fe")
        ]
    );
    // No status, no replicas (defaulted to 1), no selector.
    let d = json!({"metadata": {"name": "x"}, "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}}});
    assert_eq!(cells("apps", "deployments", d)[1..4], [json!("0/1"), json!(0), json!(0)]);
    assert_eq!(
        label_selector_string(Some(&json!({"matchExpressions": [{"key": "k", "operator": "Bad"}]}))),
        "<invalid>"
    );
    assert_eq!(
        label_selector_string(Some(&json!({"matchExpressions": [{"key": "k", "operator": "DoesNotExist"}]}))),
        "!k"
    );
    assert_eq!(label_selector_string(Some(&json!({}))), "");
}

#[test]
fn service_ports_and_ips() {
    let svc = json!({"metadata": {"name": "web", "creationTimestamp": ago(30)},
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                 "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443}], "selector": {"app": "web", "a": "b"}}});
    assert_eq!(
        cells("", "services", svc),
        vec![
            json!("web"),
            json!("ClusterIP"),
            json!("10.96.0.10"),
            json!("<none>"),
            json!("80/TCP,443/TCP"),
            json!("30s"),
            json!("a=b,app=web")
        ]
    );
    let np = json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "externalIPs": ["1.2.3.4"],
                     "ports": [{"port": 53, "nodePort": 30053, "protocol": "UDP"}]}});
    assert_eq!(
        cells("", "services", np)[1..5],
        [json!("NodePort"), json!("<none>"), json!("1.2.3.4"), json!("53:30053/UDP")]
    );
    let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer"}, "status": {}});
    assert_eq!(cells("", "services", lb)[3..5], [json!("<pending>"), json!("<none>")]);
    let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer"},
                    "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}, {"ip": "5.6.7.8"}]}}});
    assert_eq!(cells("", "services", lb)[3], json!("5.6.7.8,lb.example.com"));
    let en = json!({"metadata": {"name": "en"}, "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
    assert_eq!(cells("", "services", en)[3], json!("db.example.com"));
}

#[test]
fn node_status_roles_and_info() {
    let node = json!({"metadata": {"name": "n1", "creationTimestamp": ago(8 * 86400),
                                   "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "edge",
                                              "node-role.kubernetes.io/": "x"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                   "addresses": [{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "192.168.1.5"}],
                   "nodeInfo": {"kubeletVersion": "v1.37.0", "osImage": "Debian GNU/Linux 13"}}});
    assert_eq!(
        cells("", "nodes", node),
        vec![
            json!("n1"),
            json!("Ready,SchedulingDisabled"),
            json!("control-plane,edge"),
            json!("8d"),
            json!("v1.37.0"),
            json!("192.168.1.5"),
            json!("<none>"),
            json!("Debian GNU/Linux 13"),
            json!("<unknown>"),
            json!("<unknown>")
        ]
    );
    let c = cells("", "nodes", json!({"metadata": {"name": "n2"}}));
    assert_eq!(c[1..3], [json!("Unknown"), json!("<none>")]);
    let c = cells(
        "",
        "nodes",
        json!({"metadata": {"name": "n3"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}),
    );
    assert_eq!(c[1], json!("NotReady"));
}

#[test]
fn event_columns() {
    let e = json!({"metadata": {"name": "web.17a", "creationTimestamp": ago(100)},
        "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}"},
        "reason": "Pulled", "message": "  Successfully pulled image\n", "type": "Normal",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": ago(300), "lastTimestamp": ago(100), "count": 4});
    assert_eq!(
        cells("", "events", e),
        vec![
            json!("100s"),
            json!("Normal"),
            json!("Pulled"),
            json!("pod/web"),
            json!("spec.containers{app}"),
            json!("kubelet, n1"),
            json!("Successfully pulled image"),
            json!("5m"),
            json!(4),
            json!("web.17a")
        ]
    );
    // The events.k8s.io shape: eventTime, series, reporting controller; no count.
    let e = json!({"metadata": {"name": "x"}, "involvedObject": {"kind": "Node"}, "eventTime": "2026-11-21T23:45:00.000000Z",
                   "reportingComponent": "scheduler", "series": {"count": 7, "lastObservedTime": ago(2)}});
    let c = cells("", "events", e);
    assert_eq!((c[0].clone(), c[3].clone(), c[5].clone()), (json!("2s"), json!("node"), json!("scheduler")));
    assert_eq!((c[7].clone(), c[8].clone()), (json!("28s"), json!(7)));
    let e = json!({"metadata": {"name": "y"}, "involvedObject": {"kind": "Pod", "name": "p"}});
    let c = cells("", "events", e);
    assert_eq!((c[0].clone(), c[7].clone(), c[8].clone()), (json!("<unknown>"), json!("<unknown>"), json!(1)));
}

#[test]
fn column_definitions_match_kube() {
    let names = |plural: &str, group: &str| -> Vec<(&str, u8)> {
        columns(def(group, plural)).iter().map(|c| (c.name, c.priority)).collect()
    };
    assert_eq!(names("configmaps", ""), vec![("Name", 0), ("Data", 0), ("Age", 0)]);
    assert_eq!(
        names("deployments", "apps"),
        vec![
            ("Name", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1)
        ]
    );
    assert_eq!(
        names("pods", "")[..5].iter().map(|c| c.0).collect::<Vec<_>>(),
        ["Name", "Ready", "Status", "Restarts", "Age"]
    );
    assert_eq!(
        names("events", "").iter().filter(|c| c.1 == 0).map(|c| c.0).collect::<Vec<_>>(),
        ["Last Seen", "Type", "Reason", "Object", "Message"]
    );
    for d in kuorum_api::registry::resources() {
        let cols = columns(d);
        // kube marks the name column (VolumeAttachment's Attacher too) and describes every
        // column but RuntimeClass's Handler.
        assert!(cols.iter().any(|c| c.format == "name" && c.name == "Name"), "{}", d.kind);
        let undescribed: Vec<&str> = cols.iter().filter(|c| c.description.is_empty()).map(|c| c.name).collect();
        assert!(
            undescribed.is_empty() || (d.kind, &undescribed[..]) == ("RuntimeClass", &["Handler"][..]),
            "{}",
            d.kind
        );
    }
    let cm = def("", "configmaps");
    assert_eq!(
        column_json(&columns(cm)[0]),
        json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DOC, "priority": 0})
    );
}
