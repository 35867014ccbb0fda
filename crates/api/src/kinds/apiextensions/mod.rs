//! apiextensions.k8s.io

pub mod crd;
