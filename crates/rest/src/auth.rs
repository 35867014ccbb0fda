//! Who is asking: authentication by client certificate or bearer token, as
//! kube-apiserver does it, and the [`UserInfo`] every later layer reads.
//!
//! - A client certificate verified by the listener (against `--client-ca-file`) names the
//!   user by its subject's common name and the groups by its organizations: `CN=alice,
//!   O=dev` is user `alice` in group `dev`. The server reads it once per connection and
//!   hands it to each request as [`ClientCert`].
//! - A client certificate verified against `--requestheader-client-ca-file` (and, when
//!   `--requestheader-allowed-names` lists any, with one of them as its common name) is
//!   an authenticating proxy's: the user is whatever its request headers say
//!   (`--requestheader-username-headers`, `-group-headers`, `-extra-headers-prefix`,
//!   `-uid-headers`), tried first, as kube's front-proxy authenticator is. Without a
//!   username header the request authenticates some other way. Anyone else's headers of
//!   those names are ignored.
//! - `Authorization: Bearer <token>` is looked up in the static token file
//!   (`--token-auth-file`, kube-apiserver's CSV: `token,user,uid,"group1,group2"`), then,
//!   when service account tokens are configured ([`Authenticator::with_service_account_tokens`]),
//!   verified as a service account JWT ([`crate::sa_token`]): issuer, signature and
//!   audience here; its time and that its service account and bound object still exist
//!   just after, in [`crate::sa_token::confirm`], which has the node's state. An unknown
//!   token is refused even when a certificate would do, as kube-apiserver does.
//! - Otherwise the request is anonymous (`system:anonymous`, group
//!   `system:unauthenticated`) if anonymous requests are allowed, and refused with 401
//!   if not (the default of `kuorum serve`). `/livez`, `/readyz` and `/healthz` are
//!   always open, so load balancers can probe without credentials.
//!
//! Authenticated users also get the group `system:authenticated`. Tokens are compared
//! as whole strings and never logged.
//!
//! Admission ([`admit_request`], run by [`crate::front`]) also caps the watches one user
//! holds open on the node (`--max-watches-per-user`), since it is the first to know who
//! is asking.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::header;
use kuorum_api::ApiError;

use crate::error::RestError;
use crate::sa_token::{ServiceAccountTokens, Unconfirmed, Verified};

/// A user as authentication found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    pub fn new(name: impl Into<String>, groups: &[&str]) -> Self {
        UserInfo { name: name.into(), uid: String::new(), groups: groups.iter().map(|g| g.to_string()).collect() }
    }

    pub(crate) fn anonymous() -> Self {
        UserInfo::new("system:anonymous", &["system:unauthenticated"])
    }

    /// A service account as kube names it (`ServiceAccountInfo.UserInfo`): its user name
    /// and the two service-account groups, without what authentication adds.
    pub(crate) fn service_account(namespace: &str, name: &str) -> Self {
        UserInfo::new(
            format!("system:serviceaccount:{namespace}:{name}"),
            &["system:serviceaccounts", &format!("system:serviceaccounts:{namespace}")],
        )
    }

    /// In `system:masters`, the group kube-apiserver lets do anything.
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == "system:masters")
    }
}

/// The `extra` of the request's user (kube's `user.Info.GetExtra`), in the request's
/// extensions beside its [`UserInfo`] when authentication found any: a service account
/// token's pod, node and credential id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserExtra(pub BTreeMap<String, Vec<String>>);

/// The address a request's connection comes from (the audit log's `sourceIPs`); the
/// server puts it in every request's extensions.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::SocketAddr);

/// The user a connection's client certificate names, if it presented one the listener
/// verified. The server puts it in every request's extensions, read once per connection
/// from the stream (see [`ClientIdentity`]).
#[derive(Debug, Clone, Default)]
pub struct ClientCert(pub Option<UserInfo>);

/// The common name of an authenticating proxy's client certificate (verified against
/// `--requestheader-client-ca-file`, its name allowed), when the connection presented
/// one: its requests' users are in their headers ([`RequestHeader`]). In the request's
/// extensions beside [`ClientCert`].
#[derive(Debug, Clone)]
pub struct FrontProxyCert(pub String);

/// A connection that may carry a verified client certificate.
pub trait ClientIdentity {
    fn client_user(&self) -> Option<UserInfo>;

    /// The connection's certificate, when it is an authenticating proxy's.
    fn front_proxy(&self) -> Option<FrontProxyCert> {
        None
    }
}

/// Where an authenticating proxy puts the user (kube's `--requestheader-*` flags): the
/// first non-empty of `username` headers is the user; every value of the `group` headers
/// a group; a header starting with one of `extra_prefixes` an `extra` value of the
/// (percent-decoded, lowercased) rest of its name; the first `uid` header the uid.
#[derive(Debug, Clone, Default)]
pub struct RequestHeader {
    pub username: Vec<String>,
    pub group: Vec<String>,
    pub extra_prefixes: Vec<String>,
    pub uid: Vec<String>,
}

impl RequestHeader {
    /// The user `headers` name, with its extra; `None` without a username header.
    fn user(&self, headers: &http::HeaderMap) -> Option<(UserInfo, BTreeMap<String, Vec<String>>)> {
        let values = |names: &[String]| -> Vec<String> {
            names
                .iter()
                .flat_map(|n| headers.get_all(n.as_str()).iter())
                .filter_map(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .collect()
        };
        let name = values(&self.username).into_iter().next()?;
        let mut groups = values(&self.group);
        if !groups.iter().any(|g| g == "system:authenticated") {
            groups.push("system:authenticated".into());
        }
        let uid = values(&self.uid).into_iter().next().unwrap_or_default();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        // Header names arrive lower-cased.
        let prefixes: Vec<String> = self.extra_prefixes.iter().map(|p| p.to_ascii_lowercase()).collect();
        for (header, value) in headers {
            let Some(key) = prefixes.iter().find_map(|p| header.as_str().strip_prefix(p.as_str())) else {
                continue;
            };
            let key = percent_encoding::percent_decode_str(key).decode_utf8_lossy().to_lowercase();
            if let (false, Ok(v)) = (key.is_empty(), value.to_str()) {
                extra.entry(key).or_default().push(v.to_string());
            }
        }
        Some((UserInfo { name, uid, groups }, extra))
    }
}

impl ClientIdentity for tokio::net::TcpStream {
    fn client_user(&self) -> Option<UserInfo> {
        None
    }
}

/// How requests are authenticated. Its `Debug` shows how many tokens it holds, never
/// the tokens.
#[derive(Clone)]
pub struct Authenticator {
    /// Bearer token → user.
    tokens: HashMap<String, UserInfo>,
    /// Requests without credentials are served as `system:anonymous` rather than refused.
    anonymous: bool,
    /// Anyone may use the node's own endpoints (`/kuorum/`, `/debug/`), not only
    /// `system:masters`: only with no authentication at all.
    admin_open: bool,
    /// Watches one user may hold open on this node (0: no cap).
    max_watches_per_user: usize,
    /// Open watches by user name. Shared by the clones of one authenticator.
    watches: Arc<std::sync::Mutex<HashMap<String, usize>>>,
    /// Service account tokens: issued by `serviceaccounts/token`, accepted as bearer
    /// tokens. Here rather than in the node's state because the front layer hands
    /// authentication only the authenticator, and the issuer and the verifier must be
    /// the same keys.
    service_accounts: Option<Arc<ServiceAccountTokens>>,
    /// Where authenticating proxies name the user (`--requestheader-*`); `None`: no
    /// proxy is trusted.
    request_header: Option<RequestHeader>,
}

/// Whom a bearer token names, before the checks that need the node's state.
#[derive(Debug, Clone)]
pub(crate) enum Bearer {
    /// A token of the static file, and the audiences it was accepted for (kube treats
    /// these as good for the API server's own audiences; none without any).
    Static(UserInfo, Vec<String>),
    /// A service account token whose issuer, signature and audience passed.
    ServiceAccount(Box<Verified>),
}

/// What authentication found: the user, a service account token still to confirm, and
/// the `extra` an authenticating proxy sent.
struct Admitted {
    user: UserInfo,
    service_account: Option<Verified>,
    extra: BTreeMap<String, Vec<String>>,
}

/// One open watch of a user; gives its place back when dropped.
struct WatchSlot {
    user: String,
    watches: Arc<std::sync::Mutex<HashMap<String, usize>>>,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        let mut open = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.user);
            }
        }
    }
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("tokens", &self.tokens.len())
            .field("anonymous", &self.anonymous)
            .field("admin_open", &self.admin_open)
            .field("max_watches_per_user", &self.max_watches_per_user)
            .field("service_accounts", &self.service_accounts)
            .field("request_header", &self.request_header)
            .finish()
    }
}

impl Authenticator {
    /// Everyone is served, anonymously: for the simulator, tests and `--insecure`.
    pub fn allow_all() -> Self {
        Authenticator { anonymous: true, admin_open: true, ..Authenticator::new(HashMap::new(), true) }
    }

    pub fn new(tokens: HashMap<String, UserInfo>, anonymous: bool) -> Self {
        Authenticator {
            tokens,
            anonymous,
            admin_open: false,
            max_watches_per_user: 0,
            watches: Arc::default(),
            service_accounts: None,
            request_header: None,
        }
    }

    /// Issues (`serviceaccounts/token`) and accepts service account tokens signed with
    /// these keys, and serves their OIDC discovery documents. Every node given the same
    /// keys issues and accepts the same tokens.
    pub fn with_service_account_tokens(self, tokens: Arc<ServiceAccountTokens>) -> Self {
        Authenticator { service_accounts: Some(tokens), ..self }
    }

    /// The service account tokens configured, if any.
    pub fn service_account_tokens(&self) -> Option<&Arc<ServiceAccountTokens>> {
        self.service_accounts.as_ref()
    }

    /// Trusts authenticating proxies (connections with a [`FrontProxyCert`]) to name the
    /// user in these headers.
    pub fn with_request_header(self, request_header: RequestHeader) -> Self {
        Authenticator { request_header: Some(request_header), ..self }
    }

    /// Caps the watches one user may hold open on this node (0: no cap); one more gets
    /// 429 with `Retry-After`. Anonymous requests count as one user.
    pub fn with_watch_cap(self, max_watches_per_user: usize) -> Self {
        Authenticator { max_watches_per_user, ..self }
    }

    /// A place for one more watch of `user`, or `None` at the cap.
    fn take_watch(&self, user: &str) -> Option<WatchSlot> {
        let mut open = self.watches.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(user.to_string()).or_insert(0);
        if *n >= self.max_watches_per_user {
            return None;
        }
        *n += 1;
        Some(WatchSlot { user: user.to_string(), watches: self.watches.clone() })
    }

    /// Reads kube-apiserver's static token file: one `token,user,uid[,"group1,group2"]`
    /// per line; blank lines and lines starting with `#` are skipped.
    pub fn parse_token_file(text: &str) -> Result<HashMap<String, UserInfo>, String> {
        let mut out = HashMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields = split_csv(line);
            if fields.len() < 3 || fields[0].is_empty() || fields[1].is_empty() {
                return Err(format!("line {}: expected token,user,uid[,\"groups\"]", n + 1));
            }
            let groups = fields
                .get(3)
                .map(|g| g.split(',').map(str::trim).filter(|g| !g.is_empty()).map(String::from).collect())
                .unwrap_or_default();
            let user = UserInfo { name: fields[1].clone(), uid: fields[2].clone(), groups };
            if out.insert(fields[0].clone(), user).is_some() {
                return Err(format!("line {}: a token appears twice", n + 1));
            }
        }
        Ok(out)
    }

    /// Who sent `req`, and whether they may use its path: `Ok(None)` for an open path,
    /// `Err` for a refusal (401, or 403 for the node's own endpoints without
    /// `system:masters`; every other path is open to every authenticated user until RBAC).
    fn admit(&self, req: &Request) -> Result<Option<Admitted>, ApiError> {
        let admitted = self.authenticate(req)?;
        let path = req.uri().path();
        if let Some(Admitted { user: u, .. }) = &admitted {
            if (path.starts_with("/kuorum/") || path.starts_with("/debug/")) && !self.admin_open && !u.is_master() {
                return Err(ApiError::forbidden_path(&u.name, path));
            }
        }
        Ok(admitted)
    }

    /// Whom a bearer token names, for `audiences` (the API audiences when `None`): the
    /// static file's user (with `system:authenticated`), or a service account token's
    /// claims, still to be [checked](crate::sa_token::check). `Err` is kube's reason for
    /// refusing it (a TokenReview's `status.error`).
    pub(crate) fn bearer(&self, token: &str, audiences: Option<&[String]>) -> Result<Bearer, String> {
        const INVALID: &str = "invalid bearer token";
        if let Some(u) = self.tokens.get(token) {
            let mut u = u.clone();
            if !u.groups.iter().any(|g| g == "system:authenticated") {
                u.groups.push("system:authenticated".into());
            }
            // kube's audience-agnostic wrapping: good for the API audiences asked for.
            let api = self.service_accounts.as_ref().map_or(&[][..], |t| t.api_audiences());
            if api.is_empty() {
                return Ok(Bearer::Static(u, Vec::new()));
            }
            let asked = audiences.unwrap_or(api);
            let matched: Vec<String> = api.iter().filter(|a| asked.contains(a)).cloned().collect();
            return if matched.is_empty() { Err(INVALID.into()) } else { Ok(Bearer::Static(u, matched)) };
        }
        match self.service_accounts.as_ref().map(|t| t.verify(token, audiences)) {
            Some(Ok(Some(verified))) => Ok(Bearer::ServiceAccount(Box::new(verified))),
            Some(Err(why)) => Err(why),
            Some(Ok(None)) | None => Err(INVALID.into()),
        }
    }

    fn authenticate(&self, req: &Request) -> Result<Option<Admitted>, ApiError> {
        if matches!(req.uri().path(), "/livez" | "/readyz" | "/healthz") {
            return Ok(None);
        }
        if let (Some(names), Some(_)) = (&self.request_header, req.extensions().get::<FrontProxyCert>()) {
            if let Some((user, extra)) = names.user(req.headers()) {
                return Ok(Some(Admitted { user, service_account: None, extra }));
            }
        }
        let bearer = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        if let Some(token) = bearer {
            return match self.bearer(token, None) {
                Ok(Bearer::Static(user, _)) => {
                    Ok(Some(Admitted { user, service_account: None, extra: BTreeMap::new() }))
                }
                Ok(Bearer::ServiceAccount(v)) => {
                    Ok(Some(Admitted { user: v.user(), service_account: Some(*v), extra: BTreeMap::new() }))
                }
                Err(_) => Err(ApiError::unauthorized()),
            };
        }
        match req.extensions().get::<ClientCert>().and_then(|c| c.0.clone()) {
            Some(mut u) => {
                if !u.groups.iter().any(|g| g == "system:authenticated") {
                    u.groups.push("system:authenticated".into());
                }
                Ok(Some(Admitted { user: u, service_account: None, extra: BTreeMap::new() }))
            }
            None if self.anonymous => {
                Ok(Some(Admitted { user: UserInfo::anonymous(), service_account: None, extra: BTreeMap::new() }))
            }
            None => Err(ApiError::unauthorized()),
        }
    }
}

/// Splits one CSV line, honouring double quotes (the token file quotes its group list).
fn split_csv(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur).trim().to_string()),
            c => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    out
}

/// Authenticates `req` and puts the [`UserInfo`] in its extensions (with its
/// [`UserExtra`], and a service account token for [`crate::sa_token::confirm`]). A watch under a
/// per-user limit takes one of the user's slots, to be held by the response's body
/// (`Some`); a refusal is the response to send.
pub(crate) fn admit_request(
    auth: &Authenticator,
    req: &mut Request,
    watch: bool,
) -> Result<Option<impl Send + Unpin + 'static>, Response> {
    match auth.admit(req) {
        Ok(Some(Admitted { user, service_account, extra })) => {
            tracing::Span::current().record("user", tracing::field::display(&user.name));
            let slot = if watch && auth.max_watches_per_user > 0 {
                match auth.take_watch(&user.name) {
                    Some(slot) => Some(slot),
                    None => {
                        return Err(RestError(ApiError::too_many_watches(&user.name, auth.max_watches_per_user))
                            .into_response())
                    }
                }
            } else {
                None
            };
            req.extensions_mut().insert(user);
            if !extra.is_empty() {
                req.extensions_mut().insert(UserExtra(extra));
            }
            if let Some(v) = service_account {
                let extra = v.extra();
                if !extra.is_empty() {
                    req.extensions_mut().insert(UserExtra(extra));
                }
                req.extensions_mut().insert(Unconfirmed(v));
            }
            Ok(slot)
        }
        Ok(None) => Ok(None),
        Err(e) => {
            let unauthorized = e.code == 401;
            let mut resp = RestError(e).into_response();
            if unauthorized {
                resp.headers_mut().insert(header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
            }
            Err(resp)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_lines_follow_kube_apiserver() {
        let text = "# tokens\nt1,alice,u-1,\"dev,ops\"\n\nt2,bob,u-2\n";
        let tokens = Authenticator::parse_token_file(text).unwrap();
        assert_eq!(
            tokens["t1"],
            UserInfo { name: "alice".into(), uid: "u-1".into(), groups: vec!["dev".into(), "ops".into()] }
        );
        assert_eq!(tokens["t2"].groups, Vec::<String>::new());
        assert!(Authenticator::parse_token_file("only,two").is_err());
        assert!(Authenticator::parse_token_file("t,a,1\nt,b,2").is_err(), "a token twice is ambiguous");
    }
}
