//! What a crash leaves of the object store: everything up to its last `sync`, nothing
//! after it (object writes skip the WAL), and always the state after some whole batch;
//! and of an install (a snapshot, a backup restored) stopped midway: the whole new state
//! once the database is opened again.
//!
//! The crash is real: the test runs its own binary again as a child process that writes
//! and then exits without closing the database (no destructors run, so RocksDB gets no
//! chance to flush on close), and the parent opens what the child left.

use std::path::Path;
use std::process::Command;

use bytes::Bytes;
use kuorum_store::engine::{DumpParts, ObjectDump, ObjectWrite};
use kuorum_store::{ObjectBatch, ObjectEngine};
use kuorum_store_rocks::{InstallUntil, RocksStore};

/// The environment variable that turns `crashing_writer` into the child.
const CHILD_DIR: &str = "KUORUM_CRASH_CHILD_DIR";
/// For `crashing_installer`: how many families it ingests before it crashes.
const CHILD_INGESTED: &str = "KUORUM_CRASH_CHILD_INGESTED";
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

/// The state the installer writes first (synced), then the one it installs.
fn old_state() -> Vec<ObjectBatch> {
    (1..=SYNCED).map(batch).collect()
}

fn new_state() -> ObjectDump {
    let keys = ["/n/a", "/n/b", "/n/c"];
    ObjectDump {
        objects: keys[..2].iter().map(|k| (k.to_string(), Bytes::from(format!("new {k}")))).collect(),
        history: vec![
            ObjectWrite { key: "/n/a".into(), rv: 500, value: Some(Bytes::from("older /n/a")) },
            ObjectWrite { key: "/n/a".into(), rv: 510, value: Some(Bytes::from("new /n/a")) },
            ObjectWrite { key: "/n/b".into(), rv: 505, value: Some(Bytes::from("new /n/b")) },
            ObjectWrite { key: keys[2].into(), rv: 501, value: Some(Bytes::from("gone")) },
            ObjectWrite { key: keys[2].into(), rv: 502, value: None },
        ],
        meta: vec![("applied".into(), Bytes::from("512"))],
    }
}

fn parts(dump: ObjectDump) -> DumpParts {
    // Small parts, so each family's file is written from several.
    Box::new(dump.into_parts(16).into_iter().map(Ok))
}

async fn install_then_crash(path: &Path, ingested: usize) -> ! {
    let store = RocksStore::open(path).unwrap();
    let objects = store.object_engine();
    for b in old_state() {
        objects.write(b).await.unwrap();
    }
    objects.sync().await.unwrap();
    objects.restore_parts_until(parts(new_state()), InstallUntil::Ingested(ingested)).await.unwrap();
    std::process::exit(CHILD_DONE);
}

/// The child half of `an_install_cut_short_is_finished_when_the_database_opens`.
#[tokio::test]
#[ignore = "the crashing child process of an_install_cut_short_is_finished_when_the_database_opens"]
async fn crashing_installer() {
    let dir = std::env::var(CHILD_DIR).expect("run by an_install_cut_short_is_finished_when_the_database_opens");
    let ingested: usize = std::env::var(CHILD_INGESTED).unwrap().parse().unwrap();
    install_then_crash(Path::new(&dir), ingested).await;
}

#[tokio::test]
async fn an_install_cut_short_is_finished_when_the_database_opens() {
    for ingested in 0..=2 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let status = Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "crashing_installer", "--nocapture"])
            .env(CHILD_DIR, &path)
            .env(CHILD_INGESTED, ingested.to_string())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(CHILD_DONE), "the child installed as far as told, then crashed");
        assert!(path.join("installing").is_dir(), "the crash left the install's files");

        let store = RocksStore::open(&path).unwrap();
        let objects = store.object_engine();
        assert_eq!(
            objects.dump().unwrap(),
            new_state(),
            "after {ingested} of 3 families ingested, opening finishes the install"
        );
        assert_eq!(objects.get_meta("\0installing").unwrap(), None, "and clears its mark");
        assert!(!path.join("installing").exists(), "and removes its files");
        assert_eq!(objects.get("/k/0001").unwrap(), None, "nothing of the old state is left");
        drop(objects);
        drop(store);

        // Opening again changes nothing.
        let objects = RocksStore::open(&path).unwrap().object_engine();
        assert_eq!(objects.dump().unwrap(), new_state());
    }
}
