#!/usr/bin/env bash
# Churn benchmark: the agent's memory, threads and tasks under 30 minutes of
# steady create/update/delete traffic against a real kcp and service cluster
# (docs/performance.md quotes it). Not part of the tests.
#
#   tests/bench/churn.sh                         # 30 min, 5 ops/s, 300 objects, 10 workspaces
#   tests/bench/churn.sh --minutes 8 --rate 5    # a quick run
#   tests/bench/churn.sh --help
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
tests/setup.sh >/dev/null
if [ -z "${SYNCWEAVE_BIN:-}" ]; then
  cargo build --release -p syncweave
  export SYNCWEAVE_BIN="$repo/target/release/syncweave"
fi
cargo build --release -p syncweave-tests --bin churn
exec "$repo/target/release/churn" "$@"
