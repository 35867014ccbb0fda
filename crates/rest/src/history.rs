//! Pages of a past snapshot, for exact lists and continue tokens whose resourceVersion the
//! watch cache has moved past. Served from the cache's event window, which covers every
//! change after the compacted resourceVersion:
//!
//! the state at R of a key = the `prev` of its first event after R, if it has one (None:
//! it did not exist at R), else its current state.
//!
//! So a page at R is the current objects merged with the first `prev` of every key
//! changed since R, in key order. The events come from a watch from R on the collection's
//! prefix (its replay of the window is queued at once, under the cache's lock, so after a
//! `list` at rv L every event up to L is in the queue). Below the window the watch
//! refuses (410 Expired, `too old resource version: R (OLDEST)`); a watch cut off because
//! more changes than its queue holds happened since R is answered the same way.
//!
//! Worked example: a, b, c at rv 10; then b deleted (11) and d added (12). The page at 10
//! after `a`: current [c, d]; first prevs {b: Some(b@10), d: None}; merged: b, c.
//!
//! (`Cluster::scan_at` over the MVCC store answers the same question; this module is the
//! one place to switch to it.)

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use kuorum_api::ApiError;
use kuorum_watch::{Obj, TooOld, WatchFilter, WatchItem, WatchStart};
use tokio::sync::mpsc::error::TryRecvError;

use crate::RestState;

/// How many current objects one step of the merge reads from the cache.
const CHUNK: usize = 1024;

/// One page of a snapshot.
pub(crate) struct SnapshotPage {
    pub items: Vec<Bytes>,
    /// The key of the last item.
    pub last_key: Option<String>,
    /// Whether objects (matching or not) follow the last item.
    pub more: bool,
    /// How many objects follow the last item (an estimate when writes race the count).
    pub remaining: Option<usize>,
}

pub(crate) fn too_old(requested: u64, oldest: u64) -> ApiError {
    ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
}

/// What changed under a prefix since R: per key, its state at R and whether it exists now.
struct Changes {
    rx: kuorum_watch::Watch,
    requested: u64,
    /// key → (state at R, exists after the last event seen).
    first: BTreeMap<String, (Option<Arc<Obj>>, bool)>,
}

impl Changes {
    /// Takes every queued event; all events up to the rv of any `list` made before are in.
    fn drain(&mut self, st: &RestState) -> Result<(), ApiError> {
        loop {
            match self.rx.rx.try_recv() {
                Ok(WatchItem::Event(_, e)) => {
                    let exists = e.kind != kuorum_watch::EventType::Deleted;
                    self.first.entry(e.object.key.clone()).or_insert_with(|| (e.prev.clone(), exists)).1 = exists;
                }
                Ok(WatchItem::Bookmark(_)) => {}
                Err(TryRecvError::Empty) => return Ok(()),
                // Cut off: more changes since R than a watcher may queue.
                Err(TryRecvError::Disconnected) => return Err(too_old(self.requested, st.cache.rv())),
            }
        }
    }
}

/// The objects under `filter.prefix` matching `filter` as they were at `rv`, strictly
/// after `start_after`, in key order, at most `limit` of them.
pub(crate) fn page_at(
    st: &RestState,
    filter: &WatchFilter,
    rv: u64,
    start_after: Option<&str>,
    limit: Option<usize>,
) -> Result<SnapshotPage, ApiError> {
    let all = WatchFilter::prefix(filter.prefix.clone());
    let started = st
        .cache
        .watch(all.clone(), WatchStart::After(rv), false)
        .map_err(|TooOld { requested, oldest }| too_old(requested, oldest))?;
    if started.rv < rv {
        return Err(ApiError::too_large_resource_version(rv, started.rv));
    }
    let mut changes = Changes { rx: started.watch, requested: rv, first: BTreeMap::new() };
    let want = limit.unwrap_or(usize::MAX);
    let selects_all = crate::list::selects_all(filter);
    let mut items = Vec::new();
    let mut last_key: Option<String> = None;
    let mut more = false;
    let mut cursor: Option<String> = start_after.map(str::to_string);
    'merge: loop {
        let chunk = st.cache.list(&all, cursor.as_deref(), CHUNK);
        changes.drain(st)?;
        let exhausted = chunk.remaining.is_none_or(|r| r == 0);
        let upper = match (exhausted, chunk.items.last()) {
            (false, Some(o)) => Bound::Included(o.key.clone()),
            _ => Bound::Unbounded,
        };
        let lower = match &cursor {
            Some(c) => Bound::Excluded(c.clone()),
            None => Bound::Unbounded,
        };
        // The state at rv of the keys in (cursor, upper]: unchanged current objects, and
        // the earlier versions of the changed ones.
        let mut at_rv: Vec<Arc<Obj>> =
            chunk.items.into_iter().filter(|o| !changes.first.contains_key(&o.key)).collect();
        at_rv
            .extend(changes.first.range::<String, _>((lower, upper.clone())).filter_map(|(_, (prev, _))| prev.clone()));
        at_rv.sort_by(|a, b| a.key.cmp(&b.key));
        for o in at_rv {
            if items.len() >= want {
                more = true;
                break 'merge;
            }
            if selects_all || filter.matches(&o) {
                items.push(o.bytes.clone());
                last_key = Some(o.key.clone());
            }
        }
        match upper {
            Bound::Included(k) => cursor = Some(k),
            _ => break,
        }
    }
    let remaining = match (&last_key, more && selects_all) {
        (Some(last), true) => Some(count_after(st, &mut changes, &all, last)?),
        _ => None,
    };
    Ok(SnapshotPage { items, last_key, more, remaining })
}

/// How many objects followed `after` at the snapshot's rv: those after it now, less the
/// changed keys that exist now, plus the changed keys that existed then.
fn count_after(st: &RestState, changes: &mut Changes, all: &WatchFilter, after: &str) -> Result<usize, ApiError> {
    let now = st.cache.list(all, Some(after), 1);
    changes.drain(st)?;
    let mut n = now.items.len() + now.remaining.unwrap_or(0);
    for (_, (prev, exists)) in changes.first.range::<str, _>((Bound::Excluded(after), Bound::Unbounded)) {
        n = (n + usize::from(prev.is_some())).saturating_sub(usize::from(*exists));
    }
    Ok(n)
}
