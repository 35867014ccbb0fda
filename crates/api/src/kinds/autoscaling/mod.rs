//! autoscaling

use crate::kinds::Strategy;

pub mod horizontalpodautoscaler;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&horizontalpodautoscaler::HorizontalPodAutoscaler];
