//! Built-in kinds served at two versions through the router (`oneshot`): an object is
//! stored once and read, written, listed, watched and selected through either version, as
//! kube-apiserver converts autoscaling/v1 and autoscaling/v2 HorizontalPodAutoscalers and
//! core/v1 and events.k8s.io/v1 Events.

mod common;

use axum::http::{Method, StatusCode};
use common::{app, rv, summary};
use serde_json::{json, Value};

const HPA_V1: &str = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
const HPA_V2: &str = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
const EVENTS_CORE: &str = "/api/v1/namespaces/default/events";
const EVENTS_NEW: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

fn hpa_v2() -> Value {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 10, "metrics": [
                {"type": "Pods", "pods": {"metric": {"name": "requests"},
                    "target": {"type": "AverageValue", "averageValue": "100"}}},
                {"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 70}}}]}})
}

#[tokio::test]
async fn a_hpa_written_through_v1_reads_through_v2_and_back_without_loss() {
    let app = app().await;
    app.namespace("default").await;

    // Created through v2 with a metric v1 cannot say.
    let created = app.post(HPA_V2, hpa_v2()).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json());

    // Read through v1: the CPU target is v1's field, the other metric kube's annotation.
    let v1 = app.get(&format!("{HPA_V1}/web")).await.json();
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
    assert!(v1["spec"].get("metrics").is_none(), "{v1}");
    let other: Value = serde_json::from_str(
        v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(other, json!([{"type": "Pods", "pods": {"metricName": "requests", "targetAverageValue": "100"}}]));
    assert_eq!(v1["metadata"]["resourceVersion"], created.json()["metadata"]["resourceVersion"]);

    // Updated through v1 (a v1 client changes the CPU target and sends the rest back).
    let mut changed = v1.clone();
    changed["spec"]["targetCPUUtilizationPercentage"] = json!(55);
    let put = app.put(&format!("{HPA_V1}/web"), changed).await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.json());
    assert_eq!(put.json()["spec"]["targetCPUUtilizationPercentage"], 55);

    // Read through v2: nothing was lost, nothing of v1 leaks.
    let v2 = app.get(&format!("{HPA_V2}/web")).await.json();
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    let metrics = v2["spec"]["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 2, "{v2}");
    assert_eq!(metrics[0]["pods"]["metric"]["name"], "requests");
    assert_eq!(metrics[1]["resource"]["target"]["averageUtilization"], 55);
    assert!(v2["metadata"].get("annotations").is_none(), "{v2}");
    assert!(v2["spec"].get("targetCPUUtilizationPercentage").is_none());
    assert_eq!(v2["metadata"]["generation"], 2, "a spec change through v1 is a new generation");

    // Created through v1 without a target: stored as v2's 80% CPU.
    let bare = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bare"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "bare"}, "maxReplicas": 3}});
    let created = app.post(HPA_V1, bare).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json());
    assert_eq!(created.json()["spec"]["minReplicas"], 1);
    let v2 = app.get(&format!("{HPA_V2}/bare")).await.json();
    assert_eq!(v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 80);

    // Lists through either version hold the same objects, each at the version asked.
    for (uri, version) in [(HPA_V1, "autoscaling/v1"), (HPA_V2, "autoscaling/v2")] {
        let list = app.get(uri).await.json();
        let items = list["items"].as_array().unwrap();
        assert_eq!(items.len(), 2, "{list}");
        assert!(items.iter().all(|i| i["apiVersion"] == version), "{list}");
    }

    // Validation through v1 names kube's internal (v2) fields.
    let zero = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "zero"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 3,
            "targetCPUUtilizationPercentage": 0}});
    let refused = app.post(HPA_V1, zero).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let causes = refused.json()["details"]["causes"].clone();
    assert!(causes.to_string().contains("spec.metrics[0].resource.target.averageUtilization"), "{causes}");
}

#[tokio::test]
async fn core_and_events_k8s_io_events_are_the_same_objects() {
    let app = app().await;
    app.namespace("default").await;

    // A watch on the new API from now on.
    let start = app.get(EVENTS_NEW).await.json();
    let mut watch = app.watch(&format!("{EVENTS_NEW}?watch=1&resourceVersion={}", rv(&start))).await;

    // Written through core/v1, as the kubelet's old recorder does.
    let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.1"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "default"},
        "reason": "Started", "message": "Started container nginx", "type": "Normal",
        "source": {"component": "kubelet", "host": "node-1"}, "count": 1});
    let created = app.post(EVENTS_CORE, core).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json());
    let written_rv = rv(&created.json());

    // The watch on the new API sees it, at the same resourceVersion, in its own fields.
    let ev = watch.next().await;
    assert_eq!(summary(&ev), ("ADDED".into(), "web.1".into(), written_rv));
    let obj = &ev["object"];
    assert_eq!(obj["apiVersion"], "events.k8s.io/v1");
    assert_eq!(obj["regarding"]["name"], "web");
    assert_eq!(obj["note"], "Started container nginx");
    assert_eq!(obj["deprecatedSource"]["component"], "kubelet");
    assert_eq!(obj["deprecatedCount"], 1);
    assert!(obj.get("involvedObject").is_none() && obj.get("message").is_none(), "{obj}");

    // Written through events.k8s.io/v1, as client-go's new recorder does; read through core.
    let new = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "web.2"},
        "eventTime": "2026-11-21T23:45:28.000000Z", "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-1", "action": "Binding", "reason": "Scheduled",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "default"},
        "note": "Successfully assigned default/web to node-1", "type": "Normal"});
    let created = app.post(EVENTS_NEW, new).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.json());
    assert_eq!(created.json()["note"], "Successfully assigned default/web to node-1");
    let ev = watch.next().await;
    assert_eq!(summary(&ev).1, "web.2");
    let core = app.get(&format!("{EVENTS_CORE}/web.2")).await.json();
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["involvedObject"]["name"], "web");
    assert_eq!(core["message"], "Successfully assigned default/web to node-1");
    assert_eq!(core["reportingComponent"], "default-scheduler");

    // Field selectors by either API's names.
    let by_core = app.get(&format!("{EVENTS_CORE}?fieldSelector=source%3Ddefault-scheduler")).await.json();
    let names: Vec<&str> =
        by_core["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["web.2"], "source falls back to the reporting controller");
    let by_new = app
        .get(&format!("{EVENTS_NEW}?fieldSelector=regarding.name%3Dweb,reportingController%3Ddefault-scheduler"))
        .await
        .json();
    let names: Vec<&str> =
        by_new["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["web.2"]);
    let refused = app.get(&format!("{EVENTS_NEW}?fieldSelector=involvedObject.name%3Dweb")).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "the new API does not know the old names");

    // The new API's strict rules: no eventTime is 422 at kube's field.
    let no_time = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "web.3"},
        "reportingController": "x", "reportingInstance": "x-1", "action": "A", "reason": "R",
        "regarding": {"kind": "Pod", "name": "web", "namespace": "default"}, "type": "Normal"});
    let refused = app.post(EVENTS_NEW, no_time).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused.json()["details"]["causes"][0]["field"], "eventTime");

    // An event does not change through the new API but for its series.
    let mut edited = created.json();
    edited["note"] = json!("rewritten");
    let refused = app.put(&format!("{EVENTS_NEW}/web.2"), edited).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.json());

    // Deleted through one API, gone from the other.
    let gone = app.request(Method::DELETE, &format!("{EVENTS_NEW}/web.1"), &[], axum::body::Body::empty()).await;
    assert_eq!(gone.status, StatusCode::OK);
    assert_eq!(gone.json()["apiVersion"], "events.k8s.io/v1");
    assert_eq!(app.get(&format!("{EVENTS_CORE}/web.1")).await.status, StatusCode::NOT_FOUND);
}
