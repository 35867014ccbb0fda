//! Owns ServiceAccount tokens as kube-apiserver issues and accepts them: the signing and
//! verification keys ([`ServiceAccountTokens`], built once from PEM files and shared by
//! everything below), `POST .../serviceaccounts/{name}/token` (a TokenRequest answered
//! with a signed JWT), the checks a bearer JWT passes before it names a user, and the
//! OIDC discovery documents (`/.well-known/openid-configuration`, `/openid/v1/jwks`).
//!
//! A token is a JWS (RS256 for an RSA key; ES256 or ES384 for a P-256 or P-384 key) whose
//! header carries `kid`, the unpadded base64url SHA-256 of the key's PKIX DER (kube's
//! `keyIDFromPublicKey`), and whose claims are kube's: `iss` (the first issuer), `sub`
//! `system:serviceaccount:NS:NAME`, `aud`, `exp`, `iat`, `nbf`, `jti` and the private
//! `kubernetes.io` claim naming the namespace, the service account and the object the
//! token is bound to (a pod, with its node when it has one; a secret; or a node).
//!
//! A bearer token is accepted in two steps, because the first runs in the front layer,
//! which has the authenticator but not the node's state ([`crate::auth`]): [`ServiceAccountTokens::verify`]
//! (pure: issuer, signature by a configured key, audience), then [`check`] (the clock's
//! `exp`/`nbf`/`iat` with kube's 60 s leeway, and, as `--service-account-lookup` does by
//! default, that the service account and the bound object still exist with the uids the
//! token names), run by [`confirm`], a layer inside the front one. A failed lookup is
//! tried once more after a Most Recent read barrier, as kube falls back from its
//! informers to a live read, so a token is usable on a node that has not yet applied
//! its service account.
//!
//! Every node given the same keys and issuers issues and accepts the same tokens: nothing
//! about a token is stored.
//!
//! Worked example: `POST /api/v1/namespaces/default/serviceaccounts/build/token` with
//! `{"spec": {"expirationSeconds": 600}}` at t answers 201 with the TokenRequest, its
//! `spec.audiences` the API audiences and `status.token` a JWT whose claims are
//! `{"aud": [...], "exp": t+600, "iat": t, "iss": ..., "jti": ..., "kubernetes.io":
//! {"namespace": "default", "serviceaccount": {"name": "build", "uid": ...}}, "nbf": t,
//! "sub": "system:serviceaccount:default:build"}`; as a bearer token it then
//! authenticates as `system:serviceaccount:default:build`, groups
//! `system:serviceaccounts`, `system:serviceaccounts:default`, `system:authenticated`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use kuorum_api::registry::AUTHENTICATION_GROUP;
use kuorum_api::validation::{BadValue, FieldError};
use kuorum_api::{ApiError, GroupKind, GroupResource};
use kuorum_store::keys::ObjectKey;
use pkcs8::der::{Decode, Encode};
use pkcs8::ObjectIdentifier;
use ring::signature::{EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{json, Map, Value};
use spki::{AlgorithmIdentifierRef, SubjectPublicKeyInfoRef};

use crate::auth::UserInfo;
use crate::consistency::{wait_fresh, Freshness};
use crate::error::RestError;
use crate::negotiate::{self, json_response};
use crate::object::{self, BodyFormat};
use crate::target::Ctx;
use crate::RestState;

/// The group, version and kind a `serviceaccounts/token` POST takes and answers.
pub(crate) const TOKEN_REQUEST: (&str, &str, &str) = (AUTHENTICATION_GROUP, "v1", "TokenRequest");

/// kube's `MinTokenAgeSec`: a shorter `spec.expirationSeconds` is 422.
const MIN_EXPIRATION_SECONDS: i64 = 10 * 60;
/// The default `spec.expirationSeconds` (`SetDefaults_TokenRequestSpec`).
const DEFAULT_EXPIRATION_SECONDS: i64 = 60 * 60;
/// What a kubelet asks for a projected token volume (`WarnOnlyBoundTokenExpirationSeconds`):
/// such a pod-bound token is given a year, with `warnafter` at the hour asked for.
const WARN_ONLY_EXPIRATION_SECONDS: i64 = 60 * 60 + 7;
/// kube's `ExpirationExtensionSeconds`, the default `MaxExtendedExpiration`.
const EXTENDED_EXPIRATION_SECONDS: i64 = 24 * 365 * 60 * 60;
/// go-jose's `DefaultLeeway`, for `exp`, `nbf`, `iat` and deletion timestamps.
const LEEWAY_SECONDS: i64 = 60;
/// A bearer token longer than this is no token this server issued (kube's are about a
/// kilobyte): refused before any decoding, so hostile ones cost nothing.
const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// `extra` keys of a service account user, as kube names them.
pub const EXTRA_POD_NAME: &str = "authentication.kubernetes.io/pod-name";
pub const EXTRA_POD_UID: &str = "authentication.kubernetes.io/pod-uid";
pub const EXTRA_NODE_NAME: &str = "authentication.kubernetes.io/node-name";
pub const EXTRA_NODE_UID: &str = "authentication.kubernetes.io/node-uid";
pub const EXTRA_CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

const RSA_ENCRYPTION: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");

/// What kube-apiserver's service account flags say, as the binary reads them.
#[derive(Clone, Default)]
pub struct ServiceAccountConfig {
    /// `--service-account-signing-key-file`'s PEM: an RSA (2048 to 8192 bits) or ECDSA
    /// P-256/P-384 private key, PKCS#1, PKCS#8 or SEC1. Its public key also verifies.
    pub signing_key_pem: String,
    /// `--service-account-key-file`s' PEMs: more keys tokens may be signed with (PKIX or
    /// PKCS#1 public keys, or private keys, several blocks a file; other blocks skipped).
    pub verification_key_pems: Vec<String>,
    /// `--service-account-issuer`: the first is written into tokens, all are accepted.
    pub issuers: Vec<String>,
    /// `--api-audiences`; empty means the issuers, as kube defaults it.
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration` in seconds; 0 for none (kube's default).
    pub max_expiration_seconds: i64,
    /// `--service-account-extend-token-expiration` (kube's default: true).
    pub extend_expiration: bool,
    /// `--service-account-jwks-uri`, or `https://<external address>/openid/v1/jwks` as
    /// kube builds it. Empty (or a first issuer that is not an `https` URL without query
    /// or fragment): the OIDC discovery endpoints are not served, as kube skips them.
    pub jwks_uri: String,
}

impl std::fmt::Debug for ServiceAccountConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountConfig")
            .field("issuers", &self.issuers)
            .field("api_audiences", &self.api_audiences)
            .field("max_expiration_seconds", &self.max_expiration_seconds)
            .field("extend_expiration", &self.extend_expiration)
            .field("jwks_uri", &self.jwks_uri)
            .finish_non_exhaustive()
    }
}

/// A key tokens may be signed with, as verification and discovery need it.
struct VerificationKey {
    kid: String,
    algorithm: Algorithm,
    key: DecodingKey,
    /// Its JWK, as `/openid/v1/jwks` lists it.
    jwk: Value,
}

/// The keys, issuers and audiences of service account tokens: everything needed to
/// issue and accept them. Built once; its `Debug` shows no key.
pub struct ServiceAccountTokens {
    signing_key: EncodingKey,
    signing_algorithm: Algorithm,
    signing_kid: String,
    keys: Vec<VerificationKey>,
    /// Indices into `keys` by kid.
    keys_by_kid: HashMap<String, Vec<usize>>,
    issuers: Vec<String>,
    api_audiences: Vec<String>,
    max_expiration_seconds: i64,
    extend_expiration: bool,
    /// The discovery document and the key set, rendered once; `None`: not served.
    openid: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens")
            .field("signing_kid", &self.signing_kid)
            .field("keys", &self.keys.len())
            .field("issuers", &self.issuers)
            .field("api_audiences", &self.api_audiences)
            .finish_non_exhaustive()
    }
}

impl ServiceAccountTokens {
    /// Reads the keys; an error says which PEM is wrong and why.
    pub fn new(config: ServiceAccountConfig) -> Result<ServiceAccountTokens, String> {
        let issuers: Vec<String> = config.issuers.iter().filter(|i| !i.is_empty()).cloned().collect();
        if issuers.is_empty() {
            return Err("service-account-issuer is a required flag".into());
        }
        if config.max_expiration_seconds < 0 || config.max_expiration_seconds > 1 << 32 {
            return Err("service-account-max-token-expiration must be between 0 and 2^32 seconds".into());
        }
        let signer = signing_key(&config.signing_key_pem).map_err(|e| format!("the signing key: {e}"))?;
        let mut keys = vec![signer.public];
        for (n, pem) in config.verification_key_pems.iter().enumerate() {
            for key in public_keys(pem).map_err(|e| format!("verification key file {}: {e}", n + 1))? {
                if !keys_contain(&keys, &key.kid) {
                    keys.push(key);
                }
            }
        }
        let mut keys_by_kid: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            keys_by_kid.entry(k.kid.clone()).or_default().push(i);
        }
        let api_audiences = if config.api_audiences.is_empty() { issuers.clone() } else { config.api_audiences };
        let openid = openid_documents(&issuers[0], &config.jwks_uri, &keys);
        Ok(ServiceAccountTokens {
            signing_key: signer.key,
            signing_algorithm: signer.algorithm,
            signing_kid: signer.kid,
            keys,
            keys_by_kid,
            issuers,
            api_audiences,
            max_expiration_seconds: config.max_expiration_seconds,
            extend_expiration: config.extend_expiration,
            openid,
        })
    }

    /// The audiences the API server itself answers to (`--api-audiences`).
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// The `kid` of the signing key.
    pub fn signing_key_id(&self) -> &str {
        &self.signing_kid
    }

    /// Whether `token` is a service account token of this server, and for whom: the
    /// issuer, the signature by a configured key and the audience (one of `audiences`,
    /// the API audiences when `None`) are checked; the time and the lookups are
    /// [`check`]'s. `Ok(None)`: not a JWT of these issuers (to the caller, an unknown
    /// token); `Err`: one, but refused, kube's words for why.
    pub fn verify(&self, token: &str, audiences: Option<&[String]>) -> Result<Option<Verified>, String> {
        if token.len() > MAX_TOKEN_BYTES || !self.has_issuer(token) {
            return Ok(None);
        }
        let Ok(header) = jsonwebtoken::decode_header(token) else { return Ok(None) };
        if !matches!(header.alg, Algorithm::RS256 | Algorithm::ES256 | Algorithm::ES384) {
            return Ok(None);
        }
        let candidates: Vec<usize> = match header.kid.as_deref().filter(|k| !k.is_empty()) {
            Some(kid) => self.keys_by_kid.get(kid).cloned().unwrap_or_default(),
            None => (0..self.keys.len()).collect(),
        };
        if candidates.is_empty() {
            return Err("invalid signature, no keys found".into());
        }
        let mut validation = Validation::new(header.alg);
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        let claims = candidates
            .iter()
            .map(|&i| &self.keys[i])
            .filter(|k| k.algorithm == header.alg)
            .find_map(|k| jsonwebtoken::decode::<Value>(token, &k.key, &validation).ok())
            .map(|data| data.claims)
            .ok_or("go-jose/go-jose: error in cryptographic primitive")?;
        let issuer = claims.get("iss").and_then(Value::as_str).unwrap_or("");
        if !self.issuers.iter().any(|i| i == issuer) {
            return Err(format!("token issuer {issuer:?} is invalid"));
        }
        let mut token_audiences = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(String::from).collect(),
            _ => Vec::new(),
        };
        if token_audiences.is_empty() {
            // A legacy token: only the API server's own audiences.
            token_audiences = self.api_audiences.clone();
        }
        let requested = audiences.unwrap_or(&self.api_audiences);
        let matched: Vec<String> = token_audiences.iter().filter(|a| requested.contains(a)).cloned().collect();
        if matched.is_empty() {
            return Err(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted(&token_audiences),
                go_quoted(requested)
            ));
        }
        Ok(Some(Verified::of(&claims, matched)))
    }

    /// kube's `hasCorrectIssuer`: the unverified payload names one of the issuers.
    fn has_issuer(&self, token: &str) -> bool {
        if token.trim_start().starts_with('{') {
            return false;
        }
        let mut parts = token.split('.');
        let (Some(_), Some(payload), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return false;
        };
        let Ok(bytes) = URL_SAFE_NO_PAD.decode(payload) else { return false };
        let Ok(claims) = serde_json::from_slice::<Value>(&bytes) else { return false };
        let issuer = claims.get("iss").and_then(Value::as_str).unwrap_or("");
        self.issuers.iter().any(|i| i == issuer)
    }

    fn sign(&self, claims: &Value) -> Result<String, ApiError> {
        let mut header = Header::new(self.signing_algorithm);
        header.typ = None;
        header.kid = Some(self.signing_kid.clone());
        jsonwebtoken::encode(&header, claims, &self.signing_key)
            .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))
    }
}

/// A core/v1 object of this node's watch cache, parsed.
fn core_object(st: &RestState, plural: &str, namespace: Option<&str>, name: &str) -> Option<Value> {
    let key = ObjectKey { group: "", resource: plural, namespace, name }.encode();
    st.cache.get(&key).1.and_then(|o| o.value().cloned())
}

/// A core/v1 resource, as a 404 names it.
fn core_resource(plural: &str) -> GroupResource<'_> {
    GroupResource { group: "", resource: plural }
}

fn keys_contain(keys: &[VerificationKey], kid: &str) -> bool {
    keys.iter().any(|k| k.kid == kid)
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quoted(list: &[String]) -> String {
    format!("[{}]", list.iter().map(|a| format!("{a:?}")).collect::<Vec<_>>().join(" "))
}

/// An object a token names: its name and uid.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectRef {
    pub name: String,
    pub uid: String,
}

/// A token whose issuer, signature and audience passed: what its claims say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub namespace: String,
    pub service_account: ObjectRef,
    pub pod: Option<ObjectRef>,
    pub secret: Option<ObjectRef>,
    pub node: Option<ObjectRef>,
    pub jti: String,
    pub expires: Option<i64>,
    pub not_before: Option<i64>,
    pub issued_at: Option<i64>,
    /// The token's audiences among those asked for.
    pub audiences: Vec<String>,
}

impl Verified {
    fn of(claims: &Value, audiences: Vec<String>) -> Verified {
        let k8s = claims.get("kubernetes.io").cloned().unwrap_or(Value::Null);
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        let reference = |field: &str| {
            k8s.get(field)
                .filter(|v| v.is_object())
                .map(|r| ObjectRef { name: text(r.get("name")), uid: text(r.get("uid")) })
        };
        Verified {
            namespace: text(k8s.get("namespace")),
            service_account: reference("serviceaccount").unwrap_or_default(),
            pod: reference("pod"),
            secret: reference("secret"),
            node: reference("node"),
            jti: text(claims.get("jti")),
            expires: claims.get("exp").and_then(Value::as_i64),
            not_before: claims.get("nbf").and_then(Value::as_i64),
            issued_at: claims.get("iat").and_then(Value::as_i64),
            audiences,
        }
    }

    /// The user the token names (kube's `ServiceAccountInfo.UserInfo`), with
    /// `system:authenticated` as authentication adds it.
    pub fn user(&self) -> UserInfo {
        let mut user = UserInfo::service_account(&self.namespace, &self.service_account.name);
        user.groups.push("system:authenticated".into());
        user.uid = self.service_account.uid.clone();
        user
    }

    /// The user's `extra`, as kube sets it for this token.
    pub fn extra(&self) -> BTreeMap<String, Vec<String>> {
        let mut extra = BTreeMap::new();
        if let Some(p) = self.pod.as_ref().filter(|p| !p.name.is_empty() && !p.uid.is_empty()) {
            extra.insert(EXTRA_POD_NAME.to_string(), vec![p.name.clone()]);
            extra.insert(EXTRA_POD_UID.to_string(), vec![p.uid.clone()]);
        }
        if !self.jti.is_empty() {
            extra.insert(EXTRA_CREDENTIAL_ID.to_string(), vec![format!("JTI={}", self.jti)]);
        }
        // The node of a pod-bound token, or of a node-bound one (whose node check passed).
        if let Some(n) = self.node.as_ref().filter(|n| !n.name.is_empty()) {
            extra.insert(EXTRA_NODE_NAME.to_string(), vec![n.name.clone()]);
            if !n.uid.is_empty() {
                extra.insert(EXTRA_NODE_UID.to_string(), vec![n.uid.clone()]);
            }
        }
        extra
    }
}

/// What verification alone cannot say: that the token is within its time (by the node's
/// clock) and that its service account and bound object still exist with its uids. A
/// failed lookup is retried once after a read barrier (see the module docs).
pub(crate) async fn check(st: &RestState, v: &Verified) -> Result<(), String> {
    let now = st.clock.now_unix_seconds();
    if v.not_before.is_some_and(|nbf| now + LEEWAY_SECONDS < nbf) {
        return Err("service account token is not valid yet".into());
    }
    if v.expires.is_some_and(|exp| now - LEEWAY_SECONDS > exp) {
        return Err("service account token has expired".into());
    }
    if v.issued_at.is_some_and(|iat| now + LEEWAY_SECONDS < iat) {
        return Err("service account token is issued in the future".into());
    }
    match lookup(st, v, now) {
        Ok(()) => Ok(()),
        Err(first) => {
            if wait_fresh(st, Freshness::MostRecent).await.is_err() {
                return Err(first);
            }
            lookup(st, v, now)
        }
    }
}

/// kube's validator: the service account, then the secret, the pod, or (bound to a node
/// alone) the node, each present, with the uid in the token, and not deleted before the
/// leeway.
fn lookup(st: &RestState, v: &Verified, now: i64) -> Result<(), String> {
    let ns = v.namespace.as_str();
    let sa = &v.service_account;
    let get = |plural: &str, namespace: Option<&str>, name: &str| core_object(st, plural, namespace, name);
    let deleted_long_ago = |obj: &Value| {
        obj.pointer("/metadata/deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(kuorum_api::time::unix_seconds)
            .is_some_and(|t| t < now - LEEWAY_SECONDS)
    };
    let uid = |obj: &Value| obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_string();
    let found =
        get("serviceaccounts", Some(ns), &sa.name).ok_or_else(|| format!("serviceaccounts {:?} not found", sa.name))?;
    if uid(&found) != sa.uid {
        return Err(format!("service account UID ({}) does not match claim ({})", uid(&found), sa.uid));
    }
    if deleted_long_ago(&found) {
        return Err(format!("service account {ns}/{} has been deleted", sa.name));
    }
    const INVALIDATED: &str = "service account token has been invalidated";
    if let Some(r) = &v.secret {
        let found = get("secrets", Some(ns), &r.name).ok_or(INVALIDATED)?;
        if uid(&found) != r.uid {
            return Err(format!(
                "secret UID ({}) does not match service account secret ref claim ({})",
                uid(&found),
                r.uid
            ));
        }
        if deleted_long_ago(&found) {
            return Err(INVALIDATED.into());
        }
    }
    if let Some(r) = &v.pod {
        let found = get("pods", Some(ns), &r.name).ok_or(INVALIDATED)?;
        if uid(&found) != r.uid {
            return Err(format!("pod UID ({}) does not match service account pod ref claim ({})", uid(&found), r.uid));
        }
        if deleted_long_ago(&found) {
            return Err(INVALIDATED.into());
        }
    }
    if let (Some(r), None) = (&v.node, &v.pod) {
        let found = get("nodes", None, &r.name).ok_or(INVALIDATED)?;
        if uid(&found) != r.uid {
            return Err(format!(
                "node UID ({}) does not match service account node ref claim ({})",
                uid(&found),
                r.uid
            ));
        }
        if deleted_long_ago(&found) {
            return Err(INVALIDATED.into());
        }
    }
    Ok(())
}

/// A service account token the front layer verified, waiting for [`confirm`].
#[derive(Debug, Clone)]
pub(crate) struct Unconfirmed(pub Verified);

/// The layer (installed when service account tokens are configured) that finishes what
/// the front layer began for a service account bearer token: [`check`], then the request
/// goes on, or 401 as kube answers a token it does not accept.
pub(crate) async fn confirm(State(st): State<Arc<RestState>>, mut req: Request, next: Next) -> Response {
    let Some(Unconfirmed(verified)) = req.extensions_mut().remove::<Unconfirmed>() else {
        return next.run(req).await;
    };
    match check(&st, &verified).await {
        Ok(()) => next.run(req).await,
        Err(why) => {
            tracing::debug!("service account token refused: {why}");
            let mut resp = RestError(ApiError::unauthorized()).into_response();
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            resp
        }
    }
}

/// `GET /.well-known/openid-configuration` (404 when not served, as kube without a
/// usable issuer URL and JWKS URI).
pub(crate) async fn openid_configuration(State(st): State<Arc<RestState>>) -> Response {
    openid_answer(&st, |(config, _)| (config.clone(), negotiate::JSON))
}

/// `GET /openid/v1/jwks`.
pub(crate) async fn openid_keyset(State(st): State<Arc<RestState>>) -> Response {
    openid_answer(&st, |(_, keyset)| (keyset.clone(), "application/jwk-set+json"))
}

fn openid_answer(st: &RestState, pick: impl Fn(&(Vec<u8>, Vec<u8>)) -> (Vec<u8>, &'static str)) -> Response {
    let Some(docs) = st.auth.service_account_tokens().and_then(|t| t.openid.as_ref()) else {
        return RestError(ApiError::path_not_found()).into_response();
    };
    let (body, content_type) = pick(docs);
    let mut resp = negotiate::json_response_as(StatusCode::OK, content_type, body);
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600"));
    resp
}

/// kube's `NewOpenIDMetadataProvider`: only for an `https` issuer URL without query or
/// fragment, and an `https` JWKS URI.
fn openid_documents(issuer: &str, jwks_uri: &str, keys: &[VerificationKey]) -> Option<(Vec<u8>, Vec<u8>)> {
    let https_url = |u: &str| u.starts_with("https://") && u.len() > "https://".len();
    if !https_url(issuer) || issuer.contains(['?', '#']) || !https_url(jwks_uri) {
        return None;
    }
    let mut algorithms: Vec<&str> = keys.iter().map(|k| algorithm_name(k.algorithm)).collect();
    algorithms.sort_unstable();
    algorithms.dedup();
    let config = json!({
        "issuer": issuer,
        "jwks_uri": jwks_uri,
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": algorithms,
    });
    let keyset = json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
    Some((serde_json::to_vec(&config).ok()?, serde_json::to_vec(&keyset).ok()?))
}

fn algorithm_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::ES256 => "ES256",
        Algorithm::ES384 => "ES384",
        _ => "RS256",
    }
}

/// `POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`: kube's `TokenREST.Create`
/// (see the module docs). 404 when no keys are configured, as kube serves no such path.
pub(crate) async fn create_token(st: &RestState, ctx: Ctx) -> Result<Response, ApiError> {
    let Some(tokens) = st.auth.service_account_tokens().cloned() else {
        return Err(ApiError::path_not_found());
    };
    let gk = GroupKind { group: TOKEN_REQUEST.0, kind: TOKEN_REQUEST.2 };
    let namespace = ctx.target.namespace.clone().unwrap_or_default();
    let name = ctx.target.name().to_string();
    let format = BodyFormat::of(&ctx.headers)?;
    let body = negotiate::read_body(&ctx.headers, ctx.body).await?;
    let mut req = object::decode_body(format, body).await?;
    check_type_meta(&req)?;
    let meta = req.get("metadata").and_then(Value::as_object).cloned().unwrap_or_default();
    let meta_str = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let spec = req.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v.as_i64().ok_or_else(|| {
            ApiError::bad_request(format!("TokenRequest in version \"v1\" cannot be handled as a TokenRequest: spec.expirationSeconds: expected an integer, got {v}"))
        })?,
    };
    let given_name = meta_str("name");
    if !given_name.is_empty() && given_name != name {
        let e = FieldError::invalid("metadata.name", &given_name, "must match the service account name if specified");
        return Err(ApiError::invalid(gk, &name, &[e]));
    }
    let given_namespace = meta_str("namespace");
    if !given_namespace.is_empty() && given_namespace != namespace {
        let e = FieldError::invalid(
            "metadata.namespace",
            &given_namespace,
            "must match the service account namespace if specified",
        );
        return Err(ApiError::invalid(gk, &name, &[e]));
    }

    wait_fresh(st, Freshness::MostRecent).await?;
    let get = |plural: &str, ns: Option<&str>, obj: &str| core_object(st, plural, ns, obj);
    let sa = get("serviceaccounts", Some(&namespace), &name)
        .ok_or_else(|| ApiError::not_found(core_resource("serviceaccounts"), &name))?;
    let uid_of = |o: &Value| o.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_string();
    let sa_uid = uid_of(&sa);
    let given_uid = meta_str("uid");
    if !given_uid.is_empty() && given_uid != sa_uid {
        let gr = GroupResource { group: TOKEN_REQUEST.0, resource: TOKEN_REQUEST.2 };
        let why = format!(
            "the UID in the token request ({given_uid}) does not match the UID of the service account ({sa_uid})"
        );
        return Err(ApiError::conflict_because(gr, &name, &why));
    }
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => a.iter().map(|v| v.as_str().unwrap_or("").to_string()).collect(),
        _ => tokens.api_audiences.clone(),
    };
    let now = st.clock.now_unix_seconds();
    if expiration < MIN_EXPIRATION_SECONDS {
        let e = FieldError::invalid_value(
            "spec.expirationSeconds",
            BadValue::Raw(expiration.to_string()),
            "may not specify a duration less than 10 minutes",
        );
        return Err(ApiError::invalid(gk, "", &[e]));
    }
    if expiration > 1 << 32 {
        let e = FieldError::invalid_value(
            "spec.expirationSeconds",
            BadValue::Raw(expiration.to_string()),
            "may not specify a duration larger than 2^32 seconds",
        );
        return Err(ApiError::invalid(gk, "", &[e]));
    }

    crate::admission::validate_token_request(st, ctx.user.as_ref(), &ctx.target, &spec)?;
    let bound_ref = spec.get("boundObjectRef").and_then(Value::as_object).cloned();
    let bound = match &bound_ref {
        Some(r) => Some(bound_object(st, r, &namespace, &name)?),
        None => None,
    };

    let mut warnings = Vec::new();
    let mut expiration = expiration;
    if tokens.max_expiration_seconds > 0 && expiration > tokens.max_expiration_seconds {
        warnings.push(format!(
            "requested expiration of {expiration} seconds shortened to {} seconds",
            tokens.max_expiration_seconds
        ));
        expiration = tokens.max_expiration_seconds;
    }
    // The projected-volume transition: a pod-bound token for the API server asked for
    // 3607 s lives a year, and says from when on its use is stale.
    let pod_bound = matches!(bound, Some(Bound::Pod { .. }));
    let (lifetime, warn_after) = if tokens.extend_expiration
        && pod_bound
        && expiration == WARN_ONLY_EXPIRATION_SECONDS
        && audiences.iter().all(|a| tokens.api_audiences.contains(a))
    {
        (EXTENDED_EXPIRATION_SECONDS, Some(expiration))
    } else {
        (expiration, None)
    };

    let mut k8s = Map::new();
    k8s.insert("namespace".into(), json!(namespace));
    let reference = |r: &ObjectRef| {
        let mut m = Map::new();
        if !r.name.is_empty() {
            m.insert("name".into(), json!(r.name));
        }
        if !r.uid.is_empty() {
            m.insert("uid".into(), json!(r.uid));
        }
        Value::Object(m)
    };
    match &bound {
        Some(Bound::Pod { pod, node }) => {
            if let Some(n) = node {
                k8s.insert("node".into(), reference(n));
            }
            k8s.insert("pod".into(), reference(pod));
        }
        Some(Bound::Secret(s)) => {
            k8s.insert("secret".into(), reference(s));
        }
        Some(Bound::Node(n)) => {
            k8s.insert("node".into(), reference(n));
        }
        None => {}
    }
    k8s.insert("serviceaccount".into(), reference(&ObjectRef { name: name.clone(), uid: sa_uid.clone() }));
    if let Some(w) = warn_after {
        k8s.insert("warnafter".into(), json!(now + w));
    }
    // go-jose writes the claims as a Go map: keys sorted at every level.
    let claims = json!({
        "aud": audiences,
        "exp": now + lifetime,
        "iat": now,
        "iss": tokens.issuers[0],
        "jti": kuorum_api::seams::new_uid(st.entropy.as_ref()),
        "kubernetes.io": Value::Object(k8s),
        "nbf": now,
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
    });
    let token = tokens.sign(&claims)?;

    let mut out_meta = Map::new();
    out_meta.insert("name".into(), json!(name));
    out_meta.insert("namespace".into(), json!(namespace));
    out_meta.insert("uid".into(), json!(sa_uid));
    out_meta.insert("creationTimestamp".into(), json!(kuorum_api::time::format(now)));
    for (k, v) in meta {
        out_meta.entry(k).or_insert(v);
    }
    let mut out_spec = Map::new();
    out_spec.insert("audiences".into(), json!(audiences));
    out_spec.insert("expirationSeconds".into(), json!(expiration));
    if let Some(r) = bound_ref {
        out_spec.insert("boundObjectRef".into(), Value::Object(r));
    }
    req.insert("metadata".into(), Value::Object(out_meta));
    req.insert("spec".into(), Value::Object(out_spec));
    req.insert(
        "status".into(),
        json!({"token": token, "expirationTimestamp": kuorum_api::time::format(now + expiration)}),
    );
    let resp = json_response(StatusCode::CREATED, object::to_vec(&req));
    Ok(crate::fields::with_warnings(resp, &warnings))
}

/// A body of another apiVersion or kind than `authentication.k8s.io/v1` TokenRequest is
/// 400, as for any create; missing ones are filled in.
fn check_type_meta(req: &Map<String, Value>) -> Result<(), ApiError> {
    let (group, version, kind) = TOKEN_REQUEST;
    let expected_version = format!("{group}/{version}");
    match req.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != expected_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected_version})"
            )))
        }
        _ => {}
    }
    match req.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != kind => {
            Err(ApiError::bad_request(format!("the kind in the data ({k}) does not match the expected kind ({kind})")))
        }
        _ => Ok(()),
    }
}

/// The object a token is bound to, as found.
enum Bound {
    /// A pod, and its node when it is scheduled (the node's uid when the node exists).
    Pod {
        pod: ObjectRef,
        node: Option<ObjectRef>,
    },
    Secret(ObjectRef),
    Node(ObjectRef),
}

/// kube's `boundObjectRef` handling: a Pod (running as this service account) or Secret in
/// the namespace, or a Node; it must exist (404), and have the uid given (409).
fn bound_object(st: &RestState, r: &Map<String, Value>, namespace: &str, sa_name: &str) -> Result<Bound, ApiError> {
    let get = |plural: &str, ns: Option<&str>, obj: &str| core_object(st, plural, ns, obj);
    let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind, name, wanted_uid) = (text("apiVersion"), text("kind"), text("name"), text("uid"));
    // apimachinery's FromAPIVersionAndKind: an unparsable apiVersion leaves only the kind.
    let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
        [""] => ("", ""),
        [v] => ("", v),
        [g, v] => (g, v),
        _ => ("", ""),
    };
    let uid_of = |o: &Value| o.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_string();
    let (bound, uid) = match (group, kind) {
        ("", "Pod") => {
            let p =
                get("pods", Some(namespace), name).ok_or_else(|| ApiError::not_found(core_resource("pods"), name))?;
            if p.pointer("/spec/serviceAccountName").and_then(Value::as_str).unwrap_or("") != sa_name {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {sa_name:?} to pod running with different serviceaccount name."
                )));
            }
            let node_name = p.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
            // A node not (or no longer) there still names the pod's node, without a uid.
            let node = (!node_name.is_empty()).then(|| ObjectRef {
                name: node_name.to_string(),
                uid: get("nodes", None, node_name).map(|n| uid_of(&n)).unwrap_or_default(),
            });
            let uid = uid_of(&p);
            (Bound::Pod { pod: ObjectRef { name: name.to_string(), uid: uid.clone() }, node }, uid)
        }
        ("", "Node") => {
            let n = get("nodes", None, name).ok_or_else(|| ApiError::not_found(core_resource("nodes"), name))?;
            let uid = uid_of(&n);
            (Bound::Node(ObjectRef { name: name.to_string(), uid: uid.clone() }), uid)
        }
        ("", "Secret") => {
            let s = get("secrets", Some(namespace), name)
                .ok_or_else(|| ApiError::not_found(core_resource("secrets"), name))?;
            let uid = uid_of(&s);
            (Bound::Secret(ObjectRef { name: name.to_string(), uid: uid.clone() }), uid)
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )))
        }
    };
    if !wanted_uid.is_empty() && wanted_uid != uid {
        let why = format!(
            "the UID in the bound object reference ({wanted_uid}) does not match the UID in record. The object might have been deleted and then recreated"
        );
        return Err(ApiError::conflict_because(GroupResource { group, resource: kind }, name, &why));
    }
    Ok(bound)
}

// ---- keys ----

/// The signing key and its public half.
struct SigningKey {
    key: EncodingKey,
    algorithm: Algorithm,
    kid: String,
    public: VerificationKey,
}

/// The first private key in `pem`.
fn signing_key(pem: &str) -> Result<SigningKey, String> {
    let blocks = pem::parse_many(pem).map_err(|e| format!("not PEM: {e}"))?;
    for block in &blocks {
        if let Some(found) = private_key(block.tag(), block.contents())? {
            return Ok(found);
        }
    }
    Err("no RSA or ECDSA private key (RSA PRIVATE KEY, EC PRIVATE KEY or PRIVATE KEY block) found".into())
}

/// A private key block, read: `Ok(None)` for a block of another type.
fn private_key(tag: &str, der: &[u8]) -> Result<Option<SigningKey>, String> {
    let rng = ring::rand::SystemRandom::new();
    let rsa = |pair: RsaKeyPair, pkcs1: Vec<u8>| -> Result<Option<SigningKey>, String> {
        let public = rsa_public_key(pair.public().as_ref())?;
        Ok(Some(SigningKey {
            key: EncodingKey::from_rsa_der(&pkcs1),
            algorithm: Algorithm::RS256,
            kid: public.kid.clone(),
            public,
        }))
    };
    let ec = |pkcs8_der: Vec<u8>, curve: ObjectIdentifier| -> Result<Option<SigningKey>, String> {
        let (ring_alg, algorithm) = ec_algorithm(curve)?;
        let pair = EcdsaKeyPair::from_pkcs8(ring_alg, &pkcs8_der, &rng).map_err(|e| format!("EC key: {e}"))?;
        let public = ec_public_key(curve, pair.public_key().as_ref())?;
        Ok(Some(SigningKey { key: EncodingKey::from_ec_der(&pkcs8_der), algorithm, kid: public.kid.clone(), public }))
    };
    match tag {
        "RSA PRIVATE KEY" => {
            let pair = RsaKeyPair::from_der(der).map_err(|e| format!("RSA key: {e}"))?;
            rsa(pair, der.to_vec())
        }
        "PRIVATE KEY" => {
            let info = pkcs8::PrivateKeyInfo::from_der(der).map_err(|e| format!("PKCS#8 key: {e}"))?;
            if info.algorithm.oid == RSA_ENCRYPTION {
                let pair = RsaKeyPair::from_pkcs8(der).map_err(|e| format!("RSA key: {e}"))?;
                rsa(pair, info.private_key.to_vec())
            } else if info.algorithm.oid == EC_PUBLIC_KEY {
                let curve =
                    info.algorithm.parameters_oid().map_err(|e| format!("EC key without a named curve: {e}"))?;
                ec(der.to_vec(), curve)
            } else {
                Err(format!("unsupported private key algorithm {}", info.algorithm.oid))
            }
        }
        "EC PRIVATE KEY" => {
            let key = sec1::EcPrivateKey::from_der(der).map_err(|e| format!("EC key: {e}"))?;
            let curve = key.parameters.and_then(|p| p.named_curve()).ok_or("EC key without a named curve")?;
            // ring reads EC keys as PKCS#8: wrap the SEC1 key as openssl's pkcs8 does.
            let params = pkcs8::der::asn1::AnyRef::from(&curve);
            let info = pkcs8::PrivateKeyInfo {
                algorithm: AlgorithmIdentifierRef { oid: EC_PUBLIC_KEY, parameters: Some(params) },
                private_key: der,
                public_key: None,
            };
            ec(info.to_der().map_err(|e| format!("EC key: {e}"))?, curve)
        }
        _ => Ok(None),
    }
}

/// Every key a verification key file holds, as kube's `ParsePublicKeysPEM` reads it:
/// public keys and the public halves of private keys; other blocks are skipped, and a
/// file without any key is an error.
fn public_keys(pem: &str) -> Result<Vec<VerificationKey>, String> {
    let blocks = pem::parse_many(pem).map_err(|e| format!("not PEM: {e}"))?;
    let mut keys = Vec::new();
    for block in &blocks {
        let der = block.contents();
        match block.tag() {
            "PUBLIC KEY" => {
                let info = SubjectPublicKeyInfoRef::from_der(der).map_err(|e| format!("public key: {e}"))?;
                let bits = info.subject_public_key.as_bytes().ok_or("public key: not whole bytes")?;
                if info.algorithm.oid == RSA_ENCRYPTION {
                    keys.push(rsa_public_key(bits)?);
                } else if info.algorithm.oid == EC_PUBLIC_KEY {
                    let curve = info.algorithm.parameters_oid().map_err(|e| format!("EC public key: {e}"))?;
                    keys.push(ec_public_key(curve, bits)?);
                } else {
                    return Err(format!("unsupported public key algorithm {}", info.algorithm.oid));
                }
            }
            "RSA PUBLIC KEY" => keys.push(rsa_public_key(der)?),
            tag => {
                if let Some(k) = private_key(tag, der)? {
                    keys.push(k.public);
                }
            }
        }
    }
    if keys.is_empty() {
        return Err("data does not contain any valid RSA or ECDSA public keys".into());
    }
    Ok(keys)
}

fn ec_algorithm(
    curve: ObjectIdentifier,
) -> Result<(&'static ring::signature::EcdsaSigningAlgorithm, Algorithm), String> {
    if curve == P256 {
        Ok((&ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING, Algorithm::ES256))
    } else if curve == P384 {
        Ok((&ring::signature::ECDSA_P384_SHA384_FIXED_SIGNING, Algorithm::ES384))
    } else {
        Err(format!("unsupported EC curve {curve}: P-256 or P-384"))
    }
}

/// kube's `keyIDFromPublicKey`: unpadded base64url of the SHA-256 of the PKIX DER.
fn key_id(algorithm: AlgorithmIdentifierRef<'_>, key: &[u8]) -> Result<String, String> {
    let bits = spki::der::asn1::BitStringRef::from_bytes(key).map_err(|e| e.to_string())?;
    let der = SubjectPublicKeyInfoRef { algorithm, subject_public_key: bits }.to_der().map_err(|e| e.to_string())?;
    Ok(URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, &der)))
}

/// An RSA public key from its PKCS#1 DER.
fn rsa_public_key(pkcs1: &[u8]) -> Result<VerificationKey, String> {
    let parsed = pkcs1::RsaPublicKey::from_der(pkcs1).map_err(|e| format!("RSA public key: {e}"))?;
    let kid = key_id(
        AlgorithmIdentifierRef { oid: RSA_ENCRYPTION, parameters: Some(pkcs8::der::asn1::AnyRef::NULL) },
        pkcs1,
    )?;
    let (n, e) = (parsed.modulus.as_bytes(), parsed.public_exponent.as_bytes());
    let jwk = json!({"use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256",
                     "n": URL_SAFE_NO_PAD.encode(n), "e": URL_SAFE_NO_PAD.encode(e)});
    Ok(VerificationKey { kid, algorithm: Algorithm::RS256, key: DecodingKey::from_rsa_der(pkcs1), jwk })
}

/// An EC public key from its curve and uncompressed point.
fn ec_public_key(curve: ObjectIdentifier, point: &[u8]) -> Result<VerificationKey, String> {
    let (_, algorithm) = ec_algorithm(curve)?;
    let size = if curve == P256 { 32 } else { 48 };
    if point.len() != 1 + 2 * size || point[0] != 4 {
        return Err("EC public key: not an uncompressed point of its curve".into());
    }
    let kid = key_id(
        AlgorithmIdentifierRef { oid: EC_PUBLIC_KEY, parameters: Some(pkcs8::der::asn1::AnyRef::from(&curve)) },
        point,
    )?;
    let (crv, alg) = if curve == P256 { ("P-256", "ES256") } else { ("P-384", "ES384") };
    let jwk = json!({"use": "sig", "kty": "EC", "kid": kid, "crv": crv, "alg": alg,
                     "x": URL_SAFE_NO_PAD.encode(&point[1..1 + size]), "y": URL_SAFE_NO_PAD.encode(&point[1 + size..])});
    Ok(VerificationKey { kid, algorithm, key: DecodingKey::from_ec_der(point), jwk })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audiences_are_quoted_as_go_quotes_a_string_slice() {
        assert_eq!(go_quoted(&["a".into(), "b c".into()]), r#"["a" "b c"]"#);
        assert_eq!(go_quoted(&[]), "[]");
    }

    #[test]
    fn a_config_without_issuer_or_key_is_refused_with_the_reason() {
        let e = ServiceAccountTokens::new(ServiceAccountConfig::default()).unwrap_err();
        assert_eq!(e, "service-account-issuer is a required flag");
        let no_key = ServiceAccountConfig { issuers: vec!["https://k".into()], ..Default::default() };
        assert!(ServiceAccountTokens::new(no_key).unwrap_err().starts_with("the signing key: "));
    }
}
