#!/usr/bin/env bash
# tests/e2e/faults.sh — slurmctld crashes under load with priority/gpufair
# (issue 6, "Faults", real cluster).
#
#   tests/e2e/faults.sh [--kills 20] [--min-gap 4] [--max-gap 15] [--build]
#
# On its own cluster (run dir $GPUFAIR_RUN_DIR, default /var/tmp/gpufair-faults,
# ports shifted by $GPUFAIR_PORT_OFFSET, default 500), with a steady load of
# jobs from 4 teams (1-8 GPUs, a few seconds each, QOS low/low/high so
# in-team preemptions and bait penalties keep happening):
#   1. --kills times: wait a random time, snapshot the queue, wait 8 s (Slurm
#      saves its own job state at most every 5 s), copy the state file (B),
#      `kill -9` slurmctld, check the state file left behind loads (K), restart
#      slurmctld, wait for two of our cycles and read the state file again (A).
#      Checks: K and A load (never corrupt); per team, A (and K) is not older
#      than B: undecayed GPU-hours run (less jump prices, which a jumper that
#      stops early has partly refunded), bait detections, in-team preemptions
#      and priced jumps are >= B's, the penalty (read at the same instant)
#      >= B's; every job of the snapshot is still known (squeue -t all or
#      sacct): no job lost.
#   2. the state file deleted, slurmctld restarted: it comes up, jobs kept,
#      a fresh valid state file is written within two cycles;
#   3. the state file replaced by garbage, slurmctld restarted: it comes up,
#      logs CORRUPT, keeps the garbage aside as gpufair.state.corrupt-<time>,
#      writes a valid state file again.
# Prints one line per kill and ends with
#   faults: kills=N ok=M corrupt=0 regressions=0 lost_jobs=0 deleted=ok garbage=ok
# Exit status 0 only if everything held.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
KILLS=20 MIN_GAP=4 MAX_GAP=15 BUILD=0
while (($#)); do
  case $1 in
    --kills) KILLS=${2:?}; shift 2 ;;
    --min-gap) MIN_GAP=${2:?}; shift 2 ;;
    --max-gap) MAX_GAP=${2:?}; shift 2 ;;
    --build) BUILD=1; shift ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "faults.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

export GPUFAIR_RUN_DIR=${GPUFAIR_RUN_DIR:-/var/tmp/gpufair-faults}
export GPUFAIR_PORT_OFFSET=${GPUFAIR_PORT_OFFSET:-500}
RUN=$GPUFAIR_RUN_DIR
OUT=${GPUFAIR_FAULTS_OUT:-$RUN-output}
CLUSTER=$ROOT/scripts/cluster
STATE=$RUN/var/state/gpufair.state
PARAMS="bait_profile=fast,bait_block=penalized,half_life=5m,calc_period=2s,max_age=60s,bait_young=12s,bait_window=144s,bait_skip_norm=6s,penalty_half_life=144s"
PY=/usr/bin/python3
rm -rf "$OUT"; mkdir -p "$OUT"

say() { printf '[faults %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { printf '[faults] FAIL: %s\n[faults] logs: %s/log, outputs: %s\n' "$*" "$RUN" "$OUT" >&2; exit 1; }

. "$ROOT/scripts/lib/apt.sh"
gpufair_apt_install gcc libc6-dev libslurm-dev python3 >/dev/null || fail "apt-get install failed"

# gpufair-show reads a state file the way the plugin does (checksum and all);
# it must be built from the same tree as the installed plugin (state format).
if [[ -z ${GPUFAIR_BUILD_DIR:-} && -f $ROOT/build/CMakeCache.txt ]]; then
  cmake --build "$ROOT/build" --target gpufair-show >/dev/null || fail "cannot build gpufair-show in $ROOT/build"
fi
GSHOW=""
for c in "${GPUFAIR_BUILD_DIR:-}/tools/gpufair-show" "$ROOT/build/tools/gpufair-show" "$(command -v gpufair-show || true)"; do
  [[ -n $c && -x $c ]] && { GSHOW=$c; break; }
done
[[ -n $GSHOW ]] || fail "gpufair-show not found (build the tree first: scripts/build)"
BULK=$OUT/bulk-submit
gcc -O2 -Wall -Wextra -Werror -o "$BULK" "$ROOT/scripts/compare-cost.d/bulk-submit.c" -lslurm -lpthread \
  || fail "cannot build bulk-submit"

LOAD_PID=""
cleanup() {
  [[ -n $LOAD_PID ]] && kill "$LOAD_PID" 2>/dev/null || true
  if [[ -f $RUN/etc/slurm.conf ]]; then
    SLURM_CONF=$RUN/etc/slurm.conf scancel -t R,PD 2>/dev/null || true
    sleep 2
  fi
  "$CLUSTER" down >/dev/null 2>&1 || true
}
trap cleanup EXIT

pd=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm
if ((BUILD == 0)) && [[ -f $pd/priority_gpufair.so && -f $pd/preempt_gpufair.so ]]; then
  export GPUFAIR_SKIP_BUILD=1
fi
say "cluster up (gpufair, $PARAMS) in $RUN"
"$CLUSTER" up --policy gpufair --priority-params "$PARAMS" --extra-conf MinJobAge=3600 \
  >"$OUT/cluster-up.log" 2>&1 || { tail -20 "$OUT/cluster-up.log" >&2; fail "cluster up failed"; }
eval "$("$CLUSTER" env)"
S=(sacctmgr -i -Q)
"${S[@]}" add account fault01,fault02,fault03,fault04 cluster=gpufair fairshare=10 \
  description=faults organization=gpufair >/dev/null
"${S[@]}" add user root account=fault01,fault02,fault03,fault04 cluster=gpufair \
  qos=normal,low,high defaultqos=normal >/dev/null
for ((i = 0; i < 120; i++)); do
  [[ $(scontrol show assoc_mgr users=root flags=assoc 2>/dev/null | grep -c 'Account=fault0') -ge 4 ]] && break
  sleep 0.5
done

ctld_pid() { cat "$RUN/run/slurmctld.pid"; }
show() { "$GSHOW" --json --conf "$SLURM_CONF" --now "$2" "$1"; }  # show FILE NOW
wait_state_file() {  # a state file newer than $1 (epoch), within $2 s
  local i
  for ((i = 0; i < $2 * 4; i++)); do
    [[ -f $STATE && $(stat -c %Y "$STATE") -gt $1 ]] && return 0
    sleep 0.25
  done
  return 1
}

# The load: ~2 jobs/s of 1-8 GPUs for 3 s each keeps 32 GPUs busy with a queue
# (GPU sizes cycle over 5 values, teams over 4: every team gets every size).
# A high job meets a running low job of its own team submitted 4 jobs earlier.
start_load() {
  "$BULK" churn --seconds 100000 --rate 2 --teams 4 --team-prefix fault --sleep 3 --time 5 \
    --qos-cycle low,low,high --nice-cycle 0,0,-10000 --gpus-cycle 4,8,2,4,1 \
    >>"$OUT/load.out" 2>>"$OUT/load.err" &
  LOAD_PID=$!
}
start_load
say "load running; warming up 30 s"
sleep 30
wait_state_file 0 20 || fail "no state file $STATE after 30 s of load"

ok=0 corrupt=0 regress=0 lost=0
compare() {  # compare NAME OLDER.json NEWER.json -> prints problems, status 1 if any
  "$PY" - "$1" "$2" "$3" <<'PYEOF'
import json, sys
name, b, a = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
A = {t["name"]: t for t in a["teams"]}
bad = []
for t in b["teams"]:
    n = t["name"]
    if n not in A:
        bad.append(f"{name}: team {n} missing"); continue
    x = A[n]
    # Decayed GPU-hours are reported as of each file's last cycle (not
    # decayed to --now), so files from different cycles cannot be compared
    # on them; the undecayed total can, less the jump prices in it: a price
    # is charged in full at the jump and partly refunded when its jumper
    # stops (design.md, "Jump price"), which may be after the restart. What
    # the jobs ran only grows (gpufair-show prints 6 digits: the difference
    # of two rounded figures may step back by a unit of the larger's last
    # digit). Penalties are decayed to --now.
    ran = lambda r: r["raw_gpu_hours"] - r["jump_price_gpu_hours"]
    if ran(x) < ran(t) - 2e-5 * max(1.0, t["raw_gpu_hours"]):
        bad.append(f"{name}: {n} GPU-hours run (undecayed, less jump prices) went back "
                   f"{ran(t)} -> {ran(x)} (raw {t['raw_gpu_hours']} -> {x['raw_gpu_hours']}, "
                   f"prices {t['jump_price_gpu_hours']} -> {x['jump_price_gpu_hours']})")
    elif x["raw_gpu_hours"] < t["raw_gpu_hours"]:
        print(f"{name}: {n} raw GPU-hours {t['raw_gpu_hours']} -> {x['raw_gpu_hours']}: "
              f"jump prices refunded ({t['jump_price_gpu_hours']} -> {x['jump_price_gpu_hours']})",
              file=sys.stderr)
    if x["penalty"] < t["penalty"] - 1e-6 * max(1.0, abs(t["penalty"])):
        bad.append(f"{name}: {n} penalty went back {t['penalty']} -> {x['penalty']}")
    for k in ("bait_detections", "in_team_preemptions", "priced_jumps"):
        if x[k] < t[k]:
            bad.append(f"{name}: {n} {k} went back {t[k]} -> {x[k]}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PYEOF
}

for ((k = 1; k <= KILLS; k++)); do
  gap=$((MIN_GAP + RANDOM % (MAX_GAP - MIN_GAP + 1)))
  sleep "$gap"
  squeue -h -t all -o %i | sort -u >"$OUT/k$k.jobs-before"
  sleep 8
  pid=$(ctld_pid)
  cp "$STATE" "$OUT/k$k.B.state"
  kill -KILL "$pid"
  for ((i = 0; i < 100; i++)); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
  [[ -d /proc/$pid ]] && fail "slurmctld $pid survived kill -9"
  t_kill=$(date +%s)
  cp "$STATE" "$OUT/k$k.K.state"
  # Read every copy at the same instant, after all of them were written and
  # soon enough that penalties (half-life 144 s) have not decayed to nothing.
  now=$((t_kill + 120))
  if ! show "$OUT/k$k.B.state" $now >"$OUT/k$k.B.json" 2>"$OUT/k$k.B.err"; then
    corrupt=$((corrupt + 1)); say "kill $k: the state file before the kill does not load: $(cat "$OUT/k$k.B.err")"
  fi
  if ! show "$OUT/k$k.K.state" $now >"$OUT/k$k.K.json" 2>"$OUT/k$k.K.err"; then
    corrupt=$((corrupt + 1)); say "kill $k: the state file left by kill -9 does not load: $(cat "$OUT/k$k.K.err")"
  fi
  "$CLUSTER" restart-ctld >>"$OUT/restart.log" 2>&1 || fail "slurmctld did not restart after kill $k (see $OUT/restart.log)"
  t_up=$(date +%s)
  # Two of our cycles (2 s each) after the restart.
  wait_state_file $((t_up + 2)) 30 || fail "no state saved within 30 s after restart $k"
  cp "$STATE" "$OUT/k$k.A.state"
  if ! show "$OUT/k$k.A.state" $now >"$OUT/k$k.A.json" 2>"$OUT/k$k.A.err"; then
    corrupt=$((corrupt + 1)); say "kill $k: the state file after the restart does not load: $(cat "$OUT/k$k.A.err")"
  fi
  problems=""
  if [[ -s $OUT/k$k.B.json && -s $OUT/k$k.K.json ]]; then
    problems+=$(compare "kill $k: file after kill vs before" "$OUT/k$k.B.json" "$OUT/k$k.K.json" || true)
  fi
  if [[ -s $OUT/k$k.B.json && -s $OUT/k$k.A.json ]]; then
    problems+=$(compare "kill $k: after restart vs before kill" "$OUT/k$k.B.json" "$OUT/k$k.A.json" || true)
  fi
  [[ -n $problems ]] && { regress=$((regress + 1)); echo "$problems" | tee -a "$OUT/regressions.txt"; }
  # No job lost: every job listed 8 s before the kill is still known.
  { squeue -h -t all -o %i; sacct -n -X -P -o JobIDRaw -S now-2hours 2>/dev/null; } | sort -u >"$OUT/k$k.jobs-after"
  missing=$(comm -23 "$OUT/k$k.jobs-before" "$OUT/k$k.jobs-after" | wc -l)
  if ((missing > 0)); then
    lost=$((lost + missing))
    say "kill $k: $missing job(s) lost: $(comm -23 "$OUT/k$k.jobs-before" "$OUT/k$k.jobs-after" | head -5 | tr '\n' ' ')"
  fi
  teams=$("$PY" - "$OUT/k$k.A.json" <<'PYEOF' 2>/dev/null || echo "?"
import json, sys
d = json.load(open(sys.argv[1]))
out = []
for t in d["teams"]:
    if t["name"].startswith("fault"):
        out.append("%s:%.3fh/p%.2f/b%d" % (t["name"], t["raw_gpu_hours"], t["penalty"], t["bait_detections"]))
print(" ".join(out))
PYEOF
)
  if [[ -z $problems ]] && ((missing == 0)) && [[ -s $OUT/k$k.A.json ]]; then ok=$((ok + 1)); fi
  say "kill $k/$KILLS after ${gap}+8 s: restart $((t_up - t_kill)) s, jobs before $(wc -l <"$OUT/k$k.jobs-before"), missing $missing; $teams"
  # The load generator gives up on a long outage; keep it going.
  if ! kill -0 "$LOAD_PID" 2>/dev/null; then start_load; fi
done

# State file deleted. (grep reads the whole log here, not grep -q: with
# pipefail, tail killed by SIGPIPE after an early match fails the check.)
say "restart with the state file deleted"
pid=$(ctld_pid); kill -KILL "$pid"; sleep 1
rm -f "$STATE"
mark=$(wc -l <"$RUN/log/slurmctld.log")
"$CLUSTER" restart-ctld >>"$OUT/restart.log" 2>&1 || fail "slurmctld did not start without a state file"
t_up=$(date +%s)
deleted=FAILED
if wait_state_file $((t_up - 1)) 30 && "$GSHOW" --json --conf "$SLURM_CONF" "$STATE" >"$OUT/deleted.json" 2>&1 &&
   tail -n +"$((mark + 1))" "$RUN/log/slurmctld.log" | grep "no state file" >/dev/null; then
  deleted=ok
fi
say "state file deleted: $deleted"

# State file replaced by garbage.
say "restart with the state file replaced by garbage"
pid=$(ctld_pid); kill -KILL "$pid"; sleep 1
head -c 4096 /dev/urandom >"$STATE"
cp "$STATE" "$OUT/garbage.state"
mark=$(wc -l <"$RUN/log/slurmctld.log")
"$CLUSTER" restart-ctld >>"$OUT/restart.log" 2>&1 || fail "slurmctld did not start with a garbage state file"
t_up=$(date +%s)
garbage=FAILED
aside=$(ls "$STATE".corrupt-* 2>/dev/null | head -1 || true)
if wait_state_file $((t_up - 1)) 30 && "$GSHOW" --json --conf "$SLURM_CONF" "$STATE" >"$OUT/garbage-after.json" 2>&1 &&
   tail -n +"$((mark + 1))" "$RUN/log/slurmctld.log" | grep "CORRUPT state file" >/dev/null && [[ -n $aside ]] && cmp -s "$aside" "$OUT/garbage.state"; then
  garbage=ok
fi
say "garbage state file: $garbage (kept aside as ${aside:-nothing})"
scontrol ping | grep -q UP || fail "slurmctld not answering at the end"
cp "$RUN/log/slurmctld.log" "$OUT/slurmctld.log"
say "load over the whole run: $(grep -c 'WEXITSTATUS' "$OUT/slurmctld.log" || true) job completions, $(grep -c 'has been requeued to reclaim resources' "$OUT/slurmctld.log" || true) preemptions (slurmctld.log)"

echo "faults: kills=$KILLS ok=$ok corrupt=$corrupt regressions=$regress lost_jobs=$lost deleted=$deleted garbage=$garbage"
((ok == KILLS && corrupt == 0 && regress == 0 && lost == 0)) && [[ $deleted == ok && $garbage == ok ]]
