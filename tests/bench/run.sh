#!/usr/bin/env bash
# Benchmark: syncweave vs upstream kcp api-syncagent v0.7.0 (as shipped and
# with client-side throttling off) vs a plain client making the same writes
# (docs/performance.md explains the figures). Not part of the tests.
#
#   tests/bench/run.sh                        # side by side, default sizes (10 000 objects,
#                                             # 50 workspaces; all four agents, one after the other)
#   tests/bench/run.sh --agents syncweave,ceiling --objects 3000   # a part of it
#   tests/bench/run.sh --scale 100000         # 100 000 objects in 1 000 workspaces, syncweave
#   tests/bench/run.sh --scale 10000          # the same at 10 000 in 100
#   tests/bench/run.sh --startup              # start-up time and peak RSS only (S)
#   tests/bench/run.sh --agents syncweave --objects 3000 --plugin wasm-reads
#                                             # with a Wasm step that reads the consumer's
#                                             # Namespace (--plugin wasm: the same step, no read)
#   tests/bench/run.sh --help                 # every option
#
# It installs what it needs first (tests/setup.sh: kcp, kube-apiserver, etcd,
# helm; tests/bench/upstream.sh: the upstream builds the chosen agents need,
# from Go modules into ~/.cache/syncweave, cached), builds syncweave and the
# bench driver in release mode, then runs the driver (tests/src/bin/bench),
# which prints progress and the figures and writes them as JSON to
# target/bench/ (--out). tests/bench/report.py turns committed JSON into
# docs/performance.md's tables and charts.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
t0=$(date +%s)
phase() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }

# Which agents will run (the driver's defaults, unless --agents is given).
agents="upstream,upstream-unthrottled,syncweave,ceiling"
plugin=none
prev=""
for a in "$@"; do
  case $a in
    -h|--help) exec cargo run -q --release -p syncweave-tests --bin bench -- --help ;;
    --scale|--scale=*) agents=${agents_given:-syncweave} ;;
    --startup) agents=${agents_given:-syncweave,upstream} ;;
    --agents=*) agents_given=${a#--agents=}; agents=$agents_given ;;
    --plugin=*) plugin=${a#--plugin=} ;;
  esac
  if [ "$prev" = --plugin ]; then plugin=$a; fi
  if [ "$prev" = --agents ]; then agents_given=$a; agents=$a; fi
  prev=$a
done

phase "prerequisites (kcp, kube-apiserver, etcd, helm, upstream builds for: $agents)"
tests/setup.sh >/dev/null
case ",$agents," in
  *,upstream,*) export UPSTREAM_SYNCAGENT_BIN=$(tests/bench/upstream.sh) ;;
esac
case ",$agents," in
  *,upstream-unthrottled,*) export UPSTREAM_UNTHROTTLED_BIN=$(tests/bench/upstream.sh --unthrottled) ;;
esac

phase "building syncweave and the bench driver (release)"
# Two invocations, so syncweave is built exactly as `cargo build -p syncweave
# --release` builds it (no features unified with the driver's dependencies).
if [ -z "${SYNCWEAVE_BIN:-}" ]; then
  cargo build --release -p syncweave
  export SYNCWEAVE_BIN="$repo/target/release/syncweave"
fi
cargo build --release -p syncweave-tests --bin bench
if [ "$plugin" != none ]; then
  # The reading plugin of --plugin wasm|wasm-reads (tests/plugins/reader).
  "$SYNCWEAVE_BIN" plugin build tests/plugins/reader --out target/plugins
fi

phase "benchmark"
# One benchmark at a time on this machine (whatever the checkout): runs that
# overlap measure each other.
lock=${TMPDIR:-/tmp}/syncweave-bench.lock
exec 9>"$lock"
if ! flock -n 9; then
  echo "[bench] another benchmark holds $lock; wait until it ends (runs must not overlap)" >&2
  exit 1
fi
"$repo/target/release/bench" "$@"
phase "done"
