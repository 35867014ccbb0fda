//! Owns the process's OS randomness while a simulation runs: the simulator defines the
//! libc symbol `getrandom`, so every "random" seed drawn on a simulation thread (rand's
//! thread RNG, which openraft uses for election timeouts; std's hash keys) comes from the
//! run's seed instead of the kernel. Each run uses a fresh thread, so thread-local
//! generators seeded on first use are seeded from the run's seed too.
//!
//! Only this package's binaries and tests link it (build.rs exports the symbol); kuorum
//! itself never does.

use std::cell::Cell;

use kuorum_api::seams::splitmix64_step;

thread_local! {
    static STATE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Makes this thread's `getrandom` deterministic from `seed`.
pub fn seed_thread(seed: u64) {
    STATE.with(|s| s.set(Some(seed ^ 0xD1CE_D1CE_D1CE_D1CE)));
}

/// `ssize_t getrandom(void *buf, size_t buflen, unsigned int flags)`. On a thread that
/// was not seeded (any thread outside a run) it still answers from a fixed stream:
/// nothing in a simulation binary needs secrets.
///
/// # Safety
/// `buf` must be valid for `buflen` bytes, as libc's contract says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getrandom(buf: *mut u8, buflen: usize, _flags: u32) -> isize {
    let mut state = STATE.try_with(|s| s.get()).ok().flatten().unwrap_or(0x5EED);
    let out = unsafe { std::slice::from_raw_parts_mut(buf, buflen) };
    for chunk in out.chunks_mut(8) {
        let v = splitmix64_step(&mut state).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    let _ = STATE.try_with(|s| s.set(Some(state)));
    buflen as isize
}
