#!/usr/bin/env bash
# Check 2: GPU-hours charged to each team match the jobs' GPUs x run time
# (within 5%), typed GPUs weighted as configured (gpu4's a100s count double:
# gpu_weight:a100=2), sub-accounts rolled up into their team.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
clear_queue
sleep 3
gshow_json >"$E2E_OUT/t2-before.json" || fail "gpufair-show failed"
# teama: 8 GPUs x 12 s on the a100 node (weight 2) + its sub-account teama_nlp 4 GPUs x 10 s on gpu3;
# teamb: 4 GPUs x 14 s on gpu1; teamc: 2 GPUs x 18 s on gpu2.
ids=()
ids+=("$(sub gfa1 teama normal 8 12 -w gpu4)")
ids+=("$(sub gfa2 teama_nlp normal 4 10 -w gpu3)")
ids+=("$(sub gfb1 teamb normal 4 14 -w gpu1)")
ids+=("$(sub gfc1 teamc normal 2 18 -w gpu2)")
wait_empty_queue 60 || fail "jobs did not finish within 60 s"
sleep 6  # let slurmdbd and two gpufair cycles catch up
gshow_json >"$E2E_OUT/t2-after.json" || fail "gpufair-show failed"
sacct -X -P -n -j "$(IFS=,; echo "${ids[*]}")" -o JobIDRaw,Account,NodeList,AllocTRES,ElapsedRaw,State >"$E2E_OUT/t2-sacct.txt"
cat "$E2E_OUT/t2-sacct.txt"
"$PY" - "$E2E_OUT/t2-sacct.txt" "$E2E_OUT/t2-before.json" "$E2E_OUT/t2-after.json" <<'PYEOF' || fail "GPU-hours charged by gpufair do not match the jobs (see $E2E_OUT/t2-sacct.txt)"
import json, re, sys
before = {t["name"]: t for t in json.load(open(sys.argv[2]))["teams"]}
after = {t["name"]: t for t in json.load(open(sys.argv[3]))["teams"]}
team = {"teama": "teama", "teama_nlp": "teama", "teamb": "teamb", "teamc": "teamc"}
want = {"teama": 0.0, "teamb": 0.0, "teamc": 0.0}
for line in open(sys.argv[1]):
    jid, acct, nodes, tres, el, state = line.strip().split("|")
    if state != "COMPLETED":
        sys.exit(f"job {jid} ended {state}")
    g = int(re.search(r"gres/gpu=(\d+)", tres).group(1))
    w = 2.0 if nodes == "gpu4" else 1.0
    want[team[acct]] += g * w * int(el)
bad = 0
for t, w in want.items():
    got = (after[t]["raw_gpu_hours"] - before.get(t, {"raw_gpu_hours": 0})["raw_gpu_hours"]) * 3600
    dev = abs(got - w) / w
    print(f"{t}: charged {got:.1f} GPU-s, jobs' GPUs x run time x type weight = {w:.1f} GPU-s ({100*dev:.1f}% off)")
    bad += dev > 0.05
sys.exit(1 if bad else 0)
PYEOF
ok "each team was charged its jobs' weighted GPU-seconds within 5% (a100 x2, teama_nlp rolled into teama)"

# A job shrunk while it runs (scontrol update NumNodes; Slurm does the same
# to a --no-kill job that loses a node) is charged its GPUs at each size.
# Slurm "ends" it for the accounting at the resize (job_pre_resize_acctg ->
# acct_policy_job_fini -> priority_p_job_end, with JOB_RESIZING set and its
# end_time still its planned end) and begins it again: an end reported to
# gpufair there charged it up to its time limit (30 min here) and its run
# from its start again at the next cycle.
before=$(team_field teamb raw_gpu_hours)
rid=$(sub gfb1 teamb normal 8 24 -N2 -n2 -w gpu1,gpu2)
wait_state "$rid" RUNNING 30 || fail "2-node job $rid did not start"
sleep 8
t_resize=$(date +%s)
scontrol update jobid="$rid" NumNodes=1 >"$E2E_OUT/t2-resize.txt" 2>&1 \
  || fail "scontrol update jobid=$rid NumNodes=1 failed: $(cat "$E2E_OUT/t2-resize.txt")"
wait_empty_queue 60 || fail "resized job $rid did not finish within 60 s"
sleep 6  # two gpufair cycles
after=$(team_field teamb raw_gpu_hours)
scontrol show job "$rid" >>"$E2E_OUT/t2-resize.txt" 2>&1 || true
sacct -P -n -j "$rid" -o JobIDRaw,Start,End,ElapsedRaw,AllocTRES,State >>"$E2E_OUT/t2-resize.txt"
start=$(sacct -X -P -n -j "$rid" -o Start | head -1)
end=$(sacct -X -P -n -j "$rid" -o End | tail -1)
"$PY" - "$before" "$after" "$(date -d "$start" +%s)" "$t_resize" "$(date -d "$end" +%s)" <<'PYEOF' \
  || fail "the resized job $rid was not charged its GPUs at each size (see $E2E_OUT/t2-resize.txt)"
import sys
before, after, start, resize, end = map(float, sys.argv[1:])
got = (after - before) * 3600
want = 16 * (resize - start) + 8 * (end - resize)
print(f"resized job: charged {got:.0f} GPU-s, 16 GPUs x {resize - start:.0f} s + 8 x {end - resize:.0f} s = {want:.0f}")
# A cycle (2 s) may charge its interval at the new size: at most 16 GPU-s off.
sys.exit(0 if abs(got - want) <= 0.15 * want + 16 else 1)
PYEOF
ok "a job shrunk from 16 to 8 GPUs while running was charged its GPUs at each size"

# A run that starts after a cycle and is requeued before the next is charged
# its GPUs x run time. The cycle's walk sees such a job only pending again
# (its start and end may then be backfill's plan), so it reports it by id and
# the core, which never saw it running, charged nothing; Slurm's end report
# (priority_p_job_end, from deallocate_nodes, with AccountingStorageEnforce=
# limits as here) carries the run's start and end. A 60-s calc_period leaves
# room for a 6-s run between two cycles; the state file, saved every cycle,
# tells whether one came between the start and the requeue (then try again).
restore() { "$CLUSTER" reconfigure --priority-params "$E2E_GPUFAIR_PARAMS" >/dev/null 2>&1 || true; }
trap restore EXIT
"$CLUSTER" reconfigure --priority-params "${E2E_GPUFAIR_PARAMS/calc_period=2s/calc_period=60s}" \
  >"$E2E_OUT/t2-requeue.txt" 2>&1 || fail "reconfigure to calc_period=60s failed: $(cat "$E2E_OUT/t2-requeue.txt")"
sfile=$(gshow_json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["state_file"])')
between=0
for try in 1 2 3; do
  sleep 4  # past the cycle a reconfigure (or the last try's restore) starts
  before=$(team_field teamc raw_gpu_hours)
  saved0=$(stat -c %.9Y "$sfile")
  qid=$(sub gfc1 teamc normal 4 300 -w gpu3)
  wait_state "$qid" RUNNING 20 || fail "job $qid did not start"
  sleep 6
  scontrol requeuehold "$qid" >>"$E2E_OUT/t2-requeue.txt" 2>&1 || fail "scontrol requeuehold $qid failed"
  saved1=$(stat -c %.9Y "$sfile")
  # A cycle now, to save what the requeue's end report charged.
  "$CLUSTER" reconfigure --priority-params "$E2E_GPUFAIR_PARAMS" >>"$E2E_OUT/t2-requeue.txt" 2>&1 \
    || fail "reconfigure back to calc_period=2s failed"
  sleep 6
  after=$(team_field teamc raw_gpu_hours)
  sacct -D -X -P -n -j "$qid" -o JobIDRaw,Start,End,ElapsedRaw,AllocTRES,State >>"$E2E_OUT/t2-requeue.txt"
  ran=$(sacct -D -X -P -n -j "$qid" -o ElapsedRaw,State | awk -F'|' '$2 ~ /REQUEUE/ {print $1; exit}')
  scancel "$qid" 2>/dev/null || true
  [[ -n $ran ]] || fail "sacct has no REQUEUED record of job $qid (see $E2E_OUT/t2-requeue.txt)"
  if [[ $saved0 == "$saved1" ]]; then between=1; break; fi
  say "try $try: a cycle came while job $qid ran; again"
  "$CLUSTER" reconfigure --priority-params "${E2E_GPUFAIR_PARAMS/calc_period=2s/calc_period=60s}" \
    >>"$E2E_OUT/t2-requeue.txt" 2>&1 || fail "reconfigure to calc_period=60s failed"
done
((between)) || fail "no try had its run between two cycles (see $E2E_OUT/t2-requeue.txt)"
"$PY" - "$before" "$after" "$ran" <<'PYEOF' \
  || fail "the run job $qid had between two cycles, ended by a requeue, was not charged (see $E2E_OUT/t2-requeue.txt)"
import sys
before, after, ran = map(float, sys.argv[1:])
got = (after - before) * 3600
want = 4 * ran
print(f"run ended by a requeue between two cycles: charged {got:.0f} GPU-s, 4 GPUs x {ran:.0f} s = {want:.0f}")
# Start and end are whole seconds in sacct and in Slurm's record: 1 s each.
sys.exit(0 if abs(got - want) <= 8 else 1)
PYEOF
ok "a run ended by a requeue between two cycles was charged its GPUs x run time"
