//! A real one-node cluster: writes go through openraft, reads see them after a barrier.

use std::time::Duration;

use bytes::Bytes;
use kuorum_store::keys::{namespace_key, ObjectKey};
use kuorum_store::{Command, Precondition, WriteError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_apply_in_log_order_with_preconditions() {
    let cluster = kuorum_raft::testing::single_node().await;
    let t = Duration::from_secs(5);
    let ns = Command::Create {
        key: namespace_key("default"),
        namespace: None,
        object: Bytes::from_static(
            br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default","uid":"n"}}"#,
        ),
    };
    let stored = cluster.write(ns, t).await.unwrap().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&stored).unwrap();
    let rv: u64 = v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(rv > 0);

    let key = ObjectKey { group: "", resource: "configmaps", namespace: Some("default"), name: "a" }.encode();
    let cm = |d: &str| {
        Bytes::from(format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","namespace":"default","uid":"u"}},"data":{{"k":"{d}"}}}}"#
        ))
    };
    let created = cluster
        .write(Command::Create { key: key.clone(), namespace: Some("default".into()), object: cm("1") }, t)
        .await
        .unwrap()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&created).unwrap();
    let crv: u64 = v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(crv > rv, "resourceVersions rise with the log");

    let stale = Command::Update {
        key: key.clone(),
        object: cm("2"),
        precondition: Precondition { resource_version: Some(rv), uid: None },
        finalizing: Default::default(),
    };
    assert_eq!(cluster.write(stale, t).await.unwrap(), Err(WriteError::Conflict));

    let applied = cluster.read_barrier(t).await.unwrap();
    assert!(applied >= crv);
    assert_eq!(cluster.get(&key).unwrap().unwrap(), created);
    assert_eq!(cluster.scan("/registry/core/configmaps/", None, 10).unwrap().len(), 1);
    assert_eq!(cluster.leader(), Some(1));
}

/// A compaction below one already applied (a new leader's proposer saw a lower index a
/// window ago) changes nothing: the compaction point only moves forward, so history
/// between the two points is never read after it is gone (simulator seeds 5 and 22).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_never_moves_back() {
    let cluster = kuorum_raft::testing::single_node().await;
    let t = Duration::from_secs(5);
    for _ in 0..6 {
        cluster.write(Command::Noop, t).await.unwrap().unwrap();
    }
    let applied = cluster.read_barrier(t).await.unwrap();
    cluster.write(Command::Compact { rv: applied }, t).await.unwrap().unwrap();
    assert_eq!(cluster.compacted().unwrap(), applied);
    cluster.write(Command::Compact { rv: applied - 3 }, t).await.unwrap().unwrap();
    assert_eq!(cluster.compacted().unwrap(), applied, "a lower compaction is ignored");
    cluster.write(Command::Compact { rv: applied + 1 }, t).await.unwrap().unwrap();
    assert_eq!(cluster.compacted().unwrap(), applied + 1, "a higher one still applies");
}

/// A new cluster starts at data format 1; its leader raises it once every member (here:
/// itself alone) reads format 2, and it stays raised. Writes work on both sides of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_raises_the_data_format_once() {
    use kuorum_raft::format::{Raise, DATA_FORMAT};
    let cluster = kuorum_raft::testing::single_node().await;
    let t = Duration::from_secs(5);
    assert_eq!(cluster.data_format(), (1, DATA_FORMAT), "format 1 until raised");
    let object = |name: &str| {
        Bytes::from(format!(
            r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}","uid":"{name}"}}}}"#
        ))
    };
    let before = Command::Create { key: namespace_key("before"), namespace: None, object: object("before") };
    cluster.write(before, t).await.unwrap().unwrap();
    assert_eq!(cluster.raise_data_format(t).await.unwrap(), Raise::Raised(DATA_FORMAT));
    assert_eq!(cluster.data_format(), (DATA_FORMAT, DATA_FORMAT));
    assert_eq!(cluster.raise_data_format(t).await.unwrap(), Raise::Done(DATA_FORMAT), "raised once");
    // A write of format 2 (with a request id) answers as before; a retried delete of it
    // answers "not found" as a second request.
    let after = Command::Create { key: namespace_key("after"), namespace: None, object: object("after") };
    let created = cluster.write(after, t).await.unwrap().unwrap();
    assert!(std::str::from_utf8(&created).unwrap().contains(r#""name":"after""#));
    let delete = || Command::Delete {
        key: namespace_key("after"),
        precondition: Precondition::default(),
        deletion_timestamp: None,
        finalizing: Default::default(),
    };
    cluster.write(delete(), t).await.unwrap().unwrap();
    assert_eq!(cluster.write(delete(), t).await.unwrap(), Err(WriteError::NotFound));
    assert_eq!(cluster.get(&namespace_key("before")).unwrap().is_some(), true);
}
