//! Snapshots as they move between nodes: what openraft holds for one ([`SnapshotData`]),
//! how it goes on the wire (a stream of parts, [`send_chunks`] and [`receive`]), and where
//! a received one waits until it is installed ([`Spool`]).
//!
//! Neither side holds a snapshot encoded whole. The sender reads its frozen state a part
//! of about [`PART_BYTES`] at a time, on a blocking thread, and at most a few parts wait
//! for the peer's flow control. The receiver writes each part to a file beside its
//! database (in memory for an engine that has no files, the simulator's) and installing
//! reads them back one by one into the engine's restore.
//!
//! On the wire: the first chunk carries the vote and the snapshot's meta and says which
//! format follows; then one encoded [`WirePart`] per chunk, ending with
//! [`WirePart::End`], which counts the parts before it. A stream that stops without its
//! end (a sender that failed half way) is refused, never installed as if it were whole.
//! Format 0 is what nodes before this one send, one encoded [`SnapshotBody`] cut into
//! slices; it is still accepted.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use kuorum_store::engine::{DumpPart, DumpParts, ObjectDump, ObjectWrite};
use kuorum_store::{FrozenObjects, StoreError, StoreResult};

use crate::codec::{decode, encode};
use crate::pb;
use crate::types::{SnapshotMeta, Vote};

/// About how many bytes of objects one part (one gRPC message) carries.
pub const PART_BYTES: usize = 1 << 20;

/// The format of a stream, in its first chunk: one encoded [`SnapshotBody`] in slices
/// (nodes before session 15), or parts.
const FORMAT_OLD: u32 = 0;
const FORMAT_PARTS: u32 = 1;

/// A snapshot's data. Cloning shares it.
#[derive(Clone)]
pub enum SnapshotData {
    /// Built here (or installed here): the object store as it stood at the snapshot's
    /// log id, read only when a peer needs it.
    Frozen(Arc<dyn FrozenObjects>),
    /// Received from a leader, until it is installed.
    Received(Arc<Spooled>),
}

impl SnapshotData {
    pub fn frozen(state: impl FrozenObjects) -> Self {
        SnapshotData::Frozen(Arc::new(state))
    }

    /// Whether reading it waits on I/O (see [`FrozenObjects::reads_block`]).
    fn reads_block(&self) -> bool {
        match self {
            SnapshotData::Frozen(f) => f.reads_block(),
            SnapshotData::Received(s) => matches!(s.place, SpoolPlace::File(_)),
        }
    }

    /// The parts, in order, for the engine's restore. Blocking as they are consumed.
    pub fn parts(&self) -> io::Result<DumpParts> {
        match self {
            SnapshotData::Frozen(f) => {
                // Only a received snapshot is installed; this is for completeness.
                let mut parts = Vec::new();
                f.dump_parts(PART_BYTES, &mut |p| {
                    parts.push(p);
                    Ok(())
                })?;
                Ok(Box::new(parts.into_iter().map(Ok)))
            }
            SnapshotData::Received(s) => Spooled::parts(s),
        }
    }
}

impl std::fmt::Debug for SnapshotData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotData::Frozen(_) => f.write_str("SnapshotData::Frozen"),
            SnapshotData::Received(s) => write!(f, "SnapshotData::Received({} parts)", s.parts),
        }
    }
}

/// One part on the wire: a [`DumpPart`] in a form bincode encodes, or the end.
#[derive(serde::Serialize, serde::Deserialize)]
enum WirePart {
    Meta(Vec<(String, Bytes)>),
    Objects(Vec<(String, u64, Bytes)>),
    History(Vec<(String, u64, Option<Bytes>)>),
    /// The stream is whole: `parts` parts came before this.
    End {
        parts: u64,
    },
}

impl From<DumpPart> for WirePart {
    fn from(p: DumpPart) -> Self {
        match p {
            DumpPart::Meta(m) => WirePart::Meta(m),
            DumpPart::Objects(o) => WirePart::Objects(o),
            DumpPart::History(h) => WirePart::History(h.into_iter().map(|w| (w.key, w.rv, w.value)).collect()),
        }
    }
}

fn dump_part(wire: WirePart) -> Option<DumpPart> {
    match wire {
        WirePart::Meta(m) => Some(DumpPart::Meta(m)),
        WirePart::Objects(o) => Some(DumpPart::Objects(o)),
        WirePart::History(h) => {
            Some(DumpPart::History(h.into_iter().map(|(key, rv, value)| ObjectWrite { key, rv, value }).collect()))
        }
        WirePart::End { .. } => None,
    }
}

/// A whole state in one piece: what a backup file holds, and what format 0 streams
/// carried.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct SnapshotBody {
    pub objects: Vec<(String, Bytes)>,
    pub history: Vec<(String, u64, Option<Bytes>)>,
    pub meta: Vec<(String, Bytes)>,
}

impl From<ObjectDump> for SnapshotBody {
    fn from(d: ObjectDump) -> Self {
        SnapshotBody {
            objects: d.objects,
            history: d.history.into_iter().map(|w| (w.key, w.rv, w.value)).collect(),
            meta: d.meta,
        }
    }
}

impl From<SnapshotBody> for ObjectDump {
    fn from(b: SnapshotBody) -> Self {
        ObjectDump {
            objects: b.objects,
            history: b.history.into_iter().map(|(key, rv, value)| ObjectWrite { key, rv, value }).collect(),
            meta: b.meta,
        }
    }
}

fn chunk(part: &WirePart) -> pb::SnapshotChunk {
    pb::SnapshotChunk { meta: Bytes::new(), data: Bytes::from(encode(part)), format: 0 }
}

/// The chunks that send `snapshot` to a peer, and the task reading it, whose error (a
/// checkpoint that cannot be read) explains a stream that ended early. The stream ends
/// without [`WirePart::End`] if reading fails, so the peer refuses it.
pub fn send_chunks(
    vote: &Vote,
    meta: &SnapshotMeta,
    snapshot: &SnapshotData,
) -> (impl Stream<Item = pb::SnapshotChunk> + Send + 'static, tokio::task::JoinHandle<StoreResult<()>>) {
    let head = pb::SnapshotChunk { meta: Bytes::from(encode(&(vote, meta))), data: Bytes::new(), format: FORMAT_PARTS };
    let snapshot = snapshot.clone();
    let reads_block = snapshot.reads_block();
    let read = move |send: &mut dyn FnMut(pb::SnapshotChunk) -> StoreResult<()>| -> StoreResult<()> {
        let mut parts = 0;
        let mut each = |part: DumpPart| {
            parts += 1;
            send(chunk(&WirePart::from(part)))
        };
        match &snapshot {
            SnapshotData::Frozen(f) => f.dump_parts(PART_BYTES, &mut each)?,
            SnapshotData::Received(s) => {
                for part in Spooled::parts(s).map_err(StoreError::new)? {
                    each(part?)?;
                }
            }
        }
        send(chunk(&WirePart::End { parts }))
    };
    let (rx, task) = match reads_block {
        // In memory (the simulator's engine): read it all now, in order, on this thread.
        false => {
            let mut chunks = Vec::new();
            let result = read(&mut |c| {
                chunks.push(c);
                Ok(())
            });
            let (tx, rx) = tokio::sync::mpsc::channel(chunks.len().max(1));
            for c in chunks {
                let _ = tx.try_send(c);
            }
            (rx, tokio::spawn(async move { result }))
        }
        true => {
            // Two parts in flight: enough to keep the stream busy, little held in memory.
            let (tx, rx) = tokio::sync::mpsc::channel(2);
            let task = tokio::task::spawn_blocking(move || {
                // A stream closed under the reader is the RPC's failure, not a read's.
                let mut closed = false;
                let read = read(&mut |c| {
                    tx.blocking_send(c).map_err(|_| {
                        closed = true;
                        StoreError::new("the snapshot stream was closed")
                    })
                });
                if closed {
                    Ok(())
                } else {
                    read
                }
            });
            (rx, task)
        }
    };
    let stream = futures::stream::once(async move { head }).chain(tokio_stream::wrappers::ReceiverStream::new(rx));
    (stream, task)
}

/// What a peer's stream carried, once it is whole.
pub struct Received {
    pub vote: Vote,
    pub meta: SnapshotMeta,
    pub data: SnapshotData,
}

/// Reads a snapshot stream into a spool in `spool_dir` (in memory if `None`). Refuses a
/// stream without its head, one that ends before [`WirePart::End`] or whose count does
/// not match, and one whose first part is not the metadata.
pub async fn receive<S, E>(mut stream: S, spool_dir: Option<&Path>) -> Result<Received, String>
where
    S: Stream<Item = Result<pb::SnapshotChunk, E>> + Unpin,
    E: std::fmt::Display,
{
    let head = stream.next().await.ok_or("empty snapshot stream")?.map_err(|e| e.to_string())?;
    let (vote, meta): (Vote, SnapshotMeta) = decode(&head.meta).map_err(|e| format!("snapshot head: {e}"))?;
    if head.format != FORMAT_OLD && head.format != FORMAT_PARTS {
        return Err(format!("snapshot stream of an unknown format {}", head.format));
    }
    // Dropped on any early return, which removes what was spooled.
    let mut spool = match spool_dir {
        None => Spool::new(None),
        Some(dir) => {
            let dir = dir.to_path_buf();
            tokio::task::spawn_blocking(move || Spool::new(Some(&dir))).await.map_err(|e| e.to_string())?
        }
    }
    .map_err(|e| format!("snapshot spool: {e}"))?;
    if head.format == FORMAT_OLD {
        // One body in slices, gathered whole (as the node sending it did).
        let mut body = BytesMut::from(&head.data[..]);
        while let Some(c) = stream.next().await {
            body.extend_from_slice(&c.map_err(|e| e.to_string())?.data);
        }
        let body = body.freeze();
        spool = spool
            .run(move |spool| {
                let body: SnapshotBody = decode(&body).map_err(|e| format!("snapshot body: {e}"))?;
                for part in ObjectDump::from(body).into_parts(PART_BYTES) {
                    spool.push(&encode(&WirePart::from(part))).map_err(|e| format!("snapshot spool: {e}"))?;
                }
                Ok(())
            })
            .await?;
        let spooled = spool.finish_async().await?;
        return Ok(Received { vote, meta, data: SnapshotData::Received(Arc::new(spooled)) });
    }
    loop {
        let c = stream.next().await.ok_or("the snapshot stream ended before its end")?.map_err(|e| e.to_string())?;
        let part: WirePart = decode(&c.data).map_err(|e| format!("snapshot part: {e}"))?;
        match part {
            WirePart::End { parts } if parts == spool.parts && parts > 0 => break,
            WirePart::End { parts } => return Err(format!("snapshot of {parts} parts arrived with {}", spool.parts)),
            WirePart::Meta(_) if spool.parts == 0 => {}
            _ if spool.parts == 0 => return Err("a snapshot's first part must be its metadata".into()),
            _ => {}
        }
        let data = c.data;
        spool = spool.run(move |spool| spool.push(&data).map_err(|e| format!("snapshot spool: {e}"))).await?;
    }
    let spooled = spool.finish_async().await?;
    Ok(Received { vote, meta, data: SnapshotData::Received(Arc::new(spooled)) })
}

/// Names spool files apart within one process.
static SPOOLS: AtomicU64 = AtomicU64::new(0);

/// Encoded parts being received, in a file (each a u32 LE length, then the bytes) or in
/// memory.
pub struct Spool {
    file: Option<(PathBuf, BufWriter<File>)>,
    memory: Vec<Bytes>,
    /// How many parts were pushed.
    parts: u64,
}

impl Spool {
    pub fn new(dir: Option<&Path>) -> io::Result<Spool> {
        let file = match dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)?;
                let path = dir.join(format!("{}-{}.parts", std::process::id(), SPOOLS.fetch_add(1, Ordering::Relaxed)));
                let file = File::create(&path)?;
                Some((path, BufWriter::with_capacity(1 << 20, file)))
            }
            None => None,
        };
        Ok(Spool { file, memory: Vec::new(), parts: 0 })
    }

    /// Appends one encoded part. A crash loses the file (the engine clears its spool
    /// directory when it opens), so nothing here is synced.
    pub fn push(&mut self, part: &[u8]) -> io::Result<()> {
        match &mut self.file {
            Some((_, w)) => {
                let len = u32::try_from(part.len()).map_err(|_| io::Error::other("snapshot part over 4 GiB"))?;
                w.write_all(&len.to_le_bytes())?;
                w.write_all(part)?;
            }
            None => self.memory.push(Bytes::copy_from_slice(part)),
        }
        self.parts += 1;
        Ok(())
    }

    /// Runs `f` on the spool without stalling the async runtime: on a blocking thread if
    /// the spool is a file, inline if it is in memory (the simulator's engines).
    async fn run(mut self, f: impl FnOnce(&mut Spool) -> Result<(), String> + Send + 'static) -> Result<Spool, String> {
        if self.file.is_none() {
            return f(&mut self).map(|()| self);
        }
        tokio::task::spawn_blocking(move || f(&mut self).map(|()| self)).await.map_err(|e| e.to_string())?
    }

    /// [`Spool::finish`], on a blocking thread if the spool is a file.
    async fn finish_async(self) -> Result<Spooled, String> {
        if self.file.is_none() {
            return self.finish();
        }
        tokio::task::spawn_blocking(move || self.finish()).await.map_err(|e| e.to_string())?
    }

    pub fn finish(mut self) -> Result<Spooled, String> {
        let parts = self.parts;
        let place = match self.file.take() {
            Some((path, w)) => {
                // From here the file is removed with the spooled parts, even if the
                // flush fails.
                let spooled = Spooled { place: SpoolPlace::File(path), parts };
                w.into_inner().map_err(|e| format!("snapshot spool: {}", e.error()))?;
                return Ok(spooled);
            }
            None => SpoolPlace::Memory(std::mem::take(&mut self.memory)),
        };
        Ok(Spooled { place, parts })
    }
}

impl Drop for Spool {
    /// A spool not finished (a stream refused or broken half way) removes its file: the
    /// leader sends the snapshot again, into a new one.
    fn drop(&mut self) {
        if let Some((path, _)) = &self.file {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A received snapshot's parts, whole. A file is removed when this is dropped.
pub struct Spooled {
    place: SpoolPlace,
    parts: u64,
}

enum SpoolPlace {
    File(PathBuf),
    Memory(Vec<Bytes>),
}

impl Spooled {
    /// The parts, decoded as they are read.
    fn parts(this: &Arc<Spooled>) -> io::Result<DumpParts> {
        let records: Box<dyn Iterator<Item = io::Result<Bytes>> + Send> = match &this.place {
            SpoolPlace::Memory(parts) => Box::new(parts.clone().into_iter().map(Ok)),
            SpoolPlace::File(path) => {
                let mut r = BufReader::with_capacity(1 << 20, File::open(path)?);
                let mut left = this.parts;
                // Holds the spool (and so its file) while the parts are read.
                let keep = Arc::clone(this);
                Box::new(std::iter::from_fn(move || {
                    let _ = &keep;
                    (left > 0).then(|| {
                        left -= 1;
                        let mut len = [0u8; 4];
                        r.read_exact(&mut len)?;
                        let mut part = vec![0u8; u32::from_le_bytes(len) as usize];
                        r.read_exact(&mut part)?;
                        Ok(Bytes::from(part))
                    })
                }))
            }
        };
        Ok(Box::new(records.filter_map(|record| {
            let part = record.map_err(StoreError::new).and_then(|b| decode::<WirePart>(&b).map_err(StoreError::new));
            part.map(dump_part).transpose()
        })))
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> Option<&Path> {
        match &self.place {
            SpoolPlace::File(p) => Some(p),
            SpoolPlace::Memory(_) => None,
        }
    }
}

impl Drop for Spooled {
    fn drop(&mut self) {
        if let SpoolPlace::File(path) = &self.place {
            // Failing leaves disk held until the engine next opens, which clears it.
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use kuorum_store::engine::ObjectWrite;

    use super::*;
    use crate::types::StoredMembership;

    fn dump(n: usize) -> ObjectDump {
        let objects: Vec<(String, Bytes)> =
            (0..n).map(|i| (format!("/k/{i:04}"), Bytes::from(vec![b'x'; 300 * 1024]))).collect();
        let history = objects
            .iter()
            .enumerate()
            .map(|(i, (k, v))| ObjectWrite { key: k.clone(), rv: i as u64 + 1, value: Some(v.clone()) })
            .collect();
        ObjectDump { objects, history, meta: vec![("m".into(), Bytes::from_static(b"v"))] }
    }

    fn meta() -> SnapshotMeta {
        SnapshotMeta { last_log_id: None, last_membership: StoredMembership::default() }
    }

    async fn chunks_of(data: &SnapshotData) -> Vec<pb::SnapshotChunk> {
        let (chunks, reading) = send_chunks(&Vote::new(2, 1), &meta(), data);
        let chunks = chunks.collect().await;
        reading.await.unwrap().unwrap();
        chunks
    }

    async fn receive_all(chunks: Vec<pb::SnapshotChunk>, dir: Option<&Path>) -> Result<Received, String> {
        receive(futures::stream::iter(chunks.into_iter().map(Ok::<_, String>)), dir).await
    }

    fn received_dump(r: &Received) -> ObjectDump {
        ObjectDump::from_parts(r.data.parts().unwrap()).unwrap()
    }

    #[tokio::test]
    async fn a_snapshot_goes_in_parts_of_about_a_mebibyte_and_comes_back_whole() {
        let whole = dump(10);
        let chunks = chunks_of(&SnapshotData::frozen(whole.clone())).await;
        // Head, meta, three object parts of 4, 4 and 2 objects, end (every version is
        // current, so no history part).
        assert_eq!(chunks.len(), 6, "{} chunks", chunks.len());
        assert!(chunks.iter().all(|c| c.data.len() < PART_BYTES + 400 * 1024), "no chunk holds much more than a part");
        let received = receive_all(chunks, None).await.unwrap();
        assert_eq!(received.vote, Vote::new(2, 1));
        assert_eq!(received_dump(&received), whole);
    }

    /// Each stream is refused, and what it had spooled is removed.
    #[tokio::test]
    async fn a_stream_cut_short_miscounted_or_odd_is_refused_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let spooled = || std::fs::read_dir(dir.path()).unwrap().count();
        let chunks = chunks_of(&SnapshotData::frozen(dump(10))).await;
        let cut = chunks[..chunks.len() - 1].to_vec();
        let err = receive_all(cut, Some(dir.path())).await.err().expect("no end: refused");
        assert!(err.contains("ended before its end"), "{err}");
        assert_eq!(spooled(), 0, "the partial spool file is removed");

        let mut dropped = chunks.clone();
        dropped.remove(3);
        let err = receive_all(dropped, Some(dir.path())).await.err().expect("a part missing: refused");
        assert!(err.contains("arrived with"), "{err}");

        let mut no_meta = chunks.clone();
        no_meta.remove(1);
        assert!(receive_all(no_meta, Some(dir.path())).await.is_err(), "the metadata must come first");

        let empty = vec![chunks[0].clone(), chunk(&WirePart::End { parts: 0 })];
        assert!(receive_all(empty, Some(dir.path())).await.is_err(), "a snapshot of no parts");

        let mut unknown = chunks.clone();
        unknown[0].format = 7;
        let err = receive_all(unknown, Some(dir.path())).await.err().expect("an unknown format: refused");
        assert!(err.contains("unknown format"), "{err}");

        let failing = futures::stream::iter(chunks.into_iter().take(3).map(Ok::<_, String>))
            .chain(futures::stream::iter([Err("connection reset".to_string())]));
        let err = receive(failing, Some(dir.path())).await.err().expect("a broken stream: refused");
        assert!(err.contains("connection reset"), "{err}");
        assert_eq!(spooled(), 0, "no refused stream left a file");
    }

    /// A frozen state whose reading fails half way.
    struct Unreadable(ObjectDump);

    impl FrozenObjects for Unreadable {
        fn get_meta(&self, _: &str) -> StoreResult<Option<Bytes>> {
            Ok(None)
        }
        fn dump(&self) -> StoreResult<ObjectDump> {
            Ok(self.0.clone())
        }
        fn dump_parts(&self, part_bytes: usize, each: &mut dyn FnMut(DumpPart) -> StoreResult<()>) -> StoreResult<()> {
            let parts = self.0.clone().into_parts(part_bytes);
            each(parts[0].clone())?;
            each(parts[1].clone())?;
            Err(StoreError::new("checkpoint table file missing"))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_that_fails_ends_the_stream_without_its_end_and_says_why() {
        let (chunks, reading) = send_chunks(&Vote::new(2, 1), &meta(), &SnapshotData::frozen(Unreadable(dump(10))));
        let chunks: Vec<_> = chunks.collect().await;
        assert_eq!(chunks.len(), 3, "the head and the two parts read");
        let err = reading.await.unwrap().expect_err("the read's error");
        assert!(err.to_string().contains("table file missing"));
        assert!(receive_all(chunks, None).await.is_err(), "the peer refuses what came");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_closed_stream_stops_the_reader_and_is_not_a_read_error() {
        let (chunks, reading) = send_chunks(&Vote::new(2, 1), &meta(), &SnapshotData::frozen(dump(40)));
        let mut chunks = Box::pin(chunks);
        assert!(chunks.next().await.is_some());
        drop(chunks);
        reading.await.unwrap().expect("the peer went away: for the RPC to report");
    }

    #[tokio::test]
    async fn a_spool_file_holds_the_parts_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let whole = dump(10);
        let received = receive_all(chunks_of(&SnapshotData::frozen(whole.clone())).await, Some(dir.path())).await;
        let received = received.unwrap();
        let SnapshotData::Received(spooled) = &received.data else { panic!("received") };
        let file = spooled.path().unwrap().to_path_buf();
        assert!(std::fs::metadata(&file).unwrap().len() > 10 * 300 * 1024, "the objects are on disk");
        assert_eq!(received_dump(&received), whole, "read back from the file");
        assert_eq!(received_dump(&received), whole, "as often as asked");
        drop(received);
        assert!(!file.exists(), "removed with the snapshot");
    }

    #[tokio::test]
    async fn a_stream_in_the_old_format_is_still_accepted() {
        let whole = dump(5);
        let body = Bytes::from(encode(&SnapshotBody::from(whole.clone())));
        let head =
            pb::SnapshotChunk { meta: Bytes::from(encode(&(Vote::new(2, 1), meta()))), data: Bytes::new(), format: 0 };
        let mut chunks = vec![head];
        chunks.extend(body.chunks(PART_BYTES).map(|s| pb::SnapshotChunk {
            meta: Bytes::new(),
            data: Bytes::copy_from_slice(s),
            format: 0,
        }));
        let received = receive_all(chunks, None).await.unwrap();
        assert_eq!(received_dump(&received), whole);
    }
}
