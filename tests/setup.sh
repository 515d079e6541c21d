#!/usr/bin/env bash
# Installs everything the tests and the demo need, idempotently:
#   - Debian's Rust with std source + wasm-ld, to build Rust plugins for wasm32
#     (no rustup wasm target can be downloaded on our machines)
#   - kcp, built from Go modules at the version pinned in tests/kcp/go.mod
# Fast (well under a second) when everything is already present.
# Prints the kcp binary path on the last line of stdout.
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

# --- kcp ---------------------------------------------------------------------
kcp_version=$(awk '/^require github.com\/kcp-dev\/kcp /{print $3}' "$repo/tests/kcp/go.mod")
stamp=$(cat "$repo"/tests/kcp/{go.mod,go.sum,build.sh,vwf-compat.go.txt} 2>/dev/null | sha256sum | cut -c1-12)
kcp_bin="$tools/kcp-$kcp_version-$stamp"
if [ ! -x "$kcp_bin" ]; then
  command -v go >/dev/null 2>&1 || { log "Go is required to build kcp (install golang >= 1.26)"; exit 1; }
  log "building kcp $kcp_version from Go modules (first time: several minutes)…"
  start=$(date +%s)
  "$repo/tests/kcp/build.sh" "$kcp_bin.tmp" >&2
  mv "$kcp_bin.tmp" "$kcp_bin"
  log "kcp built in $(( $(date +%s) - start ))s: $kcp_bin"
fi
ln -sf "$kcp_bin" "$tools/kcp"
echo "$tools/kcp"
