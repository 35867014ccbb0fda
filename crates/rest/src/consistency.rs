//! The one place that decides how a read waits and where it reads from, from the request's
//! `resourceVersion`, `resourceVersionMatch`, `limit`, `continue` and `sendInitialEvents`
//! (the tables of the spec's "Semantics for get and list" and "Semantics for watch"):
//!
//! - **Most recent** (RV unset): ask the leader for a read index and wait until this node
//!   has applied it (`Cluster::read_barrier`, works on followers); serve the watch cache.
//! - **Any** (`"0"`): serve the watch cache as it is.
//! - **Not older than N**: wait, polling every few milliseconds for at most [`RV_WAIT`],
//!   until the local applied index (hence the cache) reaches N; past that, 504 Timeout
//!   "Too large resource version" with `Retry-After: 1`. Then serve the cache.
//! - **Exact N**: wait as above, then read the MVCC history at N (410 Expired below the
//!   compacted resourceVersion).
//! - **Continue token**: exact at the token's resourceVersion, from its key.
//!
//! Invalid combinations are answered as kube-apiserver does: 422 Invalid `ListOptions`
//! for what its `ValidateListOptions` forbids, 400 for unparsable values and for a
//! continue token together with a resourceVersion.
//!
//! The list table, row by row (match, paging → unset / "0" / N):
//!
//! ```text
//! unset, no limit          → MostRecent / Any / NotOlderThan
//! unset, limit             → MostRecent / Any / Exact
//! unset, continue          → Continue   / Continue / 400
//! Exact                    → 422        / 422 / Exact
//! NotOlderThan             → 422        / Any / NotOlderThan
//! ```

use kuorum_mutation::{self as mutation, Mutation};
use std::time::Duration;

use bytes::Bytes;

use kuorum_api::validation::FieldError;
use kuorum_api::{ApiError, GroupKind};

use crate::error::cluster_error;
use crate::query::Query;
use crate::RestState;

/// How long a read waits for this node to reach a requested resourceVersion.
pub(crate) const RV_WAIT: Duration = Duration::from_secs(3);
const POLL_EVERY: Duration = Duration::from_millis(5);

/// How fresh a read of the watch cache must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Freshness {
    MostRecent,
    Any,
    NotOlderThan(u64),
}

/// Where a list is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListPlan {
    /// The watch cache, once it is this fresh.
    Cache(Freshness),
    /// The snapshot at exactly this resourceVersion.
    Exact(u64),
    /// The page a continue token points at (still encoded: it is decoded against the
    /// collection's prefix).
    Continue(String),
}

/// How a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchPlan {
    /// Synthetic ADDED events for the cache's state once it is this fresh, then every
    /// change after it. `end_bookmark`: mark the end of the initial events with a
    /// BOOKMARK annotated `k8s.io/initial-events-end` (sendInitialEvents=true).
    /// `soft_wait`: a NotOlderThan wait that times out becomes an ERROR event in a 200
    /// stream (as the watch cache of kube-apiserver answers) instead of an HTTP 504.
    WithState { wait: Freshness, end_bookmark: bool, soft_wait: bool },
    /// No initial state; every change after the cache's rv once it is this fresh
    /// (sendInitialEvents=false without a resourceVersion).
    FromNow { wait: Freshness },
    /// No initial state; every change after this resourceVersion ("Start at Exact").
    After(u64),
}

/// The request's list and watch parameters, parsed (400 on unparsable values).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListOptions {
    /// `resourceVersion`; `None` when unset or empty.
    pub rv: Option<u64>,
    /// `resourceVersionMatch`, as given; empty when unset.
    pub rv_match: String,
    /// `limit` when positive.
    pub limit: Option<usize>,
    /// `continue`, when non-empty.
    pub continue_token: Option<String>,
    /// `sendInitialEvents`, when given.
    pub send_initial_events: Option<bool>,
    pub allow_bookmarks: bool,
    /// `timeoutSeconds` when positive.
    pub timeout: Option<Duration>,
}

fn list_options_invalid(errs: &[FieldError]) -> ApiError {
    ApiError::invalid(GroupKind { group: "meta.k8s.io", kind: "ListOptions" }, "", errs)
}

/// A resourceVersion parameter: empty is unset; otherwise a log index (400 if not).
fn parse_rv(s: &str) -> Result<Option<u64>, ApiError> {
    match s {
        "" => Ok(None),
        s => s.parse::<u64>().map(Some).map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}"))),
    }
}

/// Go's `strconv.ParseBool`.
fn parse_bool(name: &str, s: &str) -> Result<bool, ApiError> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(ApiError::bad_request(format!("invalid value for {name}: {s:?}: expected a boolean"))),
    }
}

fn parse_int(name: &str, s: &str) -> Result<i64, ApiError> {
    s.trim()
        .parse::<i64>()
        .map_err(|_| ApiError::bad_request(format!("invalid value for {name}: {s:?}: expected an integer")))
}

impl ListOptions {
    pub fn parse(q: &Query) -> Result<ListOptions, ApiError> {
        let rv = parse_rv(q.get("resourceVersion").unwrap_or(""))?;
        let limit = match q.get("limit").unwrap_or("") {
            "" => None,
            s => usize::try_from(parse_int("limit", s)?).ok().filter(|n| *n > 0),
        };
        let timeout = match q.get("timeoutSeconds").unwrap_or("") {
            "" => None,
            s => u64::try_from(parse_int("timeoutSeconds", s)?).ok().filter(|n| *n > 0).map(Duration::from_secs),
        };
        let send_initial_events = match q.get("sendInitialEvents").unwrap_or("") {
            "" => None,
            s => Some(parse_bool("sendInitialEvents", s)?),
        };
        Ok(ListOptions {
            rv,
            rv_match: q.get("resourceVersionMatch").unwrap_or("").to_string(),
            limit,
            continue_token: q.get("continue").filter(|c| !c.is_empty()).map(str::to_string),
            send_initial_events,
            allow_bookmarks: q.flag("allowWatchBookmarks"),
            timeout,
        })
    }

    /// kube-apiserver's `ValidateListOptions` for a list (422 Invalid).
    fn validate_list(&self) -> Result<(), ApiError> {
        let mut errs = Vec::new();
        if !self.rv_match.is_empty() {
            if self.rv.is_none() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if self.continue_token.is_some() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if self.rv_match != "Exact" && self.rv_match != "NotOlderThan" {
                errs.push(FieldError::not_supported(
                    "resourceVersionMatch",
                    &self.rv_match,
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if self.rv_match == "Exact" && self.rv == Some(0) {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if self.send_initial_events.is_some() {
            errs.push(FieldError::forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(list_options_invalid(&errs))
        }
    }

    /// kube-apiserver's `validateWatchOptions` (422 Invalid).
    fn validate_watch(&self) -> Result<(), ApiError> {
        let mut errs = Vec::new();
        if self.send_initial_events.is_some() && self.rv_match != "NotOlderThan" {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !self.rv_match.is_empty() {
            if self.send_initial_events.is_none() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if self.rv_match != "NotOlderThan" {
                errs.push(FieldError::not_supported("resourceVersionMatch", &self.rv_match, &["NotOlderThan"]));
            }
            if self.continue_token.is_some() {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(list_options_invalid(&errs))
        }
    }

    /// Where a list reads from: the list table.
    pub fn list_plan(&self) -> Result<ListPlan, ApiError> {
        self.validate_list()?;
        if let Some(token) = &self.continue_token {
            return match self.rv {
                None | Some(0) => Ok(ListPlan::Continue(token.clone())),
                Some(_) => Err(ApiError::bad_request("specifying resource version is not allowed when using continue")),
            };
        }
        Ok(match (self.rv_match.as_str(), self.rv) {
            (_, None) => ListPlan::Cache(Freshness::MostRecent),
            (_, Some(0)) => ListPlan::Cache(Freshness::Any),
            ("Exact", Some(n)) => ListPlan::Exact(n),
            ("NotOlderThan", Some(n)) => ListPlan::Cache(Freshness::NotOlderThan(n)),
            // The legacy rows: with a limit, a resourceVersion is exact.
            (_, Some(n)) if self.limit.is_some() => ListPlan::Exact(n),
            (_, Some(n)) => ListPlan::Cache(Freshness::NotOlderThan(n)),
        })
    }

    /// How a watch starts: the watch table, and the streaming-lists section for
    /// `sendInitialEvents`.
    pub fn watch_plan(&self) -> Result<WatchPlan, ApiError> {
        self.validate_watch()?;
        let wait = match self.rv {
            None => Freshness::MostRecent,
            Some(0) => Freshness::Any,
            Some(n) => Freshness::NotOlderThan(n),
        };
        Ok(match (self.send_initial_events, self.rv) {
            (Some(true), _) => WatchPlan::WithState { wait, end_bookmark: self.allow_bookmarks, soft_wait: true },
            (_, Some(n)) if n > 0 => WatchPlan::After(n),
            (Some(false), _) => WatchPlan::FromNow { wait },
            (None, _) => WatchPlan::WithState { wait, end_bookmark: false, soft_wait: false },
        })
    }
}

/// The freshness a GET of one object asks for (it has no `resourceVersionMatch`).
pub(crate) fn get_freshness(q: &Query) -> Result<Freshness, ApiError> {
    Ok(match parse_rv(q.get("resourceVersion").unwrap_or(""))? {
        None => Freshness::MostRecent,
        Some(0) => Freshness::Any,
        Some(n) => Freshness::NotOlderThan(n),
    })
}

/// Waits until a read of the local watch cache satisfies `f`.
pub(crate) async fn wait_fresh(st: &RestState, f: Freshness) -> Result<(), ApiError> {
    match f {
        Freshness::Any => Ok(()),
        Freshness::MostRecent if mutation::active(Mutation::StaleRead) => Ok(()),
        Freshness::MostRecent => st.cluster.read_barrier(st.request_timeout).await.map(|_| ()).map_err(cluster_error),
        Freshness::NotOlderThan(n) => wait_for_index(st, n).await,
    }
}

/// Waits, for at most `within`, until a read of the local state is linearizable; gives up
/// quietly (the read then sees the local state as it is). For reads that must not fail
/// for want of a leader, such as discovery, but should see what was just written through
/// another node.
pub(crate) async fn try_most_recent(st: &RestState, within: Duration) {
    if mutation::active(Mutation::StaleRead) {
        return;
    }
    let _ = tokio::time::timeout(within, st.cluster.read_barrier(within.min(st.request_timeout))).await;
}

/// The stored object a read-modify-write (update, patch, apply) starts from.
///
/// The first attempt reads the local copy without a read barrier: the write that follows
/// is conditional on the resourceVersion read, so a stale copy costs only a 409 from
/// apply and a retry. Later attempts, and any answer of "absent" (which no precondition
/// would catch), first wait for a Most Recent barrier.
pub(crate) async fn read_for_write(st: &RestState, key: &str, attempt: usize) -> Result<Option<Bytes>, ApiError> {
    if attempt > 1 {
        wait_fresh(st, Freshness::MostRecent).await?;
        return st.cluster.get(key).map_err(cluster_error);
    }
    match st.cluster.get(key).map_err(cluster_error)? {
        Some(found) => Ok(Some(found)),
        None => {
            wait_fresh(st, Freshness::MostRecent).await?;
            st.cluster.get(key).map_err(cluster_error)
        }
    }
}

/// Polls until the local applied index (and with it the watch cache, which is updated
/// first) reaches `n`, for at most [`RV_WAIT`]; then 504 "Too large resource version".
pub(crate) async fn wait_for_index(st: &RestState, n: u64) -> Result<(), ApiError> {
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

    fn opts(s: &str) -> ListOptions {
        ListOptions::parse(&Query::parse(Some(s))).unwrap()
    }

    fn list(s: &str) -> Result<ListPlan, ApiError> {
        opts(s).list_plan()
    }

    fn watch(s: &str) -> Result<WatchPlan, ApiError> {
        opts(s).watch_plan()
    }

    use Freshness::*;

    #[test]
    fn the_list_table() {
        let cache = ListPlan::Cache;
        // match unset, no limit
        assert_eq!(list("").unwrap(), cache(MostRecent));
        assert_eq!(list("resourceVersion=").unwrap(), cache(MostRecent));
        assert_eq!(list("resourceVersion=0").unwrap(), cache(Any));
        assert_eq!(list("resourceVersion=7").unwrap(), cache(NotOlderThan(7)));
        // match unset, limit
        assert_eq!(list("limit=5").unwrap(), cache(MostRecent));
        assert_eq!(list("limit=5&resourceVersion=0").unwrap(), cache(Any));
        assert_eq!(list("limit=5&resourceVersion=7").unwrap(), ListPlan::Exact(7));
        // match unset, continue
        assert_eq!(list("limit=5&continue=T").unwrap(), ListPlan::Continue("T".into()));
        assert_eq!(list("limit=5&continue=T&resourceVersion=0").unwrap(), ListPlan::Continue("T".into()));
        let e = list("limit=5&continue=T&resourceVersion=7").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "specifying resource version is not allowed when using continue")
        );
        // Exact
        for q in ["resourceVersionMatch=Exact", "resourceVersionMatch=Exact&limit=5"] {
            assert_eq!(list(q).unwrap_err().code, 422, "{q}");
            assert_eq!(list(&format!("{q}&resourceVersion=0")).unwrap_err().code, 422, "{q}");
            assert_eq!(list(&format!("{q}&resourceVersion=7")).unwrap(), ListPlan::Exact(7), "{q}");
        }
        // NotOlderThan
        for q in ["resourceVersionMatch=NotOlderThan", "resourceVersionMatch=NotOlderThan&limit=5"] {
            assert_eq!(list(q).unwrap_err().code, 422, "{q}");
            assert_eq!(list(&format!("{q}&resourceVersion=0")).unwrap(), cache(Any), "{q}");
            assert_eq!(list(&format!("{q}&resourceVersion=7")).unwrap(), cache(NotOlderThan(7)), "{q}");
        }
    }

    #[test]
    fn invalid_list_options_have_kubes_messages() {
        let e = list("resourceVersionMatch=NotOlderThan").unwrap_err();
        assert_eq!(
            e.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is \
             forbidden unless resourceVersion is provided"
        );
        let e = list("resourceVersion=0&resourceVersionMatch=Exact").unwrap_err();
        assert!(e.message.ends_with("resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""), "{e}");
        let e = list("resourceVersion=1&resourceVersionMatch=Newest").unwrap_err();
        assert!(
            e.message.ends_with(
                "resourceVersionMatch: Unsupported value: \"Newest\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            ),
            "{e}"
        );
        let e = list("resourceVersion=1&resourceVersionMatch=Exact&continue=T").unwrap_err();
        assert!(e.message.contains("resourceVersionMatch is forbidden when continue is provided"), "{e}");
        let e = list("sendInitialEvents=true").unwrap_err();
        assert!(e.message.ends_with("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"), "{e}");
        for bad in
            ["resourceVersion=abc", "resourceVersion=-1", "limit=x", "timeoutSeconds=x", "sendInitialEvents=maybe"]
        {
            assert_eq!(ListOptions::parse(&Query::parse(Some(bad))).unwrap_err().code, 400, "{bad}");
        }
        assert_eq!(opts("limit=-3").limit, None);
        assert_eq!(opts("limit=0").limit, None);
        assert_eq!(opts("timeoutSeconds=0").timeout, None);
        assert_eq!(opts("timeoutSeconds=9").timeout, Some(Duration::from_secs(9)));
    }

    #[test]
    fn the_watch_table() {
        let state = |wait| WatchPlan::WithState { wait, end_bookmark: false, soft_wait: false };
        assert_eq!(watch("").unwrap(), state(MostRecent));
        assert_eq!(watch("resourceVersion=0").unwrap(), state(Any));
        assert_eq!(watch("resourceVersion=7").unwrap(), WatchPlan::After(7));
        assert_eq!(watch("resourceVersion=7&allowWatchBookmarks=true").unwrap(), WatchPlan::After(7));

        let wl = |wait, end_bookmark| WatchPlan::WithState { wait, end_bookmark, soft_wait: true };
        let nl = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
        assert_eq!(watch(&format!("{nl}&allowWatchBookmarks=true")).unwrap(), wl(MostRecent, true));
        assert_eq!(watch(&format!("{nl}&allowWatchBookmarks=true&resourceVersion=")).unwrap(), wl(MostRecent, true));
        assert_eq!(watch(&format!("{nl}&allowWatchBookmarks=true&resourceVersion=0")).unwrap(), wl(Any, true));
        assert_eq!(
            watch(&format!("{nl}&allowWatchBookmarks=true&resourceVersion=7")).unwrap(),
            wl(NotOlderThan(7), true)
        );
        assert_eq!(watch(nl).unwrap(), wl(MostRecent, false));

        let no = "sendInitialEvents=false&resourceVersionMatch=NotOlderThan";
        assert_eq!(watch(no).unwrap(), WatchPlan::FromNow { wait: MostRecent });
        assert_eq!(watch(&format!("{no}&resourceVersion=0")).unwrap(), WatchPlan::FromNow { wait: Any });
        assert_eq!(watch(&format!("{no}&resourceVersion=7")).unwrap(), WatchPlan::After(7));
    }

    #[test]
    fn invalid_watch_options_have_kubes_messages() {
        let e = watch("sendInitialEvents=true").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                422,
                "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires \
                 setting resourceVersionMatch to NotOlderThan"
            )
        );
        let e = watch("resourceVersion=0&resourceVersionMatch=NotOlderThan").unwrap_err();
        assert!(
            e.message.ends_with("resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"),
            "{e}"
        );
        let e = watch("sendInitialEvents=true&resourceVersionMatch=Exact").unwrap_err();
        assert!(e.message.contains("Unsupported value: \"Exact\": supported values: \"NotOlderThan\""), "{e}");
        assert_eq!(e.code, 422);
    }

    #[test]
    fn get_has_three_columns() {
        let f = |s: &str| get_freshness(&Query::parse(Some(s)));
        assert_eq!(f("").unwrap(), MostRecent);
        assert_eq!(f("resourceVersion=0").unwrap(), Any);
        assert_eq!(f("resourceVersion=7").unwrap(), NotOlderThan(7));
        // GETs have no resourceVersionMatch.
        assert_eq!(f("resourceVersion=7&resourceVersionMatch=Exact").unwrap(), NotOlderThan(7));
        assert_eq!(f("resourceVersion=x").unwrap_err().code, 400);
    }
}
