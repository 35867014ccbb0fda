//! apiregistration.k8s.io

use crate::kinds::Strategy;

pub mod apiservice;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&apiservice::APIService];
