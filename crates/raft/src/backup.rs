//! Backups: a file holding a node's whole applied state (every object, the history window
//! and where the state stands in the log), and the restore of such a file into an empty
//! data directory as the first state of a new cluster, as `etcdctl snapshot save` and
//! `etcdutl snapshot restore` do for etcd.
//!
//! The file is `kuorum-snapshot\n`, a format version (u32 LE), the body's length (u64
//! LE), the body (the state machine's snapshot encoding) and a CRC-32 of the body (u32
//! LE). A file that is cut short or damaged is refused whole.
//!
//! A restored node starts at the backup's log index: its log is empty with everything up
//! to that index purged, so resourceVersions continue where the backup stopped, and its
//! membership is the new cluster's, not the old one's. The log id it starts from carries
//! term 0, below any term the new cluster will elect, so the new leaders' entries follow
//! it in term order.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kuorum_store::engine::{meta_value, LogEngine, ObjectDump, ObjectWrite};
use kuorum_store::ObjectEngine;
use openraft::storage::RaftLogStorage;
use openraft::{BasicNode, Membership};

use crate::cluster::{Cluster, ClusterError};
use crate::codec::{decode, encode};
use crate::log_store::LogStore;
use crate::snapshot::SnapshotBody;
use crate::state_machine::{StateMachine, META_APPLIED, META_DATA_FORMAT, META_MEMBERSHIP};
use crate::types::{LogId, StoredMembership};

const MAGIC: &[u8; 16] = b"kuorum-snapshot\n";
const VERSION: u32 = 1;

/// What a backup holds, for the operator.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BackupInfo {
    /// The log index the state stands at: the resourceVersion of its newest write.
    pub index: u64,
    pub objects: usize,
    pub bytes: usize,
}

/// A backup of `sm`'s state taken after a linearizable read barrier, so it holds every
/// write acknowledged before the call.
pub async fn save<E: ObjectEngine>(
    sm: &StateMachine<E>,
    cluster: &Cluster,
    deadline: Duration,
) -> Result<(Bytes, BackupInfo), ClusterError> {
    cluster.read_barrier(deadline).await?;
    let engine = sm.engine().clone();
    let dump = tokio::task::spawn_blocking(move || engine.dump())
        .await
        .map_err(|e| ClusterError::Fatal(e.to_string()))?
        .map_err(|e| ClusterError::Fatal(e.to_string()))?;
    let mut dump = dump;
    // What the new cluster will decide for itself (see `restore`): also kept out of the
    // file, since a release that does not know the key would carry it over.
    dump.meta.retain(|(k, _)| k != META_DATA_FORMAT);
    let objects = dump.objects.len();
    let body = SnapshotBody::from(dump);
    let index = applied_of(&body).map_err(|e| ClusterError::Fatal(e.to_string()))?.map(|l| l.index()).unwrap_or(0);
    let body = encode(&body);
    let mut file = Vec::with_capacity(body.len() + 32);
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&VERSION.to_le_bytes());
    file.extend_from_slice(&(body.len() as u64).to_le_bytes());
    file.extend_from_slice(&body);
    file.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    let info = BackupInfo { index, objects, bytes: file.len() };
    Ok((Bytes::from(file), info))
}

fn applied_of(body: &SnapshotBody) -> io::Result<Option<LogId>> {
    meta_value(&body.meta, META_APPLIED).map(|v| decode(&v)).transpose()
}

/// Checks a backup file and decodes its body.
fn read(file: &[u8]) -> io::Result<SnapshotBody> {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, format!("not a usable kuorum backup: {why}"));
    let rest = file.strip_prefix(&MAGIC[..]).ok_or_else(|| bad("no kuorum-snapshot header"))?;
    if rest.len() < 12 {
        return Err(bad("cut short"));
    }
    let version = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(bad(&format!("format version {version}; this kuorum reads {VERSION}")));
    }
    let len = u64::from_le_bytes(rest[4..12].try_into().expect("8 bytes")) as usize;
    let rest = &rest[12..];
    if rest.len() != len.saturating_add(4) {
        return Err(bad(&format!("{} bytes of body and checksum where {} were written", rest.len(), len + 4)));
    }
    let (body, crc) = rest.split_at(len);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(bad("checksum mismatch"));
    }
    decode(body)
}

/// Writes the state in backup `file` into an empty node's engines, as the first state of
/// a new cluster of `members` (id → peer address).
pub async fn restore<L: LogEngine, E: ObjectEngine>(
    file: &[u8],
    log: Arc<L>,
    objects: Arc<E>,
    members: &BTreeMap<u64, String>,
) -> io::Result<BackupInfo> {
    if log.last_entry()?.is_some() || objects.get_meta(META_APPLIED)?.is_some() {
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, "restore needs an empty data directory"));
    }
    let body = read(file)?;
    let index = applied_of(&body)?.map(|l| l.index()).unwrap_or(0);
    let start = LogId::new(openraft::impls::leader_id_adv::LeaderId { term: 0, node_id: 0 }, index);
    let voters: BTreeSet<u64> = members.keys().copied().collect();
    let nodes: BTreeMap<u64, BasicNode> = members.iter().map(|(id, a)| (*id, BasicNode { addr: a.clone() })).collect();
    let config =
        Membership::new(vec![voters], nodes).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
    let membership = StoredMembership::new(Some(start), config);

    let SnapshotBody { objects: items, history, meta } = body;
    // Which nodes served is the old cluster's (kuorum_raft's lost_data), not the new one's.
    let old_cluster = |k: &str| k.starts_with(kuorum_store::keys::MEMBERS_PREFIX);
    let items: Vec<(String, Bytes)> = items.into_iter().filter(|(k, _)| !old_cluster(k)).collect();
    let history: Vec<(String, u64, Option<Bytes>)> = history.into_iter().filter(|(k, _, _)| !old_cluster(k)).collect();
    let count = items.len();
    // The new cluster's data format is its own: 1 until its leader finds that every
    // member reads a newer one (its members may be of an older release than the backup's).
    let mut meta: Vec<(String, Bytes)> =
        meta.into_iter().filter(|(k, _)| k != META_APPLIED && k != META_MEMBERSHIP && k != META_DATA_FORMAT).collect();
    meta.push((META_APPLIED.to_string(), Bytes::from(encode(&start))));
    meta.push((META_MEMBERSHIP.to_string(), Bytes::from(encode(&membership))));
    let history = history.into_iter().map(|(key, rv, value)| ObjectWrite { key, rv, value }).collect();
    objects.restore(ObjectDump { objects: items, history, meta }).await?;
    objects.sync().await?;
    // The log starts after the backup: everything up to its index counts as purged.
    LogStore::new(log).purge(start).await?;
    Ok(BackupInfo { index, objects: count, bytes: file.len() })
}

#[cfg(test)]
mod tests {
    use kuorum_store::memory::{MemoryLogEngine, MemoryObjectEngine};
    use kuorum_store::Command;

    use super::*;
    use crate::network::TcpDialer;
    use crate::node::{start_raft, RaftNodeConfig, RaftTiming, StartedRaft};

    async fn node(log: Arc<MemoryLogEngine>, objects: Arc<MemoryObjectEngine>) -> StartedRaft<MemoryObjectEngine> {
        let members = BTreeMap::from([(1, "127.0.0.1:1".to_string())]);
        let cfg = RaftNodeConfig::new(1, members, RaftTiming::default(), 0);
        let started = start_raft(cfg, log, objects, Arc::new(TcpDialer), None).await.unwrap();
        started.raft.wait(Some(Duration::from_secs(10))).current_leader(1, "leads").await.unwrap();
        started
    }

    fn create(key: &str, value: &str) -> Command {
        Command::Create { key: key.into(), namespace: None, object: Bytes::from(format!("{{\"v\":\"{value}\"}}")) }
    }

    #[tokio::test]
    async fn a_backup_restores_into_a_new_cluster_that_carries_on() {
        let old = node(Arc::new(MemoryLogEngine::new()), Arc::new(MemoryObjectEngine::new())).await;
        for i in 0..20 {
            old.cluster
                .write(create(&format!("/registry/k/{i:02}"), "x"), Duration::from_secs(5))
                .await
                .unwrap()
                .unwrap();
        }
        let (file, info) = save(&old.state_machine, &old.cluster, Duration::from_secs(5)).await.unwrap();
        assert_eq!(info.objects, 20);
        let index = old.cluster.applied_index();
        assert_eq!(info.index, index);
        let seven = old.cluster.get("/registry/k/07").unwrap().unwrap();
        old.raft.shutdown().await.unwrap();

        // Damaged or cut short: refused.
        let mut bad = file.to_vec();
        let mid = bad.len() / 2;
        bad[mid] ^= 1;
        let (log, objects) = (Arc::new(MemoryLogEngine::new()), Arc::new(MemoryObjectEngine::new()));
        let members = BTreeMap::from([(1, "127.0.0.1:1".to_string())]);
        assert!(restore(&bad, log.clone(), objects.clone(), &members).await.is_err());
        assert!(restore(&file[..file.len() - 1], log.clone(), objects.clone(), &members).await.is_err());

        let restored = restore(&file, log.clone(), objects.clone(), &members).await.unwrap();
        assert_eq!((restored.index, restored.objects), (index, 20));
        assert!(restore(&file, log.clone(), objects.clone(), &members).await.is_err(), "only into an empty node");

        let new = node(log, objects).await;
        assert_eq!(new.cluster.get("/registry/k/07").unwrap().unwrap(), seven, "as it was, resourceVersion and all");
        assert_eq!(new.cluster.scan("/registry/k/", None, usize::MAX).unwrap().len(), 20);
        // Writes go on above the backup's index: resourceVersions never go back.
        new.cluster.write(create("/registry/k/new", "y"), Duration::from_secs(5)).await.unwrap().unwrap();
        assert!(new.cluster.applied_index() > index);
        new.raft.shutdown().await.unwrap();
    }
}
