//! Owns the simulated clients: controller-like traffic over the REST API, recorded into
//! the [`crate::history`].
//!
//! - A **writer/reader** keeps about ten hot keys (configmaps and secrets in `default`)
//!   changing: creates, updates with a resourceVersion precondition, deletes with one,
//!   and gets and lists with every resourceVersion mode, each request to a node picked
//!   at random. After a write that failed or whose outcome is unknown it lists before
//!   writing again, as a controller would.
//! - A **watcher** lists, then watches from the list's resourceVersion (or asks for
//!   initial events), and every few seconds, or when its stream ends or stalls, resumes
//!   from the last resourceVersion it saw on a *different* node. A 410 makes it relist.
//!
//! Every request has a deadline: turmoil's TCP never retransmits, so a request caught
//! by a partition may otherwise hang forever.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kuorum_api::seams::{Entropy, SplitMix64};
use serde_json::{json, Value};

use crate::client::{request_within, Dial, Reply, WatchLines};
use crate::history::{
    EventType, Key, Op, OpKind, Outcome, ReadMode, Recorder, Seen, SessionEnd, WatchItem, WatchSession, WatchStart,
};
use crate::replay::{seen_of, VALUE_ANNOTATION};

/// The resources the traffic touches, all in namespace `default`.
pub const RESOURCES: [&str; 2] = ["configmaps", "secrets"];
const REQUEST_DEADLINE: Duration = Duration::from_secs(4);
/// A watch that delivers nothing (not even a bookmark) for this long is presumed stalled.
const WATCH_STALL: Duration = Duration::from_secs(4);

/// What every client shares.
#[derive(Clone)]
pub struct Traffic {
    pub rec: Recorder,
    pub nodes: u64,
    pub keys: u32,
    pub seed: u64,
    /// How the clients reach the nodes.
    pub dial: Arc<dyn Dial>,
}

fn prefix_of(resource: &str) -> String {
    format!("{resource}/default/")
}

fn collection_path(resource: &str) -> String {
    format!("/api/v1/namespaces/default/{resource}")
}

fn rv_of(body: &Value) -> Option<u64> {
    body.get("metadata")?.get("resourceVersion")?.as_str()?.parse().ok()
}

fn reason_of(body: &Value) -> &str {
    body.get("reason").and_then(|r| r.as_str()).unwrap_or("")
}

fn object(resource: &str, name: &str, value: u64, rv: Option<u64>) -> Value {
    let kind = if resource == "secrets" { "Secret" } else { "ConfigMap" };
    let mut meta = json!({"name": name, "namespace": "default", "annotations": {VALUE_ANNOTATION: value.to_string()}});
    if let Some(rv) = rv {
        meta["resourceVersion"] = json!(rv.to_string());
    }
    json!({"apiVersion": "v1", "kind": kind, "metadata": meta})
}

fn mode_query(mode: ReadMode, list: bool) -> String {
    match mode {
        ReadMode::MostRecent => String::new(),
        ReadMode::Any => "?resourceVersion=0".into(),
        ReadMode::NotOlderThan(n) if list => format!("?resourceVersion={n}&resourceVersionMatch=NotOlderThan"),
        ReadMode::NotOlderThan(n) => format!("?resourceVersion={n}"),
        ReadMode::Exact(n) => format!("?resourceVersion={n}&resourceVersionMatch=Exact"),
    }
}

/// A write's outcome from its reply (None: no reply).
fn write_outcome(reply: Option<&Reply>) -> Outcome {
    let Some(r) = reply else { return Outcome::Unknown };
    match r.status {
        200 | 201 => rv_of(&r.body).map(|rv| Outcome::Written { rv }).unwrap_or(Outcome::Unknown),
        404 => Outcome::NotFound,
        409 if reason_of(&r.body) == "AlreadyExists" => Outcome::AlreadyExists,
        409 => Outcome::Conflict,
        // A timeout or an unavailable leader after the write may have been proposed.
        500 | 503 | 504 => Outcome::Unknown,
        code => Outcome::Refused(code),
    }
}

/// A read's outcome from its reply; `list_prefix` is set for a list, whose items are
/// named `prefix + name` as the checkers name keys.
fn read_outcome(reply: Option<&Reply>, list_prefix: Option<&str>) -> Outcome {
    let Some(r) = reply else { return Outcome::Unknown };
    match (r.status, list_prefix) {
        (200, Some(prefix)) => {
            let items = r.body["items"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|o| {
                            let name = o["metadata"]["name"].as_str()?;
                            Some((format!("{prefix}{name}"), seen_of(o)?))
                        })
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            match rv_of(&r.body) {
                Some(rv) => Outcome::Listed { rv, items: items.into_iter().collect() },
                None => Outcome::Refused(200),
            }
        }
        (200, None) => seen_of(&r.body).map(Outcome::Found).unwrap_or(Outcome::Refused(200)),
        (404, _) => Outcome::NotFound,
        (410, _) => Outcome::Gone,
        (504, _) if reason_of(&r.body) == "Timeout" => Outcome::TooLarge,
        (code, _) => Outcome::Refused(code),
    }
}

/// The method, path and body that carry `kind`.
fn http_request(kind: &OpKind) -> (&'static str, String, Option<Value>) {
    match kind {
        OpKind::Create { key, value } => {
            let (resource, name) = split_key(key);
            ("POST", collection_path(resource), Some(object(resource, name, *value, None)))
        }
        OpKind::Update { key, value, precondition } => {
            let (resource, name) = split_key(key);
            let body = object(resource, name, *value, Some(*precondition));
            ("PUT", format!("{}/{name}", collection_path(resource)), Some(body))
        }
        OpKind::Delete { key, precondition } => {
            let (resource, name) = split_key(key);
            let body = json!({"kind": "DeleteOptions", "apiVersion": "v1",
                "preconditions": {"resourceVersion": precondition.to_string()}});
            ("DELETE", format!("{}/{name}", collection_path(resource)), Some(body))
        }
        OpKind::Get { key, mode } => {
            let (resource, name) = split_key(key);
            ("GET", format!("{}/{name}{}", collection_path(resource), mode_query(*mode, false)), None)
        }
        OpKind::List { prefix, mode } => {
            let resource = prefix.split('/').next().unwrap_or_default();
            ("GET", format!("{}{}", collection_path(resource), mode_query(*mode, true)), None)
        }
    }
}

impl Traffic {
    fn pick_node(&self, rng: &SplitMix64) -> u64 {
        1 + rng.next_u64() % self.nodes
    }

    /// Sends one request and records it as `kind`.
    async fn run_op(&self, client: u32, node: u64, kind: OpKind) -> Outcome {
        let (method, path, body) = http_request(&kind);
        let call = self.rec.tick();
        let reply = request_within(REQUEST_DEADLINE, self.dial.as_ref(), node, method, &path, body.as_ref()).await;
        let outcome = match &kind {
            k if k.is_write() => write_outcome(reply.as_ref()),
            OpKind::List { prefix, .. } => read_outcome(reply.as_ref(), Some(prefix)),
            _ => read_outcome(reply.as_ref(), None),
        };
        let ret = if outcome == Outcome::Unknown { u64::MAX } else { self.rec.tick() };
        self.rec.op(Op { client, node, kind, call, ret, outcome: outcome.clone() });
        outcome
    }

    /// A read after the run, recorded like any other (client 9999).
    pub async fn final_read(&self, node: u64, kind: OpKind) -> Outcome {
        self.run_op(9999, node, kind).await
    }

    /// One writer/reader client, until the run drops it.
    pub async fn writer(self, client: u32) {
        let rng = SplitMix64::new(self.seed ^ (0xC11E_u64 << 20) ^ client as u64);
        // What this client believes each key holds (None: absent), and the highest RV it
        // has seen (for NotOlderThan and Exact reads).
        let mut known: BTreeMap<Key, Option<Seen>> = BTreeMap::new();
        let mut seen_rv = 0u64;
        let mut must_list = true;
        let mut next_value = (client as u64 + 1) << 32;
        loop {
            tokio::time::sleep(Duration::from_millis(5 + rng.next_u64() % 60)).await;
            let node = self.pick_node(&rng);
            let resource = RESOURCES[(rng.next_u64() % RESOURCES.len() as u64) as usize];
            let prefix = prefix_of(resource);
            let roll = rng.next_u64() % 100;
            if must_list || roll < 25 {
                let mode = if must_list { ReadMode::MostRecent } else { self.read_mode(&rng, seen_rv, true) };
                if let Outcome::Listed { rv, items } =
                    self.run_op(client, node, OpKind::List { prefix: prefix.clone(), mode }).await
                {
                    seen_rv = seen_rv.max(rv);
                    if mode == ReadMode::MostRecent {
                        known.retain(|k, _| !k.starts_with(&prefix));
                        for i in 0..self.keys {
                            let k = format!("{prefix}k{i}");
                            known.insert(k.clone(), items.get(&k).copied());
                        }
                        must_list = false;
                    }
                }
                continue;
            }
            let key = format!("{prefix}k{}", rng.next_u64() % self.keys as u64);
            if roll < 50 {
                let mode = self.read_mode(&rng, seen_rv, false);
                match self.run_op(client, node, OpKind::Get { key: key.clone(), mode }).await {
                    Outcome::Found(s) => {
                        seen_rv = seen_rv.max(s.mod_rv);
                        if mode == ReadMode::MostRecent {
                            known.insert(key, Some(s));
                        }
                    }
                    Outcome::NotFound if mode == ReadMode::MostRecent => {
                        known.insert(key, None);
                    }
                    _ => {}
                }
                continue;
            }
            next_value += 1;
            let kind = match known.get(&key).copied().flatten() {
                None => OpKind::Create { key: key.clone(), value: next_value },
                Some(s) if roll < 88 => OpKind::Update { key: key.clone(), value: next_value, precondition: s.mod_rv },
                Some(s) => OpKind::Delete { key: key.clone(), precondition: s.mod_rv },
            };
            let is_delete = matches!(kind, OpKind::Delete { .. });
            match self.run_op(client, node, kind).await {
                Outcome::Written { rv } => {
                    seen_rv = seen_rv.max(rv);
                    known.insert(key, (!is_delete).then_some(Seen { mod_rv: rv, value: next_value }));
                }
                _ => must_list = true,
            }
        }
    }

    fn read_mode(&self, rng: &SplitMix64, seen_rv: u64, list: bool) -> ReadMode {
        match rng.next_u64() % if list { 8 } else { 6 } {
            0..=2 => ReadMode::MostRecent,
            3 => ReadMode::Any,
            4 | 5 => ReadMode::NotOlderThan(seen_rv.saturating_sub(rng.next_u64() % 5)),
            _ => ReadMode::Exact(seen_rv.saturating_sub(rng.next_u64() % 30).max(1)),
        }
    }

    /// One list-then-watch client that resumes across nodes, until the run drops it.
    pub async fn watcher(self, watcher: u32) {
        let rng = SplitMix64::new(self.seed ^ (0x3A7C_u64 << 24) ^ watcher as u64);
        let resource = RESOURCES[watcher as usize % RESOURCES.len()];
        let prefix = prefix_of(resource);
        let mut seq = 0u32;
        // Where to resume: the last RV seen and the node that delivered it.
        let mut resume: Option<(u64, u64)> = None;
        let mut node = self.pick_node(&rng);
        loop {
            let start = match resume {
                Some((rv, _)) => WatchStart::After(rv),
                None if rng.next_u64().is_multiple_of(4) => WatchStart::InitialEvents,
                None => {
                    let list = OpKind::List { prefix: prefix.clone(), mode: ReadMode::MostRecent };
                    match self.run_op(1000 + watcher, node, list).await {
                        Outcome::Listed { rv, .. } => WatchStart::After(rv),
                        _ => {
                            node = self.other_node(&rng, node);
                            tokio::time::sleep(Duration::from_millis(200)).await;
                            continue;
                        }
                    }
                }
            };
            let query = match start {
                WatchStart::After(rv) => format!("?watch=true&allowWatchBookmarks=true&resourceVersion={rv}"),
                WatchStart::InitialEvents => {
                    "?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                        .into()
                }
            };
            seq += 1;
            let session = WatchSession {
                watcher,
                seq,
                node,
                prefix: prefix.clone(),
                start,
                rv_from_node: resume.map(|(_, n)| n).filter(|_| matches!(start, WatchStart::After(_))),
                call: self.rec.tick(),
                items: Vec::new(),
                ended: SessionEnd::Open,
            };
            let idx = self.rec.session_start(session);
            let (end, last) = self.stream(idx, node, &prefix, &query, &rng).await;
            self.rec.session_end(idx, end.0);
            match (end.1, last) {
                (true, _) => resume = None,
                (false, Some(rv)) => resume = Some((rv, node)),
                (false, None) => {
                    if let Some((rv, _)) = resume {
                        resume = Some((rv, resume.map(|r| r.1).unwrap_or(node)));
                    }
                }
            }
            node = self.other_node(&rng, node);
        }
    }

    fn other_node(&self, rng: &SplitMix64, node: u64) -> u64 {
        if self.nodes < 2 {
            return node;
        }
        1 + (node + rng.next_u64() % (self.nodes - 1)) % self.nodes
    }

    /// Reads one watch session: returns how it ended, whether the watcher must relist
    /// (410), and the last RV it saw (event or bookmark).
    async fn stream(
        &self,
        idx: usize,
        node: u64,
        prefix: &str,
        query: &str,
        rng: &SplitMix64,
    ) -> ((SessionEnd, bool), Option<u64>) {
        let resource = prefix.split('/').next().unwrap_or_default();
        let path = format!("{}{query}", collection_path(resource));
        let mut last = None;
        let open = tokio::time::timeout(REQUEST_DEADLINE, WatchLines::open(self.dial.as_ref(), node, &path)).await;
        let mut lines = match open {
            Ok(Ok(l)) if l.status == 200 => l,
            Ok(Ok(l)) => {
                self.rec.session_item(idx, WatchItem::Error { code: l.status });
                return ((SessionEnd::ClosedByServer, l.status == 410), None);
            }
            _ => return ((SessionEnd::ClosedByClient, false), None),
        };
        // Switch nodes after a while even if all is well: resumes elsewhere are the point.
        let switch_at = tokio::time::Instant::now() + Duration::from_millis(1000 + rng.next_u64() % 5000);
        loop {
            let line = tokio::select! {
                l = tokio::time::timeout(WATCH_STALL, lines.next_line()) => l,
                _ = tokio::time::sleep_until(switch_at) => return ((SessionEnd::ClosedByClient, false), last),
            };
            let line = match line {
                Ok(Ok(Some(l))) => l,
                Ok(Ok(None)) => return ((SessionEnd::ClosedByServer, false), last),
                Ok(Err(_)) | Err(_) => return ((SessionEnd::ClosedByClient, false), last),
            };
            let Ok(ev) = serde_json::from_slice::<Value>(&line) else { continue };
            let obj = &ev["object"];
            let item = match ev["type"].as_str().unwrap_or_default() {
                "ERROR" => {
                    let code = obj["code"].as_u64().unwrap_or(0) as u16;
                    self.rec.session_item(idx, WatchItem::Error { code });
                    return ((SessionEnd::ClosedByServer, code == 410), last);
                }
                "BOOKMARK" => {
                    let Some(rv) = rv_of(obj) else { continue };
                    let initial_end =
                        obj["metadata"]["annotations"]["k8s.io/initial-events-end"].as_str() == Some("true");
                    WatchItem::Bookmark { rv, initial_end }
                }
                t => {
                    let kind = match t {
                        "ADDED" => EventType::Added,
                        "MODIFIED" => EventType::Modified,
                        _ => EventType::Deleted,
                    };
                    let (Some(name), Some(seen)) = (obj["metadata"]["name"].as_str(), seen_of(obj)) else { continue };
                    WatchItem::Event { kind, key: format!("{prefix}{name}"), seen }
                }
            };
            last = Some(match &item {
                WatchItem::Bookmark { rv, .. } => *rv,
                WatchItem::Event { seen, .. } => seen.mod_rv,
                WatchItem::Error { .. } => unreachable!("returned above"),
            });
            self.rec.session_item(idx, item);
        }
    }
}

/// `configmaps/default/k1` → (`configmaps`, `k1`).
fn split_key(key: &str) -> (&str, &str) {
    let mut parts = key.splitn(3, '/');
    let resource = parts.next().unwrap_or_default();
    let _ns = parts.next();
    (resource, parts.next().unwrap_or_default())
}
