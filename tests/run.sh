#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this):
#   1. installs prerequisites (Debian wasm toolchain, kcp from Go modules)
#   2. builds the host and, from source, every built-in and example plugin
#   3. runs host unit tests, runtime tests (hostile plugins), guest plugin
#      unit tests, and end-to-end tests against a real kcp
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
t0=$(date +%s)
phase() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }

phase "prerequisites"
tests/setup.sh >/dev/null

phase "building the host"
cargo build --workspace --all-targets

phase "building built-in plugins from source"
builtins=()
for d in plugins/*/; do
  d=${d%/}
  # Libraries (like the Go-template engine) are not plugins on their own.
  grep -q 'crate-type *= *\[.*"cdylib"' "$d/Cargo.toml" 2>/dev/null && builtins+=("$d")
done
target/debug/syncweave plugin build "${builtins[@]}" --out target/plugins

phase "building example plugins (Rust, Python, JavaScript)"
examples/build.sh

phase "host, runtime and end-to-end tests"
cargo test --workspace --no-fail-fast

phase "guest plugin logic (native unit tests)"
(cd plugins && cargo test --workspace --no-fail-fast)

phase "example plugin logic (Python unittest, node --test)"
python3 -m unittest discover -s examples/python-mutator -p 'test_*.py'
(cd examples/js-mutator && node --test)

phase "done"
