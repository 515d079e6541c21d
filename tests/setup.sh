#!/usr/bin/env bash
# Installs everything the tests and the demo need, idempotently:
#   - Debian's Rust with std source + wasm-ld, to build Rust plugins for wasm32
#     (no rustup wasm target can be downloaded on our machines)
#   - kcp, built from Go modules at the version pinned in tests/kcp/go.mod,
#     and what a two-shard kcp needs (front proxy, cache server, kcp's
#     sharded-test-server)
#   - the service cluster: kube-apiserver + kubectl (tests/kube) and etcd
#     (tests/etcd), helm (tests/helm) and promtool (tests/promtool, to check
#     the chart's alerting rules), each built from Go modules
#   - an OCI registry for `plugin push` and oci:// pulls: distribution's
#     registry (tests/registry), docker/distribution's token server
#     (tests/token-server, for bearer-token auth) and cosign (tests/cosign,
#     for the signature interop test; a failed cosign build is reported, not
#     fatal: only that test needs it)
# Every binary is cached under $SYNCWEAVE_TOOLS_DIR (default ~/.cache/syncweave)
# by a stamp of its wrapper module, and linked there under its plain name.
# Fast (well under a second) when everything is already present.
# Prints the tools directory on the last line of stdout.
# With --only-wasm it installs only the wasm toolchain (what `cargo build` of
# the host needs to embed the built-in plugins).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=${SYNCWEAVE_TOOLS_DIR:-$HOME/.cache/syncweave}
mkdir -p "$tools"
log() { printf '[setup] %s\n' "$*" >&2; }

# --- Rust -> wasm32 toolchain ------------------------------------------------
have_rustup_wasm() {
  command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown
}
if ! have_rustup_wasm; then
  missing=()
  for p in rustc-web cargo-web rust-web-src lld-22; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian packages for wasm builds: ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
fi

[ "${1:-}" = "--only-wasm" ] && exit 0

# --- Go-built tools ------------------------------------------------------------
require_go() {
  command -v go >/dev/null 2>&1 || { log "Go is required to build $1 (install golang >= 1.26)"; exit 1; }
}
# go_tool NAME MODULE-DIR PACKAGE [LDFLAGS]: build once per wrapper-module stamp.
go_tool() {
  local name=$1 dir=$repo/tests/$2 pkg=$3 ldflags=${4:-}
  local version stamp bin start
  stamp=$(cat "$dir"/go.mod "$dir"/go.sum "$repo/tests/gotools.sh" | sha256sum | cut -c1-12)
  bin="$tools/$name-$stamp"
  if [ ! -x "$bin" ]; then
    require_go "$name"
    log "building $name from Go modules (first time: minutes)…"
    start=$(date +%s)
    # `|| return`: also stops here when the caller tests the result (errexit
    # does not apply then), so a failed build never leaves a dangling link.
    "$repo/tests/gotools.sh" "$dir" "$pkg" "$bin.tmp" "$ldflags" >&2 || return 1
    mv "$bin.tmp" "$bin" || return 1
    log "$name built in $(( $(date +%s) - start ))s"
  fi
  ln -sf "$bin" "$tools/$name"
}
k8s_ldflags="-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37"
go_tool etcd etcd go.etcd.io/etcd/server/v3
go_tool helm helm helm.sh/helm/v3/cmd/helm "-X helm.sh/helm/v3/internal/version.version=v3.22.0"
go_tool promtool promtool github.com/prometheus/prometheus/cmd/promtool
go_tool kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver "$k8s_ldflags"
go_tool kubectl kube k8s.io/kubernetes/cmd/kubectl "$k8s_ldflags"
go_tool registry registry github.com/distribution/distribution/v3/cmd/registry \
  "-X github.com/distribution/distribution/v3/version.version=v3.1.2"
go_tool token-server token-server github.com/docker/distribution/contrib/token-server
if ! go_tool cosign cosign github.com/sigstore/cosign/v2/cmd/cosign \
  "-X sigs.k8s.io/release-utils/version.gitVersion=v2.6.5"; then
  log "cosign did not build; the cosign interop test (e2e publish::cosign_interop) will fail saying so"
fi

# --- kcp ---------------------------------------------------------------------
kcp_version=$(awk '/^require github.com\/kcp-dev\/kcp /{print $3}' "$repo/tests/kcp/go.mod")
stamp=$(cat "$repo"/tests/kcp/{go.mod,go.sum,build.sh,vwf-compat.go.txt} 2>/dev/null | sha256sum | cut -c1-12)
kcp_bin="$tools/kcp-$kcp_version-$stamp"
if [ ! -x "$kcp_bin" ]; then
  require_go kcp
  log "building kcp $kcp_version from Go modules (first time: several minutes)…"
  start=$(date +%s)
  "$repo/tests/kcp/build.sh" "$kcp_bin.tmp" >&2
  mv "$kcp_bin.tmp" "$kcp_bin"
  log "kcp built in $(( $(date +%s) - start ))s: $kcp_bin"
fi
ln -sf "$kcp_bin" "$tools/kcp"
# A two-shard kcp (root + shard-1, a cache server and the front proxy, wired
# by kcp's own sharded-test-server) for the multi-shard e2e test.
for cmd in kcp-front-proxy cache-server sharded-test-server; do
  bin="$tools/$cmd-$kcp_version-$stamp"
  if [ ! -x "$bin" ]; then
    log "building $cmd $kcp_version from Go modules…"
    start=$(date +%s)
    "$repo/tests/kcp/build.sh" "$bin.tmp" "$cmd" >&2
    mv "$bin.tmp" "$bin"
    log "$cmd built in $(( $(date +%s) - start ))s"
  fi
  ln -sf "$bin" "$tools/$cmd"
done
echo "$tools"
