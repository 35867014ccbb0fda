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
/// one that is torn, fails its CRC, or does not carry the next index. Whether what
/// stopped it is a crash's torn tail or damage is [`damaged_at`]'s to say.
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

/// Entries to look ahead for past a bad record: an intact record this far on can only be
/// one this log wrote.
const LOOKAHEAD_ENTRIES: u64 = 1 << 20;

/// A sector of zeros: what a crash leaves where the page cache had not yet written back.
const SECTOR: usize = 512;

/// Whether the bad bytes from `from` on (where a scan of entries stopped, expecting entry
/// `expected`) are damage rather than a tail a crash tore: an intact record of a later
/// entry follows them, and no aligned sector of zeros lies between (the mark of pages a
/// power loss never wrote, which may leave later pages written). A crash tears only what
/// was never synced, so it leaves nothing intact after the tear; a flipped bit leaves
/// the records after it whole. Answers the offset of that later record.
///
/// Reads the rest of the file (a segment, a few tens of MiB): only on the rare path of a
/// scan that stopped early.
pub(crate) fn damaged_at(mut file: &File, from: u64, expected: u64) -> std::io::Result<Option<u64>> {
    file.seek(SeekFrom::Start(from))?;
    let mut rest = Vec::new();
    file.read_to_end(&mut rest)?;
    let Some(at) = (1..rest.len()).find(|&at| intact_record(&rest[at..], expected)) else {
        return Ok(None);
    };
    let aligned = (SECTOR - (from as usize % SECTOR)) % SECTOR;
    let zeros =
        rest[..at].get(aligned..).is_some_and(|gap| gap.chunks_exact(SECTOR).any(|s| s.iter().all(|b| *b == 0)));
    Ok((!zeros).then_some(from + at as u64))
}

/// Whether `bytes` start with a whole record of an entry after `expected` (and not
/// absurdly far after it) whose checksum holds.
fn intact_record(bytes: &[u8], expected: u64) -> bool {
    if bytes.len() < HEADER_LEN {
        return false;
    }
    let len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    let sum = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    let index = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    index > expected
        && index - expected <= LOOKAHEAD_ENTRIES
        && len <= MAX_PAYLOAD
        && bytes.len() >= HEADER_LEN + len
        && crc(index, &bytes[HEADER_LEN..HEADER_LEN + len]) == sum
}

/// The payload of entry `index` from a record read whole (header and payload), if the
/// record is entry `index`'s and its checksum holds.
pub(crate) fn verified_payload(index: u64, record: &[u8]) -> Option<&[u8]> {
    let header = record.get(..HEADER_LEN)?;
    let len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
    let sum = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    let at = u64::from_le_bytes(header[8..16].try_into().expect("8 bytes"));
    let payload = record.get(HEADER_LEN..)?;
    (at == index && payload.len() == len && crc(index, payload) == sum).then_some(payload)
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

    #[test]
    fn damage_is_told_from_a_torn_tail_by_the_intact_records_after_it() {
        let mut buf = Vec::new();
        for i in 1..=4u64 {
            encode(i, format!("entry {i:0>1500}").as_bytes(), &mut buf);
        }
        let one = (HEADER_LEN + 1506) as u64;
        // A flipped byte in entry 2: entries 3 and 4 are whole after it.
        let mut flipped = buf.clone();
        flipped[one as usize + HEADER_LEN + 10] ^= 0x40;
        let f = file_with(&flipped);
        let s = scan(&f, 1).unwrap();
        assert_eq!(s.valid_len, one);
        assert_eq!(damaged_at(&f, s.valid_len, 2).unwrap(), Some(2 * one));
        // A flipped length: the scan cannot step over the record, the search still finds 3.
        let mut flipped = buf.clone();
        flipped[one as usize + 1] ^= 0x01;
        let f = file_with(&flipped);
        assert_eq!(damaged_at(&f, scan(&f, 1).unwrap().valid_len, 2).unwrap(), Some(2 * one));
        // A tail cut by a crash: nothing whole follows.
        let mut torn = buf.clone();
        torn.truncate(2 * one as usize + 100);
        let f = file_with(&torn);
        assert_eq!(damaged_at(&f, scan(&f, 1).unwrap().valid_len, 3).unwrap(), None);
        // Pages a power loss never wrote (zeros) before pages it did: torn, not damage.
        let mut unwritten = buf.clone();
        unwritten[one as usize..2 * one as usize].fill(0);
        let f = file_with(&unwritten);
        assert_eq!(damaged_at(&f, scan(&f, 1).unwrap().valid_len, 2).unwrap(), None);
    }

    #[test]
    fn a_record_read_back_is_checked_against_its_index_and_checksum() {
        let mut buf = Vec::new();
        encode(7, b"hello", &mut buf);
        assert_eq!(verified_payload(7, &buf), Some(&b"hello"[..]));
        assert_eq!(verified_payload(8, &buf), None, "another entry's record");
        let mut flipped = buf.clone();
        flipped[HEADER_LEN + 1] ^= 1;
        assert_eq!(verified_payload(7, &flipped), None);
        assert_eq!(verified_payload(7, &buf[..buf.len() - 1]), None);
    }
}
