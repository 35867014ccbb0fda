//! Whole kuorum nodes inside a turmoil simulation. This module owns the simulator's
//! side of every seam DESIGN.md names: turmoil listeners and a turmoil dialer for the
//! network, tokio time for timers (turmoil drives it), a seeded clock and entropy, and
//! the in-memory engines (kept outside each host, so a crash keeps what was fsynced).
//! [`client`] speaks the Kubernetes REST API over turmoil TCP.

pub mod client;
pub mod cluster;
pub mod net;

pub use cluster::{SimCluster, SimNodeDisks};
