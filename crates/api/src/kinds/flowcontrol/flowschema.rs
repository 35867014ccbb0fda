//! FlowSchema (flowcontrol.apiserver.k8s.io/v1): cluster-scoped, tracks generation,
//! status subresource; `matchingPrecedence` defaults to 1000 and stays in 1..=10000
//! (1 only for `exempt`); it must name a priority level; each rule needs subjects and
//! resource or non-resource rules; printed with its priority level and precedence.

use serde_json::{json, Value};

use crate::kinds::common::{at, str_at as field_str};
use crate::kinds::printing::*;
use crate::kinds::{child, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{is_dns1123_label, is_dns1123_subdomain, BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "flowcontrol.apiserver.k8s.io",
    version: "v1",
    kind: "FlowSchema",
    plural: "flowschemas",
    singular: "flowschema",
    scope: Scope::Cluster,
    verbs: ALL_VERBS,
    short_names: &[],
    categories: &[],
    subresources: &[STATUS],
    list_kind: "FlowSchemaList",
    tracks_generation: true,
};

/// kube's `FlowSchemaMaxMatchingPrecedence`.
const MAX_MATCHING_PRECEDENCE: i64 = 10000;

const VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"];

const PRIORITY_LEVEL_DOC: &str = "`name` is the name of the priority level configuration being referenced Required.";
const MATCHING_PRECEDENCE_DOC: &str = "`matchingPrecedence` is used to choose among the FlowSchemas that match a given request. The chosen FlowSchema is among those with the numerically lowest (which we take to be logically highest) MatchingPrecedence.  Each MatchingPrecedence value must be ranged in [1,10000]. Note that if the precedence is not specified, it will be set to 1000 as default.";
const DISTINGUISHER_DOC: &str = "`distinguisherMethod` defines how to compute the flow distinguisher for requests that match this schema. `nil` specifies that the distinguisher is disabled and thus will always be the empty string.";

const FLOW_SCHEMA_COLUMNS: &[Column] = &[
    NAME,
    col("PriorityLevel", "string", PRIORITY_LEVEL_DOC),
    col("MatchingPrecedence", "string", MATCHING_PRECEDENCE_DOC),
    col("DistinguisherMethod", "string", DISTINGUISHER_DOC),
    AGE,
    col("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
];

pub struct FlowSchema;

impl Strategy for FlowSchema {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// An absent (or zero) precedence is 1000.
    fn defaults(&self, obj: &mut Object) {
        if let Some(spec) = child(obj, "spec") {
            if spec.get("matchingPrecedence").and_then(Value::as_i64).unwrap_or(0) == 0 {
                spec.insert("matchingPrecedence".into(), json!(1000));
            }
        }
    }

    /// The status is the flow-control controller's.
    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({}));
    }

    fn validate(&self, obj: &Object, _old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let precedence = at(obj, "spec.matchingPrecedence").and_then(Value::as_i64).unwrap_or(0);
        let bad = |detail: &str| {
            FieldError::invalid_value("spec.matchingPrecedence", BadValue::Raw(precedence.to_string()), detail)
        };
        if precedence <= 0 {
            errs.push(bad("must be a positive value"));
        }
        if precedence > MAX_MATCHING_PRECEDENCE {
            errs.push(bad(&format!("must not be greater than {MAX_MATCHING_PRECEDENCE}")));
        }
        if precedence == 1 && field_str(obj, "metadata.name") != "exempt" {
            errs.push(bad("only the schema named 'exempt' may have matchingPrecedence 1"));
        }
        if let Some(method) = at(obj, "spec.distinguisherMethod") {
            let ty = method.get("type").and_then(Value::as_str).unwrap_or("");
            if !["ByNamespace", "ByUser"].contains(&ty) {
                errs.push(FieldError::not_supported("spec.distinguisherMethod.type", ty, &["ByNamespace", "ByUser"]));
            }
        }
        let level = field_str(obj, "spec.priorityLevelConfiguration.name");
        if level.is_empty() {
            errs.push(FieldError::required("spec.priorityLevelConfiguration.name", "must reference a priority level"));
        }
        for msg in is_dns1123_subdomain(level).into_iter().filter(|_| !level.is_empty()) {
            errs.push(FieldError::invalid("spec.priorityLevelConfiguration.name", level, msg));
        }
        let rules = at(obj, "spec.rules").and_then(Value::as_array);
        for (i, rule) in rules.into_iter().flatten().enumerate() {
            validate_rule(rule, &format!("spec.rules[{i}]"), &mut errs);
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        FLOW_SCHEMA_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let method = non_empty(str_at(obj, "/spec/distinguisherMethod/type")).unwrap_or("<none>");
        let dangling = arr_at(obj, "/status/conditions")
            .iter()
            .find(|c| str_at(c, "/type") == "Dangling")
            .map_or("?", |c| str_at(c, "/status"));
        Row::plain(vec![
            name(obj).into(),
            str_at(obj, "/spec/priorityLevelConfiguration/name").into(),
            int_at(obj, "/spec/matchingPrecedence").into(),
            method.into(),
            age(obj, now).into(),
            dangling.into(),
        ])
    }
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key).and_then(Value::as_array).into_iter().flatten().map(|s| s.as_str().unwrap_or("").to_string()).collect()
}

fn go_strings(list: &[String]) -> BadValue {
    BadValue::Raw(format!("[]string{{{}}}", list.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")))
}

/// A rule's subjects and its resource and non-resource rules.
fn validate_rule(rule: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let subjects = rule.get("subjects").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if subjects.is_empty() {
        errs.push(FieldError::required(&format!("{path}.subjects"), "subjects must contain at least one value"));
    }
    for (i, s) in subjects.iter().enumerate() {
        validate_subject(s, &format!("{path}.subjects[{i}]"), errs);
    }
    let resource_rules = rule.get("resourceRules").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let non_resource_rules = rule.get("nonResourceRules").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if resource_rules.is_empty() && non_resource_rules.is_empty() {
        errs.push(FieldError::required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"));
    }
    for (i, r) in resource_rules.iter().enumerate() {
        let p = format!("{path}.resourceRules[{i}]");
        validate_verbs(r, &p, errs);
        for (key, what) in [("apiGroups", "api group"), ("resources", "resource")] {
            let list = strings(r, key);
            if list.is_empty() {
                errs.push(FieldError::required(
                    &format!("{p}.{key}"),
                    format!("resource rules must supply at least one {what}"),
                ));
            } else if list.len() > 1 && list.iter().any(|s| s == "*") {
                errs.push(FieldError::invalid_value(
                    &format!("{p}.{key}"),
                    go_strings(&list),
                    format!("if '*' is present, must not specify other {what}s"),
                ));
            }
        }
        let namespaces = strings(r, "namespaces");
        let cluster_scope = r.get("clusterScope").and_then(Value::as_bool).unwrap_or(false);
        if namespaces.is_empty() && !cluster_scope {
            errs.push(FieldError::required(
                &format!("{p}.namespaces"),
                "resource rules that are not cluster scoped must supply at least one namespace",
            ));
        } else if namespaces.iter().any(|s| s == "*") {
            if namespaces.len() > 1 {
                errs.push(FieldError::invalid_value(
                    &format!("{p}.namespaces"),
                    go_strings(&namespaces),
                    "if '*' is present, must not specify other namespaces",
                ));
            }
        } else {
            for (j, ns) in namespaces.iter().enumerate() {
                for msg in is_dns1123_label(ns) {
                    errs.push(FieldError::invalid(
                        &format!("{p}.namespaces[{j}]"),
                        ns,
                        format!("each member of this list must be '*' or a DNS-1123 label; {msg}"),
                    ));
                }
            }
        }
    }
    for (i, r) in non_resource_rules.iter().enumerate() {
        let p = format!("{path}.nonResourceRules[{i}]");
        validate_verbs(r, &p, errs);
        let urls = strings(r, "nonResourceURLs");
        if urls.is_empty() {
            errs.push(FieldError::required(
                &format!("{p}.nonResourceURLs"),
                "nonResourceURLs must contain at least one value",
            ));
        } else if urls.iter().any(|s| s == "*") && urls.len() > 1 {
            errs.push(FieldError::invalid_value(
                &format!("{p}.nonResourceURLs"),
                go_strings(&urls),
                "if '*' is present, must not specify other non-resource URLs",
            ));
        }
    }
}

fn validate_verbs(rule: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let verbs = strings(rule, "verbs");
    let p = format!("{path}.verbs");
    if verbs.is_empty() {
        errs.push(FieldError::required(&p, "verbs must contain at least one value"));
    } else if verbs.iter().any(|v| v == "*") {
        if verbs.len() > 1 {
            errs.push(FieldError::invalid_value(
                &p,
                go_strings(&verbs),
                "if '*' is present, must not specify other verbs",
            ));
        }
    } else if verbs.iter().any(|v| !VERBS.contains(&v.as_str())) {
        errs.push(FieldError::not_supported_value(&p, go_strings(&verbs), VERBS));
    }
}

/// A subject of kind User, Group or ServiceAccount, with that member set and named.
fn validate_subject(subject: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let kind = subject.get("kind").and_then(Value::as_str).unwrap_or("");
    let member = match kind {
        "ServiceAccount" => "serviceAccount",
        "User" => "user",
        "Group" => "group",
        _ => {
            errs.push(FieldError::not_supported(&format!("{path}.kind"), kind, &["Group", "ServiceAccount", "User"]));
            return;
        }
    };
    match subject.get(member).filter(|m| m.is_object()) {
        None => errs.push(FieldError::required(
            &format!("{path}.{member}"),
            format!("{member} is required when subject kind is '{kind}'"),
        )),
        Some(m) => {
            if str_at(m, "/name").is_empty() {
                errs.push(FieldError::required(&format!("{path}.{member}.name"), ""));
            }
            if member == "serviceAccount" && str_at(m, "/namespace").is_empty() {
                errs.push(FieldError::required(
                    &format!("{path}.serviceAccount.namespace"),
                    "must specify namespace for service account",
                ));
            }
        }
    }
    for (other, other_kind) in [("user", "User"), ("group", "Group"), ("serviceAccount", "ServiceAccount")] {
        if other != member && subject.get(other).is_some_and(|v| !v.is_null()) {
            errs.push(FieldError::forbidden(
                &format!("{path}.{other}"),
                format!("{other} is forbidden when subject kind is not '{other_kind}'"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn shown(v: Value) -> Vec<String> {
        let mut o = obj(v);
        FlowSchema.defaults(&mut o);
        FlowSchema.validate(&o, None).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn precedence_defaults_to_1000_and_stays_in_range() {
        let mut fs = obj(json!({"spec": {"priorityLevelConfiguration": {"name": "global-default"}}}));
        FlowSchema.defaults(&mut fs);
        assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
        assert_eq!(
            shown(json!({"metadata": {"name": "x"}, "spec": {"matchingPrecedence": 10001,
                "priorityLevelConfiguration": {"name": "p"}}})),
            ["spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"]
        );
        assert_eq!(
            shown(json!({"metadata": {"name": "x"}, "spec": {"matchingPrecedence": 1}})),
            [
                "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1",
                "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
            ]
        );
    }

    #[test]
    fn rules_need_subjects_and_targets() {
        assert_eq!(
            shown(json!({"spec": {"priorityLevelConfiguration": {"name": "p"}, "rules": [
                {"subjects": [{"kind": "ServiceAccount", "serviceAccount": {"name": "sa"}, "user": {"name": "u"}}]}]}})),
            [
                "spec.rules[0].subjects[0].serviceAccount.namespace: Required value: must specify namespace for service account",
                "spec.rules[0].subjects[0].user: Forbidden: user is forbidden when subject kind is not 'User'",
                "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
            ]
        );
    }

    #[test]
    fn printed_with_level_and_precedence() {
        let fs = json!({"metadata": {"name": "f"}, "spec": {"priorityLevelConfiguration": {"name": "p"},
            "matchingPrecedence": 500, "distinguisherMethod": {"type": "ByUser"}},
            "status": {"conditions": [{"type": "Dangling", "status": "False"}]}});
        let row = FlowSchema.row(&fs, 0);
        assert_eq!(row.cells[1..4], [json!("p"), json!(500), json!("ByUser")]);
        assert_eq!(row.cells[5], json!("False"));
    }
}
