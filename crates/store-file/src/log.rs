//! [`FileLogEngine`]: the entries in segment files, an index of where each one lies, and
//! the newest entries' bytes in memory for the readers that want them (replication and
//! apply read what was just appended).

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use kuorum_store::{LogEngine, StoreError, StoreResult};

use crate::meta::{self, Meta};
use crate::record::{self, HEADER_LEN};

/// Sizes a log is opened with. The defaults suit a node; tests make them small to
/// cross segment boundaries and to read entries back from the files.
#[derive(Debug, Clone, Copy)]
pub struct FileLogOptions {
    /// A segment is closed (and a new one started) once it holds this many bytes.
    pub segment_bytes: u64,
    /// The newest entries kept in memory, by total payload size (at least one entry).
    pub recent_bytes: usize,
}

impl Default for FileLogOptions {
    fn default() -> Self {
        FileLogOptions { segment_bytes: 64 << 20, recent_bytes: 32 << 20 }
    }
}

fn err(context: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::new(format!("file log: {context}: {e}"))
}

fn segment_name(first: u64) -> String {
    format!("{first:020}.log")
}

fn parse_segment_name(name: &str) -> Option<u64> {
    name.strip_suffix(".log").filter(|n| n.len() == 20).and_then(|n| n.parse().ok())
}

/// One segment file: the records of the entries `first..next`, back to back.
struct Segment {
    first: u64,
    /// The index the next record in this segment must carry.
    next: u64,
    path: PathBuf,
    file: Arc<File>,
    /// Bytes of whole records; the next record is written here.
    len: u64,
}

/// Where one live entry's payload lies.
#[derive(Clone, Copy)]
struct Loc {
    /// The `first` of the segment holding it.
    segment: u64,
    offset: u64,
    len: u32,
}

struct State {
    /// Ascending by `first`, each continuing the one before; the last is the one appends
    /// go to. Empty only before the first append to a new log.
    segments: Vec<Segment>,
    /// The first live index: everything below is purged, whatever the files still hold.
    first: u64,
    /// Invariant: `locs[i]` is the entry `first + i`; the log is `first..first + locs.len()`.
    locs: VecDeque<Loc>,
    /// The payloads of the newest `recent.len()` entries (a suffix of `locs`), at most
    /// about [`FileLogOptions::recent_bytes`] of them.
    recent: VecDeque<Bytes>,
    recent_bytes: usize,
    opts: FileLogOptions,
}

impl State {
    fn last_index(&self) -> Option<u64> {
        (!self.locs.is_empty()).then(|| self.first + self.locs.len() as u64 - 1)
    }

    fn segment(&self, first: u64) -> StoreResult<&Segment> {
        match self.segments.binary_search_by_key(&first, |s| s.first) {
            Ok(i) => Ok(&self.segments[i]),
            Err(_) => Err(err("read", format!("segment {first} is missing"))),
        }
    }

    fn read(&self, index: u64) -> StoreResult<Bytes> {
        let pos = (index - self.first) as usize;
        let cached_from = self.locs.len() - self.recent.len();
        if pos >= cached_from {
            return Ok(self.recent[pos - cached_from].clone());
        }
        let loc = self.locs[pos];
        // The whole record, so its checksum is checked on every read from the file: a
        // byte flipped on disk after the log was opened is found, never returned.
        let mut buf = vec![0u8; HEADER_LEN + loc.len as usize];
        let at = loc.offset - HEADER_LEN as u64;
        self.segment(loc.segment)?.file.read_exact_at(&mut buf, at).map_err(|e| err("read entry", e))?;
        if record::verified_payload(index, &buf).is_none() {
            return Err(err(
                "read entry",
                format!("entry {index} (segment {}, offset {at}) fails its checksum: the log is damaged", loc.segment),
            ));
        }
        Ok(Bytes::from(buf).slice(HEADER_LEN..))
    }

    fn push_recent(&mut self, payload: Bytes) {
        self.recent_bytes += payload.len();
        self.recent.push_back(payload);
        while self.recent_bytes > self.opts.recent_bytes && self.recent.len() > 1 {
            let old = self.recent.pop_front().expect("not empty");
            self.recent_bytes -= old.len();
        }
    }

    /// Keeps `recent` a suffix of `locs` after entries left `locs` at the front.
    fn trim_recent_front(&mut self) {
        while self.recent.len() > self.locs.len() {
            let old = self.recent.pop_front().expect("not empty");
            self.recent_bytes -= old.len();
        }
    }

    /// Starts a new segment whose first entry is `first`, to which appends then go.
    fn roll(&mut self, dir: &Path, first: u64) -> StoreResult<()> {
        if let Some(active) = self.segments.last() {
            // Recovery reads segments in order and stops at the first torn one, so the
            // old segment must be whole on disk before anything is written to the next.
            active.file.sync_data().map_err(|e| err("sync closed segment", e))?;
            if active.len == 0 {
                // It holds nothing: drop it rather than leave an empty file behind.
                let empty = self.segments.pop().expect("not empty");
                fs::remove_file(&empty.path).map_err(|e| err("remove empty segment", e))?;
            }
        }
        let path = dir.join(segment_name(first));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| err("create segment", e))?;
        meta::sync_dir(dir).map_err(|e| err("sync directory", e))?;
        self.segments.push(Segment { first, next: first, path, file: Arc::new(file), len: 0 });
        Ok(())
    }
}

struct Inner {
    dir: PathBuf,
    /// Lock order: `state` before `meta`.
    state: Mutex<State>,
    meta: Mutex<Meta>,
    /// Group commit, as in RocksDB's engine: every append bumps `written` (under the
    /// state lock, once its bytes are in the file); `synced` is a value of `written` such
    /// that every append counted up to it is on disk.
    written: AtomicU64,
    synced: AtomicU64,
    fsyncs: AtomicU64,
    /// One fsync at a time; callers queued behind it usually find their appends covered.
    sync_lock: tokio::sync::Mutex<()>,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn meta(&self) -> MutexGuard<'_, Meta> {
        self.meta.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The Raft log in a directory of its own: segment files named by their first index
/// (`00000000000000000001.log`, ...), each a run of [records](crate::record), and a
/// `meta` file with the vote and the purge point. Cloning shares the same log.
///
/// - `append` writes the records at the end of the newest segment (into the page cache,
///   in place: no fsync, so no hop to a blocking thread) and returns; `sync` fdatasyncs
///   that segment, shared by concurrent callers (group commit).
/// - `truncate_from` cuts the segment holding the index and removes later ones, durably
///   before it returns (so a crash cannot leave stale records behind new ones).
/// - `purge_upto` records the new first index in `meta` and removes the segments wholly
///   below it.
/// - `put_meta` first syncs the appends before it, then replaces `meta` durably.
/// - Opening reads every segment back, cuts a torn tail (a crash in the middle of an
///   append) and drops segments that do not continue the log.
#[derive(Clone)]
pub struct FileLogEngine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for FileLogEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileLogEngine").field("dir", &self.inner.dir).finish()
    }
}

impl FileLogEngine {
    /// Opens the log in `dir`, creating the directory if needed, and recovers what a
    /// crash left (see the type docs).
    pub fn open(dir: &Path) -> StoreResult<Self> {
        Self::open_with(dir, FileLogOptions::default())
    }

    /// As [`FileLogEngine::open`], with these sizes.
    pub fn open_with(dir: &Path, opts: FileLogOptions) -> StoreResult<Self> {
        fs::create_dir_all(dir).map_err(|e| err("create directory", e))?;
        let meta = meta::load(dir).map_err(|e| err("read meta", e))?;
        let _ = fs::remove_file(dir.join("meta.tmp"));

        let mut names: Vec<(u64, PathBuf)> = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| err("list directory", e))? {
            let entry = entry.map_err(|e| err("list directory", e))?;
            if let Some(first) = entry.file_name().to_str().and_then(parse_segment_name) {
                names.push((first, entry.path()));
            }
        }
        names.sort();

        // The chain of segments that continue one another; a segment that does not
        // continue it starts a new chain only if everything before it is purged.
        let mut segments: Vec<Segment> = Vec::new();
        let mut found: Vec<(u64, Loc)> = Vec::new();
        let mut doomed: Vec<PathBuf> = Vec::new();
        let mut broken = false;
        let later_firsts: Vec<u64> = names.iter().skip(1).map(|(first, _)| *first).collect();
        for (i, (first, path)) in names.into_iter().enumerate() {
            if broken {
                doomed.push(path);
                continue;
            }
            if let Some(prev) = segments.last() {
                if prev.next != first {
                    if prev.next <= meta.first {
                        doomed.extend(segments.drain(..).map(|s| s.path));
                        found.clear();
                    } else {
                        doomed.push(path);
                        broken = true;
                        continue;
                    }
                }
            }
            let file = OpenOptions::new().read(true).write(true).open(&path).map_err(|e| err("open segment", e))?;
            let scan = record::scan(&file, first).map_err(|e| err("read segment", e))?;
            let on_disk = file.metadata().map_err(|e| err("stat segment", e))?.len();
            if scan.valid_len < on_disk {
                let expected = scan.records.last().map_or(first, |r| r.index + 1);
                let next_segment = later_firsts.get(i).copied();
                // Where everything from the bad record on is purged, the next segment
                // starts the log (the chain check above) and this one goes.
                if !next_segment.is_some_and(|next| next <= meta.first) {
                    refuse_damage(&file, &path, &scan, expected, next_segment.is_some())?;
                    // A torn tail: cut it, and nothing after it can follow.
                    file.set_len(scan.valid_len).map_err(|e| err("cut torn tail", e))?;
                    file.sync_data().map_err(|e| err("cut torn tail", e))?;
                    broken = true;
                }
            }
            let next = scan.records.last().map_or(first, |r| r.index + 1);
            found.extend(scan.records.iter().map(|r| (r.index, Loc { segment: first, offset: r.offset, len: r.len })));
            segments.push(Segment { first, next, path, file: Arc::new(file), len: scan.valid_len });
        }
        for path in &doomed {
            fs::remove_file(path).map_err(|e| err("remove segment", e))?;
        }

        let first = match found.first() {
            Some((i, _)) => (*i).max(meta.first),
            None => meta.first,
        };
        let locs: VecDeque<Loc> = found.into_iter().filter(|(i, _)| *i >= first).map(|(_, l)| l).collect();
        let mut state = State { segments, first, locs, recent: VecDeque::new(), recent_bytes: 0, opts };
        remove_segment_files(take_purged_segments(&mut state))?;
        if !doomed.is_empty() {
            meta::sync_dir(dir).map_err(|e| err("sync directory", e))?;
        }
        Ok(FileLogEngine {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                state: Mutex::new(state),
                meta: Mutex::new(meta),
                written: AtomicU64::new(0),
                synced: AtomicU64::new(0),
                fsyncs: AtomicU64::new(0),
                sync_lock: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// The directory the log lives in.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// How many fsyncs of appended entries `sync` made since the log was opened.
    pub fn fsync_count(&self) -> u64 {
        self.inner.fsyncs.load(Ordering::SeqCst)
    }

    /// How many segment files the log spans now.
    pub fn segment_count(&self) -> usize {
        self.inner.state().segments.len()
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Inner) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || f(&inner)).await.map_err(|e| err("blocking task", e))?
    }
}

/// Refuses to open a log whose segment `path` stops being readable at entry `expected`
/// for any reason but a crash. A segment with segments after it (`not_last`) was synced
/// whole before they were started (see `roll`), so anything wrong in it is damage; in
/// the last segment, damage is what leaves intact records after it
/// ([`record::damaged_at`]). Cutting there would drop entries this node acknowledged as
/// durable, which Raft's safety rests on.
fn refuse_damage(file: &File, path: &Path, scan: &record::Scan, expected: u64, not_last: bool) -> StoreResult<()> {
    let after = if not_last {
        Some("later segments".to_string())
    } else {
        record::damaged_at(file, scan.valid_len, expected)
            .map_err(|e| err("read segment", e))?
            .map(|at| format!("an intact record at offset {at}"))
    };
    match after {
        None => Ok(()),
        Some(after) => Err(err(
            "open",
            format!(
                "{}: entry {expected} at offset {} is damaged and {after} follow(s) it: the log is corrupt, not \
                 torn by a crash; rebuild this node (docs/operations.md, \"Rebuilding a node\")",
                path.display(),
                scan.valid_len
            ),
        )),
    }
}

/// Takes out the segments whose entries are all below the first live index (never the
/// last one: appends go there). Nothing reads them afterwards; their files are the
/// caller's to remove.
fn take_purged_segments(state: &mut State) -> Vec<Segment> {
    let mut gone = Vec::new();
    while state.segments.len() > 1 && state.segments[1].first <= state.first {
        gone.push(state.segments.remove(0));
    }
    gone
}

fn remove_segment_files(segments: Vec<Segment>) -> StoreResult<()> {
    for gone in segments {
        fs::remove_file(&gone.path).map_err(|e| err("remove purged segment", e))?;
    }
    Ok(())
}

impl LogEngine for FileLogEngine {
    async fn append(&self, entries: Vec<(u64, Bytes)>) -> StoreResult<()> {
        let Some(&(start, _)) = entries.first() else { return Ok(()) };
        if entries.windows(2).any(|w| w[0].0.checked_add(1) != Some(w[1].0)) {
            return Err(err("append", "entries are not contiguous"));
        }
        let inner = &self.inner;
        let mut st = inner.state();
        match st.last_index() {
            Some(last) if last.checked_add(1) != Some(start) => {
                return Err(err("append", format!("entry {start} does not follow the last entry {last}")));
            }
            Some(_) => {}
            None if start < st.first => {
                return Err(err("append", format!("entry {start} is below the purged point {}", st.first)));
            }
            None => {
                if st.segments.last().is_some_and(|active| active.next != start) {
                    // A new segment that does not follow the old ones: opening accepts it
                    // only if everything before it is purged, so say so first.
                    let mut m = inner.meta();
                    let mut next = m.clone();
                    next.first = start;
                    meta::store(&inner.dir, &next).map_err(|e| err("write meta", e))?;
                    *m = next;
                }
                st.first = start;
            }
        }
        let needs_roll = match st.segments.last() {
            Some(active) => active.next != start || active.len >= st.opts.segment_bytes,
            None => true,
        };
        if needs_roll {
            st.roll(&inner.dir, start)?;
        }

        let mut buf = Vec::with_capacity(entries.iter().map(|(_, p)| HEADER_LEN + p.len()).sum());
        for (index, payload) in &entries {
            record::encode(*index, payload, &mut buf);
        }
        let active = st.segments.last_mut().expect("rolled above");
        active.file.write_all_at(&buf, active.len).map_err(|e| err("write", e))?;
        let (segment, mut offset) = (active.first, active.len);
        active.len += buf.len() as u64;
        active.next = entries.last().expect("not empty").0 + 1;
        for (_, payload) in entries {
            offset += HEADER_LEN as u64;
            st.locs.push_back(Loc { segment, offset, len: payload.len() as u32 });
            offset += payload.len() as u64;
            st.push_recent(payload);
        }
        // Counted only now that the bytes are in the file, under the lock `sync` reads
        // it under: a sync that sees this count fsyncs a file holding these records.
        inner.written.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn sync(&self) -> StoreResult<()> {
        let inner = &self.inner;
        let target = inner.written.load(Ordering::SeqCst);
        if inner.synced.load(Ordering::SeqCst) >= target {
            return Ok(());
        }
        let _guard = inner.sync_lock.lock().await;
        if inner.synced.load(Ordering::SeqCst) >= target {
            return Ok(());
        }
        // Earlier segments were synced when they were closed, so the active one is all
        // that can hold unsynced records counted up to `upto`.
        let (upto, file) = {
            let st = inner.state();
            let file = st.segments.last().map(|s| Arc::clone(&s.file));
            (inner.written.load(Ordering::SeqCst), file)
        };
        if let Some(file) = file {
            tokio::task::spawn_blocking(move || file.sync_data())
                .await
                .map_err(|e| err("blocking task", e))?
                .map_err(|e| err("sync", e))?;
        }
        inner.fsyncs.fetch_add(1, Ordering::SeqCst);
        inner.synced.fetch_max(upto, Ordering::SeqCst);
        Ok(())
    }

    async fn truncate_from(&self, index: u64) -> StoreResult<()> {
        self.blocking(move |inner| {
            let mut st = inner.state();
            let Some(last) = st.last_index() else { return Ok(()) };
            let from = index.max(st.first);
            if from > last {
                return Ok(());
            }
            let keep = (from - st.first) as usize;
            let loc = st.locs[keep];
            let cut = loc.offset - HEADER_LEN as u64;
            // Cut the segment holding `from` first, durably, then remove the later ones:
            // a crash in between leaves segments that no longer follow, which opening
            // removes.
            let at = st.segments.iter().position(|s| s.first == loc.segment).expect("a live entry's segment exists");
            let seg = &mut st.segments[at];
            seg.file.set_len(cut).map_err(|e| err("truncate", e))?;
            seg.file.sync_data().map_err(|e| err("truncate", e))?;
            seg.len = cut;
            seg.next = from;
            for later in st.segments.drain(at + 1..) {
                fs::remove_file(&later.path).map_err(|e| err("remove truncated segment", e))?;
            }
            meta::sync_dir(&inner.dir).map_err(|e| err("sync directory", e))?;
            st.locs.truncate(keep);
            let dropped = (last + 1 - from) as usize;
            for _ in 0..dropped.min(st.recent.len()) {
                let gone = st.recent.pop_back().expect("not empty");
                st.recent_bytes -= gone.len();
            }
            Ok(())
        })
        .await
    }

    async fn purge_upto(&self, index: u64) -> StoreResult<()> {
        self.blocking(move |inner| {
            let new_first = index.saturating_add(1);
            // Under the state lock only what is in memory: appends and reads wait on that
            // lock, and the disk work below (two fsyncs, unlinking whole segments) can take
            // hundreds of milliseconds right after a snapshot's flush. Every node purges at
            // about the same entry, so a lock held across it stalled the whole cluster.
            let gone = {
                let mut st = inner.state();
                if new_first <= st.first {
                    return Ok(());
                }
                let gone = ((new_first - st.first) as usize).min(st.locs.len());
                st.locs.drain(..gone);
                st.trim_recent_front();
                st.first = new_first;
                take_purged_segments(&mut st)
            };
            // The purge point first, then the files: after a crash in between the point
            // hides what the files still hold. A crash before it leaves the entries there,
            // which is as if the purge had not been asked for.
            {
                let mut m = inner.meta();
                if new_first > m.first {
                    let mut next = m.clone();
                    next.first = new_first;
                    meta::store(&inner.dir, &next).map_err(|e| err("write meta", e))?;
                    *m = next;
                }
            }
            remove_segment_files(gone)
        })
        .await
    }

    fn read_range(&self, start: u64, end: u64) -> StoreResult<Vec<(u64, Bytes)>> {
        let st = self.inner.state();
        let Some(last) = st.last_index() else { return Ok(Vec::new()) };
        let lo = start.max(st.first);
        let hi = end.min(last.saturating_add(1));
        (lo..hi).map(|i| Ok((i, st.read(i)?))).collect()
    }

    fn last_entry(&self) -> StoreResult<Option<(u64, Bytes)>> {
        let st = self.inner.state();
        match st.last_index() {
            Some(last) => Ok(Some((last, st.read(last)?))),
            None => Ok(None),
        }
    }

    async fn put_meta(&self, key: &str, value: Bytes) -> StoreResult<()> {
        // What was appended before a vote is durable with it (RocksDB's one WAL gave the
        // same, and a vote is rare).
        self.sync().await?;
        let key = key.to_owned();
        self.blocking(move |inner| {
            let mut m = inner.meta();
            let mut next = m.clone();
            next.values.insert(key, value);
            meta::store(&inner.dir, &next).map_err(|e| err("write meta", e))?;
            *m = next;
            Ok(())
        })
        .await
    }

    fn get_meta(&self, key: &str) -> StoreResult<Option<Bytes>> {
        Ok(self.inner.meta().values.get(key).cloned())
    }
}
