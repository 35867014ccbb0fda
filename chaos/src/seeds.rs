//! Owns running many seeds: every seed of a range, on as many threads as the machine
//! has cores, or only the one in `KUORUM_CHAOS_SEED` when it is set (the replay of a
//! failure). Results come back in seed order, so "the first failing seed" does not
//! depend on which thread finished first.
//!
//! One batch runs at a time in a process ([`BATCH`]): runs side by side in one process
//! share state (tokio's global task ids among it) and can take another trajectory than
//! their replays (docs/chaos.md, Limits), so the tests of one binary do not overlap
//! their batches, and [`assert_caught`], which compares a failure with its replay, runs
//! its seeds one at a time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::simulation::{Failure, Report, Simulation};

/// The environment variable that replays one seed.
pub const SEED_VAR: &str = "KUORUM_CHAOS_SEED";

/// The seeds to run: `seeds`, or only `KUORUM_CHAOS_SEED` when it is set.
pub fn selected(seeds: impl IntoIterator<Item = u64>) -> Vec<u64> {
    match std::env::var(SEED_VAR).ok().and_then(|s| s.trim().parse().ok()) {
        Some(one) => vec![one],
        None => seeds.into_iter().collect(),
    }
}

/// Held by each batch of runs, so one runs at a time in a process.
static BATCH: Mutex<()> = Mutex::new(());

fn one_batch_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    BATCH.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `make(seed)` for every selected seed; the results in seed order.
pub fn run_seeds<F>(seeds: impl IntoIterator<Item = u64>, make: F) -> Vec<Result<Report, Failure>>
where
    F: Fn(u64) -> Simulation + Sync,
{
    let _batch = one_batch_at_a_time();
    let seeds = selected(seeds);
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(seeds.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Report, Failure>>>> = Mutex::new(vec![None; seeds.len()]);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&seed) = seeds.get(i) else { break };
                let result = make(seed).run();
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(result);
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().map(|r| r.expect("every seed ran")).collect()
}

/// Runs every selected seed and panics with the first failure (its seed, its faults,
/// and how to replay it). The usual body of a controller's chaos test.
pub fn check_seeds<F>(seeds: impl IntoIterator<Item = u64>, make: F) -> Vec<Report>
where
    F: Fn(u64) -> Simulation + Sync,
{
    let mut reports = Vec::new();
    for result in run_seeds(seeds, make) {
        match result {
            Ok(r) => reports.push(r),
            Err(f) => panic!("{f}"),
        }
    }
    reports
}

/// The first failing seed, if any: for a test that expects a planted bug to be caught.
pub fn first_failure<F>(seeds: impl IntoIterator<Item = u64>, make: F) -> Option<Failure>
where
    F: Fn(u64) -> Simulation + Sync,
{
    run_seeds(seeds, make).into_iter().find_map(Result::err)
}

/// A `main` for running a scenario by hand: runs the seeds of the first `FIRST..END`
/// argument (`0..20` without one), prints each verdict and a summary, and exits with 1
/// if any seed failed.
pub fn main_over_seeds<F>(args: &[String], make: F) -> !
where
    F: Fn(u64) -> Simulation + Sync,
{
    let (first, end) = args
        .iter()
        .find_map(|a| a.split_once("..").and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?))))
        .unwrap_or((0u64, 20u64));
    let mut failed = 0;
    for result in run_seeds(first..end, make) {
        match result {
            Ok(r) => println!(
                "seed {}: ok ({} faults, {} changes applied)",
                r.seed,
                r.faults.iter().filter(|f| !f.contains(" end of ")).count(),
                r.history.changes.len()
            ),
            Err(f) => {
                failed += 1;
                println!("{f}");
            }
        }
    }
    println!("{failed} of {} seeds failed", selected(first..end).len());
    std::process::exit(i32::from(failed > 0));
}

/// How many seeds a test runs: `KUORUM_CHAOS_SEEDS`, or `default`.
pub fn seed_count(default: u64) -> u64 {
    std::env::var("KUORUM_CHAOS_SEEDS").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(default)
}

/// For a test that expects a bug to be caught: the first failing seed among `seeds` (run
/// one at a time), which must fail with a reason containing `expected`, and whose replay
/// must fail the same way (the same invariant, under the same faults). Panics otherwise.
pub fn assert_caught<F>(seeds: impl IntoIterator<Item = u64>, make: F, expected: &str) -> Failure
where
    F: Fn(u64) -> Simulation + Sync,
{
    let _batch = one_batch_at_a_time();
    let seeds = selected(seeds);
    let n = seeds.len();
    // One at a time, each alone in the process, as its replay runs.
    let failure =
        seeds.into_iter().find_map(|seed| make(seed).run().err()).unwrap_or_else(|| panic!("no failure in {n} seeds"));
    assert!(failure.reason.contains(expected), "caught, but not by `{expected}`: {failure}");
    // The replay breaks the same invariant under the same faults. Its instants may be a
    // few milliseconds off when earlier runs of this process moved tokio's global task
    // ids (docs/chaos.md, Limits); a replay in a fresh process is exact.
    let again = make(failure.seed).run().expect_err("a failing seed fails again");
    assert!(again.reason.contains(expected), "seed {} replayed as {again}, not `{expected}`", failure.seed);
    assert_eq!(&again.faults, &failure.faults, "seed {} did not replay the same faults", failure.seed);
    failure
}
