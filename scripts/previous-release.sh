#!/usr/bin/env bash
# Builds the previous release's binary (the pinned commit below, the last one before data
# formats were numbered) for the rolling-upgrade test, once, and prints its path:
#
#   KUORUM_PREVIOUS_BIN=$(scripts/previous-release.sh) scripts/test.sh -p kuorum-e2e --test upgrade_e2e
#
# It builds in a git worktree of this clone with the shared target dir, so RocksDB is not
# compiled again (about 10 minutes on 2 cores for the workspace's own crates), copies the
# binary to ~/.cache/kuorum-previous/<commit>/kuorum, and removes the copy cargo left at
# $CARGO_TARGET_DIR/release/kuorum, so the next build of this checkout puts its own back.
# CI does not run it: see tests/tests/upgrade_e2e.rs.
set -euo pipefail

COMMIT=f960e37cca3e1108e6a60d67963f77fe163a61e3
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/kuorum-target}"
OUT="${KUORUM_PREVIOUS_DIR:-$HOME/.cache/kuorum-previous}/${COMMIT:0:7}"
if [ -x "$OUT/kuorum" ]; then
    echo "$OUT/kuorum"
    exit 0
fi
bash scripts/setup.sh >&2
TREE=$(mktemp -d)
trap 'git worktree remove --force "$TREE" >/dev/null 2>&1 || true; rm -rf "$TREE"' EXIT
git worktree add --detach "$TREE" "$COMMIT" >&2
(cd "$TREE" && cargo build --release -p kuorum --bin kuorum >&2)
mkdir -p "$OUT"
cp "$CARGO_TARGET_DIR/release/kuorum" "$OUT/kuorum"
rm -f "$CARGO_TARGET_DIR/release/kuorum"
echo "$OUT/kuorum"
