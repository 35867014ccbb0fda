//! apps

use crate::kinds::Strategy;

pub mod controllerrevision;
pub mod daemonset;
pub mod deployment;
pub mod replicaset;
pub mod statefulset;
/// What the workloads of this group share (the PodDisruptionBudget's int-or-percent too).
pub(crate) mod workload;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[
    &controllerrevision::ControllerRevision,
    &daemonset::DaemonSet,
    &deployment::Deployment,
    &replicaset::ReplicaSet,
    &statefulset::StatefulSet,
];
