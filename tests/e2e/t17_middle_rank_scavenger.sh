#!/usr/bin/env bash
# Check 17: a placeholder kept at a middle QOS is no safer (design.md,
# "Scavengers"; the simulator's adversarial/middle-rank-bait).
#
# A QOS `mid` is added for this test (Preempt=low; `high` is given
# Preempt=low,mid), so the in-team ranks are low = normal < mid < high.
# teamc fills three nodes with normal jobs; teama runs a `mid` job on the
# fourth, then its `high` job preempts it: teama's scavenger episode begins.
# teama's next `mid` job starts on the node teamc's short job leaves: a
# scavenger. teamc's next normal job, of a lower rank than that scavenger and
# with teamc already at its entitlement (16 of 32 GPUs, two active teams),
# must take it at once: only the scavenger rule allows that, and since
# 2026-12-06 it does whatever the reclaimer's rank (before, only a job of at
# least the scavenger's rank could, and nobody else runs `mid`). The victim is
# requeued, its SystemComment says "scavenger", and gpufair-show lists the
# reclaim. QOS mid is removed and high's Preempt= restored at the end, on
# failure too.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
log=$RUN/log/slurmctld.log
clear_queue

S=(sacctmgr -i -Q)
high_preempt0=$(sacctmgr -n -P show qos high format=Preempt) || fail "sacctmgr show qos high failed"
restore() {
  scancel --partition=gpu 2>/dev/null || true
  "${S[@]}" modify qos high set preempt="${high_preempt0:-''}" >/dev/null 2>&1 || true
  "${S[@]}" modify user gfa1,gfc1 set qos-=mid >/dev/null 2>&1 || true
  "${S[@]}" delete qos mid >/dev/null 2>&1 || true
}
trap restore EXIT
"${S[@]}" add qos mid set priority=50 preempt=low preemptmode=requeue >/dev/null || fail "sacctmgr add qos mid failed"
"${S[@]}" modify qos high set preempt=low,mid >/dev/null || fail "sacctmgr modify qos high set preempt=low,mid failed"
"${S[@]}" modify user gfa1,gfc1 set qos+=mid >/dev/null || fail "sacctmgr modify user set qos+=mid failed"
[[ $(sacctmgr -n -P show qos high format=Preempt) == low,mid ]] || fail "QOS high's Preempt= is not low,mid"
# slurmdbd pushes the change to slurmctld at once (scontrol's assoc_mgr dump
# does not show Preempt=; high's preemption of the mid job below proves it),
# and a gpufair cycle (2 s) reads the new relation into the ranks.
sleep 3

# Only a job of a team in no episode may reclaim: teamc's (an episode of
# teama's, from an earlier test, changes nothing here). And teamc, which
# holds 24 GPUs below, must not have jumped the queue lately, or teama's
# high job may reclaim one of them instead of displacing its own mid job.
# teamb would have (t5's story makes it pay jump prices: 48 GPU-s decays
# below 1 GPU-s in about 800 s, which this test once spent waiting); teamc
# runs no high job in any test, so the wait below is a guard that costs
# nothing.
wait_no_scavenger_episode 200 teamc || fail "teamc's scavenger episode is still on after 200 s"
wait_not_jumper 900 teamc || fail "teamc still counts as having jumped the queue lately after 900 s"

b=("$(sub gfc1 teamc normal 8 150 -w gpu1)" "$(sub gfc1 teamc normal 8 150 -w gpu2)")
bshort=$(sub gfc1 teamc normal 8 15 -w gpu3)
p1=$(sub gfa1 teama mid 8 300 -w gpu4)
for j in "${b[@]}" "$bshort" "$p1"; do wait_state "$j" RUNNING 30 || fail "job $j did not start"; done
say "cluster full: teamc's ${b[*]} $bshort on gpu1-3, teama's mid job $p1 on gpu4"

h=$(sub gfa1 teama high 8 150)
wait_state "$h" RUNNING 30 || fail "teama's high job $h did not start (it should preempt teama's mid job $p1)"
grep -q "preempted JobId=$p1 has been requeued to reclaim resources for JobId=$h" "$log" ||
  fail "slurmctld did not log the in-team preemption of $p1 by $h"
scancel "$p1"  # requeued: out of the way of the next mid job
say "teama's high job $h took $p1's GPUs: teama's scavenger episode began"

p2=$(sub gfa1 teama mid 8 300)
wait_state "$p2" RUNNING 40 || fail "teama's mid job $p2 did not start when $bshort ended"
j=$(sub gfc1 teamc normal 8 60)
say "teama's mid job $p2 runs (a scavenger); teamc's normal job $j submitted"
wait_state "$j" RUNNING 10 ||
  fail "teamc's normal job $j did not take teama's scavenger $p2 within 10 s (it is $(state_of "$p2"))"
grep -q "preempted JobId=$p2 has been requeued to reclaim resources for JobId=$j" "$log" ||
  fail "slurmctld did not log the reclaim of $p2 by $j"
comment=$(scontrol show job "$p2" | sed -n 's/^ *SystemComment=//p')
say "$p2's SystemComment: $comment"
[[ $comment == *scavenger* ]] || fail "the requeued job's SystemComment does not say it was a scavenger"
sleep 3  # a cycle: the decision is in gpufair-show
decision=$(gshow_json --decisions 50 | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
x = [x for t in d["teams"] for x in t["decisions"] if x["preemptor"] == int(sys.argv[1]) and x["victim"] == int(sys.argv[2])]
print(x[0]["reason"] if x else "none")' "$j" "$p2")
say "gpufair-show: $decision"
[[ $decision == *"reclaim of a scavenger"* ]] || fail "gpufair-show does not list $j's reclaim of scavenger $p2"
ok "a lower-rank job of another team took teama's middle-rank scavenger at once"
