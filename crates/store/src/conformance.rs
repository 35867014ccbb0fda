//! The conformance suite every engine implementation must pass: the in-memory engines
//! here, the RocksDB engines in `kuorum-store-rocks`. Each check panics with a message
//! naming what broke. openraft's own storage suite runs on top of these engines in
//! `kuorum-raft`, through the adaptors.

use bytes::Bytes;

use crate::apply::ChangeKind;
use crate::apply::{apply_command, BatchApplier};
use crate::command::{Command, Finalizing, Precondition, WriteError};
use crate::engine::{LogEngine, ObjectBatch, ObjectDump, ObjectEngine, ObjectWrite};
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
    assert_eq!(r, vec![(2, b("b")), (3, b("c"))], "read_range is [start, end)");
    assert!(e.read_range(3, 3).unwrap().is_empty(), "an empty range reads nothing");
    assert_eq!(e.read_range(1, 2).unwrap(), vec![(1, b("a"))]);
    // Appending at an existing index overwrites it (after a truncate).
    e.truncate_from(3).await.unwrap();
    e.append(vec![(3, b("c2"))]).await.unwrap();
    assert_eq!(e.read_range(3, 4).unwrap(), vec![(3, b("c2"))]);
}

async fn log_truncate_purge<E: LogEngine>(e: &E) {
    e.append((1..=10).map(|i| (i, b(&i.to_string()))).collect()).await.unwrap();
    e.truncate_from(8).await.unwrap();
    assert_eq!(e.last_entry().unwrap().map(|x| x.0), Some(7), "truncate_from removes >= index");
    e.purge_upto(3).await.unwrap();
    let r: Vec<u64> = e.read_range(0, 100).unwrap().into_iter().map(|x| x.0).collect();
    assert_eq!(r, vec![4, 5, 6, 7], "purge_upto removes <= index");
    e.purge_upto(7).await.unwrap();
    assert_eq!(e.last_entry().unwrap(), None, "purging everything empties the log");
    e.append(vec![(8, b("8"))]).await.unwrap();
    assert_eq!(e.last_entry().unwrap(), Some((8, b("8"))), "the log continues after a full purge");
}

async fn log_meta<E: LogEngine>(e: &E) {
    assert_eq!(e.get_meta("vote").unwrap(), None);
    e.put_meta("vote", b("v1")).await.unwrap();
    e.put_meta("vote", b("v2")).await.unwrap();
    e.put_meta("committed", b("c")).await.unwrap();
    assert_eq!(e.get_meta("vote").unwrap(), Some(b("v2")));
    assert_eq!(e.get_meta("committed").unwrap(), Some(b("c")));
}

/// What a restart finds, for a durable engine: `open` opens the same store every time
/// it is called (after the previous engine is dropped). Truncations, purges and
/// metadata survive; so do appends after a `sync`, and appends made durable by a
/// metadata write alone.
pub async fn log_reopen_suite<E: LogEngine, F: Fn() -> E>(open: F) {
    {
        let log = open();
        log.append((1..=5).map(|i| (i, b(&format!("e{i}")))).collect()).await.unwrap();
        log.sync().await.unwrap();
        log.truncate_from(4).await.unwrap();
        log.append(vec![(4, b("e4-new"))]).await.unwrap();
        log.purge_upto(1).await.unwrap();
        log.put_meta("vote", b("v1")).await.unwrap();
        log.put_meta("committed", b("c3")).await.unwrap();
        // Appended after the last durable write and synced on its own.
        log.append(vec![(5, b("e5-new"))]).await.unwrap();
        log.sync().await.unwrap();
    }
    let log = open();
    assert_eq!(
        log.read_range(0, 100).unwrap(),
        vec![(2, b("e2")), (3, b("e3")), (4, b("e4-new")), (5, b("e5-new"))],
        "after a restart: the purge, the truncation and the synced appends"
    );
    assert_eq!(log.last_entry().unwrap(), Some((5, b("e5-new"))));
    assert_eq!(log.get_meta("vote").unwrap(), Some(b("v1")));
    assert_eq!(log.get_meta("committed").unwrap(), Some(b("c3")));
    assert_eq!(log.get_meta("absent").unwrap(), None);

    // Appends made durable by a metadata write alone (no sync).
    log.append(vec![(6, b("e6"))]).await.unwrap();
    log.put_meta("vote", b("v2")).await.unwrap();
    drop(log);
    let log = open();
    assert_eq!(log.last_entry().unwrap(), Some((6, b("e6"))), "a vote's write makes earlier appends durable");
    assert_eq!(log.get_meta("vote").unwrap(), Some(b("v2")));
}

/// Runs every object-engine check, each on a fresh engine from `make`.
pub async fn object_engine_suite<E: ObjectEngine, F: Fn() -> E>(make: F) {
    object_write_get_scan(&make()).await;
    object_history_and_compaction(&make()).await;
    object_dump_restore(&make(), &make()).await;
    object_freeze(&make()).await;
    object_parts_stream_a_frozen_state(&make(), &make()).await;
    apply_preconditions(&make()).await;
    apply_batch_sees_its_own_writes(&make()).await;
    apply_batch_sees_its_own_namespace_changes(&make()).await;
    apply_finalizers_hold_deletion(&make()).await;
    apply_graceful_deletion(&make()).await;
    history_rebuilds_the_changes(&make()).await;
}

async fn object_write_get_scan<E: ObjectEngine>(e: &E) {
    let batch = ObjectBatch {
        objects: vec![
            w("/p/a/1", 1, Some("1")),
            w("/p/a/2", 2, Some("2")),
            w("/p/ab/3", 3, Some("3")),
            w("/p/b/4", 4, Some("4")),
            w("/p/a/2", 5, None),
            w("/p/a/5", 6, Some("5")),
        ],
        meta: vec![("applied".into(), b("x"))],
    };
    e.write(batch).await.unwrap();
    assert_eq!(e.get("/p/a/1").unwrap(), Some(b("1")));
    assert_eq!(e.get("/p/a/2").unwrap(), None, "a later delete in a batch wins");
    assert_eq!(e.get_meta("applied").unwrap(), Some(b("x")));
    let keys: Vec<String> = e.scan("/p/a/", None, 100).unwrap().into_iter().map(|x| x.0).collect();
    assert_eq!(keys, vec!["/p/a/1", "/p/a/5"], "a prefix scan stays inside its prefix");
    let keys: Vec<String> = e.scan("/p/", Some("/p/a/5"), 2).unwrap().into_iter().map(|x| x.0).collect();
    assert_eq!(keys, vec!["/p/ab/3", "/p/b/4"], "start_after is exclusive and limit holds");
    assert!(e.scan("/q/", None, 10).unwrap().is_empty());
    e.sync().await.unwrap();
}

fn w(key: &str, rv: u64, value: Option<&str>) -> ObjectWrite {
    ObjectWrite { key: key.into(), rv, value: value.map(b) }
}

async fn object_history_and_compaction<E: ObjectEngine>(e: &E) {
    // /h/a: 3, 5, deleted at 8, 9.  /h/b: 4, deleted at 6.  /h/c: 7.
    e.write(ObjectBatch {
        objects: vec![
            w("/h/a", 3, Some("a3")),
            w("/h/b", 4, Some("b4")),
            w("/h/a", 5, Some("a5")),
            w("/h/b", 6, None),
            w("/h/c", 7, Some("c7")),
            w("/h/a", 8, None),
        ],
        meta: vec![],
    })
    .await
    .unwrap();
    e.write(ObjectBatch { objects: vec![w("/h/a", 9, Some("a9"))], meta: vec![] }).await.unwrap();
    assert_eq!(e.get("/h/a").unwrap(), Some(b("a9")));
    assert_eq!(e.get_at("/h/a", 2).unwrap(), None, "nothing before the first version");
    assert_eq!(e.get_at("/h/a", 4).unwrap(), Some(b("a3")));
    assert_eq!(e.get_at("/h/a", 5).unwrap(), Some(b("a5")));
    assert_eq!(e.get_at("/h/a", 8).unwrap(), None, "deleted at 8");
    assert_eq!(e.get_at("/h/a", 100).unwrap(), Some(b("a9")));
    let at = |rv| -> Vec<(String, Bytes)> { e.scan_at("/h/", rv, None, 100).unwrap() };
    assert_eq!(at(4), vec![("/h/a".into(), b("a3")), ("/h/b".into(), b("b4"))]);
    assert_eq!(at(7), vec![("/h/a".into(), b("a5")), ("/h/c".into(), b("c7"))]);
    assert_eq!(at(8), vec![("/h/c".into(), b("c7"))]);
    assert_eq!(
        e.scan_at("/h/", 7, Some("/h/a"), 1).unwrap(),
        vec![("/h/c".into(), b("c7"))],
        "start_after and limit at an rv"
    );
    let hist: Vec<(u64, String)> = e.history_after(5).unwrap().into_iter().map(|x| (x.rv, x.key)).collect();
    assert_eq!(
        hist,
        vec![(6, "/h/b".into()), (7, "/h/c".into()), (8, "/h/a".into()), (9, "/h/a".into())],
        "history ascends by rv"
    );

    e.compact(6).await.unwrap();
    assert_eq!(e.get_at("/h/a", 6).unwrap(), Some(b("a5")), "the newest version <= the compaction rv stays");
    assert_eq!(
        at(7),
        vec![("/h/a".into(), b("a5")), ("/h/c".into(), b("c7"))],
        "reads at or above the compaction rv are unchanged"
    );
    let hist: Vec<(u64, String)> = e.history_after(0).unwrap().into_iter().map(|x| (x.rv, x.key)).collect();
    assert_eq!(
        hist,
        vec![(5, "/h/a".into()), (7, "/h/c".into()), (8, "/h/a".into()), (9, "/h/a".into())],
        "older versions and old deletions are gone"
    );
    assert_eq!(e.get("/h/a").unwrap(), Some(b("a9")), "compaction never touches current values");
    e.sync().await.unwrap();
}

async fn object_dump_restore<E: ObjectEngine>(src: &E, dst: &E) {
    src.write(ObjectBatch {
        objects: vec![w("/k/1", 1, Some("one")), w("/k/2", 2, Some("two")), w("/k/1", 3, Some("uno"))],
        meta: vec![("m".into(), b("meta"))],
    })
    .await
    .unwrap();
    dst.write(ObjectBatch { objects: vec![w("/old", 1, Some("gone"))], meta: vec![] }).await.unwrap();
    let dump = src.dump().unwrap();
    assert_eq!(dump.history.len(), 3, "the dump carries history");
    dst.restore(dump.clone()).await.unwrap();
    assert_eq!(dst.dump().unwrap(), dump, "restore replaces everything with the dump");
    assert_eq!(dst.get("/old").unwrap(), None);
    assert_eq!(dst.get_at("/k/1", 2).unwrap(), Some(b("one")), "history survives a restore");
    let empty = ObjectDump::default();
    dst.restore(empty.clone()).await.unwrap();
    assert_eq!(dst.dump().unwrap(), empty);
}

async fn object_freeze<E: ObjectEngine>(e: &E) {
    use crate::engine::FrozenObjects;
    e.write(ObjectBatch {
        objects: vec![w("/f/1", 1, Some("one")), w("/f/2", 2, Some("two")), w("/f/1", 3, Some("uno"))],
        meta: vec![("applied".into(), b("3"))],
    })
    .await
    .unwrap();
    e.sync().await.unwrap();
    let before = e.dump().unwrap();
    let frozen = e.freeze().await.unwrap();
    // Everything a later batch can do: overwrite, delete, create, move the meta, compact.
    e.write(ObjectBatch {
        objects: vec![w("/f/1", 4, Some("eins")), w("/f/2", 5, None), w("/f/3", 6, Some("drei"))],
        meta: vec![("applied".into(), b("6"))],
    })
    .await
    .unwrap();
    e.compact(5).await.unwrap();
    e.sync().await.unwrap();
    assert_eq!(frozen.dump().unwrap(), before, "a frozen state is the state when it was taken");
    assert_eq!(frozen.get_meta("applied").unwrap(), Some(b("3")), "and so is its metadata");
    assert_eq!(frozen.get_meta("absent").unwrap(), None);
    assert_ne!(e.dump().unwrap(), before, "while the engine moved on");

    let second = e.freeze().await.unwrap();
    assert_eq!(second.dump().unwrap(), e.dump().unwrap(), "a second freeze sees the later writes");
    assert_eq!(frozen.dump().unwrap(), before, "two frozen states live side by side");
    drop(frozen);
    assert_eq!(second.get_meta("applied").unwrap(), Some(b("6")), "dropping one leaves the other");
}

/// A frozen state read in parts and restored from them is the state it froze, and no
/// part is much larger than asked; a failing reader stops the dump and a failing part
/// stream leaves the old state.
async fn object_parts_stream_a_frozen_state<E: ObjectEngine>(src: &E, dst: &E) {
    use crate::engine::{DumpPart, FrozenObjects, StoreError};
    // 40 objects of 100 bytes, half of them written twice, one deleted: parts of 1 KB
    // each hold about ten items.
    let value = |i: usize, round: usize| Some(format!("{round}-{i:0>96}"));
    let mut rv = 0;
    for round in 0..2 {
        let mut objects = Vec::new();
        for i in (0..40).filter(|i| round == 0 || i % 2 == 0) {
            rv += 1;
            objects.push(ObjectWrite { key: format!("/p/{i:02}"), rv, value: value(i, round).map(Bytes::from) });
        }
        src.write(ObjectBatch { objects, meta: vec![("applied".into(), b(&rv.to_string()))] }).await.unwrap();
    }
    rv += 1;
    src.write(ObjectBatch { objects: vec![w("/p/07", rv, None)], meta: vec![] }).await.unwrap();
    src.sync().await.unwrap();
    let dump = src.dump().unwrap();
    let frozen = src.freeze().await.unwrap();

    let mut parts = Vec::new();
    frozen
        .dump_parts(1000, &mut |part| {
            parts.push(part);
            Ok(())
        })
        .unwrap();
    assert!(matches!(parts.first(), Some(DumpPart::Meta(m)) if m.contains(&("applied".to_string(), b("60")))));
    let objects: usize = parts.iter().map(|p| if let DumpPart::Objects(o) = p { o.len() } else { 0 }).sum();
    let history: usize = parts.iter().map(|p| if let DumpPart::History(h) = p { h.len() } else { 0 }).sum();
    assert_eq!(objects, 39, "every live object once");
    assert_eq!(history, 20 + 2, "each superseded version; the deleted key's version and its deletion");
    assert!(parts.len() >= 1 + 4 + 2, "split by size: {} parts", parts.len());
    let object_keys: Vec<&str> = parts
        .iter()
        .filter_map(|p| if let DumpPart::Objects(o) = p { Some(o) } else { None })
        .flatten()
        .map(|o| o.0.as_str())
        .collect();
    let history_keys: Vec<(&str, u64)> = parts
        .iter()
        .filter_map(|p| if let DumpPart::History(h) = p { Some(h) } else { None })
        .flatten()
        .map(|w| (w.key.as_str(), w.rv))
        .collect();
    assert!(object_keys.windows(2).all(|k| k[0] < k[1]), "objects come in ascending key order");
    assert!(history_keys.windows(2).all(|k| k[0] < k[1]), "versions come in ascending (key, rv) order");
    for part in &parts {
        let bytes: usize = match part {
            DumpPart::Meta(_) => 0,
            DumpPart::Objects(o) => o.iter().map(|(k, _, v)| DumpPart::size_of_item(k, Some(v))).sum(),
            DumpPart::History(h) => h.iter().map(|w| DumpPart::size_of_item(&w.key, w.value.as_deref())).sum(),
        };
        assert!(bytes < 1000 + 200, "a part goes over by one item at most: {bytes}");
    }
    assert_eq!(ObjectDump::from_parts(parts.clone().into_iter().map(Ok)).unwrap(), dump, "the parts are the dump");
    assert_eq!(dump.clone().into_parts(1000), parts, "split as a dump splits");

    let mut seen = 0;
    let stopped = frozen.dump_parts(1000, &mut |_| {
        seen += 1;
        Err(StoreError::new("peer gone"))
    });
    assert!(stopped.is_err() && seen == 1, "a failing reader stops the dump");

    dst.write(ObjectBatch { objects: vec![w("/old", 1, Some("kept"))], meta: vec![] }).await.unwrap();
    let old = dst.dump().unwrap();
    let broken = parts.clone().into_iter().map(Ok).chain([Err(StoreError::new("stream cut"))]);
    assert!(dst.restore_parts(Box::new(broken)).await.is_err());
    assert_eq!(dst.dump().unwrap(), old, "a part stream that fails leaves the old state");

    dst.restore_parts(Box::new(parts.into_iter().map(Ok))).await.unwrap();
    assert_eq!(dst.dump().unwrap(), dump, "restored from parts");
    assert_eq!(dst.get_at("/p/07", rv - 1).unwrap(), value(7, 0).map(Bytes::from), "history came along");
    assert_eq!(dst.get("/p/07").unwrap(), None);
    assert_eq!(dst.get("/p/08").unwrap(), value(8, 1).map(Bytes::from));
}

fn cm(name: &str, uid: &str, data: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","uid":"{uid}"}},"data":{{"k":"{data}"}}}}"#
    ))
}

fn rv_of(bytes: &Bytes) -> String {
    let v: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    v["metadata"]["resourceVersion"].as_str().unwrap().to_string()
}

async fn apply_preconditions<E: ObjectEngine>(e: &E) {
    let ns = Bytes::from(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns","uid":"n1"}}"#);
    let key = keys::ObjectKey { group: "", resource: "configmaps", namespace: Some("ns"), name: "a" }.encode();
    let create = Command::Create { key: key.clone(), namespace: Some("ns".into()), object: cm("a", "u1", "1") };

    let out = apply_command(e, 1, &create).await.unwrap();
    assert_eq!(out.result, Err(WriteError::NamespaceNotFound("ns".into())), "create needs its namespace");

    let ns_create = Command::Create { key: keys::namespace_key("ns"), namespace: None, object: ns };
    apply_command(e, 2, &ns_create).await.unwrap().result.unwrap();
    let created = apply_command(e, 3, &create).await.unwrap().result.unwrap();
    assert_eq!(rv_of(&created), "3", "resourceVersion is the log index");
    assert_eq!(apply_command(e, 4, &create).await.unwrap().result, Err(WriteError::AlreadyExists));

    let stale = Command::Update {
        key: key.clone(),
        object: cm("a", "other-uid", "2"),
        precondition: Precondition { resource_version: Some(2), uid: None },
        finalizing: Default::default(),
    };
    assert_eq!(apply_command(e, 5, &stale).await.unwrap().result, Err(WriteError::Conflict));
    let fresh = Command::Update {
        key: key.clone(),
        object: cm("a", "other-uid", "2"),
        precondition: Precondition { resource_version: Some(3), uid: None },
        finalizing: Default::default(),
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
        finalizing: Default::default(),
    };
    let out = apply_command(e, 7, &same).await.unwrap();
    assert_eq!(rv_of(&out.result.unwrap()), "6");
    assert!(out.change.is_none(), "a no-op update is no change");

    let wrong_uid = Command::Delete {
        key: key.clone(),
        precondition: Precondition { resource_version: None, uid: Some("zz".into()) },
        deletion_timestamp: None,
        finalizing: Default::default(),
    };
    assert!(matches!(apply_command(e, 8, &wrong_uid).await.unwrap().result, Err(WriteError::UidMismatch { .. })));
    let del = Command::Delete {
        key: key.clone(),
        precondition: Precondition { resource_version: Some(6), uid: Some("u1".into()) },
        deletion_timestamp: None,
        finalizing: Default::default(),
    };
    let deleted = apply_command(e, 9, &del).await.unwrap().result.unwrap();
    assert_eq!(rv_of(&deleted), "9", "a deleted object answers with the deleting resourceVersion");
    assert_eq!(e.get(&key).unwrap(), None);
    assert_eq!(apply_command(e, 10, &del).await.unwrap().result, Err(WriteError::NotFound));
    let missing = Command::Update {
        key,
        object: cm("a", "u1", "3"),
        precondition: Precondition::default(),
        finalizing: Default::default(),
    };
    assert_eq!(apply_command(e, 11, &missing).await.unwrap().result, Err(WriteError::NotFound));
}

async fn apply_batch_sees_its_own_writes<E: ObjectEngine>(e: &E) {
    let key = "/registry/core/nodes/n1".to_string();
    let node = Bytes::from(r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}"#);
    let mut applier = BatchApplier::new(e);
    applier
        .apply(1, &Command::Create { key: key.clone(), namespace: None, object: node.clone() })
        .unwrap()
        .result
        .unwrap();
    let racer = |v: &str| Command::Update {
        key: key.clone(),
        object: Bytes::from(format!(
            r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n1","labels":{{"v":"{v}"}}}}}}"#
        )),
        precondition: Precondition { resource_version: Some(1), uid: None },
        finalizing: Default::default(),
    };
    assert!(applier.apply(2, &racer("a")).unwrap().result.is_ok(), "first racer wins");
    assert_eq!(applier.apply(3, &racer("b")).unwrap().result, Err(WriteError::Conflict), "second racer sees the first");
    assert_eq!(e.get(&key).unwrap(), None, "nothing is written before the batch is");
    e.write(applier.into_batch(vec![("applied".into(), b("3"))])).await.unwrap();
    assert_eq!(rv_of(&e.get(&key).unwrap().unwrap()), "2");
}

/// Within one batch, a create sees its namespace as the entries before it left it: made,
/// marked for deletion, made again elsewhere. (Apply remembers the namespaces a batch
/// looked up; every namespace write must be seen through that.)
async fn apply_batch_sees_its_own_namespace_changes<E: ObjectEngine>(e: &E) {
    let namespace = |name: &str| Command::Create {
        key: keys::namespace_key(name),
        namespace: None,
        object: Bytes::from(format!(
            r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}},"spec":{{"finalizers":["kubernetes"]}}}}"#
        )),
    };
    let create = |name: &str| Command::Create {
        key: keys::ObjectKey { group: "", resource: "configmaps", namespace: Some("ns"), name }.encode(),
        namespace: Some("ns".into()),
        object: cm(name, name, "x"),
    };
    let mut applier = BatchApplier::new(e);
    let mut apply = |index: u64, cmd: &Command| applier.apply(index, cmd).unwrap().result;
    assert_eq!(apply(1, &create("a")), Err(WriteError::NamespaceNotFound("ns".into())));
    apply(2, &namespace("ns")).unwrap();
    assert!(apply(3, &create("b")).is_ok(), "the namespace made two entries earlier counts");
    assert!(apply(4, &create("c")).is_ok());
    apply(5, &namespace("other")).unwrap();
    let mark = Command::Delete {
        key: keys::namespace_key("ns"),
        precondition: Precondition::default(),
        deletion_timestamp: Some("2026-01-01T00:00:00Z".into()),
        finalizing: namespace_finalizing(),
    };
    apply(6, &mark).unwrap();
    assert_eq!(apply(7, &create("d")), Err(WriteError::NamespaceTerminating("ns".into())));
    e.write(applier.into_batch(Vec::new())).await.unwrap();

    // The next batch reads what this one wrote.
    let mut applier = BatchApplier::new(e);
    assert_eq!(applier.apply(8, &create("e")).unwrap().result, Err(WriteError::NamespaceTerminating("ns".into())));
    assert!(e
        .get(&keys::ObjectKey { group: "", resource: "configmaps", namespace: Some("ns"), name: "c" }.encode())
        .unwrap()
        .is_some());
}

async fn apply_finalizers_hold_deletion<E: ObjectEngine>(e: &E) {
    let ns = Command::Create {
        key: keys::namespace_key("ns"),
        namespace: None,
        object: Bytes::from(
            r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"},"spec":{"finalizers":["kubernetes"]}}"#,
        ),
    };
    apply_command(e, 1, &ns).await.unwrap().result.unwrap();
    let key = keys::ObjectKey { group: "", resource: "configmaps", namespace: Some("ns"), name: "f" }.encode();
    let with_finalizer = Bytes::from(
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"f","namespace":"ns","finalizers":["x/y"]}}"#,
    );
    apply_command(e, 2, &Command::Create { key: key.clone(), namespace: Some("ns".into()), object: with_finalizer })
        .await
        .unwrap()
        .result
        .unwrap();

    let del = |k: &str, finalizing: Finalizing| Command::Delete {
        key: k.to_string(),
        precondition: Precondition::default(),
        deletion_timestamp: Some("2026-01-01T00:00:00Z".into()),
        finalizing,
    };
    let out = apply_command(e, 3, &del(&key, Finalizing::default())).await.unwrap();
    let marked: serde_json::Value = serde_json::from_slice(&out.result.unwrap()).unwrap();
    assert_eq!(marked["metadata"]["deletionTimestamp"], "2026-01-01T00:00:00Z", "a finalizer holds the object, marked");
    assert_eq!(out.change.unwrap().kind, ChangeKind::Modified);
    assert!(e.get(&key).unwrap().is_some());

    // Removing the last finalizer deletes it.
    let mut cleared = marked.clone();
    cleared["metadata"]["finalizers"] = serde_json::json!([]);
    let upd = Command::Update {
        key: key.clone(),
        object: Bytes::from(cleared.to_string()),
        precondition: Precondition::default(),
        finalizing: Default::default(),
    };
    let out = apply_command(e, 4, &upd).await.unwrap();
    assert!(out.result.is_ok());
    assert_eq!(out.change.unwrap().kind, ChangeKind::Deleted);
    assert_eq!(e.get(&key).unwrap(), None);

    // A namespace with its `kubernetes` finalizer is marked Terminating, as the proposer
    // says; creates in it fail.
    let out = apply_command(e, 5, &del(&keys::namespace_key("ns"), namespace_finalizing())).await.unwrap();
    let nsv: serde_json::Value = serde_json::from_slice(&out.result.unwrap()).unwrap();
    assert_eq!(nsv["status"]["phase"], "Terminating");
    let create = Command::Create { key: key.clone(), namespace: Some("ns".into()), object: cm("f", "u", "x") };
    assert_eq!(apply_command(e, 6, &create).await.unwrap().result, Err(WriteError::NamespaceTerminating("ns".into())));

    // Dropping the namespace's own finalizer, with nothing else holding it, removes it.
    let mut emptied = nsv.clone();
    emptied["spec"]["finalizers"] = serde_json::json!([]);
    let upd = Command::Update {
        key: keys::namespace_key("ns"),
        object: Bytes::from(emptied.to_string()),
        precondition: Precondition::default(),
        finalizing: namespace_finalizing(),
    };
    assert_eq!(apply_command(e, 7, &upd).await.unwrap().change.unwrap().kind, ChangeKind::Deleted);

    // The store knows no kinds: an object that only looks like a namespace (a custom
    // resource) is held by nothing but its metadata finalizers.
    let lookalike_key = "/registry/example.com/namespaces/ns2".to_string();
    let lookalike = Bytes::from(
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns2"},"spec":{"finalizers":["kubernetes"]}}"#,
    );
    apply_command(e, 8, &Command::Create { key: lookalike_key.clone(), namespace: None, object: lookalike })
        .await
        .unwrap()
        .result
        .unwrap();
    let out = apply_command(e, 9, &del(&lookalike_key, Finalizing::default())).await.unwrap();
    assert_eq!(out.change.unwrap().kind, ChangeKind::Deleted);
}

/// A graceful mark keeps the object through updates until a delete removes it.
async fn apply_graceful_deletion<E: ObjectEngine>(e: &E) {
    let ns = Command::Create {
        key: keys::namespace_key("ns"),
        namespace: None,
        object: Bytes::from(r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns"}}"#),
    };
    apply_command(e, 1, &ns).await.unwrap().result.unwrap();
    let key = keys::ObjectKey { group: "", resource: "configmaps", namespace: Some("ns"), name: "g" }.encode();
    let object = Bytes::from(r#"{"kind":"ConfigMap","metadata":{"name":"g","namespace":"ns","generation":1}}"#);
    apply_command(e, 2, &Command::Create { key: key.clone(), namespace: Some("ns".into()), object })
        .await
        .unwrap()
        .result
        .unwrap();
    let mark = |rv: u64, ts: &str, grace: i64| Command::MarkDeleting {
        key: key.clone(),
        precondition: Precondition { resource_version: Some(rv), uid: None },
        deletion_timestamp: ts.into(),
        grace_period_seconds: grace,
        finalizing: Finalizing::default(),
    };
    assert_eq!(
        apply_command(e, 3, &mark(1, "2026-01-01T00:00:30Z", 30)).await.unwrap().result,
        Err(WriteError::Conflict)
    );
    let out = apply_command(e, 4, &mark(2, "2026-01-01T00:00:30Z", 30)).await.unwrap();
    let marked: serde_json::Value = serde_json::from_slice(&out.result.unwrap()).unwrap();
    assert_eq!(marked["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(marked["metadata"]["generation"], 2, "the first mark moves the generation on");
    assert_eq!(out.change.unwrap().kind, ChangeKind::Modified);

    // An update (a kubelet's status) keeps the object and its marks while the grace runs.
    let mut status = marked.clone();
    status["metadata"]["deletionTimestamp"] = serde_json::json!(null);
    status["status"] = serde_json::json!({"phase": "Running"});
    let upd = Command::Update {
        key: key.clone(),
        object: Bytes::from(status.to_string()),
        precondition: Precondition::default(),
        finalizing: Default::default(),
    };
    let out = apply_command(e, 5, &upd).await.unwrap();
    assert_eq!(out.change.unwrap().kind, ChangeKind::Modified);
    let updated: serde_json::Value = serde_json::from_slice(&out.result.unwrap()).unwrap();
    assert_eq!(updated["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z", "the marks are the store's");

    // A shorter grace period: a second mark, the generation stays.
    let out = apply_command(e, 6, &mark(5, "2026-01-01T00:00:05Z", 5)).await.unwrap();
    let shorter: serde_json::Value = serde_json::from_slice(&out.result.unwrap()).unwrap();
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 5);
    assert_eq!(shorter["metadata"]["generation"], 2);

    // The confirming delete removes it.
    let del = Command::Delete {
        key: key.clone(),
        precondition: Precondition::default(),
        deletion_timestamp: Some("2026-01-01T00:00:01Z".into()),
        finalizing: Finalizing::default(),
    };
    assert_eq!(apply_command(e, 7, &del).await.unwrap().change.unwrap().kind, ChangeKind::Deleted);
    assert_eq!(e.get(&key).unwrap(), None);
    assert_eq!(apply_command(e, 8, &mark(7, "x", 1)).await.unwrap().result, Err(WriteError::NotFound));
}

/// What the namespace's strategy gives the commands on a namespace.
fn namespace_finalizing() -> Finalizing {
    kuorum_api::kinds::builtin("", "Namespace").expect("namespaces are built in").finalizing()
}

async fn history_rebuilds_the_changes<E: ObjectEngine>(e: &E) {
    let node = |v: &str| {
        Bytes::from(format!(r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"n","labels":{{"v":"{v}"}}}}}}"#))
    };
    let key = "/registry/core/nodes/n".to_string();
    let mut applied = Vec::new();
    for (i, cmd) in [
        Command::Create { key: key.clone(), namespace: None, object: node("1") },
        Command::Update {
            key: key.clone(),
            object: node("2"),
            precondition: Precondition::default(),
            finalizing: Default::default(),
        },
        Command::Delete {
            key: key.clone(),
            precondition: Precondition::default(),
            deletion_timestamp: None,
            finalizing: Default::default(),
        },
        Command::Create { key: key.clone(), namespace: None, object: node("3") },
    ]
    .iter()
    .enumerate()
    {
        applied.push(apply_command(e, i as u64 + 1, cmd).await.unwrap().change.unwrap());
    }
    assert_eq!(crate::apply::changes_since(e, 0).unwrap(), applied, "history replays as the changes were made");
    assert_eq!(crate::apply::changes_since(e, 2).unwrap(), applied[2..].to_vec(), "from a later rv");
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
        e.write(ObjectBatch { objects: vec![w("/a", 1, Some("1"))], meta: vec![] }).await.unwrap();
        e.sync().await.unwrap();
        e.write(ObjectBatch { objects: vec![w("/b", 2, Some("2"))], meta: vec![] }).await.unwrap();
        e.crash();
        assert_eq!(e.get("/a").unwrap(), Some(b("1")));
        assert_eq!(e.get("/b").unwrap(), None);
    }
}
