//! The log's small metadata (the vote, the purge point) in one file, replaced whole.
//!
//! A write goes to `meta.tmp`, is fsynced, renamed over `meta`, and the directory is
//! fsynced: after a crash `meta` is either the old file or the new one, never a mix.
//! The file is a CRC-32, then the engine's first live index, then the key-value pairs:
//!
//! ```text
//! | crc u32 LE | first u64 LE | (key len u32 LE, key, value len u32 LE, value)* |
//! ```

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use bytes::Bytes;

const FILE: &str = "meta";
const TMP: &str = "meta.tmp";

/// What the metadata file holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Meta {
    /// Entries below this index are purged, whatever the segment files still hold.
    pub first: u64,
    pub values: BTreeMap<String, Bytes>,
}

fn encode(meta: &Meta) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&meta.first.to_le_bytes());
    for (k, v) in &meta.values {
        body.extend_from_slice(&(k.len() as u32).to_le_bytes());
        body.extend_from_slice(k.as_bytes());
        body.extend_from_slice(&(v.len() as u32).to_le_bytes());
        body.extend_from_slice(v);
    }
    let mut out = crc32fast::hash(&body).to_le_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

fn corrupt(why: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("log meta file: {why}"))
}

fn decode(raw: &[u8]) -> std::io::Result<Meta> {
    if raw.len() < 12 {
        return Err(corrupt("too short"));
    }
    let (sum, body) = raw.split_at(4);
    if crc32fast::hash(body).to_le_bytes() != sum {
        return Err(corrupt("checksum mismatch"));
    }
    let first = u64::from_le_bytes(body[..8].try_into().expect("8 bytes"));
    let mut rest = &body[8..];
    let mut take = |n: usize| -> std::io::Result<&[u8]> {
        if rest.len() < n {
            return Err(corrupt("truncated"));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let mut values = BTreeMap::new();
    while let Ok(len) = take(4) {
        let klen = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
        let key = String::from_utf8(take(klen)?.to_vec()).map_err(|_| corrupt("key is not UTF-8"))?;
        let vlen = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        values.insert(key, Bytes::copy_from_slice(take(vlen)?));
    }
    Ok(Meta { first, values })
}

/// Reads the metadata in `dir`; a directory without the file has the default (nothing
/// purged, no values). A file that does not check out is an error, not a reset: it
/// holds the vote.
pub(crate) fn load(dir: &Path) -> std::io::Result<Meta> {
    match fs::read(dir.join(FILE)) {
        Ok(raw) => decode(&raw),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Meta::default()),
        Err(e) => Err(e),
    }
}

/// Replaces the metadata in `dir` durably (see the module docs).
pub(crate) fn store(dir: &Path, meta: &Meta) -> std::io::Result<()> {
    let tmp = dir.join(TMP);
    let mut f = File::create(&tmp)?;
    f.write_all(&encode(meta))?;
    f.sync_all()?;
    fs::rename(&tmp, dir.join(FILE))?;
    sync_dir(dir)
}

/// Makes the directory's entries (created, renamed, removed files) durable.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trips_and_rejects_damage() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), Meta::default());
        let mut m = Meta { first: 42, values: BTreeMap::new() };
        m.values.insert("vote".into(), Bytes::from_static(b"v1"));
        m.values.insert("empty".into(), Bytes::new());
        store(dir.path(), &m).unwrap();
        assert_eq!(load(dir.path()).unwrap(), m);

        let mut raw = fs::read(dir.path().join(FILE)).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        fs::write(dir.path().join(FILE), &raw).unwrap();
        assert!(load(dir.path()).is_err(), "a damaged meta file is an error, never an empty vote");
    }
}
