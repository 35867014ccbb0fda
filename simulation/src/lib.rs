//! Whole kuorum nodes inside a turmoil simulation, and the checks that prove a run
//! correct. Layers, bottom up:
//!
//! - [`net`], [`cluster`]: the simulator's side of every seam DESIGN.md names (turmoil
//!   listeners and dialer, a seeded clock and entropy, in-memory disks that outlive
//!   their hosts, a slow-disk knob, an apply tap per node).
//! - [`client`]: the Kubernetes REST API over turmoil TCP.
//! - [`options`]: everything a run is, derived from one seed.
//! - [`history`], [`traffic`]: controller-like clients and what they saw.
//! - [`replay`]: what the nodes applied, merged: the ground truth.
//! - [`faults`]: the fault schedule and the coverage counters.
//! - [`membership`]: an operator removing, replacing and adding members meanwhile.
//! - [`check`]: one file per property (K1-K4, W1-W12, R1-R2).
//! - [`run`]: one seed from start to verdict; the `kuorum-sim` binary runs many.

pub mod check;
pub mod client;
pub mod cluster;
pub mod entropy;
pub mod faults;
pub mod history;
pub mod membership;
pub mod net;
pub mod options;
pub mod replay;
pub mod run;
pub mod traffic;

pub use cluster::{SimCluster, SimNodeDisks};
pub use run::{run_seed, RunReport};
