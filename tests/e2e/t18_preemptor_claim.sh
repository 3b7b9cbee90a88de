#!/usr/bin/env bash
# Check 18: who gets the GPUs an in-team preemption frees (design.md, "Who
# gets the GPUs a preemption frees"), under the default preemptor_claim=jumpers
# (an in-team jump claims nothing) and under preemptor_claim=all.
#
# teamb's long low job holds gpu1, teamc's shorter ones gpu2-4; teamc's
# next job waits with an admin-set priority (1e8), so it heads the queue
# whatever the fair share. teamb's high job is behind it: only a backfill
# pass lets it preempt teamb's own job. Slurm then hands the freed node to
# the first job in priority order that fits:
#   jumpers (the default; off and reclaims alike): teamc's head job gets gpu1, teamb's
#       high job waits;
#   all: the preemptor sorts first from its preemption (priority 4294967294,
#       set by preempt/gpufair at once), so teamb's high job gets gpu1 and
#       teamc's job keeps waiting.
# scavenger_window=0 for both rounds, so that the first round's jump opens
# no episode whose scavengers the second round's head could take. The
# story's PriorityParameters are restored at the end, on failure too.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
log=$RUN/log/slurmctld.log
clear_queue
restore() {
  scancel --partition=gpu 2>/dev/null || true
  "$CLUSTER" reconfigure --priority-params "$E2E_GPUFAIR_PARAMS" >/dev/null 2>&1 || true
}
trap restore EXIT
base=${E2E_GPUFAIR_PARAMS/scavenger_window=144s/scavenger_window=0}
[[ $base != "$E2E_GPUFAIR_PARAMS" ]] || fail "the story's params have no scavenger_window=144s to replace: $E2E_GPUFAIR_PARAMS"

# One round: the setup above, until teamb's high job (bh) has preempted
# teamb's long job; head is teamc's waiting job.
bh='' head=''
round() {
  local bl c1 c2 c3
  # Time limits decide backfill's plan: the head's reservation must be on
  # teamc's nodes (their limits end first), not on gpu1.
  bl=$(sub gfb1 teamb low 8 300 -w gpu1 -t 60)
  c1=$(sub gfc1 teamc low 8 120 -w gpu2 -t 10); c2=$(sub gfc1 teamc low 8 120 -w gpu3 -t 10)
  c3=$(sub gfc1 teamc low 8 120 -w gpu4 -t 10)
  for j in "$bl" "$c1" "$c2" "$c3"; do wait_state "$j" RUNNING 20 || fail "job $j did not start"; done
  head=$(sub gfc1 teamc low 8 60)
  scontrol update jobid="$head" priority=100000000 || fail "scontrol could not set $head's priority"
  bh=$(sub gfb1 teamb high 8 60 -t 5)
  local i
  for ((i = 0; i < 150; i++)); do
    grep -q "preempted JobId=$bl has been requeued to reclaim resources for JobId=$bh" "$log" && break
    sleep 0.2
  done
  ((i < 150)) || fail "teamb's high job $bh did not preempt teamb's job $bl within 30 s"
  sleep 4  # the victim's node is free again (KillWait 2 s) and the scheduler ran
}
node_of() { squeue -h -j "$1" -o %N 2>/dev/null || true; }

"$CLUSTER" reconfigure --priority-params "$base" || fail "reconfigure (scavenger_window=0) failed"
sleep 3
round
[[ $(state_of "$head") == RUNNING && $(node_of "$head") == gpu1 ]] ||
  fail "claim jumpers: expected teamc's head job $head on gpu1 (Slurm's hand-off), it is $(state_of "$head") on '$(node_of "$head")'"
[[ $(state_of "$bh") == PENDING ]] || fail "claim jumpers: teamb's high job $bh is $(state_of "$bh"), expected PENDING"
ok "preemptor_claim=jumpers (the default): teamb's high job $bh freed gpu1 and teamc's head job $head took it (Slurm's hand-off)"
clear_queue

"$CLUSTER" reconfigure --priority-params "$base,preemptor_claim=all" || fail "reconfigure (preemptor_claim=all) failed"
sleep 3
[[ $(grep -E 'priority/gpufair: (reconfigured|init):' "$log" | tail -1) == *preemptor_claim=all* ]] ||
  fail "the configuration logged after reconfigure does not show preemptor_claim=all"
round
[[ $(state_of "$bh") == RUNNING && $(node_of "$bh") == gpu1 ]] ||
  fail "claim all: expected teamb's high job $bh on gpu1, it is $(state_of "$bh") on '$(node_of "$bh")'"
[[ $(state_of "$head") == PENDING ]] || fail "claim all: teamc's head job $head is $(state_of "$head"), expected PENDING"
ok "preemptor_claim=all: teamb's high job $bh started on gpu1, the node its preemption freed; teamc's head job $head waits"
clear_queue
