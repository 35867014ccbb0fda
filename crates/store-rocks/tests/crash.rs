//! What a crash leaves of the object store: everything up to its last `sync`, nothing
//! after it (object writes skip the WAL), and always the state after some whole batch.
//!
//! The crash is real: the test runs its own binary again as a child process that writes
//! and then exits without closing the database (no destructors run, so RocksDB gets no
//! chance to flush on close), and the parent opens what the child left.

use std::path::Path;
use std::process::Command;

use bytes::Bytes;
use kuorum_store::engine::ObjectWrite;
use kuorum_store::{ObjectBatch, ObjectEngine};
use kuorum_store_rocks::RocksStore;

/// The environment variable that turns `crashing_writer` into the child.
const CHILD_DIR: &str = "KUORUM_CRASH_CHILD_DIR";
/// The child's exit code once it has written everything: tells a crash at the intended
/// point from a failure anywhere earlier.
const CHILD_DONE: i32 = 17;
const SYNCED: u64 = 100;
const WRITTEN: u64 = 150;

fn batch(i: u64) -> ObjectBatch {
    ObjectBatch {
        objects: vec![ObjectWrite { key: format!("/k/{i:04}"), rv: i, value: Some(Bytes::from(format!("v{i}"))) }],
        meta: vec![("applied".into(), Bytes::from(i.to_string()))],
    }
}

async fn write_then_crash(path: &Path) -> ! {
    let store = RocksStore::open(path).unwrap();
    let objects = store.object_engine();
    for i in 1..=SYNCED {
        objects.write(batch(i)).await.unwrap();
    }
    objects.sync().await.unwrap();
    for i in SYNCED + 1..=WRITTEN {
        objects.write(batch(i)).await.unwrap();
    }
    assert_eq!(objects.get(&format!("/k/{WRITTEN:04}")).unwrap(), Some(Bytes::from(format!("v{WRITTEN}"))));
    std::process::exit(CHILD_DONE);
}

/// The child half of `a_crash_keeps_what_was_synced_and_nothing_after`: ignored in a
/// normal run, where it has nothing to do; the parent runs it with `--ignored`.
#[tokio::test]
#[ignore = "the crashing child process of a_crash_keeps_what_was_synced_and_nothing_after"]
async fn crashing_writer() {
    let dir = std::env::var(CHILD_DIR).expect("run by a_crash_keeps_what_was_synced_and_nothing_after");
    write_then_crash(Path::new(&dir)).await;
}

#[tokio::test]
async fn a_crash_keeps_what_was_synced_and_nothing_after() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "crashing_writer", "--nocapture"])
        .env(CHILD_DIR, &path)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(CHILD_DONE), "the child wrote everything, then crashed");

    let store = RocksStore::open(&path).unwrap();
    let objects = store.object_engine();
    let applied: u64 =
        String::from_utf8(objects.get_meta("applied").unwrap().unwrap().to_vec()).unwrap().parse().unwrap();
    assert_eq!(applied, SYNCED, "the synced batches survive, the unsynced ones were never logged");
    let keys: Vec<String> = objects.scan("/k/", None, 1000).unwrap().into_iter().map(|(k, _)| k).collect();
    let expected: Vec<String> = (1..=applied).map(|i| format!("/k/{i:04}")).collect();
    assert_eq!(keys, expected, "the objects are those of the applied batches, no more, no fewer");
    assert_eq!(objects.history_after(0).unwrap().len() as u64, applied, "and so is the history");
}
