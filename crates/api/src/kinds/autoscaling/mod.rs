//! autoscaling

use crate::kinds::Strategy;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[];
