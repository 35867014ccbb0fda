//! CustomResourceDefinitions end to end against a 3-node cluster, with kubectl v1.37 and
//! kube-rs: a CRD applied through one node is established and its resource used through
//! another at once (apply with validation, printer columns, explain, merge patch, scale,
//! a refused invalid object, api-resources), kube-rs's dynamic API reads and writes it, a
//! deleted namespace takes its custom resources along, and deleting the CRD removes its
//! objects and then its resource on every node.

use std::time::{Duration, Instant};

use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kuorum_e2e::Cluster;
use serde_json::json;

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: CronTabSpec is the desired state of a CronTab.
            required: [cronSpec]
            properties:
              cronSpec:
                type: string
                description: The schedule, in cron format.
              image:
                type: string
              replicas:
                type: integer
                minimum: 0
                maximum: 10
                default: 1
          status:
            type: object
            properties:
              replicas:
                type: integer
"#;

const CR: &str = r#"apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-cron
  namespace: default
spec:
  cronSpec: "*/5 * * * *"
  image: my-cron-image
  replicas: 3
"#;

#[test]
fn kubectl_and_kube_rs_use_a_crd_through_every_node() {
    let Some(c) = Cluster::start_for_kubectl(3) else { return };
    let ids = c.ids();
    let (a, b, d) = (ids[0], ids[1], ids[2]);

    // --- the CRD, through node A ---------------------------------------------------------
    let crd = c.write_file("crd.yaml", CRD);
    let out = c.kubectl(a, &["apply", "-f", &crd]).unwrap().ok("apply crd");
    assert!(
        out.stdout.contains("customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created"),
        "{}",
        out.stdout
    );
    let out = c
        .kubectl(a, &["wait", "--for", "condition=established", "--timeout=30s", "crd/crontabs.stable.example.com"])
        .unwrap()
        .ok("wait established");
    assert!(out.stdout.contains("condition met"), "{}", out.stdout);

    // --- an object of it, through node B at once (client-side validation on) ---------------
    let cr = c.write_file("cr.yaml", CR);
    let out = c.kubectl(b, &["apply", "-f", &cr]).unwrap().ok("apply cr");
    assert!(out.stdout.contains("crontab.stable.example.com/my-cron created"), "{}", out.stdout);

    // Printer columns, through the third node.
    let out = c.kubectl(d, &["get", "crontabs"]).unwrap().ok("get crontabs");
    let mut lines = out.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"], "{}", out.stdout);
    let row: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(&row[..7], ["my-cron", "*/5", "*", "*", "*", "*", "3"], "{}", out.stdout);
    let out = c.kubectl(a, &["get", "ct", "my-cron", "-o", "jsonpath={.spec.image}"]).unwrap().ok("get by short name");
    assert_eq!(out.stdout, "my-cron-image");

    // kubectl explain, from the CRD's schema.
    let out = c.kubectl(b, &["explain", "crontab.spec"]).unwrap().ok("explain crontab.spec");
    for want in [
        "GROUP:      stable.example.com",
        "KIND:       CronTab",
        "VERSION:    v1",
        "FIELD: spec <Object>",
        "CronTabSpec is the desired state of a CronTab.",
        "cronSpec\t<string> -required-",
        "The schedule, in cron format.",
    ] {
        assert!(out.stdout.contains(want), "want {want:?} in:\n{}", out.stdout);
    }

    // A merge patch through D, read back through A.
    c.kubectl(d, &["patch", "crontab", "my-cron", "--type=merge", "-p", r#"{"spec":{"image":"patched"}}"#])
        .unwrap()
        .ok("patch --type=merge");
    let got = c.get_json(a, &["crontab", "my-cron"]);
    assert_eq!(got["spec"]["image"], "patched", "{got}");
    assert_eq!(got["metadata"]["generation"], 2, "a spec change bumps generation: {got}");
    // kubectl's default patch type (strategic) is refused for a custom resource.
    let out = c.kubectl(d, &["patch", "crontab", "my-cron", "-p", r#"{"spec":{"image":"x"}}"#]).unwrap();
    assert!(
        !out.success()
            && out.stderr.contains(
                "application/strategic-merge-patch+json is not supported by stable.example.com/v1, Kind=CronTab"
            )
            && out
                .stderr
                .contains("accepted media types include: application/json-patch+json, application/merge-patch+json"),
        "{out:?}"
    );

    // The scale subresource.
    let out = c.kubectl(a, &["scale", "crontab", "my-cron", "--replicas=5"]).unwrap().ok("scale");
    assert!(out.stdout.contains("crontab.stable.example.com/my-cron scaled"), "{}", out.stdout);
    let got = c.get_json(b, &["crontab", "my-cron"]);
    assert_eq!(got["spec"]["replicas"], 5, "{got}");

    // An invalid object is refused with the schema's message; so is an unknown field.
    let bad = c.write_file("bad.yaml", &CR.replace("my-cron", "bad-cron").replace("replicas: 3", "replicas: 30"));
    let out = c.kubectl(b, &["apply", "-f", &bad]).unwrap();
    assert!(!out.success(), "{out:?}");
    assert!(
        out.stderr.contains(
            "The CronTab \"bad-cron\" is invalid: spec.replicas: Invalid value: 30: spec.replicas in body should be less \
             than or equal to 10"
        ),
        "{}",
        out.stderr
    );
    let unknown = c.write_file("unknown.yaml", &CR.replace("my-cron", "odd-cron").replace("  image:", "  imagee:"));
    let out = c.kubectl(d, &["apply", "-f", &unknown]).unwrap();
    assert!(!out.success() && out.stderr.contains("unknown field \"spec.imagee\""), "{out:?}");

    // Discovery as kubectl shows it.
    let out = c.kubectl(b, &["api-resources", "--api-group=stable.example.com"]).unwrap().ok("api-resources");
    let line = out.stdout.lines().find(|l| l.starts_with("crontabs")).unwrap_or_else(|| panic!("{}", out.stdout));
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols, ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"], "{}", out.stdout);

    // --- kube-rs's dynamic API ------------------------------------------------------------
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = Client::try_from(kube::Config::new(c.url(d).parse().unwrap())).unwrap();
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("stable.example.com", "v1", "CronTab"));
        assert_eq!(ar.plural, "crontabs");
        let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
        let obj = DynamicObject::new("from-kube-rs", &ar).data(json!({"spec": {"cronSpec": "0 * * * *"}}));
        let made = api.create(&PostParams::default(), &obj).await.unwrap();
        assert_eq!(made.data["spec"]["replicas"], 1, "the schema's default");
        let applied = api
            .patch(
                "from-kube-rs",
                &PatchParams::apply("kube-rs"),
                &Patch::Apply(json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                                     "metadata": {"name": "from-kube-rs"}, "spec": {"cronSpec": "0 * * * *", "image": "kr"}})),
            )
            .await
            .unwrap();
        assert_eq!(applied.data["spec"]["image"], "kr");
        let names: Vec<String> =
            api.list(&Default::default()).await.unwrap().items.into_iter().filter_map(|o| o.metadata.name).collect();
        assert_eq!(names, ["from-kube-rs", "my-cron"]);
    });

    // --- a namespace being deleted takes its custom resources with it ------------------------
    c.kubectl(a, &["create", "namespace", "team"]).unwrap().ok("create namespace");
    let team = c.write_file("team.yaml", &CR.replace("namespace: default", "namespace: team"));
    c.kubectl(b, &["apply", "-f", &team]).unwrap().ok("apply cr in team");
    c.kubectl(d, &["delete", "namespace", "team", "--timeout=60s"]).unwrap().ok("delete namespace");
    let r = c.http().get(&format!("{}/apis/stable.example.com/v1/namespaces/team/crontabs", c.url(a))).unwrap();
    assert_eq!(r.body["items"], json!([]), "{}", r.text);

    // --- deleting the CRD removes its objects, then its resource, on every node -------------
    let out =
        c.kubectl(b, &["delete", "crd", "crontabs.stable.example.com", "--timeout=60s"]).unwrap().ok("delete crd");
    assert!(
        out.stdout.contains("customresourcedefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" deleted"),
        "{}",
        out.stdout
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    for &id in &ids {
        loop {
            let r =
                c.http().get(&format!("{}/apis/stable.example.com/v1/namespaces/default/crontabs", c.url(id))).unwrap();
            if r.status == 404 {
                break;
            }
            assert!(Instant::now() < deadline, "node {id} still serves crontabs: {} {}", r.status, r.text);
            std::thread::sleep(Duration::from_millis(100));
        }
        let r = c
            .http()
            .get(&format!(
                "{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com",
                c.url(id)
            ))
            .unwrap();
        assert_eq!(r.status, 404, "node {id}: {}", r.text);
        let r = c.http().get(&format!("{}/apis/stable.example.com", c.url(id))).unwrap();
        assert_eq!(r.status, 404, "node {id}: {}", r.text);
    }
    // kubectl may still map the name from its discovery cache; the server answers 404 then.
    let out = c.kubectl(a, &["get", "crontabs"]).unwrap();
    assert!(
        !out.success()
            && (out.stderr.contains("the server doesn't have a resource type \"crontabs\"")
                || out.stderr.contains("the server could not find the requested resource")),
        "{out:?}"
    );

    // A CRD of the same name starts empty: the old objects are gone, not hidden.
    c.kubectl(a, &["apply", "-f", &crd]).unwrap().ok("apply crd again");
    c.kubectl(a, &["wait", "--for", "condition=established", "--timeout=30s", "crd/crontabs.stable.example.com"])
        .unwrap()
        .ok("wait established again");
    let list = c.get_json(d, &["crontabs", "-A"]);
    assert_eq!(list["items"], json!([]), "{list}");
}
