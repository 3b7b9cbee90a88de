#!/usr/bin/env bash
# Check 14: preemption by partition PriorityTier (PriorityParameters=
# preempt_by=partition) with gpufair's in-team rule, against Slurm's own
# preempt/partition_prio on the same cluster.
#
# On its own cluster (run dir $GPUFAIR_RUN_DIR, default
# /var/tmp/gpufair-partprio, ports shifted by 700) with a second partition
# batch on the same nodes: PriorityTier 0 against gpu's 1 (Slurm's default),
# and PreemptMode=CANCEL against the cluster's REQUEUE. reclaim=off and
# scavenger_window=0 keep the cross-team rules of gpufair out of it.
#   a. teama's batch job (QOS high) on gpu1, teamb's batch jobs on gpu2-4:
#      the cluster is full. teama's gpu job U1 (QOS low: by QOS it could not
#      preempt high) starts by preempting teama's own batch job, which is
#      cancelled (batch's PreemptMode, not the cluster's REQUEUE); teamb's
#      jobs keep running.
#   b. teama's second gpu job U2 waits: the only lower-tier jobs are
#      teamb's, and it may not preempt another team's job.
#   c. the detector saw the preemption exactly once (gpufair-show
#      decisions: one in-team decision U1 -> teama's job, rank_gap=1, the
#      tier gap), nothing for teamb; slurmctld logged one kill.
#   d. Slurm's own preempt/partition_prio (scontrol reconfigure, same
#      priority plugin, preempt_by=partition): U2 now preempts one of
#      teamb's batch jobs, cancelled likewise. That is the difference.
#   e. back under preempt/gpufair, a preemption on borrowed reservation
#      time, which Slurm makes without asking the preempt plugin: teamb's
#      job with --signal=R:USR1@0 runs on gpu1, reserved for teama with
#      MaxStartDelay; teama's job in the reservation takes gpu1 back
#      (requeue); gpufair-show lists it once for each team as a
#      reservation decision, no in-team preemption counted.
#   f. preempt_by=partition with PreemptType=preempt/qos: slurmctld refuses
#      to start, naming preempt_by and what is accepted.
export GPUFAIR_RUN_DIR=${GPUFAIR_PARTPRIO_RUN_DIR:-/var/tmp/gpufair-partprio}
export GPUFAIR_PORT_OFFSET=${GPUFAIR_PARTPRIO_PORT_OFFSET:-700}
source "$(dirname "$0")/lib.sh"
trap '"$CLUSTER" down >>"$E2E_OUT/t14-down.log" 2>&1 || true' EXIT
log=$RUN/log/slurmctld.log
params="calc_period=2s,preempt_by=partition,reclaim=off,scavenger_window=0"

# JobState of a job, finished or not (squeue lists only live ones).
job_state() { scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
wait_job_state() {  # wait_job_state JOBID STATE TIMEOUT_S
  local i
  for ((i = 0; i < $3 * 5; i++)); do
    [[ $(job_state "$1") == "$2" ]] && return 0
    sleep 0.2
  done
  return 1
}
# Decisions of gpufair-show --json: "preemptor victim in_team team
# reservation reason" lines.
decisions() {
  gshow_json --decisions 50 | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
for t in d["teams"]:
    for x in t["decisions"]:
        print(x["preemptor"], x["victim"], x["in_team"], t["name"], x["reservation"], x["reason"][:200])'
}

t0=$SECONDS
say "cluster up (gpufair, $params; partition batch: PriorityTier=0 PreemptMode=CANCEL, on gpu's nodes)"
"$CLUSTER" up --policy gpufair --priority-params "$params" \
  --extra-conf "PartitionName=batch Nodes=gpu1,gpu2,gpu3,gpu4 PriorityTier=0 PreemptMode=CANCEL MaxTime=INFINITE State=UP" \
  >"$E2E_OUT/t14-up.log" 2>&1 || { tail -20 "$E2E_OUT/t14-up.log" >&2; fail "scripts/cluster up failed"; }
grep -q 'preempt_by=partition' "$log" || fail "slurmctld did not log preempt_by=partition in gpufair's configuration"

# (a) a full cluster of batch jobs; teama's high-QOS one on gpu1.
la=$(sub gfa1 teama high 8 300 -p batch -w gpu1)
lb=("$(sub gfb1 teamb low 8 300 -p batch -w gpu2)" "$(sub gfb1 teamb low 8 300 -p batch -w gpu3)"
  "$(sub gfb1 teamb low 8 300 -p batch -w gpu4)")
for j in "$la" "${lb[@]}"; do wait_state "$j" RUNNING 30 || fail "batch job $j did not start"; done
sleep 3
na0=$(team_field teama in_team_preemptions); nb0=$(team_field teamb in_team_preemptions)
u1=$(sub gfa1 teama low 8 300 -p gpu)
wait_state "$u1" RUNNING 30 || fail "teama's gpu job $u1 did not start (it should preempt teama's batch job $la: a higher tier)"
wait_job_state "$la" PREEMPTED 10 \
  || fail "teama's batch job $la is $(job_state "$la"), expected PREEMPTED (cancelled: batch's PreemptMode=CANCEL)"
for j in "${lb[@]}"; do [[ $(state_of "$j") == RUNNING ]] || fail "teamb's batch job $j was disturbed by teama's job"; done
grep -q "preempted JobId=$la has been killed to reclaim resources for JobId=$u1" "$log" \
  || fail "slurmctld did not log the kill of $la for $u1"
ok "teama's gpu job $u1 (tier 1, QOS low) preempted teama's own batch job $la (tier 0, QOS high), cancelled by batch's PreemptMode; teamb's jobs kept running"

# (b) another teama gpu job: only teamb's jobs are below it.
u2=$(sub gfa1 teama low 8 300 -p gpu)
sleep 12
[[ $(state_of "$u1") == RUNNING ]] || fail "$u1 no longer runs: the cluster was not full, the check would prove nothing"
[[ $(state_of "$u2") == PENDING ]] || fail "teama's second gpu job $u2 is $(state_of "$u2"), expected PENDING"
for j in "${lb[@]}"; do [[ $(state_of "$j") == RUNNING ]] || fail "teamb's batch job $j was preempted by teama's job $u2"; done
grep -E "preempted JobId=(${lb[0]}|${lb[1]}|${lb[2]}) " "$log" && fail "slurmctld preempted a teamb job under preempt/gpufair"
ok "teama's job $u2 waits: it did not preempt any of teamb's lower-tier jobs"

# (c) exactly once, in-team, ranked by tier.
sleep 4
na1=$(team_field teama in_team_preemptions); nb1=$(team_field teamb in_team_preemptions)
decisions >"$E2E_OUT/t14-decisions.txt"
say "in-team preemptions: teama $na0 -> $na1, teamb $nb0 -> $nb1; decisions: $(tr '\n' ';' <"$E2E_OUT/t14-decisions.txt" | cut -c1-300)"
((na1 == na0 + 1)) || fail "the detector saw teama's preemption $((na1 - na0)) times, expected exactly once"
((nb1 == nb0)) || fail "the detector recorded a preemption for teamb"
n=$(awk -v p="$u1" -v v="$la" '$1 == p && $2 == v' "$E2E_OUT/t14-decisions.txt" | wc -l)
((n == 1)) || fail "gpufair-show lists $n decisions for $u1 preempting $la, expected 1"
[[ $(wc -l <"$E2E_OUT/t14-decisions.txt") == 1 ]] || fail "gpufair-show lists other decisions too (see $E2E_OUT/t14-decisions.txt)"
d=$(awk -v p="$u1" '$1 == p' "$E2E_OUT/t14-decisions.txt")
[[ $d == *" True teama False "* ]] || fail "the decision is not an in-team one of teama: $d"
[[ $d == *"rank_gap=1;"* ]] || fail "the decision's rank gap is not the tier gap 1 (QOS ranks would make it negative): $d"
nl=$(grep -c "preempted JobId=$la has been killed" "$log" || true)
((nl == 1)) || fail "slurmctld logged $nl kills of $la"
ok "the preemption reached the detector exactly once, in-team, ranked by tier: ${d:0:160}"

# (d) Slurm's own preempt/partition_prio: teamb's jobs are fair game.
"$CLUSTER" reconfigure --extra-conf PreemptType=preempt/partition_prio >"$E2E_OUT/t14-reconf.log" 2>&1 \
  || fail "scontrol reconfigure to preempt/partition_prio failed (see $E2E_OUT/t14-reconf.log)"
[[ $(scontrol show config | sed -n 's/^PreemptType *= *//p') == preempt/partition_prio ]] \
  || fail "PreemptType is not preempt/partition_prio after the reconfigure"
wait_state "$u2" RUNNING 40 || fail "under preempt/partition_prio teama's job $u2 still $(state_of "$u2"), expected it to preempt a teamb batch job"
victim=""
for j in "${lb[@]}"; do [[ $(job_state "$j") == PREEMPTED ]] && victim+="$j "; done
[[ $victim == *" "* && $(wc -w <<<"$victim") == 1 ]] || fail "under preempt/partition_prio expected exactly one teamb batch job PREEMPTED, got '${victim}'"
ok "side by side, Slurm's preempt/partition_prio: teama's job $u2 preempted teamb's batch job ${victim% } (another team's): the same-team rule is gpufair's"

# (e) borrowed reservation time, back under preempt/gpufair.
"$CLUSTER" reconfigure --drop-conf PreemptType >>"$E2E_OUT/t14-reconf.log" 2>&1 \
  || fail "scontrol reconfigure back to preempt/gpufair failed (see $E2E_OUT/t14-reconf.log)"
[[ $(scontrol show config | sed -n 's/^PreemptType *= *//p') == preempt/gpufair ]] \
  || fail "PreemptType is not preempt/gpufair after the reconfigure"
scancel -u gfa1 2>/dev/null || true; scancel -u gfb1 2>/dev/null || true
wait_empty_queue 30 || fail "the queue did not empty"
scontrol create reservation ReservationName=r1 StartTime=now Duration=120 Nodes=gpu1 Accounts=teama \
  MaxStartDelay=5 >"$E2E_OUT/t14-resv.txt" 2>&1 || fail "scontrol create reservation failed: $(cat "$E2E_OUT/t14-resv.txt")"
bw=$(sub gfb1 teamb low 8 300 -w gpu1 --signal=R:USR1@0)
wait_state "$bw" RUNNING 30 || fail "teamb's job $bw ($(state_of "$bw")) did not start on gpu1 on borrowed reservation time"
sleep 3
na0=$(team_field teama in_team_preemptions); nb0=$(team_field teamb in_team_preemptions)
rj=$(sub gfa1 teama low 8 300 --reservation=r1)
wait_state "$rj" RUNNING 40 || fail "teama's reservation job $rj is $(state_of "$rj"), expected it to take gpu1 back"
[[ $(state_of "$bw") != RUNNING ]] || fail "teamb's borrowing job $bw still runs"
grep -q "preempted JobId=$bw has been requeued to reclaim resources for JobId=$rj" "$log" \
  || fail "slurmctld did not log the requeue of $bw for $rj"
sleep 4
decisions >"$E2E_OUT/t14-decisions-resv.txt"
say "decisions: $(grep "^$rj $bw " "$E2E_OUT/t14-decisions-resv.txt" | tr '\n' ';' | cut -c1-400)"
[[ $(grep -c "^$rj $bw False teama True " "$E2E_OUT/t14-decisions-resv.txt") == 1 ]] \
  || fail "gpufair-show does not list $rj taking gpu1 back from $bw once for teama as a reservation decision (see $E2E_OUT/t14-decisions-resv.txt)"
[[ $(grep -c "^$rj $bw False teamb True " "$E2E_OUT/t14-decisions-resv.txt") == 1 ]] \
  || fail "gpufair-show does not list it once for teamb (see $E2E_OUT/t14-decisions-resv.txt)"
[[ $(grep -c " $bw " "$E2E_OUT/t14-decisions-resv.txt") == 2 ]] || fail "other decisions name $bw"
na1=$(team_field teama in_team_preemptions); nb1=$(team_field teamb in_team_preemptions)
((na1 == na0 && nb1 == nb0)) || fail "in-team preemptions moved (teama $na0 -> $na1, teamb $nb0 -> $nb1)"
ok "teama's reservation job $rj took gpu1 back from teamb's job $bw on borrowed time: recorded once per team as a reservation decision, not an in-team jump"
scancel -u gfa1 2>/dev/null || true; scancel -u gfb1 2>/dev/null || true

# (f) a PreemptType that preempts by QOS does not go with preempt_by=partition.
"$CLUSTER" reconfigure --write-only --extra-conf PreemptType=preempt/qos >/dev/null 2>&1 || true
"$CLUSTER" restart-ctld >"$E2E_OUT/t14-bad-start.txt" 2>&1 && fail "slurmctld started with preempt_by=partition and PreemptType=preempt/qos"
line=$(grep 'priority/gpufair' "$log" | grep "preempt_by='partition'" | tail -1)
say "slurmctld: ${line:0:300}"
[[ $line == *"PreemptType=preempt/qos preempts by QOS"* && $line == *accepted* ]] \
  || fail "slurmctld's refusal does not name preempt_by and PreemptType=preempt/qos: $line"
ok "preempt_by=partition with PreemptType=preempt/qos: slurmctld refuses to start, naming both"
say "check 14 took $((SECONDS - t0)) s"
