#!/usr/bin/env bash
# Check 4: a high job preempts its own team's low job; it never preempts
# another team's job; the event reaches the detector exactly once.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
clear_queue
bl=$(sub gfb1 teamb low 8 90 -w gpu1)
c=("$(sub gfc1 teamc low 8 90 -w gpu2)" "$(sub gfc1 teamc low 8 90 -w gpu3)" "$(sub gfc1 teamc low 8 90 -w gpu4)")
for j in "$bl" "${c[@]}"; do wait_state "$j" RUNNING 20 || fail "low job $j did not start"; done
sleep 3
nb0=$(team_field teamb in_team_preemptions); na0=$(team_field teama in_team_preemptions)
nc0=$(team_field teamc in_team_preemptions)
bh=$(sub gfb1 teamb high 8 40)
wait_state "$bh" RUNNING 30 || fail "teamb's high job $bh did not start (it should preempt teamb's low job $bl)"
sb=$(state_of "$bl")
[[ $sb != RUNNING ]] || fail "teamb's low job $bl still runs after the high job started"
for j in "${c[@]}"; do [[ $(state_of "$j") == RUNNING ]] || fail "teamc's job $j was disturbed by teamb's high job"; done
ok "teamb's high job $bh preempted teamb's own low job $bl (now $sb); teamc's jobs kept running"
# teama has no low job: its high job must not preempt teamc's low jobs.
ah=$(sub gfa1 teama high 8 5)
sleep 12
[[ $(state_of "$bh") == RUNNING ]] || fail "teamb's high job $bh no longer runs: the cluster was not full, the check would prove nothing"
[[ $(state_of "$ah") == PENDING ]] || fail "teama's high job $ah is $(state_of "$ah"), expected PENDING"
for j in "${c[@]}"; do
  [[ $(state_of "$j") == RUNNING ]] || fail "teamc's low job $j was preempted by another team's high job"
done
grep -E "preempted JobId=(${c[0]}|${c[1]}|${c[2]}) " "$RUN/log/slurmctld.log" && fail "slurmctld preempted a teamc job"
ok "teama's high job $ah waits; it did not preempt any of teamc's low jobs"
sleep 4  # two cycles: the state file has the event
nb1=$(team_field teamb in_team_preemptions); na1=$(team_field teama in_team_preemptions)
nc1=$(team_field teamc in_team_preemptions)
say "in-team preemptions seen by the detector: teamb $nb0 -> $nb1, teama $na0 -> $na1, teamc $nc0 -> $nc1"
((nb1 == nb0 + 1)) || fail "the detector saw teamb's preemption $((nb1 - nb0)) times, expected exactly once"
((na1 == na0 && nc1 == nc0)) || fail "the detector recorded preemptions for teama/teamc"
n=$(gshow_json --decisions 50 | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print(sum(1 for t in d["teams"] for x in t["decisions"] if x["preemptor"] == int(sys.argv[1]) and x["victim"] == int(sys.argv[2])))' "$bh" "$bl")
((n == 1)) || fail "gpufair-show lists $n decisions for $bh preempting $bl, expected 1"
nl=$(grep -c "preempted JobId=$bl has been requeued to reclaim resources for JobId=$bh" "$RUN/log/slurmctld.log" || true)
((nl == 1)) || fail "slurmctld logged $nl preemptions of $bl by $bh"
ok "the preemption reached the detector exactly once: $(gshow_json --decisions 50 | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print([x["reason"] for t in d["teams"] for x in t["decisions"] if x["preemptor"] == int(sys.argv[1])][0][:150])' "$bh")"
clear_queue
