//! apiextensions.k8s.io

use crate::kinds::Strategy;

pub mod crd;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&crd::CustomResourceDefinition];
