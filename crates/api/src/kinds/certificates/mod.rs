//! certificates.k8s.io

use crate::kinds::Strategy;

pub mod certificatesigningrequest;
pub mod clustertrustbundle;
pub mod podcertificaterequest;
mod signer;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[
    &certificatesigningrequest::CertificateSigningRequest,
    &clustertrustbundle::ClusterTrustBundle,
    &podcertificaterequest::PodCertificateRequest,
];
