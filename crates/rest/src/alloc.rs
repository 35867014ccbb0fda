//! Owns claiming and freeing pool values (a Service's cluster IP and node ports) around
//! the writes of kinds that hold them ([`kuorum_api::kinds::allocation`]).
//!
//! A value is claimed by proposing the create of its claim object (an `IPAddress`, a
//! node-port entry) before the object that holds it is written: the log orders the
//! claims, and the replicated apply refuses the second create of one key, so two objects
//! never hold one value whichever nodes took them. Claims a failed write made are freed
//! again; those a write gave up are freed after it succeeds; a deleted object's are freed
//! once it is gone. Each free is conditional on the claim's uid, so it never frees a
//! value someone else claimed since.

use kuorum_api::kinds::allocation::{self, Allocating, Held, Parent, Pool, Pools};
use kuorum_api::seams::new_uid;
use kuorum_api::ApiError;
use kuorum_store::keys::ObjectKey;
use kuorum_store::{Command, Precondition, WriteError};
use serde_json::Value;

use crate::error::cluster_error;
use crate::object::{self, Object};
use crate::target::Target;
use crate::RestState;

/// Random values tried in the dynamic band before the pool is searched in order.
const RANDOM_TRIES: usize = 16;
/// Claims proposed for one value before its pool counts as full (other writers may be
/// taking the free values the search finds).
const MAX_PROPOSALS: usize = 64;

/// The claims one write made, and the values the object it replaces held and it does not.
#[derive(Debug, Default)]
#[must_use = "a write's claims are settled after it"]
pub(crate) struct Claims {
    /// (key, uid) of each claim object this write created.
    made: Vec<(String, String)>,
    /// What the old object held that the new one does not.
    given_up: Vec<Held>,
    owner: Option<Owner>,
}

/// The object that holds the values, as its claims name it.
#[derive(Debug, Clone)]
struct Owner {
    group: &'static str,
    resource: &'static str,
    namespace: Option<String>,
    name: String,
}

impl Owner {
    fn of(t: &Target, obj: &Object) -> Owner {
        Owner {
            group: t.def.group,
            resource: t.def.plural,
            namespace: object::meta_str(obj, "namespace").map(str::to_string).or_else(|| t.namespace.clone()),
            name: object::meta_str(obj, "name").unwrap_or("").to_string(),
        }
    }

    fn parent(&self) -> Parent<'_> {
        Parent { group: self.group, resource: self.resource, namespace: self.namespace.as_deref(), name: &self.name }
    }
}

/// The key of the object that claims `value` of `pool`.
fn claim_key(pool: Pool, value: &str) -> String {
    match pool {
        Pool::ServiceIp => {
            ObjectKey { group: "networking.k8s.io", resource: "ipaddresses", namespace: None, name: value }.encode()
        }
        // Where kube keeps its node-port bitmap (`/registry/ranges/servicenodeports`),
        // one entry per port; no resource serves it.
        Pool::NodePort => format!("/registry/ranges/servicenodeports/{value}"),
    }
}

/// Claims what `obj` (replacing `old`, whose values `strategy::before_write` carried
/// over) holds and `old` did not, and allocates what it needs and leaves empty, filling
/// it in. On an error nothing stays claimed.
pub(crate) async fn claim(
    st: &RestState,
    t: &Target,
    old: Option<&Object>,
    obj: &mut Object,
) -> Result<Claims, ApiError> {
    let Some(kind) = t.strategy().and_then(|s| s.allocating()) else { return Ok(Claims::default()) };
    let held_before = old.map(|o| kind.held(o)).unwrap_or_default();
    let held = kind.held(obj);
    let mut claims = Claims {
        given_up: held_before
            .iter()
            .filter(|h| !held.iter().any(|n| n.pool == h.pool && n.value == h.value))
            .cloned()
            .collect(),
        owner: Some(Owner::of(t, obj)),
        ..Claims::default()
    };
    let result = claim_all(st, t, kind, &held_before, &held, obj, &mut claims).await;
    if let Err(e) = result {
        free_made(st, &claims).await;
        return Err(e);
    }
    Ok(claims)
}

async fn claim_all(
    st: &RestState,
    t: &Target,
    kind: &dyn Allocating,
    held_before: &[Held],
    held: &[Held],
    obj: &mut Object,
    claims: &mut Claims,
) -> Result<(), ApiError> {
    let name = object::meta_str(obj, "name").unwrap_or("").to_string();
    let invalid = |h: &Held, obj: &Object, why: &str| {
        ApiError::invalid(t.def.group_kind(), &name, &[allocation::claim_error(h, obj, why)])
    };
    for h in held.iter().filter(|h| !held_before.iter().any(|b| b.pool == h.pool && b.value == h.value)) {
        st.pools.check(h.pool, &h.value).map_err(|why| invalid(h, obj, &why))?;
        if !try_claim(st, t, obj, h.pool, &h.value, claims).await? {
            return Err(invalid(h, obj, allocation::taken(h.pool)));
        }
    }
    let mut values = Vec::new();
    for pool in kind.wanted(obj) {
        values.push(allocate(st, t, obj, pool, claims).await?);
    }
    kind.fill(obj, &values);
    Ok(())
}

/// Picks a free value of `pool` and claims it: random ones of the dynamic band first,
/// then the pool in order from a random place, skipping values this node sees taken.
async fn allocate(
    st: &RestState,
    t: &Target,
    obj: &Object,
    pool: Pool,
    claims: &mut Claims,
) -> Result<String, ApiError> {
    let pools: &Pools = &st.pools;
    let size = pools.size(pool);
    let band = pools.dynamic_band(pool);
    let start = st.entropy.next_u64() % size;
    let random = (0..RANDOM_TRIES).map(|_| band.start + st.entropy.next_u64() % (band.end - band.start));
    let in_order = (0..size).map(|i| (start + i) % size);
    let mut proposals = 0;
    for i in random.chain(in_order) {
        let value = pools.nth(pool, i);
        if st.cache.get(&claim_key(pool, &value)).1.is_some() {
            continue;
        }
        if try_claim(st, t, obj, pool, &value, claims).await? {
            return Ok(value);
        }
        proposals += 1;
        if proposals >= MAX_PROPOSALS {
            break;
        }
    }
    Err(ApiError::internal(allocation::full(pool)))
}

/// Proposes the claim of `value`; whether this write holds it now. An existing claim is
/// never counted as this write's: one naming this object that the stored object does not
/// hold (left by an earlier attempt that failed) is deleted and made again; any other
/// means the value is taken (a racing write of the same object may be about to hold it).
async fn try_claim(
    st: &RestState,
    t: &Target,
    obj: &Object,
    pool: Pool,
    value: &str,
    claims: &mut Claims,
) -> Result<bool, ApiError> {
    let owner = Owner::of(t, obj);
    let key = claim_key(pool, value);
    for _ in 0..2 {
        let uid = new_uid(&*st.entropy);
        let claim = allocation::claim_object(pool, value, &owner.parent(), &uid, &st.clock.now_rfc3339());
        let cmd = Command::Create { key: key.clone(), namespace: None, object: object::to_vec(&claim).into() };
        match st.cluster.write(cmd, st.request_timeout).await.map_err(cluster_error)? {
            Ok(_) => {
                claims.made.push((key, uid));
                return Ok(true);
            }
            Err(WriteError::AlreadyExists) => {
                let Some((existing_uid, stale)) = stale_claim(st, t, &owner, &key, pool, value)? else {
                    return Ok(false);
                };
                if !stale {
                    return Ok(false);
                }
                delete_claim(st, &key, &existing_uid).await;
            }
            Err(e) => return Err(ApiError::internal(format!("claiming {value}: {e}"))),
        }
    }
    Ok(false)
}

/// The claim at `key` (read from the log's state, not the cache): its uid, and whether it
/// names `owner` while the stored owner does not hold the value. `None` when it is gone.
fn stale_claim(
    st: &RestState,
    t: &Target,
    owner: &Owner,
    key: &str,
    pool: Pool,
    value: &str,
) -> Result<Option<(String, bool)>, ApiError> {
    let Some(bytes) = st.cluster.get(key).map_err(cluster_error)? else { return Ok(None) };
    let Ok(claim) = serde_json::from_slice::<Value>(&bytes) else { return Ok(None) };
    let uid = claim.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("").to_string();
    if !owner.parent().owns(&claim) {
        return Ok(Some((uid, false)));
    }
    let owner_key = ObjectKey {
        group: t.storage_def().group,
        resource: t.storage_def().plural,
        namespace: owner.namespace.as_deref(),
        name: &owner.name,
    }
    .encode();
    let holds = match st.cluster.get(&owner_key).map_err(cluster_error)? {
        Some(stored) => {
            let stored = object::parse_stored(&stored)?;
            let kind = t.strategy().and_then(|s| s.allocating());
            kind.is_some_and(|k| k.held(&stored).iter().any(|h| h.pool == pool && h.value == value))
        }
        None => false,
    };
    Ok(Some((uid, !holds)))
}

/// After the write the claims were made for (`written`: whether it was, `None` when its
/// outcome is unknown): frees what it gave up when it succeeded, what it claimed when it
/// was refused, nothing when it may or may not have happened.
pub(crate) async fn settle(st: &RestState, claims: Claims, written: Option<bool>) {
    match written {
        Some(true) => free_held(st, claims.owner.as_ref(), &claims.given_up).await,
        Some(false) => free_made(st, &claims).await,
        None => {}
    }
}

/// `result` (what the write will carry, made after the claims), freeing the claims first
/// when it is an error: the write will not be proposed.
pub(crate) async fn checked<T>(
    st: &RestState,
    claims: Claims,
    result: Result<T, ApiError>,
) -> Result<(T, Claims), ApiError> {
    match result {
        Ok(v) => Ok((v, claims)),
        Err(e) => {
            settle(st, claims, Some(false)).await;
            Err(e)
        }
    }
}

/// Whether a write's result says it happened (`None`: unknown).
pub(crate) fn written<T, E>(result: &Result<Result<T, WriteError>, E>) -> Option<bool> {
    match result {
        Ok(Ok(_)) => Some(true),
        Ok(Err(_)) => Some(false),
        Err(_) => None,
    }
}

/// After a delete answered `stored`: frees what the object held if it is gone (not
/// only marked, waiting for its finalizers).
pub(crate) async fn free_deleted(st: &RestState, t: &Target, stored: &[u8]) {
    let Some(kind) = t.strategy().and_then(|s| s.allocating()) else { return };
    let Ok(obj) = object::parse_stored(stored) else { return };
    let finalizers = object::meta(&obj).and_then(|m| m.get("finalizers")).and_then(Value::as_array);
    if finalizers.is_some_and(|f| !f.is_empty()) {
        return;
    }
    free_held(st, Some(&Owner::of(t, &obj)), &kind.held(&obj)).await;
}

async fn free_made(st: &RestState, claims: &Claims) {
    for (key, uid) in &claims.made {
        delete_claim(st, key, uid).await;
    }
}

/// Frees each of `held` whose claim names `parent` (a value the object never managed to
/// claim may be another's).
async fn free_held(st: &RestState, owner: Option<&Owner>, held: &[Held]) {
    let Some(owner) = owner else { return };
    if held.is_empty() {
        return;
    }
    // The claims may be newer than this node's state (made through another node).
    if let Err(e) = st.cluster.read_barrier(st.request_timeout).await {
        tracing::warn!(error = %e, "freeing pool values: no read barrier");
        return;
    }
    for h in held {
        let key = claim_key(h.pool, &h.value);
        let Ok(Some(bytes)) = st.cluster.get(&key) else { continue };
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else { continue };
        let v = &v;
        if !owner.parent().owns(v) {
            continue;
        }
        if let Some(uid) = v.pointer("/metadata/uid").and_then(Value::as_str) {
            delete_claim(st, &key, uid).await;
        }
    }
}

/// Deletes one claim, if it is still the one with `uid`. A failure leaves the value held
/// until its claim is deleted by hand (see docs/conformance.md).
async fn delete_claim(st: &RestState, key: &str, uid: &str) {
    let precondition = Precondition { uid: Some(uid.to_string()), ..Precondition::default() };
    let cmd = Command::Delete {
        key: key.to_string(),
        precondition,
        deletion_timestamp: None,
        finalizing: Default::default(),
    };
    if let Err(e) = st.cluster.write(cmd, st.request_timeout).await {
        tracing::warn!(key, error = %e, "freeing a pool value failed");
    }
}
