//! autoscaling: HorizontalPodAutoscalers, stored at v2 and served at v1 too.

use crate::kinds::Strategy;

pub mod horizontalpodautoscaler;
pub mod horizontalpodautoscaler_v1;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] =
    &[&horizontalpodautoscaler_v1::HPA_V1, &horizontalpodautoscaler::HorizontalPodAutoscaler];
