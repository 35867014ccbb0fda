//! Owns admission policies (admissionregistration.k8s.io/v1): the
//! `ValidatingAdmissionPolicy`s and `MutatingAdmissionPolicy`s in this node's watch cache,
//! applied through their bindings to every write they match, on the node that took it,
//! before anything is proposed, as kube-apiserver's policy plugins apply them:
//!
//! - **Matching:** the policy's `matchConstraints` and the binding's `matchResources`
//!   (resource rules with exclusions, namespace and object selectors), then the
//!   policy's `matchConditions`.
//! - **Params:** a policy's `paramKind` and a binding's `paramRef` (a name, or a label
//!   selector over several; the binding's namespace, or the request's for a namespaced
//!   kind): the policy runs once per param; none found is `parameterNotFoundAction`
//!   (Deny: a configuration error; Allow: nothing runs).
//! - **Variables** seen by expressions: `object`, `oldObject`, `request`, `params`,
//!   `namespaceObject`, `variables` (the policy's, in order), `authorizer` and
//!   `authorizer.requestResource` (checks against this server's authorizer).
//! - **Validating:** each failed validation is a decision, acted on per the binding's
//!   `validationActions`: Deny (kube's message, the validation's `reason`, 422 by
//!   default), Warn (a `Warning` header), Audit (an audit annotation); `auditAnnotations`
//!   are written to the audit event. An expression that fails to evaluate, or a
//!   configuration error, denies under `failurePolicy: Fail` and is ignored under
//!   `Ignore`.
//! - **Mutating:** each `mutation` in turn: `ApplyConfiguration` (an object literal
//!   merged into the object by the kind's schema, as server-side apply merges: keyed lists
//!   by key, sets by value; one that sets an atomic list, map or struct is refused, as
//!   kube refuses it) or `JSONPatch` (a list of `JSONPatch{op, path, value}`).
//!
//! Every expression is compiled once per text ([`kuorum_cel::compile_any`]) and bounded
//! per evaluation by [`kuorum_cel::PER_CALL_LIMIT`]. Validating policies run on deletes
//! too (`object` null, `oldObject` the object). Under `matchPolicy: Equivalent` (the default),
//! a policy whose rules name an equivalent resource (another version of a CRD, a built-in
//! resource stored as the same kind) sees the objects converted to it, and a mutating
//! one's result is converted back. `reinvocationPolicy: IfNeeded`: a mutating policy runs once
//! more when a mutating webhook changed the object after it. [`type_check`] is what the
//! leader writes to a ValidatingAdmissionPolicy's `status.typeChecking`.

use std::sync::Arc;

use kuorum_api::kinds::common::selector_matches;
use kuorum_api::{registry, ApiError, GroupResource, Reason, ResourceDef, Scope};
use kuorum_schema::Schema;
use serde_json::{json, Map, Value};

use crate::admission::{cached, cached_list};
use crate::object::{self, Object};
use crate::target::Target;
use crate::webhook::Review;

const GROUP: &str = "admissionregistration.k8s.io";

/// The variables of a policy's expressions.
const VARIABLES: [&str; 7] =
    ["object", "oldObject", "request", "params", "namespaceObject", "variables", kuorum_cel::library::authz::VARIABLE];

/// The most audit-annotated validation failures kept per request (kube's bound).
const MAX_AUDITED_FAILURES: usize = 50;

/// Compiles `expr` as a policy's expressions are compiled.
pub(crate) fn compile(expr: &str) -> Result<Arc<kuorum_cel::Program>, kuorum_cel::CompileError> {
    kuorum_cel::compile_any(expr, &VARIABLES)
}

/// A policy and one of its bindings, both stored.
struct Bound {
    policy: Object,
    binding: Object,
}

impl Bound {
    fn policy_name(&self) -> &str {
        object::meta_str(&self.policy, "name").unwrap_or("")
    }

    fn binding_name(&self) -> &str {
        object::meta_str(&self.binding, "name").unwrap_or("")
    }

    fn spec(&self) -> &Value {
        self.policy.get("spec").unwrap_or(&Value::Null)
    }

    fn binding_spec(&self) -> &Value {
        self.binding.get("spec").unwrap_or(&Value::Null)
    }

    fn ignores_failures(&self) -> bool {
        self.spec().get("failurePolicy").and_then(Value::as_str) == Some("Ignore")
    }
}

/// The bindings of `binding_plural` with their policies of `policy_plural`, by binding name.
fn bound(r: &Review<'_>, policy_plural: &str, binding_plural: &str) -> Vec<Bound> {
    if !r.st.configured.any(GROUP, binding_plural) {
        return Vec::new();
    }
    let mut bindings = cached_list(&r.st.cache, GROUP, binding_plural, None);
    if bindings.is_empty() {
        return Vec::new();
    }
    bindings.sort_by(|a, b| object::meta_str(a, "name").cmp(&object::meta_str(b, "name")));
    bindings
        .into_iter()
        .filter_map(|binding| {
            let name = binding.get("spec")?.get("policyName")?.as_str()?;
            let policy = cached(r.st, GROUP, policy_plural, None, name)?;
            Some(Bound { policy, binding })
        })
        .collect()
}

/// Whether `m` (`matchConstraints` or `matchResources`) takes this write of `obj`; an
/// absent `m` (a binding's) takes everything its policy does.
fn match_resources(r: &Review<'_>, m: Option<&Value>, obj: &Object, rules_required: bool) -> bool {
    let Some(m) = m.filter(|m| m.is_object()) else { return !rules_required };
    let rules = |k: &str| m.get(k).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let included =
        if rules("resourceRules").is_empty() { !rules_required } else { r.rules_match(rules("resourceRules"), obj) };
    included
        && !r.rules_match(rules("excludeResourceRules"), obj)
        && r.namespace_selected(m.get("namespaceSelector"), obj)
        && r.object_selected(m.get("objectSelector"), obj)
}

/// A write as a binding takes it through an equivalent resource: that resource, and the
/// object and old object converted to it.
struct Seen {
    target: Target,
    obj: Object,
    old: Option<Object>,
}

/// Whether binding `b` takes this write of `obj`: `Some(None)` as requested, `Some(Some(_))`
/// through an equivalent resource its policy's rules name (`matchPolicy: Equivalent`, the
/// default: another served version of a CRD, or a built-in resource stored as the same
/// kind), `None` not at all.
async fn taken_as(r: &Review<'_>, b: &Bound, obj: &Object) -> Result<Option<Option<Seen>>, ApiError> {
    let constraints = b.spec().get("matchConstraints");
    let takes = |view: &Review<'_>| {
        match_resources(view, constraints, obj, true)
            && match_resources(view, b.binding_spec().get("matchResources"), obj, false)
    };
    if takes(r) {
        return Ok(Some(None));
    }
    if constraints.and_then(|c| c.get("matchPolicy")).and_then(Value::as_str) == Some("Exact") {
        return Ok(None);
    }
    for t in r.target.equivalents() {
        if takes(&Review { target: &t, ..*r }) {
            let (obj, old) = r.converted(&t, obj).await?;
            return Ok(Some(Some(Seen { target: t, obj, old })));
        }
    }
    Ok(None)
}

/// The values every expression of one evaluation sees, but `params` and `variables`.
struct Inputs {
    object: Value,
    old: Value,
    request: Value,
    namespace: Value,
    authorizer: [(&'static str, kuorum_cel::Value); 2],
}

impl Inputs {
    fn new(r: &Review<'_>, obj: &Object) -> Inputs {
        let namespace = r
            .target
            .namespace
            .as_deref()
            .and_then(|ns| cached(r.st, "", "namespaces", None, ns))
            .map(|mut ns| {
                // kube's namespaceObject: metadata without managed fields, spec and status.
                if let Some(Value::Object(meta)) = ns.get_mut("metadata") {
                    meta.remove("managedFields");
                }
                Value::Object(ns)
            })
            .unwrap_or(Value::Null);
        Inputs {
            object: r.object_value(obj),
            old: r.old.map(|o| Value::Object(o.clone())).unwrap_or(Value::Null),
            request: r.request_value(obj),
            namespace,
            authorizer: r.authorizer(obj),
        }
    }
}

/// One evaluation of a policy: its inputs, a param, and its variables once computed.
struct Evaluation<'a> {
    inputs: &'a Inputs,
    params: Value,
    variables: Value,
}

impl Evaluation<'_> {
    fn vars(&self) -> [(&str, &Value); 6] {
        [
            ("object", &self.inputs.object),
            ("oldObject", &self.inputs.old),
            ("request", &self.inputs.request),
            ("params", &self.params),
            ("namespaceObject", &self.inputs.namespace),
            ("variables", &self.variables),
        ]
    }

    fn eval(&self, expr: &str) -> Result<kuorum_cel::Value, String> {
        let program = compile(expr).map_err(|e| e.to_string())?;
        program
            .eval_native(&self.vars(), &self.inputs.authorizer)
            .map_err(|e| format!("expression '{expr}' resulted in error: {e}"))
    }

    fn eval_bool(&self, expr: &str) -> Result<bool, String> {
        match self.eval(expr)? {
            kuorum_cel::Value::Bool(b) => Ok(b),
            other => Err(format!(
                "expression '{expr}' resulted in error: expected bool, got {}",
                kuorum_cel::type_name(&other)
            )),
        }
    }

    /// Computes the policy's `variables`, in order; one that fails is left out (an
    /// expression reading it fails then).
    fn with_variables(mut self, spec: &Value) -> Self {
        let mut computed = Map::new();
        for v in spec.get("variables").and_then(Value::as_array).into_iter().flatten() {
            let (Some(name), Some(expr)) =
                (v.get("name").and_then(Value::as_str), v.get("expression").and_then(Value::as_str))
            else {
                continue;
            };
            self.variables = Value::Object(computed.clone());
            if let Some(value) = self.eval(expr).ok().as_ref().and_then(kuorum_cel::json::to_json) {
                computed.insert(name.to_string(), value);
            }
        }
        self.variables = Value::Object(computed);
        self
    }
}

/// The params a binding gives its policy: `Ok(None)` when the policy takes none, an
/// empty list when none are found and that is allowed.
fn params(r: &Review<'_>, b: &Bound) -> Result<Option<Vec<Value>>, String> {
    let Some(kind) = b.spec().get("paramKind").filter(|k| k.is_object()) else { return Ok(None) };
    let api_version = kind.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind_name = kind.get("kind").and_then(Value::as_str).unwrap_or("");
    let def = param_def(r, api_version, kind_name).ok_or_else(|| format!("paramKind kind `{kind_name}` not known"))?;
    let Some(param_ref) = b.binding_spec().get("paramRef").filter(|p| p.is_object()) else {
        return Err("no paramRef in a binding of a policy with a paramKind".into());
    };
    let namespace = match (def.scope, param_ref.get("namespace").and_then(Value::as_str)) {
        (Scope::Cluster, Some(_)) => {
            return Err("paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into())
        }
        (Scope::Cluster, None) => None,
        (Scope::Namespaced, Some(ns)) => Some(ns.to_string()),
        (Scope::Namespaced, None) => match r.target.namespace.clone() {
            Some(ns) => Some(ns),
            None => {
                return Err(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into()
                )
            }
        },
    };
    let found: Vec<Value> = match param_ref.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        Some(name) => {
            cached(r.st, def.group, def.plural, namespace.as_deref(), name).map(Value::Object).into_iter().collect()
        }
        None => {
            let selector = param_ref.get("selector").cloned().unwrap_or(json!({}));
            cached_list(&r.st.cache, def.group, def.plural, namespace.as_deref())
                .into_iter()
                .filter(|o| selector_matches(&selector, object::meta(o).and_then(|m| m.get("labels"))))
                .map(Value::Object)
                .collect()
        }
    };
    let deny = param_ref.get("parameterNotFoundAction").and_then(Value::as_str) == Some("Deny");
    if found.is_empty() && deny {
        return Err("no params found for policy binding with `Deny` parameterNotFoundAction".into());
    }
    Ok(Some(found))
}

/// The resource of kind `kind` at `api_version`: built in, or a custom resource.
fn param_def(r: &Review<'_>, api_version: &str, kind: &str) -> Option<&'static ResourceDef> {
    registry::lookup_kind(api_version, kind).or_else(|| {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        r.st.custom.served(&r.st.cache).into_iter().find(|d| d.group == group && d.version == version && d.kind == kind)
    })
}

/// What one policy, through one binding, decided about a write.
enum Decision {
    Admit,
    /// A failed validation: its message and reason.
    Fail {
        message: String,
        reason: Option<String>,
        index: usize,
    },
    /// An error (an expression, a configuration) under `failurePolicy: Fail`.
    Error(String),
}

/// Whether the write passes the policy's match conditions: `Err` for an error under Fail.
fn conditions_hold(b: &Bound, scope: &Evaluation<'_>) -> Result<bool, String> {
    let mut errors = Vec::new();
    for c in b.spec().get("matchConditions").and_then(Value::as_array).into_iter().flatten() {
        let expr = c.get("expression").and_then(Value::as_str).unwrap_or("");
        match scope.eval_bool(expr) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() || b.ignores_failures() {
        Ok(errors.is_empty())
    } else {
        Err(errors.join(", "))
    }
}

/// The message of a failed validation: its messageExpression's, its message, or kube's default.
fn failure_message(v: &Value, scope: &Evaluation<'_>) -> String {
    let from_expression = v
        .get("messageExpression")
        .and_then(Value::as_str)
        .and_then(|e| scope.eval(e).ok())
        .and_then(|m| match m {
            kuorum_cel::Value::String(s) => Some(s.trim().to_string()),
            _ => None,
        })
        .filter(|m| !m.is_empty() && !m.contains('\n') && m.len() <= 5 * 1024);
    let expr = v.get("expression").and_then(Value::as_str).unwrap_or("").trim();
    from_expression
        .or_else(|| v.get("message").and_then(Value::as_str).map(str::trim).filter(|m| !m.is_empty()).map(String::from))
        .unwrap_or_else(|| format!("failed expression: {expr}"))
}

/// The decisions of one validating policy through one binding, and its audit annotations.
fn decide(r: &Review<'_>, b: &Bound, inputs: &Inputs, annotations: &mut AuditAnnotations) -> Vec<Decision> {
    let fail = |e: String| if b.ignores_failures() { Vec::new() } else { vec![Decision::Error(e)] };
    let params = match params(r, b) {
        Ok(None) => vec![Value::Null],
        Ok(Some(found)) => found,
        Err(e) => return fail(format!("failed to configure binding: {e}")),
    };
    let mut decisions = Vec::new();
    for param in params {
        let scope = Evaluation { inputs, params: param, variables: json!({}) }.with_variables(b.spec());
        match conditions_hold(b, &scope) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => {
                decisions.push(Decision::Error(e));
                continue;
            }
        }
        let validations = b.spec().get("validations").and_then(Value::as_array);
        for (index, v) in validations.into_iter().flatten().enumerate() {
            let expr = v.get("expression").and_then(Value::as_str).unwrap_or("");
            match scope.eval_bool(expr) {
                Ok(true) => decisions.push(Decision::Admit),
                Ok(false) => decisions.push(Decision::Fail {
                    message: failure_message(v, &scope),
                    reason: v.get("reason").and_then(Value::as_str).map(String::from),
                    index,
                }),
                Err(e) if b.ignores_failures() => {
                    let _ = e;
                }
                Err(e) => decisions.push(Decision::Error(e)),
            }
        }
        for a in b.spec().get("auditAnnotations").and_then(Value::as_array).into_iter().flatten() {
            let key = a.get("key").and_then(Value::as_str).unwrap_or("");
            let expr = a.get("valueExpression").and_then(Value::as_str).unwrap_or("");
            match audit_value(&scope, expr) {
                Ok(Some(value)) => annotations.add(format!("{}/{key}", b.policy_name()), value),
                Ok(None) => {}
                Err(e) if b.ignores_failures() => {
                    let _ = e;
                }
                Err(e) => decisions.push(Decision::Error(e)),
            }
        }
    }
    decisions
}

/// The most bytes of an audit annotation's value (kube's; longer ones are cut).
const MAX_AUDIT_VALUE_BYTES: usize = 10 * 1024;

/// What an audit annotation's `valueExpression` gives: a string, trimmed (none when
/// empty), or null (none); anything else is an error.
fn audit_value(scope: &Evaluation<'_>, expr: &str) -> Result<Option<String>, String> {
    match scope.eval(expr)? {
        kuorum_cel::Value::String(s) => {
            let mut s = s.trim().to_string();
            if s.len() > MAX_AUDIT_VALUE_BYTES {
                let mut end = MAX_AUDIT_VALUE_BYTES;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                s.truncate(end);
            }
            Ok(Some(s).filter(|s| !s.is_empty()))
        }
        kuorum_cel::Value::Null => Ok(None),
        other => Err(format!(
            "valueExpression '{expr}' resulted in unsupported return type: {}. Return type must be either string or null.",
            kuorum_cel::type_name(&other)
        )),
    }
}

/// A request's audit annotations from one policy: a key given several values (through
/// several bindings or params) gets each distinct value once, joined with ", ", as kube
/// writes them.
#[derive(Default)]
struct AuditAnnotations(Vec<(String, Vec<String>)>);

impl AuditAnnotations {
    fn add(&mut self, key: String, value: String) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) if values.contains(&value) => {}
            Some((_, values)) => values.push(value),
            None => self.0.push((key, vec![value])),
        }
    }

    fn write(self) {
        for (key, values) in self.0 {
            crate::audit::annotate(&key, values.join(", "));
        }
    }
}

/// The status code kube gives a denial's reason.
fn denial(gr: GroupResource<'_>, name: &str, message: &str, reason: Option<&str>) -> ApiError {
    let mut e = ApiError::forbidden(gr, name, message);
    let (reason, code) = match reason {
        Some("Forbidden") => (Reason::Forbidden, 403),
        Some("Unauthorized") => (Reason::Unauthorized, 401),
        Some("RequestEntityTooLarge") => (Reason::RequestEntityTooLarge, 413),
        _ => (Reason::Invalid, 422),
    };
    e.reason = reason;
    e.code = code;
    // kube adds the message as a cause with no field (kubectl: `is invalid: : <message>`).
    let cause = kuorum_api::status::Cause { reason: String::new(), message: message.to_string(), field: String::new() };
    e.details.get_or_insert_with(Default::default).causes.push(cause);
    e
}

/// The validating admission policies on `obj`. Answers the warnings of `Warn` bindings.
pub(crate) async fn validate(r: &Review<'_>, obj: &Object) -> Result<Vec<String>, ApiError> {
    let bound = bound(r, "validatingadmissionpolicies", "validatingadmissionpolicybindings");
    if bound.is_empty() {
        return Ok(Vec::new());
    }
    let inputs = Inputs::new(r, obj);
    let gr = GroupResource { group: r.target.def.group, resource: r.target.def.plural };
    let name = object::meta_str(obj, "name").unwrap_or(r.target.name());
    let mut warnings = Vec::new();
    let mut audited = Vec::new();
    let mut annotations = AuditAnnotations::default();
    for b in &bound {
        let Some(through) = taken_as(r, b, obj).await? else { continue };
        let equivalent;
        let inputs = match &through {
            None => &inputs,
            Some(seen) => {
                equivalent = Inputs::new(&r.through(&seen.target, seen.old.as_ref()), &seen.obj);
                &equivalent
            }
        };
        let actions: Vec<&str> = b
            .binding_spec()
            .get("validationActions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let by = format!("ValidatingAdmissionPolicy '{}' with binding '{}'", b.policy_name(), b.binding_name());
        for d in decide(r, b, inputs, &mut annotations) {
            let (message, reason, index) = match d {
                Decision::Admit => continue,
                Decision::Fail { message, reason, index } => (message, reason, Some(index)),
                Decision::Error(e) => (e, None, None),
            };
            if actions.contains(&"Deny") {
                annotations.write();
                return Err(denial(gr, name, &format!("{by} denied request: {message}"), reason.as_deref()));
            }
            if actions.contains(&"Warn") {
                warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {message}",
                    b.policy_name(),
                    b.binding_name()
                ));
            }
            if actions.contains(&"Audit") && audited.len() < MAX_AUDITED_FAILURES {
                audited.push(json!({"message": message, "policy": b.policy_name(), "binding": b.binding_name(),
                    "expressionIndex": index.unwrap_or(0), "validationActions": actions}));
            }
        }
    }
    annotations.write();
    if !audited.is_empty() {
        crate::audit::annotate(
            "validation.policy.admission.k8s.io/validation_failure",
            Value::Array(audited).to_string(),
        );
    }
    Ok(warnings)
}

/// The mutating admission policies on `obj`, each mutation in turn; with `again`, only
/// those whose `reinvocationPolicy` is IfNeeded (the reinvocation, when a webhook changed
/// the object after them). Answers whether any IfNeeded policy ran.
pub(crate) async fn mutate(r: &Review<'_>, written: &mut Object, again: bool) -> Result<bool, ApiError> {
    let bound = bound(r, "mutatingadmissionpolicies", "mutatingadmissionpolicybindings");
    if bound.is_empty() {
        return Ok(false);
    }
    let gr = GroupResource { group: r.target.def.group, resource: r.target.def.plural };
    let mut reinvocable = false;
    for b in &bound {
        let spec = b.spec();
        let if_needed = spec.get("reinvocationPolicy").and_then(Value::as_str) == Some("IfNeeded");
        if again && !if_needed {
            continue;
        }
        let Some(through) = taken_as(r, b, written).await? else { continue };
        reinvocable |= if_needed;
        // Mutated as the binding takes it: at an equivalent resource, converted back after.
        let (mut seen, view) = match &through {
            None => (None, *r),
            Some(s) => (Some(s.obj.clone()), r.through(&s.target, s.old.as_ref())),
        };
        let original = r;
        let r = &view;
        let obj: &mut Object = match seen.as_mut() {
            Some(o) => o,
            None => &mut *written,
        };
        let name = object::meta_str(obj, "name").unwrap_or(r.target.name()).to_string();
        let refuse = |why: String| -> Result<(), ApiError> {
            if b.ignores_failures() {
                return Ok(());
            }
            let message =
                format!("policy '{}' with binding '{}' denied request: {why}", b.policy_name(), b.binding_name());
            // kube sets the reason Invalid but keeps the code 403.
            let mut e = ApiError::forbidden(gr, &name, &message);
            e.reason = Reason::Invalid;
            e.code = 403;
            Err(e)
        };
        let params = match params(r, b) {
            Ok(None) => vec![Value::Null],
            Ok(Some(found)) => found,
            Err(e) => {
                refuse(format!("failed to configure binding: {e}"))?;
                continue;
            }
        };
        for param in params {
            let inputs = Inputs::new(r, obj);
            let scope = Evaluation { inputs: &inputs, params: param, variables: json!({}) }.with_variables(spec);
            match conditions_hold(b, &scope) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    refuse(e)?;
                    continue;
                }
            }
            let mut current = Value::Object(obj.clone());
            for m in spec.get("mutations").and_then(Value::as_array).into_iter().flatten() {
                match mutation(m, &scope, &current, r.target.schema()) {
                    Ok(next) => current = next,
                    Err(e) => {
                        refuse(e)?;
                    }
                }
            }
            if let Value::Object(o) = current {
                *obj = o;
            }
        }
        if let (Some(s), Some(mutated)) = (&through, seen) {
            if mutated != s.obj {
                *written = crate::conversion::convert(original.st, &s.target, &mutated, original.target.def).await?;
            }
        }
    }
    Ok(reinvocable)
}

/// `current` after one mutation. An apply configuration is merged as kube merges it, by
/// the kind's schema (keyed lists by key, sets by value, atomic values refused); a kind
/// without one merges maps and replaces the rest.
fn mutation(m: &Value, scope: &Evaluation<'_>, current: &Value, schema: Option<Schema<'_>>) -> Result<Value, String> {
    let (field, json_patch) = match m.get("patchType").and_then(Value::as_str) {
        Some("JSONPatch") => ("jsonPatch", true),
        _ => ("applyConfiguration", false),
    };
    let expr = m.get(field).and_then(|f| f.get("expression")).and_then(Value::as_str).unwrap_or("");
    let value = scope.eval(expr)?;
    let value = kuorum_cel::json::to_json(&value)
        .ok_or_else(|| format!("expression '{expr}' gave a value JSON cannot hold"))?;
    if json_patch {
        let ops = serde_json::to_vec(&value).map_err(|e| e.to_string())?;
        return kuorum_patch::json_patch(current, &ops).map_err(|e| format!("JSON patch failed: {e:?}"));
    }
    if !value.is_object() {
        return Err(format!("must evaluate to Object but got {}", kind_of(&value)));
    }
    if let Some(schema) = schema {
        return kuorum_fieldmanager::merge_apply_configuration(schema, current, &value)
            .map_err(|e| format!("error applying patch: {e}"));
    }
    let mut out = current.clone();
    merge(&mut out, &value);
    Ok(out)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null_type",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// The most kinds a policy is type-checked against (kube's `maxTypesToCheck`).
const MAX_TYPES_TO_CHECK: usize = 10;

/// kube's type checking of a ValidatingAdmissionPolicy, for its `status.typeChecking`:
/// each validation's `expression` and `messageExpression` compiled with `object` and
/// `oldObject` typed by the schema of each kind its `matchConstraints` name exactly (no
/// `*`; subresources skipped; at most ten kinds, by group, version and kind), every other
/// variable of any type. Answers the `expressionWarnings`: one per expression with any
/// issue, `<group>/<version>, Kind=<kind>: <issue>` per kind. Only built-in kinds are
/// resolved, and an issue is what kuorum's checker finds (a field the schema does not
/// declare), not all that cel-go's type checker would.
pub fn type_check(policy: &Value) -> Vec<Value> {
    let kinds = kinds_to_check(policy);
    if kinds.is_empty() {
        return Vec::new();
    }
    let typed: Vec<(String, kuorum_cel::Type)> = kinds
        .iter()
        .filter_map(|d| {
            let schemas = kuorum_schema::Schemas::builtin();
            let schema = schemas.inlined(schemas.name_of(d.group, d.version, d.kind)?)?;
            let gvk = format!("{}/{}, Kind={}", d.group, d.version, d.kind);
            Some((gvk, kuorum_cel::Type::from_schema(&schema)))
        })
        .collect();
    let any = kuorum_cel::Type::dyn_any();
    let mut warnings = Vec::new();
    let validations = policy.pointer("/spec/validations").and_then(Value::as_array);
    for (i, v) in validations.into_iter().flatten().enumerate() {
        for field in ["expression", "messageExpression"] {
            let Some(expr) = v.get(field).and_then(Value::as_str).filter(|e| !e.is_empty()) else { continue };
            let mut issues = Vec::new();
            for (gvk, t) in &typed {
                let vars: Vec<(&str, &kuorum_cel::Type)> = VARIABLES
                    .iter()
                    .map(|n| (*n, if matches!(*n, "object" | "oldObject") { t } else { &any }))
                    .collect();
                if let Err(kuorum_cel::CompileError::Invalid(why)) = kuorum_cel::compile(expr, &vars, u64::MAX) {
                    issues.push(format!("{gvk}: {why}\n"));
                }
            }
            if !issues.is_empty() {
                warnings
                    .push(json!({"fieldRef": format!("spec.validations[{i}].{field}"), "warning": issues.join("\n")}));
            }
        }
    }
    warnings
}

/// The built-in kinds a policy's rules name exactly, sorted by group, version and kind.
fn kinds_to_check(policy: &Value) -> Vec<&'static ResourceDef> {
    let list = |r: &Value, k: &str| -> Vec<String> {
        r.get(k).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(String::from).collect()
    };
    let mut kinds: Vec<&'static ResourceDef> = Vec::new();
    let rules = policy.pointer("/spec/matchConstraints/resourceRules").and_then(Value::as_array);
    for r in rules.into_iter().flatten() {
        let (groups, versions) = (list(r, "apiGroups"), list(r, "apiVersions"));
        if groups.iter().chain(&versions).any(|s| s.contains('*')) {
            continue;
        }
        let resources: Vec<String> = list(r, "resources").into_iter().filter(|s| !s.contains(['*', '/'])).collect();
        for g in &groups {
            for v in &versions {
                for res in &resources {
                    if let Some(d) = registry::lookup(g, v, res) {
                        if !kinds.iter().any(|k| std::ptr::eq(*k, d)) {
                            kinds.push(d);
                        }
                        if kinds.len() == MAX_TYPES_TO_CHECK {
                            return sorted(kinds);
                        }
                    }
                }
            }
        }
    }
    sorted(kinds)
}

fn sorted(mut kinds: Vec<&'static ResourceDef>) -> Vec<&'static ResourceDef> {
    kinds.sort_by_key(|d| (d.group, d.version, d.kind));
    kinds
}

/// Merges `patch` into `target`: maps key by key, anything else replaced.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                match t.get_mut(k) {
                    Some(existing) if existing.is_object() && v.is_object() => merge(existing, v),
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_checking_finds_fields_the_kinds_do_not_have() {
        let policy = json!({"spec": {
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments", "deployments/scale", "replicasets"]},
                {"apiGroups": ["*"], "apiVersions": ["v1"], "resources": ["pods"]}]},
            "validations": [
                {"expression": "object.spec.replicas <= 5"},
                {"expression": "object.spec.replica <= 5", "messageExpression": "'too many: ' + string(object.spec.replicas)"},
                {"expression": "object.metadata.nam == 'x'"}]}});
        let warnings = type_check(&policy);
        assert_eq!(
            warnings,
            [
                json!({"fieldRef": "spec.validations[1].expression",
                       "warning": "apps/v1, Kind=Deployment: undefined field 'replica'\n\napps/v1, Kind=ReplicaSet: undefined field 'replica'\n"}),
                json!({"fieldRef": "spec.validations[2].expression",
                       "warning": "apps/v1, Kind=Deployment: undefined field 'nam'\n\napps/v1, Kind=ReplicaSet: undefined field 'nam'\n"}),
            ]
        );
        // Only wildcards: nothing to check against.
        let any = json!({"spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]},
            "validations": [{"expression": "object.spec.replica <= 5"}]}});
        assert!(type_check(&any).is_empty());
    }

    #[test]
    fn apply_configurations_merge_maps_and_replace_the_rest() {
        let mut obj = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"list": [1, 2]}});
        merge(&mut obj, &json!({"metadata": {"labels": {"y": "2"}}, "spec": {"list": [3]}}));
        assert_eq!(obj, json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "spec": {"list": [3]}}));
    }
}
