//! The openraft type configuration: what a log entry carries ([`Command`]) and what
//! applying it answers ([`WriteResult`]). Node ids are u64; a node's address is the
//! peer RPC address (`BasicNode.addr`).

use kuorum_store::{Command, WriteResult};

openraft::declare_raft_types!(
    /// kuorum's Raft types.
    pub TypeConfig:
        D = Command,
        R = WriteResult,
);

pub type NodeId = u64;
pub type Raft<SM> = openraft::Raft<TypeConfig, SM>;
pub type Entry = openraft::alias::EntryOf<TypeConfig>;
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
pub type Vote = openraft::alias::VoteOf<TypeConfig>;
pub type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
