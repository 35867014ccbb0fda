//! Admission webhooks and CEL policies on a real three-node cluster:
//!
//! - A webhook server the test starts (HTTPS with a self-signed certificate given as
//!   `caBundle`, speaking `AdmissionReview` v1 as real servers do) mutates and refuses
//!   config maps written through every node: a refused create leaves nothing on any node;
//!   `failurePolicy: Ignore` lets writes through while the server is down and `Fail`
//!   refuses them with kube's message; a webhook that hangs past `timeoutSeconds` is
//!   handled per its policy; `matchConditions` skip it.
//! - kubectl against the CEL features: a CRD whose `x-kubernetes-validations` include a
//!   transition rule refuses the right update; a ValidatingAdmissionPolicy with a param
//!   refuses a Deployment with too many replicas; a MutatingAdmissionPolicy adds a label.
//! - A CRD with two versions and a conversion webhook (the test's server, speaking
//!   `ConversionReview` v1) serves each version to kubectl through every node and to a
//!   `kubectl get -w`, each object in the version asked for.

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use base64::Engine;
use kuorum_e2e::https_server::{HttpsServer, Request};
use kuorum_e2e::{eventually, Cluster, Http, StreamChild};
use serde_json::{json, Value};

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/// What the test's webhook server answers a review sent to `path`.
fn answer(request: &Request) -> (u16, Value) {
    let review = &request.body["request"];
    let mut response = json!({"uid": review["uid"], "allowed": true});
    match request.path.as_str() {
        "/mutate" => {
            let patch = match review["object"]["metadata"].get("labels") {
                Some(_) => json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]),
                None => json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]),
            };
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(patch.to_string()));
        }
        "/validate" if review["object"]["data"].get("forbidden").is_some() => {
            response["allowed"] = json!(false);
            response["status"] = json!({"code": 403, "message": "no forbidden keys"});
        }
        "/hang" => thread::sleep(Duration::from_secs(5)),
        _ => {}
    }
    (200, json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
}

fn configuration(kind: &str, name: &str, url: &str, ca: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": format!("{name}.kuorum.test"),
        "clientConfig": {"url": url, "caBundle": ca},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 1,
    });
    for (k, v) in extra.as_object().unwrap() {
        hook[k] = v.clone();
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name}, "webhooks": [hook]})
}

fn cm(name: &str, data: Value) -> Value {
    json!({"metadata": {"name": name}, "data": data})
}

/// Waits (up to 10 s) until every node has applied `uri` as present (or absent).
fn on_every_node(c: &Cluster, http: &Http, uri: &str, present: bool) {
    for url in c.urls() {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = http.get(&format!("{url}{uri}")).unwrap().status;
            if (status == 200) == present {
                break;
            }
            assert!(Instant::now() < deadline, "{url}{uri}: {status}");
            thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Deletes `uri` and waits until every node has applied it.
fn remove(c: &Cluster, http: &Http, uri: &str) {
    let r = http.delete(&format!("{}{uri}", c.url(1))).unwrap();
    assert_eq!(r.status, 200, "{}", r.text);
    on_every_node(c, http, uri, false);
}

#[test]
fn webhooks_mutate_and_refuse_through_every_node() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };
    let http = Http::with_timeout(Duration::from_secs(20));
    let server = HttpsServer::start(&["127.0.0.1"], answer);
    let ca = server.ca_bundle.clone();
    let url = |path: &str| server.url(path);
    let post = |id: u64, uri: &str, body: &Value| http.post(&format!("{}{uri}", c.url(id)), body).unwrap();

    let r = post(1, MUTATING, &configuration("MutatingWebhookConfiguration", "label", &url("/mutate"), &ca, json!({})));
    assert_eq!(r.status, 201, "{}", r.text);
    let guard = configuration("ValidatingWebhookConfiguration", "guard", &url("/validate"), &ca, json!({}));
    assert_eq!(post(1, VALIDATING, &guard).status, 201);
    on_every_node(&c, &http, &format!("{VALIDATING}/guard"), true);
    on_every_node(&c, &http, &format!("{MUTATING}/label"), true);

    for id in c.ids() {
        // Mutated through every node.
        let r = post(id, CONFIGMAPS, &cm(&format!("ok-{id}"), json!({"k": "v"})));
        assert_eq!(r.status, 201, "node {id}: {}", r.text);
        assert_eq!(r.body["metadata"]["labels"], json!({"mutated": "yes"}), "node {id}");
        // Refused through every node with kube's words, and nowhere stored.
        let name = format!("refused-{id}");
        let r = post(id, CONFIGMAPS, &cm(&name, json!({"forbidden": "x"})));
        assert_eq!(r.status, 403, "node {id}: {}", r.text);
        assert_eq!(r.body["message"], r#"admission webhook "guard.kuorum.test" denied the request: no forbidden keys"#);
        for url in c.urls() {
            assert_eq!(http.get(&format!("{url}{CONFIGMAPS}/{name}")).unwrap().status, 404);
        }
    }

    // A server that is down: Fail refuses (kube's 500), Ignore lets the write through.
    let gone = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("https://127.0.0.1:{}/validate", l.local_addr().unwrap().port())
    };
    let down = configuration("ValidatingWebhookConfiguration", "down", &gone, &ca, json!({}));
    assert_eq!(post(2, VALIDATING, &down).status, 201);
    on_every_node(&c, &http, &format!("{VALIDATING}/down"), true);
    for id in c.ids() {
        let r = post(id, CONFIGMAPS, &cm(&format!("down-{id}"), json!({})));
        assert_eq!(r.status, 500, "node {id}: {}", r.text);
        let m = r.body["message"].as_str().unwrap_or("");
        assert!(m.starts_with(r#"Internal error occurred: failed calling webhook "down.kuorum.test": failed to call webhook: Post "https://127.0.0.1:"#), "{m}");
    }
    remove(&c, &http, &format!("{VALIDATING}/down"));
    let ignored =
        configuration("ValidatingWebhookConfiguration", "ignored", &gone, &ca, json!({"failurePolicy": "Ignore"}));
    assert_eq!(post(3, VALIDATING, &ignored).status, 201);
    on_every_node(&c, &http, &format!("{VALIDATING}/ignored"), true);
    for id in c.ids() {
        assert_eq!(post(id, CONFIGMAPS, &cm(&format!("ignored-{id}"), json!({}))).status, 201);
    }
    remove(&c, &http, &format!("{VALIDATING}/ignored"));

    // A webhook that hangs past its timeout: Ignore goes on after the timeout, Fail refuses.
    let slow =
        configuration("ValidatingWebhookConfiguration", "slow", &url("/hang"), &ca, json!({"failurePolicy": "Ignore"}));
    assert_eq!(post(1, VALIDATING, &slow).status, 201);
    on_every_node(&c, &http, &format!("{VALIDATING}/slow"), true);
    let started = Instant::now();
    assert_eq!(post(2, CONFIGMAPS, &cm("slow-ignored", json!({}))).status, 201);
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    remove(&c, &http, &format!("{VALIDATING}/slow"));
    let slow_fail = configuration("ValidatingWebhookConfiguration", "slow-fail", &url("/hang"), &ca, json!({}));
    assert_eq!(post(1, VALIDATING, &slow_fail).status, 201);
    on_every_node(&c, &http, &format!("{VALIDATING}/slow-fail"), true);
    let r = post(3, CONFIGMAPS, &cm("slow-refused", json!({})));
    assert_eq!(r.status, 500, "{}", r.text);
    remove(&c, &http, &format!("{VALIDATING}/slow-fail"));

    // matchConditions and selectors skip a webhook that is down.
    let skipping = configuration(
        "ValidatingWebhookConfiguration",
        "skipping",
        &gone,
        &ca,
        json!({"matchConditions": [{"name": "checked", "expression": "object.metadata.name.startsWith('checked-')"}],
               "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}}),
    );
    assert_eq!(post(1, VALIDATING, &skipping).status, 201);
    on_every_node(&c, &http, &format!("{VALIDATING}/skipping"), true);
    for id in c.ids() {
        assert_eq!(post(id, CONFIGMAPS, &cm(&format!("plain-{id}"), json!({}))).status, 201);
        let mut labelled = cm(&format!("checked-{id}"), json!({}));
        labelled["metadata"]["labels"] = json!({"skip": "yes"});
        assert_eq!(post(id, CONFIGMAPS, &labelled).status, 201, "the object selector skips it");
        assert_eq!(post(id, CONFIGMAPS, &cm(&format!("checked-x{id}"), json!({}))).status, 500, "called, and down");
    }
}

#[test]
fn cel_rules_and_policies_through_kubectl() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };

    // A CRD with a transition rule: replicas may not go down.
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.rules.example.com}
spec:
  group: rules.example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: "self.replicas >= oldSelf.replicas"
              message: "replicas may not go down"
            properties:
              replicas: {type: integer, maximum: 100}
"#;
    let path = c.write_file("crd.yaml", crd);
    c.kubectl(1, &["apply", "-f", &path]).unwrap().ok("apply crd");
    c.kubectl(2, &["wait", "--for=condition=established", "crd/widgets.rules.example.com", "--timeout=30s"])
        .unwrap()
        .ok("wait crd");
    let widget = |replicas: i64| {
        format!(
            "apiVersion: rules.example.com/v1\nkind: Widget\nmetadata: {{name: w}}\nspec: {{replicas: {replicas}}}\n"
        )
    };
    let w = c.write_file("w3.yaml", &widget(3));
    c.kubectl(2, &["apply", "-f", &w]).unwrap().ok("apply widget");
    let w = c.write_file("w5.yaml", &widget(5));
    c.kubectl(3, &["apply", "-f", &w]).unwrap().ok("scale up");
    let w = c.write_file("w1.yaml", &widget(1));
    let out = c.kubectl(1, &["apply", "-f", &w]).unwrap();
    assert!(!out.success(), "{}", out.stdout);
    assert!(
        out.stderr.contains(r#"The Widget "w" is invalid: spec: Invalid value: replicas may not go down"#)
            || out.stderr.contains("spec: Invalid value: replicas may not go down"),
        "{}",
        out.stderr
    );

    // A ValidatingAdmissionPolicy with a param.
    let policy = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: max-replicas}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [deployments]
  validations:
  - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
    messageExpression: "'replicas must be at most ' + params.data.maxReplicas"
---
apiVersion: v1
kind: ConfigMap
metadata: {name: limits, namespace: default}
data: {maxReplicas: "5"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: max-replicas}
spec:
  policyName: max-replicas
  validationActions: [Deny]
  paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}
"#;
    let path = c.write_file("policy.yaml", policy);
    c.kubectl(1, &["apply", "-f", &path]).unwrap().ok("apply policy");
    thread::sleep(Duration::from_millis(500));
    c.kubectl(2, &["create", "deployment", "small", "--image=nginx", "--replicas=3"]).unwrap().ok("small");
    let out = c.kubectl(3, &["create", "deployment", "big", "--image=nginx", "--replicas=50"]).unwrap();
    assert!(!out.success(), "{}", out.stdout);
    assert!(
        out.stderr.contains("ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas' denied request: replicas must be at most 5"),
        "{}",
        out.stderr
    );
    // The leader type checks it: no warnings, at its generation. A policy with a field
    // Deployments do not have gets a warning in its status.
    let typo = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: typo}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [deployments]
  validations:
  - expression: "object.spec.replica <= 5"
"#;
    let path = c.write_file("typo.yaml", typo);
    c.kubectl(1, &["apply", "-f", &path]).unwrap().ok("apply typo policy");
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let checked = c.get_json(2, &["validatingadmissionpolicy", "max-replicas"]);
        let typo = c.get_json(3, &["validatingadmissionpolicy", "typo"]);
        let warnings = &typo["status"]["typeChecking"]["expressionWarnings"];
        if checked["status"]["observedGeneration"] == 1 && warnings.is_array() {
            assert_eq!(checked["status"]["typeChecking"], json!({}), "{checked}");
            assert_eq!(
                warnings,
                &json!([{"fieldRef": "spec.validations[0].expression",
                         "warning": "apps/v1, Kind=Deployment: undefined field 'replica'\n"}])
            );
            break;
        }
        assert!(Instant::now() < deadline, "{checked}\n{typo}");
        thread::sleep(Duration::from_millis(200));
    }

    // A MutatingAdmissionPolicy adds a label.
    let mutating = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: add-label}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [configmaps]
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'environment': 'test'}}}"
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-label}
spec: {policyName: add-label}
"#;
    let path = c.write_file("mutating.yaml", mutating);
    c.kubectl(1, &["apply", "-f", &path]).unwrap().ok("apply mutating policy");
    thread::sleep(Duration::from_millis(500));
    c.kubectl(2, &["create", "configmap", "labelled", "--from-literal=a=b"]).unwrap().ok("create cm");
    let cm = c.get_json(3, &["configmap", "labelled"]);
    assert_eq!(cm["metadata"]["labels"]["environment"], "test", "{cm}");
}

/// The test's conversion server: v1 says `spec.cronSpec`, v2 says `spec.schedule`.
fn convert(request: &Request) -> (u16, Value) {
    let review = &request.body["request"];
    let desired = review["desiredAPIVersion"].as_str().unwrap_or("");
    let (from, to) = if desired.ends_with("/v2") { ("cronSpec", "schedule") } else { ("schedule", "cronSpec") };
    let converted: Vec<Value> = review["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let mut o = o.clone();
            if let Some(v) = o["spec"].as_object_mut().and_then(|s| s.remove(from)) {
                o["spec"][to] = v;
            }
            o["apiVersion"] = json!(desired);
            o
        })
        .collect();
    let response = json!({"uid": review["uid"], "result": {"status": "Success"}, "convertedObjects": converted});
    (200, json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}))
}

#[test]
fn a_conversion_webhook_serves_both_versions_to_kubectl_and_to_a_watch() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };
    let server = HttpsServer::start(&["127.0.0.1"], convert);
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
            "properties": {field: {"type": "string"}}}}}})
    };
    let column = |field: &str| json!([{"name": "Schedule", "type": "string", "jsonPath": format!(".spec.{field}")}]);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced", "names": {"plural": "crontabs", "kind": "CronTab"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("cronSpec"),
                 "additionalPrinterColumns": column("cronSpec")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("schedule"),
                 "additionalPrinterColumns": column("schedule")}],
            "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                "clientConfig": {"url": server.url("/convert"), "caBundle": server.ca_bundle}}}}
    });
    let path = c.write_file("crontab-crd.json", &crd.to_string());
    c.kubectl(1, &["apply", "-f", &path]).unwrap().ok("apply crd");
    for id in c.ids() {
        c.kubectl(id, &["wait", "--for=condition=established", "crd/crontabs.stable.example.com", "--timeout=30s"])
            .unwrap()
            .ok("wait crd");
    }

    // A watch through v2 on node 3, from before the object exists.
    let cmd = c
        .kubectl_command(
            3,
            "60s",
            &["get", "crontabs.v2.stable.example.com", "-w", "-o", "json", "--output-watch-events"],
        )
        .unwrap();
    let mut watch =
        StreamChild::spawn("kubectl get -w", cmd, &c.root().join("kubectl-conversion-watch.stderr")).unwrap();
    thread::sleep(Duration::from_secs(1));

    // Written at v1 through node 1.
    let v1 = "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: nightly}\nspec: {cronSpec: \"0 3 * * *\"}\n";
    let path = c.write_file("nightly.yaml", v1);
    c.kubectl(1, &["apply", "-f", &path]).unwrap().ok("apply v1 object");

    // Read at each version through each node.
    for id in c.ids() {
        let wait = eventually(Duration::from_secs(10), "the object on every node", || {
            let out = c.kubectl(id, &["get", "crontabs.v2.stable.example.com", "nightly", "-o", "json"])?;
            Ok(out.success().then(|| out.json()).transpose()?)
        })
        .unwrap();
        assert_eq!(wait["apiVersion"], "stable.example.com/v2", "node {id}");
        assert_eq!(wait["spec"], json!({"schedule": "0 3 * * *"}), "node {id}");
        let v1 = c.kubectl(id, &["get", "crontabs.v1.stable.example.com", "nightly", "-o", "json"]).unwrap();
        assert_eq!(v1.json().unwrap()["spec"], json!({"cronSpec": "0 3 * * *"}), "node {id}");
    }
    // kubectl's table at v2 prints v2's column.
    let out = c.kubectl(2, &["get", "crontabs.v2.stable.example.com"]).unwrap().ok("table");
    assert!(out.stdout.contains("SCHEDULE") && out.stdout.contains("0 3 * * *"), "{}", out.stdout);

    // Changed at v2 through node 2: stored at v1.
    let v2 = "apiVersion: stable.example.com/v2\nkind: CronTab\nmetadata: {name: nightly}\nspec: {schedule: \"0 4 * * *\"}\n";
    let path = c.write_file("nightly-v2.yaml", v2);
    c.kubectl(2, &["apply", "-f", &path]).unwrap().ok("apply v2 object");
    let stored =
        c.http().get(&format!("{}/apis/stable.example.com/v1/namespaces/default/crontabs/nightly", c.url(1))).unwrap();
    assert_eq!(stored.body["spec"], json!({"cronSpec": "0 4 * * *"}), "{}", stored.text);

    // The watch saw both at v2.
    let events = watch
        .wait_for(Duration::from_secs(20), "the added and modified events at v2", |lines| {
            let text = lines.join("\n");
            let events: Vec<Value> =
                serde_json::Deserializer::from_str(&text).into_iter::<Value>().filter_map(Result::ok).collect();
            (events.len() >= 2).then_some(events)
        })
        .unwrap();
    assert_eq!(events[0]["type"], "ADDED");
    assert_eq!(events[0]["object"]["apiVersion"], "stable.example.com/v2");
    assert_eq!(events[0]["object"]["spec"], json!({"schedule": "0 3 * * *"}));
    assert_eq!(events[1]["type"], "MODIFIED");
    assert_eq!(events[1]["object"]["spec"], json!({"schedule": "0 4 * * *"}));
    watch.kill();
}
