//! [`InitialState`]: the objects a watch with initial events starts from, read one at a
//! time as its client takes them.
//!
//! The cache takes a snapshot of a collection once, as a list of the shared objects (a
//! pointer each, never their bytes), and every watch that starts on that collection
//! while none of its objects changed reads the same snapshot: 2,000 watches over a
//! namespace of 5 MB hold one list of pointers between them, not 2,000 copies of 5 MB.
//! Selectors are applied as the objects are taken, so a filtered watch holds nothing of
//! its own but a position. kube-apiserver's cacher does the same in spirit: a watch's
//! initial events are an interval over the store's list, converted in small batches as
//! the watcher's channel drains.

use std::sync::Arc;

use crate::event::Obj;
use crate::filter::WatchFilter;

/// The objects of a collection at one resourceVersion, in key order, shared by the
/// watches started from it.
pub type Snapshot = Arc<[Arc<Obj>]>;

/// A watch's initial objects: a shared [`Snapshot`], the watch's filter and how far it
/// has been read. Iterating yields the matching objects in key order.
pub struct InitialState {
    objects: Snapshot,
    /// Applied to each object as it is taken; None when the snapshot is the view.
    filter: Option<WatchFilter>,
    next: usize,
}

impl InitialState {
    pub(crate) fn new(objects: Snapshot, filter: &WatchFilter) -> InitialState {
        let filter = (!filter.selects_all()).then(|| filter.clone());
        InitialState { objects, filter, next: 0 }
    }

    /// No initial state (a watch from a resourceVersion).
    pub fn none() -> InitialState {
        InitialState { objects: Arc::from(Vec::new()), filter: None, next: 0 }
    }

    /// Whether every object has been taken.
    pub fn is_done(&self) -> bool {
        self.next >= self.objects.len()
    }

    /// The next matching object, looking at no more than `budget` objects (each one
    /// looked at counts): None when the state is read or the budget is spent. A
    /// selective watch over a large snapshot so yields between stretches of work.
    pub fn next_within(&mut self, budget: &mut usize) -> Option<Arc<Obj>> {
        while *budget > 0 {
            let o = self.objects.get(self.next)?;
            self.next += 1;
            *budget -= 1;
            if self.filter.as_ref().is_none_or(|f| f.matches(o)) {
                return Some(o.clone());
            }
        }
        None
    }

    /// The snapshot this state reads (shared with the watches started from the same
    /// collection state).
    pub fn snapshot(&self) -> &Snapshot {
        &self.objects
    }
}

impl Iterator for InitialState {
    type Item = Arc<Obj>;

    fn next(&mut self) -> Option<Arc<Obj>> {
        while let Some(o) = self.objects.get(self.next) {
            self.next += 1;
            if self.filter.as_ref().is_none_or(|f| f.matches(o)) {
                return Some(o.clone());
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.objects.len() - self.next.min(self.objects.len())))
    }
}
