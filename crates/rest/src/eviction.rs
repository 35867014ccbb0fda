//! Owns evicting a pod: `POST .../pods/{name}/eviction` with a policy/v1 Eviction, which
//! deletes the pod unless that would break its PodDisruptionBudget, as kube-apiserver's
//! `EvictionREST` decides (pkg/registry/core/pod/storage/eviction.go). The answer is `201`
//! with a `Success` Status; nothing of the Eviction is stored.
//!
//! 1. The Eviction names the URL's pod; its `deleteOptions` (preconditions, `dryRun`,
//!    merged with the query's, which must agree) are the delete's.
//! 2. A pod that is `Succeeded`, `Failed`, `Pending` or being deleted is deleted without
//!    looking at budgets (kube's `canIgnorePDB`); a live one on condition of the version
//!    read (unless the client gave one), redone while it moves on.
//! 3. Otherwise the budgets of its namespace whose selector matches the pod decide: none,
//!    delete; two or more, 500; one whose controller has not seen its spec yet, 429. A pod
//!    that is not Ready is deleted without spending the budget when the budget says
//!    `AlwaysAllow`, or when the application is healthy anyway (`currentHealthy >=
//!    desiredHealthy > 0`), on condition of the version read (a pod that became Ready
//!    meanwhile is 429). Else `status.disruptionsAllowed` must be positive (0: 429 with a
//!    `DisruptionBudget` cause; negative or too many `disruptedPods`: 403); it is
//!    decremented and the pod recorded in `status.disruptedPods`, on condition of the
//!    budget's version, redone from a fresh read while the budget moves on; then the pod
//!    is deleted.
//! 4. Before deleting (not in a dry run) the pod gets the `DisruptionTarget` condition,
//!    written as the pod's strategy says, and the delete is on the version that wrote.

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::Response;
use kuorum_api::kinds::common::selector_matches;
use kuorum_api::status::{Cause, Details};
use kuorum_api::{registry, ApiError, GroupResource, Reason};
use kuorum_store::keys::collection_prefix;
use kuorum_store::{Command, Precondition, WriteError};
use kuorum_watch::WatchFilter;
use serde_json::{json, Map, Value};

use crate::answered::created_success;
use crate::consistency::{read_for_write, wait_fresh, Freshness};
use crate::error::{cluster_error, write_error};
use crate::negotiate;
use crate::object::{self, BodyFormat, Object};
use crate::pod_binding::{check_body, pod_strategy, pod_target};
use crate::query::Query;
use crate::strategy;
use crate::target::{Ctx, Target};
use crate::RestState;

/// How often a step is redone when what it read moved on (kube's `EvictionsRetry`: 20).
const MAX_ATTEMPTS: usize = 20;

/// kube's `MaxDisruptedPodSize`: past this many evictions the budget's controller has not
/// confirmed, evictions under that budget are refused.
const MAX_DISRUPTED_PODS: usize = 2000;

const VIOLATES_BUDGET: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

const MORE_THAN_ONE_BUDGET: &str =
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

/// What the 403s about a budget name (kube's `policy.Resource("poddisruptionbudget")`).
const BUDGET_RESOURCE: GroupResource<'static> = GroupResource { group: "policy", resource: "poddisruptionbudget" };

/// The delete an Eviction asks for: its `deleteOptions` as given (for the delete to read),
/// and the preconditions and dry run kuorum acts on before.
#[derive(Debug, Clone, Default, PartialEq)]
struct DeleteOptions {
    body: Map<String, Value>,
    uid: Option<String>,
    resource_version: Option<String>,
    dry_run: bool,
}

impl DeleteOptions {
    /// The options with the resourceVersion precondition `rv`.
    fn with_rv(&self, rv: &str) -> DeleteOptions {
        DeleteOptions { resource_version: Some(rv.to_string()), ..self.clone() }
    }

    /// The DeleteOptions body the delete reads.
    fn to_body(&self) -> Vec<u8> {
        let mut body = self.body.clone();
        let mut pre = Map::new();
        if let Some(uid) = &self.uid {
            pre.insert("uid".into(), Value::from(uid.as_str()));
        }
        if let Some(rv) = &self.resource_version {
            pre.insert("resourceVersion".into(), Value::from(rv.as_str()));
        }
        body.insert("preconditions".into(), Value::Object(pre));
        body.insert("dryRun".into(), if self.dry_run { json!(["All"]) } else { json!([]) });
        serde_json::to_vec(&body).unwrap_or_default()
    }
}

/// kube's `propagateDryRun`: the body's `deleteOptions` with the query's `dryRun` when it
/// has none; both given must agree (400).
fn delete_options(eviction: &Object, query: &Query) -> Result<DeleteOptions, ApiError> {
    let body = match eviction.get("deleteOptions") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(o)) => o.clone(),
        Some(_) => return Err(ApiError::bad_request("deleteOptions must be an object")),
    };
    let strings = |v: Option<&Value>, what: &str| -> Result<Vec<String>, ApiError> {
        match v {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(vs)) => vs
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| ApiError::bad_request(format!("{what} must be a list of strings"))),
            Some(_) => Err(ApiError::bad_request(format!("{what} must be a list of strings"))),
        }
    };
    let in_body = strings(body.get("dryRun"), "deleteOptions.dryRun")?;
    let in_query: Vec<String> = query.get_all("dryRun").map(str::to_string).collect();
    if !in_body.is_empty() && !in_query.is_empty() && in_body != in_query {
        return Err(ApiError::bad_request(format!(
            "Non-matching dry-run options in request and content: [{}] and [{}]",
            in_query.join(" "),
            in_body.join(" ")
        )));
    }
    let dry = if in_body.is_empty() { in_query } else { in_body };
    let dry_run = object::dry_run(dry.iter().map(String::as_str))?;
    let pre = match body.get("preconditions") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p.clone(),
        Some(_) => return Err(ApiError::bad_request("deleteOptions.preconditions must be an object")),
    };
    let precondition = |field: &str| -> Result<Option<String>, ApiError> {
        match pre.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::bad_request(format!("deleteOptions.preconditions.{field} must be a string"))),
        }
    };
    let resource_version = precondition("resourceVersion")?;
    object::parse_rv(resource_version.as_deref())?;
    Ok(DeleteOptions { body, uid: precondition("uid")?, resource_version, dry_run })
}

/// POST of an Eviction to a pod's `eviction` subresource.
pub(crate) async fn evict(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    // Decode.
    let t = &ctx.target;
    let format = BodyFormat::of(&ctx.headers)?;
    let body = negotiate::read_body(&ctx.headers, ctx.body).await?;
    let mut eviction = object::decode_body(format, body).await?;
    check_body(&mut eviction, "policy/v1", "Eviction", t.namespace.as_deref())?;
    if object::meta_str(&eviction, "name") != t.name.as_deref() {
        return Err(ApiError::bad_request("name in URL does not match name in Eviction object"));
    }
    let opts = delete_options(&eviction, &ctx.query)?;
    // The time the pod's DisruptionTarget condition changes: the eviction's creation.
    object::meta_mut(&mut eviction).insert("creationTimestamp".into(), Value::from(st.clock.now_rfc3339()));
    let pod_t = pod_target(t.namespace.clone(), t.name())?;
    crate::admission::validate_eviction(st, ctx.user.as_ref(), &pod_t)?;
    let e = Evicting { st, pod: &pod_t, eviction: &eviction, user: ctx.user.as_ref() };

    // A pod that disrupts nothing any more (or not yet) goes at once.
    let retry = opts.resource_version.is_none();
    let mut pod = None;
    for attempt in 1..=MAX_ATTEMPTS {
        let current = e.read_pod(attempt).await?;
        if !can_ignore_budgets(&current) {
            pod = Some(current);
            break;
        }
        let options = match &opts.resource_version {
            None if enforce_version(&current) => {
                opts.with_rv(object::meta_str(&current, "resourceVersion").unwrap_or(""))
            }
            _ => opts.clone(),
        };
        match e.mark_and_delete(&options).await {
            Ok(()) => return Ok(created_success()),
            Err(err) if retry && is_conflict(&err) && attempt < MAX_ATTEMPTS => continue,
            Err(err) => return Err(err),
        }
    }
    let Some(pod) = pod else { return Err(ApiError::conflict(pod_t.def.group_resource(), pod_t.name())) };

    // Its budgets decide.
    let budgets = e.budgets_of(&pod).await?;
    let mut budget_name = String::new();
    let mut on_read_version = false;
    match budgets.as_slice() {
        [] => {}
        [_, _, ..] => return Err(ApiError::new(Reason::InternalError, MORE_THAN_ONE_BUDGET)),
        [budget] => {
            budget_name = object::meta_str(budget, "name").unwrap_or("").to_string();
            if !is_ready(&pod) && unready_pod_may_go(budget) {
                on_read_version = true;
            } else {
                e.spend(budget, &budget_name, opts.dry_run).await?;
            }
        }
    }

    // Delete.
    let options = if on_read_version {
        opts.with_rv(object::meta_str(&pod, "resourceVersion").unwrap_or(""))
    } else {
        opts.clone()
    };
    match e.mark_and_delete(&options).await {
        Ok(()) => Ok(created_success()),
        // The pod moved on since it was found unready: it may be ready now.
        Err(err) if is_conflict(&err) && on_read_version && opts.resource_version.is_none() => {
            Err(still_processed(&budget_name))
        }
        Err(err) => Err(err),
    }
}

/// One eviction under way.
struct Evicting<'a> {
    st: &'a RestState,
    pod: &'a Target,
    eviction: &'a Object,
    user: Option<&'a crate::auth::UserInfo>,
}

impl Evicting<'_> {
    /// The pod as it is now (404 when there is none); after a read barrier, so that a
    /// client's preconditions are checked against the newest version.
    async fn read_pod(&self, attempt: usize) -> Result<Object, ApiError> {
        match read_for_write(self.st, &self.pod.key(), attempt + 1).await? {
            Some(bytes) => object::parse_stored(&bytes),
            None => Err(ApiError::not_found(self.pod.def.group_resource(), self.pod.name())),
        }
    }

    /// The budgets in the pod's namespace whose selector matches it (kube's
    /// `getPodDisruptionBudgets`: a budget without a selector matches nothing, one with an
    /// empty selector every pod).
    async fn budgets_of(&self, pod: &Object) -> Result<Vec<Object>, ApiError> {
        wait_fresh(self.st, Freshness::MostRecent).await?;
        let prefix = collection_prefix("policy", "poddisruptionbudgets", self.pod.namespace.as_deref());
        let labels = object::meta(pod).and_then(|m| m.get("labels"));
        let listed = self.st.cache.list(&WatchFilter::prefix(prefix), None, usize::MAX);
        let mut out = Vec::new();
        for item in listed.items {
            let Some(Value::Object(budget)) = item.value() else { continue };
            let selector = budget.get("spec").and_then(|s| s.get("selector")).filter(|s| s.is_object());
            if selector.is_some_and(|s| selector_matches(s, labels)) {
                out.push(budget.clone());
            }
        }
        Ok(out)
    }

    /// Spends one disruption of `budget` (kube's `checkAndDecrement`), from a fresh read
    /// while the budget moves on; in a dry run only checks.
    async fn spend(&self, budget: &Object, name: &str, dry_run: bool) -> Result<(), ApiError> {
        let pdbs = registry::lookup("policy", "v1", "poddisruptionbudgets")
            .ok_or_else(|| ApiError::internal("the registry has no policy/v1 poddisruptionbudgets"))?;
        let t = Target {
            def: pdbs,
            namespace: self.pod.namespace.clone(),
            name: Some(name.to_string()),
            subresource: Some("status".into()),
            custom: None,
        };
        let mut budget = budget.clone();
        for attempt in 1..=MAX_ATTEMPTS {
            if attempt > 1 {
                let Some(bytes) = read_for_write(self.st, &t.key(), attempt).await? else {
                    return Err(ApiError::not_found(pdbs.group_resource(), name));
                };
                budget = object::parse_stored(&bytes)?;
            }
            let now = self.st.clock.now_rfc3339();
            let spent = spend_one(&budget, self.pod.name(), &now)?;
            if dry_run {
                return Ok(());
            }
            let read_rv = object::parse_rv(object::meta_str(&budget, "resourceVersion"))?;
            let cmd = Command::Update {
                key: t.key(),
                object: strategy::stored(&t, &spent)?.into(),
                precondition: Precondition { resource_version: read_rv, uid: None },
                finalizing: t.finalizing(),
            };
            match self.st.cluster.write(cmd, self.st.request_timeout).await.map_err(cluster_error)? {
                Ok(_) => return Ok(()),
                Err(WriteError::Conflict) => continue,
                Err(e) => return Err(write_error(e, pdbs, name)),
            }
        }
        Err(ApiError::timeout(&format!("couldn't update PodDisruptionBudget {name:?} due to conflicts"), 10))
    }

    /// kube's `addConditionAndDeletePod`: outside a dry run the pod gets the
    /// `DisruptionTarget` condition first (checked against the client's preconditions,
    /// 409 on a mismatch), and the delete's resourceVersion precondition, if any, becomes
    /// the version that wrote it. Then the pod is deleted with `options`.
    async fn mark_and_delete(&self, options: &DeleteOptions) -> Result<(), ApiError> {
        let mut options = options.clone();
        if !options.dry_run {
            let written_rv = self.mark(&options).await?;
            if options.resource_version.is_some() {
                options.resource_version = Some(written_rv);
            }
        }
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let ctx = Ctx {
            target: self.pod.clone(),
            query: Query::default(),
            headers,
            body: Body::from(options.to_body()),
            user: self.user.cloned(),
            extra: Default::default(),
        };
        crate::delete::delete(self.st, ctx).await.map(|_| ())
    }

    /// Writes the `DisruptionTarget` condition to the newest pod; answers the version
    /// written.
    async fn mark(&self, options: &DeleteOptions) -> Result<String, ApiError> {
        let kind = pod_strategy(self.pod)?;
        let name = self.pod.name();
        // kube's conflicts here name the kind, capitalised.
        let pod_gr = GroupResource { group: "", resource: "Pod" };
        for attempt in 1..=MAX_ATTEMPTS {
            let latest = self.read_pod(attempt).await?;
            let rv = object::meta_str(&latest, "resourceVersion").unwrap_or("").to_string();
            if let Some(uid) = &options.uid {
                let actual = object::meta_str(&latest, "uid").unwrap_or("");
                if uid != actual {
                    let why = format!(
                        "the UID in the precondition ({uid}) does not match the UID in record ({actual}). The object might have been deleted and then recreated"
                    );
                    return Err(ApiError::conflict_because(pod_gr, name, &why));
                }
            }
            if let Some(wanted) = options.resource_version.as_ref().filter(|w| **w != rv) {
                let why = format!(
                    "the ResourceVersion in the precondition ({wanted}) does not match the ResourceVersion in record ({rv}). The object might have been modified"
                );
                return Err(ApiError::conflict_because(pod_gr, name, &why));
            }
            let Some(marked) = kind.write_subresource("eviction", &latest, self.eviction) else {
                return Err(ApiError::internal("pods have no eviction subresource"));
            };
            let cmd = Command::Update {
                key: self.pod.key(),
                object: strategy::stored(self.pod, &marked)?.into(),
                precondition: Precondition { resource_version: object::parse_rv(Some(&rv))?, uid: None },
                finalizing: self.pod.finalizing(),
            };
            match self.st.cluster.write(cmd, self.st.request_timeout).await.map_err(cluster_error)? {
                Ok(stored) => {
                    let stored = object::parse_stored(&stored)?;
                    return Ok(object::meta_str(&stored, "resourceVersion").unwrap_or("").to_string());
                }
                Err(WriteError::Conflict | WriteError::NotFound) => continue,
                Err(e) => return Err(write_error(e, self.pod.def, name)),
            }
        }
        Err(ApiError::conflict(self.pod.def.group_resource(), name))
    }
}

/// `budget` with one disruption spent on `pod` at `now`, or why not (kube's
/// `checkAndDecrement`).
fn spend_one(budget: &Object, pod: &str, now: &str) -> Result<Object, ApiError> {
    let name = object::meta_str(budget, "name").unwrap_or("");
    let status = budget.get("status");
    let int = |v: Option<&Value>, k: &str| v.and_then(|s| s.get(k)).and_then(Value::as_i64).unwrap_or(0);
    let generation = object::meta(budget).and_then(|m| m.get("generation")).and_then(Value::as_i64).unwrap_or(0);
    if int(status, "observedGeneration") < generation {
        return Err(still_processed(name));
    }
    let allowed = int(status, "disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::forbidden(BUDGET_RESOURCE, name, "pdb disruptions allowed is negative"));
    }
    let disrupted = status.and_then(|s| s.get("disruptedPods")).and_then(Value::as_object).map_or(0, Map::len);
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(ApiError::forbidden(
            BUDGET_RESOURCE,
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        let why = format!(
            "The disruption budget {name} needs {} healthy pods and has {} currently",
            int(status, "desiredHealthy"),
            int(status, "currentHealthy")
        );
        return Err(budget_violated(why, 0));
    }
    let mut out = budget.clone();
    let status = out.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let Some(status) = status.as_object_mut() else { unreachable!("made an object above") };
    status.insert("disruptionsAllowed".into(), Value::from(allowed - 1));
    if allowed == 1 {
        set_disruption_allowed_false(status, now);
    }
    let pods = status.entry("disruptedPods").or_insert_with(|| json!({}));
    if !pods.is_object() {
        *pods = json!({});
    }
    if let Some(pods) = pods.as_object_mut() {
        pods.insert(pod.to_string(), Value::from(now));
    }
    Ok(out)
}

/// kube's `UpdateDisruptionAllowedCondition` with no disruption left: `DisruptionAllowed`
/// false for `InsufficientPods` (apimachinery's `SetStatusCondition`: the transition time
/// changes only with the status).
fn set_disruption_allowed_false(status: &mut Map<String, Value>, now: &str) {
    let observed = status.get("observedGeneration").cloned().unwrap_or(json!(0));
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(conditions) = conditions.as_array_mut() else { return };
    let existing = conditions.iter_mut().find(|c| c.get("type") == Some(&json!("DisruptionAllowed")));
    match existing.and_then(Value::as_object_mut) {
        Some(c) => {
            if c.get("status") != Some(&json!("False")) {
                c.insert("status".into(), json!("False"));
                c.insert("lastTransitionTime".into(), json!(now));
            }
            c.insert("reason".into(), json!("InsufficientPods"));
            c.insert("message".into(), json!(""));
            c.insert("observedGeneration".into(), observed);
        }
        None => conditions.push(json!({"type": "DisruptionAllowed", "status": "False", "observedGeneration": observed,
                                       "lastTransitionTime": now, "reason": "InsufficientPods", "message": ""})),
    }
}

/// 429 TooManyRequests with a `DisruptionBudget` cause saying `why`.
fn budget_violated(why: String, retry_after_seconds: u32) -> ApiError {
    let mut e = ApiError::new(Reason::TooManyRequests, VIOLATES_BUDGET);
    e.details = Some(Box::new(Details {
        causes: vec![Cause { reason: "DisruptionBudget".into(), message: why, field: String::new() }],
        retry_after_seconds,
        ..Details::default()
    }));
    e
}

/// kube's `createTooManyRequestsError`: the budget's controller has not caught up.
fn still_processed(name: &str) -> ApiError {
    budget_violated(format!("The disruption budget {name} is still being processed by the server."), 10)
}

fn is_conflict(e: &ApiError) -> bool {
    e.reason == Reason::Conflict
}

fn phase(pod: &Object) -> &str {
    pod.get("status").and_then(|s| s.get("phase")).and_then(Value::as_str).unwrap_or("")
}

fn deleting(pod: &Object) -> bool {
    object::meta(pod).and_then(|m| m.get("deletionTimestamp")).is_some_and(|d| !d.is_null())
}

/// kube's `canIgnorePDB`: a pod that is done, not started, or going anyway disrupts no
/// budget by going.
fn can_ignore_budgets(pod: &Object) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending") || deleting(pod)
}

/// kube's `shouldEnforceResourceVersion`: a pod that is not done and not going is deleted
/// on condition of the version read, lest it become ready (and count) in between.
fn enforce_version(pod: &Object) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && !deleting(pod)
}

/// kube's `IsPodReady`: its `Ready` condition is `True`.
fn is_ready(pod: &Object) -> bool {
    let conditions = pod.get("status").and_then(|s| s.get("conditions")).and_then(Value::as_array);
    conditions
        .into_iter()
        .flatten()
        .any(|c| c.get("type") == Some(&json!("Ready")) && c.get("status") == Some(&json!("True")))
}

/// Whether an unready pod under `budget` may go without spending it: the budget says
/// `AlwaysAllow`, or the application is healthy without the pod.
fn unready_pod_may_go(budget: &Object) -> bool {
    let policy = budget.get("spec").and_then(|s| s.get("unhealthyPodEvictionPolicy")).and_then(Value::as_str);
    if policy == Some("AlwaysAllow") {
        return true;
    }
    let int = |k: &str| budget.get("status").and_then(|s| s.get(k)).and_then(Value::as_i64).unwrap_or(0);
    int("currentHealthy") >= int("desiredHealthy") && int("desiredHealthy") > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        v.as_object().unwrap().clone()
    }

    fn budget(status: Value) -> Object {
        obj(json!({"metadata": {"name": "b", "generation": 1}, "spec": {}, "status": status}))
    }

    #[test]
    fn spending_decrements_and_records_the_pod() {
        let b = budget(json!({"observedGeneration": 1, "disruptionsAllowed": 2}));
        let out = spend_one(&b, "p", "2026-11-27T08:00:00Z").unwrap();
        assert_eq!(out["status"]["disruptionsAllowed"], 1);
        assert_eq!(out["status"]["disruptedPods"], json!({"p": "2026-11-27T08:00:00Z"}));
        assert!(out["status"].get("conditions").is_none(), "one left: the condition stays as it was");
        let out = spend_one(&out, "q", "2026-11-27T08:00:01Z").unwrap();
        assert_eq!(out["status"]["disruptionsAllowed"], 0);
        assert_eq!(out["status"]["disruptedPods"].as_object().unwrap().len(), 2);
        assert_eq!(
            out["status"]["conditions"],
            json!([{"type": "DisruptionAllowed", "status": "False", "observedGeneration": 1,
                    "lastTransitionTime": "2026-11-27T08:00:01Z", "reason": "InsufficientPods", "message": ""}])
        );
    }

    #[test]
    fn budgets_that_cannot_be_spent() {
        let e = spend_one(
            &budget(json!({"observedGeneration": 1, "disruptionsAllowed": 0, "desiredHealthy": 3,
                                          "currentHealthy": 3})),
            "p",
            "t",
        )
        .unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (429, VIOLATES_BUDGET));
        let cause = &e.details.as_ref().unwrap().causes[0];
        assert_eq!(cause.reason, "DisruptionBudget");
        assert_eq!(cause.message, "The disruption budget b needs 3 healthy pods and has 3 currently");
        let e = spend_one(&budget(json!({"observedGeneration": 0, "disruptionsAllowed": 5})), "p", "t").unwrap_err();
        assert_eq!(e.code, 429);
        assert_eq!(e.retry_after_seconds(), Some(10));
        let e = spend_one(&budget(json!({"observedGeneration": 1, "disruptionsAllowed": -1})), "p", "t").unwrap_err();
        assert_eq!(e.message, r#"poddisruptionbudget.policy "b" is forbidden: pdb disruptions allowed is negative"#);
        let many: Map<String, Value> = (0..=MAX_DISRUPTED_PODS).map(|i| (format!("p{i}"), json!("t"))).collect();
        let e = spend_one(
            &budget(json!({"observedGeneration": 1, "disruptionsAllowed": 1, "disruptedPods": many})),
            "p",
            "t",
        )
        .unwrap_err();
        assert_eq!(e.code, 403);
    }

    #[test]
    fn which_pods_skip_the_budgets() {
        let pod = |phase: &str, deleting: bool| {
            let mut p = obj(json!({"metadata": {}, "status": {"phase": phase}}));
            if deleting {
                object::meta_mut(&mut p).insert("deletionTimestamp".into(), json!("t"));
            }
            p
        };
        for (phase, skip, enforce) in
            [("Running", false, true), ("Pending", true, true), ("Succeeded", true, false), ("Failed", true, false)]
        {
            assert_eq!((can_ignore_budgets(&pod(phase, false)), enforce_version(&pod(phase, false))), (skip, enforce));
        }
        assert!(can_ignore_budgets(&pod("Running", true)));
        assert!(!enforce_version(&pod("Running", true)));
    }

    #[test]
    fn unready_pods_under_a_healthy_or_permissive_budget_go_free() {
        assert!(unready_pod_may_go(&obj(json!({"status": {"currentHealthy": 3, "desiredHealthy": 2}}))));
        assert!(!unready_pod_may_go(&obj(json!({"status": {"currentHealthy": 1, "desiredHealthy": 2}}))));
        assert!(!unready_pod_may_go(&obj(json!({"status": {"currentHealthy": 0, "desiredHealthy": 0}}))));
        assert!(unready_pod_may_go(&obj(json!({"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}, "status": {}}))));
        let ready = obj(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}));
        assert!(is_ready(&ready));
        assert!(!is_ready(&obj(json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}))));
    }

    #[test]
    fn delete_options_merge_the_query_dry_run() {
        let ev = |o: Value| obj(json!({"deleteOptions": o}));
        let q = |s: &str| Query::parse(Some(s));
        let o = delete_options(&ev(json!({"preconditions": {"uid": "u", "resourceVersion": "7"}})), &q("")).unwrap();
        assert_eq!((o.uid.as_deref(), o.resource_version.as_deref(), o.dry_run), (Some("u"), Some("7"), false));
        assert!(delete_options(&ev(json!(null)), &q("dryRun=All")).unwrap().dry_run);
        assert!(delete_options(&ev(json!({"dryRun": ["All"]})), &q("")).unwrap().dry_run);
        assert!(delete_options(&ev(json!({"dryRun": ["All"]})), &q("dryRun=All")).unwrap().dry_run);
        assert_eq!(delete_options(&ev(json!({"dryRun": ["All"]})), &q("dryRun=")).unwrap_err().code, 400);
        assert_eq!(delete_options(&ev(json!({"dryRun": ["Some"]})), &q("")).unwrap_err().code, 400);
        assert_eq!(
            delete_options(&ev(json!({"preconditions": {"resourceVersion": "x"}})), &q("")).unwrap_err().code,
            400
        );
        assert_eq!(delete_options(&ev(json!([])), &q("")).unwrap_err().code, 400);
        let body: Value = serde_json::from_slice(
            &delete_options(&ev(json!({"propagationPolicy": "Foreground"})), &q("")).unwrap().with_rv("9").to_body(),
        )
        .unwrap();
        assert_eq!(
            body,
            json!({"propagationPolicy": "Foreground", "preconditions": {"resourceVersion": "9"}, "dryRun": []})
        );
    }
}
