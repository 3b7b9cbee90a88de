#!/usr/bin/env bash
# Check 7: kill -9 of slurmctld in the middle of a run, then restart: usage
# and penalties are kept (within one period's charge), no job is lost.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
clear_queue
sleep 3
gshow_json >"$E2E_OUT/t7-before-jobs.json"
ids=()
# Every job is team C's: C holds the whole cluster, above its entitlement,
# and a pending job of another team would reclaim its GPUs (reclaim=all),
# so the pending jobs are C's own (same QOS: no in-team preemption either).
for n in gpu1 gpu2 gpu3 gpu4; do ids+=("$(sub gfc1 teamc normal 8 24 -w $n)"); done
for j in "${ids[@]}"; do wait_state "$j" RUNNING 20 || fail "job $j did not start"; done
pend=("$(sub gfc1 teamc normal 8 3)" "$(sub gfc1 teamc normal 8 3)")
sleep 7
gshow_json >"$E2E_OUT/t7-before-kill.json"
"$CLUSTER" restart-ctld --kill9 || fail "slurmctld did not come back after kill -9"
ok "slurmctld killed with SIGKILL and restarted"
for j in "${ids[@]}" "${pend[@]}"; do
  s=$(state_of "$j")
  [[ $s == RUNNING || $s == PENDING || $s == COMPLETING || $s == COMPLETED ]] || fail "job $j is '$s' after the restart (lost?)"
done
ok "all ${#ids[@]} running and ${#pend[@]} pending jobs are still known after the restart"
sleep 2
gshow_json >"$E2E_OUT/t7-after-restart.json"
wait_empty_queue 90 || fail "jobs did not finish after the restart"
sleep 6
gshow_json >"$E2E_OUT/t7-after-jobs.json"
all=$(IFS=,; echo "${ids[*]},${pend[*]}")
sacct -X -P -n -j "$all" -o JobIDRaw,NodeList,AllocTRES,ElapsedRaw,State,Account >"$E2E_OUT/t7-sacct.txt"
cat "$E2E_OUT/t7-sacct.txt"
"$PY" - "$E2E_OUT" <<'PYEOF' || fail "usage or penalties were not kept across kill -9 (see $E2E_OUT/t7-*)"
import json, re, sys
o = sys.argv[1]
L = lambda n: {t["name"]: t for t in json.load(open(f"{o}/t7-{n}.json"))["teams"]}
now = lambda n: json.load(open(f"{o}/t7-{n}.json"))["now"]
b0, k, r, b1 = L("before-jobs"), L("before-kill"), L("after-restart"), L("after-jobs")
rows = [l.strip().split("|") for l in open(f"{o}/t7-sacct.txt") if l.strip()]
bad = []
if len(rows) != 6 or any(x[4] != "COMPLETED" for x in rows):
    bad.append(f"not every job completed: {[(x[0], x[4]) for x in rows]}")
want = sum(int(re.search(r"gres/gpu=(\d+)", x[2]).group(1)) * (2 if x[1] == "gpu4" else 1) * int(x[3])
           for x in rows if x[5] == "teamc")
got = (b1["teamc"]["raw_gpu_hours"] - b0["teamc"]["raw_gpu_hours"]) * 3600
period_charge = 2 * 40  # one calc_period (2 s) of the 40 weighted GPUs that ran
print(f"teamc: charged {got:.0f} GPU-s across the crash, jobs' weighted GPU x run time {want} GPU-s "
      f"(tolerance: one period's charge, {period_charge} GPU-s)")
if abs(got - want) > period_charge:
    bad.append(f"teamc's usage across the crash is {got:.0f} GPU-s, expected {want} +- {period_charge}")
for team in ("teama", "teamb", "teamc"):
    p0, p1 = k[team]["penalty"], r[team]["penalty"]
    dt = now("after-restart") - now("before-kill")
    exp = p0 * 2 ** (-dt / 144.0)
    print(f"{team}: penalty {p0:.4f} before the kill, {p1:.4f} after the restart (decay alone: {exp:.4f})")
    if abs(p1 - exp) > 0.05 * max(exp, 0.01):
        bad.append(f"{team}'s penalty changed across the restart: {p0} -> {p1}, expected {exp:.4f}")
    if k[team]["bait_detections"] != r[team]["bait_detections"]:
        bad.append(f"{team}'s bait detections changed across the restart")
    # Jump prices paid are a running total: kept exactly.
    if abs(k[team]["jump_price_gpu_hours"] - r[team]["jump_price_gpu_hours"]) > 1e-6:
        bad.append(f"{team}'s jump prices changed across the restart: "
                   f"{k[team]['jump_price_gpu_hours']} -> {r[team]['jump_price_gpu_hours']}")
if not any(k[t]["penalty"] > 0 or k[t]["jump_price_gpu_hours"] > 0 for t in k):
    bad.append("no team had a penalty or a jump price before the kill: nothing checked (run check 5 first)")
if bad:
    print("\n".join(bad)); sys.exit(1)
PYEOF
ok "usage and penalties kept across kill -9 (within one period), no job lost"
