#!/usr/bin/env bash
# Build kuorum (release) and run a local cluster: `scripts/up.sh [--nodes 3] [--data-dir DIR]
# [--base-port 6443]`. All arguments go to `kuorum up`, which runs in the directory you
# called this from (its default data dir is ./kuorum-data). Ctrl-C stops it.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kuorum-target}"

bash "$ROOT/scripts/setup.sh"
export PATH="${KUORUM_VENV:-$HOME/.cache/kuorum-venv}/bin:$PATH"   # kubectl v1.37 first
# Build from the repo root: cargo reads .cargo/config.toml (the workspace RUSTFLAGS) from
# the current directory, and other flags would rebuild everything, RocksDB included.
# `--workspace` resolves features as scripts/test.sh's build does, so after it this is a
# no-op (`-p kuorum` alone resolves fewer features and recompiled ten crates).
(cd "$ROOT" && cargo build --release --workspace --bin kuorum)
exec "$CARGO_TARGET_DIR/release/kuorum" up "$@"
