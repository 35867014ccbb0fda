//! storagemigration.k8s.io

use crate::kinds::Strategy;

pub mod storageversionmigration;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&storageversionmigration::StorageVersionMigration];
