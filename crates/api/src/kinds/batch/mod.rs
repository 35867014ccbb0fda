//! batch

use crate::kinds::Strategy;

pub mod cronjob;
pub mod job;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&cronjob::CronJob, &job::Job];
