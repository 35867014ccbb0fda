//! Owns what a connection and API Priority and Fairness share about wide requests (those
//! that take more than one seat of a Limited level: a LIST of more than a hundred
//! objects): the connection layer puts a [`WideRequests`] in each request's extensions,
//! APF counts the request in it for as long as it holds its seats, and the connection
//! layer may then run the connection at a lower CPU priority (`kuorum_node::background_cpu`).
//!
//! Seats bound how many wide requests run at once, not the CPU each takes; this is how
//! the one-seat requests beside them are kept from waiting for a core on a busy machine.

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;

/// The wide requests of one connection (HTTP/1.1) or one stream of it (h2), and where
/// that runs. A stream's are counted in its connection's as well: the connection's task
/// writes every stream's bytes to the socket.
#[derive(Clone, Default)]
pub struct WideRequests {
    own: Arc<State>,
    connection: Option<Arc<State>>,
}

#[derive(Default)]
struct State {
    running: AtomicUsize,
    /// Whether something will move the connection when it runs a wide request.
    movable: AtomicBool,
    /// Whether the connection runs at the lower priority now.
    moved: AtomicBool,
}

impl WideRequests {
    /// A stream's of this connection.
    pub fn stream(&self) -> WideRequests {
        WideRequests { own: Arc::default(), connection: Some(self.own.clone()) }
    }

    /// Whether a wide request of this connection or stream holds its seats.
    pub fn any(&self) -> bool {
        self.own.running.load(Ordering::Acquire) > 0
    }

    /// Says that this connection or stream will be moved (between its polls) while
    /// [`Self::any`].
    pub fn set_movable(&self) {
        self.own.movable.store(true, Ordering::Release);
    }

    /// Says where it runs now.
    pub fn set_moved(&self, moved: bool) {
        self.own.moved.store(moved, Ordering::Release);
    }

    /// Counts one more wide request, until the guard is dropped (APF does, for a request
    /// it gives more than one seat).
    pub fn start(&self) -> WideGuard {
        for s in std::iter::once(&self.own).chain(&self.connection) {
            s.running.fetch_add(1, Ordering::AcqRel);
        }
        WideGuard(self.clone())
    }
}

/// One wide request, counted while it holds its seats.
pub struct WideGuard(WideRequests);

impl WideGuard {
    /// Waits until the connection has moved, if it is to: the request's work then runs
    /// there. Each wait wakes the task at once: the mover acts between two polls.
    pub async fn moved(&self) {
        poll_fn(|cx| {
            let own = &self.0.own;
            if own.movable.load(Ordering::Acquire) && !own.moved.load(Ordering::Acquire) {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            Poll::Ready(())
        })
        .await
    }
}

impl Drop for WideGuard {
    fn drop(&mut self) {
        for s in std::iter::once(&self.0.own).chain(&self.0.connection) {
            s.running.fetch_sub(1, Ordering::AcqRel);
        }
    }
}
