#!/usr/bin/env bash
# Check 9: the cycle's job table (plugin/README.md) follows every way a job
# becomes live without walking job_list: array tasks split off their meta
# record, a held job released, a running job requeued. The periodic job_list walk (every 10th cycle)
# logs any live job the table had missed: it must stay silent here. Then the
# one case nothing announces, a *finished* job requeued by an admin, must be
# caught by that walk (which also shows the check above can fail). Last,
# nice values changed by scontrol update and top hold through table cycles.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
clear_queue
LOG=$RUN/log/slurmctld.log
from=$(($(wc -l <"$LOG") + 1))
since() { tail -n +"$from" "$LOG"; }
walks() { since | grep -c "priority/gpufair: cycle (job_list)" || true; }
# wait_walks N TIMEOUT_S: N more job_list walks than now
wait_walks() {
  local want=$(($(walks) + $1)) i
  for ((i = 0; i < $2 * 5; i++)); do (($(walks) >= want)) && return 0; sleep 0.2; done
  return 1
}

rq=$(sub gfb1 teamb normal 2 300 --requeue -w gpu1)
held=$(sub gfa1 teama normal 2 25 -H)
wait_state "$rq" RUNNING 20 || fail "job $rq did not start"
# Array tasks are split off their pending meta record as they start: 10
# tasks of 4 GPUs, at most 6 at once (24 GPUs), so the released job fits
# next to them.
arr=$(sub gfc1 teamc normal 4 25 --array=0-9%6)
scontrol requeue "$rq" || fail "scontrol requeue $rq (running) failed"
scontrol release "$held" || fail "scontrol release $held failed"
say "live: requeued $rq, released $held, array $arr"
wait_state "$held" RUNNING 40 || fail "released job $held did not start"
for ((i = 0; i < 100; i++)); do
  n=$(squeue -h -t R -o %i | grep -c "^${arr}_" || true)
  ((n >= 2)) && break
  sleep 0.2
done
((n >= 2)) || fail "only $n tasks of array $arr run"
# Two walks while the tasks, the released job and the requeued job are live.
wait_walks 2 60 || fail "no two job_list walks within 60 s (calc_period=2s: one every 20 s expected)"
since | grep "job table had missed" && fail "the job_list walk found live jobs the job table had missed (above)"
ok "$(walks) job_list walks found no live job the table had missed (split array tasks, release, requeue)"
scancel "$arr" "$rq"

# A finished job requeued: pending again without any call into the plugin.
# It runs 1 s; once requeued (SLURM_RESTART_COUNT set) 120 s, so it is live
# at the next walk.
fin=$(cd /tmp && runuser -u gfb1 -- sbatch --parsable -A teamb --qos normal -J e2e-requeue-finished \
      --gres=gpu:1 -n1 -c1 --mem=100 -t 30 -o /dev/null -D /tmp --requeue \
      --wrap='if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then sleep 120; else sleep 1; fi') \
  || fail "sbatch of the job to requeue failed: $fin"
fin=${fin%%;*}
for ((i = 0; i < 100; i++)); do
  [[ $(scontrol show job "$fin" 2>/dev/null | grep -o 'JobState=[A-Z]*') == JobState=COMPLETED ]] && break
  sleep 0.2
done
((i < 100)) || fail "job $fin did not complete"
sleep 3  # a cycle drops it from the table
scontrol requeue "$fin" || fail "scontrol requeue $fin (completed) failed"
st=$(state_of "$fin")
[[ $st == PENDING || $st == RUNNING ]] || fail "requeued job $fin is '$st', expected PENDING or RUNNING"
wait_walks 1 30 || fail "no job_list walk within 30 s"
since | grep "job table had missed (first JobId=$fin)" >/dev/null \
  || fail "the walk did not report the requeued finished job $fin as missed"
ok "the periodic walk caught the requeued finished job $fin: $(since | grep -o 'found [0-9]* live job.*' | tail -1)"
clear_queue

# Table cycles re-prioritise from each job's current inputs: an admin's
# change to a waiting job must hold through the cycles that follow, not
# just until the next one. Two twins wait behind a job that holds gpu1, one
# gets nice=500, and its priority must stay 500 below its twin's (a cycle
# that kept inputs from before the change would level them again).
blk=$(sub gfa1 teama normal 8 300 -w gpu1)
wait_state "$blk" RUNNING 20 || fail "job $blk did not start"
t1=$(sub gfb1 teamb normal 1 25 -w gpu1)
t2=$(sub gfb1 teamb normal 1 25 -w gpu1)
tables() { since | grep -c "priority/gpufair: cycle (tracked jobs)" || true; }
# wait_tables N: N more table cycles than now (one every 2 s)
wait_tables() {
  local want=$(($(tables) + $1)) i
  for ((i = 0; i < 100; i++)); do (($(tables) >= want)) && return 0; sleep 0.2; done
  fail "no $1 table cycle(s) within 20 s"
}
# between_table_cycles CMD...: runs CMD just after a table cycle that
# follows a walk, then waits for two more table cycles.
between_table_cycles() {
  local w0
  wait_walks 1 30 || fail "no job_list walk within 30 s"
  wait_tables 1
  "$@" || fail "$* failed"
  w0=$(walks)
  wait_tables 2
  (($(walks) == w0)) || say "(a job_list walk came in between)"
}
between_table_cycles scontrol update jobid="$t2" nice=500
p1=$(squeue -h -j "$t1" -o %Q) p2=$(squeue -h -j "$t2" -o %Q)
[[ $(state_of "$t1") == PENDING && $(state_of "$t2") == PENDING ]] || fail "twins $t1/$t2 did not stay pending"
d=$((p1 - p2))
((d >= 490 && d <= 510)) || fail "priority of $t2 (nice 500) is $p2, its twin $t1 has $p1: difference $d, expected 500"
ok "after nice=500 and two table cycles: $t1 at $p1, $t2 at $p2 (difference $d)"
# scontrol top moves nice between a user's jobs and sets their priorities
# itself, with no call into a priority plugin: $t2 takes nice 0, $t1 nice
# 500, and the cycles after must keep them that way round.
between_table_cycles scontrol top "$t2"
p1=$(squeue -h -j "$t1" -o %Q) p2=$(squeue -h -j "$t2" -o %Q)
d=$((p2 - p1))
((d >= 490 && d <= 510)) || fail "after scontrol top $t2: $t2 at $p2, $t1 at $p1: difference $d, expected 500"
ok "after scontrol top $t2 and two table cycles: $t2 at $p2, $t1 at $p1 (difference $d)"
clear_queue
