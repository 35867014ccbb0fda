//! Kubernetes API types and machinery that kuorum serves, free of any transport or
//! storage:
//!
//! - [`registry`]: the built-in resources (group, version, kind, names, scope, verbs), and
//!   the interning that gives a custom resource's definition the same `'static` shape.
//! - [`kinds`]: what is special about each built-in kind, one file per kind, behind one
//!   [`kinds::Strategy`] (kube-apiserver's per-kind strategies and printers).
//! - [`crd`]: CustomResourceDefinitions: what a stored one says, its defaults, status and
//!   validation.
//! - [`rbac`]: role-based access control: request attributes, rules, subjects, and the
//!   validation of roles and bindings.
//! - [`bootstrap_policy`]: the ClusterRoles and bindings every cluster starts with.
//! - [`bootstrap_flowcontrol`]: the priority levels and flow schemas every cluster starts with.
//! - [`discovery`]: the discovery documents and `/version`, built from the registry.
//! - [`status`]: [`ApiError`], every failure as the `metav1.Status` kube-apiserver sends.
//! - [`validation`]: name rules with kube-apiserver's exact error text.
//! - [`selector`]: label and field selectors.
//! - [`seams`]: the seams through which a node gets time and randomness.
//! - [`time`]: timestamps as text: `metav1.Time` written, `Time`/`MicroTime` read as Go reads them.

pub mod bootstrap_flowcontrol;
pub mod bootstrap_policy;
pub mod crd;
pub mod discovery;
pub mod kinds;
pub mod quantity;
pub mod rbac;
pub mod registry;
pub mod seams;
pub mod selector;
pub mod status;
pub mod time;
pub mod validation;

pub use registry::{GroupKind, GroupResource, ResourceDef, Scope};
pub use status::{ApiError, Reason};
