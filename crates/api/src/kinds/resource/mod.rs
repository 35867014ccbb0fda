//! resource.k8s.io

use crate::kinds::Strategy;

pub mod deviceclass;
mod devices;
pub mod devicetaintrule;
pub mod resourceclaim;
pub mod resourceclaimtemplate;
pub mod resourceslice;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[
    &deviceclass::DeviceClass,
    &devicetaintrule::DeviceTaintRule,
    &resourceclaim::ResourceClaim,
    &resourceclaimtemplate::ResourceClaimTemplate,
    &resourceslice::ResourceSlice,
];
