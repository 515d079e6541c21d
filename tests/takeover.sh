#!/usr/bin/env bash
# A provider swaps binaries, against the real upstream api-syncagent v0.7.0
# (built from Go modules by tests/bench/upstream.sh, ~5 minutes the first
# time, instant afterwards): syncweave hands its objects to upstream under
# the same agent name and takes them back (tests/e2e/takeover.rs). Apart
# from the test command because of that build; about 3 minutes afterwards.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
tests/setup.sh >/dev/null
upstream=$(tests/bench/upstream.sh)
cargo build -p syncweave --bins --tests
SYNCWEAVE_UPSTREAM_BIN="$upstream" cargo test -p syncweave --test e2e -- \
    --ignored --test-threads=1 --nocapture takeover::
