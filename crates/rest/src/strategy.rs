//! Owns the last step of every write, just before an object is stored (or answered, for a
//! dry run), after defaults and field tracking: admission ([`crate::admission`]: the
//! default plugins, which may change the object or refuse it), the kind's own validation
//! ([`kuorum_api::kinds::Strategy::validate`], 422 Invalid), and what needs more than the
//! object:
//!
//! - a CustomResourceDefinition gets the status kuorum's instant naming and establishing
//!   give it (names accepted, `Established`, the storage version in `storedVersions`; a
//!   write to `/status` keeps the status it is given), and its schemas' `pattern`s must
//!   compile;
//! - a custom resource is validated against its version's schema (422 Invalid), and is
//!   not created while its CRD is being deleted (405, as kube-apiserver answers);
//! - a Role, ClusterRole or binding is written only by a user who holds what it grants
//!   ([`crate::authz::check_escalation`]);
//! - admission webhooks ([`crate::webhook`]): the mutating ones after kuorum's mutating
//!   plugins, the validating ones last;
//!
//! and [`stored`] gives the bytes to store (a custom resource at its CRD's storage
//! version), refusing an object larger than [`MAX_OBJECT_BYTES`] or nested deeper than
//! kuorum reads back: the one check of every object before it is proposed.

use kuorum_api::registry::RBAC_GROUP;
use kuorum_api::{crd, ApiError, GroupResource, Reason};
use serde_json::Value;

use crate::auth::UserInfo;
use crate::object::{self, Object};
use crate::target::Target;
use crate::RestState;

/// Whether `t` is the CustomResourceDefinition resource itself.
pub(crate) fn is_crd(t: &Target) -> bool {
    t.custom.is_none() && t.def.group == crd::GROUP && t.def.plural == crd::PLURAL
}

/// The last step of every write of `obj` (over `old`, none for a create) through `t`.
/// Answers the warnings admission gave.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn before_write(
    st: &RestState,
    user: Option<&UserInfo>,
    t: &Target,
    old: Option<&Object>,
    obj: &mut Object,
    now: &str,
    dry_run: bool,
) -> Result<Vec<String>, ApiError> {
    let review = crate::webhook::Review {
        st,
        user,
        target: t,
        requested: None,
        operation: if old.is_some() { "UPDATE" } else { "CREATE" },
        old,
        dry_run,
    };
    if let Some(c) = &t.custom {
        if old.is_none() && c.terminating() {
            let gr = GroupResource { group: t.def.group, resource: t.def.plural };
            let mut e = ApiError::method_not_supported(gr, "create");
            e.message = "create not allowed while custom resource definition is terminating".into();
            return Err(e);
        }
        let mut warnings = mutate_by_policies_and_webhooks(&review, obj).await?;
        warnings.extend(crate::custom::validate(t.def, c, obj, old)?);
        warnings.extend(crate::admission_policy::validate(&review, obj).await?);
        warnings.extend(crate::webhook::validate(&review, obj).await?);
        return Ok(warnings);
    }
    if is_crd(t) && t.subresource.as_deref() != Some("status") {
        crd::set_status(obj, old.and_then(|o| o.get("status")), now);
    }
    let Some(kind) = t.strategy() else { return Ok(Vec::new()) };
    let attributes = crate::admission::Attributes { st, user, target: t, old };
    crate::admission::mutate(&attributes, obj)?;
    let mut warnings = mutate_by_policies_and_webhooks(&review, obj).await?;
    if let (Some(a), Some(old)) = (kind.allocating(), old) {
        a.carry(old, obj);
    }
    let mut errs = kind.validate(obj, old);
    errs.extend(crate::expressions::errors(t, obj));
    if is_crd(t) {
        let versions = obj.get("spec").and_then(|s| s.get("versions")).and_then(Value::as_array);
        // kube-apiserver moves a schema every version shares to `spec.validation`, and
        // names rules there.
        let schemas: Vec<Option<&Value>> =
            versions.into_iter().flatten().map(|v| v.pointer("/schema/openAPIV3Schema")).collect();
        let shared = schemas.windows(2).all(|w| w[0] == w[1]);
        for (i, schema) in schemas.iter().enumerate() {
            if let Some(schema) = schema {
                let path = format!("spec.versions[{i}].schema.openAPIV3Schema");
                errs.extend(kuorum_schema::custom::invalid_patterns(schema, &path));
                if !shared {
                    errs.extend(crate::custom_rules::Rules::compile(schema, &path).1);
                } else if i == 0 {
                    errs.extend(crate::custom_rules::Rules::compile(schema, "spec.validation.openAPIV3Schema").1);
                }
            }
        }
    }
    if !errs.is_empty() {
        let name = object::meta_str(obj, "name").unwrap_or("");
        return Err(ApiError::invalid(t.def.group_kind(), name, &errs));
    }
    warnings.extend(crate::admission::validate(&attributes, obj)?);
    if t.def.group == RBAC_GROUP {
        crate::authz::check_escalation(st, user, t, &Value::Object(obj.clone()))?;
    }
    warnings.extend(crate::admission_policy::validate(&review, obj).await?);
    warnings.extend(crate::webhook::validate(&review, obj).await?);
    Ok(warnings)
}

/// The mutating admission policies, then the mutating webhooks; a policy whose
/// `reinvocationPolicy` is IfNeeded runs once more when a webhook changed the object after
/// it (kube's reinvocation). Answers the webhooks' warnings.
async fn mutate_by_policies_and_webhooks(
    review: &crate::webhook::Review<'_>,
    obj: &mut Object,
) -> Result<Vec<String>, ApiError> {
    let reinvocable = crate::admission_policy::mutate(review, obj, false).await?;
    let after_policies = reinvocable.then(|| obj.clone());
    let warnings = crate::webhook::mutate(review, obj).await?;
    if after_policies.is_some_and(|left| &left != obj) {
        crate::admission_policy::mutate(review, obj, true).await?;
    }
    Ok(warnings)
}

/// The most bytes one stored object may take: the body limit, so that whatever a patch,
/// apply, defaults or field tracking add, no write stores more than a client could send.
/// (kube-apiserver's bound is etcd's request limit, 1.5 MiB by default, with the body
/// limit at twice that to allow for JSON being larger than the protobuf it stores.)
pub(crate) const MAX_OBJECT_BYTES: usize = crate::negotiate::MAX_BODY_BYTES;

/// The bytes of `obj` as stored: at the storage version of a custom resource's CRD, or
/// converted to the kind a built-in version is stored as ([`Target::storage_def`]).
/// Every write makes its bytes here, so this is where an object is refused before it is
/// proposed: 413 when it is larger than [`MAX_OBJECT_BYTES`], 422 when it nests deeper
/// than kuorum reads back ([`kuorum_patch::limits::MAX_DEPTH`]; field tracking can add
/// levels a body did not have).
pub(crate) fn stored(t: &Target, obj: &Object) -> Result<Vec<u8>, ApiError> {
    // Checked before serializing, which recurses once per level.
    if obj.values().any(|v| kuorum_patch::limits::exceeds_depth(v, kuorum_patch::limits::MAX_DEPTH - 1)) {
        let name = object::meta_str(obj, "name").unwrap_or("");
        return Err(ApiError::new(
            Reason::Invalid,
            format!(
                "{} {name:?} is invalid: the object nests objects and arrays more than {} levels deep",
                t.def.kind,
                kuorum_patch::limits::MAX_DEPTH
            ),
        ));
    }
    let storage = t.storage_def();
    let bytes = if std::ptr::eq(storage, t.def) {
        object::to_vec(obj)
    } else {
        let mut obj = obj.clone();
        if let Some(s) = t.strategy() {
            s.to_stored(&mut obj);
        }
        object::set_type_meta(&mut obj, storage);
        object::to_vec(&obj)
    };
    if bytes.len() > MAX_OBJECT_BYTES {
        return Err(ApiError::new(
            Reason::RequestEntityTooLarge,
            format!("Request entity too large: the object is {} bytes, limit is {MAX_OBJECT_BYTES}", bytes.len()),
        ));
    }
    Ok(bytes)
}
