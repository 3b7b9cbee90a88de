#!/usr/bin/env bash
# Fixture cleanup: stop every daemon of the cluster by PID and check none is left.
source "$(dirname "$0")/lib.sh"
cp "$RUN/log/slurmctld.log" "$E2E_OUT/slurmctld-${1:-last}.log" 2>/dev/null || true
"$CLUSTER" down || fail "scripts/cluster down failed"
