#!/usr/bin/env bash
# Check 8: `scontrol reconfigure` with a changed half-life takes effect; a bad
# PriorityParameters value gives a clear error, on reconfigure keeps the old
# settings, and at start makes slurmctld refuse to start.
# The same on both releases, though Slurm does it differently: 22.05 calls
# priority_p_reconfig() in the running slurmctld (gpufair logs "reconfigured"
# or "reconfigure rejected"); from 23.11 on slurmctld re-executes itself, so
# gpufair's init runs again (it logs "init", or "invalid configuration" and the
# new process stops while the old one carries on with its settings).
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
clear_queue
log=$RUN/log/slurmctld.log
# Measure the half-life slurmctld applies: teama's decayed usage (sshare
# RawUsage, written by gpufair every cycle) over 20 s with nothing running.
measure_half_life() {
  local u0 u1 t0 t1
  u0=$(sshare -n -P -A teama -o Account,User,RawUsage | awk -F'|' '{gsub(/^ +/, "", $1)} $1=="teama" && $2=="" {print $3}')
  t0=$(date +%s.%N); sleep 20
  u1=$(sshare -n -P -A teama -o Account,User,RawUsage | awk -F'|' '{gsub(/^ +/, "", $1)} $1=="teama" && $2=="" {print $3}')
  t1=$(date +%s.%N)
  "$PY" -c "import math,sys; u0,u1,dt=float('$u0'),float('$u1'),$t1-$t0; print(round(dt*math.log(2)/math.log(u0/u1)) if u1<u0 else 'inf')"
}
# Give teama fresh usage to watch decay: 4 x 8 GPUs for 20 s (a100s count double: 800 GPU-s).
for n in gpu1 gpu2 gpu3 gpu4; do sub gfa1 teama normal 8 20 -w $n >/dev/null; done
wait_empty_queue 60 || fail "teama's jobs did not finish"
sleep 3
u=$(sshare -n -P -A teama -o Account,User,RawUsage | awk -F'|' '{gsub(/^ +/, "", $1)} $1=="teama" && $2=="" {print $3}')
say "teama's decayed usage (sshare RawUsage): $u GPU-s"
[[ -n $u ]] && (( ${u%.*} > 400 )) || fail "teama's RawUsage in sshare is '$u', expected > 400 GPU-s after its jobs"
hl=$(measure_half_life); say "half-life applied now: ~${hl} s (configured half_life=5m)"
[[ $hl != inf ]] && ((hl > 200 && hl < 450)) || fail "measured half-life ${hl}s, expected ~300 s"
applied='priority/gpufair: (reconfigured|init):'
n0=$(grep -cE "$applied" "$log" || true)
"$CLUSTER" reconfigure --priority-params "${E2E_GPUFAIR_PARAMS/half_life=5m/half_life=10m}" || fail "reconfigure failed"
sleep 3
n1=$(grep -cE "$applied" "$log" || true)
((n1 > n0)) || fail "no 'priority/gpufair: reconfigured' (22.05) or 'init' (23.11+) line after scontrol reconfigure"
[[ $(grep -E "$applied" "$log" | tail -1) == *half_life=10m* ]] || fail "the configuration logged after reconfigure does not show half_life=10m"
hl=$(measure_half_life); say "half-life applied after reconfigure: ~${hl} s (configured half_life=10m)"
[[ $hl != inf ]] && ((hl > 450 && hl < 900)) || fail "measured half-life ${hl}s after reconfigure, expected ~600 s"
ok "reconfigure with half_life=10m took effect"
# A bad value on reconfigure: error names the key, old settings stay.
rejected='priority/gpufair: (reconfigure rejected|invalid configuration)'
e0=$(grep -cE "$rejected" "$log" || true)
"$CLUSTER" reconfigure --priority-params "${E2E_GPUFAIR_PARAMS/half_life=5m/half_life=banana}" || true
sleep 3
e1=$(grep -cE "$rejected" "$log" || true)
((e1 > e0)) || fail "no 'reconfigure rejected' (22.05) or 'invalid configuration' (23.11+) error after a bad half_life"
line=$(grep -E "$rejected" "$log" | tail -1)
say "slurmctld: ${line:0:300}"
[[ ${line##*): } == *half_life* ]] || fail "the error does not name half_life: ${line##*): }"
[[ $(scontrol ping) == *UP* ]] || fail "slurmctld is not up after the bad reconfigure"
hl=$(measure_half_life); say "half-life applied after the rejected reconfigure: ~${hl} s (still 10m)"
[[ $hl != inf ]] && ((hl > 450 && hl < 900)) || fail "measured half-life ${hl}s, expected the old 600 s"
ok "bad value on reconfigure: clear error, old settings kept"
# A bad value at start: slurmctld refuses to start, naming the key.
"$CLUSTER" restart-ctld >"$E2E_OUT/t8-bad-start.txt" 2>&1 && fail "slurmctld started with half_life=banana"
line=$(grep 'error: priority/gpufair: invalid configuration' "$log" | tail -1)
say "slurmctld: ${line:0:300}"
grep -q 'refusing to start' <(tail -20 "$log") || fail "no 'refusing to start' in $log"
[[ ${line##*): } == *half_life* ]] || fail "slurmctld's refusal to start does not name half_life: ${line##*): }"
ok "bad value at start: slurmctld refuses to start and names half_life"
"$CLUSTER" reconfigure --write-only --priority-params "$E2E_GPUFAIR_PARAMS"
"$CLUSTER" restart-ctld || fail "slurmctld did not start again with the good settings"
ok "restored: slurmctld runs with the original settings"
