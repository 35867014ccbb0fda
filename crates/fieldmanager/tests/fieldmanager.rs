//! managedFields tracking and server-side apply against the built-in ConfigMap, Deployment and
//! Pod schemas. Expected results follow kube-apiserver (see the crate documentation).

use kuorum_fieldmanager::{apply, apply_with, update, update_with, ApplyError, Conflict, Operation, Options, Writer};
use kuorum_schema::{Schema, Schemas};
use serde_json::{json, Value};

const T1: &str = "2026-11-22T05:40:00Z";
const T2: &str = "2026-11-22T05:41:00Z";
const T3: &str = "2026-11-22T05:42:00Z";

fn configmap() -> Schema<'static> {
    Schemas::builtin().kind("", "v1", "ConfigMap").unwrap()
}

fn deployment() -> Schema<'static> {
    Schemas::builtin().kind("apps", "v1", "Deployment").unwrap()
}

fn pod() -> Schema<'static> {
    Schemas::builtin().kind("", "v1", "Pod").unwrap()
}

fn w<'a>(manager: &'a str, api_version: &'a str, time: &'a str) -> Writer<'a> {
    Writer { manager, api_version, subresource: "", time }
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": data})
}

fn entries(obj: &Value) -> &Vec<Value> {
    obj["metadata"]["managedFields"].as_array().expect("managedFields")
}

/// The (manager, operation) pairs of the entries, in order.
fn owners(obj: &Value) -> Vec<(String, String)> {
    entries(obj)
        .iter()
        .map(|e| (e["manager"].as_str().unwrap().to_string(), e["operation"].as_str().unwrap().to_string()))
        .collect()
}

fn fields<'a>(obj: &'a Value, manager: &str, op: &str) -> &'a Value {
    &entries(obj)
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == op)
        .unwrap_or_else(|| panic!("no {op} entry for {manager} in {obj:#}"))["fieldsV1"]
}

fn exact(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

fn conflicts(r: Result<Value, ApplyError>) -> Vec<Conflict> {
    match r {
        Err(ApplyError::Conflicts(c)) => c,
        other => panic!("expected conflicts, got {other:?}"),
    }
}

fn invalid(r: Result<Value, ApplyError>) -> String {
    match r {
        Err(ApplyError::Invalid(m)) => m,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

fn nginx_deployment(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "nginx", "image": image,
                    "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]
                }]}
            }
        }
    })
}

// ---- update ------------------------------------------------------------------------------

#[test]
fn create_via_update_gives_full_ownership() {
    let mut new = cm(json!({"key": "v1"}));
    new["metadata"]["labels"] = json!({"app": "web"});
    let out = update(configmap(), None, new.clone(), &w("kubectl-client-side-apply", "v1", T1)).unwrap();
    assert_eq!(
        exact(&out["metadata"]["managedFields"]),
        exact(&json!([{
            "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1", "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:key": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
        }]))
    );
    // Nothing else changes.
    let mut stripped = out.clone();
    stripped["metadata"].as_object_mut().unwrap().remove("managedFields");
    assert_eq!(stripped, new);
}

#[test]
fn create_via_update_of_a_deployment_owns_every_new_node() {
    let out =
        update(deployment(), None, nginx_deployment(2, "nginx:1.27"), &w("kubectl-create", "apps/v1", T1)).unwrap();
    let nginx = json!({
        ".": {}, "f:image": {}, "f:name": {},
        "f:ports": {
            ".": {},
            "k:{\"containerPort\":53,\"protocol\":\"UDP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}},
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}
        }
    });
    let want = json!({
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            ".": {}, "f:replicas": {}, "f:selector": {},
            "f:template": {
                ".": {},
                "f:metadata": {".": {}, "f:labels": {".": {}, "f:app": {}}},
                "f:spec": {".": {}, "f:containers": {".": {}, "k:{\"name\":\"nginx\"}": nginx}}
            }
        }
    });
    assert_eq!(exact(fields(&out, "kubectl-create", "Update")), exact(&want));
}

#[test]
fn update_takes_changed_fields_from_other_managers() {
    let created = update(configmap(), None, cm(json!({"a": "1", "b": "2"})), &w("creator", "v1", T1)).unwrap();
    let mut new = created.clone();
    new["data"]["a"] = json!("changed");
    new["data"]["c"] = json!("3");
    let out = update(configmap(), Some(&created), new, &w("controller", "v1", T2)).unwrap();
    assert_eq!(owners(&out), [("creator".into(), "Update".into()), ("controller".into(), "Update".into())]);
    assert_eq!(exact(fields(&out, "creator", "Update")), exact(&json!({"f:data": {".": {}, "f:b": {}}})));
    assert_eq!(exact(fields(&out, "controller", "Update")), exact(&json!({"f:data": {"f:a": {}, "f:c": {}}})));
    assert_eq!(entries(&out)[1]["time"], T2);
    assert_eq!(entries(&out)[0]["time"], T1);
}

#[test]
fn update_removing_fields_removes_them_from_every_entry_and_drops_empty_entries() {
    let created = update(configmap(), None, cm(json!({"a": "1"})), &w("creator", "v1", T1)).unwrap();
    let mut new = created.clone();
    new["data"]["b"] = json!("2");
    let both = update(configmap(), Some(&created), new, &w("second", "v1", T2)).unwrap();
    // The creator's `a` and the `data` node go; the second manager's `b` goes.
    let mut new = both.clone();
    new.as_object_mut().unwrap().remove("data");
    let out = update(configmap(), Some(&both), new, &w("cleaner", "v1", T3)).unwrap();
    assert!(out["metadata"].get("managedFields").is_none(), "{out:#}");
}

#[test]
fn noop_update_changes_nothing() {
    let created = update(configmap(), None, cm(json!({"a": "1"})), &w("creator", "v1", T1)).unwrap();
    let out = update(configmap(), Some(&created), created.clone(), &w("someone", "v1", T2)).unwrap();
    assert_eq!(out, created);
}

#[test]
fn update_entries_are_per_api_version_and_subresource() {
    let created = update(deployment(), None, nginx_deployment(1, "a"), &w("m", "apps/v1", T1)).unwrap();
    let mut new = created.clone();
    new["spec"]["replicas"] = json!(3);
    let out = update(deployment(), Some(&created), new, &w("m", "apps/v1beta2", T2)).unwrap();
    let versions: Vec<&str> = entries(&out).iter().map(|e| e["apiVersion"].as_str().unwrap()).collect();
    assert_eq!(versions, ["apps/v1", "apps/v1beta2"]);

    let mut new = out.clone();
    new["status"] = json!({"replicas": 3});
    let sw = Writer { manager: "m", api_version: "apps/v1", subresource: "status", time: T3 };
    let out = update(deployment(), Some(&out), new, &sw).unwrap();
    let last = entries(&out).last().unwrap();
    assert_eq!(last["subresource"], "status");
    assert_eq!(exact(&last["fieldsV1"]), exact(&json!({"f:status": {".": {}, "f:replicas": {}}})));
}

#[test]
fn update_with_an_empty_list_or_an_empty_entry_resets_managed_fields() {
    let created = update(configmap(), None, cm(json!({"a": "1"})), &w("creator", "v1", T1)).unwrap();
    for reset in [json!([]), json!([{}])] {
        let mut new = created.clone();
        new["metadata"]["managedFields"] = reset.clone();
        new["data"]["b"] = json!("2");
        let out = update(configmap(), Some(&created), new, &w("resetter", "v1", T2)).unwrap();
        assert!(out["metadata"].get("managedFields").is_none(), "{reset}: {out:#}");
        assert_eq!(out["data"], json!({"a": "1", "b": "2"}));
        // Untracked until someone applies: a later update records nothing either.
        let mut next = out.clone();
        next["data"]["c"] = json!("3");
        let out = update(configmap(), Some(&out), next, &w("later", "v1", T3)).unwrap();
        assert!(out["metadata"].get("managedFields").is_none());
    }
}

#[test]
fn client_supplied_managed_fields_replace_tracking_but_absent_or_bad_ones_do_not() {
    let created = update(configmap(), None, cm(json!({"a": "1"})), &w("creator", "v1", T1)).unwrap();
    let supplied = json!([{"manager": "imported", "operation": "Apply", "apiVersion": "v1", "time": T1,
                           "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}}]);
    let mut new = created.clone();
    new["metadata"]["managedFields"] = supplied.clone();
    let out = update(configmap(), Some(&created), new, &w("editor", "v1", T2)).unwrap();
    assert_eq!(out["metadata"]["managedFields"], supplied);

    // Dropped from a PUT body (absent), or undecodable: the stored entries stay.
    for body in
        [None, Some(json!([{"manager": "x", "operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]))]
    {
        let mut new = created.clone();
        match body {
            None => drop(new["metadata"].as_object_mut().unwrap().remove("managedFields")),
            Some(b) => new["metadata"]["managedFields"] = b,
        }
        let out = update(configmap(), Some(&created), new, &w("editor", "v1", T2)).unwrap();
        assert_eq!(out["metadata"]["managedFields"], created["metadata"]["managedFields"]);
    }

    // On a subresource the request's entries are ignored.
    let mut new = created.clone();
    new["metadata"]["managedFields"] = supplied;
    let sw = Writer { manager: "editor", api_version: "v1", subresource: "status", time: T2 };
    let out = update(configmap(), Some(&created), new, &sw).unwrap();
    assert_eq!(out["metadata"]["managedFields"], created["metadata"]["managedFields"]);
}

#[test]
fn update_of_an_untypable_object_keeps_the_stored_entries() {
    let created = update(
        pod(),
        None,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        &w("creator", "v1", T1),
    )
    .unwrap();
    let mut new = created.clone();
    new["spec"]["containers"] = json!([{"image": "no-name"}]);
    let out = update(pod(), Some(&created), new, &w("editor", "v1", T2)).unwrap();
    assert_eq!(out["metadata"]["managedFields"], created["metadata"]["managedFields"]);
    assert_eq!(out["spec"]["containers"][0]["image"], "no-name");
    assert!(update(pod(), None, json!([1]), &w("m", "v1", T1)).is_err());
}

#[test]
fn ignored_fields_are_never_owned() {
    let opts = Options { ignored: &["status"] };
    let mut obj = nginx_deployment(1, "a");
    obj["status"] = json!({"replicas": 1});
    let out = update_with(deployment(), None, obj, &w("m", "apps/v1", T1), &opts).unwrap();
    assert!(fields(&out, "m", "Update").get("f:status").is_none());
    assert!(fields(&out, "m", "Update").get("f:spec").is_some());
}

#[test]
fn update_managers_are_capped_at_ten_with_ancient_changes() {
    let mut obj = update(configmap(), None, cm(json!({"k0": "v"})), &w("m0", "v1", "2026-01-01T00:00:00Z")).unwrap();
    for i in 1..12 {
        let mut new = obj.clone();
        new["data"][format!("k{i}")] = json!("v");
        let time = format!("2026-01-01T00:00:{i:02}Z");
        obj = update(configmap(), Some(&obj), new, &w(&format!("m{i}"), "v1", &time)).unwrap();
    }
    let names: Vec<String> = owners(&obj).into_iter().map(|(m, _)| m).collect();
    assert_eq!(names.len(), 10);
    assert_eq!(names[0], "ancient-changes");
    assert!(
        !names.contains(&"m0".to_string()) && !names.contains(&"m1".to_string()) && !names.contains(&"m2".to_string())
    );
    let ancient = fields(&obj, "ancient-changes", "Update");
    assert_eq!(exact(ancient), exact(&json!({"f:data": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}})));
    assert_eq!(entries(&obj)[0]["time"], "2026-01-01T00:00:02Z");
}

// ---- apply -------------------------------------------------------------------------------

#[test]
fn apply_creates_when_live_is_none() {
    let config = nginx_deployment(2, "nginx:1.27");
    let out = apply(deployment(), None, &config, &w("kubectl", "apps/v1", T1), false).unwrap();
    let mut stripped = out.clone();
    stripped["metadata"].as_object_mut().unwrap().remove("managedFields");
    assert_eq!(stripped, config);
    assert_eq!(owners(&out), [("kubectl".into(), "Apply".into())]);
    let e = &entries(&out)[0];
    assert_eq!((&e["apiVersion"], &e["time"], &e["fieldsType"]), (&json!("apps/v1"), &json!(T1), &json!("FieldsV1")));
    assert!(e.get("subresource").is_none());
}

#[test]
fn applied_deployment_fields_v1_is_exact() {
    let out =
        apply(deployment(), None, &nginx_deployment(2, "nginx:1.27"), &w("kubectl", "apps/v1", T1), false).unwrap();
    let want = concat!(
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"#,
        r#""f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"#,
        r#""f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"#,
        r#""k:{\"containerPort\":53,\"protocol\":\"UDP\"}":{".":{},"f:containerPort":{},"f:protocol":{}},"#,
        r#""k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}"#
    );
    assert_eq!(exact(fields(&out, "kubectl", "Apply")), want);
}

#[test]
fn two_appliers_owning_different_keys_coexist() {
    let a = apply(configmap(), None, &cm(json!({"a": "1"})), &w("alice", "v1", T1), false).unwrap();
    let ab = apply(configmap(), Some(&a), &cm(json!({"b": "2"})), &w("bob", "v1", T2), false).unwrap();
    assert_eq!(ab["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(owners(&ab), [("alice".into(), "Apply".into()), ("bob".into(), "Apply".into())]);
    assert_eq!(exact(fields(&ab, "alice", "Apply")), r#"{"f:data":{"f:a":{}}}"#);
    assert_eq!(exact(fields(&ab, "bob", "Apply")), r#"{"f:data":{"f:b":{}}}"#);
    // Alice re-applying her own key leaves Bob's alone.
    let again = apply(configmap(), Some(&ab), &cm(json!({"a": "1.1"})), &w("alice", "v1", T3), false).unwrap();
    assert_eq!(again["data"], json!({"a": "1.1", "b": "2"}));
}

#[test]
fn conflict_with_an_update_manager_on_a_changed_value() {
    let live = update(configmap(), None, cm(json!({"key": "old"})), &w("kubectl-client-side-apply", "v1", T1)).unwrap();
    let err = apply(configmap(), Some(&live), &cm(json!({"key": "new"})), &w("kubectl", "v1", T2), false).unwrap_err();
    assert_eq!(
        err.message(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.key"#
    );
    let c = conflicts(Err(err));
    assert_eq!(
        c,
        [Conflict {
            manager: "kubectl-client-side-apply".into(),
            api_version: "v1".into(),
            field: ".data.key".into(),
            operation: Operation::Update,
            subresource: String::new(),
        }]
    );
    assert_eq!(c[0].cause_message(), r#"conflict with "kubectl-client-side-apply" using v1"#);
}

#[test]
fn same_value_is_shared_ownership_not_a_conflict() {
    let live =
        update(configmap(), None, cm(json!({"key": "same"})), &w("kubectl-client-side-apply", "v1", T1)).unwrap();
    let out = apply(configmap(), Some(&live), &cm(json!({"key": "same"})), &w("kubectl", "v1", T2), false).unwrap();
    assert_eq!(exact(fields(&out, "kubectl", "Apply")), r#"{"f:data":{"f:key":{}}}"#);
    assert_eq!(exact(fields(&out, "kubectl-client-side-apply", "Update")), r#"{"f:data":{".":{},"f:key":{}}}"#);
    // The object did not change, so the new entry has no time (as in kube).
    let applied = entries(&out).iter().find(|e| e["manager"] == "kubectl").unwrap();
    assert!(applied.get("time").is_none());
    assert_eq!(out["data"], live["data"]);
    // Now a change by either is a conflict with the other.
    let c = conflicts(apply(configmap(), Some(&out), &cm(json!({"key": "x"})), &w("kubectl", "v1", T3), false));
    assert_eq!((c.len(), c[0].manager.as_str(), c[0].field.as_str()), (1, "kubectl-client-side-apply", ".data.key"));
}

#[test]
fn force_moves_ownership() {
    let live = update(configmap(), None, cm(json!({"key": "old"})), &w("kubectl-client-side-apply", "v1", T1)).unwrap();
    let out = apply(configmap(), Some(&live), &cm(json!({"key": "new"})), &w("kubectl", "v1", T2), true).unwrap();
    assert_eq!(out["data"]["key"], "new");
    assert_eq!(exact(fields(&out, "kubectl", "Apply")), r#"{"f:data":{"f:key":{}}}"#);
    // The updater keeps only the `data` node (a member with nothing under it: `{}`).
    assert_eq!(exact(fields(&out, "kubectl-client-side-apply", "Update")), r#"{"f:data":{}}"#);
    assert_eq!(owners(&out)[0], ("kubectl".to_string(), "Apply".to_string()));
}

#[test]
fn several_conflicts_are_grouped_by_owner() {
    let a = apply(configmap(), None, &cm(json!({"a": "1", "b": "1"})), &w("alice", "v1", T1), false).unwrap();
    let mut new = a.clone();
    new["data"]["c"] = json!("1");
    let ab = update(configmap(), Some(&a), new, &w("bob", "v1", T2)).unwrap();
    let err = apply(configmap(), Some(&ab), &cm(json!({"a": "2", "b": "2", "c": "2"})), &w("carol", "v1", T3), false)
        .unwrap_err();
    assert_eq!(
        err.message(),
        "Apply failed with 3 conflicts: conflicts with \"alice\":\n- .data.a\n- .data.b\nconflicts with \"bob\" using v1:\n- .data.c"
    );
    let c = conflicts(Err(err));
    assert_eq!(c[0].cause_message(), r#"conflict with "alice""#);
    assert_eq!(c[2].cause_message(), r#"conflict with "bob" using v1"#);
}

#[test]
fn conflicts_name_the_subresource() {
    let live = apply(deployment(), None, &nginx_deployment(1, "a"), &w("kubectl", "apps/v1", T1), false).unwrap();
    let mut new = live.clone();
    new["spec"]["replicas"] = json!(5);
    let sw = Writer { manager: "hpa", api_version: "autoscaling/v1", subresource: "scale", time: T2 };
    let scaled = update(deployment(), Some(&live), new, &sw).unwrap();
    let c =
        conflicts(apply(deployment(), Some(&scaled), &nginx_deployment(2, "a"), &w("kubectl", "apps/v1", T3), false));
    assert_eq!(c[0].field, ".spec.replicas");
    assert_eq!(c[0].cause_message(), r#"conflict with "hpa" with subresource "scale" using autoscaling/v1"#);
    // Re-applying the value the scaler set is no conflict.
    assert!(apply(deployment(), Some(&scaled), &nginx_deployment(5, "a"), &w("kubectl", "apps/v1", T3), false).is_ok());
}

#[test]
fn dropping_a_field_from_the_applied_config_removes_it() {
    let mut config = nginx_deployment(3, "nginx");
    config["spec"]["template"]["spec"]["hostname"] = json!("test-hostname");
    let live = apply(deployment(), None, &config, &w("apply_test", "apps/v1", T1), false).unwrap();
    let config = nginx_deployment(3, "nginx");
    let mut config = config;
    config["spec"].as_object_mut().unwrap().remove("replicas");
    let out = apply(deployment(), Some(&live), &config, &w("apply_test", "apps/v1", T2), false).unwrap();
    assert!(out["spec"].get("replicas").is_none(), "{out:#}");
    assert!(out["spec"]["template"]["spec"].get("hostname").is_none());
    assert!(fields(&out, "apply_test", "Apply")["f:spec"].get("f:replicas").is_none());
    // Unowned fields nobody applied (uid, status...) are left alone.
    let mut live2 = live.clone();
    live2["metadata"]["uid"] = json!("u-1");
    live2["status"] = json!({"replicas": 3});
    let out = apply(deployment(), Some(&live2), &config, &w("apply_test", "apps/v1", T2), false).unwrap();
    assert_eq!((&out["metadata"]["uid"], &out["status"]), (&json!("u-1"), &json!({"replicas": 3})));
}

#[test]
fn dropping_a_shared_field_keeps_it() {
    let mut config = nginx_deployment(3, "nginx");
    config["spec"]["template"]["spec"]["hostname"] = json!("test-hostname");
    let mut live = apply(deployment(), None, &config, &w("shared_owner_1", "apps/v1", T1), false).unwrap();
    live = apply(deployment(), Some(&live), &config, &w("shared_owner_2", "apps/v1", T2), false).unwrap();
    let mut config = nginx_deployment(3, "nginx");
    config["spec"].as_object_mut().unwrap().remove("replicas");
    let out = apply(deployment(), Some(&live), &config, &w("shared_owner_1", "apps/v1", T3), false).unwrap();
    assert_eq!(out["spec"]["replicas"], 3);
    assert_eq!(out["spec"]["template"]["spec"]["hostname"], "test-hostname");
    assert!(fields(&out, "shared_owner_1", "Apply")["f:spec"].get("f:replicas").is_none());
    assert!(fields(&out, "shared_owner_2", "Apply")["f:spec"].get("f:replicas").is_some());
}

#[test]
fn dropping_a_field_a_controller_took_over_keeps_its_value() {
    let live =
        apply(deployment(), None, &nginx_deployment(3, "nginx"), &w("test_applier", "apps/v1", T1), false).unwrap();
    let mut new = live.clone();
    new["spec"]["replicas"] = json!(4);
    let live = update(deployment(), Some(&live), new, &w("test_updater", "apps/v1", T2)).unwrap();
    let mut config = nginx_deployment(3, "nginx");
    config["spec"].as_object_mut().unwrap().remove("replicas");
    let out = apply(deployment(), Some(&live), &config, &w("test_applier", "apps/v1", T3), false).unwrap();
    assert_eq!(out["spec"]["replicas"], 4);
}

#[test]
fn list_map_merge_of_containers_between_two_appliers() {
    let pod_with = |containers: Value| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}});
    let live = apply(pod(), None, &pod_with(json!([{"name": "app", "image": "app:1"}])), &w("alice", "v1", T1), false)
        .unwrap();
    let live = apply(
        pod(),
        Some(&live),
        &pod_with(json!([{"name": "sidecar", "image": "proxy:1"}])),
        &w("bob", "v1", T2),
        false,
    )
    .unwrap();
    assert_eq!(
        live["spec"]["containers"],
        json!([{"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "proxy:1"}])
    );
    assert_eq!(
        exact(&fields(&live, "bob", "Apply")["f:spec"]),
        r#"{"f:containers":{"k:{\"name\":\"sidecar\"}":{".":{},"f:image":{},"f:name":{}}}}"#
    );
    // Bob changing Alice's image conflicts at that field.
    let c = conflicts(apply(
        pod(),
        Some(&live),
        &pod_with(json!([{"name": "app", "image": "app:2"}])),
        &w("bob", "v1", T3),
        false,
    ));
    assert_eq!(c.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(), [r#".spec.containers[name="app"].image"#]);
    // Alice dropping her container removes it and keeps Bob's.
    let out = apply(pod(), Some(&live), &pod_with(json!([])), &w("alice", "v1", T3), false).unwrap();
    assert_eq!(out["spec"]["containers"], json!([{"name": "sidecar", "image": "proxy:1"}]));
}

#[test]
fn applier_can_remove_a_container_a_controller_contributed_to() {
    let live =
        apply(deployment(), None, &nginx_deployment(1, "nginx"), &w("test_applier", "apps/v1", T1), false).unwrap();
    let mut new = live.clone();
    new["spec"]["template"]["spec"]["containers"][0]["workingDir"] = json!("/home/replacement");
    let live = update(deployment(), Some(&live), new, &w("test_updater", "apps/v1", T2)).unwrap();
    let mut config = nginx_deployment(1, "nginx");
    config["spec"]["template"]["spec"]["containers"] = json!([{"name": "other-container", "image": "nginx"}]);
    let out = apply(deployment(), Some(&live), &config, &w("test_applier", "apps/v1", T3), false).unwrap();
    assert_eq!(out["spec"]["template"]["spec"]["containers"], json!([{"name": "other-container", "image": "nginx"}]));
}

#[test]
fn finalizers_set_is_a_union() {
    let with_finalizers = |f: Value| {
        let mut v = cm(json!({}));
        v.as_object_mut().unwrap().remove("data");
        v["metadata"]["finalizers"] = f;
        v
    };
    let live = apply(configmap(), None, &with_finalizers(json!(["a.io/x"])), &w("alice", "v1", T1), false).unwrap();
    let live =
        apply(configmap(), Some(&live), &with_finalizers(json!(["b.io/y", "a.io/x"])), &w("bob", "v1", T2), false)
            .unwrap();
    // Shared elements come in the applied order (structured-merge-diff's list merge).
    assert_eq!(live["metadata"]["finalizers"], json!(["b.io/y", "a.io/x"]));
    assert_eq!(
        exact(fields(&live, "bob", "Apply")),
        r#"{"f:metadata":{"f:finalizers":{"v:\"a.io/x\"":{},"v:\"b.io/y\"":{}}}}"#
    );
    // Bob dropping a.io/x keeps it: Alice applies it too.
    let out = apply(configmap(), Some(&live), &with_finalizers(json!(["b.io/y"])), &w("bob", "v1", T3), false).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b.io/y", "a.io/x"]));
    // Alice dropping it (now hers alone) removes it.
    let out = apply(configmap(), Some(&out), &with_finalizers(json!([])), &w("alice", "v1", T3), false).unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b.io/y"]));
}

#[test]
fn atomic_selector_is_replaced_and_owned_as_a_leaf() {
    let live = apply(deployment(), None, &nginx_deployment(1, "nginx"), &w("alice", "apps/v1", T1), false).unwrap();
    let mut config = nginx_deployment(1, "nginx");
    config["spec"]["selector"] = json!({"matchLabels": {"tier": "front"}});
    let c = conflicts(apply(deployment(), Some(&live), &config, &w("bob", "apps/v1", T2), false));
    assert_eq!(c.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(), [".spec.selector"]);
    let out = apply(deployment(), Some(&live), &config, &w("bob", "apps/v1", T2), true).unwrap();
    assert_eq!(out["spec"]["selector"], json!({"matchLabels": {"tier": "front"}}));
    assert_eq!(fields(&out, "bob", "Apply")["f:spec"]["f:selector"], json!({}));
    assert!(fields(&out, "alice", "Apply")["f:spec"].get("f:selector").is_none());
}

#[test]
fn container_ports_default_their_protocol_key() {
    let pod_with = |ports: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "i", "ports": ports}]}})
    };
    let live =
        apply(pod(), None, &pod_with(json!([{"containerPort": 80, "name": "foo"}])), &w("a", "v1", T1), false).unwrap();
    let c = conflicts(apply(
        pod(),
        Some(&live),
        &pod_with(json!([{"containerPort": 80, "protocol": "TCP", "name": "bar"}])),
        &w("b", "v1", T2),
        false,
    ));
    assert_eq!(
        c.iter().map(|c| c.field.as_str()).collect::<Vec<_>>(),
        [r#".spec.containers[name="c"].ports[containerPort=80,protocol="TCP"].name"#]
    );
}

#[test]
fn invalid_configurations() {
    let no_name =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"image": "i"}]}});
    assert_eq!(
        invalid(apply(pod(), None, &no_name, &w("m", "v1", T1), false)),
        concat!(
            "failed to create typed patch object: .spec.containers: element 0: associative list with keys has an ",
            r#"element that omits all key fields ["name"] (and doesn't have default values for any key fields)"#
        )
    );
    let dup = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                     "spec": {"containers": [{"name": "c"}, {"name": "c"}]}});
    assert_eq!(
        invalid(apply(pod(), None, &dup, &w("m", "v1", T1), false)),
        r#"failed to create typed patch object: .spec.containers: duplicate entries for key [name="c"]"#
    );
    let unknown = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "spec": {"x": 1}});
    assert_eq!(
        invalid(apply(configmap(), None, &unknown, &w("m", "v1", T1), false)),
        "failed to create typed patch object: .spec: field not declared in schema"
    );
    let mut with_mf = cm(json!({}));
    with_mf["metadata"]["managedFields"] = json!([{"manager": "x"}]);
    assert_eq!(
        invalid(apply(configmap(), None, &with_mf, &w("m", "v1", T1), false)),
        "metadata.managedFields must be nil"
    );
    assert_eq!(
        invalid(apply(deployment(), None, &cm(json!({})), &w("m", "apps/v1", T1), false)),
        "Incorrect version specified in apply patch. Specified patch version: v1, expected: apps/v1"
    );
}

#[test]
fn apply_to_an_untracked_object_credits_before_first_apply() {
    let live = cm(json!({"a": "1", "b": "2"}));
    let out = apply(configmap(), Some(&live), &cm(json!({"a": "1"})), &w("kubectl", "v1", T2), false).unwrap();
    assert_eq!(owners(&out), [("kubectl".into(), "Apply".into()), ("before-first-apply".into(), "Update".into())]);
    assert_eq!(exact(fields(&out, "before-first-apply", "Update")), r#"{"f:data":{".":{},"f:a":{},"f:b":{}}}"#);
    // Changing `b` now conflicts with it.
    let c = conflicts(apply(configmap(), Some(&out), &cm(json!({"b": "3"})), &w("kubectl", "v1", T3), false));
    assert_eq!(c[0].cause_message(), r#"conflict with "before-first-apply" using v1"#);
}

#[test]
fn entries_sort_apply_first_then_by_time() {
    let live = update(configmap(), None, cm(json!({"u": "1"})), &w("zed", "v1", T1)).unwrap();
    let live = apply(configmap(), Some(&live), &cm(json!({"b": "1"})), &w("bob", "v1", T3), false).unwrap();
    let live = apply(configmap(), Some(&live), &cm(json!({"a": "1"})), &w("alice", "v1", T2), false).unwrap();
    let mut new = live.clone();
    new["data"]["c"] = json!("1");
    let live = update(configmap(), Some(&live), new, &w("adam", "v1", T2)).unwrap();
    assert_eq!(
        owners(&live),
        [
            ("alice".into(), "Apply".into()),
            ("bob".into(), "Apply".into()),
            ("zed".into(), "Update".into()),
            ("adam".into(), "Update".into())
        ]
    );
}

#[test]
fn empty_manager_name_is_unknown() {
    let out = update(configmap(), None, cm(json!({"a": "1"})), &w("", "v1", T1)).unwrap();
    assert_eq!(owners(&out), [("unknown".into(), "Update".into())]);
}

#[test]
fn apply_ignoring_status_does_not_own_it() {
    let mut config = nginx_deployment(1, "nginx");
    config["status"] = json!({"replicas": 9});
    let opts = Options { ignored: &["status"] };
    let out = apply_with(deployment(), None, &config, &w("kubectl", "apps/v1", T1), false, &opts).unwrap();
    assert!(fields(&out, "kubectl", "Apply").get("f:status").is_none());
}

#[test]
fn custom_resources_get_object_meta_and_deduced_maps() {
    // A CRD version's schema: no apiVersion/kind/metadata, a spec that keeps unknown fields,
    // and a keyed list.
    let crd = json!({"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "status": {"type": "object", "properties": {"conditions": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
            "items": {"type": "object", "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}}}}
    }});
    let schema = Schema::standalone(&crd);
    let config = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"app": "x"}, "finalizers": ["example.com/f"]},
        "spec": {"size": 3, "tags": ["a", "b"], "nested": {"deep": true}}});
    let out = apply(schema, None, &config, &w("ctl", "example.com/v1", T1), false).unwrap();
    assert_eq!(
        exact(fields(&out, "ctl", "Apply")),
        concat!(
            r#"{"f:metadata":{"f:finalizers":{"v:\"example.com/f\"":{}},"f:labels":{"f:app":{}}},"#,
            r#""f:spec":{"f:nested":{".":{},"f:deep":{}},"f:size":{},"f:tags":{}}}"#
        )
    );
    // The status conditions merge by type.
    let mut new = out.clone();
    new["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    let out = update(schema, Some(&out), new, &w("controller", "example.com/v1", T2)).unwrap();
    assert_eq!(
        exact(fields(&out, "controller", "Update")),
        r#"{"f:status":{".":{},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:status":{},"f:type":{}}}}}"#
    );
}

fn client_side_applied(key: &str) -> Value {
    // What `kubectl apply` (client-side) leaves: the annotation, and an Update entry.
    let last = format!(
        "{{\"apiVersion\":\"v1\",\"data\":{{\"key\":\"{key}\"}},\"kind\":\"ConfigMap\",\"metadata\":{{\"annotations\":{{}},\"name\":\"cm\",\"namespace\":\"default\"}}}}\n"
    );
    let mut obj = cm(json!({"key": key}));
    obj["metadata"]["annotations"] = json!({"kubectl.kubernetes.io/last-applied-configuration": last});
    update(configmap(), None, obj, &w("kubectl-client-side-apply", "v1", T1)).unwrap()
}

#[test]
fn kubectl_server_side_apply_upgrades_from_client_side_apply() {
    let live = client_side_applied("old");
    let out = apply(configmap(), Some(&live), &cm(json!({"key": "new"})), &w("kubectl", "v1", T2), false).unwrap();
    assert_eq!(out["data"]["key"], "new");
    assert!(fields(&out, "kubectl-client-side-apply", "Update")["f:data"].get("f:key").is_none());
    // The annotation now holds the applied configuration, as Go's encoder writes it.
    assert_eq!(
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        "{\"apiVersion\":\"v1\",\"data\":{\"key\":\"new\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm\",\"namespace\":\"default\"}}\n"
    );
    // Any other manager still conflicts.
    let c = conflicts(apply(configmap(), Some(&live), &cm(json!({"key": "new"})), &w("flux", "v1", T2), false));
    assert_eq!(c[0].field, ".data.key");
}

#[test]
fn kubectl_upgrade_does_not_take_fields_changed_since_the_last_client_side_apply() {
    let live = client_side_applied("old");
    let mut edited = live.clone();
    edited["data"]["key"] = json!("edited");
    let live = update(configmap(), Some(&live), edited, &w("kubectl-edit", "v1", T2)).unwrap();
    let err = apply(configmap(), Some(&live), &cm(json!({"key": "new"})), &w("kubectl", "v1", T3), false).unwrap_err();
    assert_eq!(err.message(), r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.key"#);
}
