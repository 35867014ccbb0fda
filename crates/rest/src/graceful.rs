//! Owns graceful deletion, kube's `rest.BeforeDelete` for the kinds whose strategy gives a
//! grace period ([`kuorum_api::kinds::Strategy::grace_period`]; pods): before a delete
//! removes such an object, it is read and
//!
//! - not yet marked: marked with `deletionTimestamp` = now + the grace period and
//!   `deletionGracePeriodSeconds` (a period of 0 removes it at once, unless finalizers
//!   hold it);
//! - marked with a grace period above 0: a shorter period asked for moves the mark
//!   earlier; any other request changes nothing and answers the object (kube's "graceful
//!   deletion is pending");
//! - marked with 0 (or none): removed by the delete, as kube recovers a mark whose
//!   delete failed.
//!
//! The mark is a [`Command::MarkDeleting`] on condition of the version read, redone while
//! the object moves on; the replicated apply keeps a marked object whose grace period is
//! above 0 until a delete removes it, which is what a kubelet's delete of grace 0 does
//! when the pod has stopped.

use bytes::Bytes;
use kuorum_api::kinds::{Finalizing, Strategy};
use kuorum_api::ApiError;
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::Value;

use crate::consistency::read_for_write;
use crate::error::{cluster_error, write_error};
use crate::object::{self, Object};
use crate::target::Target;
use crate::RestState;

/// How often a mark is redone when the object moves on between read and write.
const ATTEMPTS: usize = 5;

/// What a delete does after graceful deletion had its say.
#[derive(Debug)]
pub(crate) enum Next {
    /// Remove the object (or mark it for its finalizers), as for any kind.
    Remove,
    /// The object stays, marked: answer these stored bytes.
    Answer(Bytes),
}

/// kube's `BeforeDelete` for the object at `t` (or at `key`, in a collection): marks it
/// when its kind deletes gracefully, with the period the request asked for (`requested`),
/// unless `precondition` no longer holds (then the delete reports it).
pub(crate) async fn before_delete(
    st: &RestState,
    t: &Target,
    key: &str,
    precondition: &Precondition,
    requested: Option<i64>,
) -> Result<Next, ApiError> {
    let Some(kind) = t.strategy() else { return Ok(Next::Remove) };
    if kind.grace_period(&Object::new(), None).is_none() {
        return Ok(Next::Remove);
    }
    let finalizing = t.finalizing();
    let mut name = String::new();
    for attempt in 1..=ATTEMPTS {
        // Absent: the delete reports it.
        let Some(bytes) = read_for_write(st, key, attempt).await? else { return Ok(Next::Remove) };
        let obj = object::parse_stored(&bytes)?;
        name = object::meta_str(&obj, "name").unwrap_or("").to_string();
        if !holds(&obj, precondition) {
            return Ok(Next::Remove);
        }
        let (deletion_timestamp, grace) = match decide(kind, &obj, requested, st.clock.now_unix_seconds()) {
            Decision::Remove => return Ok(Next::Remove),
            Decision::Pending => return Ok(Next::Answer(bytes)),
            Decision::Mark { at, grace } => (kuorum_api::time::format(at), grace),
        };
        if grace == 0 && !held(&obj, &finalizing) {
            // kube marks, then removes: one delete does both.
            return Ok(Next::Remove);
        }
        let cmd = Command::MarkDeleting {
            key: key.to_string(),
            precondition: Precondition {
                resource_version: object::parse_rv(object::meta_str(&obj, "resourceVersion"))?,
                uid: object::meta_str(&obj, "uid").map(str::to_string),
            },
            deletion_timestamp,
            grace_period_seconds: grace,
            finalizing: finalizing.clone(),
        };
        match st.cluster.write(cmd, st.request_timeout).await.map_err(cluster_error)? {
            Ok(stored) => return Ok(Next::Answer(stored)),
            Err(WriteError::Conflict | WriteError::UidMismatch { .. }) => continue,
            Err(WriteError::NotFound) => return Ok(Next::Remove),
            Err(e) => return Err(write_error(e, t.def, &name)),
        }
    }
    Err(ApiError::conflict(t.def.group_resource(), &name))
}

/// What kube's `BeforeDelete` decides for `obj` at `now` (Unix seconds).
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    Remove,
    Pending,
    /// Mark with `deletionTimestamp` at `at` (Unix seconds) and this grace period.
    Mark {
        at: i64,
        grace: i64,
    },
}

fn decide(kind: &dyn Strategy, obj: &Object, requested: Option<i64>, now: i64) -> Decision {
    // kube treats a negative period as 1 second on the delete path.
    let requested = requested.map(|g| if g < 0 { 1 } else { g });
    let meta = object::meta(obj);
    let marked_at = meta.and_then(|m| m.get("deletionTimestamp")).and_then(Value::as_str);
    if let Some(marked_at) = marked_at {
        let existing = meta.and_then(|m| m.get("deletionGracePeriodSeconds")).and_then(Value::as_i64);
        let existing = match existing {
            None | Some(0) => return Decision::Remove,
            Some(e) => e.max(1),
        };
        return match requested {
            Some(p) if p < existing => {
                let at = kuorum_api::time::unix_seconds(marked_at).unwrap_or(now) - existing + p;
                Decision::Mark { at, grace: p }
            }
            _ => Decision::Pending,
        };
    }
    match kind.grace_period(obj, requested) {
        None => Decision::Remove,
        Some(grace) => Decision::Mark { at: now + grace, grace },
    }
}

/// The delete's preconditions hold for `obj`.
fn holds(obj: &Object, p: &Precondition) -> bool {
    let uid_ok = p.uid.as_deref().is_none_or(|u| object::meta_str(obj, "uid") == Some(u));
    let rv_ok = p.resource_version.is_none_or(|rv| object::meta_str(obj, "resourceVersion") == Some(&rv.to_string()));
    uid_ok && rv_ok
}

/// Finalizers hold `obj`'s deletion: `metadata.finalizers`, or a list the kind names.
fn held(obj: &Object, finalizing: &Finalizing) -> bool {
    let nonempty = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    let whole = Value::Object(obj.clone());
    nonempty(object::meta(obj).and_then(|m| m.get("finalizers")))
        || finalizing.held_by.iter().any(|p| nonempty(whole.pointer(p)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: Value) -> Object {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    fn pods() -> &'static dyn Strategy {
        kuorum_api::kinds::builtin("", "Pod").expect("pods are built in")
    }

    const NOW: i64 = 1_800_000_000;

    #[test]
    fn a_bound_pod_is_marked_and_an_unbound_one_goes() {
        let bound = pod(json!({"spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30}}));
        assert_eq!(decide(pods(), &bound, None, NOW), Decision::Mark { at: NOW + 30, grace: 30 });
        assert_eq!(decide(pods(), &bound, Some(3), NOW), Decision::Mark { at: NOW + 3, grace: 3 });
        assert_eq!(decide(pods(), &bound, Some(-5), NOW), Decision::Mark { at: NOW + 1, grace: 1 });
        assert_eq!(decide(pods(), &bound, Some(0), NOW), Decision::Mark { at: NOW, grace: 0 });
        let unbound = pod(json!({"spec": {"terminationGracePeriodSeconds": 30}}));
        assert_eq!(decide(pods(), &unbound, None, NOW), Decision::Mark { at: NOW, grace: 0 });
        let cm = kuorum_api::kinds::builtin("", "ConfigMap").expect("configmaps are built in");
        assert_eq!(decide(cm, &pod(json!({})), Some(30), NOW), Decision::Remove);
    }

    #[test]
    fn a_marked_pod_only_shortens_its_grace() {
        let at = kuorum_api::time::format(NOW + 30);
        let marked = pod(json!({"metadata": {"deletionTimestamp": at, "deletionGracePeriodSeconds": 30},
                                "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 30}}));
        assert_eq!(decide(pods(), &marked, None, NOW + 10), Decision::Pending);
        assert_eq!(decide(pods(), &marked, Some(30), NOW + 10), Decision::Pending);
        assert_eq!(decide(pods(), &marked, Some(60), NOW + 10), Decision::Pending);
        assert_eq!(decide(pods(), &marked, Some(10), NOW + 10), Decision::Mark { at: NOW + 10, grace: 10 });
        assert_eq!(decide(pods(), &marked, Some(0), NOW + 10), Decision::Mark { at: NOW, grace: 0 });
        let zero = pod(json!({"metadata": {"deletionTimestamp": at, "deletionGracePeriodSeconds": 0},
                              "spec": {"nodeName": "n1"}}));
        assert_eq!(decide(pods(), &zero, None, NOW), Decision::Remove);
    }

    #[test]
    fn finalizers_and_preconditions() {
        let f = pod(json!({"metadata": {"finalizers": ["x/y"], "uid": "u", "resourceVersion": "4"}}));
        assert!(held(&f, &Finalizing::default()));
        assert!(!held(&pod(json!({"metadata": {"finalizers": []}})), &Finalizing::default()));
        assert!(holds(&f, &Precondition { resource_version: Some(4), uid: Some("u".into()) }));
        assert!(!holds(&f, &Precondition { resource_version: Some(5), uid: None }));
        assert!(!holds(&f, &Precondition { resource_version: None, uid: Some("v".into()) }));
    }
}
