//! Owns the audit log, kube-apiserver's `--audit-policy-file` and `--audit-log-path`: each
//! node writes, for the requests it serves, `audit.k8s.io/v1` `Event`s as JSON lines.
//!
//! - **Policy** ([`Policy`], kube's `audit.k8s.io/v1` `Policy`, YAML or JSON): the first
//!   rule that matches a request (by `users`, `userGroups`, `verbs`, `resources` with
//!   `group`/`resources`/`resourceNames` and kube's `*`, `*/sub`, `res/*` forms,
//!   `namespaces`, `nonResourceURLs` with a trailing `*`) gives its level: `None` (nothing
//!   logged), `Metadata` (who, what, when, the answer's code), `Request` (and the request's
//!   object), `RequestResponse` (and the response's). No rule matching is `None`.
//!   `omitStages` (the policy's and the rule's) and `omitManagedFields` as in kube.
//! - **Stages:** `RequestReceived` once the user is known, `ResponseStarted` when a
//!   watch's response begins, `ResponseComplete` when the response is sent (a watch's when
//!   it ends). Each event's `auditID` is the request's `Audit-Id`.
//! - **Who:** `user` is the authenticated sender and `impersonatedUser` whom it acted as.
//!   Requests refused before a user is known (401) are not logged.
//! - **Bounds:** request and response objects are kept while the event stays within
//!   `--audit-log-truncate-max-event-size` (kube's default, 100 KiB): a larger object is
//!   left out and the event annotated `audit.k8s.io/truncated: "true"`, so a 100 MB list
//!   costs no more memory than a small one. The file is rotated at `--audit-log-maxsize`
//!   megabytes, keeping `--audit-log-maxbackup` files no older than `--audit-log-maxage`
//!   days, named as kube's (lumberjack's) `audit-2026-11-27T21-50-00.000.log`.
//!
//! - **Annotations:** what the request's handling says of it ([`annotate`]): the
//!   authorization decision (`authorization.k8s.io/decision`, `/reason`) and PodSecurity's
//!   policy and audit-level violations (`pod-security.kubernetes.io/enforce-policy`,
//!   `/audit-violations`), admission webhooks' and policies' annotations, in the
//!   `ResponseComplete` event; one that holds request data (a webhook's patch) only at the
//!   `Request` level and above ([`annotate_at`]).
//!
//! Writes are synchronous (kube's default `blocking` mode): a line per event, flushed.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use http_body::Frame;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::auth::{ClientAddr, UserExtra, UserInfo};
use crate::request::RequestInfo;

tokio::task_local! {
    /// The audit annotations of the request being served on this task, while it is
    /// audited.
    static ANNOTATIONS: Collected;
}

/// The annotations of an audited request, and its level.
struct Collected {
    level: Level,
    annotations: RefCell<BTreeMap<String, String>>,
}

/// Adds an audit annotation to the request being served (nothing when it is not
/// audited).
pub(crate) fn annotate(key: &str, value: impl Into<String>) {
    annotate_at(Level::Metadata, key, value);
}

/// [`annotate`] for an annotation kept only when the request is audited at `level` or
/// above (kube's `AddAnnotationWithLevel`: a webhook's patch holds request data, so it is
/// written at `Request` and above).
pub(crate) fn annotate_at(level: Level, key: &str, value: impl Into<String>) {
    let _ = ANNOTATIONS.try_with(|c| {
        if c.level >= level {
            c.annotations.borrow_mut().insert(key.to_string(), value.into());
        }
    });
}

/// Serves `run` with annotations collected ([`annotate`]) for a request audited at
/// `level`; answers them with its result.
pub(crate) async fn collecting<F: std::future::Future>(level: Level, run: F) -> (F::Output, BTreeMap<String, String>) {
    ANNOTATIONS
        .scope(Collected { level, annotations: RefCell::new(BTreeMap::new()) }, async move {
            let out = run.await;
            let annotations = ANNOTATIONS.with(|c| c.annotations.take());
            (out, annotations)
        })
        .await
}

/// How much of a request kube logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize, Default)]
pub enum Level {
    #[default]
    None,
    Metadata,
    Request,
    RequestResponse,
}

/// One audit rule (kube's `PolicyRule`).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub level: Level,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub user_groups: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    #[serde(default)]
    pub omit_stages: Vec<String>,
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// Resources of one API group a rule names.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupResources {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// kube's audit `Policy`.
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    #[serde(default)]
    pub rules: Vec<Rule>,
    #[serde(default)]
    pub omit_stages: Vec<String>,
    #[serde(default)]
    pub omit_managed_fields: bool,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
}

const STAGES: &[&str] = &["RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"];

impl Policy {
    /// Reads a policy file's text (YAML or JSON), checked as kube checks it: its kind and
    /// version, and the stage names it omits.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let p: Policy = serde_yaml_ng::from_str(text).map_err(|e| format!("the audit policy does not read: {e}"))?;
        if p.kind != "Policy" || !matches!(p.api_version.as_str(), "audit.k8s.io/v1" | "audit.k8s.io/v1beta1") {
            return Err(format!(
                "the audit policy must be an audit.k8s.io/v1 Policy, not {} {}",
                p.api_version, p.kind
            ));
        }
        let stages = p.omit_stages.iter().chain(p.rules.iter().flat_map(|r| &r.omit_stages));
        if let Some(bad) = stages.into_iter().find(|s| !STAGES.contains(&s.as_str())) {
            return Err(format!("the audit policy omits an unknown stage {bad:?}; stages are {}", STAGES.join(", ")));
        }
        Ok(p)
    }

    /// The level, omitted stages and whether managed fields are left out, for a request.
    fn evaluate(&self, user: &UserInfo, info: &RequestInfo) -> (Level, BTreeSet<String>, bool) {
        let Some(rule) = self.rules.iter().find(|r| r.matches(user, info)) else {
            return (Level::None, BTreeSet::new(), false);
        };
        let omit = self.omit_stages.iter().chain(&rule.omit_stages).cloned().collect();
        (rule.level, omit, rule.omit_managed_fields.unwrap_or(self.omit_managed_fields))
    }
}

impl Rule {
    fn matches(&self, user: &UserInfo, info: &RequestInfo) -> bool {
        if !self.users.is_empty() && !self.users.contains(&user.name) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.groups.iter().any(|g| self.user_groups.contains(g)) {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.iter().any(|v| v == info.verb) {
            return false;
        }
        let resource_rule = !self.namespaces.is_empty() || !self.resources.is_empty();
        match (&info.resource, resource_rule, self.non_resource_urls.is_empty()) {
            (_, false, true) => true,
            (Some(r), true, _) => self.matches_resource(r),
            (None, _, false) => self.non_resource_urls.iter().any(|u| match u.strip_suffix('*') {
                Some(prefix) => info.path.starts_with(prefix),
                None => *u == info.path,
            }),
            _ => false,
        }
    }

    /// kube's `ruleMatchesResource`.
    fn matches_resource(&self, r: &crate::request::ResourcePath) -> bool {
        let namespace = r.namespace.as_deref().filter(|_| r.namespaced_path).unwrap_or("");
        if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let sub = r.subresource.as_deref().unwrap_or("");
        let combined = if sub.is_empty() { r.resource.clone() } else { format!("{}/{sub}", r.resource) };
        let name = r.name.as_deref().unwrap_or("");
        self.resources.iter().filter(|gr| gr.group == r.group).any(|gr| {
            gr.resources.is_empty()
                || gr.resources.iter().any(|res| {
                    (gr.resource_names.is_empty() || gr.resource_names.iter().any(|n| n == name))
                        && (*res == combined
                            || res == "*"
                            || (!sub.is_empty() && res.strip_prefix("*/") == Some(sub))
                            || res.strip_suffix("/*") == Some(r.resource.as_str()))
                })
        })
    }
}

/// Where events go, and when the file is rotated.
#[derive(Debug, Clone)]
pub struct LogOptions {
    /// A file, or `-` for standard output.
    pub path: PathBuf,
    /// Megabytes a file may reach before it is rotated (0: never).
    pub max_size_mb: u64,
    /// Rotated files kept (0: all).
    pub max_backups: usize,
    /// Days a rotated file is kept (0: no limit).
    pub max_age_days: u64,
    /// The most bytes an event with its objects may take; objects past it are left out.
    pub max_event_bytes: usize,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            path: PathBuf::from("-"),
            max_size_mb: 0,
            max_backups: 0,
            max_age_days: 0,
            max_event_bytes: 102_400,
        }
    }
}

/// A node's audit log: its policy and where events are written.
pub struct AuditLog {
    policy: Policy,
    options: LogOptions,
    sink: Mutex<Sink>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog").field("path", &self.options.path).finish()
    }
}

struct Sink {
    file: Option<File>,
    written: u64,
}

impl AuditLog {
    /// Opens (appends to) the log `options` names, for `policy`.
    pub fn open(policy: Policy, options: LogOptions) -> Result<AuditLog, String> {
        let (file, written) = if options.path.as_os_str() == "-" {
            (None, 0)
        } else {
            let f = open_append(&options.path)?;
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            (Some(f), len)
        };
        Ok(AuditLog { policy, options, sink: Mutex::new(Sink { file, written }) })
    }

    fn write(&self, event: &Value) {
        let mut line = serde_json::to_vec(event).unwrap_or_default();
        line.push(b'\n');
        let mut sink = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        let limit = self.options.max_size_mb.saturating_mul(1 << 20);
        if limit > 0 && sink.written + line.len() as u64 > limit && sink.written > 0 {
            self.rotate(&mut sink);
        }
        let result = match sink.file.as_mut() {
            Some(f) => f.write_all(&line).and_then(|()| f.flush()),
            None => std::io::stdout().lock().write_all(&line),
        };
        match result {
            Ok(()) => sink.written += line.len() as u64,
            Err(e) => tracing::warn!("writing the audit log: {e}"),
        }
    }

    /// lumberjack's rotation: the file moves to `<name>-<UTC time>.<ext>`, a new one is
    /// started, and backups past the count or age limits are removed.
    fn rotate(&self, sink: &mut Sink) {
        let path = &self.options.path;
        let (stem, ext) = split_name(path);
        let now = SystemTime::now();
        let stamp = timestamp(now).replace(':', "-");
        let stamp = format!("{}.{}", &stamp[..19], &stamp[20..23]);
        let backup = path.with_file_name(format!("{stem}-{stamp}{ext}"));
        sink.file = None;
        if let Err(e) = std::fs::rename(path, &backup) {
            tracing::warn!("rotating the audit log: {e}");
        }
        match open_append(path) {
            Ok(f) => sink.file = Some(f),
            Err(e) => tracing::warn!("{e}"),
        }
        sink.written = 0;
        let mut backups = backups(path);
        backups.sort();
        let max_age = Duration::from_secs(self.options.max_age_days * 86_400);
        let keep_from =
            if self.options.max_backups > 0 { backups.len().saturating_sub(self.options.max_backups) } else { 0 };
        for (i, b) in backups.iter().enumerate() {
            let old = self.options.max_age_days > 0
                && std::fs::metadata(b)
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > max_age);
            if i < keep_from || old {
                let _ = std::fs::remove_file(b);
            }
        }
    }
}

fn open_append(path: &Path) -> Result<File, String> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("opening the audit log {}: {e}", path.display()))
}

/// A file name's stem and extension (with its dot), as lumberjack splits it.
fn split_name(path: &Path) -> (String, String) {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match name.rfind('.') {
        Some(i) if i > 0 => (name[..i].to_string(), name[i..].to_string()),
        _ => (name, String::new()),
    }
}

/// The rotated files of `path`, by name (their names sort by time).
fn backups(path: &Path) -> Vec<PathBuf> {
    let (stem, ext) = split_name(path);
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let prefix = format!("{stem}-");
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            n.starts_with(&prefix) && n.ends_with(&ext) && n.len() > prefix.len() + ext.len()
        })
        .collect()
}

/// A `metav1.MicroTime` of `t`.
fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let instant = kuorum_api::time::Instant { secs: d.as_secs() as i64, nanos: d.subsec_nanos() };
    kuorum_api::time::format_instant(instant, true).unwrap_or_default()
}

fn user_json(u: &UserInfo, extra: Option<&UserExtra>) -> Value {
    let mut v = json!({"username": u.name, "groups": u.groups});
    if !u.uid.is_empty() {
        v["uid"] = json!(u.uid);
    }
    if let Some(e) = extra.filter(|e| !e.0.is_empty()) {
        v["extra"] = json!(e.0);
    }
    v
}

/// The sender of a request that impersonates another user, kept for the audit log.
#[derive(Debug, Clone)]
pub(crate) struct Impersonator(pub UserInfo, pub Option<UserExtra>);

/// One request being audited.
pub(crate) struct Recording {
    log: Arc<AuditLog>,
    event: Map<String, Value>,
    level: Level,
    omit: BTreeSet<String>,
    omit_managed_fields: bool,
    watch: bool,
    /// The request body as the handler read it, up to the event limit.
    request_body: Option<Arc<Mutex<Captured>>>,
}

#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    /// More came than the limit keeps.
    over: bool,
}

impl Captured {
    fn push(&mut self, chunk: &[u8], limit: usize) {
        if self.over || self.bytes.len() + chunk.len() > limit {
            self.over = true;
            self.bytes = Vec::new();
        } else {
            self.bytes.extend_from_slice(chunk);
        }
    }
}

/// Starts the audit of `req` (after authentication and impersonation): logs
/// `RequestReceived` and, at `Request` level and above, keeps what the handler reads of
/// its body. `None` when there is no log or the policy says `None`.
pub(crate) fn begin(log: Option<&Arc<AuditLog>>, req: &mut Request, id: &str) -> Option<Recording> {
    let log = log?;
    let info = req.extensions().get::<RequestInfo>()?;
    let user = req.extensions().get::<UserInfo>()?;
    let impersonator = req.extensions().get::<Impersonator>();
    // The sender's rules decide, as kube evaluates the policy before impersonation.
    let sender = impersonator.map(|i| &i.0).unwrap_or(user);
    let (level, omit, omit_managed_fields) = log.policy.evaluate(sender, info);
    if level == Level::None {
        return None;
    }
    let now = timestamp(SystemTime::now());
    let mut event = Map::new();
    event.insert("kind".into(), json!("Event"));
    event.insert("apiVersion".into(), json!("audit.k8s.io/v1"));
    event.insert("level".into(), json!(level));
    event.insert("auditID".into(), json!(id));
    event.insert("stage".into(), json!("RequestReceived"));
    event.insert("requestURI".into(), json!(req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("")));
    event.insert("verb".into(), json!(info.verb));
    let extra = req.extensions().get::<UserExtra>();
    match impersonator {
        Some(Impersonator(by, by_extra)) => {
            event.insert("user".into(), user_json(by, by_extra.as_ref()));
            event.insert("impersonatedUser".into(), user_json(user, extra));
        }
        None => {
            event.insert("user".into(), user_json(user, extra));
        }
    }
    if let Some(addr) = req.extensions().get::<ClientAddr>() {
        event.insert("sourceIPs".into(), json!([addr.0.ip().to_string()]));
    }
    if let Some(agent) = req.headers().get(http::header::USER_AGENT).and_then(|v| v.to_str().ok()) {
        event.insert("userAgent".into(), json!(agent));
    }
    if let Some(r) = &info.resource {
        let mut object = Map::new();
        object.insert("resource".into(), json!(r.resource));
        if let Some(ns) = r.namespace.as_deref().filter(|_| r.namespaced_path) {
            object.insert("namespace".into(), json!(ns));
        }
        if let Some(name) = &r.name {
            object.insert("name".into(), json!(name));
        }
        if !r.group.is_empty() {
            object.insert("apiGroup".into(), json!(r.group));
        }
        object.insert("apiVersion".into(), json!(r.version));
        if let Some(sub) = &r.subresource {
            object.insert("subresource".into(), json!(sub));
        }
        event.insert("objectRef".into(), Value::Object(object));
    }
    event.insert("requestReceivedTimestamp".into(), json!(now));
    event.insert("stageTimestamp".into(), json!(now));
    let watch = info.is_watch();
    let mut rec = Recording { log: log.clone(), event, level, omit, omit_managed_fields, watch, request_body: None };
    rec.emit("RequestReceived", None);
    if level >= Level::Request && !matches!(*req.method(), http::Method::GET | http::Method::HEAD) {
        let captured = Arc::new(Mutex::new(Captured::default()));
        let body = std::mem::replace(req.body_mut(), Body::empty());
        let limit = rec.log.options.max_event_bytes;
        *req.body_mut() = Body::new(Tee { inner: body, captured: captured.clone(), limit, done: None });
        rec.request_body = Some(captured);
    }
    Some(rec)
}

impl Recording {
    /// Writes the event at `stage` (unless the policy omits it), with `response` (the
    /// response object, for `ResponseComplete` at `RequestResponse`).
    fn emit(&mut self, stage: &str, response: Option<&[u8]>) {
        if self.omit.contains(stage) {
            return;
        }
        let mut event = self.event.clone();
        event.insert("stage".into(), json!(stage));
        event.insert("stageTimestamp".into(), json!(timestamp(SystemTime::now())));
        let mut truncated = false;
        if stage != "RequestReceived" {
            if let Some(captured) = &self.request_body {
                let c = captured.lock().unwrap_or_else(|p| p.into_inner());
                match self.object(&c.bytes) {
                    Some(o) if !c.over => {
                        event.insert("requestObject".into(), o);
                    }
                    _ => truncated |= c.over,
                }
            }
        }
        if let Some(bytes) = response {
            if let Some(o) = self.object(bytes) {
                event.insert("responseObject".into(), o);
            }
        }
        let mut value = Value::Object(event);
        let size = serde_json::to_vec(&value).map(|v| v.len()).unwrap_or(0);
        if size > self.log.options.max_event_bytes {
            if let Some(e) = value.as_object_mut() {
                e.remove("requestObject");
                e.remove("responseObject");
            }
            truncated = true;
        }
        if truncated {
            value["annotations"]["audit.k8s.io/truncated"] = json!("true");
        }
        self.log.write(&value);
    }

    /// A body as the event's object, in JSON whatever it was sent or answered in (kubectl
    /// sends and accepts protobuf; apply sends YAML), without managed fields when asked.
    fn object(&self, bytes: &[u8]) -> Option<Value> {
        use crate::object::{decode_as, BodyFormat};
        let mut v = match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => v,
            Err(_) if bytes.starts_with(&kuorum_protobuf::MAGIC) => {
                Value::Object(decode_as(BodyFormat::Protobuf, bytes).ok()?)
            }
            Err(_) => Value::Object(decode_as(BodyFormat::Yaml, bytes).ok()?),
        };
        if self.omit_managed_fields {
            strip_managed_fields(&mut v);
        }
        Some(v)
    }

    /// The level the request is audited at.
    pub(crate) fn level(&self) -> Level {
        self.level
    }

    /// Finishes the audit with `resp`: its code (and a refusal's Status) in
    /// `responseStatus`; `ResponseComplete` now, or (a watch, a logged response body) when
    /// the body ends.
    pub(crate) fn finish(mut self, resp: Response, annotations: BTreeMap<String, String>) -> Response {
        let code = resp.status().as_u16();
        self.event.insert("responseStatus".into(), json!({"metadata": {}, "code": code}));
        if !annotations.is_empty() {
            self.event.insert("annotations".into(), json!(annotations));
        }
        if self.watch {
            self.emit("ResponseStarted", None);
        }
        let keep_body = self.level == Level::RequestResponse && !self.watch;
        if !self.watch && !keep_body && code < 400 {
            self.emit("ResponseComplete", None);
            return resp;
        }
        // The body is read as it is sent: a refusal's Status, or the logged response.
        let (parts, body) = resp.into_parts();
        let limit = self.log.options.max_event_bytes;
        let captured = Arc::new(Mutex::new(Captured::default()));
        let done: Box<dyn FnOnce(&Captured) + Send> = Box::new(move |c: &Captured| {
            if code >= 400 && !c.over {
                if let Ok(status) = serde_json::from_slice::<Value>(&c.bytes) {
                    let mut s = json!({"metadata": {}, "code": code});
                    for k in ["status", "message", "reason", "details"] {
                        if let Some(v) = status.get(k) {
                            s[k] = v.clone();
                        }
                    }
                    self.event.insert("responseStatus".into(), s);
                }
            }
            let response = (keep_body && !c.over).then_some(c.bytes.as_slice());
            self.emit("ResponseComplete", response);
        });
        Response::from_parts(parts, Body::new(Tee { inner: body, captured, limit, done: Some(done) }))
    }
}

fn strip_managed_fields(v: &mut Value) {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(strip_managed_fields);
    }
}

type Done = Box<dyn FnOnce(&Captured) + Send>;

/// A body that keeps a copy of what passes through it (up to `limit` bytes) and, when it
/// ends or is dropped, hands the copy to `done`.
struct Tee {
    inner: Body,
    captured: Arc<Mutex<Captured>>,
    limit: usize,
    done: Option<Done>,
}

impl http_body::Body for Tee {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                let limit = self.limit;
                self.captured.lock().unwrap_or_else(|p| p.into_inner()).push(data, limit);
            }
        }
        if let Poll::Ready(None) = &polled {
            self.finish();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Tee {
    fn finish(&mut self) {
        if let Some(done) = self.done.take() {
            let c = self.captured.lock().unwrap_or_else(|p| p.into_inner());
            done(&c);
        }
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The audit log's events as read back (for tests and tools): one JSON value per line.
pub fn read_events(text: &str) -> Vec<Value> {
    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(method: &str, path: &str) -> RequestInfo {
        RequestInfo::parse(method, path, None)
    }

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps/*"]
  - level: RequestResponse
    resources:
      - group: "apps"
        resources: ["*/scale"]
      - group: ""
        resources: ["pods"]
        resourceNames: ["special"]
  - level: Request
    namespaces: ["team"]
  - level: Metadata
"#;

    #[test]
    fn the_first_matching_rule_gives_the_level() {
        let p = Policy::parse(POLICY).unwrap();
        let alice = UserInfo::new("alice", &["dev"]);
        let level = |u: &UserInfo, m: &str, path: &str| p.evaluate(u, &info(m, path)).0;
        assert_eq!(level(&UserInfo::new("system:kube-proxy", &[]), "GET", "/api/v1/pods"), Level::None);
        assert_eq!(level(&alice, "GET", "/healthz/etcd"), Level::None);
        assert_eq!(level(&alice, "GET", "/version"), Level::None);
        assert_eq!(level(&alice, "GET", "/api/v1/namespaces/team/secrets/s"), Level::Metadata);
        assert_eq!(level(&alice, "GET", "/apis/apps/v1/namespaces/x/deployments/d/scale"), Level::RequestResponse);
        assert_eq!(level(&alice, "GET", "/apis/apps/v1/namespaces/x/deployments/d"), Level::Metadata);
        assert_eq!(level(&alice, "GET", "/api/v1/namespaces/x/pods/special"), Level::RequestResponse);
        assert_eq!(level(&alice, "GET", "/api/v1/namespaces/x/pods/other"), Level::Metadata);
        assert_eq!(level(&alice, "POST", "/api/v1/namespaces/team/pods"), Level::Request);
        assert_eq!(level(&alice, "GET", "/openapi/v2"), Level::Metadata, "the catch-all");
        let (_, omit, _) = p.evaluate(&alice, &info("GET", "/api/v1/pods"));
        assert!(omit.contains("RequestReceived"));
        assert!(Policy::parse("apiVersion: v1\nkind: Pod\n").is_err());
        assert!(Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Later]\n").is_err());
        assert_eq!(
            Policy::parse("apiVersion: audit.k8s.io/v1\nkind: Policy\n")
                .unwrap()
                .evaluate(&alice, &info("GET", "/api/v1/pods"))
                .0,
            Level::None
        );
    }

    #[test]
    fn rotation_keeps_the_newest_backups() {
        let dir = std::env::temp_dir().join(format!("kuorum-audit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.log");
        let opts = LogOptions { path: path.clone(), max_size_mb: 1, max_backups: 2, ..LogOptions::default() };
        let log = AuditLog::open(Policy::default(), opts).unwrap();
        let big = json!({"pad": "x".repeat(300 << 10)});
        for _ in 0..12 {
            log.write(&big);
            std::thread::sleep(Duration::from_millis(2));
        }
        let kept = backups(&path);
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert!(std::fs::metadata(&path).unwrap().len() <= 1 << 20);
        let name = kept[0].file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("audit-")
                && name.ends_with(".log")
                && name.len() == "audit-2026-11-27T21-50-00.000.log".len(),
            "{name}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
