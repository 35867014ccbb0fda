#!/usr/bin/env bash
# The one test command: setup, release build of everything, every test, then every
# fuzz target for a fixed budget.
#
# Everything builds with the release profile into a target dir outside the clone
# (${CARGO_TARGET_DIR:-$HOME/.cache/kuorum-target}), so RocksDB's C++ build (about 20
# minutes on 2 cores) happens once per machine and fresh clones reuse it.
#
# Extra arguments go to `cargo test` (e.g. `scripts/test.sh -p kuorum-e2e`).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT="$PWD"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kuorum-target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
export KUORUM_VENV="${KUORUM_VENV:-$HOME/.cache/kuorum-venv}"
# The chaos examples' fixed controllers run a fixed sample of 100 seeds here (about 15
# minutes less than their default 1,000; `cargo test --release -p kuorum-chaos` runs all).
export KUORUM_CHAOS_SEEDS="${KUORUM_CHAOS_SEEDS:-100}"

step() { printf '\n=== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
start=$(date +%s)

step "setup"
bash "$ROOT/scripts/setup.sh"

# The end-to-end tests drive the release binary and the venv's kubectl v1.37 (not
# whatever kubectl is on PATH).
export KUORUM_BIN="$CARGO_TARGET_DIR/release/kuorum"
export KUBECTL="${KUBECTL:-$KUORUM_VENV/bin/kubectl}"
export PATH="$KUORUM_VENV/bin:$PATH"

step "cargo build --release --workspace --all-targets (target: $CARGO_TARGET_DIR)"
cargo build --release --workspace --all-targets

step "cargo test --release --workspace"
cargo test --release --workspace "$@"

step "fuzz targets, ${FUZZ_SECONDS:-15} s each (scripts/fuzz.sh)"
FUZZ_SECONDS="${FUZZ_SECONDS:-15}" bash "$ROOT/scripts/fuzz.sh"

step "all tests passed in $(( $(date +%s) - start )) s"
