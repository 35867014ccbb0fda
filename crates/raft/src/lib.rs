//! Replication for kuorum: the openraft type config, the storage adaptors that put
//! openraft on top of kuorum-store's engines, tonic peer RPC (raft, write forwarding,
//! read index), and [`Cluster`], the handle the REST layer uses.

pub mod cluster;

pub use cluster::{Cluster, ClusterError, LocalReader};
