//! The core group (`/api/v1`).

use crate::kinds::Strategy;

pub mod configmap;
pub mod event;
pub mod namespace;
pub mod node;
pub mod pod;
pub mod secret;
pub mod service;
pub mod serviceaccount;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[
    &configmap::ConfigMap,
    &event::Event,
    &namespace::Namespace,
    &node::Node,
    &pod::Pod,
    &secret::Secret,
    &serviceaccount::ServiceAccount,
    &service::Service,
];
