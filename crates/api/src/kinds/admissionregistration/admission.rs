//! What the admissionregistration kinds share: the defaults and rules of a webhook
//! (name, client config, side effects, review versions, timeouts, enums), of rules and
//! match conditions, and of the policies' match resources and param references.

use std::collections::HashSet;

use serde_json::{json, Value};

use crate::kinds::common::label_selector;
use crate::kinds::{child, each, set_default, Object};
use crate::validation::{is_dns1123_subdomain, is_qualified_name, BadValue, FieldError};

pub(crate) const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
const REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
pub(crate) const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];

/// The defaults of each of `webhooks` (`SetDefaults_ValidatingWebhook` /
/// `SetDefaults_MutatingWebhook`), its rules' scope and its service port.
pub(crate) fn webhook_defaults(obj: &mut Object, mutating: bool) {
    for hook in each(obj, "webhooks") {
        set_default(hook, "failurePolicy", json!("Fail"));
        set_default(hook, "matchPolicy", json!("Equivalent"));
        set_default(hook, "namespaceSelector", json!({}));
        set_default(hook, "objectSelector", json!({}));
        set_default(hook, "timeoutSeconds", json!(10));
        if mutating {
            set_default(hook, "reinvocationPolicy", json!("Never"));
        }
        for rule in each(hook, "rules") {
            set_default(rule, "scope", json!("*"));
        }
        if let Some(service) = child(hook, "clientConfig").and_then(|c| child(c, "service")) {
            set_default(service, "port", json!(443));
        }
    }
}

/// The defaults of a policy's `matchConstraints` (or a binding's `matchResources`) at
/// `spec.<key>`: match policy, empty selectors, rules' scope.
pub(crate) fn match_resources_defaults(obj: &mut Object, key: &str) {
    let Some(m) = child(obj, "spec").and_then(|s| child(s, key)) else { return };
    set_default(m, "matchPolicy", json!("Equivalent"));
    set_default(m, "namespaceSelector", json!({}));
    set_default(m, "objectSelector", json!({}));
    for list in ["resourceRules", "excludeResourceRules"] {
        for rule in each(m, list) {
            set_default(rule, "scope", json!("*"));
        }
    }
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key).and_then(Value::as_array).into_iter().flatten().map(|s| s.as_str().unwrap_or("").to_string()).collect()
}

fn go_strings(list: &[String]) -> BadValue {
    BadValue::Raw(format!("[]string{{{}}}", list.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>().join(", ")))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The value at `key` as an enum: not among `allowed` is Unsupported.
pub(crate) fn enum_field(v: &Value, key: &str, path: &str, allowed: &[&str], errs: &mut Vec<FieldError>) {
    if let Some(s) = v.get(key).and_then(Value::as_str) {
        if !allowed.contains(&s) {
            errs.push(FieldError::not_supported(&format!("{path}.{key}"), s, allowed));
        }
    }
}

/// Every webhook of a configuration: unique names, and each one's own rules.
pub(crate) fn validate_webhooks(obj: &Object, mutating: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    let hooks = obj.get("webhooks").and_then(Value::as_array);
    for (i, hook) in hooks.into_iter().flatten().enumerate() {
        let path = format!("webhooks[{i}]");
        validate_webhook(hook, &path, mutating, &mut errs);
        let name = str_of(hook, "name");
        if !name.is_empty() && !names.insert(name) {
            errs.push(FieldError::duplicate(&format!("{path}.name"), BadValue::Str(name.into())));
        }
    }
    errs
}

fn validate_webhook(hook: &Value, path: &str, mutating: bool, errs: &mut Vec<FieldError>) {
    fully_qualified_name(str_of(hook, "name"), &format!("{path}.name"), errs);
    validate_client_config(hook, path, errs);
    for (i, rule) in hook.get("rules").and_then(Value::as_array).into_iter().flatten().enumerate() {
        validate_rule_with_operations(rule, &format!("{path}.rules[{i}]"), errs);
    }
    enum_field(hook, "failurePolicy", path, FAILURE_POLICIES, errs);
    enum_field(hook, "matchPolicy", path, MATCH_POLICIES, errs);
    match hook.get("sideEffects").and_then(Value::as_str) {
        None => errs.push(FieldError::required(
            &format!("{path}.sideEffects"),
            format!("must specify one of {}", SIDE_EFFECTS.join(", ")),
        )),
        Some(s) if !SIDE_EFFECTS.contains(&s) => {
            errs.push(FieldError::not_supported(&format!("{path}.sideEffects"), s, SIDE_EFFECTS))
        }
        Some(_) => {}
    }
    let versions = strings(hook, "admissionReviewVersions");
    let versions_path = format!("{path}.admissionReviewVersions");
    if versions.is_empty() {
        errs.push(FieldError::required(&versions_path, format!("must specify one of {}", REVIEW_VERSIONS.join(", "))));
    } else if !versions.iter().any(|v| REVIEW_VERSIONS.contains(&v.as_str())) {
        errs.push(FieldError::invalid_value(
            &versions_path,
            go_strings(&versions),
            format!("must include at least one of {}", REVIEW_VERSIONS.join(", ")),
        ));
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64).filter(|t| !(1..=30).contains(t)) {
        errs.push(FieldError::invalid_value(
            &format!("{path}.timeoutSeconds"),
            BadValue::Raw(t.to_string()),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = hook.get(selector).filter(|s| s.is_object()) {
            label_selector(sel, &format!("{path}.{selector}"), errs);
        }
    }
    if mutating {
        enum_field(hook, "reinvocationPolicy", path, REINVOCATION_POLICIES, errs);
    }
    validate_match_conditions(hook, path, errs);
}

/// kube's `IsFullyQualifiedName`: a DNS subdomain of at least three segments.
fn fully_qualified_name(name: &str, path: &str, errs: &mut Vec<FieldError>) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let msgs = is_dns1123_subdomain(name);
    if !msgs.is_empty() {
        errs.push(FieldError::invalid(path, name, msgs.join(",")));
        return;
    }
    if name.split('.').count() < 3 {
        errs.push(FieldError::invalid(path, name, "should be a domain with at least three segments separated by dots"));
    }
}

/// Exactly one of `url` (https, a host, no user, query or fragment) and `service`
/// (named, namespaced, a path starting with `/`, a valid port).
fn validate_client_config(hook: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let cc = hook.get("clientConfig").cloned().unwrap_or(Value::Null);
    let url = cc.get("url").and_then(Value::as_str);
    let service = cc.get("service").filter(|s| s.is_object());
    let cc_path = format!("{path}.clientConfig");
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => {
            errs.push(FieldError::required(&cc_path, "exactly one of url or service is required"))
        }
        (Some(url), None) => validate_url(url, &format!("{cc_path}.url"), errs),
        (None, Some(svc)) => {
            let p = format!("{cc_path}.service");
            for key in ["name", "namespace"] {
                if str_of(svc, key).is_empty() {
                    errs.push(FieldError::required(&format!("{p}.{key}"), format!("service {key} is required")));
                }
            }
            if let Some(sp) = svc.get("path").and_then(Value::as_str) {
                if !sp.is_empty() && !sp.starts_with('/') {
                    errs.push(FieldError::invalid(&format!("{p}.path"), sp, "must start with a '/'"));
                }
            }
            if let Some(port) = svc.get("port").and_then(Value::as_i64).filter(|p| !(1..=65535).contains(p)) {
                errs.push(FieldError::invalid_value(
                    &format!("{p}.port"),
                    BadValue::Raw(port.to_string()),
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
        }
    }
}

fn validate_url(url: &str, path: &str, errs: &mut Vec<FieldError>) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        errs.push(FieldError::invalid(path, url, "'https' is the only allowed URL scheme"));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        errs.push(FieldError::invalid(path, url, "user information is not permitted in the URL"));
    }
    if authority.rsplit('@').next().unwrap_or("").is_empty() {
        errs.push(FieldError::invalid(path, url, "host must be specified"));
    }
    if rest.contains('#') {
        errs.push(FieldError::invalid(path, url, "fragments are not permitted in the URL"));
    }
    if rest.contains('?') {
        errs.push(FieldError::invalid(path, url, "query parameters are not permitted in the URL"));
    }
}

/// A rule's operations (at least one, `*` alone), API groups, versions and resources
/// (each at least one, `*` alone) and scope.
pub(crate) fn validate_rule_with_operations(rule: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let ops = strings(rule, "operations");
    let ops_path = format!("{path}.operations");
    if ops.is_empty() {
        errs.push(FieldError::required(&ops_path, ""));
    } else if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        errs.push(FieldError::invalid_value(
            &ops_path,
            go_strings(&ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            errs.push(FieldError::not_supported(&format!("{ops_path}[{i}]"), op, OPERATIONS));
        }
    }
    for (key, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions"), ("resources", "resources")] {
        let list = strings(rule, key);
        let p = format!("{path}.{key}");
        if list.is_empty() {
            errs.push(FieldError::required(&p, ""));
        } else if list.len() > 1 && list.iter().any(|s| s == "*") {
            errs.push(FieldError::invalid_value(
                &p,
                go_strings(&list),
                format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    enum_field(rule, "scope", path, SCOPES, errs);
}

/// Each match condition named (a qualified name, unique) with an expression; at most 64.
pub(crate) fn validate_match_conditions(v: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let conditions = v.get("matchConditions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    if conditions.len() > 64 {
        errs.push(FieldError::too_many(&format!("{path}.matchConditions"), conditions.len() as i64, 64));
    }
    let mut names = HashSet::new();
    for (i, c) in conditions.iter().enumerate() {
        let p = format!("{path}.matchConditions[{i}]");
        let name = str_of(c, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&format!("{p}.name"), ""));
        } else {
            for msg in is_qualified_name(name) {
                errs.push(FieldError::invalid(&format!("{p}.name"), name, msg));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(&format!("{p}.name"), BadValue::Str(name.into())));
            }
        }
        if str_of(c, "expression").is_empty() {
            errs.push(FieldError::required(&format!("{p}.expression"), ""));
        }
    }
}

/// A policy's `matchConstraints` / a binding's `matchResources` at `path`: its rules
/// (operations, groups, versions, resources), selectors and match policy.
pub(crate) fn validate_match_resources(m: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for list in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in m.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            validate_rule_with_operations(rule, &format!("{path}.{list}[{i}]"), errs);
        }
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(sel) = m.get(selector).filter(|s| s.is_object()) {
            label_selector(sel, &format!("{path}.{selector}"), errs);
        }
    }
    enum_field(m, "matchPolicy", path, MATCH_POLICIES, errs);
}

/// A policy's `paramKind`: when set, its apiVersion and kind.
pub(crate) fn validate_param_kind(spec: &Value, errs: &mut Vec<FieldError>) {
    if let Some(pk) = spec.get("paramKind").filter(|p| p.is_object()) {
        for key in ["apiVersion", "kind"] {
            if str_of(pk, key).is_empty() {
                errs.push(FieldError::required(&format!("spec.paramKind.{key}"), ""));
            }
        }
    }
}

/// A binding's policy name and `paramRef` (a name or a selector, not both, and what to
/// do when no parameter is found).
pub(crate) fn validate_binding(obj: &Object, errs: &mut Vec<FieldError>) {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let policy = str_of(&spec, "policyName");
    if policy.is_empty() {
        errs.push(FieldError::required("spec.policyName", ""));
    }
    if let Some(pr) = spec.get("paramRef").filter(|p| p.is_object()) {
        let (name, selector) = (str_of(pr, "name"), pr.get("selector").filter(|s| s.is_object()));
        match (name.is_empty(), selector) {
            (false, Some(_)) => {
                errs.push(FieldError::forbidden("spec.paramRef.name", "name and selector are mutually exclusive"))
            }
            (true, None) => {
                errs.push(FieldError::required("spec.paramRef", "one of name or selector must be specified"))
            }
            (true, Some(sel)) => label_selector(sel, "spec.paramRef.selector", errs),
            (false, None) => {}
        }
        match pr.get("parameterNotFoundAction").and_then(Value::as_str) {
            None => errs.push(FieldError::required("spec.paramRef.parameterNotFoundAction", "")),
            Some(a) if a != "Allow" && a != "Deny" => {
                errs.push(FieldError::not_supported("spec.paramRef.parameterNotFoundAction", a, &["Allow", "Deny"]))
            }
            Some(_) => {}
        }
    }
    if let Some(m) = spec.get("matchResources").filter(|m| m.is_object()) {
        validate_match_resources(m, "spec.matchResources", errs);
    }
}

/// A binding's `paramRef` defaults to denying when no parameter matches.
pub(crate) fn param_ref_defaults(obj: &mut Object) {
    if let Some(pr) = child(obj, "spec").and_then(|s| child(s, "paramRef")) {
        set_default(pr, "parameterNotFoundAction", json!("Deny"));
    }
}

/// The ParamRef cell of a binding: `namespace/name`, `*/name`, the selector, or
/// `<unset>`.
pub(crate) fn param_ref_cell(obj: &Value) -> String {
    let Some(pr) = obj.pointer("/spec/paramRef").filter(|p| p.is_object()) else {
        return "<unset>".into();
    };
    let (name, namespace) = (str_of(pr, "name"), str_of(pr, "namespace"));
    match pr.get("selector").filter(|s| s.is_object()) {
        _ if !name.is_empty() && !namespace.is_empty() => format!("{namespace}/{name}"),
        // A name without a namespace may be cluster-scoped or any namespace's.
        _ if !name.is_empty() => format!("*/{name}"),
        Some(sel) => go_label_selector(sel),
        None => "<unset>".into(),
    }
}

/// Go's generated `String()` of a `*metav1.LabelSelector`, as kube prints a selector
/// param ref.
fn go_label_selector(sel: &Value) -> String {
    let mut labels: Vec<(&String, &Value)> =
        sel.get("matchLabels").and_then(Value::as_object).into_iter().flatten().collect();
    labels.sort_by_key(|(k, _)| *k);
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or(""))).collect();
    let exprs: String = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                str_of(e, "key"),
                str_of(e, "operator"),
                strings(e, "values").join(" ")
            )
        })
        .collect();
    format!("&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(hook: Value) -> Vec<String> {
        let mut obj = json!({"webhooks": [hook]}).as_object().unwrap().clone();
        webhook_defaults(&mut obj, false);
        validate_webhooks(&obj, false).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn webhooks_need_qualified_names_one_endpoint_and_side_effects() {
        let ok = json!({"name": "pods.policy.example.com", "clientConfig": {"service": {"namespace": "ns", "name": "s"}},
            "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]});
        assert!(shown(ok).is_empty());
        assert_eq!(
            shown(json!({"name": "policy.example", "clientConfig": {"url": "http://x.example.com/?a=b"},
                "timeoutSeconds": 31})),
            [
                "webhooks[0].name: Invalid value: \"policy.example\": should be a domain with at least three segments separated by dots",
                "webhooks[0].clientConfig.url: Invalid value: \"http://x.example.com/?a=b\": 'https' is the only allowed URL scheme",
                "webhooks[0].clientConfig.url: Invalid value: \"http://x.example.com/?a=b\": query parameters are not permitted in the URL",
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            ]
        );
        assert_eq!(
            shown(
                json!({"name": "a.b.c", "clientConfig": {}, "sideEffects": "Some", "admissionReviewVersions": ["v1"],
                "failurePolicy": "Retry"})
            ),
            [
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
                "webhooks[0].failurePolicy: Unsupported value: \"Retry\": supported values: \"Fail\", \"Ignore\"",
                "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\"",
            ]
        );
    }

    #[test]
    fn webhook_defaults_match_kube() {
        let mut obj =
            json!({"webhooks": [{"name": "a.b.c", "rules": [{}], "clientConfig": {"service": {"name": "s"}}}]})
                .as_object()
                .unwrap()
                .clone();
        webhook_defaults(&mut obj, true);
        assert_eq!(
            obj["webhooks"][0],
            json!({"name": "a.b.c", "rules": [{"scope": "*"}], "clientConfig": {"service": {"name": "s", "port": 443}},
                "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                "timeoutSeconds": 10, "reinvocationPolicy": "Never"})
        );
    }

    #[test]
    fn param_refs_print_like_kube() {
        let cell = |pr: Value| param_ref_cell(&json!({"spec": {"paramRef": pr}}));
        assert_eq!(param_ref_cell(&json!({"spec": {}})), "<unset>");
        assert_eq!(cell(json!({"name": "p", "namespace": "ns"})), "ns/p");
        assert_eq!(cell(json!({"name": "p"})), "*/p");
        assert_eq!(
            cell(json!({"selector": {"matchLabels": {"a": "b"}}})),
            "&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}"
        );
    }
}
