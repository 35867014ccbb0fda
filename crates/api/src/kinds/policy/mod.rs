//! policy

use crate::kinds::Strategy;

pub mod poddisruptionbudget;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&poddisruptionbudget::PodDisruptionBudget];
