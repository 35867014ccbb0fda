//! `ResourceQuota`: a new object in a namespace must fit every ResourceQuota there that
//! tracks what it uses, and is charged to them before it is stored; so must what an update
//! adds (a Service becoming a NodePort or LoadBalancer, a claim asking for more storage,
//! a pod's resize), charged by how much it grows.
//!
//! - **What an object uses** ([`usage`], kube's evaluators): a pod its `pods` and
//!   `count/pods`, and unless finished (or past its grace) its requests and limits (`cpu`,
//!   `requests.cpu`, `limits.cpu`, the same for `memory` and `ephemeral-storage`; init
//!   containers by kube's max rule; `spec.overhead` added); a Service `services`,
//!   `services.loadbalancers`, `services.nodeports`; a PersistentVolumeClaim
//!   `persistentvolumeclaims`, `requests.storage` and the per-class ones; every object
//!   `count/<resource>[.<group>]` (and the legacy names of configmaps, secrets,
//!   replicationcontrollers and resourcequotas).
//! - **Which quotas:** those whose `status.hard` (what the quota controller,
//!   `kuorum-node`'s `quota_controller`, has taken from `spec.hard`) names a resource the
//!   object uses, and whose scopes match it. A quota not yet processed is skipped, as kube.
//! - **The check:** a pod that leaves a tracked compute resource unspecified is refused
//!   (`failed quota: q: must specify limits.cpu for: c`); one past `hard` is refused with
//!   `exceeded quota: q, requested: pods=1, used: pods=10, limited: pods=10` (403).
//! - **The charge:** each quota's `status.used` grows by the object's usage in one write on
//!   condition of the version read, so two nodes admitting the last slot at once meet in
//!   the log and one of them reads again and is refused. A dry run is checked, not
//!   charged. As in kube, a charge whose object is then not stored stays until the quota
//!   controller recomputes the usage.
//!
//! Amounts are thousandths (`i128`), as kube's `MilliValue`: sums and comparisons are exact.

use std::collections::BTreeMap;

use kuorum_api::ApiError;
use kuorum_store::keys::ObjectKey;
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::{json, Map, Value};

use super::cached_list;
use crate::error::cluster_error;
use crate::object::{self, Object};
use crate::target::Target;
use crate::RestState;

/// How often charging is redone when a quota moves on under it (kube retries 3 times, but
/// batches a node's evaluations; here a node charges one at a time, so only other nodes'
/// charges move a quota on, and each attempt after the first reads behind a barrier).
const ATTEMPTS: usize = 32;

/// Resource names and their amounts.
pub type Usage = BTreeMap<String, i128>;

const COMPUTE: &[&str] = &["cpu", "memory", "ephemeral-storage"];
/// The compute resources a pod must specify when a quota tracks them.
const REQUIRED: &[&str] = &["cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"];
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// Checks `obj`, a new object of `t` (or the update of `old`: what it uses more), against
/// its namespace's quotas and (unless a dry run) charges them.
///
/// The whole charge (waiting for this node's turn, the reads and writes it redoes) takes
/// at most the request timeout, then 504.
pub(crate) async fn charge(
    st: &RestState,
    t: &Target,
    obj: &Object,
    old: Option<&Object>,
    dry_run: bool,
) -> Result<(), ApiError> {
    if !st.configured.any("", "resourcequotas") {
        return Ok(());
    }
    match tokio::time::timeout(st.request_timeout, charge_within(st, t, obj, old, dry_run)).await {
        Ok(done) => done,
        Err(_) => {
            Err(ApiError::timeout("request did not complete within requested timeout - charging the resource quota", 0))
        }
    }
}

async fn charge_within(
    st: &RestState,
    t: &Target,
    obj: &Object,
    old: Option<&Object>,
    dry_run: bool,
) -> Result<(), ApiError> {
    let Some(namespace) = t.namespace.as_deref() else { return Ok(()) };
    let (group, plural) = (t.storage_def().group, t.storage_def().plural);
    // Of the subresources, only a pod's resize changes what an object uses (kube's pod
    // evaluator handles it; status writes are not charged).
    let charged = match t.subresource.as_deref() {
        None => true,
        Some("resize") => (group, plural) == ("", "pods"),
        Some(_) => false,
    };
    // Only these kinds use more after an update (kube's evaluators that handle updates);
    // counts of objects never change: an update of anything else costs nothing here.
    let grows_on_update = matches!((group, plural), ("", "services" | "persistentvolumeclaims" | "pods"));
    if !st.admission.on("ResourceQuota") || !charged || (old.is_some() && !grows_on_update) {
        return Ok(());
    }
    let now = st.clock.now_unix_seconds();
    let mut wanted = usage(group, plural, obj, now);
    if let Some(old) = old {
        // What the update adds; what it gives back is the quota controller's to count.
        let before = usage(group, plural, old, now);
        wanted = wanted
            .into_iter()
            .map(|(k, v)| {
                let was = before.get(&k).copied().unwrap_or(0);
                (k, v - was)
            })
            .filter(|(_, grows)| *grows > 0)
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
    }
    let mut held = None;
    for attempt in 1..=ATTEMPTS {
        if attempt > 1 {
            // Another node charged first: let it finish before reading again.
            let jitter = st.entropy.next_u64() % (2 * attempt as u64);
            tokio::time::sleep(std::time::Duration::from_millis(jitter)).await;
        }
        let quotas = if attempt == 1 {
            cached_list(&st.cache, "", "resourcequotas", Some(namespace))
        } else {
            crate::consistency::wait_fresh(st, crate::consistency::Freshness::MostRecent).await?;
            cached_list(&st.cache, "", "resourcequotas", Some(namespace))
        };
        let mut charges = Vec::new();
        for quota in &quotas {
            let hard = resource_list(quota.get("status").and_then(|s| s.get("hard")));
            if hard.is_empty() || !scopes_match(quota, group, plural, obj) {
                continue;
            }
            let tracked: Vec<&String> = hard.keys().filter(|k| counts_toward(group, plural, k)).collect();
            if tracked.is_empty() {
                continue;
            }
            let qname = object::meta_str(quota, "name").unwrap_or("");
            if (group, plural) == ("", "pods") {
                if let Some(missing) = unspecified(obj, &hard) {
                    return Err(forbidden(t, obj, &format!("failed quota: {qname}: must specify {missing}")));
                }
            }
            let used = resource_list(quota.get("status").and_then(|s| s.get("used")));
            let requested: Usage = wanted
                .iter()
                .filter(|(k, v)| hard.contains_key(*k) && **v != 0)
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            if requested.is_empty() {
                continue;
            }
            let unknown: Vec<&str> = requested.keys().filter(|k| !used.contains_key(*k)).map(String::as_str).collect();
            if !unknown.is_empty() {
                let why = format!("status unknown for quota: {qname}, resources: {}", unknown.join(","));
                return Err(forbidden(t, obj, &why));
            }
            let over: Vec<&String> = requested.keys().filter(|k| used[*k] + requested[*k] > hard[*k]).collect();
            if !over.is_empty() {
                let show = |from: &Usage| {
                    over.iter().map(|k| format!("{k}={}", format_amount(k, from[*k]))).collect::<Vec<_>>().join(",")
                };
                let why = format!(
                    "exceeded quota: {qname}, requested: {}, used: {}, limited: {}",
                    show(&requested),
                    show(&used),
                    show(&hard)
                );
                return Err(forbidden(t, obj, &why));
            }
            charges.push((quota, used, requested));
        }
        if dry_run || charges.is_empty() {
            return Ok(());
        }
        if held.is_none() {
            // Charge one at a time on this node; what was read may be stale once held.
            held = Some(st.quota_charging.lock().await);
            if attempt == 1 {
                continue;
            }
        }
        let mut moved_on = false;
        for (quota, used, requested) in charges {
            let mut q = quota.clone();
            let mut used = used;
            for (k, v) in requested {
                *used.entry(k).or_default() += v;
            }
            set_used(&mut q, &used);
            let name = object::meta_str(quota, "name").unwrap_or("");
            let key = ObjectKey { group: "", resource: "resourcequotas", namespace: Some(namespace), name }.encode();
            let rv = object::parse_rv(object::meta_str(quota, "resourceVersion"))?;
            let cmd = Command::Update {
                key,
                object: object::to_vec(&q).into(),
                precondition: Precondition { resource_version: rv, uid: None },
                finalizing: Default::default(),
            };
            match st.cluster.write(cmd, st.request_timeout).await.map_err(cluster_error)? {
                Ok(_) => {}
                Err(WriteError::Conflict | WriteError::NotFound) => {
                    moved_on = true;
                    break;
                }
                Err(e) => return Err(ApiError::internal(e)),
            }
        }
        if !moved_on {
            return Ok(());
        }
        // A quota moved on: what was charged before it stays charged (the controller
        // gives back what was not used); read again and charge what is left.
    }
    Err(ApiError::conflict(t.def.group_resource(), object::meta_str(obj, "name").unwrap_or("")))
}

fn forbidden(t: &Target, obj: &Object, why: &str) -> ApiError {
    ApiError::forbidden(t.def.group_resource(), object::meta_str(obj, "name").unwrap_or(""), why)
}

/// A ResourceList as amounts (what does not read is left out).
pub fn resource_list(v: Option<&Value>) -> Usage {
    v.and_then(Value::as_object).into_iter().flatten().filter_map(|(k, v)| amount(v).map(|a| (k.clone(), a))).collect()
}

/// A quantity in thousandths.
pub(crate) fn amount(v: &Value) -> Option<i128> {
    match v {
        Value::String(s) => kuorum_api::quantity::parse(s.trim()).ok().and_then(|q| q.milli()),
        Value::Number(n) => n.as_i64().map(|i| i128::from(i) * 1000),
        _ => None,
    }
}

/// One of something, in thousandths.
const ONE: i128 = 1000;

/// An amount (thousandths) of `resource` as a quantity: binary for bytes that are whole
/// KiB and up, milli for a fraction, else the whole number.
pub fn format_amount(resource: &str, milli: i128) -> String {
    let bytes = ["memory", "storage", "hugepages-"].iter().any(|b| resource.contains(b));
    let whole = milli / ONE;
    let text = if milli % ONE != 0 {
        format!("{milli}m")
    } else if bytes && whole >= 1024 && whole % 1024 == 0 {
        format!("{}Ki", whole / 1024)
    } else {
        format!("{whole}")
    };
    kuorum_api::quantity::parse(&text).map(|q| q.canonical()).unwrap_or(text)
}

/// Writes `used` as the quota's `status.used` (and `status.hard` as it is).
fn set_used(quota: &mut Object, used: &Usage) {
    let list: Map<String, Value> = used.iter().map(|(k, v)| (k.clone(), Value::from(format_amount(k, *v)))).collect();
    let status = quota.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    status.as_object_mut().expect("made an object above").insert("used".into(), Value::Object(list));
}

/// Whether the quota resource `key` is one an object of (group, plural) can use.
pub fn counts_toward(group: &str, plural: &str, key: &str) -> bool {
    if key == count_name(group, plural) {
        return true;
    }
    match (group, plural) {
        ("", "pods") => {
            key == "pods"
                || COMPUTE.iter().any(|r| key == *r || key == format!("requests.{r}") || key == format!("limits.{r}"))
                || key.starts_with("hugepages-")
                || key.starts_with("requests.hugepages-")
        }
        ("", "services") => matches!(key, "services" | "services.loadbalancers" | "services.nodeports"),
        ("", "persistentvolumeclaims") => {
            matches!(key, "persistentvolumeclaims" | "requests.storage")
                || key.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims")
                || key.ends_with(".storageclass.storage.k8s.io/requests.storage")
        }
        ("", "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas") => key == plural,
        _ => false,
    }
}

/// `count/<resource>` for the core group, `count/<resource>.<group>` otherwise.
fn count_name(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }
}

/// What `obj`, an object of (group, plural), uses at `now` (Unix seconds).
pub fn usage(group: &str, plural: &str, obj: &Object, now: i64) -> Usage {
    let mut u = Usage::new();
    u.insert(count_name(group, plural), ONE);
    match (group, plural) {
        ("", "pods") => pod_usage(obj, now, &mut u),
        ("", "services") => {
            u.insert("services".into(), ONE);
            let spec = obj.get("spec");
            let kind = spec.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("ClusterIP");
            let ports = spec.and_then(|s| s.get("ports")).and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            match kind {
                "LoadBalancer" => {
                    u.insert("services.loadbalancers".into(), ONE);
                    let allocate = spec.and_then(|s| s.get("allocateLoadBalancerNodePorts")).and_then(Value::as_bool);
                    let n = if allocate == Some(false) {
                        ports
                            .iter()
                            .filter(|p| p.get("nodePort").and_then(Value::as_i64).is_some_and(|n| n != 0))
                            .count()
                    } else {
                        ports.len()
                    };
                    u.insert("services.nodeports".into(), n as i128 * ONE);
                }
                "NodePort" => {
                    u.insert("services.nodeports".into(), ports.len() as i128 * ONE);
                }
                _ => {}
            }
        }
        ("", "persistentvolumeclaims") => {
            u.insert("persistentvolumeclaims".into(), ONE);
            let asked = amount(at(obj, "/spec/resources/requests/storage")).unwrap_or(0);
            let allocated = amount(at(obj, "/status/allocatedResources/storage")).unwrap_or(0);
            // Whole bytes, rounded up.
            let storage = (asked.max(allocated) + ONE - 1) / ONE * ONE;
            if storage > 0 {
                u.insert("requests.storage".into(), storage);
            }
            let class = at(obj, "/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
                .as_str()
                .or_else(|| at(obj, "/spec/storageClassName").as_str())
                .filter(|c| !c.is_empty());
            if let Some(class) = class {
                u.insert(format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"), ONE);
                if storage > 0 {
                    u.insert(format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"), storage);
                }
            }
        }
        ("", "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas") => {
            u.insert(plural.to_string(), ONE);
        }
        _ => {}
    }
    u
}

/// The value at a JSON pointer of `obj` (`Null` when absent).
fn at<'a>(obj: &'a Object, pointer: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    let (first, rest) =
        pointer.trim_start_matches('/').split_once('/').unwrap_or((pointer.trim_start_matches('/'), ""));
    let found = obj.get(first).and_then(|v| if rest.is_empty() { Some(v) } else { v.pointer(&format!("/{rest}")) });
    found.unwrap_or(&NULL)
}

/// kube's `QuotaV1Pod`: a pod counts for compute and `pods` unless it finished, or its
/// graceful deletion has run out.
fn pod_counts(pod: &Object, now: i64) -> bool {
    let phase = at(pod, "/status/phase").as_str();
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    let marked = at(pod, "/metadata/deletionTimestamp").as_str().and_then(kuorum_api::time::unix_seconds);
    let grace = at(pod, "/metadata/deletionGracePeriodSeconds").as_i64();
    !matches!((marked, grace), (Some(marked), Some(g)) if now > marked + g)
}

fn pod_usage(pod: &Object, now: i64, u: &mut Usage) {
    if !pod_counts(pod, now) {
        return;
    }
    u.insert("pods".into(), ONE);
    let (requests, limits) = (pod_resources(pod, "requests", true), pod_resources(pod, "limits", true));
    for r in COMPUTE {
        if let Some(v) = requests.get(*r) {
            u.insert((*r).to_string(), *v);
            u.insert(format!("requests.{r}"), *v);
        }
        if let Some(v) = limits.get(*r) {
            u.insert(format!("limits.{r}"), *v);
        }
    }
    for (k, v) in &requests {
        if k.starts_with("hugepages-") {
            u.insert(k.clone(), *v);
            u.insert(format!("requests.{k}"), *v);
        } else if !COMPUTE.contains(&k.as_str()) && k.contains('/') {
            u.insert(format!("requests.{k}"), *v);
        }
    }
}

/// kube's `PodRequests`/`PodLimits`: the larger of the containers' sum (with sidecars) and
/// each init container's need (with the sidecars started before it); with `overhead`,
/// `spec.overhead` on top (for limits, only where there is a limit).
pub(crate) fn pod_resources(pod: &Object, field: &str, overhead: bool) -> Usage {
    let of = |c: &Value| resource_list(c.get("resources").and_then(|r| r.get(field)));
    let add = |into: &mut Usage, from: &Usage| {
        for (k, v) in from {
            *into.entry(k.clone()).or_default() += v;
        }
    };
    let max = |into: &mut Usage, from: &Usage| {
        for (k, v) in from {
            let e = into.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    };
    let list =
        |name: &str| pod.get("spec").and_then(|s| s.get(name)).and_then(Value::as_array).cloned().unwrap_or_default();
    let mut total = Usage::new();
    for c in list("containers") {
        add(&mut total, &of(&c));
    }
    let mut sidecars = Usage::new();
    let mut init_need = Usage::new();
    for c in list("initContainers") {
        let own = of(&c);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut sidecars, &own);
            max(&mut init_need, &sidecars);
        } else {
            let mut need = sidecars.clone();
            add(&mut need, &own);
            max(&mut init_need, &need);
        }
    }
    add(&mut total, &sidecars);
    max(&mut total, &init_need);
    if !overhead {
        return total;
    }
    let requests = field == "requests";
    for (k, v) in resource_list(pod.get("spec").and_then(|s| s.get("overhead"))) {
        if requests || total.get(&k).is_some_and(|l| *l != 0) {
            *total.entry(k).or_default() += v;
        }
    }
    total
}

/// kube's pod `Constraints`: the tracked compute resources some container leaves out,
/// as `limits.cpu for: a,b; requests.memory for: c`.
fn unspecified(pod: &Object, hard: &Usage) -> Option<String> {
    let mut parts = Vec::new();
    for r in REQUIRED.iter().filter(|r| hard.contains_key(**r)) {
        let (field, name) = match r.split_once('.') {
            Some((f, n)) => (if f == "limits" { "limits" } else { "requests" }, n),
            None => ("requests", *r),
        };
        let mut missing: Vec<&str> = ["initContainers", "containers"]
            .iter()
            .filter_map(|l| pod.get("spec").and_then(|s| s.get(*l)).and_then(Value::as_array))
            .flatten()
            .filter(|c| c.get("resources").and_then(|x| x.get(field)).and_then(|x| x.get(name)).is_none())
            .map(|c| c.get("name").and_then(Value::as_str).unwrap_or(""))
            .collect();
        if !missing.is_empty() {
            missing.sort();
            parts.push(format!("{r} for: {}", missing.join(",")));
        }
    }
    parts.sort();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Whether the quota's scopes (and scope selector) match `obj`. Only pods match scoped
/// quotas (kube's services and object counts match none; PVCs only a gated scope).
pub fn scopes_match(quota: &Object, group: &str, plural: &str, obj: &Object) -> bool {
    let spec = quota.get("spec");
    let mut terms: Vec<(String, String, Vec<String>)> = Vec::new();
    for s in spec.and_then(|s| s.get("scopes")).and_then(Value::as_array).into_iter().flatten() {
        terms.push((s.as_str().unwrap_or("").to_string(), "Exists".into(), Vec::new()));
    }
    let exprs = spec.and_then(|s| s.pointer("/scopeSelector/matchExpressions")).and_then(Value::as_array);
    for e in exprs.into_iter().flatten() {
        let field = |f: &str| e.get(f).and_then(Value::as_str).unwrap_or("").to_string();
        let values = e.get("values").and_then(Value::as_array).into_iter().flatten();
        terms.push((
            field("scopeName"),
            field("operator"),
            values.filter_map(Value::as_str).map(str::to_string).collect(),
        ));
    }
    if terms.is_empty() {
        return true;
    }
    if (group, plural) != ("", "pods") {
        return false;
    }
    terms.iter().all(|(scope, op, values)| {
        let spec = obj.get("spec");
        match scope.as_str() {
            "Terminating" | "NotTerminating" => {
                let t =
                    spec.and_then(|s| s.get("activeDeadlineSeconds")).and_then(Value::as_i64).is_some_and(|d| d >= 0);
                t == (scope == "Terminating")
            }
            "BestEffort" | "NotBestEffort" => {
                let best = pod_resources(obj, "requests", false)
                    .keys()
                    .chain(pod_resources(obj, "limits", false).keys())
                    .all(|k| k != "cpu" && k != "memory");
                best == (scope == "BestEffort")
            }
            "PriorityClass" => {
                let class = spec.and_then(|s| s.get("priorityClassName")).and_then(Value::as_str).unwrap_or("");
                match op.as_str() {
                    "Exists" => !class.is_empty(),
                    "DoesNotExist" => class.is_empty(),
                    "In" => !class.is_empty() && values.iter().any(|v| v == class),
                    "NotIn" => class.is_empty() || !values.iter().any(|v| v == class),
                    _ => false,
                }
            }
            "CrossNamespacePodAffinity" => {
                let affinity = spec.and_then(|s| s.get("affinity"));
                ["podAffinity", "podAntiAffinity"].iter().any(|a| {
                    let at = affinity.and_then(|x| x.get(*a));
                    let req = at
                        .and_then(|x| x.get("requiredDuringSchedulingIgnoredDuringExecution"))
                        .and_then(Value::as_array);
                    let pref = at
                        .and_then(|x| x.get("preferredDuringSchedulingIgnoredDuringExecution"))
                        .and_then(Value::as_array)
                        .map(|l| l.iter().filter_map(|p| p.get("podAffinityTerm")).cloned().collect::<Vec<_>>());
                    req.cloned().unwrap_or_default().iter().chain(pref.unwrap_or_default().iter()).any(|t| {
                        t.get("namespaces").and_then(Value::as_array).is_some_and(|n| !n.is_empty())
                            || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
                    })
                })
            }
            _ => false,
        }
    })
}

/// What the objects in `namespace` use of the resources `hard` names, read from this
/// node's cache: the quota controller's recomputation.
pub fn used_in(st: &RestState, namespace: &str, quota: &Object, hard: &Usage) -> Usage {
    let now = st.clock.now_unix_seconds();
    let mut resources: Vec<(&'static str, &'static str)> = Vec::new();
    for key in hard.keys() {
        let r = resource_of(key);
        if let Some(r) = r.filter(|r| !resources.contains(r)) {
            resources.push(r);
        }
    }
    let mut used: Usage = hard.keys().map(|k| (k.clone(), 0)).collect();
    for (group, plural) in resources {
        for obj in cached_list(&st.cache, group, plural, Some(namespace)) {
            if !scopes_match(quota, group, plural, &obj) {
                continue;
            }
            for (k, v) in usage(group, plural, &obj, now) {
                if let Some(e) = used.get_mut(&k) {
                    *e += v;
                }
            }
        }
    }
    used
}

/// Every ResourceQuota in this node's cache.
pub fn all_quotas(st: &RestState) -> Vec<Object> {
    cached_list(&st.cache, "", "resourcequotas", None)
}

/// Where `quota` is stored.
pub fn key_of(quota: &Object) -> String {
    let (namespace, name) = (object::meta_str(quota, "namespace"), object::meta_str(quota, "name").unwrap_or(""));
    ObjectKey { group: "", resource: "resourcequotas", namespace, name }.encode()
}

/// The quota controller's view of `quota`: `status.hard` as `spec.hard` says and
/// `status.used` as counted, when either differs from what is stored (`None` otherwise).
/// A count that differs only in `used` is written when `stable`: the same count was made
/// a pass ago, so a charge whose object was on its way has had time to be stored.
pub fn recount(st: &RestState, quota: &Object, stable: Option<&Usage>) -> (Usage, Option<Object>) {
    let spec_hard = quota.get("spec").and_then(|s| s.get("hard")).cloned().unwrap_or_else(|| json!({}));
    let hard = resource_list(Some(&spec_hard));
    let namespace = object::meta_str(quota, "namespace").unwrap_or("");
    let counted = used_in(st, namespace, quota, &hard);
    let status = quota.get("status");
    let stored_hard = status.and_then(|s| s.get("hard")).cloned().unwrap_or_else(|| json!({}));
    let stored_used = resource_list(status.and_then(|s| s.get("used")));
    let hard_moved = stored_hard != spec_hard || !stored_used.keys().eq(counted.keys());
    let used_moved = stored_used != counted && stable == Some(&counted);
    if !hard_moved && !used_moved {
        return (counted, None);
    }
    let mut q = quota.clone();
    set_used(&mut q, &counted);
    if let Some(Value::Object(status)) = q.get_mut("status") {
        status.insert("hard".into(), spec_hard);
    }
    (counted, Some(q))
}

/// The resource a quota key counts: (group, plural) of a known kind.
fn resource_of(key: &str) -> Option<(&'static str, &'static str)> {
    if let Some(counted) = key.strip_prefix("count/") {
        let (plural, group) = counted.split_once('.').unwrap_or((counted, ""));
        let def = kuorum_api::registry::builtin().into_iter().find(|d| d.group == group && d.plural == plural)?;
        return Some((def.group, def.plural));
    }
    ["pods", "services", "persistentvolumeclaims", "configmaps", "secrets", "replicationcontrollers", "resourcequotas"]
        .into_iter()
        .find(|p| counts_toward("", p, key))
        .map(|p| ("", p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Object {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_pod_uses_its_containers_and_its_largest_init_container() {
        let pod = obj(json!({"spec": {
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}}
            ],
            "overhead": {"cpu": "100m"}
        }}));
        let u = usage("", "pods", &pod, 0);
        assert_eq!(u["pods"], ONE);
        assert_eq!(u["count/pods"], ONE);
        assert_eq!(u["requests.cpu"], 2100, "the init container needs more than the two together, plus overhead");
        assert_eq!(format_amount("requests.memory", u["requests.memory"]), "1536Mi");
        assert_eq!(format_amount("limits.memory", u["limits.memory"]), "1Gi");
        assert_eq!(format_amount("requests.cpu", 750), "750m");
        assert_eq!(format_amount("pods", 10 * ONE), "10");
        let done = obj(json!({"spec": {}, "status": {"phase": "Failed"}}));
        assert_eq!(usage("", "pods", &done, 0).get("pods"), None);
        assert_eq!(usage("", "pods", &done, 0)["count/pods"], ONE);
    }

    #[test]
    fn services_claims_and_counts() {
        let lb = obj(json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}}));
        let u = usage("", "services", &lb, 0);
        assert_eq!((u["services"], u["services.loadbalancers"], u["services.nodeports"]), (ONE, ONE, 2 * ONE));
        let pvc = obj(json!({"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "10Gi"}}}}));
        let u = usage("", "persistentvolumeclaims", &pvc, 0);
        assert_eq!(format_amount("requests.storage", u["fast.storageclass.storage.k8s.io/requests.storage"]), "10Gi");
        assert_eq!(usage("apps", "deployments", &obj(json!({})), 0)["count/deployments.apps"], ONE);
        assert!(counts_toward("", "configmaps", "configmaps"));
        assert!(counts_toward("apps", "deployments", "count/deployments.apps"));
        assert!(!counts_toward("apps", "deployments", "pods"));
        assert_eq!(resource_of("count/deployments.apps"), Some(("apps", "deployments")));
        assert_eq!(resource_of("requests.cpu"), Some(("", "pods")));
        assert_eq!(resource_of("services.nodeports"), Some(("", "services")));
    }

    #[test]
    fn a_pod_must_name_what_a_quota_tracks() {
        let pod = obj(json!({"spec": {"containers": [
            {"name": "b", "resources": {"requests": {"cpu": "1"}}},
            {"name": "a", "resources": {}}
        ]}}));
        let hard: Usage = [("requests.cpu".to_string(), 4), ("limits.memory".to_string(), 4)].into();
        assert_eq!(unspecified(&pod, &hard).unwrap(), "limits.memory for: a,b; requests.cpu for: a");
        assert_eq!(unspecified(&pod, &[("pods".to_string(), ONE)].into()), None);
    }

    #[test]
    fn scopes() {
        let q = |spec: Value| obj(json!({"spec": spec}));
        let best = obj(json!({"spec": {"containers": [{"name": "a"}]}}));
        let burst = obj(json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
                                        "priorityClassName": "high"}}));
        assert!(scopes_match(&q(json!({"scopes": ["BestEffort"]})), "", "pods", &best));
        assert!(!scopes_match(&q(json!({"scopes": ["BestEffort"]})), "", "pods", &burst));
        assert!(scopes_match(&q(json!({"scopes": ["NotTerminating"]})), "", "pods", &best));
        let pc = q(
            json!({"scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}),
        );
        assert!(scopes_match(&pc, "", "pods", &burst));
        assert!(!scopes_match(&pc, "", "pods", &best));
        assert!(!scopes_match(&pc, "", "services", &best));
        assert!(scopes_match(&q(json!({"hard": {}})), "", "services", &best));
    }
}
