//! The RocksDB engines against the conformance suite, the in-memory reference, and
//! reopening (what a restart sees).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kuorum_store::conformance::{log_engine_suite, log_reopen_suite, object_engine_suite};
use kuorum_store::engine::{ObjectDump, ObjectWrite};
use kuorum_store::memory::MemoryObjectEngine;
use kuorum_store::{LogEngine, ObjectBatch, ObjectEngine};
use kuorum_store_rocks::{MemoryBudget, RocksLogEngine, RocksObjectEngine, RocksStore};
use tempfile::TempDir;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// Temporary directories that outlive the engines a suite opens in them.
#[derive(Default)]
struct Dirs(Mutex<Vec<TempDir>>);

impl Dirs {
    fn fresh(&self) -> PathBuf {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        self.0.lock().unwrap().push(dir);
        path
    }
}

/// Versions get rising rvs, as the log gives them.
static NEXT_RV: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn put(key: &str, value: &str) -> ObjectWrite {
    let rv = NEXT_RV.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    ObjectWrite { key: key.to_string(), rv, value: Some(b(value)) }
}

fn del(key: &str) -> ObjectWrite {
    let rv = NEXT_RV.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    ObjectWrite { key: key.to_string(), rv, value: None }
}

fn keys(pairs: &[(String, Bytes)]) -> Vec<&str> {
    pairs.iter().map(|(k, _)| k.as_str()).collect()
}

fn indexes(entries: &[(u64, Bytes)]) -> Vec<u64> {
    entries.iter().map(|(i, _)| *i).collect()
}

#[tokio::test]
async fn log_engine_conforms() {
    let dirs = Dirs::default();
    log_engine_suite(|| RocksLogEngine::open(&dirs.fresh()).unwrap()).await;
}

#[tokio::test]
async fn object_engine_conforms() {
    let dirs = Dirs::default();
    object_engine_suite(|| RocksObjectEngine::open(&dirs.fresh()).unwrap()).await;
}

#[tokio::test]
async fn engines_of_one_store_conform() {
    let dirs = Dirs::default();
    log_engine_suite(|| RocksStore::open(&dirs.fresh()).unwrap().log_engine()).await;
    object_engine_suite(|| RocksStore::open(&dirs.fresh()).unwrap().object_engine()).await;
}

#[tokio::test]
async fn log_survives_reopen() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    log_reopen_suite(|| RocksLogEngine::open(&path).unwrap()).await;
}

#[tokio::test]
async fn log_index_order_and_extremes() {
    let dirs = Dirs::default();
    let log = RocksLogEngine::open(&dirs.fresh()).unwrap();
    // Big-endian keys sort numerically: 255 < 256 < 65536.
    log.append(vec![
        (0, b("0")),
        (255, b("255")),
        (256, b("256")),
        (65536, b("65536")),
        (u64::MAX - 1, b("max-1")),
        (u64::MAX, b("max")),
    ])
    .await
    .unwrap();
    assert_eq!(indexes(&log.read_range(0, u64::MAX).unwrap()), vec![0, 255, 256, 65536, u64::MAX - 1]);
    assert_eq!(indexes(&log.read_range(255, 65536).unwrap()), vec![255, 256]);
    assert_eq!(indexes(&log.read_range(257, 65536).unwrap()), Vec::<u64>::new());
    assert!(log.read_range(10, 5).unwrap().is_empty(), "a backwards range reads nothing");
    assert_eq!(log.last_entry().unwrap(), Some((u64::MAX, b("max"))));

    log.truncate_from(u64::MAX).await.unwrap();
    assert_eq!(log.last_entry().unwrap().map(|e| e.0), Some(u64::MAX - 1));
    log.purge_upto(0).await.unwrap();
    assert_eq!(indexes(&log.read_range(0, 300).unwrap()), vec![255, 256]);
    log.truncate_from(256).await.unwrap();
    assert_eq!(log.last_entry().unwrap().map(|e| e.0), Some(255));

    log.append(vec![(1000, b("x")), (u64::MAX, b("max"))]).await.unwrap();
    log.purge_upto(u64::MAX).await.unwrap();
    assert_eq!(log.last_entry().unwrap(), None, "purging up to u64::MAX empties the log");
    log.append(vec![(7, b("7")), (8, b("8"))]).await.unwrap();
    log.truncate_from(0).await.unwrap();
    assert_eq!(log.last_entry().unwrap(), None, "truncating from 0 empties the log");
}

#[tokio::test]
async fn objects_survive_reopen() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    let batch = ObjectBatch {
        objects: vec![put("/r/a", "1"), put("/r/b", "2"), put("/r/c", "3"), del("/r/b")],
        meta: vec![("applied".into(), b("7")), ("membership".into(), b("m"))],
    };
    {
        let objects = RocksObjectEngine::open(&path).unwrap();
        objects.write(batch).await.unwrap();
        objects
            .write(ObjectBatch { objects: vec![put("/r/a", "1b")], meta: vec![("applied".into(), b("8"))] })
            .await
            .unwrap();
        objects.sync().await.unwrap();
    }
    let objects = RocksObjectEngine::open(&path).unwrap();
    assert_eq!(objects.get("/r/a").unwrap(), Some(b("1b")));
    assert_eq!(objects.get("/r/b").unwrap(), None);
    assert_eq!(keys(&objects.scan("/r/", None, 10).unwrap()), vec!["/r/a", "/r/c"]);
    assert_eq!(objects.get_meta("applied").unwrap(), Some(b("8")));
    assert_eq!(objects.get_meta("membership").unwrap(), Some(b("m")));
    let dump = objects.dump().unwrap();
    assert_eq!(dump.objects, vec![("/r/a".into(), b("1b")), ("/r/c".into(), b("3"))]);
    assert_eq!(dump.meta, vec![("applied".into(), b("8")), ("membership".into(), b("m"))]);
    assert_eq!(dump.history.len(), 5, "every version survives a reopen");
}

#[tokio::test]
async fn restore_replaces_everything_and_survives_reopen() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    let dump = ObjectDump {
        objects: vec![("/new/1".into(), b("one")), ("/new/2".into(), b("two"))],
        history: vec![
            ObjectWrite { key: "/new/1".into(), rv: 40, value: Some(b("one")) },
            ObjectWrite { key: "/new/2".into(), rv: 41, value: Some(b("two")) },
        ],
        meta: vec![("applied".into(), b("42"))],
    };
    {
        let objects = RocksObjectEngine::open(&path).unwrap();
        objects
            .write(ObjectBatch {
                objects: vec![put("/old/1", "x"), put("/new/1", "stale"), put("\u{10FFFF}", "last")],
                meta: vec![("applied".into(), b("3")), ("old-meta".into(), b("y"))],
            })
            .await
            .unwrap();
        objects.restore(dump.clone()).await.unwrap();
        assert_eq!(objects.dump().unwrap(), dump);
        // No sync: restore is durable on its own.
    }
    let objects = RocksObjectEngine::open(&path).unwrap();
    assert_eq!(objects.dump().unwrap(), dump, "the restored state is what a restart sees");
    assert_eq!(objects.get("/old/1").unwrap(), None);
    assert_eq!(objects.get("\u{10FFFF}").unwrap(), None, "the highest possible key is cleared too");
    assert_eq!(objects.get_meta("old-meta").unwrap(), None);

    // Writes after a restore land on top of it; an empty dump empties the store.
    objects.write(ObjectBatch { objects: vec![put("/new/3", "three")], meta: vec![] }).await.unwrap();
    assert_eq!(keys(&objects.scan("/new/", None, 10).unwrap()), vec!["/new/1", "/new/2", "/new/3"]);
    objects.restore(ObjectDump::default()).await.unwrap();
    drop(objects);
    let objects = RocksObjectEngine::open(&path).unwrap();
    assert_eq!(objects.dump().unwrap(), ObjectDump::default());
}

#[tokio::test]
async fn scan_matches_the_reference_at_boundaries() {
    let dirs = Dirs::default();
    let rocks = RocksObjectEngine::open(&dirs.fresh()).unwrap();
    let memory = MemoryObjectEngine::new();
    let all = ["/a", "/a/", "/a/1", "/a/1/x", "/a/10", "/a/2", "/a/é", "/a0", "/ab", "/a\u{7f}", "/b", "/b/1", ""];
    let batch = ObjectBatch { objects: all.iter().map(|k| put(k, &format!("v{k}"))).collect(), meta: vec![] };
    rocks.write(batch.clone()).await.unwrap();
    memory.write(batch).await.unwrap();

    // Spot checks, spelled out.
    assert_eq!(
        keys(&rocks.scan("/a/", None, 100).unwrap()),
        vec!["/a/", "/a/1", "/a/1/x", "/a/10", "/a/2", "/a/é"],
        "a prefix ending in / takes no sibling (/a0, /ab)"
    );
    assert_eq!(keys(&rocks.scan("/a/", Some("/a/1"), 2).unwrap()), vec!["/a/1/x", "/a/10"]);
    assert_eq!(keys(&rocks.scan("/a/", Some("/a/15"), 10).unwrap()), vec!["/a/2", "/a/é"]);
    assert_eq!(keys(&rocks.scan("/a/", Some("/a/"), 1).unwrap()), vec!["/a/1"], "start_after is exclusive");
    assert!(rocks.scan("/a/", Some("/a0"), 10).unwrap().is_empty(), "start_after past the prefix");
    assert!(rocks.scan("/a/", None, 0).unwrap().is_empty(), "limit 0");
    assert_eq!(rocks.scan("", None, 100).unwrap().len(), all.len(), "the empty prefix is everything");

    // Every combination against the in-memory reference.
    let prefixes = ["", "/", "/a", "/a/", "/a/1", "/a/é", "/b", "/c", "/a\u{7f}"];
    let afters = [
        None,
        Some(""),
        Some("/"),
        Some("/0"),
        Some("/a"),
        Some("/a/"),
        Some("/a/1"),
        Some("/a/15"),
        Some("/a/é"),
        Some("/a0"),
        Some("/zz"),
    ];
    for prefix in prefixes {
        for after in afters {
            for limit in [0, 1, 2, 3, 100] {
                assert_eq!(
                    rocks.scan(prefix, after, limit).unwrap(),
                    memory.scan(prefix, after, limit).unwrap(),
                    "scan({prefix:?}, {after:?}, {limit})"
                );
            }
        }
    }

    // Paging with start_after = the last key of the previous page visits each key once.
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = rocks.scan("/a", after.as_deref(), 3).unwrap();
        if page.is_empty() {
            break;
        }
        after = Some(page.last().unwrap().0.clone());
        paged.extend(page);
    }
    assert_eq!(paged, rocks.scan("/a", None, 100).unwrap());
}

#[tokio::test]
async fn one_store_holds_both_engines_across_reopen() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    {
        let store = RocksStore::open(&path).unwrap();
        assert!(RocksLogEngine::open(&path).is_err(), "a directory is open once at a time");
        let (log, objects) = (store.log_engine(), store.object_engine());
        log.append(vec![(1, b("e1"))]).await.unwrap();
        log.put_meta("vote", b("log-vote")).await.unwrap();
        objects
            .write(ObjectBatch { objects: vec![put("/k", "v")], meta: vec![("vote".into(), b("sm-meta"))] })
            .await
            .unwrap();
        // Object writes are not in the WAL: the log's fsync does not make them durable,
        // the object store's own sync flushes them.
        log.append(vec![(2, b("e2"))]).await.unwrap();
        log.sync().await.unwrap();
        let fsyncs = store.fsync_count();
        objects.sync().await.unwrap();
        assert_eq!(store.flush_count(), 1, "the object write needed a flush of its own");
        assert_eq!(store.fsync_count(), fsyncs, "and no WAL fsync");
        objects.sync().await.unwrap();
        assert_eq!(store.flush_count(), 1, "nothing new, no flush");
    }
    let store = RocksStore::open(&path).unwrap();
    let (log, objects) = (store.log_engine(), store.object_engine());
    assert_eq!(indexes(&log.read_range(0, 10).unwrap()), vec![1, 2]);
    assert_eq!(log.get_meta("vote").unwrap(), Some(b("log-vote")), "the two metadata spaces are apart");
    assert_eq!(objects.get_meta("vote").unwrap(), Some(b("sm-meta")));
    assert_eq!(objects.get("/k").unwrap(), Some(b("v")));
    drop((store, log, objects));
    // The same directory opens as either engine alone.
    assert_eq!(RocksObjectEngine::open(&path).unwrap().get("/k").unwrap(), Some(b("v")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_syncs_share_fsyncs() {
    let dirs = Dirs::default();
    let store = RocksStore::open(&dirs.fresh()).unwrap();
    let log = store.log_engine();
    assert_eq!(store.fsync_count(), 0);
    log.sync().await.unwrap();
    assert_eq!(store.fsync_count(), 0, "nothing written, nothing to sync");

    let log = Arc::new(log);
    let tasks: Vec<_> = (1..=64u64)
        .map(|i| {
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                log.append(vec![(i, b(&i.to_string()))]).await.unwrap();
                log.sync().await.unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let fsyncs = store.fsync_count();
    assert!((1..=64).contains(&fsyncs), "{fsyncs} fsyncs for 64 syncs");
    assert_eq!(log.read_range(0, 100).unwrap().len(), 64);
    log.sync().await.unwrap();
    assert_eq!(store.fsync_count(), fsyncs, "a sync with nothing new does no fsync");

    log.append(vec![(65, b("65"))]).await.unwrap();
    log.put_meta("vote", b("v")).await.unwrap();
    assert_eq!(store.fsync_count(), fsyncs + 1);
    log.sync().await.unwrap();
    assert_eq!(store.fsync_count(), fsyncs + 1, "the synced metadata write covered the append");
    eprintln!("64 concurrent append+sync callers made {fsyncs} fsyncs");
}

/// A database written before the history held only superseded versions: every version,
/// the current one included, in `history`; bare object bytes in `objects`.
fn write_old_layout(path: &std::path::Path) {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let db = rocksdb::DB::open_cf(&opts, path, ["objects", "object_meta", "history"]).unwrap();
    let hkey = |key: &str, rv: u64| [key.as_bytes(), &[0], &rv.to_be_bytes()].concat();
    let (objects, history, meta) =
        (db.cf_handle("objects").unwrap(), db.cf_handle("history").unwrap(), db.cf_handle("object_meta").unwrap());
    db.put_cf(objects, "/m/a", "A2").unwrap();
    db.put_cf(history, hkey("/m/a", 3), b"\x01A1").unwrap();
    db.put_cf(history, hkey("/m/a", 5), b"\x01A2").unwrap();
    db.put_cf(history, hkey("/m/b", 4), b"\x01B").unwrap();
    db.put_cf(history, hkey("/m/b", 6), b"\x00").unwrap();
    db.put_cf(meta, "applied", "6").unwrap();
}

#[tokio::test]
async fn an_old_layout_is_migrated_on_open() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    write_old_layout(&path);
    let expected = ObjectDump {
        objects: vec![("/m/a".into(), b("A2"))],
        history: vec![
            ObjectWrite { key: "/m/a".into(), rv: 3, value: Some(b("A1")) },
            ObjectWrite { key: "/m/a".into(), rv: 5, value: Some(b("A2")) },
            ObjectWrite { key: "/m/b".into(), rv: 4, value: Some(b("B")) },
            ObjectWrite { key: "/m/b".into(), rv: 6, value: None },
        ],
        meta: vec![("applied".into(), b("6"))],
    };
    for _ in 0..2 {
        // Twice: the second open finds the new layout and leaves it as it is.
        let objects = RocksObjectEngine::open(&path).unwrap();
        assert_eq!(objects.dump().unwrap(), expected);
        assert_eq!(objects.get("/m/a").unwrap(), Some(b("A2")));
        assert_eq!(objects.get_at("/m/a", 4).unwrap(), Some(b("A1")));
        assert_eq!(objects.get_at("/m/a", 5).unwrap(), Some(b("A2")));
        assert_eq!(objects.get_at("/m/b", 5).unwrap(), Some(b("B")));
        assert_eq!(objects.get_at("/m/b", 6).unwrap(), None);
        assert_eq!(keys(&objects.scan_at("/m/", 4, None, 10).unwrap()), vec!["/m/a", "/m/b"]);
        let after: Vec<u64> = objects.history_after(0).unwrap().iter().map(|w| w.rv).collect();
        assert_eq!(after, vec![3, 4, 5, 6]);
    }
    // Writes on the migrated layout: the current version moves to the history.
    let objects = RocksObjectEngine::open(&path).unwrap();
    objects
        .write(ObjectBatch {
            objects: vec![ObjectWrite { key: "/m/a".into(), rv: 7, value: Some(b("A3")) }],
            meta: vec![],
        })
        .await
        .unwrap();
    assert_eq!(objects.get_at("/m/a", 6).unwrap(), Some(b("A2")));
    assert_eq!(objects.get_at("/m/a", 7).unwrap(), Some(b("A3")));
    objects.compact(7).await.unwrap();
    assert_eq!(objects.history_after(0).unwrap().iter().map(|w| w.rv).collect::<Vec<_>>(), vec![7]);
}

/// Random batches of puts and deletes over a few keys, with compactions between them,
/// against the in-memory reference: every read at every rv, the changes after every rv
/// and the dump agree, before and after a reopen.
#[tokio::test]
async fn random_histories_match_the_reference() {
    let dirs = Dirs::default();
    for seed in 1..=8u64 {
        let path = dirs.fresh();
        let rocks = RocksObjectEngine::open(&path).unwrap();
        let memory = MemoryObjectEngine::new();
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let key_names = ["/r/a", "/r/a/b", "/r/ab", "/r/b", "/r/c"];
        let mut rv = 0;
        let mut compacted = 0;
        for _ in 0..40 {
            let mut objects = Vec::new();
            for _ in 0..1 + next(3) {
                rv += 1;
                let key = key_names[next(key_names.len() as u64) as usize].to_string();
                let value = (next(4) != 0).then(|| Bytes::from(format!("{key}@{rv}")));
                objects.push(ObjectWrite { key, rv, value });
            }
            let batch = ObjectBatch { objects, meta: vec![("applied".into(), Bytes::from(rv.to_string()))] };
            rocks.write(batch.clone()).await.unwrap();
            memory.write(batch).await.unwrap();
            if next(6) == 0 {
                compacted = compacted.max(rv.saturating_sub(next(5)));
                rocks.compact(compacted).await.unwrap();
                memory.compact(compacted).await.unwrap();
            }
        }
        let compare = |rocks: &RocksObjectEngine| {
            assert_eq!(rocks.dump().unwrap(), memory.dump().unwrap(), "seed {seed}: dump");
            for at in compacted..=rv + 1 {
                for key in key_names {
                    assert_eq!(
                        rocks.get_at(key, at).unwrap(),
                        memory.get_at(key, at).unwrap(),
                        "seed {seed}: {key} at {at}"
                    );
                }
                for (prefix, after, limit) in [("/r/", None, 100), ("/r/a", None, 2), ("/r/", Some("/r/a"), 2)] {
                    assert_eq!(
                        rocks.scan_at(prefix, at, after, limit).unwrap(),
                        memory.scan_at(prefix, at, after, limit).unwrap(),
                        "seed {seed}: scan_at {prefix} {at} {after:?} {limit}"
                    );
                }
            }
            for after in 0..=rv {
                assert_eq!(
                    rocks.history_after(after).unwrap(),
                    memory.history_after(after).unwrap(),
                    "seed {seed}: after {after}"
                );
            }
            for key in key_names {
                assert_eq!(rocks.get(key).unwrap(), memory.get(key).unwrap());
            }
        };
        compare(&rocks);
        rocks.sync().await.unwrap();
        drop(rocks);
        compare(&RocksObjectEngine::open(&path).unwrap());
    }
}

#[tokio::test]
async fn a_frozen_state_is_a_checkpoint_on_disk_until_dropped() {
    use kuorum_store::FrozenObjects;
    let dirs = Dirs::default();
    let path = dirs.fresh();
    let objects = RocksObjectEngine::open(&path).unwrap();
    objects
        .write(ObjectBatch {
            objects: vec![put("/z/a", "1"), put("/z/b", "2")],
            meta: vec![("applied".into(), b("2"))],
        })
        .await
        .unwrap();
    // Not synced: object writes skip the WAL, so only the checkpoint's flush puts them in.
    let before = objects.dump().unwrap();
    let first = objects.freeze().await.unwrap();
    assert!(first.path().starts_with(path.join("checkpoints")), "{:?}", first.path());
    assert!(first.path().join("CURRENT").exists(), "the checkpoint is a database of its own");

    objects
        .write(ObjectBatch { objects: vec![put("/z/a", "1b"), del("/z/b")], meta: vec![("applied".into(), b("4"))] })
        .await
        .unwrap();
    objects.compact(NEXT_RV.load(std::sync::atomic::Ordering::SeqCst)).await.unwrap();
    objects.sync().await.unwrap();
    assert_eq!(first.dump().unwrap(), before, "unsynced writes before the freeze are in it, later ones are not");
    assert_eq!(first.get_meta("applied").unwrap(), Some(b("2")));

    let second = objects.freeze().await.unwrap();
    assert_ne!(first.path(), second.path());
    let first_dir = first.path().to_path_buf();
    drop(first);
    assert!(!first_dir.exists(), "dropping a frozen state removes its checkpoint");
    assert_eq!(second.dump().unwrap(), objects.dump().unwrap());

    // One left behind by a process that ended without dropping it.
    let leftover = second.path().to_path_buf();
    std::mem::forget(second);
    drop(objects);
    assert!(leftover.exists());
    let objects = RocksObjectEngine::open(&path).unwrap();
    assert!(!path.join("checkpoints").exists(), "opening removes the checkpoints a previous process left");
    assert_eq!(objects.get("/z/a").unwrap(), Some(b("1b")), "and leaves the database as it was");
    assert_eq!(objects.get("/z/b").unwrap(), None);
}

#[tokio::test]
async fn an_install_refused_before_its_mark_keeps_the_old_state() {
    use kuorum_store::engine::DumpPart;
    let dirs = Dirs::default();
    let path = dirs.fresh();
    let objects = RocksObjectEngine::open(&path).unwrap();
    objects
        .write(ObjectBatch { objects: vec![put("/old/1", "x")], meta: vec![("applied".into(), b("3"))] })
        .await
        .unwrap();
    let before = objects.dump().unwrap();

    // Keys out of order cannot go into a table file; a failing part stream stops it.
    let unordered = vec![
        Ok(DumpPart::Meta(vec![("applied".into(), b("9"))])),
        Ok(DumpPart::Objects(vec![("/b".into(), 7, b("b")), ("/a".into(), 8, b("a"))])),
    ];
    let broken = vec![Ok(DumpPart::Meta(vec![("applied".into(), b("9"))])), Err(kuorum_store::StoreError::new("cut"))];
    for parts in [unordered, broken] {
        let err = objects.restore_parts(Box::new(parts.into_iter())).await.unwrap_err();
        assert!(!err.to_string().is_empty());
        assert_eq!(objects.dump().unwrap(), before, "the old state stays: {err}");
        assert!(!path.join("installing").exists(), "and the refused install's files are gone");
    }
    drop(objects);
    let objects = RocksObjectEngine::open(&path).unwrap();
    assert_eq!(objects.dump().unwrap(), before, "also after a reopen");
}

#[tokio::test]
async fn memory_reports_the_memtables_growing_with_writes() {
    let dirs = Dirs::default();
    let objects = RocksObjectEngine::open(&dirs.fresh()).unwrap();
    let part = |objects: &RocksObjectEngine, name: &str| {
        objects.memory().into_iter().find(|(p, _)| *p == name).map(|(_, bytes)| bytes).unwrap()
    };
    let parts: Vec<&str> = objects.memory().into_iter().map(|(p, _)| p).collect();
    assert_eq!(parts, vec!["memtables", "block_cache", "table_readers"]);
    let before = part(&objects, "memtables");
    let value = "x".repeat(1 << 10);
    let writes = (0..1000).map(|i| put(&format!("/r/{i:04}"), &value)).collect();
    objects.write(ObjectBatch { objects: writes, meta: vec![] }).await.unwrap();
    let after = part(&objects, "memtables");
    assert!(after >= before + 1000 * 1024, "1,000 unflushed KiB values: {before} -> {after}");
}

/// RocksDB's memory stays within the budget the store was opened with: writes past the
/// memtable budget are flushed to table files (and still read back), and reading them
/// all back fills the one shared block cache only up to its size.
#[tokio::test]
async fn memory_stays_within_the_budget() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    let budget = MemoryBudget { memtables: 4 << 20, block_cache: 1 << 20 };
    let store = RocksStore::open_within(&path, budget).unwrap();
    let objects = store.object_engine();
    let part = |name: &str| objects.memory().into_iter().find(|(p, _)| *p == name).map(|(_, bytes)| bytes).unwrap();
    let value = "x".repeat(4 << 10);
    let mut highest = 0;
    for round in 0..16 {
        // 4 MiB of values a round, in batches of 64 KiB: 64 MiB in all, sixteen times the
        // memtable budget.
        for batch in 0..64 {
            let writes = (0..16).map(|i| put(&format!("/r/{round:02}/{:04}", batch * 16 + i), &value)).collect();
            objects.write(ObjectBatch { objects: writes, meta: vec![] }).await.unwrap();
            highest = highest.max(part("memtables"));
        }
    }
    // Past the budget a write waits for a flush: at most the budget and one batch.
    assert!(highest <= budget.memtables as u64 + (1 << 20), "memtables reached {highest}");
    for round in 0..16 {
        for i in (0..1024).step_by(97) {
            let got = objects.get(&format!("/r/{round:02}/{i:04}")).unwrap().expect("written");
            assert_eq!(got, b(&value));
        }
    }
    let cached = part("block_cache");
    assert!(cached > 0 && cached <= budget.block_cache as u64, "block cache {cached}");
}
