//! `PodSecurity`: pods must meet the Pod Security Standard their namespace's labels ask
//! for (`pod-security.kubernetes.io/enforce`, 403 otherwise) and are warned against the
//! `warn` one (a `Warning` header), with the checks, texts and order of kube's
//! pod-security-admission at `latest` (Kubernetes 1.37):
//!
//! - `baseline`: AppArmor, capabilities, host namespaces, hostPath volumes, host ports,
//!   probe and lifecycle hosts, privileged, procMount, SELinux options, seccomp, sysctls,
//!   Windows host processes;
//! - `restricted`: those, and allowPrivilegeEscalation, dropping ALL capabilities,
//!   restricted volume types, runAsNonRoot, runAsUser, a seccomp profile.
//!
//! Checked: pod creates, pod updates that change containers or images (and the
//! `ephemeralcontainers` subresource); the pod templates of workload kinds are warned
//! about, never refused. An invalid `enforce` level enforces `restricted`; an invalid
//! `warn` level warns of nothing; a version label (`enforce-version`) is printed as given
//! and its level checked by the newest rules. No namespace or user is exempt. The audit
//! log's event of a checked pod says the policy enforced
//! (`pod-security.kubernetes.io/enforce-policy`) and what the `audit` level's checks
//! found (`pod-security.kubernetes.io/audit-violations`).

use std::collections::BTreeSet;

use kuorum_api::ApiError;
use serde_json::{Map, Value};

use super::Attributes;
use crate::object::Object;

const LABEL: &str = "pod-security.kubernetes.io/";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// A namespace's level for one mode and the version it prints (`latest`, `v1.30`).
fn policy(labels: Option<&Map<String, Value>>, mode: &str, invalid: Level) -> (Level, String) {
    let get = |k: &str| labels.and_then(|l| l.get(&format!("{LABEL}{k}"))).and_then(Value::as_str);
    let level = match get(mode) {
        None => Level::Privileged,
        Some(s) => Level::parse(s).unwrap_or(invalid),
    };
    let version = get(&format!("{mode}-version")).filter(|v| valid_version(v)).unwrap_or("latest");
    (level, version.to_string())
}

fn valid_version(v: &str) -> bool {
    v == "latest"
        || v.strip_prefix("v1.").is_some_and(|n| {
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'))
        })
}

/// Where a kind keeps its pod template's metadata and spec (JSON pointers), for warnings.
fn template_of(group: &str, plural: &str) -> Option<&'static str> {
    match (group, plural) {
        ("", "replicationcontrollers")
        | ("apps", "replicasets" | "deployments" | "statefulsets" | "daemonsets")
        | ("batch", "jobs") => Some("/spec/template"),
        ("", "podtemplates") => Some("/template"),
        ("batch", "cronjobs") => Some("/spec/jobTemplate/spec/template"),
        _ => None,
    }
}

/// Refuses a pod its namespace's `enforce` level does not allow; the `warn` level's
/// violations as warnings.
pub(crate) fn validate(a: &Attributes, obj: &Object) -> Result<Vec<String>, ApiError> {
    let t = a.target;
    if t.custom.is_some() || t.namespace.is_none() {
        return Ok(Vec::new());
    }
    let (group, plural) = (t.def.group, t.def.plural);
    let is_pod = group.is_empty() && plural == "pods";
    let template = if is_pod { None } else { template_of(group, plural) };
    if !is_pod && template.is_none() {
        return Ok(Vec::new());
    }
    match t.subresource.as_deref() {
        None => {}
        Some("ephemeralcontainers") if is_pod => {}
        Some(_) => return Ok(Vec::new()),
    }
    if is_pod && t.subresource.is_none() && a.old.is_some_and(|old| !significant(old, obj)) {
        return Ok(Vec::new());
    }
    let Some(ns) = super::cached(a.st, "", "namespaces", None, a.namespace()) else { return Ok(Vec::new()) };
    let labels = ns.get("metadata").and_then(|m| m.get("labels")).and_then(Value::as_object);
    let (enforce, enforce_version) = policy(labels, "enforce", Level::Restricted);
    let (mut warn, mut warn_version) = policy(labels, "warn", Level::Privileged);
    let warn_set = labels.is_some_and(|l| l.contains_key(&format!("{LABEL}warn")));
    if !warn_set && enforce > warn {
        warn = enforce;
        if !labels.is_some_and(|l| l.contains_key(&format!("{LABEL}warn-version"))) {
            warn_version = enforce_version.clone();
        }
    }
    let audited = labels.is_some_and(|l| l.contains_key(&format!("{LABEL}audit")));
    if enforce == Level::Privileged && warn == Level::Privileged && !audited {
        return Ok(Vec::new());
    }
    let (meta, spec) = match template {
        None => (obj.get("metadata"), obj.get("spec")),
        Some(p) => {
            let whole = Value::Object(obj.clone());
            let tmpl = whole.pointer(p).cloned();
            let Some(tmpl) = tmpl else { return Ok(Vec::new()) };
            let failures = check(warn, tmpl.get("metadata"), tmpl.get("spec"));
            return Ok(warning(warn, &warn_version, &failures).into_iter().collect());
        }
    };
    if is_pod {
        crate::audit::annotate(&format!("{LABEL}enforce-policy"), format!("{}:{enforce_version}", enforce.name()));
        let (audit, audit_version) = policy(labels, "audit", Level::Privileged);
        if audit > Level::Privileged {
            let failures = check(audit, meta, spec);
            if let Some(w) = warning(audit, &audit_version, &failures) {
                crate::audit::annotate(&format!("{LABEL}audit-violations"), w);
            }
        }
    }
    if is_pod && enforce > Level::Privileged {
        let failures = check(enforce, meta, spec);
        if !failures.is_empty() {
            let why =
                format!("violates PodSecurity \"{}:{enforce_version}\": {}", enforce.name(), aggregate(&failures));
            return Err(a.forbidden(obj, &why));
        }
    }
    Ok(warning(warn, &warn_version, &check(warn, meta, spec)).into_iter().collect())
}

fn warning(level: Level, version: &str, failures: &[(String, String)]) -> Option<String> {
    (!failures.is_empty())
        .then(|| format!("would violate PodSecurity \"{}:{version}\": {}", level.name(), aggregate(failures)))
}

/// `reason (detail), reason (detail)`.
fn aggregate(failures: &[(String, String)]) -> String {
    failures
        .iter()
        .map(|(r, d)| if d.is_empty() { r.clone() } else { format!("{r} ({d})") })
        .collect::<Vec<_>>()
        .join(", ")
}

/// kube's "significant" pod update: containers added or removed, or an image changed.
fn significant(old: &Object, new: &Object) -> bool {
    let list = |o: &Object, f: &str| -> Vec<(String, String)> {
        o.get("spec")
            .and_then(|s| s.get(f))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| (str_of(c, "name").to_string(), str_of(c, "image").to_string()))
            .collect()
    };
    ["containers", "initContainers", "ephemeralContainers"].iter().any(|f| list(old, f) != list(new, f))
}

fn str_of<'a>(v: &'a Value, f: &str) -> &'a str {
    v.get(f).and_then(Value::as_str).unwrap_or("")
}

/// `"a", "b"`.
fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    items.iter().map(|s| format!("\"{}\"", s.as_ref())).collect::<Vec<_>>().join(", ")
}

fn plural<'a>(one: &'a str, many: &'a str, n: usize) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// `container "a"` / `containers "a", "b"`.
fn containers_phrase(names: &[String]) -> String {
    format!("{} {}", plural("container", "containers", names.len()), join_quote(names))
}

/// `pod and containers "a", "b"`: who set a value.
fn setters(pod: bool, containers: &[String], extra: Option<String>) -> String {
    let mut parts = Vec::new();
    if pod {
        parts.push("pod".to_string());
    }
    if !containers.is_empty() {
        parts.push(containers_phrase(containers));
    }
    parts.extend(extra);
    parts.join(" and ")
}

/// The failures of `spec` (with `meta`) at `level`: (reason, detail), in kube's order.
fn check(level: Level, meta: Option<&Value>, spec: Option<&Value>) -> Vec<(String, String)> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let empty = Value::Object(Map::new());
    let spec = spec.unwrap_or(&empty);
    let pod_sc = spec.get("securityContext").unwrap_or(&empty);
    let containers: Vec<&Value> = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .filter_map(|f| spec.get(*f).and_then(Value::as_array))
        .flatten()
        .collect();
    let sc = |c: &Value| c.get("securityContext").cloned().unwrap_or(Value::Null);
    let name = |c: &Value| str_of(c, "name").to_string();
    let windows = spec.pointer("/os/name").and_then(Value::as_str) == Some("windows");
    let user_namespaced = spec.get("hostUsers").and_then(Value::as_bool) == Some(false);
    let restricted = level == Level::Restricted;
    let mut out: Vec<(String, String)> = Vec::new();

    // appArmorProfile
    {
        let bad = |t: Option<&str>| t.is_some_and(|t| t != "RuntimeDefault" && t != "Localhost");
        let pod_type = pod_sc.pointer("/appArmorProfile/type").and_then(Value::as_str);
        let mut values: BTreeSet<String> = BTreeSet::new();
        let pod_bad = bad(pod_type);
        if pod_bad {
            values.insert(pod_type.unwrap_or("").into());
        }
        let mut bad_containers = Vec::new();
        for c in &containers {
            let t = sc(c).pointer("/appArmorProfile/type").and_then(Value::as_str).map(str::to_string);
            if bad(t.as_deref()) {
                bad_containers.push(name(c));
                values.insert(t.unwrap_or_default());
            }
        }
        let mut annotated: Vec<String> = meta
            .and_then(|m| m.get("annotations"))
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.starts_with("container.apparmor.security.beta.kubernetes.io/"))
            .filter_map(|(k, v)| {
                let v = v.as_str().unwrap_or("");
                (!(v.is_empty() || v == "runtime/default" || v.starts_with("localhost/")))
                    .then(|| format!("{k}=\"{v}\""))
            })
            .collect();
        annotated.sort();
        if pod_bad || !bad_containers.is_empty() || !annotated.is_empty() {
            let extra =
                (!annotated.is_empty()).then(|| plural("annotation", "annotations", annotated.len()).to_string());
            let mut all: Vec<String> = values.into_iter().collect();
            all.extend(annotated);
            let reason = plural("forbidden AppArmor profile", "forbidden AppArmor profiles", all.len());
            let who = setters(pod_bad, &bad_containers, extra);
            out.push((reason.to_string(), format!("{who} must not set AppArmor profile type to {}", join_quote(&all))));
        }
    }

    // capabilities_baseline (restricted replaces it)
    if !restricted {
        let mut who = Vec::new();
        let mut caps = BTreeSet::new();
        for c in &containers {
            let added = sc(c).pointer("/capabilities/add").and_then(Value::as_array).cloned().unwrap_or_default();
            let bad: Vec<String> = added
                .iter()
                .filter_map(Value::as_str)
                .filter(|cap| !BASELINE_CAPABILITIES.contains(cap))
                .map(str::to_string)
                .collect();
            if !bad.is_empty() {
                who.push(name(c));
                caps.extend(bad);
            }
        }
        if !who.is_empty() {
            let caps: Vec<String> = caps.into_iter().collect();
            let detail = format!(
                "{} must not include {} in securityContext.capabilities.add",
                containers_phrase(&who),
                join_quote(&caps)
            );
            out.push(("non-default capabilities".to_string(), detail));
        }
    }

    // hostNamespaces
    {
        let parts: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
            .iter()
            .filter(|f| spec.get(**f).and_then(Value::as_bool) == Some(true))
            .map(|f| format!("{f}=true"))
            .collect();
        if !parts.is_empty() {
            out.push(("host namespaces".to_string(), parts.join(", ")));
        }
    }

    // hostPathVolumes (restricted replaces it)
    let volumes: Vec<&Value> = spec.get("volumes").and_then(Value::as_array).into_iter().flatten().collect();
    if !restricted {
        let names: Vec<String> =
            volumes.iter().filter(|v| v.get("hostPath").is_some_and(|h| !h.is_null())).map(|v| name(v)).collect();
        if !names.is_empty() {
            out.push((
                "hostPath volumes".to_string(),
                format!("{} {}", plural("volume", "volumes", names.len()), join_quote(&names)),
            ));
        }
    }

    // hostPorts
    {
        let mut who = Vec::new();
        let mut ports = BTreeSet::new();
        for c in &containers {
            let used: Vec<String> = c
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("hostPort").and_then(Value::as_i64))
                .filter(|p| *p != 0)
                .map(|p| p.to_string())
                .collect();
            if !used.is_empty() {
                who.push(name(c));
                ports.extend(used);
            }
        }
        if !who.is_empty() {
            let ports: Vec<String> = ports.into_iter().collect();
            let detail = format!(
                "{} {} {} {}",
                containers_phrase(&who),
                plural("uses", "use", who.len()),
                plural("hostPort", "hostPorts", ports.len()),
                ports.join(", ")
            );
            out.push(("hostPort".to_string(), detail));
        }
    }

    // hostProbesAndHostLifecycle
    {
        let mut who = BTreeSet::new();
        let mut hosts = BTreeSet::new();
        for c in &containers {
            let handlers = ["livenessProbe", "readinessProbe", "startupProbe"]
                .iter()
                .filter_map(|p| c.get(*p))
                .chain(["postStart", "preStop"].iter().filter_map(|h| c.get("lifecycle").and_then(|l| l.get(*h))));
            for h in handlers {
                for kind in ["httpGet", "tcpSocket"] {
                    if let Some(host) =
                        h.get(kind).and_then(|k| k.get("host")).and_then(Value::as_str).filter(|s| !s.is_empty())
                    {
                        who.insert(name(c));
                        hosts.insert(host.to_string());
                    }
                }
            }
        }
        if !who.is_empty() {
            let who: Vec<String> = who.into_iter().collect();
            let hosts: Vec<String> = hosts.into_iter().collect();
            let detail = format!(
                "{} {} probe or lifecycle {} {}",
                containers_phrase(&who),
                plural("uses", "use", who.len()),
                plural("host", "hosts", hosts.len()),
                join_quote(&hosts)
            );
            out.push(("probe or lifecycle host".to_string(), detail));
        }
    }

    // privileged
    {
        let who: Vec<String> = containers
            .iter()
            .filter(|c| sc(c).get("privileged").and_then(Value::as_bool) == Some(true))
            .map(|c| name(c))
            .collect();
        if !who.is_empty() {
            out.push((
                "privileged".to_string(),
                format!("{} must not set securityContext.privileged=true", containers_phrase(&who)),
            ));
        }
    }

    // procMount (baseline; user namespaces relax it) — restricted checks it later, strictly.
    let proc_mount = |out: &mut Vec<(String, String)>| {
        let mut who = Vec::new();
        let mut values = BTreeSet::new();
        for c in &containers {
            if let Some(m) = sc(c).get("procMount").and_then(Value::as_str).filter(|m| *m != "Default") {
                who.push(name(c));
                values.insert(m.to_string());
            }
        }
        if !who.is_empty() {
            let values: Vec<String> = values.into_iter().collect();
            let detail = format!(
                "{} must not set securityContext.procMount to {}",
                containers_phrase(&who),
                join_quote(&values)
            );
            out.push(("procMount".into(), detail));
        }
    };
    if !restricted && !user_namespaced {
        proc_mount(&mut out);
    }

    // seLinuxOptions
    {
        let allowed = ["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"];
        let mut types = BTreeSet::new();
        let (mut user, mut role) = (false, false);
        let mut bad_of = |o: Option<&Value>| -> bool {
            let Some(o) = o.filter(|o| o.is_object()) else { return false };
            let mut bad = false;
            let t = str_of(o, "type");
            if !allowed.contains(&t) {
                types.insert(t.to_string());
                bad = true;
            }
            if !str_of(o, "user").is_empty() {
                user = true;
                bad = true;
            }
            if !str_of(o, "role").is_empty() {
                role = true;
                bad = true;
            }
            bad
        };
        let pod_bad = bad_of(pod_sc.get("seLinuxOptions"));
        let who: Vec<String> =
            containers.iter().filter(|c| bad_of(sc(c).get("seLinuxOptions"))).map(|c| name(c)).collect();
        if pod_bad || !who.is_empty() {
            let mut parts = Vec::new();
            if !types.is_empty() {
                let types: Vec<String> = types.into_iter().collect();
                parts.push(format!("{} {}", plural("type", "types", types.len()), join_quote(&types)));
            }
            if user {
                parts.push("user may not be set".to_string());
            }
            if role {
                parts.push("role may not be set".to_string());
            }
            let detail = format!(
                "{} set forbidden securityContext.seLinuxOptions: {}",
                setters(pod_bad, &who, None),
                parts.join("; ")
            );
            out.push(("seLinuxOptions".to_string(), detail));
        }
    }

    // seccompProfile: explicit bad values (both levels); restricted also wants one set.
    let seccomp_type = |v: &Value| v.pointer("/seccompProfile/type").and_then(Value::as_str).map(str::to_string);
    let seccomp_ok = |t: &str| t == "RuntimeDefault" || t == "Localhost";
    let seccomp_explicit = {
        let mut values = BTreeSet::new();
        let pod_t = seccomp_type(pod_sc);
        let pod_bad = pod_t.as_deref().is_some_and(|t| !seccomp_ok(t));
        if pod_bad {
            values.insert(pod_t.clone().unwrap_or_default());
        }
        let mut who = Vec::new();
        for c in &containers {
            if let Some(t) = seccomp_type(&sc(c)).filter(|t| !seccomp_ok(t)) {
                who.push(name(c));
                values.insert(t);
            }
        }
        (pod_bad || !who.is_empty()).then(|| {
            let values: Vec<String> = values.into_iter().collect();
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters(pod_bad, &who, None),
                join_quote(&values)
            )
        })
    };
    if !restricted {
        if let Some(d) = seccomp_explicit.clone() {
            out.push(("seccompProfile".to_string(), d));
        }
    }

    // sysctls
    {
        let bad: Vec<String> = pod_sc
            .get("sysctls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| str_of(s, "name").to_string())
            .filter(|n| !SAFE_SYSCTLS.contains(&n.as_str()))
            .collect();
        if !bad.is_empty() {
            out.push(("forbidden sysctls".to_string(), bad.join(", ")));
        }
    }

    // windowsHostProcess
    {
        let host = |v: &Value| v.pointer("/windowsOptions/hostProcess").and_then(Value::as_bool) == Some(true);
        let pod_bad = host(pod_sc);
        let who: Vec<String> = containers.iter().filter(|c| host(&sc(c))).map(|c| name(c)).collect();
        if pod_bad || !who.is_empty() {
            let detail = format!(
                "{} must not set securityContext.windowsOptions.hostProcess=true",
                setters(pod_bad, &who, None)
            );
            out.push(("hostProcess".to_string(), detail));
        }
    }

    if !restricted {
        return out;
    }

    // allowPrivilegeEscalation
    if !windows {
        let who: Vec<String> = containers
            .iter()
            .filter(|c| sc(c).get("allowPrivilegeEscalation").and_then(Value::as_bool) != Some(false))
            .map(|c| name(c))
            .collect();
        if !who.is_empty() {
            let detail = format!("{} must set securityContext.allowPrivilegeEscalation=false", containers_phrase(&who));
            out.push(("allowPrivilegeEscalation != false".into(), detail));
        }
    }

    // capabilities_restricted
    if !windows {
        let mut no_drop = Vec::new();
        let mut adders = Vec::new();
        let mut caps = BTreeSet::new();
        for c in &containers {
            let sc = sc(c);
            let drops = sc.pointer("/capabilities/drop").and_then(Value::as_array);
            if !drops.is_some_and(|d| d.iter().any(|x| x.as_str() == Some("ALL"))) {
                no_drop.push(name(c));
            }
            let bad: Vec<String> = sc
                .pointer("/capabilities/add")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .filter(|cap| *cap != "NET_BIND_SERVICE")
                .map(str::to_string)
                .collect();
            if !bad.is_empty() {
                adders.push(name(c));
                caps.extend(bad);
            }
        }
        let mut parts = Vec::new();
        if !no_drop.is_empty() {
            parts.push(format!("{} must set securityContext.capabilities.drop=[\"ALL\"]", containers_phrase(&no_drop)));
        }
        if !adders.is_empty() {
            let caps: Vec<String> = caps.into_iter().collect();
            parts.push(format!(
                "{} must not include {} in securityContext.capabilities.add",
                containers_phrase(&adders),
                join_quote(&caps)
            ));
        }
        if !parts.is_empty() {
            out.push(("unrestricted capabilities".into(), parts.join("; ")));
        }
    }

    // procMount_restricted
    proc_mount(&mut out);

    // restrictedVolumes
    {
        let mut names = Vec::new();
        let mut types = BTreeSet::new();
        for v in &volumes {
            let Some(o) = v.as_object() else { continue };
            if ALLOWED_VOLUMES.iter().any(|t| o.get(*t).is_some_and(|x| !x.is_null())) {
                continue;
            }
            let kind = RESTRICTED_VOLUMES
                .iter()
                .find(|t| o.get(**t).is_some_and(|x| !x.is_null()))
                .copied()
                .unwrap_or("unknown");
            names.push(name(v));
            types.insert(kind.to_string());
        }
        if !names.is_empty() {
            let types: Vec<String> = types.into_iter().collect();
            let detail = format!(
                "{} {} {} {} {}",
                plural("volume", "volumes", names.len()),
                join_quote(&names),
                plural("uses", "use", names.len()),
                plural("restricted volume type", "restricted volume types", types.len()),
                join_quote(&types)
            );
            out.push(("restricted volume types".into(), detail));
        }
    }

    // runAsNonRoot
    if !user_namespaced {
        let pod_value = pod_sc.get("runAsNonRoot").and_then(Value::as_bool);
        let explicit: Vec<String> = containers
            .iter()
            .filter(|c| sc(c).get("runAsNonRoot").and_then(Value::as_bool) == Some(false))
            .map(|c| name(c))
            .collect();
        if pod_value == Some(false) || !explicit.is_empty() {
            let detail = format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters(pod_value == Some(false), &explicit, None)
            );
            out.push(("runAsNonRoot != true".into(), detail));
        } else if pod_value != Some(true) {
            let unset: Vec<String> = containers
                .iter()
                .filter(|c| sc(c).get("runAsNonRoot").is_none_or(Value::is_null))
                .map(|c| name(c))
                .collect();
            if !unset.is_empty() {
                let detail = format!(
                    "pod or {} {} must set securityContext.runAsNonRoot=true",
                    plural("container", "containers", unset.len()),
                    join_quote(&unset)
                );
                out.push(("runAsNonRoot != true".into(), detail));
            }
        }
    }

    // runAsUser
    if !user_namespaced {
        let root = |v: &Value| v.get("runAsUser").and_then(Value::as_i64) == Some(0);
        let pod_bad = root(pod_sc);
        let who: Vec<String> = containers.iter().filter(|c| root(&sc(c))).map(|c| name(c)).collect();
        if pod_bad || !who.is_empty() {
            out.push(("runAsUser=0".into(), format!("{} must not set runAsUser=0", setters(pod_bad, &who, None))));
        }
    }

    // seccompProfile_restricted
    if !windows {
        if let Some(d) = seccomp_explicit {
            out.push(("seccompProfile".into(), d));
        } else if !seccomp_type(pod_sc).is_some_and(|t| seccomp_ok(&t)) {
            let unset: Vec<String> =
                containers.iter().filter(|c| seccomp_type(&sc(c)).is_none()).map(|c| name(c)).collect();
            if !unset.is_empty() {
                let detail = format!(
                    "pod or {} {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                    plural("container", "containers", unset.len()),
                    join_quote(&unset)
                );
                out.push(("seccompProfile".into(), detail));
            }
        }
    }
    out
}

const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
];

const ALLOWED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
    "image",
];

const RESTRICTED_VOLUMES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn failures(level: Level, pod: Value) -> String {
        aggregate(&check(level, pod.get("metadata"), pod.get("spec")))
    }

    #[test]
    fn a_privileged_pod_breaks_both_levels() {
        let pod = json!({"spec": {"hostNetwork": true, "containers": [
            {"name": "a", "image": "x", "securityContext": {"privileged": true}, "ports": [{"containerPort": 80, "hostPort": 80}]}
        ]}});
        assert_eq!(
            failures(Level::Baseline, pod.clone()),
            r#"host namespaces (hostNetwork=true), hostPort (container "a" uses hostPort 80), privileged (container "a" must not set securityContext.privileged=true)"#
        );
        assert_eq!(
            failures(Level::Restricted, pod),
            concat!(
                r#"host namespaces (hostNetwork=true), hostPort (container "a" uses hostPort 80), privileged (container "a" must not set securityContext.privileged=true), "#,
                r#"allowPrivilegeEscalation != false (container "a" must set securityContext.allowPrivilegeEscalation=false), "#,
                r#"unrestricted capabilities (container "a" must set securityContext.capabilities.drop=["ALL"]), "#,
                r#"runAsNonRoot != true (pod or container "a" must set securityContext.runAsNonRoot=true), "#,
                r#"seccompProfile (pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#
            )
        );
    }

    #[test]
    fn a_restricted_pod_passes() {
        let pod = json!({"spec": {
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [{"name": "t", "projected": {"sources": []}}],
            "containers": [{"name": "a", "securityContext": {"allowPrivilegeEscalation": false,
                            "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}]}});
        assert_eq!(failures(Level::Restricted, pod.clone()), "");
        assert_eq!(failures(Level::Baseline, pod), "");
    }

    #[test]
    fn lists_are_plural_and_sorted() {
        let pod = json!({"spec": {
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}, {"name": "n", "nfs": {}}],
        "securityContext": {"sysctls": [{"name": "kernel.msgmax"}, {"name": "net.ipv4.tcp_syncookies"}]},
        "containers": [
            {"name": "a", "securityContext": {"capabilities": {"add": ["SYS_ADMIN", "NET_ADMIN"]}}},
            {"name": "b", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}
        ]}});
        assert_eq!(
            failures(Level::Baseline, pod),
            r#"non-default capabilities (containers "a", "b" must not include "NET_ADMIN", "SYS_ADMIN" in securityContext.capabilities.add), hostPath volumes (volume "h"), forbidden sysctls (kernel.msgmax)"#
        );
    }

    #[test]
    fn labels() {
        let l = |v: Value| v.as_object().cloned();
        let labels = l(
            json!({"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "v1.30"}),
        );
        assert_eq!(policy(labels.as_ref(), "enforce", Level::Restricted), (Level::Restricted, "v1.30".into()));
        let bad =
            l(json!({"pod-security.kubernetes.io/enforce": "strict", "pod-security.kubernetes.io/warn": "loose"}));
        assert_eq!(policy(bad.as_ref(), "enforce", Level::Restricted).0, Level::Restricted);
        assert_eq!(policy(bad.as_ref(), "warn", Level::Privileged).0, Level::Privileged);
        assert_eq!(policy(None, "enforce", Level::Restricted), (Level::Privileged, "latest".into()));
        assert!(valid_version("v1.0") && !valid_version("v1.01") && !valid_version("1.30") && !valid_version("v1."));
    }
}
