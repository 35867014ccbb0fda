//! apps

use crate::kinds::Strategy;

pub mod deployment;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&deployment::Deployment];
