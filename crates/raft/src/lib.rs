//! Replication for kuorum: the openraft type config ([`types`]), the storage adaptors that
//! put openraft on top of kuorum-store's engines ([`log_store`], [`state_machine`]), tonic
//! peer RPC ([`network`] dials, [`service`] answers: raft, pipelined replication
//! ([`append_stream`]), write forwarding ([`forward`]), read index; what a leader answers
//! to both in [`reply`]),
//! [`Cluster`], the handle the REST layer uses, [`status`], what a node reports to
//! operators, [`consistency`], the check of its state against its peers', and [`format`],
//! the cluster's data format and its raise.

pub(crate) mod append_stream;
pub mod backup;
pub mod cluster;
pub(crate) mod codec;
pub mod consistency;
pub mod format;
pub(crate) mod forward;
pub mod log_store;
pub(crate) mod lost_data;
pub mod network;
pub mod node;
pub(crate) mod proposed;
pub(crate) mod read_rounds;
pub(crate) mod replicator;
pub mod reply;
pub(crate) mod requests;
pub mod service;
pub(crate) mod settle;
pub mod snapshot;
pub mod state_machine;
pub mod status;
#[cfg(test)]
pub(crate) mod test_peer;
pub mod testing;
pub mod types;

pub mod pb {
    tonic::include_proto!("kuorum.peer.v1");
}

pub use cluster::{Cluster, ClusterError, LocalReader};
pub use network::{Dialer, PeerIo, TcpDialer};
pub use node::{start_raft, RaftNodeConfig, RaftTiming, StartedRaft, DEFAULT_ELECTION_TIMEOUT, DEFAULT_HEARTBEAT};
pub use status::{RaftCounters, RaftStatus};
