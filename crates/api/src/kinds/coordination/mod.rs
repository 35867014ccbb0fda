//! coordination.k8s.io

pub mod lease;
