//! The resources kube-apiserver answers rather than stores, through the router
//! (`oneshot`) over a real single-node cluster: binding a pod to a node (`pods/binding`
//! and the `bindings` collection), evicting a pod under its PodDisruptionBudget
//! (`pods/eviction`), deleting a bound pod gracefully (marked, gone with the kubelet's
//! delete of grace 0), and `componentstatuses` (JSON and `kubectl get cs`'s Table).

mod common;

use axum::http::{Method, StatusCode};
use common::{app, App, NOW};
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";
const PDBS: &str = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

async fn pod(app: &App, name: &str, labels: Value) -> Value {
    let r = app
        .post(
            PODS,
            json!({"metadata": {"name": name, "labels": labels},
                   "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    r.json()
}

/// A pod the kubelet would have started and found ready (kuorum has no kubelet: the test
/// writes its status).
async fn running_pod(app: &App, name: &str, labels: Value) -> Value {
    let mut p = pod(app, name, labels).await;
    p["status"] = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]});
    let r = app.put(&format!("{PODS}/{name}/status"), p).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    r.json()
}

/// A budget over `app=web` whose controller reported `allowed` disruptions.
async fn budget(app: &App, name: &str, allowed: i64) -> Value {
    let r = app
        .post(PDBS, json!({"metadata": {"name": name}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    let mut b = r.json();
    b["status"] = json!({"observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": 2,
                         "desiredHealthy": 1, "expectedPods": 2});
    let r = app.put(&format!("{PDBS}/{name}/status"), b).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    r.json()
}

fn binding(pod: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod, "annotations": {"scheduled-by": "test"}},
           "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
}

fn eviction(pod: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": "default"}})
}

fn assert_success(r: &common::Reply) {
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.json());
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
}

#[tokio::test]
async fn binding_places_the_pod_once() {
    let app = app().await;
    app.namespace("default").await;
    pod(&app, "web", json!({})).await;

    let r = app.post(&format!("{PODS}/web/binding"), binding("web", "node-1")).await;
    assert_success(&r);
    let bound = app.get(&format!("{PODS}/web")).await.json();
    assert_eq!(bound["spec"]["nodeName"], "node-1");
    assert_eq!(bound["metadata"]["annotations"]["scheduled-by"], "test");
    assert_eq!(
        bound["status"]["conditions"],
        json!([{"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": NOW}])
    );
    // The kubelet of the node finds it.
    let on_node = app.get(&format!("{PODS}?fieldSelector=spec.nodeName%3Dnode-1")).await.json();
    assert_eq!(on_node["items"].as_array().unwrap().len(), 1);

    // A second scheduler loses.
    let r = app.post(&format!("{PODS}/web/binding"), binding("web", "node-2")).await;
    let status = r.status_of(
        409,
        "Conflict",
        r#"Operation cannot be fulfilled on pods/binding "web": pod web is already assigned to node "node-1""#,
    );
    assert_eq!(status["details"], json!({"name": "web", "kind": "pods/binding"}));
    assert_eq!(app.get(&format!("{PODS}/web")).await.json()["spec"]["nodeName"], "node-1");
}

#[tokio::test]
async fn binding_through_the_bindings_collection() {
    let app = app().await;
    app.namespace("default").await;
    let p = pod(&app, "api", json!({})).await;

    // The pod is the one the body names; a uid that is not the pod's is a failed precondition.
    let mut wrong = binding("api", "node-3");
    wrong["metadata"]["uid"] = json!("not-the-pod");
    let r = app.post("/api/v1/namespaces/default/bindings", wrong).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.json());
    let mut right = binding("api", "node-3");
    right["metadata"]["uid"] = p["metadata"]["uid"].clone();
    assert_success(&app.post("/api/v1/namespaces/default/bindings", right).await);
    assert_eq!(app.get(&format!("{PODS}/api")).await.json()["spec"]["nodeName"], "node-3");

    // No such pod; a body for another pod than the URL's; no target.
    let r = app.post("/api/v1/namespaces/default/bindings", binding("nope", "node-3")).await;
    r.status_of(404, "NotFound", r#"pods "nope" not found"#);
    let r = app.post(&format!("{PODS}/api/binding"), binding("other", "node-3")).await;
    r.status_of(400, "BadRequest", "name in URL does not match name in Binding object");
    let r = app
        .post("/api/v1/namespaces/default/bindings", json!({"metadata": {"name": "api"}, "target": {"kind": "Node"}}))
        .await;
    r.status_of(422, "Invalid", r#"Binding "api" is invalid: target.name: Required value"#);
    // Bindings are only created.
    assert_eq!(app.get("/api/v1/namespaces/default/bindings").await.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(app.get(&format!("{PODS}/api/binding")).await.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn binding_in_protobuf_as_kube_scheduler_sends_it() {
    let app = app().await;
    app.namespace("default").await;
    pod(&app, "web", json!({})).await;
    let body = kuorum_protobuf::encode(&binding("web", "node-1")).unwrap();
    let pb = "application/vnd.kubernetes.protobuf";
    let headers = [("content-type", pb), ("accept", "application/vnd.kubernetes.protobuf,application/json")];
    let r = app.request(Method::POST, &format!("{PODS}/web/binding"), &headers, axum::body::Body::from(body)).await;
    assert_eq!((r.status, r.content_type()), (StatusCode::CREATED, pb));
    let (_, kind, status) = kuorum_protobuf::decode(&r.bytes).unwrap();
    assert_eq!((kind.as_str(), &status["status"]), ("Status", &json!("Success")));
    assert_eq!(app.get(&format!("{PODS}/web")).await.json()["spec"]["nodeName"], "node-1");
}

#[tokio::test]
async fn a_dry_run_binding_writes_nothing() {
    let app = app().await;
    app.namespace("default").await;
    pod(&app, "web", json!({})).await;
    assert_success(&app.post(&format!("{PODS}/web/binding?dryRun=All"), binding("web", "node-1")).await);
    assert!(app.get(&format!("{PODS}/web")).await.json()["spec"].get("nodeName").is_none());
}

#[tokio::test]
async fn eviction_without_a_budget_deletes_the_pod() {
    let app = app().await;
    app.namespace("default").await;
    running_pod(&app, "web", json!({"app": "web"})).await;
    let r = app.post(&format!("{PODS}/web/eviction"), eviction("web")).await;
    assert_success(&r);
    app.get(&format!("{PODS}/web")).await.status_of(404, "NotFound", r#"pods "web" not found"#);

    let r = app.post(&format!("{PODS}/gone/eviction"), eviction("gone")).await;
    r.status_of(404, "NotFound", r#"pods "gone" not found"#);
    let r = app.post(&format!("{PODS}/web/eviction"), json!({"apiVersion": "v1", "kind": "Eviction"})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.json());
}

#[tokio::test]
async fn an_exhausted_budget_keeps_the_pod() {
    let app = app().await;
    app.namespace("default").await;
    running_pod(&app, "web", json!({"app": "web"})).await;
    budget(&app, "web", 0).await;

    let r = app.post(&format!("{PODS}/web/eviction"), eviction("web")).await;
    let status =
        r.status_of(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "DisruptionBudget", "message": "The disruption budget web needs 1 healthy pods and has 2 currently"}])
    );
    assert_eq!(app.get(&format!("{PODS}/web")).await.status, StatusCode::OK);

    // A pod that never started disrupts nothing: it goes whatever the budget says.
    pod(&app, "pending", json!({"app": "web"})).await;
    assert_success(&app.post(&format!("{PODS}/pending/eviction"), eviction("pending")).await);
    assert_eq!(app.get(&format!("{PODS}/pending")).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_budget_with_room_is_spent_and_the_pod_goes() {
    let app = app().await;
    app.namespace("default").await;
    running_pod(&app, "web-1", json!({"app": "web"})).await;
    running_pod(&app, "web-2", json!({"app": "web"})).await;
    budget(&app, "web", 1).await;

    // A dry run spends nothing.
    let r = app.post(&format!("{PODS}/web-1/eviction?dryRun=All"), eviction("web-1")).await;
    assert_success(&r);
    assert_eq!(app.get(&format!("{PDBS}/web")).await.json()["status"]["disruptionsAllowed"], 1);
    assert_eq!(app.get(&format!("{PODS}/web-1")).await.status, StatusCode::OK);

    assert_success(&app.post(&format!("{PODS}/web-1/eviction"), eviction("web-1")).await);
    assert_eq!(app.get(&format!("{PODS}/web-1")).await.status, StatusCode::NOT_FOUND);
    let b = app.get(&format!("{PDBS}/web")).await.json();
    assert_eq!(b["status"]["disruptionsAllowed"], 0);
    assert_eq!(b["status"]["disruptedPods"], json!({"web-1": NOW}));
    assert_eq!(b["status"]["conditions"][0]["type"], "DisruptionAllowed");
    assert_eq!(b["status"]["conditions"][0]["status"], "False");

    // The next one finds the budget spent.
    let r = app.post(&format!("{PODS}/web-2/eviction"), eviction("web-2")).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.json());
    assert_eq!(app.get(&format!("{PODS}/web-2")).await.status, StatusCode::OK);
}

#[tokio::test]
async fn two_budgets_over_one_pod_are_500() {
    let app = app().await;
    app.namespace("default").await;
    running_pod(&app, "web", json!({"app": "web"})).await;
    budget(&app, "one", 1).await;
    budget(&app, "two", 1).await;
    let r = app.post(&format!("{PODS}/web/eviction"), eviction("web")).await;
    r.status_of(
        500,
        "InternalError",
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
    );
    assert_eq!(app.get(&format!("{PODS}/web")).await.status, StatusCode::OK);
    assert_eq!(app.get(&format!("{PDBS}/one")).await.json()["status"]["disruptionsAllowed"], 1);
}

#[tokio::test]
async fn eviction_honours_the_delete_preconditions() {
    let app = app().await;
    app.namespace("default").await;
    let p = running_pod(&app, "web", json!({"app": "web"})).await;
    let mut stale = eviction("web");
    stale["deleteOptions"] = json!({"preconditions": {"resourceVersion": "1"}});
    let r = app.post(&format!("{PODS}/web/eviction"), stale).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.json());
    assert_eq!(app.get(&format!("{PODS}/web")).await.status, StatusCode::OK);

    let mut current = eviction("web");
    current["deleteOptions"] = json!({"preconditions": {"uid": p["metadata"]["uid"],
                                                        "resourceVersion": p["metadata"]["resourceVersion"]}});
    assert_success(&app.post(&format!("{PODS}/web/eviction"), current).await);
    assert_eq!(app.get(&format!("{PODS}/web")).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_evicted_pod_held_by_a_finalizer_is_marked_a_disruption_target() {
    let app = app().await;
    app.namespace("default").await;
    let mut p = running_pod(&app, "web", json!({"app": "web"})).await;
    p["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(app.put(&format!("{PODS}/web"), p).await.status, StatusCode::OK);
    assert_success(&app.post(&format!("{PODS}/web/eviction"), eviction("web")).await);
    let held = app.get(&format!("{PODS}/web")).await.json();
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let target = held["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "DisruptionTarget");
    assert_eq!(target.unwrap()["reason"], "EvictionByEvictionAPI", "{held}");
}

#[tokio::test]
async fn component_statuses_report_the_storage() {
    let app = app().await;
    let list = app.get("/api/v1/componentstatuses").await;
    assert_eq!(list.status, StatusCode::OK);
    let list = list.json();
    assert_eq!(list["kind"], "ComponentStatusList");
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["metadata"]["name"], "storage");
    assert_eq!(items[0]["conditions"][0]["type"], "Healthy");
    assert_eq!(items[0]["conditions"][0]["status"], "True", "{list}");
    assert!(items[0]["conditions"][0]["message"].as_str().unwrap().starts_with("ok"));

    let one = app.get("/api/v1/componentstatuses/storage").await.json();
    assert_eq!((one["kind"].as_str(), one["metadata"]["name"].as_str()), (Some("ComponentStatus"), Some("storage")));
    app.get("/api/v1/componentstatuses/etcd-0").await.status_of(
        404,
        "NotFound",
        r#"componentstatuses "etcd-0" not found"#,
    );
    // Selectors filter; the components have no labels.
    let by_name = app.get("/api/v1/componentstatuses?fieldSelector=metadata.name%3Dstorage").await.json();
    assert_eq!(by_name["items"].as_array().unwrap().len(), 1);
    let labelled = app.get("/api/v1/componentstatuses?labelSelector=tier").await.json();
    assert_eq!(labelled["items"], json!([]));

    // kubectl get cs.
    let table = app.get_with("/api/v1/componentstatuses", &[("accept", TABLE)]).await;
    assert_eq!(table.status, StatusCode::OK);
    let table = table.json();
    assert_eq!(table["kind"], "Table");
    let names: Vec<&str> =
        table["columnDefinitions"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Name", "Status", "Message", "Error"]);
    let cells = table["rows"][0]["cells"].as_array().unwrap();
    assert_eq!((cells[0].as_str(), cells[1].as_str(), cells[3].as_str()), (Some("storage"), Some("Healthy"), Some("")));
    let one = app.get_with("/api/v1/componentstatuses/storage", &[("accept", TABLE)]).await.json();
    assert_eq!(one["rows"].as_array().unwrap().len(), 1);

    // Only got and listed.
    assert_eq!(app.get("/api/v1/componentstatuses?watch=true").await.status, StatusCode::METHOD_NOT_ALLOWED);
    let r = app.request(Method::DELETE, "/api/v1/componentstatuses/storage", &[], axum::body::Body::empty()).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(app.post("/api/v1/componentstatuses", json!({})).await.status, StatusCode::METHOD_NOT_ALLOWED);
}

/// 30 seconds after the test clock's `NOW`, as kube writes a `deletionTimestamp`.
const NOW_PLUS_30: &str = "2026-11-21T23:45:58Z";

#[tokio::test]
async fn a_bound_pod_is_deleted_gracefully_and_goes_with_the_kubelets_confirmation() {
    let app = app().await;
    app.namespace("default").await;
    pod(&app, "web", json!({"app": "web"})).await;
    assert_success(&app.post(&format!("{PODS}/web/binding"), binding("web", "node-1")).await);
    let mut events = app.watch(&format!("{PODS}?watch=true&resourceVersion=0")).await;
    events.events(1).await;

    // The delete marks the pod with its terminationGracePeriodSeconds (defaulted to 30).
    let r = app.delete(&format!("{PODS}/web")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    let marked = r.json();
    assert_eq!(marked["metadata"]["deletionTimestamp"], NOW_PLUS_30);
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(events.next().await["type"], "MODIFIED");
    assert_eq!(app.get(&format!("{PODS}/web")).await.json()["metadata"]["deletionTimestamp"], NOW_PLUS_30);

    // Another delete changes nothing, a longer grace neither; the kubelet's status
    // updates keep the pod and its marks.
    let again = app.delete(&format!("{PODS}/web")).await.json();
    assert_eq!(again["metadata"]["resourceVersion"], marked["metadata"]["resourceVersion"]);
    let longer = app.send(Method::DELETE, &format!("{PODS}/web"), json!({"gracePeriodSeconds": 60})).await;
    assert_eq!(longer.json()["metadata"]["resourceVersion"], marked["metadata"]["resourceVersion"]);
    let mut status = marked.clone();
    status["status"]["phase"] = json!("Running");
    let r = app.put(&format!("{PODS}/web/status"), status).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert_eq!(r.json()["metadata"]["deletionTimestamp"], NOW_PLUS_30);
    // A pod being deleted is bound no more.
    let r = app.post(&format!("{PODS}/web/binding"), binding("web", "node-2")).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.json());

    // A shorter grace moves the mark earlier.
    let shorter = app.send(Method::DELETE, &format!("{PODS}/web"), json!({"gracePeriodSeconds": 10})).await.json();
    assert_eq!(shorter["metadata"]["deletionTimestamp"], "2026-11-21T23:45:38Z");
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 10);

    // The kubelet confirms: grace 0 removes it.
    let r = app.delete(&format!("{PODS}/web?gracePeriodSeconds=0")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    app.get(&format!("{PODS}/web")).await.status_of(404, "NotFound", r#"pods "web" not found"#);
    let types: Vec<String> = events.events(3).await.into_iter().map(|e| e.0).collect();
    assert_eq!(types, ["MODIFIED", "MODIFIED", "DELETED"]);
}

#[tokio::test]
async fn graceful_deletion_spares_what_has_nothing_to_stop() {
    let app = app().await;
    app.namespace("default").await;
    // Not bound: at once, whatever grace is asked for.
    pod(&app, "pending", json!({})).await;
    let r = app.send(Method::DELETE, &format!("{PODS}/pending"), json!({"gracePeriodSeconds": 30})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert_eq!(app.get(&format!("{PODS}/pending")).await.status, StatusCode::NOT_FOUND);

    // Bound, but finished.
    pod(&app, "done", json!({})).await;
    assert_success(&app.post(&format!("{PODS}/done/binding"), binding("done", "node-1")).await);
    let mut p = app.get(&format!("{PODS}/done")).await.json();
    p["status"]["phase"] = json!("Succeeded");
    assert_eq!(app.put(&format!("{PODS}/done/status"), p).await.status, StatusCode::OK);
    assert_eq!(app.delete(&format!("{PODS}/done")).await.status, StatusCode::OK);
    assert_eq!(app.get(&format!("{PODS}/done")).await.status, StatusCode::NOT_FOUND);

    // Bound, with a finalizer: grace 0 marks it for the finalizer; removing it removes the pod.
    pod(&app, "held", json!({})).await;
    assert_success(&app.post(&format!("{PODS}/held/binding"), binding("held", "node-1")).await);
    let mut p = app.get(&format!("{PODS}/held")).await.json();
    p["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(app.put(&format!("{PODS}/held"), p).await.status, StatusCode::OK);
    let marked = app.delete(&format!("{PODS}/held")).await.json();
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    let zero = app.delete(&format!("{PODS}/held?gracePeriodSeconds=0")).await.json();
    assert_eq!(zero["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(zero["metadata"]["deletionTimestamp"], NOW);
    let mut p = app.get(&format!("{PODS}/held")).await.json();
    p["metadata"]["finalizers"] = json!([]);
    assert_eq!(app.put(&format!("{PODS}/held"), p).await.status, StatusCode::OK);
    assert_eq!(app.get(&format!("{PODS}/held")).await.status, StatusCode::NOT_FOUND);

    // A stale precondition is still 409, and marks nothing.
    let p = pod(&app, "web", json!({})).await;
    assert_success(&app.post(&format!("{PODS}/web/binding"), binding("web", "node-1")).await);
    let stale = json!({"preconditions": {"resourceVersion": p["metadata"]["resourceVersion"]}});
    let r = app.send(Method::DELETE, &format!("{PODS}/web"), stale).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.json());
    assert!(app.get(&format!("{PODS}/web")).await.json()["metadata"].get("deletionTimestamp").is_none());
}

#[tokio::test]
async fn evicting_and_deleting_a_collection_of_bound_pods_marks_them() {
    let app = app().await;
    app.namespace("default").await;
    for name in ["a", "b"] {
        running_pod(&app, name, json!({"app": "web"})).await;
        assert_success(&app.post(&format!("{PODS}/{name}/binding"), binding(name, "node-1")).await);
    }
    assert_success(&app.post(&format!("{PODS}/a/eviction"), eviction("a")).await);
    let a = app.get(&format!("{PODS}/a")).await.json();
    assert_eq!(a["metadata"]["deletionTimestamp"], NOW_PLUS_30, "evicted, stopping");
    assert!(a["status"]["conditions"].as_array().unwrap().iter().any(|c| c["type"] == "DisruptionTarget"), "{a}");

    let r = app.delete(PODS).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.json());
    assert_eq!(r.json()["items"].as_array().unwrap().len(), 2);
    let left = app.get(PODS).await.json();
    let marks: Vec<&Value> =
        left["items"].as_array().unwrap().iter().map(|p| &p["metadata"]["deletionTimestamp"]).collect();
    assert_eq!(marks, [NOW_PLUS_30, NOW_PLUS_30]);
    assert_eq!(app.delete(&format!("{PODS}?gracePeriodSeconds=0")).await.status, StatusCode::OK);
    assert_eq!(app.get(PODS).await.json()["items"], json!([]));
}
