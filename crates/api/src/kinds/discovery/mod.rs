//! discovery.k8s.io

use crate::kinds::Strategy;

pub mod endpointslice;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&endpointslice::EndpointSlice];
