//! Owns the data directory's `FORMAT` file: the newest data format a release that opened
//! the directory reads (`kuorum_raft::format`). A release that reads only older formats
//! refuses the directory before it opens anything in it: entries of the newer format
//! may be in its log, and an older release would fail on them midway, or worse. A
//! directory without the file was last opened by a release before formats were
//! numbered (format 1), or is new.

use std::path::Path;

use anyhow::{bail, Context};

const FILE: &str = "FORMAT";

/// The format the file names (1 if there is none).
pub fn recorded_format(dir: &Path) -> anyhow::Result<u32> {
    let path = dir.join(FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(1),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let number = text.trim().strip_prefix("kuorum data format ").unwrap_or("");
    number.parse().with_context(|| format!("{} holds {text:?}, not \"kuorum data format N\"", path.display()))
}

/// Refuses `dir` if a release reading a newer format than `reads` opened it; otherwise
/// records `reads` (if newer than what the file says), durably, before the engines open.
pub fn claim(dir: &Path, reads: u32) -> anyhow::Result<()> {
    let recorded = recorded_format(dir)?;
    if recorded > reads {
        bail!(
            "{} was opened by a kuorum that reads data format {recorded}; this one reads up to format \
             {reads}. Downgrading a node is refused before anything is read or written: run a release \
             that reads format {recorded} (or newer), or replace the node (kuorum member remove, an \
             empty --data-dir, --join, kuorum member add)",
            dir.display()
        );
    }
    if recorded < reads || !dir.join(FILE).exists() {
        let tmp = dir.join("FORMAT.tmp");
        std::fs::write(&tmp, format!("kuorum data format {reads}\n"))
            .and_then(|_| std::fs::File::open(&tmp)?.sync_all())
            .and_then(|_| std::fs::rename(&tmp, dir.join(FILE)))
            .and_then(|_| std::fs::File::open(dir)?.sync_all())
            .with_context(|| format!("writing {}", dir.join(FILE).display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_claimed_and_an_older_reader_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(recorded_format(dir.path()).unwrap(), 1, "no file: format 1");
        claim(dir.path(), 1).unwrap();
        assert_eq!(recorded_format(dir.path()).unwrap(), 1);
        claim(dir.path(), 2).unwrap();
        assert_eq!(recorded_format(dir.path()).unwrap(), 2, "an upgrade records its format");
        let refused = claim(dir.path(), 1).unwrap_err().to_string();
        assert!(refused.contains("reads data format 2") && refused.contains("Downgrading"), "{refused}");
        assert_eq!(recorded_format(dir.path()).unwrap(), 2, "the refusal leaves the file alone");
        std::fs::write(dir.path().join(FILE), "garbage").unwrap();
        assert!(claim(dir.path(), 2).is_err(), "a damaged file is not taken for format 1");
    }
}
