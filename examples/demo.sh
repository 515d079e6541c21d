#!/usr/bin/env bash
# Local demo: builds syncweave, starts a local kcp, runs the agent, creates a
# consumer object and shows it synced down and its status synced up.
# Add --keep to leave everything running until Ctrl-C.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
echo "==> Installing prerequisites (fast when present)"
tests/setup.sh >/dev/null
echo "==> Building syncweave"
# Not quiet: a first build takes minutes, and cargo shows its progress.
cargo build -p syncweave -p syncweave-tests --bins
exec target/debug/demo "$@"
