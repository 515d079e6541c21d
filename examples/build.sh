#!/usr/bin/env bash
# Builds the example plugins into <repo>/target/plugins/{rust,python,js}-mutator.wasm.
#
#   examples/build.sh [--force] [rust|python|js ...]
#
# Idempotent: an example is rebuilt only when one of its sources (or the WIT
# contract) is newer than its component. Installs componentize-py (pip) and
# componentize-js (npm, from the committed package-lock.json) only when missing.
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
    rust|python|js) which+=("$arg") ;;
    -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "build.sh: unknown argument '$arg' (expected --force, rust, python or js)" >&2; exit 2 ;;
  esac
done
[ ${#which[@]} -gt 0 ] || which=(rust python js)
mkdir -p "$out_dir"

log() { echo "examples/build.sh: $*" >&2; }

# up_to_date OUTPUT SOURCE... : true when OUTPUT exists and no source file is newer.
up_to_date() {
  local output="$1"; shift
  [ "$force" = 0 ] && [ -f "$output" ] || return 1
  [ -z "$(find "$@" -type f -newer "$output" -not -path '*/node_modules/*' \
            -not -path '*/__pycache__/*' -not -path '*/target/*' -print -quit)" ]
}

build_rust() {
  local output="$out_dir/rust-mutator.wasm"
  if up_to_date "$output" "$here/rust-mutator/src" "$here/rust-mutator/Cargo.toml" \
      "$repo/sdk/rust/src" "$repo/sdk/rust/build.rs" "$repo/sdk/rust/Cargo.toml" "$repo/wit"; then
    log "rust-mutator is up to date"; return
  fi
  log "building rust-mutator"
  # The builder lives in the host binary; reuse a built one when it is there.
  local syncweave=(cargo run --quiet --manifest-path "$repo/Cargo.toml" -p syncweave --)
  if [ -n "${SYNCWEAVE_BIN:-}" ]; then syncweave=("$SYNCWEAVE_BIN"); fi
  "${syncweave[@]}" plugin build "$here/rust-mutator" --out "$out_dir" >/dev/null
  # The builder keeps the output when the component is unchanged; mark it fresh.
  touch "$output"
}

build_python() {
  local output="$out_dir/python-mutator.wasm" src="$here/python-mutator"
  if up_to_date "$output" "$src/app.py" "$src/logic.py" "$repo/wit"; then
    log "python-mutator is up to date"; return
  fi
  if ! command -v componentize-py >/dev/null 2>&1; then
    log "installing componentize-py $componentize_py_version (pip)"
    python3 -m pip install --quiet "componentize-py==$componentize_py_version"
  fi
  log "building python-mutator"
  (cd "$src" && componentize-py -d "$repo/wit" -w mutator componentize app -o "$output.tmp" >/dev/null)
  mv "$output.tmp" "$output"
}

build_js() {
  local output="$out_dir/js-mutator.wasm" src="$here/js-mutator"
  if up_to_date "$output" "$src/plugin.js" "$src/mutator.js" "$src/build.mjs" "$src/package-lock.json" "$repo/wit"; then
    log "js-mutator is up to date"; return
  fi
  if [ ! -d "$src/node_modules/@bytecodealliance/componentize-js" ]; then
    log "installing componentize-js (npm install, pinned by package-lock.json)"
    # Not `npm ci`: the lock file lists other platforms' optional native
    # packages without versions (the registry does not resolve them here),
    # which `npm ci`'s strict check rejects; `npm install` follows the lock
    # for everything it resolves.
    (cd "$src" && npm install --no-audit --no-fund --loglevel=error)
  fi
  log "building js-mutator"
  (cd "$src" && node build.mjs "$output" >/dev/null)
}

for example in "${which[@]}"; do
  "build_$example"
done
for example in "${which[@]}"; do
  ls -l "$out_dir/$example-mutator.wasm" | awk '{print $NF " (" $5 " bytes)"}'
done
