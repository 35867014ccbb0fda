//! The core group (`/api/v1`).

pub mod configmap;
pub mod event;
pub mod namespace;
pub mod node;
pub mod pod;
pub mod secret;
pub mod service;
pub mod serviceaccount;
