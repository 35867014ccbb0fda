//! One log entry on disk, and reading a segment file back.
//!
//! A record is a 16-byte header and the entry's bytes:
//!
//! ```text
//! | payload length u32 LE | CRC-32 u32 LE | index u64 LE | payload ... |
//! ```
//!
//! The CRC covers the index and the payload, so a record that was only partly written
//! (a crash in the middle of an append) or that holds stale bytes never reads back as
//! an entry. Worked example: entry 7 holding `b"hi"` is the 18 bytes
//! `02 00 00 00 | crc(07 00 .. 00 68 69) | 07 00 00 00 00 00 00 00 | 68 69`.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};

/// Bytes before a record's payload.
pub(crate) const HEADER_LEN: usize = 16;

/// No entry is larger: a length past it is garbage, not a record (and is not allocated).
pub(crate) const MAX_PAYLOAD: usize = 256 << 20;

fn crc(index: u64, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&index.to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// Appends the record of entry `index` to `out`.
pub(crate) fn encode(index: u64, payload: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc(index, payload).to_le_bytes());
    out.extend_from_slice(&index.to_le_bytes());
    out.extend_from_slice(payload);
}

/// Where one record's payload lies in its segment file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub index: u64,
    /// Offset of the payload (not the header) in the file.
    pub offset: u64,
    pub len: u32,
}

/// What reading a segment from its start found.
pub(crate) struct Scan {
    pub records: Vec<Found>,
    /// Where the last whole record ends: everything past it is a torn or stale tail.
    pub valid_len: u64,
}

/// Reads the records of a segment whose first entry is `first`, stopping at the first
/// one that is torn, fails its CRC, or does not carry the next index.
pub(crate) fn scan(mut file: &File, first: u64) -> std::io::Result<Scan> {
    file.seek(SeekFrom::Start(0))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut records = Vec::new();
    let mut pos = 0u64;
    let mut expected = first;
    let mut header = [0u8; HEADER_LEN];
    let mut payload = Vec::new();
    loop {
        if !read_full(&mut reader, &mut header)? {
            break;
        }
        let len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
        let sum = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
        let index = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
        if len > MAX_PAYLOAD || index != expected {
            break;
        }
        payload.resize(len, 0);
        if !read_full(&mut reader, &mut payload)? || crc(index, &payload) != sum {
            break;
        }
        records.push(Found { index, offset: pos + HEADER_LEN as u64, len: len as u32 });
        pos += (HEADER_LEN + len) as u64;
        expected = match expected.checked_add(1) {
            Some(next) => next,
            None => break,
        };
    }
    Ok(Scan { records, valid_len: pos })
}

/// Fills `buf`, or returns false if the file ends first.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut done = 0;
    while done < buf.len() {
        match reader.read(&mut buf[done..]) {
            Ok(0) => return Ok(false),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    #[test]
    fn records_read_back_in_order() {
        let mut buf = Vec::new();
        encode(7, b"hi", &mut buf);
        encode(8, b"", &mut buf);
        encode(9, b"three", &mut buf);
        assert_eq!(buf.len(), 3 * HEADER_LEN + 7);
        let s = scan(&file_with(&buf), 7).unwrap();
        assert_eq!(
            s.records,
            vec![
                Found { index: 7, offset: 16, len: 2 },
                Found { index: 8, offset: 34, len: 0 },
                Found { index: 9, offset: 50, len: 5 }
            ]
        );
        assert_eq!(s.valid_len, buf.len() as u64);
    }

    #[test]
    fn a_torn_tail_is_cut_at_the_last_whole_record() {
        let mut buf = Vec::new();
        encode(1, b"whole", &mut buf);
        let whole = buf.len() as u64;
        encode(2, b"torn record", &mut buf);
        buf.truncate(buf.len() - 3);
        let s = scan(&file_with(&buf), 1).unwrap();
        assert_eq!(s.records.len(), 1);
        assert_eq!(s.valid_len, whole);
    }

    #[test]
    fn a_flipped_byte_or_a_wrong_index_ends_the_scan() {
        let mut buf = Vec::new();
        encode(1, b"one", &mut buf);
        let one = buf.len();
        encode(2, b"two", &mut buf);
        let mut flipped = buf.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(scan(&file_with(&flipped), 1).unwrap().valid_len, one as u64);
        // A well-formed record that does not follow (stale bytes of an older log).
        let mut gap = Vec::new();
        encode(1, b"one", &mut gap);
        encode(3, b"three", &mut gap);
        assert_eq!(scan(&file_with(&gap), 1).unwrap().records.len(), 1);
        // The segment's name says where it starts.
        assert!(scan(&file_with(&buf), 5).unwrap().records.is_empty());
    }
}
