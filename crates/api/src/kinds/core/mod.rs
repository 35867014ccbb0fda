//! The core group (`/api/v1`).

use crate::kinds::Strategy;

pub mod binding;
pub mod componentstatus;
pub mod configmap;
pub mod endpoints;
pub mod event;
pub mod limitrange;
pub mod namespace;
pub mod node;
pub mod persistentvolume;
pub mod persistentvolumeclaim;
pub mod pod;
pub mod podtemplate;
mod quantity;
pub mod replicationcontroller;
pub mod resourcequota;
pub mod secret;
pub mod service;
pub mod serviceaccount;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[
    &binding::Binding,
    &componentstatus::ComponentStatus,
    &configmap::ConfigMap,
    &endpoints::Endpoints,
    &event::Event,
    &limitrange::LimitRange,
    &namespace::Namespace,
    &node::Node,
    &persistentvolumeclaim::PersistentVolumeClaim,
    &persistentvolume::PersistentVolume,
    &pod::Pod,
    &podtemplate::PodTemplate,
    &replicationcontroller::ReplicationController,
    &resourcequota::ResourceQuota,
    &secret::Secret,
    &serviceaccount::ServiceAccount,
    &service::Service,
];
