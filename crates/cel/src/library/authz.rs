//! Owns kube's authorization library (`kubernetes.authz` and `kubernetes.authzSelectors`):
//! the `authorizer` variable of admission policies and webhook match conditions, and
//! `authorizer.requestResource`.
//!
//! ```text
//! authorizer.group('apps').resource('deployments').namespace('dev').name('web').check('update').allowed()
//! authorizer.path('/healthz').check('get').reason()
//! authorizer.serviceAccount('dev', 'builder').group('').resource('pods').check('create').errored()
//! authorizer.requestResource.subresource('scale').check('update').error()
//! ```
//!
//! Each value is opaque (`kubernetes.authorization.Authorizer`, `PathCheck`, `GroupCheck`,
//! `ResourceCheck`, `Decision`). A check asks the server's authorizer, through
//! [`Authorize`], for the principal of the request or the service account named. A
//! check is estimated at kube's 350,000 cost units, so that no more than two run in one
//! evaluation ([`crate::PER_CALL_LIMIT`]).

use std::sync::Arc;

use cel::common::types::{CelBool, CelString, STRING_TYPE};
use cel::common::value::CowVal;
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

use super::{opaque, opaque_type, string_arg, take, with_opaque};

pub(crate) const AUTHORIZER_TYPE: &str = "kubernetes.authorization.Authorizer";
pub(crate) const PATH_CHECK_TYPE: &str = "kubernetes.authorization.PathCheck";
pub(crate) const GROUP_CHECK_TYPE: &str = "kubernetes.authorization.GroupCheck";
pub(crate) const RESOURCE_CHECK_TYPE: &str = "kubernetes.authorization.ResourceCheck";
pub(crate) const DECISION_TYPE: &str = "kubernetes.authorization.Decision";

/// The estimated cost of one `check` (kube's: two fit in one evaluation).
pub const CHECK_COST: u64 = 350_000;

/// The variable names an expression reaches the authorizer by.
pub const VARIABLE: &str = "authorizer";
pub const REQUEST_RESOURCE_VARIABLE: &str = "authorizer.requestResource";

/// Whom a check is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The user who sent the request being admitted.
    Requester,
    /// `authorizer.serviceAccount(namespace, name)`.
    ServiceAccount { namespace: String, name: String },
}

/// What a check asks: kube's authorization attributes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Check {
    /// An API verb for a resource, the lowercase HTTP method for a path.
    pub verb: String,
    /// A non-resource path (`/healthz`); `None` for a resource check.
    pub path: Option<String>,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub field_selector: String,
    pub label_selector: String,
}

/// An authorizer's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
    pub error: Option<String>,
}

/// The server's authorizer, as the library asks it.
pub trait Authorize: Send + Sync + std::fmt::Debug {
    fn authorize(&self, who: &Principal, check: &Check) -> Decision;
}

/// An `Authorizer` value: the server's authorizer, for a principal.
#[derive(Debug, Clone)]
struct Authorizer {
    inner: Arc<dyn Authorize>,
    who: Principal,
}

impl PartialEq for Authorizer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner) && self.who == other.who
    }
}
impl Eq for Authorizer {}

/// A check being built: a path, a group, or a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Builder {
    authorizer: Authorizer,
    check: Check,
    /// The opaque type this value is (a path, group or resource check).
    kind: &'static str,
}

macro_rules! opaque_as {
    ($t:ty, $name:expr) => {
        impl Opaque for $t {
            fn runtime_type_name(&self) -> &str {
                $name
            }
        }
    };
}
opaque_as!(Authorizer, AUTHORIZER_TYPE);
opaque_as!(Decision, DECISION_TYPE);

impl Opaque for Builder {
    fn runtime_type_name(&self) -> &str {
        self.kind
    }
}

/// The two variables an expression sees: `authorizer`, for the request's principal, and
/// `authorizer.requestResource`, a resource check of the request's own resource.
pub fn variables(inner: Arc<dyn Authorize>, request: Check) -> [(&'static str, Value); 2] {
    let authorizer = Authorizer { inner, who: Principal::Requester };
    let request = Builder { authorizer: authorizer.clone(), check: request, kind: RESOURCE_CHECK_TYPE };
    [(VARIABLE, Value::Opaque(Arc::new(authorizer))), (REQUEST_RESOURCE_VARIABLE, Value::Opaque(Arc::new(request)))]
}

pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let (authorizer, path, group) =
        (|| opaque_type(AUTHORIZER_TYPE), || opaque_type(PATH_CHECK_TYPE), || opaque_type(GROUP_CHECK_TYPE));
    let (resource, decision) = (|| opaque_type(RESOURCE_CHECK_TYPE), || opaque_type(DECISION_TYPE));
    env.add_member_overload("path", "authorizer_path", authorizer(), vec![STRING_TYPE], authorizer_path)?;
    env.add_member_overload("group", "authorizer_group", authorizer(), vec![STRING_TYPE], authorizer_group)?;
    env.add_member_overload(
        "serviceAccount",
        "authorizer_serviceaccount",
        authorizer(),
        vec![STRING_TYPE, STRING_TYPE],
        service_account,
    )?;
    env.add_member_overload("resource", "groupcheck_resource", group(), vec![STRING_TYPE], group_resource)?;
    env.add_member_overload("subresource", "resourcecheck_subresource", resource(), vec![STRING_TYPE], |a| {
        set(a, |c, v| c.subresource = v)
    })?;
    env.add_member_overload("namespace", "resourcecheck_namespace", resource(), vec![STRING_TYPE], |a| {
        set(a, |c, v| c.namespace = v)
    })?;
    env.add_member_overload("name", "resourcecheck_name", resource(), vec![STRING_TYPE], |a| {
        set(a, |c, v| c.name = v)
    })?;
    env.add_member_overload("fieldSelector", "authorizer_fieldselector", resource(), vec![STRING_TYPE], |a| {
        set(a, |c, v| c.field_selector = v)
    })?;
    env.add_member_overload("labelSelector", "authorizer_labelselector", resource(), vec![STRING_TYPE], |a| {
        set(a, |c, v| c.label_selector = v)
    })?;
    env.add_member_overload("check", "pathcheck_check", path(), vec![STRING_TYPE], check)?;
    env.add_member_overload("check", "resourcecheck_check", resource(), vec![STRING_TYPE], check)?;
    env.add_member_overload("allowed", "decision_allowed", decision(), vec![], |a| {
        read(a, |d| CowVal::owned(CelBool::from(d.allowed)))
    })?;
    env.add_member_overload("reason", "decision_reason", decision(), vec![], |a| {
        read(a, |d| CowVal::owned(CelString::from(d.reason.clone())))
    })?;
    env.add_member_overload("errored", "decision_errored", decision(), vec![], |a| {
        read(a, |d| CowVal::owned(CelBool::from(d.error.is_some())))
    })?;
    env.add_member_overload("error", "decision_error", decision(), vec![], |a| {
        read(a, |d| CowVal::owned(CelString::from(d.error.clone().unwrap_or_default())))
    })?;
    Ok(())
}

fn authorizer_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [a, p] = take(args)?;
    let p = string_arg(p.as_ref())?;
    if p.trim().is_empty() {
        return Err(ExecutionError::function_error("path", "path must not be empty"));
    }
    // kube does not require the leading '/'; RBAC's nonResourceURLs have it.
    let path = if p.starts_with('/') { p.to_string() } else { format!("/{p}") };
    let authorizer = with_opaque(a.as_ref(), |a: &Authorizer| a.clone())?;
    opaque(Builder { authorizer, check: Check { path: Some(path), ..Check::default() }, kind: PATH_CHECK_TYPE })
}

fn authorizer_group<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [a, g] = take(args)?;
    let group = string_arg(g.as_ref())?.to_string();
    let authorizer = with_opaque(a.as_ref(), |a: &Authorizer| a.clone())?;
    opaque(Builder { authorizer, check: Check { group, ..Check::default() }, kind: GROUP_CHECK_TYPE })
}

fn service_account<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [a, ns, name] = take(args)?;
    let (namespace, name) = (string_arg(ns.as_ref())?.to_string(), string_arg(name.as_ref())?.to_string());
    if !kuorum_api::validation::is_dns1123_subdomain(&name).is_empty() {
        return Err(ExecutionError::function_error("serviceAccount", "Invalid service account name"));
    }
    if !kuorum_api::validation::is_dns1123_label(&namespace).is_empty() {
        return Err(ExecutionError::function_error("serviceAccount", "Invalid service account namespace"));
    }
    let inner = with_opaque(a.as_ref(), |a: &Authorizer| a.inner.clone())?;
    opaque(Authorizer { inner, who: Principal::ServiceAccount { namespace, name } })
}

fn group_resource<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [g, r] = take(args)?;
    let resource = string_arg(r.as_ref())?.to_string();
    if resource.trim().is_empty() {
        return Err(ExecutionError::function_error("resource", "resource must not be empty"));
    }
    let mut b = with_opaque(g.as_ref(), |b: &Builder| b.clone())?;
    b.check.resource = resource;
    b.kind = RESOURCE_CHECK_TYPE;
    opaque(b)
}

/// A resource check with one attribute set from the string argument.
fn set<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: impl FnOnce(&mut Check, String),
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [r, v] = take(args)?;
    let v = string_arg(v.as_ref())?.to_string();
    let mut b = with_opaque(r.as_ref(), |b: &Builder| b.clone())?;
    f(&mut b.check, v);
    opaque(b)
}

fn check<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [b, verb] = take(args)?;
    let verb = string_arg(verb.as_ref())?.to_string();
    let decision = with_opaque(b.as_ref(), |b: &Builder| {
        let check = Check { verb: verb.clone(), ..b.check.clone() };
        b.authorizer.inner.authorize(&b.authorizer.who, &check)
    })?;
    opaque(decision)
}

fn read<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: impl FnOnce(&Decision) -> CowVal<'b, 'v>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [d] = take(args)?;
    with_opaque(d.as_ref(), f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compile_any, EvalError};
    use std::sync::Mutex;

    /// Allows `alice` to get pods in `dev` and `/healthz`; records every check.
    #[derive(Debug, Default)]
    struct Rules {
        asked: Mutex<Vec<(Principal, Check)>>,
    }

    impl Authorize for Rules {
        fn authorize(&self, who: &Principal, check: &Check) -> Decision {
            self.asked.lock().unwrap().push((who.clone(), check.clone()));
            let allowed = match (&check.path, who) {
                (Some(p), _) => p == "/healthz" && check.verb == "get",
                (None, Principal::Requester) => {
                    check.group.is_empty()
                        && check.resource == "pods"
                        && check.namespace == "dev"
                        && check.verb == "get"
                }
                (None, Principal::ServiceAccount { namespace, .. }) => namespace == "ci",
            };
            if check.resource == "broken" {
                return Decision { allowed: false, reason: String::new(), error: Some("authorizer down".into()) };
            }
            Decision { allowed, reason: if allowed { String::new() } else { "no rule".into() }, error: None }
        }
    }

    fn run(src: &str, rules: &Arc<Rules>) -> Result<Value, EvalError> {
        let vars = [VARIABLE, "object"];
        let p = compile_any(src, &vars).unwrap_or_else(|e| panic!("{src}: {e}"));
        let request = Check {
            group: "apps".into(),
            resource: "deployments".into(),
            namespace: "dev".into(),
            name: "web".into(),
            ..Check::default()
        };
        let natives = variables(rules.clone(), request);
        p.eval_native(&[("object", &serde_json::Value::Null)], &natives)
    }

    #[test]
    fn checks_ask_the_authorizer_for_the_requester() {
        let rules = Arc::new(Rules::default());
        let yes = "authorizer.group('').resource('pods').namespace('dev').check('get').allowed()";
        assert_eq!(run(yes, &rules), Ok(Value::Bool(true)));
        let no = "authorizer.group('').resource('pods').namespace('prod').check('get').allowed()";
        assert_eq!(run(no, &rules), Ok(Value::Bool(false)));
        let reason = "authorizer.group('').resource('pods').check('delete').reason()";
        assert_eq!(run(reason, &rules), Ok(Value::String(Arc::new("no rule".into()))));
        let asked = rules.asked.lock().unwrap();
        assert_eq!(asked.len(), 3);
        assert_eq!(asked[1].1.namespace, "prod");
        assert_eq!(asked[2].1.verb, "delete");
    }

    #[test]
    fn paths_service_accounts_and_the_request_resource() {
        let rules = Arc::new(Rules::default());
        assert_eq!(run("authorizer.path('healthz').check('get').allowed()", &rules), Ok(Value::Bool(true)));
        let sa = "authorizer.serviceAccount('ci', 'builder').group('').resource('secrets').check('list').allowed()";
        assert_eq!(run(sa, &rules), Ok(Value::Bool(true)));
        let own = "authorizer.requestResource.subresource('scale').check('update').allowed()";
        assert_eq!(run(own, &rules), Ok(Value::Bool(false)));
        let asked = rules.asked.lock().unwrap();
        assert_eq!(asked[0].1.path.as_deref(), Some("/healthz"));
        assert_eq!(asked[1].0, Principal::ServiceAccount { namespace: "ci".into(), name: "builder".into() });
        let want = Check {
            verb: "update".into(),
            group: "apps".into(),
            resource: "deployments".into(),
            subresource: "scale".into(),
            namespace: "dev".into(),
            name: "web".into(),
            ..Check::default()
        };
        assert_eq!(asked[2], (Principal::Requester, want));
    }

    #[test]
    fn errors_and_bad_arguments() {
        let rules = Arc::new(Rules::default());
        let src = "authorizer.group('x').resource('broken').check('get')";
        assert_eq!(run(&format!("{src}.errored()"), &rules), Ok(Value::Bool(true)));
        assert_eq!(run(&format!("{src}.error()"), &rules), Ok(Value::String(Arc::new("authorizer down".into()))));
        for (src, want) in [
            ("authorizer.path(' ').check('get')", "path must not be empty"),
            ("authorizer.group('').resource('').check('get')", "resource must not be empty"),
            ("authorizer.serviceAccount('Bad_NS', 'x').path('/').check('get')", "Invalid service account namespace"),
            ("authorizer.serviceAccount('ns', 'a@b').path('/').check('get')", "Invalid service account name"),
        ] {
            match run(src, &rules) {
                Err(EvalError::Failed(e)) => assert!(e.contains(want), "{src}: {e}"),
                other => panic!("{src}: {other:?}"),
            }
        }
    }

    #[test]
    fn no_more_than_two_checks_run_in_one_evaluation() {
        let rules = Arc::new(Rules::default());
        let two = "authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed()";
        assert_eq!(run(two, &rules), Ok(Value::Bool(false)));
        let three = format!("{two} || authorizer.path('/c').check('get').allowed()");
        assert_eq!(run(&three, &rules), Err(EvalError::TooCostly));
        // A check in a loop over the object is bounded by the object's size.
        let looped = "object.all(x, authorizer.path(x).check('get').allowed())";
        let p = compile_any(looped, &[VARIABLE, "object"]).unwrap();
        let natives = variables(rules.clone(), Check::default());
        let many = serde_json::json!(["a", "b", "c", "d"]);
        assert_eq!(p.eval_native(&[("object", &many)], &natives), Err(EvalError::TooCostly));
        assert_eq!(rules.asked.lock().unwrap().len(), 2, "nothing ran past the limit");
    }
}
