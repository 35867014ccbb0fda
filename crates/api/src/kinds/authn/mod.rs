//! The reviews of authentication.k8s.io and authorization.k8s.io that kuorum answers
//! (`kubectl auth whoami`, `kubectl auth can-i`): created, answered, never stored, so
//! nothing about them is special here beyond their registry entries.

use crate::kinds::Strategy;
use crate::registry::{review, ResourceDef, AUTHENTICATION_GROUP, AUTHORIZATION_GROUP};

/// An access review.
pub struct Review(&'static ResourceDef);

pub static SELF_SUBJECT_REVIEW_DEF: ResourceDef =
    review(AUTHENTICATION_GROUP, "SelfSubjectReview", "selfsubjectreviews", "selfsubjectreview");
pub static SELF_SUBJECT_ACCESS_REVIEW_DEF: ResourceDef =
    review(AUTHORIZATION_GROUP, "SelfSubjectAccessReview", "selfsubjectaccessreviews", "selfsubjectaccessreview");
pub static SELF_SUBJECT_RULES_REVIEW_DEF: ResourceDef =
    review(AUTHORIZATION_GROUP, "SelfSubjectRulesReview", "selfsubjectrulesreviews", "selfsubjectrulesreview");

pub static SELF_SUBJECT_REVIEW: Review = Review(&SELF_SUBJECT_REVIEW_DEF);
pub static SELF_SUBJECT_ACCESS_REVIEW: Review = Review(&SELF_SUBJECT_ACCESS_REVIEW_DEF);
pub static SELF_SUBJECT_RULES_REVIEW: Review = Review(&SELF_SUBJECT_RULES_REVIEW_DEF);

impl Strategy for Review {
    fn def(&self) -> &'static ResourceDef {
        self.0
    }
}

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[&SELF_SUBJECT_REVIEW, &SELF_SUBJECT_ACCESS_REVIEW, &SELF_SUBJECT_RULES_REVIEW];
