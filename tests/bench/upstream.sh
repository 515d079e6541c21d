#!/usr/bin/env bash
# Builds upstream kcp api-syncagent v0.7.0 from Go modules into
# $SYNCWEAVE_TOOLS_DIR (default ~/.cache/syncweave), once per stamp of the
# wrapper module, like tests/setup.sh's go_tool, and prints the binary's path
# on stdout.
#
#   tests/bench/upstream.sh                 # as shipped (wrapper: tests/upstream/),
#                                           # also linked as `api-syncagent`
#   tests/bench/upstream.sh --unthrottled   # client-side throttling off (wrapper:
#                                           # tests/bench/upstream-unthrottled/),
#                                           # linked as `api-syncagent-unthrottled`
#
# --unthrottled: upstream v0.7.0 has no QPS flag; its kcp clients load their
# rest.Config from a kubeconfig and leave QPS at 0, so client-go gives each
# REST client a token bucket of rest.DefaultQPS (5/s) and DefaultBurst (10).
# This build replaces k8s.io/client-go with a copy of the very same version,
# downloaded from the Go module proxy here and patched in a build directory
# (never committed): DefaultQPS = -1, which client-go reads as "no rate
# limiter". Nothing else changes; the service-cluster client is unthrottled
# in both builds (controller-runtime's GetConfig sets QPS = -1).
#
# The first build takes ~5 minutes on 2 cores; afterwards this is instant.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tools=${SYNCWEAVE_TOOLS_DIR:-$HOME/.cache/syncweave}
mkdir -p "$tools"
variant=shipped
case ${1:-} in
  "") ;;
  --unthrottled) variant=unthrottled ;;
  *) echo "usage: $0 [--unthrottled]" >&2; exit 2 ;;
esac
command -v go >/dev/null 2>&1 || need_go=1

if [ $variant = shipped ]; then
  dir=$repo/tests/upstream
  stamp=$(cat "$dir"/go.mod "$dir"/go.sum "$repo/tests/gotools.sh" | sha256sum | cut -c1-12)
  bin="$tools/api-syncagent-v0.7.0-$stamp"
  link="$tools/api-syncagent"
else
  dir=$repo/tests/bench/upstream-unthrottled
  stamp=$(cat "$dir"/go.mod "$dir"/go.sum "$repo/tests/gotools.sh" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-12)
  bin="$tools/api-syncagent-v0.7.0-unthrottled-$stamp"
  link="$tools/api-syncagent-unthrottled"
fi

if [ ! -x "$bin" ]; then
  [ -z "${need_go:-}" ] || { echo "[bench] Go is required to build upstream api-syncagent" >&2; exit 1; }
  start=$(date +%s)
  if [ $variant = shipped ]; then
    echo "[bench] building upstream api-syncagent v0.7.0 from Go modules (first time: ~5 min)…" >&2
    "$repo/tests/gotools.sh" "$dir" github.com/kcp-dev/api-syncagent/cmd/api-syncagent "$bin.tmp.$$" >&2
  else
    echo "[bench] building upstream api-syncagent v0.7.0 with client-side throttling off (first time: ~5 min)…" >&2
    # Both wrappers must build the same code: same requirements, one replace more.
    reqs() { sed -n '/^require (/,/^)/p' "$1"; }
    if ! diff <(reqs "$repo/tests/upstream/go.mod") <(reqs "$dir/go.mod") >/dev/null; then
      echo "[bench] $dir/go.mod requires something else than tests/upstream/go.mod;" \
        "copy the require block over (and go.sum) so both agents are the same code" >&2
      exit 1
    fi
    cgv=$(awk '$1 == "k8s.io/client-go" && $2 ~ /^v/ {print $2; exit}' "$dir/go.mod")
    [ -n "$cgv" ] || { echo "[bench] no k8s.io/client-go version in $dir/go.mod" >&2; exit 1; }
    build=$tools/build/upstream-unthrottled-$stamp
    rm -rf "$build"
    mkdir -p "$build"
    cp "$dir/go.mod" "$dir/go.sum" "$build/"
    # Downloaded outside any module, so the (not yet existing) ./client-go
    # replace is not consulted.
    empty=$(mktemp -d)
    src=$(cd "$empty" && go mod download -json "k8s.io/client-go@$cgv" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    rmdir "$empty"
    [ -d "$src" ] || { echo "[bench] could not download k8s.io/client-go@$cgv from the Go module proxy" >&2; exit 1; }
    cp -r "$src" "$build/client-go"
    chmod -R u+w "$build/client-go"
    cfg=$build/client-go/rest/config.go
    sed -i 's/^\([[:space:]]*DefaultQPS[[:space:]]\+float32[[:space:]]*=[[:space:]]*\)5\.0$/\1-1 \/\/ syncweave bench: no client-side rate limit/' "$cfg"
    if ! grep -q 'DefaultQPS[[:space:]]\+float32[[:space:]]*=[[:space:]]*-1 ' "$cfg"; then
      echo "[bench] patching $cfg failed: client-go $cgv no longer declares" \
        "'DefaultQPS float32 = 5.0'; update the patch in ${BASH_SOURCE[0]}" >&2
      exit 1
    fi
    "$repo/tests/gotools.sh" "$build" github.com/kcp-dev/api-syncagent/cmd/api-syncagent "$bin.tmp.$$" >&2
    rm -rf "$build"
  fi
  mv "$bin.tmp.$$" "$bin"
  echo "[bench] api-syncagent ($variant) built in $(( $(date +%s) - start ))s" >&2
fi
ln -sf "$bin" "$link"
echo "$bin"
