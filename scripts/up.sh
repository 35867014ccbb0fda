#!/usr/bin/env bash
# Build kuorum (release) and run a local cluster: `scripts/up.sh [--nodes 3] [--data-dir DIR]
# [--base-port 6443]`. All arguments go to `kuorum up`. Ctrl-C stops it.
set -euo pipefail

cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kuorum-target}"

bash scripts/setup.sh
export PATH="${KUORUM_VENV:-$HOME/.cache/kuorum-venv}/bin:$PATH"   # kubectl v1.37 first
cargo build --release -p kuorum
exec "$CARGO_TARGET_DIR/release/kuorum" up "$@"
