//! A ConfigMap replicator, written the way such controllers are written with
//! kube-runtime, and its chaos test.
//!
//! The controller copies every ConfigMap labelled `replicate=true` in namespace `source`
//! into namespaces `team-a` and `team-b` (server-side apply, so a copy is created or
//! updated alike), and deletes the copies when the source is deleted. It follows the
//! sources with kube-runtime's `watcher`, remembering which sources it has replicated.
//!
//! **The planted bug** ([`Version::Buggy`]): when the watcher restarts (after a 410, the
//! watch stream is relisted: `Init`, `InitApply`..., `InitDone`), the buggy version takes
//! `Init` as "everything I knew is gone" and deletes the copies of every source it knew,
//! re-creating them as the relist goes on. Every team loses its ConfigMaps for a moment
//! on every relist. Nothing goes wrong until a watch expires, which in a test against a
//! quiet API server never happens.
//!
//! **The fix** ([`Version::Fixed`]): a relist is a fresh list, not deletions. Remember
//! what the relist shows, and at `InitDone` delete only the copies whose source is no
//! longer there (it was deleted while the watch was down). Which copies exist is read
//! from the team namespaces, not remembered: the first version of this fix compared the
//! relist with the sources it remembered, and the simulator found it leaving copies of
//! sources deleted while the controller itself was restarting (it remembered nothing).
//! The copies carry a `replicator/from` annotation so the controller knows its own.
//!
//! The invariant, checked over every change the cluster applied: a copy is never deleted
//! while its source exists. And at the end, after the faults: every source has an
//! identical copy in every team namespace, and no copy is left without a source.
//!
//! Run it: `cargo run --release -p kuorum-chaos --example configmap_replicator -- [buggy] [SEEDS]`;
//! its tests: `cargo test --release -p kuorum-chaos --example configmap_replicator`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, watcher, Event};
use kube::runtime::WatchStreamExt;
use kube::Client;
use kuorum_chaos::{ChangeKind, FaultMix, History, Outcome, Simulation};

const SOURCE: &str = "source";
const TEAMS: [&str; 2] = ["team-a", "team-b"];
const SOURCES: usize = 8;

/// Which controller runs: the one with the planted bug, or the fixed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Buggy,
    Fixed,
}

/// The controller: runs until its host is stopped.
async fn replicator(client: Client, version: Version) -> Outcome {
    let sources: Api<ConfigMap> = Api::namespaced(client.clone(), SOURCE);
    let config = watcher::Config::default().labels("replicate=true");
    let mut events = watcher(sources, config).default_backoff().boxed();
    // Sources replicated so far, and those a relist in progress has shown.
    let mut known: BTreeSet<String> = BTreeSet::new();
    let mut relisted: BTreeSet<String> = BTreeSet::new();
    while let Some(event) = events.next().await {
        // The backoff retries failed watches; an error here is one attempt that failed.
        let Ok(event) = event else { continue };
        match event {
            Event::Init => {
                relisted.clear();
                if version == Version::Buggy {
                    // BUG: a relist is taken as the deletion of everything known.
                    for name in std::mem::take(&mut known) {
                        delete_copies(&client, &name).await;
                    }
                }
            }
            Event::InitApply(cm) => {
                let name = cm.metadata.name.clone().unwrap_or_default();
                replicate(&client, &cm).await;
                relisted.insert(name.clone());
                known.insert(name);
            }
            Event::InitDone => {
                // Sources deleted while the watch was down (or this controller was not
                // running): no Delete event came for them, but their copies are there.
                for gone in copied_sources(&client).await.difference(&relisted) {
                    delete_copies(&client, gone).await;
                }
                known = std::mem::take(&mut relisted);
            }
            Event::Apply(cm) => {
                replicate(&client, &cm).await;
                known.insert(cm.metadata.name.clone().unwrap_or_default());
            }
            Event::Delete(cm) => {
                let name = cm.metadata.name.clone().unwrap_or_default();
                delete_copies(&client, &name).await;
                known.remove(&name);
            }
        }
    }
    Ok(())
}

/// Applies a copy of `source` in every team namespace, retrying until each is written.
async fn replicate(client: &Client, source: &ConfigMap) {
    let name = source.metadata.name.clone().unwrap_or_default();
    for team in TEAMS {
        let copy = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": team, "annotations": {"replicator/from": format!("{SOURCE}/{name}")}},
            "data": source.data.clone().unwrap_or_default(),
        });
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), team);
        let params = PatchParams::apply("replicator").force();
        let patch = Patch::Apply(&copy);
        retry(|| api.patch(&name, &params, &patch)).await;
    }
}

/// The sources that have a copy in some team namespace, read from the copies'
/// `replicator/from` annotations.
async fn copied_sources(client: &Client) -> BTreeSet<String> {
    let mut sources = BTreeSet::new();
    for team in TEAMS {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), team);
        let params = kube::api::ListParams::default();
        for copy in retry(|| api.list(&params)).await.items {
            let from = copy.metadata.annotations.as_ref().and_then(|a| a.get("replicator/from"));
            if let Some(name) = from.and_then(|f| f.strip_prefix(&format!("{SOURCE}/"))) {
                sources.insert(name.to_string());
            }
        }
    }
    sources
}

/// Deletes the copies of source `name` (a copy already gone is fine).
async fn delete_copies(client: &Client, name: &str) {
    for team in TEAMS {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), team);
        retry(|| async {
            match api.delete(name, &DeleteParams::default()).await {
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
                other => other.map(|_| ()),
            }
        })
        .await;
    }
}

/// Calls `f` until it succeeds, backing off from 100 ms to 3 s between attempts.
async fn retry<T, F, Fut>(mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let mut wait = Duration::from_millis(100);
    loop {
        match f().await {
            Ok(v) => return v,
            Err(_) => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(3));
            }
        }
    }
}

/// The users: create the namespaces, then sources over time, update some, delete two.
async fn users(env: kuorum_chaos::Env) -> Outcome {
    let client = env.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in std::iter::once(SOURCE).chain(TEAMS) {
        let obj: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).expect("namespace");
        retry(|| async {
            match namespaces.create(&PostParams::default(), &obj).await {
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                other => other.map(|_| ()),
            }
        })
        .await;
    }
    let sources: Api<ConfigMap> = Api::namespaced(client, SOURCE);
    let params = PatchParams::apply("users").force();
    let write = |i: usize, version: u32| {
        let name = format!("config-{i}");
        let obj = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"replicate": "true"}},
            "data": {"version": version.to_string(), "owner": format!("team-{}", i % 3)},
        });
        (name, obj)
    };
    for i in 0..SOURCES {
        let (name, obj) = write(i, 1);
        let patch = Patch::Apply(&obj);
        retry(|| sources.patch(&name, &params, &patch)).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    for i in (0..SOURCES).step_by(3) {
        let (name, obj) = write(i, 2);
        let patch = Patch::Apply(&obj);
        retry(|| sources.patch(&name, &params, &patch)).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    for i in [SOURCES - 1, SOURCES - 2] {
        let name = format!("config-{i}");
        retry(|| async {
            match sources.delete(&name, &DeleteParams::default()).await {
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
                other => other.map(|_| ()),
            }
        })
        .await;
    }
    Ok(())
}

/// The invariant over the cluster's history: no copy is deleted while its source exists.
fn no_copy_deleted_while_its_source_exists(history: &History) -> Outcome {
    let mut sources: BTreeSet<String> = BTreeSet::new();
    for c in history.of("configmaps") {
        if c.namespace == SOURCE {
            match c.kind {
                ChangeKind::Deleted => sources.remove(&c.name),
                _ => sources.insert(c.name.clone()),
            };
        } else if TEAMS.contains(&c.namespace.as_str()) && c.kind == ChangeKind::Deleted && sources.contains(&c.name) {
            return Err(format!(
                "copy {}/{} deleted at {:.3}s (resourceVersion {}) while its source {SOURCE}/{} exists",
                c.namespace,
                c.name,
                c.at.as_secs_f64(),
                c.rv,
                c.name
            ));
        }
    }
    Ok(())
}

/// The end state: every source copied, identically, to every team; no stray copy.
async fn copies_match_sources(env: kuorum_chaos::Env) -> Outcome {
    let client = env.client();
    let data = |cms: Vec<ConfigMap>| -> BTreeMap<String, BTreeMap<String, String>> {
        cms.into_iter().map(|c| (c.metadata.name.unwrap_or_default(), c.data.unwrap_or_default())).collect()
    };
    let list = |ns: &'static str| {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        async move {
            let params = kube::api::ListParams::default();
            retry(|| api.list(&params)).await.items
        }
    };
    let mut sources = data(list(SOURCE).await);
    sources.retain(|name, _| name.starts_with("config-"));
    if sources.len() != SOURCES - 2 {
        return Err(format!("{} sources exist, expected {}", sources.len(), SOURCES - 2));
    }
    for team in TEAMS {
        let mut copies = data(list(team).await);
        copies.retain(|name, _| name.starts_with("config-"));
        if copies != sources {
            return Err(format!("{team} has {copies:?}, the sources are {sources:?}"));
        }
    }
    Ok(())
}

/// One run: a 3-node cluster, the replicator, the users, random faults for 40 s, then
/// 35 s to catch up: a watch connection a partition broke without a word is only found
/// dead after the clients' 20 s idle timeout (seed 752 with 20 s: a Delete event arrived
/// 29 s after the faults).
pub fn scenario(seed: u64, version: Version) -> Simulation {
    Simulation::new(seed)
        .duration(Duration::from_secs(40))
        .settle(Duration::from_secs(35))
        .faults(FaultMix::all())
        .controller("replicator", move |env| replicator(env.client(), version))
        .workload("users", users)
        .check(copies_match_sources)
        .check_history(no_copy_deleted_while_its_source_exists)
}

/// `configmap_replicator [buggy] [FIRST..END]`: runs the seeds and prints each verdict.
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let version = if args.iter().any(|a| a == "buggy") { Version::Buggy } else { Version::Fixed };
    println!("the replicator, {} version", if version == Version::Buggy { "buggy" } else { "fixed" });
    kuorum_chaos::seeds::main_over_seeds(&args, |seed| scenario(seed, version));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The planted bug is caught within the first 10 seeds, by the invariant it breaks,
    /// and the failing seed replays the same failure.
    #[test]
    fn the_planted_bug_is_caught() {
        kuorum_chaos::seeds::assert_caught(0..10, |seed| scenario(seed, Version::Buggy), "while its source");
    }

    /// The fixed controller passes 1,000 seeds (`KUORUM_CHAOS_SEEDS` for another number).
    #[test]
    fn the_fixed_controller_passes() {
        let n = kuorum_chaos::seeds::seed_count(1000);
        kuorum_chaos::check_seeds(0..n, |seed| scenario(seed, Version::Fixed));
    }
}
