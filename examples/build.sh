#!/usr/bin/env bash
# Builds the example plugins into <repo>/target/plugins/: {rust,python,js,go}-mutator.wasm
# (contract 0.1), and rust-tenant.wasm, python-subnet.wasm and go-labeler.wasm
# (contract 0.2).
#
#   examples/build.sh [--force] [rust|python|js|go|rust-tenant|python-subnet ...]
#
# Idempotent: an example is rebuilt only when one of its sources (its SDK, or the
# WIT contract) is newer than its component. All of them are built by
# `syncweave plugin build`. Installs componentize-py (pip) and componentize-js and
# rolldown (npm, from the committed package-lock.json) only when missing; the
# Python example uses the repository's sdk/python through PYTHONPATH, the
# JavaScript one links sdk/js (package.json: file:../../sdk/js), the Go ones
# replace syncweave.dev/sdk/go with ../../sdk/go (Go itself is a prerequisite).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
out_dir="$repo/target/plugins"
componentize_py_version="0.25.1"

force=0
which=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    rust|python|js|go|rust-tenant|python-subnet) which+=("$arg") ;;
    -h|--help) sed -n '2,14p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "build.sh: unknown argument '$arg' (expected --force, rust, python, js, go, rust-tenant or python-subnet)" >&2; exit 2 ;;
  esac
done
[ ${#which[@]} -gt 0 ] || which=(rust python js go rust-tenant python-subnet)
mkdir -p "$out_dir"

log() { echo "examples/build.sh: $*" >&2; }

# up_to_date OUTPUT SOURCE... : true when OUTPUT exists and no source file is newer.
up_to_date() {
  local output="$1"; shift
  [ "$force" = 0 ] && [ -f "$output" ] || return 1
  [ -z "$(find "$@" -type f -newer "$output" -not -path '*/node_modules/*' \
            -not -path '*/__pycache__/*' -not -path '*/target/*' -print -quit)" ]
}

# The builder lives in the host binary; reuse a built one when it is there.
syncweave() {
  if [ -n "${SYNCWEAVE_BIN:-}" ]; then
    "$SYNCWEAVE_BIN" "$@"
  else
    cargo run --quiet --manifest-path "$repo/Cargo.toml" -p syncweave -- "$@"
  fi
}

build_rust() {
  local output="$out_dir/rust-mutator.wasm"
  if up_to_date "$output" "$here/rust-mutator/src" "$here/rust-mutator/Cargo.toml" \
      "$repo/sdk/rust/src" "$repo/sdk/rust/build.rs" "$repo/sdk/rust/Cargo.toml" "$repo/wit"; then
    log "rust-mutator is up to date"; return
  fi
  log "building rust-mutator"
  syncweave plugin build "$here/rust-mutator" --out "$out_dir" >/dev/null
  # The builder keeps the output when the component is unchanged; mark it fresh.
  touch "$output"
}

build_rust_tenant() {
  local output="$out_dir/rust-tenant.wasm" src="$here/rust-tenant"
  if up_to_date "$output" "$src/src" "$src/Cargo.toml" \
      "$repo/sdk/rust/src" "$repo/sdk/rust/build.rs" "$repo/sdk/rust/Cargo.toml" "$repo/wit"; then
    log "rust-tenant is up to date"; return
  fi
  log "building rust-tenant"
  syncweave plugin build "$src" --out "$out_dir" >/dev/null
  touch "$output"
}

ensure_componentize_py() {
  if ! command -v componentize-py >/dev/null 2>&1; then
    log "installing componentize-py $componentize_py_version (pip)"
    python3 -m pip install --quiet "componentize-py==$componentize_py_version"
  fi
}

build_python_subnet() {
  local output="$out_dir/python-subnet.wasm" src="$here/python-subnet"
  if up_to_date "$output" "$src/app.py" "$src/plugin.py" "$src/pyproject.toml" \
      "$repo/sdk/python/src" "$repo/wit"; then
    log "python-subnet is up to date"; return
  fi
  ensure_componentize_py
  log "building python-subnet"
  PYTHONPATH="$repo/sdk/python/src${PYTHONPATH:+:$PYTHONPATH}" \
    syncweave plugin build "$src" --out "$out_dir" >/dev/null
  touch "$output"
}

build_python() {
  local output="$out_dir/python-mutator.wasm" src="$here/python-mutator"
  if up_to_date "$output" "$src/app.py" "$src/plugin.py" "$src/pyproject.toml" \
      "$repo/sdk/python/src" "$repo/wit"; then
    log "python-mutator is up to date"; return
  fi
  ensure_componentize_py
  log "building python-mutator"
  PYTHONPATH="$repo/sdk/python/src${PYTHONPATH:+:$PYTHONPATH}" \
    syncweave plugin build "$src" --out "$out_dir" >/dev/null
  touch "$output"
}

build_js() {
  local output="$out_dir/js-mutator.wasm" src="$here/js-mutator"
  if up_to_date "$output" "$src/component.js" "$src/plugin.js" "$src/package.json" \
      "$src/package-lock.json" "$repo/sdk/js/src" "$repo/sdk/js/package.json" "$repo/wit"; then
    log "js-mutator is up to date"; return
  fi
  if [ ! -d "$src/node_modules/@bytecodealliance/componentize-js" ] || [ ! -d "$src/node_modules/rolldown" ] \
      || [ ! -e "$src/node_modules/@syncweave/plugin" ]; then
    log "installing componentize-js, rolldown and the SDK link (npm install, pinned by package-lock.json)"
    # Not `npm ci`: the lock file lists other platforms' optional native
    # packages without versions (the registry does not resolve them here),
    # which `npm ci`'s strict check rejects; `npm install` follows the lock
    # for everything it resolves.
    (cd "$src" && npm install --no-audit --no-fund --loglevel=error)
  fi
  log "building js-mutator"
  syncweave plugin build "$src" --out "$out_dir" >/dev/null
  touch "$output"
}

build_go() {
  # go-mutator: the Go twin of the other three; go-labeler: contract 0.2
  # (reads the object's Namespace in kcp).
  local example
  for example in go-mutator go-labeler; do
    local output="$out_dir/$example.wasm" src="$here/$example"
    if up_to_date "$output" "$src" "$repo/sdk/go" "$repo/wit"; then
      log "$example is up to date"; continue
    fi
    log "building $example"
    syncweave plugin build "$src" --out "$out_dir" >/dev/null
    touch "$output"
  done
}

outputs() {
  case "$1" in
    go) echo go-mutator go-labeler ;;
    rust|python|js) echo "$1-mutator" ;;
    *) echo "$1" ;;
  esac
}

for example in "${which[@]}"; do
  "build_${example//-/_}"
done
for example in "${which[@]}"; do
  for output in $(outputs "$example"); do
    ls -l "$out_dir/$output.wasm" | awk '{print $NF " (" $5 " bytes)"}'
  done
done
