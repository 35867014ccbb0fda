//! The conformance suite every engine implementation must pass: the in-memory engines
//! here, the RocksDB engines in `kuorum-store-rocks`. Each check panics with a message
//! naming what broke. openraft's own storage suite runs on top of these engines in
//! `kuorum-raft`, through the adaptors.

use bytes::Bytes;

use crate::apply::{apply_command, BatchApplier};
use crate::command::{Command, Precondition, WriteError};
use crate::engine::{LogEngine, ObjectBatch, ObjectEngine};
use crate::keys;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Runs every log-engine check, each on a fresh engine from `make`.
pub async fn log_engine_suite<E: LogEngine, F: Fn() -> E>(make: F) {
    log_append_read(&make()).await;
    log_truncate_purge(&make()).await;
    log_meta(&make()).await;
}

async fn log_append_read<E: LogEngine>(e: &E) {
    assert_eq!(e.last_entry().unwrap(), None, "a new log is empty");
    e.append(vec![(1, b("a")), (2, b("b"))]).await.unwrap();
    e.append(vec![(3, b("c"))]).await.unwrap();
    e.sync().await.unwrap();
    assert_eq!(e.last_entry().unwrap(), Some((3, b("c"))));
    let r = e.read_range(2, 10).unwrap();
    assert_eq!(
        r,
        vec![(2, b("b")), (3, b("c"))],
        "read_range is [start, end)"
    );
    assert!(
        e.read_range(3, 3).unwrap().is_empty(),
        "an empty range reads nothing"
    );
    assert_eq!(e.read_range(1, 2).unwrap(), vec![(1, b("a"))]);
    // Appending at an existing index overwrites it (after a truncate).
    e.truncate_from(3).await.unwrap();
    e.append(vec![(3, b("c2"))]).await.unwrap();
    assert_eq!(e.read_range(3, 4).unwrap(), vec![(3, b("c2"))]);
}

async fn log_truncate_purge<E: LogEngine>(e: &E) {
    e.append((1..=10).map(|i| (i, b(&i.to_string()))).collect())
        .await
        .unwrap();
    e.truncate_from(8).await.unwrap();
    assert_eq!(
        e.last_entry().unwrap().map(|x| x.0),
        Some(7),
        "truncate_from removes >= index"
    );
    e.purge_upto(3).await.unwrap();
    let r: Vec<u64> = e
        .read_range(0, 100)
        .unwrap()
        .into_iter()
        .map(|x| x.0)
        .collect();
    assert_eq!(r, vec![4, 5, 6, 7], "purge_upto removes <= index");
    e.purge_upto(7).await.unwrap();
    assert_eq!(
        e.last_entry().unwrap(),
        None,
        "purging everything empties the log"
    );
    e.append(vec![(8, b("8"))]).await.unwrap();
    assert_eq!(
        e.last_entry().unwrap(),
        Some((8, b("8"))),
        "the log continues after a full purge"
    );
}

async fn log_meta<E: LogEngine>(e: &E) {
    assert_eq!(e.get_meta("vote").unwrap(), None);
    e.put_meta("vote", b("v1")).await.unwrap();
    e.put_meta("vote", b("v2")).await.unwrap();
    e.put_meta("committed", b("c")).await.unwrap();
    assert_eq!(e.get_meta("vote").unwrap(), Some(b("v2")));
    assert_eq!(e.get_meta("committed").unwrap(), Some(b("c")));
}

/// Runs every object-engine check, each on a fresh engine from `make`.
pub async fn object_engine_suite<E: ObjectEngine, F: Fn() -> E>(make: F) {
    object_write_get_scan(&make()).await;
    object_dump_restore(&make(), &make()).await;
    apply_preconditions(&make()).await;
    apply_batch_sees_its_own_writes(&make()).await;
    apply_namespace_delete_takes_contents(&make()).await;
}

async fn object_write_get_scan<E: ObjectEngine>(e: &E) {
    let batch = ObjectBatch {
        objects: vec![
            ("/p/a/1".into(), Some(b("1"))),
            ("/p/a/2".into(), Some(b("2"))),
            ("/p/ab/3".into(), Some(b("3"))),
            ("/p/b/4".into(), Some(b("4"))),
            ("/p/a/2".into(), None),
            ("/p/a/5".into(), Some(b("5"))),
        ],
        meta: vec![("applied".into(), b("x"))],
    };
    e.write(batch).await.unwrap();
    assert_eq!(e.get("/p/a/1").unwrap(), Some(b("1")));
    assert_eq!(
        e.get("/p/a/2").unwrap(),
        None,
        "a later delete in a batch wins"
    );
    assert_eq!(e.get_meta("applied").unwrap(), Some(b("x")));
    let keys: Vec<String> = e
        .scan("/p/a/", None, 100)
        .unwrap()
        .into_iter()
        .map(|x| x.0)
        .collect();
    assert_eq!(
        keys,
        vec!["/p/a/1", "/p/a/5"],
        "a prefix scan stays inside its prefix"
    );
    let keys: Vec<String> = e
        .scan("/p/", Some("/p/a/5"), 2)
        .unwrap()
        .into_iter()
        .map(|x| x.0)
        .collect();
    assert_eq!(
        keys,
        vec!["/p/ab/3", "/p/b/4"],
        "start_after is exclusive and limit holds"
    );
    assert!(e.scan("/q/", None, 10).unwrap().is_empty());
    e.sync().await.unwrap();
}

async fn object_dump_restore<E: ObjectEngine>(src: &E, dst: &E) {
    src.write(ObjectBatch {
        objects: vec![
            ("/k/1".into(), Some(b("one"))),
            ("/k/2".into(), Some(b("two"))),
        ],
        meta: vec![("m".into(), b("meta"))],
    })
    .await
    .unwrap();
    dst.write(ObjectBatch {
        objects: vec![("/old".into(), Some(b("gone")))],
        meta: vec![],
    })
    .await
    .unwrap();
    let dump = src.dump().unwrap();
    dst.restore(dump.clone()).await.unwrap();
    assert_eq!(
        dst.dump().unwrap(),
        dump,
        "restore replaces everything with the dump"
    );
    assert_eq!(dst.get("/old").unwrap(), None);
}

fn cm(name: &str, uid: &str, data: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","uid":"{uid}"}},"data":{{"k":"{data}"}}}}"#
    ))
}

fn rv_of(bytes: &Bytes) -> String {
    let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn apply_preconditions<E: ObjectEngine>(e: &E) {
    let ns = Bytes::from(
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns","uid":"n1"}}"#,
    );
    let key = keys::ObjectKey {
        group: "",
        resource: "configmaps",
        namespace: Some("ns"),
        name: "a",
    }
    .encode();
    let create = Command::Create {
        key: key.clone(),
        namespace: Some("ns".into()),
        object: cm("a", "u1", "1"),
    };

    let out = apply_command(e, 1, &create).await.unwrap();
    assert_eq!(
        out.result,
        Err(WriteError::NamespaceNotFound("ns".into())),
        "create needs its namespace"
    );

    let ns_create = Command::Create {
        key: keys::namespace_key("ns"),
        namespace: None,
        object: ns,
    };
    apply_command(e, 2, &ns_create)
        .await
        .unwrap()
        .result
        .unwrap();
    let created = apply_command(e, 3, &create).await.unwrap().result.unwrap();
    assert_eq!(rv_of(&created), "3", "resourceVersion is the log index");
    assert_eq!(
        apply_command(e, 4, &create).await.unwrap().result,
        Err(WriteError::AlreadyExists)
    );

    let stale = Command::Update {
        key: key.clone(),
        object: cm("a", "other-uid", "2"),
        precondition: Precondition {
            resource_version: Some(2),
            uid: None,
        },
    };
    assert_eq!(
        apply_command(e, 5, &stale).await.unwrap().result,
        Err(WriteError::Conflict)
    );
    let fresh = Command::Update {
        key: key.clone(),
        object: cm("a", "other-uid", "2"),
        precondition: Precondition {
            resource_version: Some(3),
            uid: None,
        },
    };
    let updated = apply_command(e, 6, &fresh).await.unwrap().result.unwrap();
    assert_eq!(rv_of(&updated), "6");
    let v: serde_json::Value = serde_json::from_slice(&updated).unwrap();
    assert_eq!(v["metadata"]["uid"], "u1", "an update keeps the stored uid");
    assert_eq!(v["data"]["k"], "2");

    // An update that changes nothing writes nothing and keeps the resourceVersion.
    let same = Command::Update {
        key: key.clone(),
        object: cm("a", "u1", "2"),
        precondition: Precondition::default(),
    };
    let out = apply_command(e, 7, &same).await.unwrap();
    assert_eq!(rv_of(&out.result.unwrap()), "6");
    assert!(out.changes.is_empty(), "a no-op update is no change");

    let wrong_uid = Command::Delete {
        key: key.clone(),
        precondition: Precondition {
            resource_version: None,
            uid: Some("zz".into()),
        },
    };
    assert!(matches!(
        apply_command(e, 8, &wrong_uid).await.unwrap().result,
        Err(WriteError::UidMismatch { .. })
    ));
    let del = Command::Delete {
        key: key.clone(),
        precondition: Precondition {
            resource_version: Some(6),
            uid: Some("u1".into()),
        },
    };
    let deleted = apply_command(e, 9, &del).await.unwrap().result.unwrap();
    assert_eq!(
        rv_of(&deleted),
        "9",
        "a deleted object answers with the deleting resourceVersion"
    );
    assert_eq!(e.get(&key).unwrap(), None);
    assert_eq!(
        apply_command(e, 10, &del).await.unwrap().result,
        Err(WriteError::NotFound)
    );
    let missing = Command::Update {
        key,
        object: cm("a", "u1", "3"),
        precondition: Precondition::default(),
    };
    assert_eq!(
        apply_command(e, 11, &missing).await.unwrap().result,
        Err(WriteError::NotFound)
    );
}

async fn apply_batch_sees_its_own_writes<E: ObjectEngine>(e: &E) {
    let key = "/registry/core/nodes/n1".to_string();
    let node = Bytes::from(r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}"#);
    let mut applier = BatchApplier::new(e);
    applier
        .apply(
            1,
            &Command::Create {
                key: key.clone(),
                namespace: None,
                object: node.clone(),
            },
        )
        .unwrap()
        .result
        .unwrap();
    let racer = |v: &str| Command::Update {
        key: key.clone(),
        object: Bytes::from(format!(
            r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n1","labels":{{"v":"{v}"}}}}}}"#
        )),
        precondition: Precondition {
            resource_version: Some(1),
            uid: None,
        },
    };
    assert!(
        applier.apply(2, &racer("a")).unwrap().result.is_ok(),
        "first racer wins"
    );
    assert_eq!(
        applier.apply(3, &racer("b")).unwrap().result,
        Err(WriteError::Conflict),
        "second racer sees the first"
    );
    assert_eq!(
        e.get(&key).unwrap(),
        None,
        "nothing is written before the batch is"
    );
    e.write(applier.into_batch(vec![("applied".into(), b("3"))]))
        .await
        .unwrap();
    assert_eq!(rv_of(&e.get(&key).unwrap().unwrap()), "2");
}

async fn apply_namespace_delete_takes_contents<E: ObjectEngine>(e: &E) {
    let ns = |n: &str| Command::Create {
        key: keys::namespace_key(n),
        namespace: None,
        object: Bytes::from(format!(
            r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{n}"}}}}"#
        )),
    };
    let in_ns = |n: &str, name: &str| {
        let key = keys::ObjectKey {
            group: "",
            resource: "configmaps",
            namespace: Some(n),
            name,
        }
        .encode();
        Command::Create {
            key,
            namespace: Some(n.into()),
            object: cm(name, "u", "x"),
        }
    };
    for (i, c) in [
        ns("ns"),
        ns("ns2"),
        in_ns("ns", "a"),
        in_ns("ns", "b"),
        in_ns("ns2", "c"),
    ]
    .iter()
    .enumerate()
    {
        apply_command(e, i as u64 + 1, c)
            .await
            .unwrap()
            .result
            .unwrap();
    }
    let del = Command::Delete {
        key: keys::namespace_key("ns"),
        precondition: Precondition::default(),
    };
    let out = apply_command(e, 10, &del).await.unwrap();
    assert!(out.result.is_ok());
    assert_eq!(out.changes.len(), 3, "two objects and the namespace go");
    assert!(e
        .scan(
            &keys::collection_prefix("", "configmaps", Some("ns")),
            None,
            10
        )
        .unwrap()
        .is_empty());
    assert_eq!(
        e.scan(&keys::collection_prefix("", "configmaps", None), None, 10)
            .unwrap()
            .len(),
        1,
        "other namespaces keep theirs"
    );
}

#[cfg(test)]
mod memory_conformance {
    use super::*;
    use crate::memory::{MemoryLogEngine, MemoryObjectEngine};

    #[tokio::test]
    async fn memory_log_engine_conforms() {
        log_engine_suite(MemoryLogEngine::new).await;
    }

    #[tokio::test]
    async fn memory_object_engine_conforms() {
        object_engine_suite(MemoryObjectEngine::new).await;
    }

    #[tokio::test]
    async fn memory_log_crash_drops_unsynced_appends() {
        let e = MemoryLogEngine::new();
        e.append(vec![(1, b("1")), (2, b("2"))]).await.unwrap();
        e.sync().await.unwrap();
        e.append(vec![(3, b("3"))]).await.unwrap();
        e.crash();
        assert_eq!(e.last_entry().unwrap().map(|x| x.0), Some(2));
        e.put_meta("vote", b("v")).await.unwrap();
        e.append(vec![(3, b("3"))]).await.unwrap();
        e.put_meta("vote", b("v2")).await.unwrap(); // a durable meta write syncs the log too
        e.crash();
        assert_eq!(e.last_entry().unwrap().map(|x| x.0), Some(3));
        assert_eq!(e.get_meta("vote").unwrap(), Some(b("v2")));
    }

    #[tokio::test]
    async fn memory_object_crash_drops_unsynced_batches() {
        let e = MemoryObjectEngine::new();
        e.write(ObjectBatch {
            objects: vec![("/a".into(), Some(b("1")))],
            meta: vec![],
        })
        .await
        .unwrap();
        e.sync().await.unwrap();
        e.write(ObjectBatch {
            objects: vec![("/b".into(), Some(b("2")))],
            meta: vec![],
        })
        .await
        .unwrap();
        e.crash();
        assert_eq!(e.get("/a").unwrap(), Some(b("1")));
        assert_eq!(e.get("/b").unwrap(), None);
    }
}
