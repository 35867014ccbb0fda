//! Every stored built-in kind has an example beside its strategy
//! (`tests/kinds/<group folder>/<plural>[.<version>].json`: a minimal valid object, an invalid one and
//! the field kube's validation names for it), and its strategy agrees with it: the valid
//! object passes validation after defaults and create's preparation, also as an update of
//! itself; defaults change nothing a second time; the invalid one is refused at exactly
//! that field; a row has one cell per column. The end-to-end test `every_kind` (crate
//! kuorum-e2e) runs the same examples through three real nodes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kuorum_api::kinds::{self, Object, Strategy};
use kuorum_api::registry::ResourceDef;
use serde_json::Value;

/// One kind's example.
struct Example {
    file: PathBuf,
    valid: Object,
    invalid: Object,
    invalid_field: String,
}

fn examples() -> Vec<Example> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/kinds");
    let mut out = Vec::new();
    let mut folders: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    folders.sort();
    for folder in folders {
        let mut files: Vec<_> = std::fs::read_dir(&folder).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files.into_iter().filter(|f| f.extension().is_some_and(|e| e == "json")) {
            let text = std::fs::read_to_string(&file).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let obj = |k: &str| v[k].as_object().cloned().unwrap_or_else(|| panic!("{}: no {k}", file.display()));
            out.push(Example {
                valid: obj("valid"),
                invalid: obj("invalid"),
                invalid_field: v["invalidField"].as_str().unwrap_or_default().to_string(),
                file,
            });
        }
    }
    out
}

fn strategy_of(e: &Example, obj: &Object) -> &'static dyn Strategy {
    let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or_default();
    let def = kuorum_api::registry::lookup_kind(s("apiVersion"), s("kind"))
        .unwrap_or_else(|| panic!("{}: {} {} is not served", e.file.display(), s("apiVersion"), s("kind")));
    // `<plural>.json`, or `<plural>.<version>.json` for a kind served at several versions.
    let stem = e.file.file_stem().unwrap().to_str().unwrap();
    let plural = stem.split('.').next().unwrap();
    assert_eq!(def.plural, plural, "{}: the file is named after the plural", e.file.display());
    kinds::of(def).unwrap()
}

/// What a create does to an object before validating it: defaults, then the kind's
/// preparation (with the uid and timestamp the REST layer sets first).
fn as_created(s: &dyn Strategy, obj: &Object) -> Object {
    let mut obj = obj.clone();
    let meta = obj.entry("metadata").or_insert_with(|| serde_json::json!({}));
    if let Some(m) = meta.as_object_mut() {
        m.insert("uid".into(), "0b5d7c47-8a3c-4d5e-9f61-2a7b3c4d5e6f".into());
        m.insert("creationTimestamp".into(), "2026-11-27T08:00:00Z".into());
        if s.def().namespaced() {
            m.insert("namespace".into(), "default".into());
        }
    }
    s.defaults(&mut obj);
    s.prepare_for_create(&mut obj, "2026-11-27T08:00:00Z");
    obj
}

#[test]
fn every_example_agrees_with_its_strategy() {
    let examples = examples();
    assert!(!examples.is_empty());
    for e in &examples {
        let s = strategy_of(e, &e.valid);
        let shown = |errs: &[kuorum_api::validation::FieldError]| {
            errs.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
        };
        let name = e.valid["metadata"]["name"].as_str().unwrap_or_default();
        assert!(s.name_rule().check(name, false).is_empty(), "{}: name {name:?}", e.file.display());

        let created = as_created(s, &e.valid);
        let errs = s.validate(&created, None);
        assert!(errs.is_empty(), "{}: the valid example is refused: {}", e.file.display(), shown(&errs));
        let errs = s.validate(&created, Some(&created));
        assert!(errs.is_empty(), "{}: the valid example is refused as an update: {}", e.file.display(), shown(&errs));
        let mut again = created.clone();
        s.defaults(&mut again);
        assert_eq!(again, created, "{}: defaults are not idempotent", e.file.display());

        let row = s.row(&Value::Object(created.clone()), 1_795_000_000);
        assert_eq!(row.cells.len(), s.columns().len(), "{}: one cell per column", e.file.display());

        assert!(std::ptr::eq(strategy_of(e, &e.invalid).def(), s.def()), "{}: same kind", e.file.display());
        let invalid = as_created(s, &e.invalid);
        let mut errs = s.validate(&invalid, None);
        if e.invalid_field == "metadata.name" {
            let name = invalid["metadata"]["name"].as_str().unwrap_or_default();
            errs.extend(
                s.name_rule()
                    .check(name, false)
                    .into_iter()
                    .map(|m| kuorum_api::validation::FieldError::invalid("metadata.name", name, m)),
            );
        }
        assert!(
            errs.iter().any(|err| err.field == e.invalid_field),
            "{}: the invalid example is not refused at {}: [{}]",
            e.file.display(),
            e.invalid_field,
            shown(&errs)
        );
    }
}

/// Every built-in kind that is stored (created and read back) has its example.
#[test]
fn every_stored_kind_has_an_example() {
    let have: BTreeMap<(String, String), PathBuf> = examples()
        .into_iter()
        .map(|e| {
            let s = |k: &str| e.valid.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
            ((s("apiVersion"), s("kind")), e.file)
        })
        .collect();
    let stored = |d: &&&ResourceDef| d.verbs.contains(&"create") && d.verbs.contains(&"get");
    let missing: Vec<String> = kuorum_api::registry::resources()
        .iter()
        .filter(stored)
        .filter(|d| !have.contains_key(&(d.api_version(), d.kind.to_string())))
        .map(|d| format!("{}/{}", d.api_version(), d.kind))
        .collect();
    assert!(missing.is_empty(), "kinds without an example in tests/kinds: {missing:?}");
}
