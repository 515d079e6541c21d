#!/usr/bin/env bash
# Side-by-side benchmark: syncweave vs upstream kcp api-syncagent v0.7.0
# (docs/performance.md explains the figures). Not part of the tests.
#
#   tests/bench/run.sh                     # default sizes (10 000 + 1 000 objects, 50 workspaces)
#   tests/bench/run.sh --objects 1000 --latency-objects 200 --window 30   # a quick run
#   tests/bench/run.sh --startup           # start-up time and peak RSS only (S)
#   tests/bench/run.sh --help              # every option
#
# It installs what it needs first (tests/setup.sh: kcp, kube-apiserver, etcd,
# helm; tests/bench/upstream.sh: upstream api-syncagent, all built from Go
# modules into ~/.cache/syncweave and cached), builds syncweave and the bench
# driver in release mode, then runs the driver (tests/src/bin/bench), which
# prints progress, both agents' figures and the ratios, and writes them as
# JSON to target/bench/results.json.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
t0=$(date +%s)
phase() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }

for a in "$@"; do
  case $a in -h|--help) exec cargo run -q --release -p syncweave-tests --bin bench -- --help ;; esac
done

phase "prerequisites (kcp, kube-apiserver, etcd, helm, upstream api-syncagent)"
tests/setup.sh >/dev/null
upstream=$(tests/bench/upstream.sh)

phase "building syncweave and the bench driver (release)"
# Two invocations, so syncweave is built exactly as `cargo build -p syncweave
# --release` builds it (no features unified with the driver's dependencies).
cargo build --release -p syncweave
cargo build --release -p syncweave-tests --bin bench

phase "benchmark"
SYNCWEAVE_BIN="$repo/target/release/syncweave" UPSTREAM_SYNCAGENT_BIN="$upstream" \
  "$repo/target/release/bench" "$@"
phase "done"
