//! Owns admission webhooks: the `MutatingWebhookConfiguration`s and
//! `ValidatingWebhookConfiguration`s (admissionregistration.k8s.io/v1) in this node's
//! watch cache are called for every write they match, on the node that took the request,
//! before anything is proposed, with kube's `AdmissionReview` v1 over HTTPS:
//!
//! - **Order:** after kuorum's own mutating plugins, each mutating webhook in turn
//!   (configurations by name, webhooks in their order), its JSONPatch applied before the
//!   next; then the kind's validation and kuorum's validating plugins; then every
//!   validating webhook at once. A refused request leaves nothing in the log.
//! - **Matching:** `rules` (operations, groups, versions, resources with `*`, `res/sub`,
//!   `*/sub`, `res/*`, scope), `namespaceSelector` (a namespaced object's namespace
//!   labels; a Namespace's own), `objectSelector` (the new or old object's labels), then
//!   `matchConditions` (CEL over `object`, `oldObject`, `request` and `authorizer`): a false one skips
//!   the webhook; one that fails to evaluate, with none false, refuses the write (403,
//!   kube's message) under `failurePolicy: Fail` and skips the webhook under `Ignore`.
//! - **Where:** `clientConfig.url`, or `clientConfig.service`: the Service's Endpoints
//!   (first address, the port whose `port` or `targetPort` the reference names, 443 by
//!   default) are dialled, with the TLS name `<service>.<namespace>.svc` checked against
//!   `caBundle`. Clients are kept ([`Clients`]), so calls reuse their connections.
//! - **Failures:** a call that fails, times out (`timeoutSeconds`, 10 by default, at most
//!   30) or answers nonsense is kube's 500 `failed calling webhook` under
//!   `failurePolicy: Fail` (the default; kube's code, kept so clients see what they see
//!   from kube) and skipped under `Ignore`. A refusal is the webhook's Status as kube
//!   words it (`admission webhook "x" denied the request: ...`, 400 or more).
//! - **Dry runs** reach only webhooks whose `sideEffects` are `None` or `NoneOnDryRun`;
//!   any other matching webhook makes the dry run 400, as kube.
//! - **Reinvocation:** a mutating webhook with `reinvocationPolicy: IfNeeded` whose
//!   result a later webhook changed runs once more.
//!
//! - **Deletes:** validating webhooks whose rules take `DELETE` are called with `object`
//!   null and `oldObject` the object ([`crate::admission::validate_delete`]).
//!
//! Not yet: `matchPolicy: Equivalent` across versions (kuorum serves most resources at one
//! version), mutating webhooks on deletes, `CONNECT`.

use std::time::Duration;

use base64::Engine;
use kuorum_api::kinds::common::selector_matches;
use kuorum_api::{ApiError, Reason};
use serde_json::{json, Map, Value};

use crate::admission::{cached, cached_list};
use crate::auth::UserInfo;
use crate::object::{self, Object};
use crate::target::Target;
use crate::RestState;

pub(crate) const GROUP: &str = "admissionregistration.k8s.io";
const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
const MAX_TIMEOUT_SECONDS: u64 = 30;
/// The most bytes of a webhook's answer read: the body limit, as for a client's request.
const MAX_REVIEW_BYTES: usize = crate::negotiate::MAX_BODY_BYTES;

/// One write being admitted (kube's `admission.Attributes` as webhooks see them).
#[derive(Clone, Copy)]
pub(crate) struct Review<'a> {
    pub st: &'a RestState,
    pub user: Option<&'a UserInfo>,
    /// The resource the write is reviewed as: the one requested, or an equivalent version
    /// a webhook's rules name (then `requested` is the one requested).
    pub target: &'a Target,
    pub requested: Option<&'a Target>,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'static str,
    pub old: Option<&'a Object>,
    pub dry_run: bool,
}

/// One webhook of a configuration.
struct Webhook {
    name: String,
    /// The name of the configuration it is in.
    configuration: String,
    spec: Value,
}

impl Webhook {
    fn str(&self, field: &str) -> &str {
        self.spec.get(field).and_then(Value::as_str).unwrap_or("")
    }

    fn ignores_failures(&self) -> bool {
        self.str("failurePolicy") == "Ignore"
    }

    fn timeout(&self) -> Duration {
        let s = self.spec.get("timeoutSeconds").and_then(Value::as_u64).unwrap_or(DEFAULT_TIMEOUT_SECONDS);
        Duration::from_secs(s.clamp(1, MAX_TIMEOUT_SECONDS))
    }
}

/// The webhooks of every configuration of `plural`, configurations by name.
fn webhooks(st: &RestState, plural: &str) -> Vec<Webhook> {
    if !st.configured.any(GROUP, plural) {
        return Vec::new();
    }
    let mut configs = cached_list(&st.cache, GROUP, plural, None);
    configs.sort_by(|a, b| object::meta_str(a, "name").cmp(&object::meta_str(b, "name")));
    configs
        .iter()
        .flat_map(|c| {
            let configuration = object::meta_str(c, "name").unwrap_or("").to_string();
            let hooks = c.get("webhooks").and_then(Value::as_array).cloned().unwrap_or_default();
            hooks.into_iter().map(move |spec| Webhook {
                name: spec.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                configuration: configuration.clone(),
                spec,
            })
        })
        .collect()
}

impl<'a> Review<'a> {
    /// Whether `w`'s selectors and rules take this write of `obj`, and as which resource:
    /// `Some(None)` the one requested; `Some(Some(t))` an equivalent resource the rules
    /// name ([`Target::equivalents`]), under `matchPolicy: Equivalent` (the default).
    fn rules_take(&self, w: &Webhook, obj: &Object) -> Option<Option<Target>> {
        if !self.namespace_selected(w.spec.get("namespaceSelector"), obj)
            || !self.object_selected(w.spec.get("objectSelector"), obj)
        {
            return None;
        }
        let rules = w.spec.get("rules").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        if self.rules_match(rules, obj) {
            return Some(None);
        }
        if w.str("matchPolicy") == "Exact" {
            return None;
        }
        self.target.equivalents().into_iter().find(|t| Review { target: t, ..*self }.rules_match(rules, obj)).map(Some)
    }

    /// This write as seen through `t`, an equivalent version: `obj` and the old object
    /// converted to it.
    pub(crate) async fn converted(&self, t: &Target, obj: &Object) -> Result<(Object, Option<Object>), ApiError> {
        let seen = crate::conversion::convert(self.st, self.target, obj, t.def).await?;
        let old = match self.old {
            Some(o) => Some(crate::conversion::convert(self.st, self.target, o, t.def).await?),
            None => None,
        };
        Ok((seen, old))
    }

    /// The review of this write as `t` (an equivalent version) with `old` at its version.
    pub(crate) fn through(&self, t: &'a Target, old: Option<&'a Object>) -> Review<'a> {
        Review { target: t, old, requested: Some(self.requested.unwrap_or(self.target)), ..*self }
    }

    /// kube's `matchConditions`: all true, or no webhook call.
    fn match_conditions(&self, w: &Webhook, obj: &Object) -> Result<bool, ApiError> {
        let conditions = w.spec.get("matchConditions").and_then(Value::as_array);
        let Some(conditions) = conditions.filter(|c| !c.is_empty()) else { return Ok(true) };
        let object = self.object_value(obj);
        let old = self.old.map(|o| Value::Object(o.clone())).unwrap_or(Value::Null);
        let request = self.request_value(obj);
        let vars = [("object", &object), ("oldObject", &old), ("request", &request)];
        let authorizer = self.authorizer(obj);
        let mut errors = Vec::new();
        for c in conditions {
            let expr = c.get("expression").and_then(Value::as_str).unwrap_or("");
            let result = compile_condition(expr)
                .map_err(|e| e.to_string())
                .and_then(|p| p.eval_native(&vars, &authorizer).map_err(|e| e.to_string()))
                .and_then(|v| match v {
                    kuorum_cel::Value::Bool(b) => Ok(b),
                    other => Err(format!("expected bool, got {}", kuorum_cel::type_name(&other))),
                });
            match result {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => errors.push(format!("expression '{expr}' resulted in error: {e}")),
            }
        }
        if errors.is_empty() || w.ignores_failures() {
            return Ok(errors.is_empty());
        }
        let why = if errors.len() == 1 { errors.remove(0) } else { format!("[{}]", errors.join(", ")) };
        let gr = kuorum_api::GroupResource { group: self.target.def.group, resource: self.target.def.plural };
        Err(ApiError::forbidden(gr, object::meta_str(obj, "name").unwrap_or(""), &why))
    }

    /// Whether any of `rules` (a webhook's `rules`, a policy's `resourceRules`) takes
    /// this write of `obj`: operations, groups, versions, resources with `*`, `res/sub`,
    /// `*/sub`, `res/*`, scope, and `resourceNames` where given.
    pub(crate) fn rules_match(&self, rules: &[Value], obj: &Object) -> bool {
        let t = self.target;
        let (group, version, resource) = (t.def.group, t.def.version, t.def.plural);
        let sub = t.subresource.as_deref().unwrap_or("");
        let namespace = t.namespace.as_deref().unwrap_or("");
        let has = |list: Option<&Value>, want: &str| {
            list.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|v| v == "*" || v == want)
        };
        rules.iter().any(|r| {
            let resources =
                r.get("resources").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
            let resource_ok = resources.clone().any(|res| {
                let (res, res_sub) = res.split_once('/').unwrap_or((res, ""));
                (res == "*" || res == resource) && (res_sub == "*" || res_sub == sub)
            });
            let scope_ok = match r.get("scope").and_then(Value::as_str).unwrap_or("*") {
                "Cluster" => namespace.is_empty(),
                "Namespaced" => !namespace.is_empty(),
                _ => true,
            };
            let names = r.get("resourceNames").and_then(Value::as_array).filter(|n| !n.is_empty());
            let name = object::meta_str(obj, "name").unwrap_or(t.name());
            let name_ok = names.is_none_or(|n| n.iter().any(|x| x.as_str() == Some(name)));
            has(r.get("operations"), self.operation)
                && has(r.get("apiGroups"), group)
                && has(r.get("apiVersions"), version)
                && resource_ok
                && scope_ok
                && name_ok
        })
    }

    /// The labels of the namespace `obj` is written in (a Namespace's own); `None` for
    /// other cluster-scoped objects.
    fn namespace_labels(&self, obj: &Object) -> Option<Option<Value>> {
        let t = self.target;
        let namespace = t.namespace.as_deref().unwrap_or("");
        if (t.def.group, t.def.plural) == ("", "namespaces") {
            Some(object::meta(obj).and_then(|m| m.get("labels")).cloned())
        } else if namespace.is_empty() {
            None
        } else {
            Some(
                cached(self.st, "", "namespaces", None, namespace)
                    .and_then(|n| object::meta(&n).and_then(|m| m.get("labels")).cloned()),
            )
        }
    }

    /// Whether `sel` (a `namespaceSelector`) takes this write; cluster-scoped objects
    /// other than Namespaces always match.
    pub(crate) fn namespace_selected(&self, sel: Option<&Value>, obj: &Object) -> bool {
        let Some(sel) = sel.filter(|s| s.is_object()) else { return true };
        match self.namespace_labels(obj) {
            Some(labels) => selector_matches(sel, labels.as_ref()),
            None => true,
        }
    }

    /// Whether `sel` (an `objectSelector`) takes the new or the old object.
    pub(crate) fn object_selected(&self, sel: Option<&Value>, obj: &Object) -> bool {
        let Some(sel) = sel.filter(|s| s.is_object()) else { return true };
        let labels = |o: &Object| object::meta(o).and_then(|m| m.get("labels")).cloned();
        selector_matches(sel, labels(obj).as_ref())
            || self.old.is_some_and(|o| selector_matches(sel, labels(o).as_ref()))
    }

    /// The `request` CEL expressions see: the AdmissionRequest without the objects.
    pub(crate) fn request_value(&self, obj: &Object) -> Value {
        let mut request = self.review("", obj)["request"].take();
        if let Some(r) = request.as_object_mut() {
            r.remove("object");
            r.remove("oldObject");
            r.remove("uid");
        }
        request
    }

    /// CEL's `authorizer` and `authorizer.requestResource` for this write of `obj`: the
    /// server's authorizer for the requester, and a check of the resource reviewed.
    pub(crate) fn authorizer(&self, obj: &Object) -> [(&'static str, kuorum_cel::Value); 2] {
        use kuorum_cel::library::authz;
        let t = self.target;
        let requester = self.user.cloned().unwrap_or_else(UserInfo::anonymous);
        let inner =
            crate::authz::CelAuthorizer { cache: self.st.cache.clone(), mode: self.st.authorization, requester };
        let request = authz::Check {
            group: t.def.group.to_string(),
            resource: t.def.plural.to_string(),
            subresource: t.subresource.clone().unwrap_or_default(),
            namespace: t.namespace.clone().unwrap_or_default(),
            name: object::meta_str(obj, "name").unwrap_or(t.name()).to_string(),
            ..authz::Check::default()
        };
        authz::variables(std::sync::Arc::new(inner), request)
    }

    /// `obj` as reviews and expressions see the new object: none on a delete, whose
    /// object is the old one.
    pub(crate) fn object_value(&self, obj: &Object) -> Value {
        match self.operation {
            "DELETE" => Value::Null,
            _ => Value::Object(obj.clone()),
        }
    }

    /// The `AdmissionReview` sent for `obj`.
    fn review(&self, uid: &str, obj: &Object) -> Value {
        let t = self.target;
        let d = t.def;
        let kind = json!({"group": d.group, "version": d.version, "kind": d.kind});
        let resource = json!({"group": d.group, "version": d.version, "resource": d.plural});
        let asked = self.requested.map_or(d, |r| r.def);
        let request_kind = json!({"group": asked.group, "version": asked.version, "kind": asked.kind});
        let request_resource = json!({"group": asked.group, "version": asked.version, "resource": asked.plural});
        let mut request = json!({
            "uid": uid,
            "kind": kind, "resource": resource, "requestKind": request_kind, "requestResource": request_resource,
            "name": object::meta_str(obj, "name").unwrap_or(t.name()),
            "operation": self.operation,
            "object": self.object_value(obj),
            "oldObject": self.old,
            "dryRun": self.dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1",
                        "kind": match self.operation {
                            "CREATE" => "CreateOptions",
                            "DELETE" => "DeleteOptions",
                            _ => "UpdateOptions",
                        }},
        });
        if let Some(ns) = &t.namespace {
            request["namespace"] = json!(ns);
        }
        if let Some(sub) = &t.subresource {
            request["subResource"] = json!(sub);
            request["requestSubResource"] = json!(sub);
        }
        if let Some(u) = self.user {
            request["userInfo"] = json!({"username": u.name, "uid": u.uid, "groups": u.groups});
        }
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
    }

    /// Calls `w` about `obj`: its answer's `response`, or why the call failed.
    async fn call(&self, w: &Webhook, obj: &Object) -> Result<Map<String, Value>, String> {
        let uid = kuorum_api::seams::new_uid(&*self.st.entropy);
        let body = serde_json::to_vec(&self.review(&uid, obj)).map_err(|e| e.to_string())?;
        let (client, url) = client_for(self.st, &w.spec, w.timeout())?;
        let url = format!("{url}{}timeout={}s", if url.contains('?') { '&' } else { '?' }, w.timeout().as_secs());
        let v = post_json(&client, &url, body).await.map_err(|e| match e {
            PostError::Invalid(e) => format!("received invalid webhook response: {e}"),
            other => format!("failed to call webhook: {other}"),
        })?;
        let response = v.get("response").and_then(Value::as_object).cloned().ok_or("webhook response was absent")?;
        let got = response.get("uid").and_then(Value::as_str).unwrap_or("");
        if got != uid {
            return Err(format!("expected response.uid={uid:?}, got {got:?}"));
        }
        Ok(response)
    }

    fn side_effects_refuse_dry_run(&self, w: &Webhook) -> Option<ApiError> {
        (self.dry_run && !matches!(w.str("sideEffects"), "None" | "NoneOnDryRun")).then(|| {
            ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run: it may have side effects",
                w.name
            ))
        })
    }
}

/// The variables a webhook's match condition sees, all of any type.
const CONDITION_VARIABLES: [&str; 4] = ["object", "oldObject", "request", kuorum_cel::library::authz::VARIABLE];

/// A match condition compiled: any cost when written, bounded per call when run
/// ([`kuorum_cel::PER_CALL_LIMIT`], over the values it is given).
pub(crate) fn compile_condition(expr: &str) -> Result<std::sync::Arc<kuorum_cel::Program>, kuorum_cel::CompileError> {
    kuorum_cel::compile_any(expr, &CONDITION_VARIABLES)
}

/// kube's answer for a webhook call that failed under `failurePolicy: Fail`.
fn call_failed(name: &str, why: &str) -> ApiError {
    ApiError::new(Reason::InternalError, format!("Internal error occurred: failed calling webhook {name:?}: {why}"))
}

/// kube's `ToStatusErr`: a refusal as the webhook's Status, worded by kube.
fn denied(name: &str, response: &Map<String, Value>) -> ApiError {
    let status = response.get("status").cloned().unwrap_or(Value::Null);
    let code = status.get("code").and_then(Value::as_u64).unwrap_or(0).max(400) as u16;
    let by = format!("admission webhook {name:?} denied the request");
    let message = match (status.get("message").and_then(Value::as_str), status.get("reason").and_then(Value::as_str)) {
        (Some(m), _) if !m.is_empty() => format!("{by}: {m}"),
        (_, Some(r)) if !r.is_empty() => format!("{by}: {r}"),
        _ => format!("{by} without explanation"),
    };
    let reason = match code {
        401 => Reason::Unauthorized,
        403 => Reason::Forbidden,
        404 => Reason::NotFound,
        409 => Reason::Conflict,
        422 => Reason::Invalid,
        429 => Reason::TooManyRequests,
        c if c >= 500 => Reason::InternalError,
        _ => Reason::BadRequest,
    };
    let mut e = ApiError::new(reason, message);
    e.code = code.min(599);
    e
}

/// Writes a webhook's `auditAnnotations` to the request's audit event, each key prefixed
/// with the webhook's name, as kube does; one that does not make a qualified name is left
/// out (kube logs and drops it).
fn annotate_audit(name: &str, response: &Map<String, Value>) {
    let Some(given) = response.get("auditAnnotations").and_then(Value::as_object) else { return };
    for (key, value) in given {
        let Some(value) = value.as_str() else { continue };
        let key = format!("{name}/{key}");
        if kuorum_api::validation::is_qualified_name(&key).is_empty() {
            crate::audit::annotate(&key, value);
        }
    }
}

fn warnings_of(response: &Map<String, Value>) -> Vec<String> {
    response
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect()
}

/// The mutating webhooks, in turn, on `obj`. Answers their warnings.
///
/// `reinvocationPolicy: IfNeeded`: a webhook that ran and whose result a later webhook
/// changed is called once more, after the others, in order (kube's reinvocation; kuorum's
/// own mutating plugins and MutatingAdmissionPolicies run before the webhooks, so only a
/// webhook can change the object after one).
pub(crate) async fn mutate(r: &Review<'_>, obj: &mut Object) -> Result<Vec<String>, ApiError> {
    let mut warnings = Vec::new();
    let hooks = webhooks(r.st, "mutatingwebhookconfigurations");
    // Each IfNeeded webhook that ran, with the object as it left it.
    let mut ran: Vec<(usize, Object)> = Vec::new();
    for (i, w) in hooks.iter().enumerate() {
        if let Some(mutated) = mutate_once(r, w, Place { round: 0, index: i }, obj, &mut warnings).await? {
            annotate_mutation(0, i, w, mutated);
            if w.str("reinvocationPolicy") == "IfNeeded" {
                ran.push((i, obj.clone()));
            }
        }
    }
    for (i, left) in ran {
        if &left != obj {
            if let Some(mutated) = mutate_once(r, &hooks[i], Place { round: 1, index: i }, obj, &mut warnings).await? {
                annotate_mutation(1, i, &hooks[i], mutated);
            }
        }
    }
    Ok(warnings)
}

/// kube's audit annotation of a mutating webhook's patch once applied, kept only at the
/// `Request` level and above (it holds request data): the configuration, the webhook and
/// the JSON patch.
fn annotate_patch(place: Place, w: &Webhook, patch: &[u8]) {
    let Ok(ops) = serde_json::from_slice::<Value>(patch) else { return };
    if ops.as_array().is_none_or(Vec::is_empty) {
        return;
    }
    let value = json!({"configuration": w.configuration, "webhook": w.name, "patch": ops, "patchType": "JSONPatch"});
    crate::audit::annotate_at(
        crate::audit::Level::Request,
        &format!("patch.webhook.admission.k8s.io/round_{}_index_{}", place.round, place.index),
        value.to_string(),
    );
}

/// Where a mutating webhook's call is: its round (1 for a reinvocation) and its place
/// among all mutating webhooks, as kube's audit annotations name it.
#[derive(Clone, Copy)]
struct Place {
    round: usize,
    index: usize,
}

/// kube's audit annotation of a webhook call that failed and was ignored
/// (`failurePolicy: Ignore`): the webhook's name under `failed-open.<kind>.webhook...`.
fn annotate_failed_open(kind: &str, place: Place, w: &Webhook) {
    crate::audit::annotate(
        &format!("failed-open.{kind}.webhook.admission.k8s.io/round_{}_index_{}", place.round, place.index),
        w.name.clone(),
    );
}

/// kube's audit annotation of each mutating webhook called: in which round (1 for a
/// reinvocation) and at which place among all mutating webhooks, and whether it changed
/// the object.
fn annotate_mutation(round: usize, index: usize, w: &Webhook, mutated: bool) {
    let value = json!({"configuration": w.configuration, "webhook": w.name, "mutated": mutated});
    crate::audit::annotate(
        &format!("mutation.webhook.admission.k8s.io/round_{round}_index_{index}"),
        value.to_string(),
    );
}

/// Calls `w` on `obj` if it matches and applies its patch: `None` when it was not called,
/// else whether it changed the object. A webhook that takes the write as an equivalent
/// version sees and patches the object at that version, converted back after.
async fn mutate_once(
    r: &Review<'_>,
    w: &Webhook,
    place: Place,
    obj: &mut Object,
    warnings: &mut Vec<String>,
) -> Result<Option<bool>, ApiError> {
    let Some(through) = r.rules_take(w, obj) else { return Ok(None) };
    let Some(t) = through else {
        if !r.match_conditions(w, obj)? {
            return Ok(None);
        }
        return mutate_call(r, w, place, obj, warnings).await.map(Some);
    };
    let (mut seen, old) = r.converted(&t, obj).await?;
    let view = r.through(&t, old.as_ref());
    if !view.match_conditions(w, &seen)? {
        return Ok(None);
    }
    let mutated = mutate_call(&view, w, place, &mut seen, warnings).await?;
    if mutated {
        *obj = crate::conversion::convert(r.st, &t, &seen, r.target.def).await?;
    }
    Ok(Some(mutated))
}

/// Calls `w`, which takes this write, on `obj` and applies its patch: whether that
/// changed the object.
async fn mutate_call(
    r: &Review<'_>,
    w: &Webhook,
    place: Place,
    obj: &mut Object,
    warnings: &mut Vec<String>,
) -> Result<bool, ApiError> {
    if let Some(e) = r.side_effects_refuse_dry_run(w) {
        return Err(e);
    }
    let response = match r.call(w, obj).await {
        Ok(resp) => resp,
        Err(_) if w.ignores_failures() => {
            annotate_failed_open("mutation", place, w);
            return Ok(false);
        }
        Err(why) => return Err(call_failed(&w.name, &why)),
    };
    warnings.extend(warnings_of(&response));
    annotate_audit(&w.name, &response);
    if response.get("allowed").and_then(Value::as_bool) != Some(true) {
        return Err(denied(&w.name, &response));
    }
    let Some(patch) = response.get("patch").and_then(Value::as_str) else { return Ok(false) };
    if r.operation == "DELETE" {
        // kube: a delete has no object to patch; an empty patch is no change.
        let ops = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Vec<Value>>(&bytes).ok());
        if ops.is_some_and(|ops| ops.is_empty()) {
            return Ok(false);
        }
        return Err(ApiError::internal(format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
            w.name
        )));
    }
    if response.get("patchType").and_then(Value::as_str) != Some("JSONPatch") {
        let e = "the response has a patch but no patchType JSONPatch";
        if w.ignores_failures() {
            annotate_failed_open("mutation", place, w);
            return Ok(false);
        }
        return Err(call_failed(&w.name, e));
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(patch).map_err(|e| e.to_string());
    let patched = bytes
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|bytes| kuorum_patch::json_patch(&Value::Object(obj.clone()), bytes).map_err(|e| format!("{e:?}")));
    match patched {
        Ok(Value::Object(p)) => {
            let mutated = p != *obj;
            *obj = p;
            annotate_patch(place, w, bytes.as_deref().unwrap_or_default());
            Ok(mutated)
        }
        Ok(_) | Err(_) if w.ignores_failures() => Ok(false),
        Ok(_) => Err(call_failed(&w.name, "the patch does not leave an object")),
        Err(e) => Err(call_failed(&w.name, &format!("the patch does not apply: {e}"))),
    }
}

/// The validating webhooks, all at once, on `obj`. Answers their warnings; the first
/// refusal (in the webhooks' order) is the answer.
pub(crate) async fn validate(r: &Review<'_>, obj: &Object) -> Result<Vec<String>, ApiError> {
    let mut taken = Vec::new();
    for (index, w) in webhooks(r.st, "validatingwebhookconfigurations").into_iter().enumerate() {
        if let Some(through) = r.rules_take(&w, obj) {
            taken.push(((w, index), through));
        }
    }
    if taken.is_empty() {
        return Ok(Vec::new());
    }
    // The objects each webhook sees: converted for one that takes an equivalent version.
    let mut seen = Vec::with_capacity(taken.len());
    for (_, through) in &taken {
        seen.push(match through {
            Some(t) => Some(r.converted(t, obj).await?),
            None => None,
        });
    }
    let mut matching = Vec::new();
    for (((w, index), through), seen) in taken.iter().zip(&seen) {
        let (view, o) = match (through, seen) {
            (Some(t), Some((o, old))) => (r.through(t, old.as_ref()), o),
            _ => (*r, obj),
        };
        if view.match_conditions(w, o)? {
            matching.push((w, *index, view, o));
        }
    }
    for (w, _, view, _) in &matching {
        if let Some(e) = view.side_effects_refuse_dry_run(w) {
            return Err(e);
        }
    }
    let answers = futures::future::join_all(matching.iter().map(|(w, _, view, o)| view.call(w, o))).await;
    let mut warnings = Vec::new();
    for ((w, index, _, _), answer) in matching.iter().zip(answers) {
        match answer {
            Ok(response) => {
                warnings.extend(warnings_of(&response));
                annotate_audit(&w.name, &response);
                if response.get("allowed").and_then(Value::as_bool) != Some(true) {
                    return Err(denied(&w.name, &response));
                }
            }
            Err(_) if w.ignores_failures() => annotate_failed_open("validating", Place { round: 0, index: *index }, w),
            Err(why) => return Err(call_failed(&w.name, &why)),
        }
    }
    Ok(warnings)
}

/// An HTTPS client for a webhook's `clientConfig` and the URL to post to.
fn client_for(st: &RestState, spec: &Value, timeout: Duration) -> Result<(reqwest::Client, String), String> {
    let config = spec.get("clientConfig").cloned().unwrap_or(Value::Null);
    service_client(st, &config, &format!("webhook {timeout:?}"), || {
        reqwest::Client::builder().timeout(timeout).connect_timeout(timeout)
    })
}

/// The most clients [`Clients`] keeps; past it, it starts over.
const MAX_CLIENTS: usize = 256;

/// The HTTPS clients of webhooks and extension servers, by what each was built from (its
/// options, `clientConfig` and the address dialled). A call reuses its client's pooled
/// connections, as kube-apiserver's webhook client manager does; a client built per call
/// would pay a TCP connect and a TLS handshake every time.
#[derive(Default)]
pub struct Clients(
    std::sync::Mutex<std::collections::HashMap<String, reqwest::Client>>,
    /// Keyed per process, so that no one can make two bundles' hashes collide.
    std::collections::hash_map::RandomState,
);

/// A client for `config` (a webhook's `clientConfig`: `url` or `service`, and
/// `caBundle`) built by `builder` (whose options `options` names, for the cache), and the
/// URL to call.
pub(crate) fn service_client(
    st: &RestState,
    config: &Value,
    options: &str,
    builder: impl FnOnce() -> reqwest::ClientBuilder,
) -> Result<(reqwest::Client, String), String> {
    let (url, resolve) = if let Some(url) = config.get("url").and_then(Value::as_str) {
        (url.to_string(), None)
    } else if let Some(service) = config.get("service") {
        let s = |f: &str| service.get(f).and_then(Value::as_str).unwrap_or("");
        let (namespace, name, path) = (s("namespace"), s("name"), s("path"));
        let port = service.get("port").and_then(Value::as_u64).unwrap_or(443);
        let (ip, target) = endpoint(st, namespace, name, port)
            .ok_or_else(|| format!("service \"{namespace}/{name}\" has no endpoints on port {port}"))?;
        let host = format!("{name}.{namespace}.svc");
        let url = format!("https://{host}:{target}{path}");
        (url, Some((host, std::net::SocketAddr::new(ip, target))))
    } else {
        return Err("the clientConfig names neither url nor service".into());
    };
    let ca = config.get("caBundle").and_then(Value::as_str).unwrap_or("");
    // The CA by its hash: a bundle may be large, and the key is kept.
    let ca_hash = {
        use std::hash::{BuildHasher, Hasher};
        let mut h = st.clients.1.build_hasher();
        h.write(ca.as_bytes());
        h.finish()
    };
    let key = format!("{options}|{resolve:?}|{ca_hash:x}");
    if let Some(client) = st.clients.0.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok((client.clone(), url));
    }
    let mut builder = builder().use_rustls_tls();
    if !ca.is_empty() {
        let pem = base64::engine::general_purpose::STANDARD.decode(ca).map_err(|e| format!("caBundle: {e}"))?;
        for cert in reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| format!("caBundle: {e}"))? {
            builder = builder.add_root_certificate(cert);
        }
    }
    if let Some((host, addr)) = resolve {
        builder = builder.resolve(&host, addr);
    }
    let client = builder.build().map_err(|e| e.to_string())?;
    let mut clients = st.clients.0.lock().unwrap_or_else(|e| e.into_inner());
    if clients.len() >= MAX_CLIENTS {
        clients.clear();
    }
    clients.insert(key, client.clone());
    Ok((client, url))
}

/// The address of a Service in `--webhook-service-map`, else the first address of its
/// Endpoints and the port serving its `port`: the
/// Service's port of that number (its `targetPort`, by number or by name) matched to the
/// Endpoints' ports, else that number itself.
fn endpoint(st: &RestState, namespace: &str, name: &str, port: u64) -> Option<(std::net::IpAddr, u16)> {
    if let Some(addr) = st.service_map.get(&(namespace.to_string(), name.to_string())) {
        return Some((addr.ip(), addr.port()));
    }
    let endpoints = cached(st, "", "endpoints", Some(namespace), name)?;
    let service = cached(st, "", "services", Some(namespace), name);
    let service_port = service
        .as_ref()
        .and_then(|s| s.get("spec"))
        .and_then(|s| s.get("ports"))
        .and_then(Value::as_array)
        .and_then(|ports| ports.iter().find(|p| p.get("port").and_then(Value::as_u64) == Some(port)).cloned());
    let port_name = service_port.as_ref().and_then(|p| p.get("name")).and_then(Value::as_str).unwrap_or("");
    let target = service_port.as_ref().and_then(|p| p.get("targetPort")).and_then(Value::as_u64).unwrap_or(port);
    for subset in endpoints.get("subsets").and_then(Value::as_array).into_iter().flatten() {
        let ip = subset
            .get("addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.get("ip").and_then(Value::as_str))
            .find_map(|ip| ip.parse().ok());
        let ports = subset.get("ports").and_then(Value::as_array).cloned().unwrap_or_default();
        let chosen = ports
            .iter()
            .find(|p| !port_name.is_empty() && p.get("name").and_then(Value::as_str) == Some(port_name))
            .or_else(|| ports.iter().find(|p| p.get("port").and_then(Value::as_u64) == Some(target)))
            .or(ports.first())
            .and_then(|p| p.get("port").and_then(Value::as_u64));
        if let (Some(ip), Some(p)) = (ip, chosen) {
            return Some((ip, u16::try_from(p).ok()?));
        }
    }
    None
}

/// Why a [`post_json`] failed.
pub(crate) enum PostError {
    /// The request did not complete: `Post "url": why`.
    Transport(String),
    /// The server answered this non-2xx status.
    Status(u16),
    /// The answer is not JSON.
    Invalid(String),
}

impl std::fmt::Display for PostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PostError::Transport(e) | PostError::Invalid(e) => f.write_str(e),
            PostError::Status(code) => write!(f, "the server responded with the status code {code}"),
        }
    }
}

/// Posts `body` (JSON) to `url` and parses the answer, read a chunk at a time so that an
/// answer without a length is bounded too (at most the body limit).
pub(crate) async fn post_json(client: &reqwest::Client, url: &str, body: Vec<u8>) -> Result<Value, PostError> {
    let failed = |e: &dyn std::fmt::Display| PostError::Transport(format!("Post {url:?}: {e}"));
    let mut resp = client
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| failed(&error_chain(&e)))?;
    let status = resp.status();
    let mut bytes = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| failed(&error_chain(&e)))? {
        if bytes.len() + chunk.len() > MAX_REVIEW_BYTES {
            return Err(failed(&"the response is larger than the body limit"));
        }
        bytes.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        return Err(PostError::Status(status.as_u16()));
    }
    serde_json::from_slice(&bytes).map_err(|e| PostError::Invalid(e.to_string()))
}

/// An error with its sources, as Go prints a wrapped error.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_worded_as_kube_words_them() {
        let r = |v: Value| v.as_object().unwrap().clone();
        let e = denied("deny.example.com", &r(json!({"allowed": false, "status": {"code": 403, "message": "no"}})));
        assert_eq!(
            (e.code, e.message.as_str()),
            (403, r#"admission webhook "deny.example.com" denied the request: no"#)
        );
        let e = denied("w", &r(json!({"allowed": false})));
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, r#"admission webhook "w" denied the request without explanation"#)
        );
        let e = denied("w", &r(json!({"allowed": false, "status": {"code": 200, "reason": "Nope"}})));
        assert_eq!((e.code, e.message.as_str()), (400, r#"admission webhook "w" denied the request: Nope"#));
    }
}
