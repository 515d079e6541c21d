#!/usr/bin/env bash
# Builds upstream kcp api-syncagent v0.7.0 from Go modules (wrapper module in
# tests/upstream/) into $SYNCWEAVE_TOOLS_DIR (default ~/.cache/syncweave),
# once per stamp of the wrapper module, like tests/setup.sh's go_tool, and
# links it there as `api-syncagent`. Prints the binary's path on stdout.
# The first build takes ~5 minutes on 2 cores; afterwards this is instant.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tools=${SYNCWEAVE_TOOLS_DIR:-$HOME/.cache/syncweave}
mkdir -p "$tools"
dir=$repo/tests/upstream
stamp=$(cat "$dir"/go.mod "$dir"/go.sum "$repo/tests/gotools.sh" | sha256sum | cut -c1-12)
bin="$tools/api-syncagent-v0.7.0-$stamp"
if [ ! -x "$bin" ]; then
  command -v go >/dev/null 2>&1 || { echo "[bench] Go is required to build upstream api-syncagent" >&2; exit 1; }
  echo "[bench] building upstream api-syncagent v0.7.0 from Go modules (first time: ~5 min)…" >&2
  start=$(date +%s)
  "$repo/tests/gotools.sh" "$dir" github.com/kcp-dev/api-syncagent/cmd/api-syncagent "$bin.tmp.$$" >&2
  mv "$bin.tmp.$$" "$bin"
  echo "[bench] api-syncagent built in $(( $(date +%s) - start ))s" >&2
fi
ln -sf "$bin" "$tools/api-syncagent"
echo "$bin"
