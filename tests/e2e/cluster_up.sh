#!/usr/bin/env bash
# Fixture: a fresh cluster for the tests that follow.  cluster_up.sh gpufair|multifactor
source "$(dirname "$0")/lib.sh"
policy=${1:?policy}
args=(--policy "$policy" --extra-conf SlurmctldDebug=verbose --extra-conf DebugFlags=Priority)
[[ $policy == gpufair ]] && args+=(--priority-params "$E2E_GPUFAIR_PARAMS")
t0=$(date +%s%N)
"$CLUSTER" up "${args[@]}" || fail "scripts/cluster up --policy $policy failed"
ms=$((($(date +%s%N) - t0) / 1000000))
say "cluster ($policy) up in $((ms / 1000)).$((ms % 1000 / 100)) s (including build/install when gpufair)"
echo "$ms" >"$E2E_OUT/bringup-$policy.ms"
