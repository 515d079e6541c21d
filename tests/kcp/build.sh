#!/usr/bin/env bash
# Builds a kcp command (default: kcp; also kcp-front-proxy, cache-server,
# sharded-test-server) from Go modules into $1. See go.mod for why this
# wrapper exists.
set -euo pipefail
out=$1 cmd=${2:-kcp}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
# Some kcp-dev modules are missing from the public checksum database; go.sum
# pins their hashes instead.
export GONOSUMDB='github.com/kcp-dev/*' GOFLAGS=-mod=mod CGO_ENABLED=0

# Assemble the virtual-workspace-framework overlay (see go.mod).
vwf_version=v0.31.2
if [ ! -f vwf-overlay/.complete ] || [ "$(cat vwf-overlay/.complete)" != "$vwf_version" ]; then
  src=$(go mod download -json "github.com/kcp-dev/virtual-workspace-framework@$vwf_version" \
        | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "cannot download virtual-workspace-framework $vwf_version" >&2; exit 1; }
  rm -rf vwf-overlay
  cp -r "$src" vwf-overlay
  chmod -R u+w vwf-overlay
  cp vwf-compat.go.txt vwf-overlay/pkg/forwardingregistry/zz_syncweave_compat.go
  echo "$vwf_version" > vwf-overlay/.complete
fi
go build -o "$out" "github.com/kcp-dev/kcp/cmd/$cmd"
