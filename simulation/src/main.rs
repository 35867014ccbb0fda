//! The simulation runner: `cargo run --release -p kuorum-sim -- --seeds 0..100`.
//!
//! Runs each seed (printing the options it derived), checks it, and prints a progress
//! line, the coverage counters and a summary; a failing seed prints the one-line command
//! that replays it. `--determinism` runs every seed twice and compares trace hashes
//! (D1). `--mutation NAME` (needs `--features mutations`) runs with one deliberate bug
//! and reports which checker caught it at which seed.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use kuorum_api::mutation::Mutation;
use kuorum_sim::faults::Coverage;
use kuorum_sim::run_seed;

#[derive(Parser, Debug)]
#[command(about = "Run kuorum clusters in a deterministic simulation and check every run")]
struct Args {
    /// Seeds to run, as A..B (B excluded).
    #[arg(long, default_value = "0..10")]
    seeds: String,
    /// One seed (overrides --seeds).
    #[arg(long)]
    seed: Option<u64>,
    /// Replay every seed in a fresh process and require the same trace hash (D1): what
    /// the printed replay command promises.
    #[arg(long)]
    determinism: bool,
    /// Print only the trace hash of --seed (used by --determinism).
    #[arg(long, hide = true)]
    print_hash: bool,
    /// Select a deliberate bug (stale-read, drop-event, skip-precondition,
    /// ack-before-fsync, early-bookmark); stops at the first seed that catches it.
    #[arg(long)]
    mutation: Option<String>,
    /// Print every seed's options, not only failing ones.
    #[arg(long, short)]
    verbose: bool,
}

fn parse_range(s: &str) -> Option<std::ops::Range<u64>> {
    let (a, b) = s.split_once("..")?;
    Some(a.trim().parse().ok()?..b.trim().parse().ok()?)
}

fn main() -> ExitCode {
    let args = Args::parse();
    let seeds = match (args.seed, parse_range(&args.seeds)) {
        (Some(s), _) => s..s + 1,
        (None, Some(r)) => r,
        (None, None) => {
            eprintln!("--seeds must look like 0..100");
            return ExitCode::from(2);
        }
    };
    let mutation = match args.mutation.as_deref().map(|m| (m, Mutation::parse(m))) {
        None => None,
        Some((_, Some(m))) => Some(m),
        Some((m, None)) => {
            eprintln!("unknown mutation {m}");
            return ExitCode::from(2);
        }
    };
    if mutation.is_some() && !kuorum_api::mutation::select(None) {
        unreachable!()
    }
    if mutation.is_some() && !cfg!(feature = "mutations") {
        eprintln!("mutations are compiled out: run with `--features mutations`");
        return ExitCode::from(2);
    }

    if args.print_hash {
        let r = run_seed(seeds.start, mutation);
        println!("trace-hash {:016x}", r.trace_hash);
        return ExitCode::SUCCESS;
    }

    let started = Instant::now();
    let total = seeds.end - seeds.start;
    let mut coverage = Coverage::default();
    let mut by_property: BTreeMap<&'static str, u64> = BTreeMap::new();
    let (mut clean, mut failed, mut inconclusive, mut done) = (0u64, Vec::new(), 0u64, 0u64);
    for seed in seeds {
        let r = run_seed(seed, mutation);
        done += 1;
        if args.verbose || !r.clean() {
            eprintln!("\n{}", r.opts);
        }
        let mut problems: Vec<String> = r.violations.iter().map(|v| v.to_string()).collect();
        if let Some(e) = &r.sim_error {
            problems.push(format!("liveness: the simulation did not finish: {e}"));
        }
        if args.determinism {
            match replay_hash(seed, args.mutation.as_deref()) {
                Some(h) if h == r.trace_hash => {}
                Some(h) => problems.push(format!("D1: trace hash {:016x}, replayed {h:016x}", r.trace_hash)),
                None => problems.push("D1: the replay process failed".into()),
            }
        }
        coverage.add(&r.coverage);
        inconclusive += r.inconclusive.len() as u64;
        if problems.is_empty() {
            clean += 1;
        } else {
            for v in &r.violations {
                *by_property.entry(v.property).or_default() += 1;
            }
            for p in problems.iter().take(5) {
                eprintln!("  VIOLATION {p}");
            }
            if problems.len() > 5 {
                eprintln!("  ... and {} more", problems.len() - 5);
            }
            eprintln!("  replay: {}", r.opts.replay_command(mutation.map(|m| m.name())));
            failed.push(seed);
        }
        eprint!(
            "\r[{done}/{total}] seed {seed}: {} | clean {clean} | failing {} | {:.0} s ",
            if problems.is_empty() { "ok" } else { "FAIL" },
            failed.len(),
            started.elapsed().as_secs_f64()
        );
        if let Some(m) = mutation {
            if !problems.is_empty() {
                let props: Vec<&str> = r.violations.iter().map(|v| v.property).collect();
                println!(
                    "\nmutation {} caught at seed {seed} (after {done} seeds) by {:?}",
                    m.name(),
                    props.iter().collect::<std::collections::BTreeSet<_>>()
                );
                return ExitCode::SUCCESS;
            }
        }
    }
    eprintln!();
    println!("seeds: {total}, clean: {clean}, failing: {failed:?}, K2 inconclusive: {inconclusive}");
    println!("violations by property: {by_property:?}");
    println!("coverage:");
    for (name, n) in coverage.rows() {
        println!("  {name:<34} {n}");
    }
    println!("wall time: {:.1} s", started.elapsed().as_secs_f64());
    if let Some(m) = mutation {
        println!("mutation {} NOT caught in {total} seeds", m.name());
        return ExitCode::FAILURE;
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs `seed` again in a fresh process and reads its trace hash.
fn replay_hash(seed: u64, mutation: Option<&str>) -> Option<u64> {
    let mut cmd = std::process::Command::new(std::env::current_exe().ok()?);
    cmd.args(["--seed", &seed.to_string(), "--print-hash"]);
    if let Some(m) = mutation {
        cmd.args(["--mutation", m]);
    }
    let out = cmd.stderr(std::process::Stdio::null()).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text.lines().find_map(|l| l.strip_prefix("trace-hash "))?;
    u64::from_str_radix(hex.trim(), 16).ok()
}
