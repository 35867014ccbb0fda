//! Checks the example objects of a group's folder under `tests/kinds/<folder>/` (one file
//! per plural): the valid one passes the kind's defaults, create preparation, name rule
//! and validation; the invalid one fails validation, and only at `invalidField`. Shared by
//! the networking, storage, node and scheduling folders.

use std::path::Path;

use serde_json::Value;

use crate::kinds::{builtin, Object, Strategy};
use crate::validation::{validate_name, FieldError};

/// Every fixture of `folder`, which must hold `expected` of them.
pub(crate) fn check(folder: &str, expected: usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kinds").join(folder);
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let fixture: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let plural = path.file_stem().unwrap().to_str().unwrap();
        let valid = fixture["valid"].as_object().unwrap();
        let strategy = strategy_of(valid);
        assert_eq!(strategy.def().plural, plural, "{}", path.display());
        for obj in [valid, fixture["invalid"].as_object().unwrap()] {
            assert!(obj["metadata"].get("namespace").is_none(), "{plural}: fixtures name no namespace");
            assert_eq!(strategy_of(obj).def().kind, strategy.def().kind, "{plural}");
        }

        let errs = errors(strategy, valid);
        assert!(errs.is_empty(), "{plural}: the valid object fails: {:?}", shown(&errs));
        let field = fixture["invalidField"].as_str().unwrap();
        let errs = errors(strategy, fixture["invalid"].as_object().unwrap());
        assert!(!errs.is_empty(), "{plural}: the invalid object passes");
        assert!(errs.iter().all(|e| e.field == field), "{plural}: expected errors at {field}: {:?}", shown(&errs));
        seen += 1;
    }
    assert_eq!(seen, expected, "fixtures in {}", dir.display());
}

fn strategy_of(obj: &Object) -> &'static dyn Strategy {
    let api_version = obj["apiVersion"].as_str().unwrap();
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    builtin(group, obj["kind"].as_str().unwrap()).unwrap_or_else(|| panic!("no kind {api_version} {}", obj["kind"]))
}

/// The errors a create of `obj` meets in the kind's own rules.
fn errors(strategy: &dyn Strategy, obj: &Object) -> Vec<FieldError> {
    let mut obj = obj.clone();
    strategy.defaults(&mut obj);
    strategy.prepare_for_create(&mut obj, "2024-01-01T00:00:00Z");
    let name = obj["metadata"].get("name").and_then(Value::as_str);
    let mut errs = validate_name(strategy.name_rule(), name, None);
    errs.extend(strategy.validate(&obj, None));
    errs
}

fn shown(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}
