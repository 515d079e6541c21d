#!/usr/bin/env bash
# Builds one Go command from a wrapper module in tests/<module>/ (go.mod pins
# the version; see the comment in each go.mod) into $3.
#   gotools.sh <module-dir> <package> <out> [ldflags]
set -euo pipefail
dir=$1 pkg=$2 out=$3 ldflags=${4:-}
cd "$dir"
export GONOSUMDB='github.com/kcp-dev/*' GOFLAGS='-mod=mod -buildvcs=false' CGO_ENABLED=0
go build -trimpath -ldflags "-s -w $ldflags" -o "$out" "$pkg"
