//! The one place that decides how a read waits before it looks at local state, from the
//! request's `resourceVersion` (and, for lists, `resourceVersionMatch`):
//!
//! - unset: most recent. Ask the leader for a read index and wait until this node has
//!   applied it (`Cluster::read_barrier`); works on followers.
//! - `"0"`: any. Serve local state as it is.
//! - `N` (NotOlderThan): wait, polling every few milliseconds for at most
//!   [`RV_WAIT`], until the local applied index reaches N; past that, 504 Timeout
//!   "Too large resource version" with `Retry-After: 1`.
//! - `N` with `resourceVersionMatch=Exact`: kuorum keeps no history yet, so only the
//!   current applied index can be served exactly; an older N is 410 Expired.
//! - anything else: 400.

use std::time::Duration;

use kuorum_api::validation::FieldError;
use kuorum_api::{ApiError, GroupKind};

use crate::error::cluster_error;
use crate::query::Query;
use crate::RestState;

/// How long a read waits for this node to reach a requested resourceVersion.
pub(crate) const RV_WAIT: Duration = Duration::from_secs(3);
const POLL_EVERY: Duration = Duration::from_millis(5);

/// How fresh a read must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Freshness {
    MostRecent,
    Any,
    NotOlderThan(u64),
    Exact(u64),
}

fn list_options_invalid(errs: Vec<FieldError>) -> ApiError {
    ApiError::invalid(GroupKind { group: "meta.k8s.io", kind: "ListOptions" }, "", &errs)
}

/// Reads the freshness a request asks for. `with_match` is false for GETs of one object,
/// which have no `resourceVersionMatch`.
pub(crate) fn requested(q: &Query, with_match: bool) -> Result<Freshness, ApiError> {
    let rv = q.get("resourceVersion").unwrap_or("");
    let rv_match = if with_match { q.get("resourceVersionMatch").unwrap_or("") } else { "" };
    let parsed = match rv {
        "" => None,
        s => Some(s.parse::<u64>().map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}")))?),
    };
    match (rv_match, parsed) {
        ("", None) => Ok(Freshness::MostRecent),
        ("", Some(0)) => Ok(Freshness::Any),
        ("", Some(n)) | ("NotOlderThan", Some(n)) if n > 0 => Ok(Freshness::NotOlderThan(n)),
        ("NotOlderThan", Some(_)) => Ok(Freshness::Any),
        ("Exact", Some(0)) => Err(list_options_invalid(vec![FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        )])),
        ("Exact", Some(n)) => Ok(Freshness::Exact(n)),
        ("NotOlderThan" | "Exact", None) => Err(list_options_invalid(vec![FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        )])),
        (other, _) => Err(list_options_invalid(vec![FieldError::not_supported(
            "resourceVersionMatch",
            other,
            &["Exact", "NotOlderThan"],
        )])),
    }
}

/// Waits until a read of local state satisfies the request's freshness.
pub(crate) async fn wait_for_read(st: &RestState, q: &Query, with_match: bool) -> Result<(), ApiError> {
    match requested(q, with_match)? {
        Freshness::Any => Ok(()),
        Freshness::MostRecent => st.cluster.read_barrier(st.request_timeout).await.map(|_| ()).map_err(cluster_error),
        Freshness::NotOlderThan(n) => wait_for_index(st, n).await,
        Freshness::Exact(n) => {
            wait_for_index(st, n).await?;
            let current = st.cluster.applied_index();
            if current == n {
                Ok(())
            } else {
                Err(ApiError::expired(format!("too old resource version: {n} ({current})")))
            }
        }
    }
}

/// Polls until the local applied index reaches `n`, for at most [`RV_WAIT`].
async fn wait_for_index(st: &RestState, n: u64) -> Result<(), ApiError> {
    let deadline = tokio::time::Instant::now() + RV_WAIT.min(st.request_timeout);
    loop {
        let current = st.cluster.applied_index();
        if current >= n {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::too_large_resource_version(n, current));
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Query {
        Query::parse(Some(s))
    }

    #[test]
    fn freshness_from_the_query() {
        assert_eq!(requested(&q(""), true).unwrap(), Freshness::MostRecent);
        assert_eq!(requested(&q("resourceVersion="), true).unwrap(), Freshness::MostRecent);
        assert_eq!(requested(&q("resourceVersion=0"), true).unwrap(), Freshness::Any);
        assert_eq!(requested(&q("resourceVersion=7"), true).unwrap(), Freshness::NotOlderThan(7));
        assert_eq!(requested(&q("resourceVersion=0&resourceVersionMatch=NotOlderThan"), true).unwrap(), Freshness::Any);
        assert_eq!(requested(&q("resourceVersion=7&resourceVersionMatch=Exact"), true).unwrap(), Freshness::Exact(7));
        // GETs have no resourceVersionMatch.
        assert_eq!(
            requested(&q("resourceVersion=7&resourceVersionMatch=Exact"), false).unwrap(),
            Freshness::NotOlderThan(7)
        );
        assert_eq!(requested(&q("resourceVersion=abc"), true).unwrap_err().code, 400);
        assert_eq!(requested(&q("resourceVersion=-1"), true).unwrap_err().code, 400);
        let e = requested(&q("resourceVersionMatch=NotOlderThan"), true).unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is \
             forbidden unless resourceVersion is provided"
        );
        assert_eq!(requested(&q("resourceVersion=0&resourceVersionMatch=Exact"), true).unwrap_err().code, 422);
        assert_eq!(requested(&q("resourceVersion=1&resourceVersionMatch=Newest"), true).unwrap_err().code, 422);
    }
}
