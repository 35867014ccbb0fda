//! storage.k8s.io

use crate::kinds::Strategy;

mod checks;
pub mod csidriver;
pub mod csinode;
pub mod csistoragecapacity;
pub mod storageclass;
pub mod volumeattachment;
pub mod volumeattributesclass;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[
    &csidriver::CSIDriver,
    &csinode::CSINode,
    &csistoragecapacity::CSIStorageCapacity,
    &storageclass::StorageClass,
    &volumeattachment::VolumeAttachment,
    &volumeattributesclass::VolumeAttributesClass,
];

#[cfg(test)]
mod tests {
    #[test]
    fn example_objects() {
        crate::kinds::networking::fixtures::check("storage", 6);
    }
}
