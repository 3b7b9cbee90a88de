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
