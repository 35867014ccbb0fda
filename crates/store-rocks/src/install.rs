//! Installing a whole object state (a Raft snapshot from a peer, a restored backup) as
//! table files ingested into the database, so the install holds a part of the state in
//! memory at a time, not all of it.
//!
//! A write batch would be atomic, but it holds the whole state in memory and then again
//! in the memtables it fills (a node installing 370 MB of objects peaked at 1.75 GB).
//! Table files are written part by part and ingested, but RocksDB's C API ingests one
//! column family at a time, so the three families are made to change together by a mark
//! and a redo:
//!
//! 1. **Write**: each family's new contents go to a table file in `installing/`
//!    (RocksDB's `SstFileWriter`, synced when finished). Each file also holds a range
//!    deletion over the whole family, which covers what the database holds and not the
//!    file's own keys, so ingesting the file *replaces* the family, and ingesting it a
//!    second time changes nothing.
//! 2. **Mark**: `\0installing` is written to `object_meta` through the WAL and synced.
//!    From here on the new state is the one that counts.
//! 3. **Ingest** `objects`, then `history`, then `object_meta`. The last file's range
//!    deletion removes the mark, and its keys bring the new applied log id: that one
//!    ingestion is the commit point.
//!
//! Opening a database that holds the mark redoes step 3 from the files (they stay until
//! then); opening one without it removes whatever a failed install left. So after a
//! crash the objects, their history and the applied log id are all old or all new.
//!
//! Worked example: a node holding `/a` at applied 7 installs a snapshot holding `/b` at
//! applied 40 and crashes after ingesting `objects`. The database now holds `/b`, the
//! old history, applied 7 and the mark; opening it ingests the three files again and
//! ends with `/b`, the snapshot's history and applied 40, without the mark.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use kuorum_store::engine::{DumpPart, DumpParts};
use kuorum_store::StoreResult;
use rocksdb::{IngestExternalFileOptions, SstFileWriter, WriteBatch};

use crate::db::{err, family_options, Shared, CF_HISTORY, CF_OBJECTS, CF_OBJECT_META};
use crate::object::{history_key, history_value, object_value, FORMAT_SUPERSEDED, META_FORMAT, PAST_ALL_KEYS};

/// The `object_meta` key present while an install is between its mark and its commit.
pub(crate) const META_INSTALLING: &str = "\0installing";

/// Where the table files of an install are written, inside the database's directory.
const INSTALL_DIR: &str = "installing";

/// The families in the order they are ingested, each with its file; `object_meta`
/// last, since its ingestion commits the install.
const FAMILIES: [(&str, &str); 3] =
    [(CF_OBJECTS, "objects.sst"), (CF_HISTORY, "history.sst"), (CF_OBJECT_META, "object_meta.sst")];

/// How many families an install ingests before it stops, for tests that stop it midway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallUntil {
    /// All three: the install is done.
    Done,
    /// Stop after writing the mark and ingesting this many families (0 to 2), as a
    /// crash there would; the database's next opening finishes the install.
    Ingested(usize),
}

fn install_dir(shared: &Shared) -> PathBuf {
    shared.path().join(INSTALL_DIR)
}

fn remove_dir(dir: &Path) -> StoreResult<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(err("remove install files", e)),
        _ => Ok(()),
    }
}

/// One family's table file being written.
struct FamilyFile<'a> {
    writer: SstFileWriter<'a>,
    family: &'static str,
}

impl<'a> FamilyFile<'a> {
    /// Opens the file, starting with the range deletion that makes ingesting it replace
    /// the family.
    fn open(opts: &'a rocksdb::Options, path: &Path, family: &'static str) -> StoreResult<Self> {
        let writer = SstFileWriter::create(opts);
        writer.open(path).map_err(|e| err("create install file", e))?;
        let mut file = FamilyFile { writer, family };
        file.writer.delete_range(&[][..], &PAST_ALL_KEYS[..]).map_err(|e| file.error(e))?;
        Ok(file)
    }

    fn error(&self, e: impl std::fmt::Display) -> kuorum_store::StoreError {
        err(&format!("install {}", self.family), e)
    }

    /// Keys must come in strictly ascending order, as a dump's parts carry them.
    fn put(&mut self, key: &[u8], value: &[u8]) -> StoreResult<()> {
        self.writer.put(key, value).map_err(|e| self.error(e))
    }

    fn finish(mut self) -> StoreResult<()> {
        self.writer.finish().map_err(|e| self.error(e))
    }
}

/// Step 1: writes the parts to one table file per family. Blocking.
fn write_files(dir: &Path, parts: DumpParts) -> StoreResult<()> {
    let opts: Vec<rocksdb::Options> = FAMILIES.iter().map(|(family, _)| family_options(family, None)).collect();
    let mut objects = FamilyFile::open(&opts[0], &dir.join(FAMILIES[0].1), CF_OBJECTS)?;
    let mut history = FamilyFile::open(&opts[1], &dir.join(FAMILIES[1].1), CF_HISTORY)?;
    // The metadata is a handful of pairs, sorted here since parts need not order them.
    let mut meta: BTreeMap<String, Bytes> = BTreeMap::new();
    for part in parts {
        match part? {
            DumpPart::Meta(pairs) => meta.extend(pairs),
            DumpPart::Objects(current) => {
                for (key, rv, value) in current {
                    objects.put(key.as_bytes(), &object_value(rv, &value))?;
                }
            }
            DumpPart::History(versions) => {
                for w in versions {
                    history.put(&history_key(&w.key, w.rv), &history_value(w.value.as_deref()))?;
                }
            }
        }
    }
    objects.finish()?;
    history.finish()?;
    meta.insert(META_FORMAT.to_string(), Bytes::from_static(FORMAT_SUPERSEDED));
    meta.remove(META_INSTALLING);
    let mut meta_file = FamilyFile::open(&opts[2], &dir.join(FAMILIES[2].1), CF_OBJECT_META)?;
    for (key, value) in &meta {
        meta_file.put(key.as_bytes(), value)?;
    }
    meta_file.finish()?;
    // The files' names must be durable before the mark points at them.
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| err("sync install directory", e))
}

/// Step 3: ingests the first `count` families' files, in order. RocksDB moves what it
/// ingests into the database, so each file is ingested through a hard link of its own,
/// and the file stays for a redo until the install is committed. Blocking.
fn ingest(shared: &Shared, dir: &Path, count: usize) -> StoreResult<()> {
    let mut opts = IngestExternalFileOptions::default();
    opts.set_move_files(true);
    for (family, name) in &FAMILIES[..count] {
        let file = dir.join(name);
        let link = dir.join(format!("{name}.ingesting"));
        match std::fs::remove_file(&link) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(err("remove install link", e)),
            _ => {}
        }
        std::fs::hard_link(&file, &link).map_err(|e| err("link install file", e))?;
        shared
            .db
            .ingest_external_file_cf_opts(shared.cf(family)?, &opts, vec![&link])
            .map_err(|e| err(&format!("ingest {family}"), e))?;
    }
    Ok(())
}

/// Replaces the object state with `parts` (see the module doc). Blocking.
///
/// An error before the mark leaves the old state; one after it (an ingestion failing)
/// leaves the database to be finished when it is next opened.
pub(crate) fn install(shared: &Shared, parts: DumpParts, until: InstallUntil) -> StoreResult<()> {
    let dir = install_dir(shared);
    remove_dir(&dir)?;
    std::fs::create_dir_all(&dir).map_err(|e| err("create install directory", e))?;
    if let Err(e) = write_files(&dir, parts) {
        let _ = remove_dir(&dir);
        return Err(e);
    }

    let mut mark = WriteBatch::default();
    mark.put_cf(shared.cf(CF_OBJECT_META)?, META_INSTALLING.as_bytes(), b"1");
    shared.write_synced(mark)?;

    let count = match until {
        InstallUntil::Done => FAMILIES.len(),
        InstallUntil::Ingested(n) => n.min(FAMILIES.len() - 1),
    };
    {
        let _swapping = shared.installing();
        ingest(shared, &dir, count)?;
    }
    if until == InstallUntil::Done {
        remove_dir(&dir)?;
    }
    Ok(())
}

/// Finishes an install a crash interrupted after its mark, or removes the files of one
/// interrupted before it. Called when the database is opened, before anything reads it.
pub(crate) fn resume(shared: &Shared) -> StoreResult<()> {
    let dir = install_dir(shared);
    let meta = shared.cf(CF_OBJECT_META)?;
    let marked =
        shared.db.get_pinned_cf(meta, META_INSTALLING.as_bytes()).map_err(|e| err("read install mark", e))?.is_some();
    if marked {
        ingest(shared, &dir, FAMILIES.len())?;
    }
    remove_dir(&dir)
}
