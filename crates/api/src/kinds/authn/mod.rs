//! The reviews of authentication.k8s.io and authorization.k8s.io that kuorum answers
//! (`kubectl auth whoami`, `kubectl auth can-i`, and the TokenReview and
//! (Local)SubjectAccessReview a kubelet's or a webhook's authenticator and authorizer
//! send): created, answered, never stored, so nothing about them is special here beyond
//! their registry entries.

use crate::kinds::Strategy;
use crate::registry::{review, ResourceDef, Scope, AUTHENTICATION_GROUP, AUTHORIZATION_GROUP};

/// An access review.
pub struct Review(&'static ResourceDef);

pub static SELF_SUBJECT_REVIEW_DEF: ResourceDef =
    review(AUTHENTICATION_GROUP, "SelfSubjectReview", "selfsubjectreviews", "selfsubjectreview");
pub static SELF_SUBJECT_ACCESS_REVIEW_DEF: ResourceDef =
    review(AUTHORIZATION_GROUP, "SelfSubjectAccessReview", "selfsubjectaccessreviews", "selfsubjectaccessreview");
pub static SELF_SUBJECT_RULES_REVIEW_DEF: ResourceDef =
    review(AUTHORIZATION_GROUP, "SelfSubjectRulesReview", "selfsubjectrulesreviews", "selfsubjectrulesreview");

pub static TOKEN_REVIEW_DEF: ResourceDef = review(AUTHENTICATION_GROUP, "TokenReview", "tokenreviews", "tokenreview");
pub static LOCAL_SUBJECT_ACCESS_REVIEW_DEF: ResourceDef = ResourceDef {
    scope: Scope::Namespaced,
    ..review(AUTHORIZATION_GROUP, "LocalSubjectAccessReview", "localsubjectaccessreviews", "localsubjectaccessreview")
};
pub static SUBJECT_ACCESS_REVIEW_DEF: ResourceDef =
    review(AUTHORIZATION_GROUP, "SubjectAccessReview", "subjectaccessreviews", "subjectaccessreview");

pub static SELF_SUBJECT_REVIEW: Review = Review(&SELF_SUBJECT_REVIEW_DEF);
pub static TOKEN_REVIEW: Review = Review(&TOKEN_REVIEW_DEF);
pub static LOCAL_SUBJECT_ACCESS_REVIEW: Review = Review(&LOCAL_SUBJECT_ACCESS_REVIEW_DEF);
pub static SUBJECT_ACCESS_REVIEW: Review = Review(&SUBJECT_ACCESS_REVIEW_DEF);
pub static SELF_SUBJECT_ACCESS_REVIEW: Review = Review(&SELF_SUBJECT_ACCESS_REVIEW_DEF);
pub static SELF_SUBJECT_RULES_REVIEW: Review = Review(&SELF_SUBJECT_RULES_REVIEW_DEF);

impl Strategy for Review {
    fn def(&self) -> &'static ResourceDef {
        self.0
    }
}

/// The group's kinds, by version, then plural.
pub static KINDS: &[&dyn Strategy] = &[
    &SELF_SUBJECT_REVIEW,
    &TOKEN_REVIEW,
    &LOCAL_SUBJECT_ACCESS_REVIEW,
    &SELF_SUBJECT_ACCESS_REVIEW,
    &SELF_SUBJECT_RULES_REVIEW,
    &SUBJECT_ACCESS_REVIEW,
];
