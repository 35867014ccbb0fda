//! Owns CRD validation rules (`x-kubernetes-validations`, CEL), as kube-apiserver's
//! apiextensions server runs them:
//!
//! - [`compile_errors`]: when a CRD is written, every rule and `messageExpression` of a
//!   version's schema is compiled with `self` (and `oldSelf`) typed by the schema node it
//!   sits on; one that is not valid CEL, names an undeclared field, or is estimated to
//!   cost more than kube's budget refuses the CRD (422, kube's path and message);
//! - [`Rules::check`]: on every write of a custom resource, each rule runs with `self` the
//!   value at its node, and a transition rule (one that reads `oldSelf`) runs on an update
//!   where the node's old value correlates: same field, same map key, or the same
//!   `x-kubernetes-list-map-keys` in a `listType: map` list; with `optionalOldSelf` it
//!   runs on creates too, `oldSelf` an optional (`optional.none()` without an old value).
//!
//! A rule's cost was bounded when its CRD was written, so checking an object is bounded
//! by its size times the rules' costs.

use kuorum_api::validation::{BadValue, FieldError};
use kuorum_cel::{CompileError, Program, Type};
use serde_json::{Map, Value};

/// The sum of the estimated costs of a CRD version's rules, each times the most times
/// it can run (kube's `StaticEstimatedCRDCostLimit`).
const TOTAL_COST_LIMIT: u64 = 100_000_000;

/// One rule, compiled.
struct Rule {
    source: String,
    program: Program,
    message: Option<String>,
    message_expression: Option<Program>,
    /// `reason`: the kind of field error a failure is.
    reason: Option<String>,
    /// `fieldPath`: where a failure is reported, relative to the rule's node.
    field_path: Option<String>,
    /// Reads `oldSelf`: runs only on an update where the old value correlates.
    transition: bool,
    /// `optionalOldSelf`: a transition rule that runs on creates too, with `oldSelf` an
    /// optional (`optional.none()` where there is no old value).
    optional_old_self: bool,
}

/// The rules of one schema node and of the nodes below it that have any.
#[derive(Default)]
struct Node {
    /// The schema's `type`, shown as the bad value of a failure (`Invalid value: "object"`).
    type_name: String,
    rules: Vec<Rule>,
    properties: Vec<(String, Node)>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
    /// `x-kubernetes-list-map-keys` of a `listType: map` list: how old items correlate.
    map_keys: Option<Vec<String>>,
}

impl Node {
    fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.properties.is_empty() && self.items.is_none() && self.additional.is_none()
    }
}

/// A version's compiled rules.
#[derive(Default)]
pub(crate) struct Rules {
    root: Option<Node>,
}

/// The type of `self` at the root: the schema's fields, and the resource metadata kube
/// exposes to rules (`apiVersion`, `kind`, `metadata.name` and `metadata.generateName`).
fn root_type(schema: &Value) -> Type {
    let mut t = Type::from_schema(schema);
    if let Type::Object { fields, .. } = &mut t {
        fields.insert("apiVersion".into(), Type::string(None));
        fields.insert("kind".into(), Type::string(None));
        let meta =
            [("name".to_string(), Type::string(Some(253))), ("generateName".to_string(), Type::string(Some(253)))];
        fields.insert("metadata".into(), Type::object(meta.into_iter().collect(), false));
    }
    t
}

/// A rule as kube shows it in an error about it: its internal struct, as JSON.
fn shown_rule(r: &Value) -> BadValue {
    let s = |k: &str| r.get(k).cloned().unwrap_or(Value::String(String::new()));
    let n = |k: &str| r.get(k).cloned().unwrap_or(Value::Null);
    let shown = serde_json::json!({
        "Rule": s("rule"), "Message": s("message"), "MessageExpression": s("messageExpression"),
        "Reason": n("reason"), "FieldPath": s("fieldPath"), "OptionalOldSelf": n("optionalOldSelf"),
    });
    BadValue::Raw(shown.to_string())
}

/// A rule's expression (`what`: `rule` or `messageExpression`) failing to compile.
fn compile_error(path: &str, r: &Value, what: &str, e: CompileError) -> FieldError {
    let (cost_name, prefix) = match what {
        "rule" => ("estimated rule cost", "compilation failed"),
        _ => ("estimated messageExpression cost", "messageExpression compilation failed"),
    };
    let path = format!("{path}.{what}");
    match e {
        CompileError::TooCostly { .. } => FieldError::forbidden(&path, format!("{cost_name} {}", e.detail())),
        CompileError::Invalid(_) => {
            FieldError::invalid_value(&path, shown_rule(r), format!("{prefix}: {}", e.detail()))
        }
    }
}

/// Where a node is in its schema while its rules compile.
#[derive(Clone, Copy)]
struct Place<'a> {
    path: &'a str,
    /// How many times the node can occur in one object.
    cardinality: u64,
    /// The list this node is under whose items do not correlate with old ones (not
    /// `listType: map`): `oldSelf` means nothing there.
    uncorrelatable: Option<&'a str>,
}

/// Compiles the rules of `schema` and below; errors are pushed with paths under `path`.
fn compile_node(schema: &Value, self_type: Type, at: Place, total: &mut u64, errs: &mut Vec<FieldError>) -> Node {
    let Place { path, cardinality, uncorrelatable } = at;
    let mut node = Node {
        type_name: schema.get("type").and_then(Value::as_str).unwrap_or("object").to_string(),
        ..Node::default()
    };
    let rules = schema.get("x-kubernetes-validations").and_then(Value::as_array);
    for (i, r) in rules.into_iter().flatten().enumerate() {
        let rpath = format!("{path}.x-kubernetes-validations[{i}]");
        let source = r.get("rule").and_then(Value::as_str).unwrap_or("");
        if source.trim().is_empty() {
            errs.push(FieldError::required(&format!("{rpath}.rule"), "rule is not specified"));
            continue;
        }
        let transition_vars = [("self", &self_type), ("oldSelf", &self_type)];
        let program = match kuorum_cel::compile(source, &transition_vars, kuorum_cel::STATIC_COST_LIMIT) {
            Ok(p) => p,
            Err(e) => {
                errs.push(compile_error(&rpath, r, "rule", e));
                continue;
            }
        };
        let not = |t: &Type| !matches!(t, Type::Bool | Type::Dyn { .. } | Type::Null);
        if not(&program.result) {
            let e = FieldError::invalid_value(
                &format!("{rpath}.rule"),
                shown_rule(r),
                "cel expression must evaluate to a bool",
            );
            errs.push(e);
            continue;
        }
        let transition = program.references("oldSelf");
        let optional_old_self = r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
        if let (false, Some(v)) = (transition, r.get("optionalOldSelf").filter(|v| !v.is_null())) {
            errs.push(FieldError::invalid_value(
                &format!("{rpath}.optionalOldSelf"),
                BadValue::of_json(v),
                "may not be set if oldSelf is not used in rule",
            ));
            continue;
        }
        if let (true, Some(list)) = (transition, uncorrelatable) {
            errs.push(FieldError::invalid(
                &format!("{rpath}.rule"),
                source,
                format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {list}"),
            ));
            continue;
        }
        *total = total.saturating_add(program.cost.saturating_mul(cardinality));
        let message_expression = match r.get("messageExpression").and_then(Value::as_str) {
            Some(src) => match kuorum_cel::compile(src, &transition_vars, kuorum_cel::STATIC_COST_LIMIT) {
                Ok(p) if matches!(p.result, Type::String { .. } | Type::Dyn { .. }) => Some(p),
                Ok(_) => {
                    let e = FieldError::invalid_value(
                        &format!("{rpath}.messageExpression"),
                        shown_rule(r),
                        "messageExpression must evaluate to a string",
                    );
                    errs.push(e);
                    continue;
                }
                Err(e) => {
                    errs.push(compile_error(&rpath, r, "messageExpression", e));
                    continue;
                }
            },
            None => None,
        };
        let reason = r.get("reason").and_then(Value::as_str).map(str::to_string);
        if let Some(reason) = &reason {
            const REASONS: &[&str] =
                &["FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"];
            if !REASONS.contains(&reason.as_str()) {
                errs.push(FieldError::not_supported(&format!("{rpath}.reason"), reason, REASONS));
            }
        }
        node.rules.push(Rule {
            source: source.to_string(),
            transition,
            optional_old_self,
            program,
            message: r.get("message").and_then(Value::as_str).map(str::to_string),
            message_expression,
            reason,
            field_path: r.get("fieldPath").and_then(Value::as_str).map(str::to_string),
        });
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, s) in props {
            let child_path = format!("{path}.properties[{name}]");
            let child = compile_node(s, Type::from_schema(s), Place { path: &child_path, ..at }, total, errs);
            if !child.is_empty() {
                node.properties.push((name.clone(), child));
            }
        }
    }
    let elem_cardinality = |max: Option<u64>, per: u64| {
        cardinality.saturating_mul(max.unwrap_or(kuorum_cel::MAX_REQUEST_BYTES / per.max(1)))
    };
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        let n = elem_cardinality(schema.get("maxItems").and_then(Value::as_u64), 3);
        let is_map = schema.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
        let items_path = format!("{path}.items");
        let place = Place {
            path: &items_path,
            cardinality: n,
            uncorrelatable: if is_map { uncorrelatable } else { Some(path) },
        };
        let child = compile_node(items, Type::from_schema(items), place, total, errs);
        if !child.is_empty() {
            node.items = Some(Box::new(child));
        }
        if schema.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map") {
            node.map_keys = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_string).collect());
        }
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        let n = elem_cardinality(schema.get("maxProperties").and_then(Value::as_u64), 6);
        let child_path = format!("{path}.additionalProperties");
        let place = Place { path: &child_path, cardinality: n, ..at };
        let child = compile_node(additional, Type::from_schema(additional), place, total, errs);
        if !child.is_empty() {
            node.additional = Some(Box::new(child));
        }
    }
    node
}

impl Rules {
    /// Whether the version has no rules.
    pub(crate) fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// The rules of `schema` (a version's `openAPIV3Schema`) compiled, and the errors of
    /// those that do not compile, with paths under `path`.
    pub(crate) fn compile(schema: &Value, path: &str) -> (Rules, Vec<FieldError>) {
        let mut errs = Vec::new();
        let mut total = 0u64;
        let at = Place { path, cardinality: 1, uncorrelatable: None };
        let root = compile_node(schema, root_type(schema), at, &mut total, &mut errs);
        if total > TOTAL_COST_LIMIT {
            let over = CompileError::TooCostly { estimated: total, limit: TOTAL_COST_LIMIT };
            let detail = format!(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema {}",
                over.detail()
            );
            errs.push(FieldError::forbidden(path, detail));
        }
        let root = (!root.is_empty()).then_some(root);
        (Rules { root }, errs)
    }

    /// The failures of `obj` (over `old`, on an update) against the rules, and the
    /// warnings: a failure of a rule that does not read `oldSelf` on a value the update
    /// leaves as it was is a warning (kube's validation ratcheting), so an object written
    /// before a rule was added can still be updated elsewhere.
    pub(crate) fn check(&self, obj: &Value, old: Option<&Value>) -> Checked {
        let mut out = Checked::default();
        let Some(root) = &self.root else { return out };
        let obj = root_value(obj);
        let old = old.map(root_value);
        check_node(root, &obj, old.as_ref(), "", &mut out);
        out
    }
}

/// What checking an object against the rules found.
#[derive(Default)]
pub(crate) struct Checked {
    pub errors: Vec<FieldError>,
    pub warnings: Vec<String>,
}

/// The object as rules see it at the root: `metadata` only with its name and generateName.
fn root_value(obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        let kept: Map<String, Value> =
            ["name", "generateName"].iter().filter_map(|k| meta.get(*k).map(|v| (k.to_string(), v.clone()))).collect();
        *meta = kept;
    }
    out
}

fn join(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// A path as kube prints it: the root is a nil path.
fn shown_path(path: &str) -> &str {
    if path.is_empty() {
        "<nil>"
    } else {
        path
    }
}

fn check_node(node: &Node, value: &Value, old: Option<&Value>, path: &str, out: &mut Checked) {
    if value.is_null() {
        return;
    }
    let unchanged = old == Some(value);
    for rule in &node.rules {
        if rule.transition && old.is_none() && !rule.optional_old_self {
            continue;
        }
        let vars: Vec<(&str, &Value)> = match old {
            Some(o) if rule.transition && !rule.optional_old_self => vec![("self", value), ("oldSelf", o)],
            _ => vec![("self", value)],
        };
        let optional = rule.optional_old_self.then_some(("oldSelf", old));
        let result = match rule.program.eval_with(&vars, optional) {
            Ok(kuorum_cel::Value::Bool(b)) => Ok(b),
            Ok(other) => {
                Err(kuorum_cel::EvalError::Failed(format!("expected bool, got {}", kuorum_cel::type_name(&other))))
            }
            Err(e) => Err(e),
        };
        let error = match result {
            Ok(true) => continue,
            Ok(false) => failure(node, rule, value, &vars, path),
            Err(kuorum_cel::EvalError::TooCostly) => FieldError::invalid(
                shown_path(path),
                &node.type_name,
                format!(
                    "'{}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                    kuorum_cel::EvalError::TooCostly,
                    rule_error_string(rule)
                ),
            ),
            Err(e) => FieldError::invalid(
                shown_path(path),
                &node.type_name,
                format!("{e} evaluating rule: {}", rule_error_string(rule)),
            ),
        };
        if unchanged && !rule.transition {
            out.warnings.push(error.to_string());
        } else {
            out.errors.push(error);
        }
    }
    for (name, child) in &node.properties {
        if let Some(v) = value.get(name) {
            check_node(child, v, old.and_then(|o| o.get(name)), &join(path, name), out);
        }
    }
    if let (Some(items), Some(list)) = (&node.items, value.as_array()) {
        let old_list = old.and_then(Value::as_array);
        for (i, item) in list.iter().enumerate() {
            let old_item = match (&node.map_keys, old_list) {
                (Some(keys), Some(olds)) => olds.iter().find(|o| keys.iter().all(|k| o.get(k) == item.get(k))),
                _ => None,
            };
            check_node(items, item, old_item, &format!("{path}[{i}]"), out);
        }
    }
    if let (Some(additional), Some(map)) = (&node.additional, value.as_object()) {
        for (k, v) in map {
            check_node(additional, v, old.and_then(|o| o.get(k)), &format!("{path}[{k}]"), out);
        }
    }
}

/// The rule as its errors name it: its message, else its expression.
fn rule_error_string(rule: &Rule) -> &str {
    rule.message.as_deref().map(str::trim).filter(|m| !m.is_empty()).unwrap_or(rule.source.trim())
}

/// The error of a rule that evaluated to false, as kube words it.
fn failure(node: &Node, rule: &Rule, value: &Value, vars: &[(&str, &Value)], path: &str) -> FieldError {
    let default = || match rule.message.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
        Some(m) => m.to_string(),
        None => format!("failed rule: {}", rule.source.trim()),
    };
    let message = rule
        .message_expression
        .as_ref()
        .and_then(|expr| expr.eval_string(vars).ok())
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty() && !m.contains('\n') && m.len() <= MAX_MESSAGE_BYTES)
        .unwrap_or_else(default);
    let path = match &rule.field_path {
        Some(fp) => join(path, fp.trim_start_matches('.')),
        None => path.to_string(),
    };
    let path = shown_path(&path);
    // Since 1.35 an object's or a list's value is not shown, a scalar's is.
    let shown = match node.type_name.as_str() {
        "object" | "array" => BadValue::Omitted,
        _ => BadValue::of_json(value),
    };
    match rule.reason.as_deref() {
        Some("FieldValueForbidden") => FieldError::forbidden(path, message),
        Some("FieldValueRequired") => FieldError::required(path, message),
        Some("FieldValueDuplicate") => FieldError::duplicate(path, shown),
        _ => FieldError::invalid_value(path, shown, message),
    }
}

/// The longest message a `messageExpression` may give (kube's
/// `MaxEvaluatedMessageExpressionSizeBytes`); a longer one falls back to `message`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.minReplicas <= self.replicas", "message": "replicas should be at least minReplicas"},
                    {"rule": "self.replicas >= oldSelf.replicas", "messageExpression": "'replicas may not go down from ' + string(oldSelf.replicas)", "reason": "FieldValueForbidden"}
                ],
                "properties": {
                    "replicas": {"type": "integer"},
                    "minReplicas": {"type": "integer"},
                    "name": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]}
                }
            }}
        })
    }

    #[test]
    fn rules_and_transition_rules_refuse_with_kubes_messages() {
        let (rules, errs) = Rules::compile(&schema(), "spec.versions[0].schema.openAPIV3Schema");
        assert!(errs.is_empty(), "{errs:?}");
        let ok = json!({"spec": {"replicas": 3, "minReplicas": 1, "name": "a"}});
        assert!(rules.check(&ok, None).errors.is_empty());
        let bad = json!({"spec": {"replicas": 1, "minReplicas": 2, "name": "a"}});
        let errs = rules.check(&bad, None).errors;
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].to_string(), "spec: Invalid value: replicas should be at least minReplicas");
        // A transition rule runs on updates only.
        let down = json!({"spec": {"replicas": 2, "minReplicas": 1, "name": "b"}});
        let errs = rules.check(&down, Some(&ok)).errors;
        let shown: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            shown,
            vec![
                "spec: Forbidden: replicas may not go down from 3".to_string(),
                "spec.name: Invalid value: \"b\": name is immutable".to_string()
            ]
        );
    }

    #[test]
    fn optional_old_self_runs_on_creates_too() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"size": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() ? self.size < 10 : self.size >= oldSelf.value().size",
                                          "optionalOldSelf": true, "message": "small at first, then only growing"}]}}});
        let (rules, errs) = Rules::compile(&s, "root");
        assert!(errs.is_empty(), "{errs:?}");
        let (small, big, bigger) =
            (json!({"spec": {"size": 5}}), json!({"spec": {"size": 50}}), json!({"spec": {"size": 60}}));
        assert!(rules.check(&small, None).errors.is_empty());
        assert_eq!(rules.check(&big, None).errors.len(), 1, "a create is judged as a create");
        assert!(rules.check(&bigger, Some(&big)).errors.is_empty());
        assert_eq!(rules.check(&small, Some(&big)).errors.len(), 1);
        // Without oldSelf in the rule, optionalOldSelf is refused.
        let bad = json!({"type": "object", "x-kubernetes-validations": [{"rule": "true", "optionalOldSelf": true}]});
        let (_, errs) = Rules::compile(&bad, "root");
        assert_eq!(errs[0].to_string(), "root.x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule");
    }

    #[test]
    fn bad_rules_refuse_the_crd() {
        let s = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}}},
        "x-kubernetes-validations": [
            {"rule": "self.items.all(x, self.items.all(y, x == y))"},
            {"rule": "self.itemz.size() > 0"},
            {"rule": "self.items.size() >"}
        ]}}});
        let (_, errs) = Rules::compile(&s, "root");
        let shown: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(errs.len(), 3, "{shown:?}");
        assert!(shown[0].starts_with("root.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of"), "{shown:?}");
        assert!(shown[1].contains("undefined field 'itemz'"), "{shown:?}");
        assert!(shown[2].contains("compilation failed"), "{shown:?}");
    }
}
