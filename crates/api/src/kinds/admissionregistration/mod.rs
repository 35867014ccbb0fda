//! admissionregistration.k8s.io

use crate::kinds::Strategy;

mod admission;
pub mod mutatingadmissionpolicy;
pub mod mutatingadmissionpolicybinding;
pub mod mutatingwebhookconfiguration;
pub mod validatingadmissionpolicy;
pub mod validatingadmissionpolicybinding;
pub mod validatingwebhookconfiguration;

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[
    &mutatingadmissionpolicy::MutatingAdmissionPolicy,
    &mutatingadmissionpolicybinding::MutatingAdmissionPolicyBinding,
    &mutatingwebhookconfiguration::MutatingWebhookConfiguration,
    &validatingadmissionpolicy::ValidatingAdmissionPolicy,
    &validatingadmissionpolicybinding::ValidatingAdmissionPolicyBinding,
    &validatingwebhookconfiguration::ValidatingWebhookConfiguration,
];
