#!/usr/bin/env bash
# The fault campaign at full scale (about 12 minutes on two cores), apart
# from the test suite, which runs the same tests small:
#   - the service kube-apiserver killed and restarted, and frozen 60 s, in the
#     middle of syncing 300 objects; the same for kcp
#   - the agent killed (SIGKILL) 15 times while it syncs 1 000 objects across
#     20 workspaces, and 15 times while they are deleted
#   - leader partitions, freezes and failovers (tests/e2e/faults.rs)
# One test at a time, so that the figures are not two tests' load at once.
# Figures print as the tests finish; docs/reliability.md quotes them.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
tests/setup.sh >/dev/null
cargo build -p syncweave --bins --tests
SYNCWEAVE_FAULT_SCALE=full cargo test -p syncweave --test e2e -- \
    --test-threads=1 --nocapture outages:: faults::
