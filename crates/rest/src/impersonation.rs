//! Owns impersonation (`kubectl --as`, `--as-group`, `--as-uid`, client-go's
//! `Impersonate`): a request with `Impersonate-User` (and optionally `Impersonate-Group`,
//! `Impersonate-Uid`, `Impersonate-Extra-<key>`) is served as that user, once its sender
//! is authorized to `impersonate` each part, as kube-apiserver's impersonation filter:
//!
//! | header | authorized as `impersonate` on |
//! |---|---|
//! | `Impersonate-User: system:serviceaccount:ns:sa` | `serviceaccounts` `sa` in `ns` |
//! | `Impersonate-User: jane` | `users` `jane` |
//! | `Impersonate-Group: dev` (each) | `groups` `dev` |
//! | `Impersonate-Extra-<key>: v` (each value) | `userextras/<key>` `v` (authentication.k8s.io) |
//! | `Impersonate-Uid: 42` | `uids` `42` (authentication.k8s.io) |
//!
//! The first refusal is kube's 403 (`users "jane" is forbidden: User "alice" cannot
//! impersonate resource "users" in API group "" at the cluster scope`); groups, extras or
//! a uid without a user are 400. The impersonated user has the groups asked for (a
//! service account without them gets its own two), plus `system:authenticated` (or
//! `system:unauthenticated` for `system:anonymous`) unless given. Everything after
//! (authorization, admission, field managers, the watch cache's views) sees only the
//! impersonated user. Runs right after authentication, in the front layer.

use std::collections::BTreeMap;

use axum::extract::Request;
use kuorum_api::rbac::Attributes;
use kuorum_api::registry::AUTHENTICATION_GROUP;
use kuorum_api::{ApiError, GroupResource};

use crate::auth::{UserExtra, UserInfo};
use crate::authz::Authorization;
use crate::RestState;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
const AUTHENTICATED: &str = "system:authenticated";
const UNAUTHENTICATED: &str = "system:unauthenticated";
const ANONYMOUS: &str = "system:anonymous";

/// One thing the sender asks to act as.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Part {
    /// What the sender must be allowed to do for this part.
    fn attributes(&self) -> Attributes {
        let (api_group, resource, subresource, namespace, name) = match self {
            Part::ServiceAccount { namespace, name } => ("", "serviceaccounts", "", namespace.as_str(), name.as_str()),
            Part::User(name) => ("", "users", "", "", name.as_str()),
            Part::Group(name) => ("", "groups", "", "", name.as_str()),
            Part::Extra { key, value } => (AUTHENTICATION_GROUP, "userextras", key.as_str(), "", value.as_str()),
            Part::Uid(uid) => (AUTHENTICATION_GROUP, "uids", "", "", uid.as_str()),
        };
        Attributes {
            verb: "impersonate".into(),
            resource_request: true,
            api_group: api_group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            path: String::new(),
        }
    }
}

/// The parts the request's headers ask for, in kube's order (user, groups, extras, uid);
/// empty when it asks for none. 400 for groups, extras or a uid without a user.
fn requested(req: &Request) -> Result<Vec<Part>, ApiError> {
    let headers = req.headers();
    if !headers.keys().any(|h| h.as_str().starts_with("impersonate-")) {
        return Ok(Vec::new());
    }
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let mut parts = Vec::new();
    let user = headers.get(USER).map(text).filter(|u| !u.is_empty());
    if let Some(user) = &user {
        parts.push(match service_account(user) {
            Some((namespace, name)) => Part::ServiceAccount { namespace, name },
            None => Part::User(user.clone()),
        });
    }
    parts.extend(headers.get_all(GROUP).iter().map(|g| Part::Group(text(g))));
    let mut extras: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(name, v)| name.as_str().strip_prefix(EXTRA_PREFIX).map(|key| (unescape(key), text(v))))
        .collect();
    // Header maps keep no order across names: the order of the checks is made stable.
    extras.sort_by(|a, b| a.0.cmp(&b.0));
    parts.extend(extras.into_iter().map(|(key, value)| Part::Extra { key, value }));
    if let Some(uid) = headers.get(UID).map(text).filter(|u| !u.is_empty()) {
        parts.push(Part::Uid(uid));
    }
    if user.is_none() && !parts.is_empty() {
        let asked: Vec<String> = parts.iter().map(|p| format!("{p:?}")).collect();
        return Err(ApiError::bad_request(format!("requested [{}] without impersonating a user", asked.join(" "))));
    }
    Ok(parts)
}

/// `system:serviceaccount:<ns>:<name>` as its namespace and name.
fn service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix(SERVICE_ACCOUNT_PREFIX)?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then(|| (namespace.into(), name.into()))
}

/// An extra's key from its header name, percent-decoded (kube's `unescapeExtraKey`).
fn unescape(key: &str) -> String {
    crate::query::decode_component(key, false)
}

/// Serves `req` as the user its impersonation headers ask for, when its sender may act
/// as each part; leaves a request without them alone.
pub(crate) fn apply(st: &RestState, req: &mut Request) -> Result<(), ApiError> {
    let parts = requested(req)?;
    if parts.is_empty() {
        return Ok(());
    }
    let Some(sender) = req.extensions().get::<UserInfo>().cloned() else { return Ok(()) };
    if st.authorization == Authorization::Rbac {
        for part in &parts {
            let attrs = part.attributes();
            let (allowed, why) = crate::authz::decide(&st.cache, &sender, &attrs);
            if !allowed {
                let mut denial = attrs.denial(&sender.name);
                if !why.is_empty() {
                    denial = format!("{denial}: {why}");
                }
                let gr = GroupResource { group: &attrs.api_group, resource: &attrs.resource };
                return Err(ApiError::forbidden(gr, &attrs.name, &denial));
            }
        }
    }
    let groups_given = parts.iter().any(|p| matches!(p, Part::Group(_)));
    let mut user = UserInfo::new("", &[]);
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for part in parts {
        match part {
            Part::ServiceAccount { namespace, name } => {
                let account = UserInfo::service_account(&namespace, &name);
                user.name = account.name;
                if !groups_given {
                    user.groups = account.groups;
                }
            }
            Part::User(name) => user.name = name,
            Part::Group(g) => user.groups.push(g),
            Part::Extra { key, value } => extra.entry(key).or_default().push(value),
            Part::Uid(uid) => user.uid = uid,
        }
    }
    let has = |g: &str| user.groups.iter().any(|x| x == g);
    if user.name != ANONYMOUS {
        if !has(AUTHENTICATED) && !has(UNAUTHENTICATED) {
            user.groups.push(AUTHENTICATED.into());
        }
    } else if !has(UNAUTHENTICATED) {
        user.groups.push(UNAUTHENTICATED.into());
    }
    tracing::Span::current().record("user", tracing::field::display(&user.name));
    let ext = req.extensions_mut();
    ext.insert(user);
    let sender_extra = ext.remove::<UserExtra>();
    ext.insert(crate::audit::Impersonator(sender, sender_extra));
    if !extra.is_empty() {
        ext.insert(UserExtra(extra));
    }
    let headers = req.headers_mut();
    let names: Vec<http::HeaderName> =
        headers.keys().filter(|h| h.as_str().starts_with("impersonate-")).cloned().collect();
    for name in names {
        headers.remove(name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn request(headers: &[(&str, &str)]) -> Request {
        let mut b = http::Request::builder().uri("/api/v1/pods");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(Body::empty()).unwrap()
    }

    #[test]
    fn headers_name_the_parts_in_kubes_order() {
        assert!(requested(&request(&[])).unwrap().is_empty());
        let parts = requested(&request(&[
            ("Impersonate-Uid", "42"),
            ("Impersonate-Extra-Scopes%2Fx", "b"),
            ("Impersonate-Group", "dev"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-User", "system:serviceaccount:ns:robot"),
        ]))
        .unwrap();
        assert_eq!(
            parts,
            [
                Part::ServiceAccount { namespace: "ns".into(), name: "robot".into() },
                Part::Group("dev".into()),
                Part::Group("ops".into()),
                Part::Extra { key: "scopes/x".into(), value: "b".into() },
                Part::Uid("42".into()),
            ]
        );
        assert_eq!(requested(&request(&[("Impersonate-User", "jane")])).unwrap(), [Part::User("jane".into())]);
        let e = requested(&request(&[("Impersonate-Group", "dev")])).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(e.message.ends_with("without impersonating a user"), "{}", e.message);
    }

    #[test]
    fn what_each_part_is_authorized_as() {
        let a = Part::ServiceAccount { namespace: "ns".into(), name: "robot".into() }.attributes();
        assert_eq!((a.resource.as_str(), a.namespace.as_str(), a.name.as_str()), ("serviceaccounts", "ns", "robot"));
        let a = Part::Extra { key: "scopes".into(), value: "v".into() }.attributes();
        assert_eq!(a.full_resource(), "userextras/scopes");
        assert_eq!(a.api_group, "authentication.k8s.io");
        assert_eq!(
            Part::User("jane".into()).attributes().denial("alice"),
            r#"User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        assert_eq!(service_account("system:serviceaccount:a:b:c"), None);
        assert_eq!(service_account("system:serviceaccount:a"), None);
    }
}
