//! The client libraries' write verbs against a 3-node cluster: the Python `kubernetes`
//! client (tests/python/patch_check.py) and kube-rs typed APIs — create, replace, each
//! patch type, the scale subresource and server-side apply with a conflict and `force`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kuorum_e2e::{run_bounded, venv_python, Cluster};
use serde_json::json;

#[test]
fn python_client_patches_and_applies() {
    let Some(mut c) = Cluster::start_or_skip(3) else { return };
    let Some(python) = venv_python() else {
        eprintln!("SKIP: no venv python (run scripts/setup.sh)");
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/python/patch_check.py").to_string();
    let follower = c.followers().unwrap()[0];
    let out = run_bounded(
        &python,
        &[script, c.url(follower), "py-patch".into()],
        c.root(),
        std::time::Duration::from_secs(120),
    )
    .unwrap();
    assert!(out.success(), "patch_check.py failed:\n{}\n{}", out.stdout, out.stderr);
    let done = out.stdout.lines().last().unwrap_or("");
    assert_eq!(done, "done 14", "every check ran:\n{}", out.stdout);
}

#[test]
fn kube_rs_patches_and_applies() {
    let Some(c) = Cluster::start_or_skip(3) else { return };
    let ids = c.ids();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client_for = |id: u64| {
            let cfg = kube::Config::new(c.url(id).parse().unwrap());
            Client::try_from(cfg).unwrap()
        };
        let (a, b) = (client_for(ids[0]), client_for(ids[1]));
        let ns = "kube-rs-patch";
        let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(a.clone());
        nss.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap())
            .await
            .unwrap();

        let cms_a: Api<ConfigMap> = Api::namespaced(a.clone(), ns);
        let cms_b: Api<ConfigMap> = Api::namespaced(b.clone(), ns);
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "k"}, "data": {"a": "1"}})).unwrap();
        cms_a.create(&PostParams::default(), &cm).await.unwrap();

        let pp = PatchParams::default();
        let got = cms_b.patch("k", &pp, &Patch::Merge(json!({"data": {"b": "2"}}))).await.unwrap();
        assert_eq!(got.data.unwrap(), BTreeMap::from([("a".into(), "1".into()), ("b".into(), "2".into())]));
        let got = cms_a.patch("k", &pp, &Patch::Strategic(json!({"data": {"a": null}}))).await.unwrap();
        assert_eq!(got.data.unwrap(), BTreeMap::from([("b".into(), "2".into())]));
        let ops: json_patch::Patch =
            serde_json::from_value(json!([{"op": "replace", "path": "/data/b", "value": "3"}])).unwrap();
        let got = cms_b.patch("k", &pp, &Patch::Json::<()>(ops)).await.unwrap();
        assert_eq!(got.data.unwrap()["b"], "3");

        // Server-side apply: create, a conflict between two managers, then force.
        let apply = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"k": v}});
        let got = cms_a.patch("ssa", &PatchParams::apply("one"), &Patch::Apply(apply("1"))).await.unwrap();
        assert_eq!(got.data.unwrap()["k"], "1");
        let err = cms_b.patch("ssa", &PatchParams::apply("two"), &Patch::Apply(apply("2"))).await.unwrap_err();
        match err {
            kube::Error::Api(s) => {
                assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"), "{s:?}");
                assert!(s.message.contains("conflict with \"one\""), "{}", s.message);
            }
            other => panic!("expected a 409 Status, got {other:?}"),
        }
        let got = cms_b.patch("ssa", &PatchParams::apply("two").force(), &Patch::Apply(apply("2"))).await.unwrap();
        assert_eq!(got.data.unwrap()["k"], "2");
        let managers: Vec<String> =
            got.metadata.managed_fields.unwrap().into_iter().filter_map(|m| m.manager).collect();
        assert!(managers.contains(&"two".to_string()) && !managers.contains(&"one".to_string()), "{managers:?}");

        // The scale subresource.
        let deps: Api<Deployment> = Api::namespaced(a.clone(), ns);
        let d: Deployment = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
        .unwrap();
        deps.create(&PostParams::default(), &d).await.unwrap();
        let deps_b: Api<Deployment> = Api::namespaced(b.clone(), ns);
        let s = deps_b.patch_scale("web", &pp, &Patch::Merge(json!({"spec": {"replicas": 5}}))).await.unwrap();
        assert_eq!(s.spec.unwrap().replicas, Some(5));
        assert_eq!(deps.get("web").await.unwrap().spec.replicas, Some(5));
        assert_eq!(deps.get_scale("web").await.unwrap().status.unwrap().selector.as_deref(), Some("app=web"));
    });
}
