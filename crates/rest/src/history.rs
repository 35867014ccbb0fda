//! Pages of a past snapshot, for exact lists and continue tokens whose resourceVersion
//! the watch cache has moved past: read from the MVCC history of this node's object
//! store (`Cluster::scan_at`), which holds every version since the last replicated
//! compaction. Below it: 410 Expired, `too old resource version: R (COMPACTED)`.
//!
//! Worked example: a, b, c at rv 10; then b deleted (11) and d added (12). The page at 10
//! after `a` is b@10, c@10: the history answers for each key its newest version <= 10.

use bytes::Bytes;
use kuorum_api::ApiError;
use kuorum_watch::{Obj, WatchFilter};

use crate::error::cluster_error;
use crate::RestState;

/// How many objects one read of the history returns.
const CHUNK: usize = 1024;

/// One page of a snapshot.
pub(crate) struct SnapshotPage {
    pub items: Vec<Bytes>,
    /// The key of the last item.
    pub last_key: Option<String>,
    /// Whether objects (matching or not) follow the last item.
    pub more: bool,
    /// How many objects follow the last item (set when the page is full and nothing is
    /// filtered).
    pub remaining: Option<usize>,
}

pub(crate) fn too_old(requested: u64, oldest: u64) -> ApiError {
    ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
}

/// The objects under `filter.prefix` matching `filter` as they were at `rv`, strictly
/// after `start_after`, in key order, at most `limit` of them; `count`: whether a full
/// page counts the objects after it (not when the continue token carries the count).
pub(crate) fn page_at(
    st: &RestState,
    filter: &WatchFilter,
    rv: u64,
    start_after: Option<&str>,
    limit: Option<usize>,
    count: bool,
) -> Result<SnapshotPage, ApiError> {
    let compacted = st.cluster.compacted().map_err(cluster_error)?;
    if rv < compacted {
        return Err(too_old(rv, compacted));
    }
    let applied = st.cluster.applied_index();
    if rv > applied {
        return Err(ApiError::too_large_resource_version(rv, applied));
    }
    let want = limit.unwrap_or(usize::MAX);
    let selects_all = filter.selects_all();
    let mut items = Vec::new();
    let mut last_key: Option<String> = None;
    let mut more = false;
    let mut cursor: Option<String> = start_after.map(str::to_string);
    'scan: loop {
        let chunk = st.cluster.scan_at(&filter.prefix, rv, cursor.as_deref(), CHUNK).map_err(cluster_error)?;
        let exhausted = chunk.len() < CHUNK;
        cursor = chunk.last().map(|(k, _)| k.clone()).or(cursor);
        for (key, bytes) in chunk {
            if items.len() >= want {
                more = true;
                break 'scan;
            }
            if selects_all || filter.matches(&Obj::from_stored(key.clone(), bytes.clone())) {
                items.push(bytes);
                last_key = Some(key);
            }
        }
        if exhausted {
            break;
        }
    }
    let remaining = match (&last_key, more && selects_all && count) {
        (Some(last), true) => Some(count_after(st, &filter.prefix, rv, last)?),
        _ => None,
    };
    Ok(SnapshotPage { items, last_key, more, remaining })
}

/// How many objects under `prefix` follow `after` at `rv`, read a chunk at a time so that
/// counting holds no more than one chunk.
fn count_after(st: &RestState, prefix: &str, rv: u64, after: &str) -> Result<usize, ApiError> {
    let mut n = 0;
    let mut cursor = after.to_string();
    loop {
        let chunk = st.cluster.scan_at(prefix, rv, Some(&cursor), CHUNK).map_err(cluster_error)?;
        n += chunk.len();
        match chunk.last() {
            Some((k, _)) if chunk.len() == CHUNK => cursor.clone_from(k),
            _ => return Ok(n),
        }
    }
}
