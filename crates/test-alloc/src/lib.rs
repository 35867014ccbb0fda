//! Owns the memory-counting global allocator of the tests that bound what the code under
//! test keeps alive (`crates/watch/tests/watch_memory.rs`, `crates/rest/tests/watch_memory.rs`):
//! [`Counting`] passes every call on to the system allocator and keeps the bytes live at
//! any moment in one process-wide count, read by [`live`]. It counts only once a test
//! binary installs it:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: kuorum_test_alloc::Counting = kuorum_test_alloc::Counting;
//! ```
//!
//! The count is process-wide, so tests that measure with it hold [`alone`] to run one at a
//! time. For tests only (a dev-dependency); it has no dependencies.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The system allocator, counting the bytes live in [`live`].
pub struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The bytes allocated through [`Counting`] and not yet freed (0 unless it is the global
/// allocator). Only differences between two readings mean anything.
pub fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Held by each test that measures with [`live`], so that they run one at a time (a test
/// that panicked while holding it does not stop the others).
pub fn alone() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}
