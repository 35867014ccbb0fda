//! Who may do what: the authorization layer, after authentication, and the access reviews
//! (`kubectl auth can-i`, `kubectl auth can-i --list`, `kubectl auth whoami`).
//!
//! With [`Authorization::Rbac`] a node's credentials are first asked of the Node
//! authorizer ([`crate::node_authz`]), then every request is checked against the Roles,
//! ClusterRoles and their bindings in this node's watch cache (as kube-apiserver checks
//! its informers' copies: a binding takes effect on a node once the node has applied it).
//! `system:masters` is allowed everything without a look, as in kube-apiserver. A
//! refusal is 403 Forbidden with kube-apiserver's message. The rules themselves are
//! [`kuorum_api::rbac`]'s.
//!
//! [`Authorization::AlwaysAllow`] (the simulator, the tests, `--insecure`) allows all.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use kuorum_api::rbac::{subject_matches, Attributes, PolicyRule};
use kuorum_api::registry::{AUTHENTICATION_GROUP, AUTHORIZATION_GROUP, RBAC_GROUP};
use kuorum_api::{ApiError, GroupResource};
use kuorum_store::keys::{collection_prefix, ObjectKey};
use kuorum_watch::{WatchCache, WatchFilter};
use serde_json::{json, Value};
use std::sync::Arc;

use crate::auth::UserInfo;
use crate::error::RestError;
use crate::negotiate::{self, json_response};
use crate::node_authz;
use crate::object::{self, BodyFormat};
use crate::request::RequestInfo;
use crate::target::Ctx;
use crate::RestState;

/// How requests are authorized (kube-apiserver's `--authorization-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Authorization {
    /// Every authenticated request is allowed.
    #[default]
    AlwaysAllow,
    /// Roles and bindings decide; `system:masters` may do anything.
    Rbac,
}

/// The middleware (installed only with [`Authorization::Rbac`]): lets the request
/// through or answers 403.
pub(crate) async fn authorize(State(st): State<Arc<RestState>>, req: Request, next: Next) -> Response {
    // No user: a path authentication leaves open (the health checks).
    let Some(user) = req.extensions().get::<UserInfo>() else {
        return next.run(req).await;
    };
    if user.is_master() {
        crate::audit::annotate("authorization.k8s.io/decision", "allow");
        crate::audit::annotate("authorization.k8s.io/reason", "");
        return next.run(req).await;
    }
    let attrs = match req.extensions().get::<RequestInfo>() {
        Some(info) => info.attributes(),
        // A router used without the front layer (no tests do): parse here.
        None => RequestInfo::parse(req.method().as_str(), req.uri().path(), req.uri().query()).attributes(),
    };
    let (ok, why) = decide(&st.cache, user, &attrs);
    crate::audit::annotate("authorization.k8s.io/decision", if ok { "allow" } else { "forbid" });
    crate::audit::annotate("authorization.k8s.io/reason", why.as_str());
    if ok {
        return next.run(req).await;
    }
    let gr = GroupResource { group: &attrs.api_group, resource: &attrs.resource };
    let mut denial = attrs.denial(&user.name);
    if !why.is_empty() {
        denial = format!("{denial}: {why}");
    }
    RestError(ApiError::forbidden(gr, &attrs.name, &denial)).into_response()
}

/// Whether the Node authorizer or RBAC lets `user` do what `attrs` asks.
pub(crate) fn allowed(cache: &WatchCache, user: &UserInfo, attrs: &Attributes) -> bool {
    decide(cache, user, attrs).0
}

/// kube's `Node,RBAC` chain: `system:masters`, then the Node authorizer, then RBAC; with
/// the Node authorizer's reason when neither allows.
pub(crate) fn decide(cache: &WatchCache, user: &UserInfo, attrs: &Attributes) -> (bool, String) {
    if user.is_master() {
        return (true, String::new());
    }
    let why = match node_authz::decide(cache, user, attrs) {
        node_authz::Decision::Allow => return (true, String::new()),
        node_authz::Decision::NoOpinion(why) => why,
    };
    (rules_of(cache, user, &attrs.namespace).iter().any(|r| r.allows(attrs)), why)
}

/// Every rule granted to `user`: by ClusterRoleBindings everywhere, and by RoleBindings
/// in `namespace` (none when it is empty).
pub(crate) fn rules_of(cache: &WatchCache, user: &UserInfo, namespace: &str) -> Vec<PolicyRule> {
    let mut rules = Vec::new();
    let role = |resource: &'static str, ns: Option<&str>, name: &str| {
        let key = ObjectKey { group: RBAC_GROUP, resource, namespace: ns, name }.encode();
        cache.get(&key).1.and_then(|obj| obj.value().map(PolicyRule::of_role)).unwrap_or_default()
    };
    let bindings = |resource: &'static str, ns: Option<&str>| {
        cache.list(&WatchFilter::prefix(collection_prefix(RBAC_GROUP, resource, ns)), None, usize::MAX).items
    };
    for b in bindings("clusterrolebindings", None) {
        let Some(v) = b.value() else { continue };
        if binds(v, user, "") && v.pointer("/roleRef/kind").and_then(Value::as_str) == Some("ClusterRole") {
            rules.extend(role("clusterroles", None, role_name(v)));
        }
    }
    if !namespace.is_empty() {
        for b in bindings("rolebindings", Some(namespace)) {
            let Some(v) = b.value() else { continue };
            if !binds(v, user, namespace) {
                continue;
            }
            match v.pointer("/roleRef/kind").and_then(Value::as_str) {
                Some("ClusterRole") => rules.extend(role("clusterroles", None, role_name(v))),
                Some("Role") => rules.extend(role("roles", Some(namespace), role_name(v))),
                _ => {}
            }
        }
    }
    rules
}

fn role_name(binding: &Value) -> &str {
    binding.pointer("/roleRef/name").and_then(Value::as_str).unwrap_or("")
}

fn binds(binding: &Value, user: &UserInfo, namespace: &str) -> bool {
    binding
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|s| subject_matches(s, &user.name, &user.groups, namespace))
}

/// Whether a resource is one of the reviews answered here rather than stored.
pub(crate) fn is_review(def: &kuorum_api::ResourceDef) -> bool {
    def.group == AUTHORIZATION_GROUP || def.group == AUTHENTICATION_GROUP
}

/// POST of a review: the review as sent, with the answer in its `status` (201 Created,
/// nothing stored). The self reviews answer for the requester; a TokenReview says whom a
/// bearer token authenticates; a (Local)SubjectAccessReview answers for the user and
/// groups its spec names, as a kubelet's or webhook's authorizer asks.
pub(crate) async fn review(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let def = ctx.target.def;
    let format = BodyFormat::of(&ctx.headers)?;
    let body = negotiate::read_body(&ctx.headers, ctx.body).await?;
    let mut obj = object::decode_body(format, body.clone()).await?;
    object::check_type_meta(&mut obj, def)?;
    let user = ctx.user.unwrap_or_else(|| UserInfo::new("system:anonymous", &["system:unauthenticated"]));
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let status = match def.kind {
        "SelfSubjectReview" => {
            let mut info = json!({"username": user.name, "uid": user.uid, "groups": user.groups});
            if !ctx.extra.is_empty() {
                info["extra"] = json!(ctx.extra);
            }
            json!({ "userInfo": info })
        }
        "SelfSubjectAccessReview" => access_review(st, &user, &spec)?,
        "SelfSubjectRulesReview" => rules_review(st, &user, &spec),
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            let namespace = ctx.target.namespace.as_deref();
            subject_access_review(st, def, namespace, &spec)?
        }
        "TokenReview" => token_review(st, &spec).await?,
        _ => return Err(ApiError::method_not_allowed()),
    };
    obj.insert("status".into(), status);
    obj.entry("metadata").or_insert_with(|| json!({"creationTimestamp": null}));
    Ok(json_response(StatusCode::CREATED, object::to_vec(&obj)))
}

fn access_review(st: &RestState, user: &UserInfo, spec: &Value) -> Result<Value, ApiError> {
    let s = |v: Option<&Value>, k: &str| v.and_then(|v| v.get(k)).and_then(Value::as_str).unwrap_or("").to_string();
    let attrs = match (spec.get("resourceAttributes"), spec.get("nonResourceAttributes")) {
        (Some(r), None) => Attributes {
            verb: s(Some(r), "verb"),
            resource_request: true,
            api_group: s(Some(r), "group"),
            resource: s(Some(r), "resource"),
            subresource: s(Some(r), "subresource"),
            namespace: s(Some(r), "namespace"),
            name: s(Some(r), "name"),
            path: String::new(),
        },
        (None, Some(n)) => Attributes { verb: s(Some(n), "verb"), path: s(Some(n), "path"), ..Attributes::default() },
        _ => {
            let e = kuorum_api::validation::FieldError::invalid(
                "spec.resourceAttributes",
                "",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            );
            return Err(ApiError::invalid(
                kuorum_api::GroupKind { group: AUTHORIZATION_GROUP, kind: "SelfSubjectAccessReview" },
                "",
                &[e],
            ));
        }
    };
    if st.authorization == Authorization::AlwaysAllow {
        return Ok(json!({"allowed": true, "reason": allow_reason(st, user)}));
    }
    let by_node = node_authz::decide(&st.cache, user, &attrs) == node_authz::Decision::Allow;
    let (allowed, why) = decide(&st.cache, user, &attrs);
    Ok(match (allowed, by_node) {
        // kube's Node authorizer gives no reason when it allows.
        (true, true) => json!({"allowed": true}),
        (true, false) => json!({"allowed": true, "reason": allow_reason(st, user)}),
        (false, _) if why.is_empty() => json!({"allowed": false}),
        (false, _) => json!({"allowed": false, "reason": why}),
    })
}

/// A SubjectAccessReview (or, with the URL's `namespace`, a LocalSubjectAccessReview):
/// the access review of the user, uid and groups its spec names.
fn subject_access_review(
    st: &RestState,
    def: &kuorum_api::ResourceDef,
    namespace: Option<&str>,
    spec: &Value,
) -> Result<Value, ApiError> {
    let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
    let groups: Vec<&str> =
        spec.get("groups").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let invalid = |field: &str, detail: &str| {
        let e = kuorum_api::validation::FieldError::invalid(field, "", detail);
        ApiError::invalid(def.group_kind(), "", &[e])
    };
    if user.is_empty() && groups.is_empty() {
        return Err(invalid("spec.user", "at least one of user or group must be specified"));
    }
    if let Some(ns) = namespace {
        let asked = spec.pointer("/resourceAttributes/namespace").and_then(Value::as_str).unwrap_or("");
        if spec.get("resourceAttributes").is_none() || asked != ns {
            return Err(invalid("spec.resourceAttributes.namespace", "must match metadata.namespace"));
        }
    }
    let mut subject = UserInfo::new(user, &groups);
    subject.uid = spec.get("uid").and_then(Value::as_str).unwrap_or("").to_string();
    access_review(st, &subject, spec)
}

/// A TokenReview: whom `spec.token` authenticates, as a bearer token to this server would,
/// for `spec.audiences` (the API audiences when empty), as kube's TokenReview storage
/// asks its authenticator: a service account token goes through every check, its
/// lookups included; `status.audiences` are the token's among those asked for.
async fn token_review(st: &RestState, spec: &Value) -> Result<Value, ApiError> {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request("token is required for TokenReview in authentication"));
    }
    let asked: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    let audiences = (!asked.is_empty()).then_some(asked.as_slice());
    let (user, extra, matched) = match st.auth.bearer(token, audiences) {
        Ok(crate::auth::Bearer::Static(user, matched)) => (user, Default::default(), matched),
        Ok(crate::auth::Bearer::ServiceAccount(v)) => match crate::sa_token::check(st, &v).await {
            Ok(()) => (v.user(), v.extra(), v.audiences.clone()),
            Err(why) => return Ok(json!({"authenticated": false, "error": why})),
        },
        Err(why) => return Ok(json!({"authenticated": false, "error": why})),
    };
    // kube's badAuthenticatorAuds: audiences were asked for and the token answers none.
    if !asked.is_empty() && matched.is_empty() {
        return Err(ApiError::internal("error validating audiences"));
    }
    let mut user_json = json!({"username": user.name, "uid": user.uid, "groups": user.groups});
    if !extra.is_empty() {
        user_json["extra"] = json!(extra);
    }
    let mut status = json!({"authenticated": true, "user": user_json});
    if !matched.is_empty() {
        status["audiences"] = json!(matched);
    }
    Ok(status)
}

fn allow_reason(st: &RestState, user: &UserInfo) -> &'static str {
    if st.authorization == Authorization::AlwaysAllow {
        "every request is allowed (authorization mode AlwaysAllow)"
    } else if user.is_master() {
        "member of system:masters"
    } else {
        "allowed by RBAC"
    }
}

fn rules_review(st: &RestState, user: &UserInfo, spec: &Value) -> Value {
    let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or("");
    let rules = if st.authorization == Authorization::AlwaysAllow || user.is_master() {
        vec![
            PolicyRule {
                verbs: vec!["*".into()],
                api_groups: vec!["*".into()],
                resources: vec!["*".into()],
                ..PolicyRule::default()
            },
            PolicyRule { verbs: vec!["*".into()], non_resource_urls: vec!["*".into()], ..PolicyRule::default() },
        ]
    } else {
        rules_of(&st.cache, user, namespace)
    };
    let (urls, resources): (Vec<_>, Vec<_>) = rules.iter().partition(|r| !r.non_resource_urls.is_empty());
    json!({
        "resourceRules": resources.iter().map(|r| r.to_value()).collect::<Vec<_>>(),
        "nonResourceRules": urls.iter().map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls})).collect::<Vec<_>>(),
        "incomplete": false,
    })
}

/// kube-apiserver's guard against privilege escalation through RBAC itself: a user may
/// write a Role or ClusterRole only if they hold every permission it grants (or may
/// `escalate` on it), and a binding only if they hold every permission of the role it
/// names (or may `bind` it). `value` is the object about to be stored through `t`.
pub(crate) fn check_escalation(
    st: &RestState,
    user: Option<&UserInfo>,
    t: &crate::target::Target,
    value: &Value,
) -> Result<(), ApiError> {
    let Some(user) = user else { return Ok(()) };
    if st.authorization == Authorization::AlwaysAllow || user.is_master() {
        return Ok(());
    }
    let namespace = t.namespace.as_deref().unwrap_or("");
    let name = value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let may = |verb: &str, resource: &str, name: &str| {
        let attrs = Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: RBAC_GROUP.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Attributes::default()
        };
        allowed(&st.cache, user, &attrs)
    };
    let (wanted, exempt) = match t.def.kind {
        "Role" | "ClusterRole" => (PolicyRule::of_role(value), may("escalate", t.def.plural, name)),
        _ => {
            let role_kind = value.pointer("/roleRef/kind").and_then(Value::as_str).unwrap_or("");
            let role = role_name(value);
            let (resource, ns) = if role_kind == "Role" { ("roles", Some(namespace)) } else { ("clusterroles", None) };
            if may("bind", resource, role) {
                return Ok(());
            }
            // As kube-apiserver: the role must be there to be checked. A binding to a role
            // not yet created would otherwise pass, and grant whatever the role is later
            // made to hold.
            let key = ObjectKey { group: RBAC_GROUP, resource, namespace: ns, name: role }.encode();
            let Some(rules) = st.cache.get(&key).1.and_then(|o| o.value().map(PolicyRule::of_role)) else {
                let why = format!("{resource}.{RBAC_GROUP} {role:?} not found");
                return Err(ApiError::forbidden(t.def.group_resource(), name, &why));
            };
            (rules, false)
        }
    };
    if exempt {
        return Ok(());
    }
    let held = rules_of(&st.cache, user, namespace);
    let missing: Vec<String> =
        wanted.iter().filter(|r| !kuorum_api::rbac::covers(&held, r)).map(|r| r.to_value().to_string()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let why = format!(
        "user {:?} (groups={:?}) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        user.groups,
        missing.join("\n")
    );
    Err(ApiError::forbidden(t.def.group_resource(), name, &why))
}

/// This server's authorizer as CEL's `authorizer` asks it (admission policies, webhook
/// match conditions): the same chain as requests go through, for the requester or a
/// service account. Field and label selectors are taken and not used: RBAC has no
/// opinion on them.
pub(crate) struct CelAuthorizer {
    pub cache: Arc<WatchCache>,
    pub mode: Authorization,
    pub requester: UserInfo,
}

impl std::fmt::Debug for CelAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelAuthorizer").field("mode", &self.mode).field("requester", &self.requester.name).finish()
    }
}

impl kuorum_cel::library::authz::Authorize for CelAuthorizer {
    fn authorize(
        &self,
        who: &kuorum_cel::library::authz::Principal,
        check: &kuorum_cel::library::authz::Check,
    ) -> kuorum_cel::library::authz::Decision {
        use kuorum_cel::library::authz::{Decision, Principal};
        if self.mode == Authorization::AlwaysAllow {
            return Decision { allowed: true, ..Decision::default() };
        }
        let service_account;
        let user = match who {
            Principal::Requester => &self.requester,
            Principal::ServiceAccount { namespace, name } => {
                service_account = UserInfo::service_account(namespace, name);
                &service_account
            }
        };
        let attrs = Attributes {
            verb: check.verb.clone(),
            resource_request: check.path.is_none(),
            api_group: check.group.clone(),
            resource: check.resource.clone(),
            subresource: check.subresource.clone(),
            namespace: check.namespace.clone(),
            name: check.name.clone(),
            path: check.path.clone().unwrap_or_default(),
        };
        let (allowed, reason) = decide(&self.cache, user, &attrs);
        Decision { allowed, reason, error: None }
    }
}
