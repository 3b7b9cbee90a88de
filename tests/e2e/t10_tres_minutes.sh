#!/usr/bin/env bash
# Check 10: the usage Slurm's limits read is kept under gpufair as under
# multifactor (issue 15, items 1 and 2). t10_tres_minutes.sh multifactor|gpufair
#   A. A fresh team "budget" with GrpTRESMins=gres/gpu=24 runs 3 x 8 GPUs
#      (gpu1-3) while 1-GPU probes start one after another on gpu4, until a
#      probe is held with AssocGrpGRESMinutes. Asserted under each policy:
#      the hold came once the team's GPU-minutes (usage_tres_raw, as
#      `scontrol show assoc_mgr` prints it) reached the budget, and within
#      one calc period of the GPU-seconds that make its decayed usage reach
#      it; before the hold the TRES run minutes (grp_used_tres_run_secs, what
#      AccountingStorageEnforce=safe reads) were the jobs' reservation less
#      what ran up to the last period; a UsageFactor=0 job of the team still
#      runs once it is over budget. The gpufair run then compares with the
#      multifactor run's figures: both held at the same point, within one
#      multifactor calc period (60 s) of the team's usage.
#      PriorityDecayHalfLife is 1 hour during the check (5 minutes in the
#      fixture), so that multifactor's decay of each 60 s period as a whole
#      (it undercounts a period by 13 % at 5 minutes) does not move its hold
#      by more than its period; it is set back at the end.
#   B. QOS "free" (UsageFactor=0): a job in it leaves a fresh team's usage
#      unchanged (gpufair: gpufair-show's raw GPU-hours; multifactor: sshare's
#      RawUsage) and its GPU-minutes at 0, while a normal-QOS job charges.
source "$(dirname "$0")/lib.sh"
policy=${1:?policy}
need_cluster "$policy"
BUDGET=24       # GPU-minutes
BIG_GPUS=24     # 3 jobs x 8 GPUs, on gpu1-gpu3
out=$E2E_OUT/t10-$policy
rm -f "$out"-* "$out.json"
S=(sacctmgr -i -Q)

# Period of the usage limits read: multifactor's decay thread runs every
# PriorityCalcPeriod (1 minute, the least slurm.conf allows), gpufair's
# cycle every calc_period (2 s, lib.sh).
period=2
[[ $policy == multifactor ]] &&
  period=$(scontrol show config | sed -n 's/^PriorityCalcPeriod *= *//p' | awk -F: '{print $1 * 3600 + $2 * 60 + $3}')
((period > 0)) || fail "cannot read PriorityCalcPeriod"

clear_queue
say "PriorityDecayHalfLife=60 (minutes) for this check; fresh accounts budget (GrpTRESMins=gres/gpu=$BUDGET) and freeq, QOS free (UsageFactor=0)"
"$CLUSTER" reconfigure --extra-conf PriorityDecayHalfLife=60 >/dev/null || fail "scripts/cluster reconfigure failed"
for ((i = 0; i < 50; i++)); do scontrol show config | grep -q '^PriorityDecayHalfLife *= *01:00:00' && break; sleep 0.2; done
((i < 50)) || fail "PriorityDecayHalfLife is not 1 hour after scontrol reconfigure"
"${S[@]}" delete account budget,freeq >/dev/null 2>&1 || true
sacctmgr -n -P show qos free format=name | grep -qx free ||
  "${S[@]}" add qos free set priority=0 usagefactor=0 >/dev/null || fail "sacctmgr add qos free failed"
"${S[@]}" add account budget,freeq fairshare=100 description=t10 organization=gpufair >/dev/null ||
  fail "sacctmgr add account failed"
"${S[@]}" modify account budget set grptresmins=gres/gpu=$BUDGET >/dev/null || fail "setting GrpTRESMins failed"
"${S[@]}" add user gfb1 account=budget,freeq qos=normal,free defaultqos=normal >/dev/null ||
  fail "sacctmgr add user gfb1 to budget,freeq failed"
assoc() { scontrol show assoc_mgr accounts="$1" flags=assoc 2>/dev/null; }
for ((i = 0; i < 50; i++)); do assoc budget | grep -q "gres/gpu=$BUDGET(" && break; sleep 0.2; done
((i < 50)) || fail "slurmctld never saw budget's GrpTRESMins (scontrol show assoc_mgr accounts=budget)"

# --- A. the budget -----------------------------------------------------------
big=()
for n in gpu1 gpu2 gpu3; do big+=("$(sub gfb1 budget normal 8 600 -w $n)"); done
for j in "${big[@]}"; do wait_state "$j" RUNNING 20 || fail "job $j did not start"; done
say "3 x 8 GPUs running for budget; probing with 1-GPU jobs on gpu4 until one is held"
probes=() held="" t0=$(date +%s)
while [[ -z $held ]]; do
  (($(date +%s) - t0 < 3 * period + 120)) || fail "no probe held after $(($(date +%s) - t0)) s (budget $BUDGET GPU-min; see $out-*)"
  p=$(sub gfb1 budget normal 1 1 -w gpu4)
  probes+=("$p")
  for ((i = 0; i < 40; i++)); do
    r=$(squeue -h -j "$p" -o '%T %r' 2>/dev/null || true)
    case $r in
      "PENDING AssocGrpGRESMinutes"*) held=$p; break ;;
      ""|COMPLETED*|COMPLETING*) break ;;
    esac
    sleep 0.1
  done
  # The run minutes while the three big jobs (and no probe) run: the last
  # such sample before the hold is checked below.
  if [[ -z $held ]]; then
    a=$(assoc budget)
    if [[ $a == *"GrpJobs=N(3)"* ]]; then { date +%s; echo "$a"; } >"$out-assoc-running.txt"; fi
  fi
done
t_hold=$(date +%s)
assoc budget >"$out-assoc-at-hold.txt"
squeue -j "$held" -o '%i %T %r' >>"$out-assoc-at-hold.txt"
ok "probe $held (the ${#probes[@]}th) held: $(squeue -h -j "$held" -o %r)"

# A job of the budget team in QOS free (UsageFactor=0) still runs: Slurm
# clears the usage of a free job's limits check (acct_policy.c).
scancel "${big[@]}" "$held" 2>/dev/null || true
free_job=$(sub gfb1 budget free 1 1 -w gpu4)
for ((i = 0; i < 100; i++)); do
  s=$(state_of "$free_job")
  [[ $s == RUNNING || $s == COMPLETING || -z $s ]] && break
  sleep 0.1
done
[[ $s == RUNNING || $s == COMPLETING || -z $s ]] ||
  fail "budget's UsageFactor=0 job $free_job did not run: $(squeue -h -j "$free_job" -o '%T %r')"
ok "a UsageFactor=0 job of the team over budget runs ($free_job)"
wait_empty_queue 60 || fail "budget's jobs did not end"
sleep 2
all=$(IFS=,; echo "${big[*]},${probes[*]}")
sacct -X -P -n -j "$all" -o JobIDRaw,Start,End,AllocTRES,State >"$out-sacct.txt"

"$PY" - "$policy" "$t_hold" "$period" "$BUDGET" "$BIG_GPUS" "$out" <<'PYEOF' || fail "the budget check failed under $policy (see $out-*)"
import json, math, os, re, sys, time
policy, t_hold, period, budget, big_gpus, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
def account_record(text):  # the account's own association (no user)
    return next(r for r in re.split(r"(?=ClusterName=)", text) if re.search(r"Account=budget UserName= ", r))
def gpu(rec, name):  # limit and used of gres/gpu in a TRES line
    m = re.search(name + r"=[^\n]*?[=,]gres/gpu=(\w+)\((\d+)\)", rec)
    return m.group(1), int(m.group(2))
limit, used = gpu(account_record(open(f"{out}-assoc-at-hold.txt").read()), "GrpTRESMins")
ts = lambda s: int(time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%S")))
ran = 0.0       # undecayed GPU-seconds the team ran before the hold
big_start = []
for line in open(f"{out}-sacct.txt"):
    jid, start, end, alloc, state = line.strip().split("|")
    if start in ("Unknown", "None") or "gres/gpu=" not in alloc:
        continue
    g = int(re.search(r"gres/gpu=(\d+)", alloc).group(1))
    s = ts(start)
    e = min(ts(end) if end not in ("Unknown", "None") else t_hold, t_hold)
    ran += g * max(0, e - s)
    if g == 8:
        big_start.append(s)
bad = []
# The undecayed GPU-seconds at which the decayed usage of 24 GPUs reaches the
# budget (continuous decay, half-life 1 h): the hold cannot come before, and
# must come within one period (plus 4 s of probing and scheduling) after.
hl, rate = 3600.0, big_gpus
need = -hl * math.log2(1 - budget * 60 * math.log(2) / (rate * hl)) * rate
slack = (period + 4) * (big_gpus + 1)
print(f"{policy}: GrpTRESMins gres/gpu={limit}, used {used} GPU-min at the hold; the team had run "
      f"{ran:.0f} GPU-s (undecayed; its decayed usage reaches {budget} GPU-min at {need:.0f}); "
      f"calc period {period} s")
if limit != str(budget):
    bad.append(f"GrpTRESMins is {limit}, expected {budget}")
if used < budget or ran < budget * 60:
    bad.append(f"held with {used} GPU-min used, {ran:.0f} GPU-s run: before the budget of {budget} was spent")
if ran > need + slack:
    bad.append(f"held after {ran:.0f} GPU-s: later than one calc period after the budget was spent ({need:.0f} + {slack})")
# What AccountingStorageEnforce=safe reads, while the three jobs ran: their
# reservations (30 min x 8 GPUs each) less what they ran up to the last period.
try:
    lines = open(f"{out}-assoc-running.txt").read().split("\n", 1)
    t_s, rec = int(lines[0]), account_record(lines[1])
    _, run_min = gpu(rec, "GrpTRESRunMins")
    ran_big = sum(8 * (t_s - s) for s in big_start) / 60
    lo, hi = 720 - ran_big - 1, 720 - ran_big + big_gpus * (period + 4) / 60 + 1
    print(f"{policy}: TRESRunMins {run_min} at {t_s - min(big_start)} s, 720 reserved less {ran_big:.1f} run: "
          f"expected within [{lo:.1f}, {hi:.1f}]")
    if not lo <= run_min <= hi:
        bad.append(f"TRESRunMins {run_min} outside [{lo:.1f}, {hi:.1f}]")
except FileNotFoundError:
    bad.append("no sample of the run minutes while the three jobs ran")
json.dump({"policy": policy, "budget_gpu_min": budget, "used_gpu_min_at_hold": used,
           "ran_gpu_s_at_hold": ran, "needed_gpu_s": need, "period_s": period, "when": t_hold},
          open(f"{out}.json", "w"), indent=1)
if policy == "gpufair":
    mf = f"{os.path.dirname(out)}/t10-multifactor.json"
    if not os.path.exists(mf):
        bad.append(f"no {mf}: run e2e.t10_tres_minutes_multifactor first, to compare")
    else:
        m = json.load(open(mf))
        tol = (m["period_s"] + 4) * (big_gpus + 1)
        d = ran - m["ran_gpu_s_at_hold"]
        print(f"held after {ran:.0f} GPU-s under gpufair, {m['ran_gpu_s_at_hold']:.0f} GPU-s under multifactor "
              f"(run at {time.strftime('%H:%M:%S', time.localtime(m['when']))}): difference {d:+.0f} GPU-s "
              f"({d / big_gpus:+.1f} s of the team's {big_gpus} GPUs); one multifactor period is {tol} GPU-s")
        print(f"GPU-minutes used at the hold: gpufair {used}, multifactor {m['used_gpu_min_at_hold']} (budget {budget})")
        if abs(d) > tol:
            bad.append(f"gpufair held {d:+.0f} GPU-s away from multifactor, more than one period ({tol})")
sys.exit("\n".join(f"FAIL: {b}" for b in bad) or None)
PYEOF
ok "$policy holds the team at its GPU-minutes budget within one calc period; TRESRunMins as multifactor keeps them"

# --- B. UsageFactor=0 ----------------------------------------------------------
usage_of() {  # the team's usage in the policy's own ledger
  if [[ $policy == gpufair ]]; then team_field freeq raw_gpu_hours
  else sshare -n -P -A freeq -o Account,User,RawUsage | awk -F'|' '$2 == "" {print $3; f=1} END {if (!f) print 0}'
  fi
}
gpu_min() {  # the GPU-minutes freeq's limits see (usage_tres_raw / 60)
  assoc freeq | "$PY" -c '
import re, sys
for r in re.split(r"(?=ClusterName=)", sys.stdin.read()):
    if re.search(r"Account=freeq UserName= ", r):
        print(re.search(r"GrpTRESMins=[^\n]*?[=,]gres/gpu=\w+\((\d+)\)", r).group(1))'
}
sleep $((2 * 2))
u0=$(usage_of)
j=$(sub gfb1 freeq free 8 12 -w gpu1)
wait_state "$j" RUNNING 20 || fail "free job $j did not start"
wait_empty_queue 60 || fail "free job $j did not end"
sleep 5
u1=$(usage_of) m1=$(gpu_min)
j2=$(sub gfb1 freeq normal 8 12 -w gpu1)
wait_state "$j2" RUNNING 20 || fail "normal job $j2 did not start"
wait_empty_queue 60 || fail "normal job $j2 did not end"
sleep 5
u2=$(usage_of) m2=$(gpu_min)
echo "freeq usage ($([[ $policy == gpufair ]] && echo 'gpufair raw GPU-hours' || echo 'sshare RawUsage')): before $u0, after the free job $u1, after the normal job $u2; GPU-minutes (limits) $m1 then $m2" | tee "$out-usagefactor.txt"
"$PY" - "$policy" "$u0" "$u1" "$u2" "${m1:-x}" "${m2:-x}" <<'PYEOF' || fail "UsageFactor=0 check failed under $policy (see $out-usagefactor.txt)"
import sys
policy, u0, u1, u2, m1, m2 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
bad = []
# gpufair's raw GPU-hours never decay: a free job adds exactly 0. sshare's
# RawUsage decays: it may only go down.
if (policy == "gpufair" and abs(u1 - u0) > 1e-9) or u1 > u0:
    bad.append(f"the UsageFactor=0 job charged the team: {u0} -> {u1}")
if m1 != "0":
    bad.append(f"the UsageFactor=0 job used {m1} GPU-minutes of the team's limits")
if policy == "gpufair":
    got = (u2 - u1) * 3600
    if abs(got - 96) > 0.25 * 96:  # 8 GPUs x 12 s, within sleep/scheduling noise
        bad.append(f"the normal job charged {got:.1f} GPU-s, expected about 96")
    print(f"gpufair: free job charged {(u1 - u0) * 3600:.3f} GPU-s, normal job {got:.1f} GPU-s")
elif u2 <= u1:
    bad.append(f"the normal job did not charge the team under multifactor: {u1} -> {u2}")
if m2 == "x" or int(m2) < 1:
    bad.append(f"the normal job's GPU-minutes did not reach the team's limits usage ({m2})")
sys.exit("\n".join(f"FAIL: {b}" for b in bad) or None)
PYEOF
ok "a UsageFactor=0 job is free under $policy (usage and GPU-minutes unchanged); a normal one charges"
"$CLUSTER" reconfigure --extra-conf PriorityDecayHalfLife=5 >/dev/null || fail "setting PriorityDecayHalfLife back failed"
