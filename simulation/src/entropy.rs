//! Owns the process's OS randomness and OS clocks while a simulation runs.
//!
//! - The simulator defines the libc symbol `getrandom`, so every "random" seed drawn on a
//!   simulation thread (rand's thread RNG, which openraft uses for election timeouts;
//!   std's hash keys) comes from the run's seed instead of the kernel. Each run uses a
//!   fresh thread, so thread-local generators seeded on first use are seeded from the
//!   run's seed too.
//! - It also defines `clock_gettime`, and on a simulation thread the real clocks stand
//!   still. Simulated time is tokio's (turmoil pauses and advances it), but libraries on
//!   the simulated path also read `std::time::Instant`: h2 forgets a reset stream once
//!   one *real* second has passed, so a late frame for it is ignored on a fast machine and
//!   answered differently on a loaded one. A frozen clock makes such code deterministic.
//!   The frozen monotonic time is the real time when the thread was seeded, so an
//!   absolute deadline computed from it (a timed park) is already in the past rather than
//!   far in the future.
//!
//! - It seeds fastrand's thread RNG (kube-runtime's backoff jitter), which does not
//!   use `getrandom`.
//!
//! Only this package's binaries and tests, and kuorum-chaos's, link it (their build.rs
//! exports the symbols); kuorum itself never does.

use std::cell::Cell;

use kuorum_api::seams::splitmix64_step;

thread_local! {
    static STATE: Cell<Option<u64>> = const { Cell::new(None) };
}

thread_local! {
    /// The monotonic time this thread's clocks stand at, once seeded.
    static FROZEN: Cell<Option<libc::timespec>> = const { Cell::new(None) };
}

/// The wall-clock time a simulation thread sees: 2026-01-01T00:00:00Z.
const FROZEN_REALTIME_SECS: i64 = 1_767_225_600;

/// Makes this thread's `getrandom` deterministic from `seed` and stops its clocks.
pub fn seed_thread(seed: u64) {
    STATE.with(|s| s.set(Some(seed ^ 0xD1CE_D1CE_D1CE_D1CE)));
    // fastrand's thread RNG seeds itself by hashing the thread's id and the clock, not
    // from getrandom: two runs of one seed are on different threads.
    fastrand::seed(seed ^ 0xFA57_FA57_FA57_FA57);
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec to write.
    unsafe { real_clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    FROZEN.with(|f| f.set(Some(now)));
}

/// The kernel's clock, bypassing this file's `clock_gettime`.
///
/// # Safety
/// `tp` must be valid for writing one timespec.
unsafe fn real_clock_gettime(clock: libc::clockid_t, tp: *mut libc::timespec) -> libc::c_int {
    unsafe { libc::syscall(libc::SYS_clock_gettime, clock, tp) as libc::c_int }
}

/// `int clock_gettime(clockid_t clock, struct timespec *tp)`: frozen on a simulation
/// thread (monotonic clocks at the time the thread was seeded, wall clocks at
/// [`FROZEN_REALTIME_SECS`]); the kernel's answer everywhere else.
///
/// # Safety
/// `tp` must be valid for writing one timespec, as libc's contract says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clock_gettime(clock: libc::clockid_t, tp: *mut libc::timespec) -> libc::c_int {
    if let Some(frozen) = FROZEN.try_with(|f| f.get()).ok().flatten() {
        let value = match clock {
            libc::CLOCK_MONOTONIC | libc::CLOCK_MONOTONIC_RAW | libc::CLOCK_MONOTONIC_COARSE | libc::CLOCK_BOOTTIME => {
                Some(frozen)
            }
            libc::CLOCK_REALTIME | libc::CLOCK_REALTIME_COARSE => {
                Some(libc::timespec { tv_sec: FROZEN_REALTIME_SECS, tv_nsec: 0 })
            }
            _ => None,
        };
        if let Some(v) = value {
            // SAFETY: the caller passes a valid timespec pointer.
            unsafe { *tp = v };
            return 0;
        }
    }
    unsafe { real_clock_gettime(clock, tp) }
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
