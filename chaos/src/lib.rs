//! Deterministic chaos tests for Kubernetes controllers. A test starts a simulated
//! kuorum cluster (whole nodes: Raft, storage, watch cache, REST frontend) inside a
//! turmoil simulation, runs the controller under test on a simulated host with kube-rs
//! [`kube::Client`]s that reach the cluster over the simulated network, injects faults
//! from a schedule, and checks the user's invariants, both with clients after the run
//! and over every change the cluster applied. A failing run prints its seed; setting
//! `KUORUM_CHAOS_SEED` to it replays the same run, event for event.
//!
//! Layers, bottom up:
//! - [`client`]: kube-rs clients over turmoil TCP, to one node or load-balanced;
//! - [`fault`]: the faults, a fixed plan, and random plans drawn from the seed;
//! - [`history`]: every applied change, in order (the ground truth for checks);
//! - [`simulation`]: one run, from its seed to a [`Report`] or a [`Failure`];
//! - [`seeds`]: many runs, and the replay of one.
//!
//! The guide is `docs/chaos.md`; the examples (`examples/configmap_replicator.rs`,
//! `examples/leader_election.rs`) each carry a planted bug these runs catch.
//!
//! A test binary using this crate must export two symbols the simulator defines
//! (`getrandom`, `clock_gettime`), so every library's randomness and clocks on a
//! simulated host follow the seed. This crate's build.rs does it for its own tests and
//! examples; a crate of yours needs the same two lines in its build.rs.

pub mod client;
pub mod fault;
pub mod history;
pub mod seeds;
pub mod simulation;

pub use fault::{Fault, FaultKind, FaultMix, FaultPlan, Scheduled};
pub use history::{Change, History};
pub use kuorum_store::ChangeKind;
pub use seeds::{assert_caught, check_seeds, first_failure, run_seeds, seed_count, SEED_VAR};
pub use simulation::{Env, Failure, Outcome, Report, Simulation};
