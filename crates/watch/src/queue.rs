//! The bounded queue between the cache and one watcher's stream: the cache pushes what
//! the watcher sees (under the cache's lock, never waiting), the stream takes it.
//!
//! A watcher whose queue is full is cut off, as kube-apiserver's cacher terminates a
//! watcher whose input channel stays full: the queue is closed and emptied at once, so a
//! client that stopped reading holds no events (and pins no objects that already left
//! the cache's window) while its connection lingers; its stream ends and the client
//! resumes from the last resourceVersion it read. So one watcher costs at most
//! `capacity` queued items (16 bytes each; the events themselves are shared).
//!
//! The reader's waker is kept with the items under one small lock: a push wakes the
//! reader only when it is parked, and the queue's memory shrinks back once a burst has
//! been read, so 10,000 idle watchers do not each keep the capacity of their largest
//! burst.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use crate::cache::WatchItem;

/// Items an emptied queue keeps room for; the room of a larger burst is given back.
const KEPT_ROOM: usize = 64;

struct Inner {
    items: VecDeque<WatchItem>,
    /// Cut off (too slow) or dropped by the cache: no item comes any more.
    closed: bool,
    /// The reader, parked on an empty queue.
    waker: Option<Waker>,
}

pub(crate) struct Queue {
    inner: Mutex<Inner>,
    capacity: usize,
}

/// Why [`WatchReceiver::try_recv`] has no item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// None queued yet.
    Empty,
    /// The watch is over (cut off, or the cache was reset): nothing will come.
    Closed,
}

impl Queue {
    pub(crate) fn new(capacity: usize) -> Arc<Queue> {
        Arc::new(Queue {
            inner: Mutex::new(Inner { items: VecDeque::new(), closed: false, waker: None }),
            capacity: capacity.max(1),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `item`. False when the queue is closed, or full: then it is closed and
    /// emptied (the watcher is cut off).
    pub(crate) fn push(&self, item: WatchItem) -> bool {
        let mut q = self.lock();
        if q.closed {
            return false;
        }
        let alive = q.items.len() < self.capacity;
        if alive {
            q.items.push_back(item);
        } else {
            q.closed = true;
            q.items = VecDeque::new();
        }
        let waker = q.waker.take();
        drop(q);
        if let Some(w) = waker {
            w.wake();
        }
        alive
    }

    /// Closes the queue (the cache dropped the watcher); what is queued is still read.
    pub(crate) fn close(&self) {
        let mut q = self.lock();
        q.closed = true;
        let waker = q.waker.take();
        drop(q);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Items queued now.
    pub(crate) fn len(&self) -> usize {
        self.lock().items.len()
    }

    fn take(&self, cx: Option<&mut Context<'_>>) -> Result<WatchItem, TryRecvError> {
        let mut q = self.lock();
        match q.items.pop_front() {
            Some(item) => {
                if q.items.is_empty() && q.items.capacity() > KEPT_ROOM {
                    q.items.shrink_to(KEPT_ROOM);
                }
                Ok(item)
            }
            None if q.closed => Err(TryRecvError::Closed),
            None => {
                if let Some(cx) = cx {
                    if !q.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                        q.waker = Some(cx.waker().clone());
                    }
                }
                Err(TryRecvError::Empty)
            }
        }
    }
}

/// The reading end of a watcher's queue.
pub struct WatchReceiver {
    pub(crate) queue: Arc<Queue>,
}

impl WatchReceiver {
    /// The next item, waiting for one; None once the watch is over.
    pub async fn recv(&mut self) -> Option<WatchItem> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<WatchItem>> {
        match self.queue.take(Some(cx)) {
            Ok(item) => Poll::Ready(Some(item)),
            Err(TryRecvError::Closed) => Poll::Ready(None),
            Err(TryRecvError::Empty) => Poll::Pending,
        }
    }

    /// The next item if one is queued.
    pub fn try_recv(&mut self) -> Result<WatchItem, TryRecvError> {
        self.queue.take(None)
    }

    /// Items queued now.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
