//! The Kubernetes schemas kuorum serves, and what the rest of the server asks of them:
//!
//! - [`Schemas`] / [`Schema`]: the built-in kinds' definitions (Kubernetes 1.37, see
//!   `k8s/README.md`) and a borrowed view of one node in them, resolving `$ref`s and
//!   carrying the field-level metadata patching needs (`x-kubernetes-patch-strategy`,
//!   `-patch-merge-key`, `-list-type`, `-list-map-keys`, `-map-type`).
//! - [`unknown`]: the one walk over a written object: the fields its schema does not know
//!   (fieldValidation), and the values its Go type cannot hold ([`decode`]).
//! - [`openapi`]: the `/openapi/v3` index and per-group-version documents.
//! - [`openapi_v2`]: the one `/openapi/v2` Swagger 2.0 document of the same paths and
//!   schemas, in JSON and in gnostic's protobuf (`proto/openapiv2.proto`).
//! - [`custom`]: what a custom resource's schema (a CRD's `openAPIV3Schema`) does to its
//!   objects: resource metadata, defaults, validation, published definitions.
//!
//! Schemas of custom resources are viewed the same way with [`Schema::standalone`].

pub mod custom;
pub mod decode;
mod defs;
pub mod openapi;
pub mod openapi_v2;
pub mod unknown;

pub use defs::{Schema, Schemas, Shape};
