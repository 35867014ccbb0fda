//! flowcontrol.apiserver.k8s.io

use crate::kinds::Strategy;

pub mod flowschema;
pub mod prioritylevelconfiguration;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] =
    &[&flowschema::FlowSchema, &prioritylevelconfiguration::PriorityLevelConfiguration];

#[cfg(test)]
mod tests {
    use serde_json::Value;

    /// Each kind's example in `tests/kinds/flowcontrol/<plural>.json`: the valid object passes
    /// validation after defaults and create preparation, the invalid one fails at
    /// exactly `invalidField`.
    #[test]
    fn fixtures_pass_and_fail_validation() {
        for kind in super::KINDS {
            let def = kind.def();
            let path = format!("{}/tests/kinds/flowcontrol/{}.json", env!("CARGO_MANIFEST_DIR"), def.plural);
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let fixture: Value = serde_json::from_str(&text).unwrap();
            let prepared = |key: &str| {
                let mut obj = fixture[key].as_object().unwrap().clone();
                assert_eq!(obj["kind"], def.kind, "{path}");
                assert_eq!(obj["apiVersion"], def.api_version().as_str(), "{path}");
                kind.defaults(&mut obj);
                kind.prepare_for_create(&mut obj, "2024-01-01T00:00:00Z");
                let name = obj["metadata"]["name"].as_str().unwrap().to_string();
                assert!(kind.name_rule().check(&name, false).is_empty(), "{path}: {key} name");
                kind.validate(&obj, None)
            };
            let errs = prepared("valid");
            assert!(errs.is_empty(), "{path}: {:?}", errs.iter().map(ToString::to_string).collect::<Vec<_>>());
            let errs = prepared("invalid");
            let field = fixture["invalidField"].as_str().unwrap();
            assert!(
                errs.iter().any(|e| e.field == field),
                "{path}: no error at {field}: {:?}",
                errs.iter().map(ToString::to_string).collect::<Vec<_>>()
            );
        }
    }
}
