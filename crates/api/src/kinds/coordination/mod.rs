//! coordination.k8s.io

use crate::kinds::Strategy;

pub mod lease;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&lease::Lease];
