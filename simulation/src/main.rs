//! The simulation runner: `cargo run --release -p kuorum-sim -- --seeds 0..100`.
//!
//! Runs each seed (printing the options it derived), checks it, and prints a progress
//! line, the coverage counters and a summary; a failing seed prints the one-line command
//! that replays it. Every seed runs in a process of its own, as its replay command
//! does. `--determinism` runs every seed twice and compares trace hashes (D1).
//! `--mutation NAME` (needs `--features mutations`) runs with one deliberate bug and
//! reports which checker caught it at which seed.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use kuorum_mutation::Mutation;
use kuorum_sim::options::SimOptions;
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
    /// Run every seed a second time and require the same trace hash (D1): what the
    /// printed replay command promises.
    #[arg(long)]
    determinism: bool,
    /// Run --seed in this process and print its report (what the runner reads).
    #[arg(long, hide = true)]
    child: bool,
    /// Select a deliberate bug (stale-read, drop-event, skip-precondition,
    /// ack-before-fsync, early-bookmark, removed-node-serves); stops at the first seed that catches it.
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
    // `KUORUM_SIM_LOG=openraft=debug`: the nodes' tracing on stderr, to debug one seed.
    if let Ok(filter) = std::env::var("KUORUM_SIM_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .without_time()
            .init();
    }
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
    if mutation.is_some() && !kuorum_mutation::select(None) {
        unreachable!()
    }
    if mutation.is_some() && !cfg!(feature = "mutations") {
        eprintln!("mutations are compiled out: run with `--features mutations`");
        return ExitCode::from(2);
    }

    if args.child {
        return child(seeds.start, mutation);
    }

    let started = Instant::now();
    let total = seeds.end - seeds.start;
    let mut coverage: Vec<(String, u64)> = Vec::new();
    let mut by_property: BTreeMap<String, u64> = BTreeMap::new();
    let (mut clean, mut failed, mut inconclusive, mut done) = (0u64, Vec::new(), 0u64, 0u64);
    for seed in seeds {
        let Some(r) = run_in_child(seed, args.mutation.as_deref()) else {
            eprintln!("\nseed {seed}: the run's process failed");
            failed.push(seed);
            continue;
        };
        done += 1;
        if args.verbose || !r.clean() {
            eprintln!("\n{}", r.options);
        }
        let mut problems: Vec<String> = r.violations.iter().map(|(p, d)| format!("{p}: {d}")).collect();
        if let Some(e) = &r.sim_error {
            problems.push(format!("liveness: the simulation did not finish: {e}"));
        }
        if args.determinism {
            match run_in_child(seed, args.mutation.as_deref()) {
                Some(again) if again.trace_hash == r.trace_hash => {}
                Some(again) => {
                    problems.push(format!("D1: trace hash {:016x}, replayed {:016x}", r.trace_hash, again.trace_hash))
                }
                None => problems.push("D1: the replay process failed".into()),
            }
        }
        for (name, n) in &r.coverage {
            match coverage.iter_mut().find(|(k, _)| k == name) {
                Some((_, total)) => *total += n,
                None => coverage.push((name.clone(), *n)),
            }
        }
        inconclusive += r.inconclusive;
        if problems.is_empty() {
            clean += 1;
        } else {
            for (p, _) in &r.violations {
                *by_property.entry(p.clone()).or_default() += 1;
            }
            for p in problems.iter().take(5) {
                eprintln!("  VIOLATION {p}");
            }
            if problems.len() > 5 {
                eprintln!("  ... and {} more", problems.len() - 5);
            }
            eprintln!("  replay: {}", SimOptions::from_seed(seed).replay_command(mutation.map(|m| m.name())));
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
                let props: std::collections::BTreeSet<&str> = r.violations.iter().map(|(p, _)| p.as_str()).collect();
                println!("\nmutation {} caught at seed {seed} (after {done} seeds) by {props:?}", m.name());
                return ExitCode::SUCCESS;
            }
        }
    }
    eprintln!();
    println!("seeds: {total}, clean: {clean}, failing: {failed:?}, K2 inconclusive: {inconclusive}");
    println!("violations by property: {by_property:?}");
    println!("coverage:");
    for (name, n) in &coverage {
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

/// What one seed's process reported.
struct SeedResult {
    options: String,
    violations: Vec<(String, String)>,
    inconclusive: u64,
    sim_error: Option<String>,
    trace_hash: u64,
    coverage: Vec<(String, u64)>,
}

impl SeedResult {
    fn clean(&self) -> bool {
        self.violations.is_empty() && self.sim_error.is_none()
    }
}

/// `--child`: runs one seed and prints its report, one tab-separated record per line.
fn child(seed: u64, mutation: Option<Mutation>) -> ExitCode {
    let r = run_seed(seed, mutation);
    let one_line = |s: &str| s.replace(['\n', '\t'], " ");
    println!("options\t{}", r.opts);
    for v in &r.violations {
        println!("violation\t{}\t{}", v.property, one_line(&v.detail));
    }
    println!("inconclusive\t{}", r.inconclusive.len());
    if let Some(e) = &r.sim_error {
        println!("sim-error\t{}", one_line(e));
    }
    println!("trace-hash\t{:016x}", r.trace_hash);
    for (name, n) in r.coverage.rows() {
        println!("coverage\t{name}\t{n}");
    }
    ExitCode::SUCCESS
}

/// Runs `seed` in a fresh process, as its replay command would: state that outlives a
/// run inside one process (tokio's global task ids, for one) would otherwise make a
/// seed behave differently after other seeds than on its own.
fn run_in_child(seed: u64, mutation: Option<&str>) -> Option<SeedResult> {
    let mut cmd = std::process::Command::new(std::env::current_exe().ok()?);
    cmd.args(["--child", "--seed", &seed.to_string()]);
    if let Some(m) = mutation {
        cmd.args(["--mutation", m]);
    }
    let out = cmd.stderr(std::process::Stdio::inherit()).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let mut r = SeedResult {
        options: String::new(),
        violations: Vec::new(),
        inconclusive: 0,
        sim_error: None,
        trace_hash: 0,
        coverage: Vec::new(),
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f = line.splitn(3, '\t');
        match (f.next(), f.next(), f.next()) {
            (Some("options"), Some(o), _) => r.options = o.to_string(),
            (Some("violation"), Some(p), Some(d)) => r.violations.push((p.to_string(), d.to_string())),
            (Some("inconclusive"), Some(n), _) => r.inconclusive = n.parse().ok()?,
            (Some("sim-error"), Some(e), _) => r.sim_error = Some(e.to_string()),
            (Some("trace-hash"), Some(h), _) => r.trace_hash = u64::from_str_radix(h, 16).ok()?,
            (Some("coverage"), Some(name), Some(n)) => r.coverage.push((name.to_string(), n.parse().ok()?)),
            _ => {}
        }
    }
    Some(r)
}
