#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets) for a fixed budget, FUZZ_SECONDS each
# (default 20), starting from the corpus kept in fuzz/corpus/<target> and adding what it
# finds there. A crash or a timeout fails the script and leaves the input in
# fuzz/artifacts/<target>; `cargo fuzz run <target> <that file>` replays it.
#
# cargo-fuzz passes `-Z` flags to rustc; RUSTC_BOOTSTRAP lets the machine's one (stable)
# toolchain take them. The targets are built without a sanitizer (the code under test is
# safe Rust: what is looked for is panics, hangs and runaway memory) into a target dir of
# their own outside the clone.
set -euo pipefail

cd "$(dirname "$0")/.."
SECS="${FUZZ_SECONDS:-20}"
TARGET_DIR="${KUORUM_FUZZ_TARGET:-$HOME/.cache/kuorum-fuzz-target}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    cargo install --locked cargo-fuzz --version 0.13.2
fi

targets=$(cargo fuzz list)
cargo fuzz build --sanitizer none --target-dir "$TARGET_DIR"
for t in $targets; do
    mkdir -p "fuzz/corpus/$t"
    before=$(ls "fuzz/corpus/$t" | wc -l)
    echo "fuzz: $t for ${SECS}s (corpus: $before inputs)"
    log="$TARGET_DIR/fuzz-$t.log"
    if ! cargo fuzz run "$t" --sanitizer none --target-dir "$TARGET_DIR" -- \
        -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        echo "fuzz: $t failed; the input is in fuzz/artifacts/$t" >&2
        exit 1
    fi
    grep -E "^stat::(number_of_executed_runs|new_units_added)" "$log" | sed "s/^/fuzz: $t /" || true
done
echo "fuzz: every target ran clean for ${SECS}s"
