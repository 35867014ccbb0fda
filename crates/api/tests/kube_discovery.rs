//! kuorum's built-in resources against kube-apiserver 1.37's GA discovery (issue 34).
//!
//! `golden/kube-1.37-ga-discovery.json` describes every resource and subresource a default
//! kube-apiserver 1.37 serves at a GA version, written down from the Kubernetes sources and
//! the 1.37 Python client (`golden/README.md` says where each fact comes from). Every
//! resource kuorum serves built in must be described exactly as kube describes it (names,
//! kind, scope, verbs, short names, categories, and each subresource's kind and verbs),
//! and everything kube serves that kuorum does not yet is named in [`NOT_YET_SERVED`]: the
//! list shrinks as kinds arrive, and the test fails when it is out of date either way.

use std::collections::BTreeSet;

use kuorum_api::registry::{group_version, resources, ResourceDef};
use serde_json::Value;

const GOLDEN: &str = include_str!("golden/kube-1.37-ga-discovery.json");

/// What kube-apiserver 1.37 serves at GA that kuorum does not serve yet, as
/// `group/version resource[/subresource]` (issue 34 brings them).
const NOT_YET_SERVED: &[&str] = &[];

fn golden() -> Vec<Value> {
    serde_json::from_str(GOLDEN).expect("the golden file is JSON")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().expect("an array").iter().map(|s| s.as_str().expect("a string").to_string()).collect()
}

fn sorted(v: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

fn name(gv: &str, resource: &str) -> String {
    format!("{gv} {resource}")
}

/// How kuorum describes `def` in the golden file's terms, field by field.
fn described(def: &ResourceDef) -> Vec<(&'static str, Value)> {
    let gv = def.api_version();
    vec![
        ("singularName", def.singular.into()),
        ("kind", def.kind.into()),
        ("namespaced", def.namespaced().into()),
        ("verbs", sorted(def.verbs).into()),
        ("shortNames", def.short_names.to_vec().into()),
        ("categories", def.categories.to_vec().into()),
        ("groupVersion", gv.into()),
    ]
}

#[test]
fn every_served_builtin_is_described_as_kube_apiserver_describes_it() {
    let golden = golden();
    let mut wrong = Vec::new();
    for def in resources() {
        let gv = def.api_version();
        let Some(kube) = golden.iter().find(|g| g["groupVersion"] == gv.as_str() && g["resource"] == def.plural) else {
            wrong.push(format!(
                "{}: kuorum serves it; kube-apiserver 1.37 serves no such GA resource",
                name(&gv, def.plural)
            ));
            continue;
        };
        for (field, ours) in described(def) {
            let theirs = match field {
                "verbs" => strings(&kube[field]).into(),
                _ => kube[field].clone(),
            };
            if ours != theirs {
                wrong.push(format!("{} {field}: kuorum {ours}, kube {theirs}", name(&gv, def.plural)));
            }
        }
        let subs = kube["subresources"].as_array().expect("subresources");
        for sub in def.subresources {
            let full = name(&gv, &format!("{}/{}", def.plural, sub.name));
            let Some(k) = subs.iter().find(|s| s["subresource"] == sub.name) else {
                wrong.push(format!("{full}: kuorum serves it; kube-apiserver does not"));
                continue;
            };
            let (group, version, kind) = sub.response.unwrap_or((def.group, def.version, def.kind));
            let ours = (group_version(group, version), kind.to_string(), sorted(sub.verbs));
            let theirs = (
                group_version(k["group"].as_str().unwrap(), k["version"].as_str().unwrap()),
                k["kind"].as_str().unwrap().to_string(),
                strings(&k["verbs"]),
            );
            if ours != theirs {
                wrong.push(format!("{full}: kuorum {ours:?}, kube {theirs:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "built-in resources described unlike kube-apiserver 1.37:\n{}", wrong.join("\n"));
}

#[test]
fn what_kuorum_does_not_serve_yet_is_named() {
    let served: BTreeSet<String> = resources()
        .iter()
        .flat_map(|d| {
            let gv = d.api_version();
            std::iter::once(name(&gv, d.plural))
                .chain(d.subresources.iter().map(move |s| name(&d.api_version(), &format!("{}/{}", d.plural, s.name))))
        })
        .collect();
    let mut missing = BTreeSet::new();
    for g in golden() {
        let gv = g["groupVersion"].as_str().unwrap().to_string();
        let resource = g["resource"].as_str().unwrap();
        let whole = name(&gv, resource);
        if !served.contains(&whole) {
            missing.insert(whole);
            continue;
        }
        for s in g["subresources"].as_array().unwrap() {
            let sub = name(&gv, &format!("{resource}/{}", s["subresource"].as_str().unwrap()));
            if !served.contains(&sub) {
                missing.insert(sub);
            }
        }
    }
    let listed: BTreeSet<String> = NOT_YET_SERVED.iter().map(|s| s.to_string()).collect();
    let now_served: Vec<&String> = listed.difference(&missing).collect();
    let unlisted: Vec<&String> = missing.difference(&listed).collect();
    assert!(now_served.is_empty(), "served now or not kube's: take these out of NOT_YET_SERVED: {now_served:?}");
    assert!(unlisted.is_empty(), "kube-apiserver serves these and kuorum does not: {unlisted:?}");
}

#[test]
fn the_golden_file_covers_kube_apiserver_1_37s_ga_resources() {
    let golden = golden();
    let resources = golden.len();
    let subresources: usize = golden.iter().map(|g| g["subresources"].as_array().unwrap().len()).sum();
    // The 72 GA resources of issue 34, and their 49 subresources (golden/README.md).
    assert_eq!((resources, subresources), (72, 49));
    let names: BTreeSet<String> =
        golden.iter().map(|g| name(g["groupVersion"].as_str().unwrap(), g["resource"].as_str().unwrap())).collect();
    assert_eq!(names.len(), resources, "each resource once");
}
