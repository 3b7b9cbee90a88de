#!/usr/bin/env bash
# Check 15: fair share inside a team. Two users of team A (gfa1 and gfa3, a
# user this test adds to account teama): gfa1 has used the whole cluster, gfa3
# nothing. With the cluster full:
#   gpufair, Fair Tree (Slurm's default flags): gfa3's pending job outranks
#     gfa1's (sprio FAIRSHARE: gfa3's is team A's own factor, gfa1's lower, as
#     gpufair-show says), while team B's job still outranks both (the order
#     between teams is unchanged); B's job starts first, then gfa3's while
#     gfa1's waits. `sshare -a -l` shows each user's own RawUsage (gfa3: 0)
#     and FairShare, and each association's LevelFS (gfa3: inf).
#   gpufair, PriorityFlags=NO_FAIR_TREE (scripts/cluster reconfigure): the
#     classic factor inside the team: gfa1's is 2^(-U/S) from its own usage
#     among team A's associations (U = its usage / team A's associations',
#     S = 1/3), in gpufair-show; sprio and sshare show the jobs' combined
#     factor, gfa3 still above gfa1.
#   multifactor (the e2e_mf fixture, side by side): the same two users, under
#     its classic fair share (the fixture's NO_FAIR_TREE) and then Fair Tree;
#     gfa3 outranks gfa1 in sprio and sshare there too. Only the order inside
#     team A is comparable: multifactor's Fair Tree is global (rank among all
#     users of the cluster), gpufair's ranks inside the team and keeps the
#     teams' own order.
# Usage: t15_fair_tree.sh gpufair|multifactor
source "$(dirname "$0")/lib.sh"
policy=${1:?usage: t15_fair_tree.sh gpufair|multifactor}
need_cluster "$policy"
log=$RUN/log/slurmctld.log
out=$E2E_OUT/t15-$policy.txt
: >"$out"
clear_queue

restore() {
  scancel --partition=gpu 2>/dev/null || true
  if [[ $policy == gpufair ]]; then
    "$CLUSTER" reconfigure --drop-conf PriorityFlags --priority-params "$E2E_GPUFAIR_PARAMS" >/dev/null 2>&1 || true
  else
    "$CLUSTER" reconfigure --drop-conf PriorityFlags >/dev/null 2>&1 || true
  fi
}
trap restore EXIT
# This checks the order of fair share, not reclaim: with reclaim on, team B's
# job may take one of team A's (over its entitlement) as soon as it is
# submitted, if team A still counts as having jumped the queue lately. It did
# in one run 10 minutes after t5's story, where A paid a 96 GPU-s price (it
# decays below 1 GPU-s in about 16 minutes): B's job was running, not pending,
# when sprio was asked.
if [[ $policy == gpufair ]]; then
  "$CLUSTER" reconfigure --priority-params "$E2E_GPUFAIR_PARAMS,reclaim=off" >/dev/null ||
    fail "reconfigure with reclaim=off failed"
  sleep 3
fi

# gfa3: a second user of account teama.
id gfa3 >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin gfa3 || fail "useradd gfa3 failed"
if [[ -z $(sacctmgr -n -P show assoc where user=gfa3 account=teama format=user 2>/dev/null) ]]; then
  sacctmgr -i -Q add user gfa3 account=teama cluster=gpufair qos=normal,low,high defaultqos=normal >/dev/null ||
    fail "sacctmgr add user gfa3 failed"
fi
for ((i = 0; i < 50; i++)); do
  sshare -n -P -a -A teama -o User 2>/dev/null | grep -qx gfa3 && break
  sleep 0.2
done
sshare -n -P -a -A teama -o User | grep -qx gfa3 || fail "slurmctld does not know user gfa3 of teama"

# snapshot NAME JOB... : sprio -l of each job, sshare -a -l -P, gpufair-show --json.
snapshot() {
  local name=$1 j; shift
  {
    for j in "$@"; do sprio -l -j "$j"; done
  } >"$E2E_OUT/t15-$policy-$name-sprio.txt" || fail "sprio -l failed"
  sshare -a -l -P >"$E2E_OUT/t15-$policy-$name-sshare.txt" || fail "sshare -a -l failed"
  if [[ $policy == gpufair ]]; then
    gshow_json >"$E2E_OUT/t15-$policy-$name-show.json" || fail "gpufair-show failed"
  else
    echo '{}' >"$E2E_OUT/t15-$policy-$name-show.json"
  fi
  cat "$E2E_OUT/t15-$policy-$name-sprio.txt" "$E2E_OUT/t15-$policy-$name-sshare.txt" >>"$out"
}

# check NAME ALGO LIGHT HEAVY [B]: the snapshot's checks (see the top).
check() {
  "$PY" - "$policy" "$2" "$E2E_OUT/t15-$policy-$1" "$3" "$4" "${5:-}" <<'PYEOF'
import json, math, sys
policy, algo, base, light, heavy, jb = sys.argv[1:7]
W = 10000  # PriorityWeightFairshare of scripts/cluster
fs = {}
hdr = None
for line in open(base + "-sprio.txt"):
    f = line.split()
    if f and f[0] == "JOBID":
        hdr = f
    elif hdr and f and f[0].isdigit():
        fs[f[0]] = float(dict(zip(hdr, f))["FAIRSHARE"])
rows = [l.rstrip("\n").split("|") for l in open(base + "-sshare.txt") if "|" in l]
head = rows[0]
share = {}
for r in rows[1:]:
    d = dict(zip(head, r))
    share[(d["Account"].strip(), d.get("User", "").strip())] = d
show = json.load(open(base + "-show.json"))
assoc = {(a["account"].split("/")[-1], a["user"]): a for a in show.get("assocs", [])}
teams = {t["name"]: t for t in show.get("teams", [])}
bad = []
def need(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        bad.append(what)
for j in (light, heavy) + ((jb,) if jb else ()):
    need(j in fs, f"sprio -l lists job {j}")
if bad:
    sys.exit(1)
print(f"{policy} {algo}: sprio FAIRSHARE light (gfa3) {fs[light]:.0f}, heavy (gfa1) {fs[heavy]:.0f}"
      + (f", team B (gfb1) {fs[jb]:.0f}" if jb else ""))
need(fs[light] > fs[heavy], "inside team A, gfa3's job (no usage) outranks gfa1's (sprio FAIRSHARE)")
u1, u3, ua = (share.get(k, {}) for k in (("teama", "gfa1"), ("teama", "gfa3"), ("teama", "")))
need(bool(u1) and bool(u3) and bool(ua), "sshare -a -l has rows for teama, teama/gfa1 and teama/gfa3")
if bad:
    sys.exit(1)
r1, r3, ra = (float(x["RawUsage"]) for x in (u1, u3, ua))
print(f"sshare RawUsage: teama {ra:.0f}, gfa1 {r1:.0f}, gfa3 {r3:.0f}; FairShare gfa1 {u1['FairShare']}, gfa3 {u3['FairShare']}"
      + (f"; LevelFS gfa1 {u1.get('LevelFS')}, gfa3 {u3.get('LevelFS')}" if "LevelFS" in head else ""))
need(r1 > 0, "gfa1's own RawUsage > 0")
need(r3 < r1 / 10, "gfa3's own RawUsage is (nearly) 0, not its team's")
need(ra >= r1, "teama's RawUsage is at least its user gfa1's")
need(float(u3["FairShare"]) > float(u1["FairShare"]), "sshare FairShare: gfa3 above gfa1")
if algo == "fair_tree" and r3 == 0:
    need(u3.get("LevelFS", "").strip() == "inf", "sshare LevelFS of gfa3 (no usage) is inf")
if policy == "gpufair":
    a1, a3 = assoc.get(("teama", "gfa1")), assoc.get(("teama", "gfa3"))
    need(bool(a1) and bool(a3), "gpufair-show lists teama's users gfa1 and gfa3")
    if bad:
        sys.exit(1)
    ta = teams["teama"]["effective_fairshare"]
    for j, a, who in ((light, a3, "gfa3"), (heavy, a1, "gfa1")):
        want = W * a["fairshare"]
        need(abs(fs[j] - want) <= max(60, 0.03 * want),
             f"sprio FAIRSHARE of {who}'s job {fs[j]:.0f} = its association's fair share x {W} ({want:.0f})")
        got = float(share[("teama", who)]["FairShare"])
        need(abs(got - a["fairshare"]) <= 0.03, f"sshare FairShare of {who} {got:.4f} = gpufair's {a['fairshare']:.4f}")
    need(fs[heavy] < W * ta - 60, f"gfa1's job is below team A's factor x {W} ({W * ta:.0f})")
    if algo == "fair_tree" and r3 == 0:
        need(abs(fs[light] - W * ta) <= max(60, 0.03 * W * ta),
             f"gfa3, team A's best ranked user, gets team A's own factor ({W * ta:.0f})")
    else:
        # Classic inside the team: U = usage / the team's associations',
        # S = 1 / 3 (gfa1, gfa3 and sub-account teama_nlp, shares 1 each).
        kids = [a for a in show["assocs"]
                if (a["account"] == "teama" and a["user"]) or (a["account"] == "teama/teama_nlp" and not a["user"])]
        total = sum(a["gpu_hours"] for a in kids)
        want = 2 ** (-(a1["gpu_hours"] / total) / (1 / 3))
        print(f"team A's children {[(a['account'], a['user'], round(a['gpu_hours'], 4)) for a in kids]}")
        need(abs(a1["in_team"] - want) <= 1e-3 + 1e-3 * want,
             f"gfa1's factor inside team A {a1['in_team']:.4f} = classic 2^(-U/S) = {want:.4f}")
    if jb:
        tb = teams["teamb"]["effective_fairshare"]
        print(f"team factors: A {ta:.4f}, B {tb:.4f}")
        need(tb > ta, "team B used less than team A")
        need(fs[jb] > fs[light] > fs[heavy], "team B's job outranks both of team A's (the order between teams)")
sys.exit(1 if bad else 0)
PYEOF
}

# run_phase NAME ALGO WITH_B: cluster full of gfa1's jobs, gfa1's then gfa3's
# (then gfb1's) 8-GPU jobs pending; snapshot and check; then, with B, the
# start order as nodes free.
run_phase() {
  local name=$1 algo=$2 with_b=$3 fill=() n jh jl jb="" t1=100 t2=100
  ((with_b)) && t1=15 t2=25  # gpu1 frees first, then gpu2; the rest later
  fill+=("$(sub gfa1 teama normal 8 $t1 -w gpu1)")
  fill+=("$(sub gfa1 teama normal 8 $t2 -w gpu2)")
  for n in gpu3 gpu4; do fill+=("$(sub gfa1 teama normal 8 100 -w $n)"); done
  for j in "${fill[@]}"; do wait_state "$j" RUNNING 20 || fail "fill job $j of gfa1 did not start"; done
  jh=$(sub gfa1 teama normal 8 5)
  sleep 1
  jl=$(sub gfa3 teama normal 8 5)
  if ((with_b)); then sleep 1; jb=$(sub gfb1 teamb normal 8 5); fi
  if [[ $policy == multifactor ]]; then
    sleep 62  # multifactor re-prioritises every PriorityCalcPeriod (1 minute)
  else
    sleep 5   # two gpufair cycles
  fi
  snapshot "$name" "$jh" "$jl" $jb
  check "$name" "$algo" "$jl" "$jh" "$jb" | tee -a "$out" || fail "$name: see $out"
  if ((with_b)); then
    wait_state "$jb" RUNNING 30 || fail "team B's job $jb did not start when gpu1 freed"
    [[ $(state_of "$jh") == PENDING && $(state_of "$jl") == PENDING ]] ||
      fail "when B's job started, team A's jobs were not both pending ($(state_of "$jl"), $(state_of "$jh"))"
    wait_state "$jl" RUNNING 30 || fail "gfa3's job $jl did not start when gpu2 freed"
    [[ $(state_of "$jh") == PENDING ]] || fail "gfa1's job $jh is $(state_of "$jh") when gfa3's started; expected PENDING"
    ok "start order: team B's job, then gfa3's, while gfa1's (submitted first) waits"
  fi
  clear_queue
}

# gfa1 uses the whole cluster for 30 s (a100s count double under gpufair).
heavy=()
for n in gpu1 gpu2 gpu3 gpu4; do heavy+=("$(sub gfa1 teama normal 8 30 -w $n)"); done
for j in "${heavy[@]}"; do wait_state "$j" RUNNING 20 || fail "gfa1's job $j did not start"; done
wait_empty_queue 60 || fail "gfa1's jobs did not finish"

if [[ $policy == gpufair ]]; then
  run_phase gpufair-fair-tree fair_tree 1
  ok "gpufair, Fair Tree inside team A: gfa3 above gfa1, team B above both, sshare per user"
  "$CLUSTER" reconfigure --extra-conf PriorityFlags=NO_FAIR_TREE >/dev/null || fail "reconfigure with NO_FAIR_TREE failed"
  sleep 3
  grep -E 'priority/gpufair: (reconfigured|init)' "$log" | tail -1 | cut -c1-200
  run_phase gpufair-classic classic 0
  ok "gpufair, NO_FAIR_TREE: classic fair share inside team A"
else
  # The fixture's multifactor runs classic fair share (NO_FAIR_TREE).
  sleep 62  # its decay thread charges the usage once a minute
  run_phase multifactor-classic classic 0
  "$CLUSTER" reconfigure --extra-conf PriorityFlags=FAIR_TREE >/dev/null || fail "reconfigure with Fair Tree failed"
  sleep 3
  run_phase multifactor-fair-tree fair_tree 0
  ok "multifactor: gfa3 above gfa1 inside team A, under classic and under Fair Tree"
fi
