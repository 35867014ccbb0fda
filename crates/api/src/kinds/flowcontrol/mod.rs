//! flowcontrol.apiserver.k8s.io

use crate::kinds::Strategy;

pub mod flowschema;
pub mod prioritylevelconfiguration;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] =
    &[&flowschema::FlowSchema, &prioritylevelconfiguration::PriorityLevelConfiguration];
