//! events.k8s.io: the newer API of the same Events core/v1 serves, stored as core Events.

use crate::kinds::Strategy;

pub mod event;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&event::EVENT];
