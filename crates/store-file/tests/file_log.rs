//! The file log against the conformance suite and openraft's storage suite, and what a
//! restart finds: reopening, torn tails, segment boundaries, purges and truncations
//! across segments.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kuorum_raft::log_store::LogStore;
use kuorum_raft::state_machine::StateMachine;
use kuorum_raft::types::TypeConfig;
use kuorum_store::conformance::{log_engine_suite, log_reopen_suite};
use kuorum_store::memory::MemoryObjectEngine;
use kuorum_store::LogEngine;
use kuorum_store_file::{FileLogEngine, FileLogOptions};
use openraft::testing::log::{StoreBuilder, Suite};
use openraft::StorageError;
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
        let path = dir.path().join("log");
        self.0.lock().unwrap().push(dir);
        path
    }
}

/// Segments of about three 100-byte entries, and two entries' worth kept in memory, so
/// that reads come from the files and appends cross segment boundaries.
fn tiny() -> FileLogOptions {
    FileLogOptions { segment_bytes: 300, recent_bytes: 200 }
}

fn entry(i: u64) -> Bytes {
    Bytes::from(format!("{i:0>100}"))
}

/// Appends entries `1..=n`, one append each, and syncs.
async fn fill(log: &FileLogEngine, n: u64) {
    for i in 1..=n {
        log.append(vec![(i, entry(i))]).await.unwrap();
    }
    log.sync().await.unwrap();
}

fn indexes(entries: &[(u64, Bytes)]) -> Vec<u64> {
    entries.iter().map(|(i, _)| *i).collect()
}

fn segment_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn file_log_conforms() {
    let dirs = Dirs::default();
    log_engine_suite(|| FileLogEngine::open(&dirs.fresh()).unwrap()).await;
    log_engine_suite(|| FileLogEngine::open_with(&dirs.fresh(), tiny()).unwrap()).await;
}

#[tokio::test]
async fn log_survives_reopen() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    log_reopen_suite(|| FileLogEngine::open(&path).unwrap()).await;
    let path = dirs.fresh();
    log_reopen_suite(|| FileLogEngine::open_with(&path, tiny()).unwrap()).await;
}

#[tokio::test]
async fn group_commit_shares_fsyncs() {
    let dirs = Dirs::default();
    let log = FileLogEngine::open(&dirs.fresh()).unwrap();
    log.sync().await.unwrap();
    assert_eq!(log.fsync_count(), 0, "nothing to sync, no fsync");
    for i in 1..=10 {
        log.append(vec![(i, entry(i))]).await.unwrap();
    }
    log.sync().await.unwrap();
    log.sync().await.unwrap();
    assert_eq!(log.fsync_count(), 1, "one fsync covers every append before it");
}

#[tokio::test]
async fn appends_cross_segments_and_read_back_from_the_files() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    let log = FileLogEngine::open_with(&path, tiny()).unwrap();
    fill(&log, 10).await;
    assert!(log.segment_count() >= 3, "10 entries of 116 bytes span segments of 300 bytes");
    let all = log.read_range(1, 11).unwrap();
    assert_eq!(indexes(&all), (1..=10).collect::<Vec<_>>());
    assert!(all.iter().all(|(i, p)| *p == entry(*i)), "entries read from files and memory alike");
    drop(log);

    let log = FileLogEngine::open_with(&path, tiny()).unwrap();
    let all = log.read_range(0, u64::MAX).unwrap();
    assert!(all.iter().map(|(i, p)| (*i, p.clone())).eq((1..=10).map(|i| (i, entry(i)))));
}

#[tokio::test]
async fn purges_remove_whole_segments_and_stay_purged() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    let log = FileLogEngine::open_with(&path, tiny()).unwrap();
    fill(&log, 10).await;
    let before = segment_files(&path).len();
    log.purge_upto(5).await.unwrap();
    assert!(segment_files(&path).len() < before, "segments wholly below 6 are removed");
    assert_eq!(indexes(&log.read_range(0, 100).unwrap()), (6..=10).collect::<Vec<_>>());
    drop(log);
    // The segment holding 5 and 6 is still there; the purge point hides 5.
    let log = FileLogEngine::open_with(&path, tiny()).unwrap();
    assert_eq!(indexes(&log.read_range(0, 100).unwrap()), (6..=10).collect::<Vec<_>>());

    // Past the end: empty, and the next entry may start anywhere after the point.
    log.purge_upto(20).await.unwrap();
    assert_eq!(log.last_entry().unwrap(), None);
    assert!(log.append(vec![(15, entry(15))]).await.is_err(), "below the purge point");
    log.append(vec![(21, entry(21)), (22, entry(22))]).await.unwrap();
    log.sync().await.unwrap();
    drop(log);
    let log = FileLogEngine::open_with(&path, tiny()).unwrap();
    assert_eq!(indexes(&log.read_range(0, 100).unwrap()), vec![21, 22]);
}

#[tokio::test]
async fn truncation_across_segments_is_durable() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    let log = FileLogEngine::open_with(&path, tiny()).unwrap();
    fill(&log, 10).await;
    log.truncate_from(4).await.unwrap();
    assert_eq!(log.last_entry().unwrap().map(|e| e.0), Some(3));
    assert!(log.append(vec![(6, entry(6))]).await.is_err(), "an append must follow the last entry");
    log.append(vec![(4, b("four, again"))]).await.unwrap();
    log.sync().await.unwrap();
    drop(log);
    let log = FileLogEngine::open_with(&path, tiny()).unwrap();
    assert_eq!(indexes(&log.read_range(0, 100).unwrap()), vec![1, 2, 3, 4]);
    assert_eq!(log.last_entry().unwrap(), Some((4, b("four, again"))));
}

#[tokio::test]
async fn a_torn_tail_is_cut_on_open() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    {
        let log = FileLogEngine::open(&path).unwrap();
        log.append((1..=3).map(|i| (i, entry(i))).collect()).await.unwrap();
        log.sync().await.unwrap();
    }
    // A crash in the middle of appending entry 4: half its record reached the file.
    let seg = path.join(&segment_files(&path)[0]);
    let whole = fs::metadata(&seg).unwrap().len();
    let mut f = fs::OpenOptions::new().append(true).open(&seg).unwrap();
    f.write_all(&[100, 0, 0, 0, 1, 2, 3, 4, 4, 0, 0, 0]).unwrap();
    drop(f);

    let log = FileLogEngine::open(&path).unwrap();
    assert_eq!(log.last_entry().unwrap().map(|e| e.0), Some(3), "the torn record is not an entry");
    assert_eq!(fs::metadata(&seg).unwrap().len(), whole, "and it is cut off");
    log.append(vec![(4, entry(4))]).await.unwrap();
    log.sync().await.unwrap();
    drop(log);
    let log = FileLogEngine::open(&path).unwrap();
    assert_eq!(indexes(&log.read_range(0, 100).unwrap()), vec![1, 2, 3, 4]);
}

#[tokio::test]
async fn a_segment_that_does_not_follow_is_dropped() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    {
        let log = FileLogEngine::open_with(&path, tiny()).unwrap();
        fill(&log, 6).await;
    }
    // Stale leftovers of an older log, past a gap.
    let mut stale = Vec::new();
    for i in [40u64, 41] {
        let p = entry(i);
        stale.extend_from_slice(&(p.len() as u32).to_le_bytes());
        stale.extend_from_slice(&crc32fast_hash(i, &p).to_le_bytes());
        stale.extend_from_slice(&i.to_le_bytes());
        stale.extend_from_slice(&p);
    }
    fs::write(path.join(format!("{:020}.log", 40)), &stale).unwrap();
    let log = FileLogEngine::open_with(&path, tiny()).unwrap();
    assert_eq!(log.last_entry().unwrap().map(|e| e.0), Some(6));
    assert!(!path.join(format!("{:020}.log", 40)).exists());
}

fn crc32fast_hash(index: u64, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&index.to_le_bytes());
    h.update(payload);
    h.finalize()
}

#[tokio::test]
async fn a_damaged_meta_file_is_an_error_not_a_lost_vote() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    {
        let log = FileLogEngine::open(&path).unwrap();
        log.put_meta("vote", b("term 3 for node 1")).await.unwrap();
    }
    let raw = fs::read(path.join("meta")).unwrap();
    fs::write(path.join("meta"), &raw[..raw.len() - 2]).unwrap();
    assert!(FileLogEngine::open(&path).is_err());
}

/// Each build opens a file log in a fresh directory beside an in-memory object store.
struct FileBuilder;

impl StoreBuilder<TypeConfig, LogStore<FileLogEngine>, StateMachine<MemoryObjectEngine>, TempDir> for FileBuilder {
    async fn build(
        &self,
    ) -> Result<(TempDir, LogStore<FileLogEngine>, StateMachine<MemoryObjectEngine>), StorageError<TypeConfig>> {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = LogStore::new(Arc::new(FileLogEngine::open_with(&dir.path().join("log"), tiny()).expect("open log")));
        let sm = StateMachine::new(Arc::new(MemoryObjectEngine::new())).expect("state machine");
        Ok((dir, log, sm))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openraft_storage_suite_passes_on_the_file_log() {
    Suite::test_all(FileBuilder).await.expect("openraft storage suite");
}

/// Flips one bit of the byte at `offset` in the file at `path`, as a failing disk would.
fn flip(path: &Path, offset: u64) {
    let mut bytes = fs::read(path).unwrap();
    bytes[offset as usize] ^= 0x10;
    fs::write(path, bytes).unwrap();
}

/// Bytes of one record of [`entry`]: a 16-byte header and 100 bytes.
const RECORD: u64 = 116;

#[tokio::test]
async fn a_damaged_record_with_intact_ones_after_it_is_refused_not_cut() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    {
        let log = FileLogEngine::open(&path).unwrap();
        fill(&log, 5).await;
    }
    let seg = path.join(&segment_files(&path)[0]);
    // A byte of entry 2's payload: entries 3 to 5, acknowledged as durable, follow it.
    flip(&seg, RECORD + 16 + 50);
    let e = FileLogEngine::open(&path).unwrap_err().to_string();
    assert!(e.contains("entry 2") && e.contains("corrupt"), "{e}");
    assert_eq!(fs::metadata(&seg).unwrap().len(), 5 * RECORD, "nothing is cut");
    // A flip in a record's length field: the scan cannot step over it; the same answer.
    flip(&seg, RECORD + 16 + 50);
    flip(&seg, RECORD + 1);
    assert!(FileLogEngine::open(&path).unwrap_err().to_string().contains("corrupt"));
    // Repaired, it opens whole: the refusal changed nothing on disk.
    flip(&seg, RECORD + 1);
    let log = FileLogEngine::open(&path).unwrap();
    assert_eq!(indexes(&log.read_range(0, 100).unwrap()), vec![1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn damage_in_a_segment_with_segments_after_it_is_refused() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    {
        let log = FileLogEngine::open_with(&path, tiny()).unwrap();
        fill(&log, 10).await;
    }
    let files = segment_files(&path);
    assert!(files.len() >= 3, "{files:?}");
    // The last byte of the first segment: its last record, synced before the next began.
    let first = path.join(&files[0]);
    let len = fs::metadata(&first).unwrap().len();
    flip(&first, len - 1);
    let e = FileLogEngine::open_with(&path, tiny()).unwrap_err().to_string();
    assert!(e.contains("corrupt") && e.contains("later segments"), "{e}");
    assert_eq!(segment_files(&path), files, "no segment is removed");
}

#[tokio::test]
async fn a_byte_flipped_while_the_log_is_open_fails_the_read_of_its_entry() {
    let dirs = Dirs::default();
    let path = dirs.fresh();
    let log = FileLogEngine::open_with(&path, tiny()).unwrap();
    fill(&log, 10).await;
    let first = path.join(&segment_files(&path)[0]);
    // Entry 1's payload, read back from the file (only the newest entries are in memory).
    flip(&first, 16 + 7);
    let e = log.read_range(1, 2).unwrap_err().to_string();
    assert!(e.contains("entry 1") && e.contains("checksum"), "{e}");
    assert_eq!(indexes(&log.read_range(2, 11).unwrap()), (2..=10).collect::<Vec<_>>(), "the others still read");
}
