#!/usr/bin/env bash
# Check 1: both plugins load into slurmctld; sbatch, squeue, scontrol show job,
# sprio -l and sshare -l work and show gpufair's numbers.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
log=$RUN/log/slurmctld.log
grep -q 'priority/gpufair: init' "$log" || fail "no 'priority/gpufair: init' line in $log"
grep -q 'preempt/gpufair loaded' "$log" || fail "no 'preempt/gpufair loaded' line in $log"
scontrol show config | grep -E '^PreemptType *= *preempt/gpufair' >/dev/null || fail "PreemptType is not preempt/gpufair"
ok "priority/gpufair and preempt/gpufair loaded: $(grep -m1 'priority/gpufair: init' "$log" | cut -c1-110)..."
clear_queue
# Make the cluster busy (teamc uses GPUs), then queue jobs of teama and teamb.
fill=()
for n in 1 2 3 4; do fill+=("$(sub gfc1 teamc normal 8 20)"); done
for j in "${fill[@]}"; do wait_state "$j" RUNNING 20 || fail "job $j of teamc did not start"; done
ja=$(sub gfa1 teama normal 4 5)
jb=$(sub gfb1 teamb normal 4 5)
sleep 5  # two gpufair cycles (calc_period=2s)
[[ $(squeue -h -j "$ja,$jb" -o '%i %T') == *PENDING* ]] || fail "squeue does not list the pending jobs"
[[ $(scontrol show job "$ja") == *Account=teama* ]] || fail "scontrol show job $ja: no Account=teama"
ok "sbatch, squeue and scontrol show job work"
sprio -l >"$E2E_OUT/t1-sprio.txt" || fail "sprio -l failed"
sshare -l -P >"$E2E_OUT/t1-sshare.txt" || fail "sshare -l failed"
gshow_json >"$E2E_OUT/t1-gpufair-show.json" || fail "gpufair-show --json failed"
cat "$E2E_OUT/t1-sprio.txt" "$E2E_OUT/t1-sshare.txt"
# sprio's FAIRSHARE column must be gpufair's effective fair share x PriorityWeightFairshare
# (10000); sshare's FairShare of each team must be gpufair's effective fair share.
"$PY" - "$E2E_OUT/t1-sprio.txt" "$E2E_OUT/t1-sshare.txt" "$E2E_OUT/t1-gpufair-show.json" "$ja" "$jb" <<'PYEOF' || fail "sprio/sshare do not show gpufair's numbers (see $E2E_OUT/t1-*)"
import json, sys
sprio, sshare, show, ja, jb = sys.argv[1:6]
teams = {t["name"]: t for t in json.load(open(show))["teams"]}
hdr, rows = None, {}
for line in open(sprio):
    f = line.split()
    if f and f[0] == "JOBID":
        hdr = f
    elif hdr and f and f[0].isdigit():
        rows[f[0]] = dict(zip(hdr, f))
bad = []
for jid, team in ((ja, "teama"), (jb, "teamb")):
    if jid not in rows:
        bad.append(f"job {jid} not in sprio -l"); continue
    got = float(rows[jid]["FAIRSHARE"]); want = 10000 * teams[team]["effective_fairshare"]
    print(f"sprio job {jid} ({team}): FAIRSHARE {got:.0f}, gpufair effective fair share x 10000 = {want:.0f}")
    if abs(got - want) > max(60, 0.03 * want):
        bad.append(f"sprio FAIRSHARE {got} != {want:.0f} for {team}")
fs = {}
lines = [l.rstrip("\n").split("|") for l in open(sshare) if "|" in l]
head = lines[0]
for f in lines[1:]:
    r = dict(zip(head, f))
    acct = r.get("Account", "").strip()
    # Account rows: classic sshare leaves FairShare empty there and prints
    # the account's factor as LevelFS.
    v = r.get("FairShare") or r.get("LevelFS")
    if acct in teams and not r.get("User") and v:
        fs[acct] = float(v)
for name, t in teams.items():
    if name not in fs:
        bad.append(f"sshare -l has no FairShare for {name}"); continue
    print(f"sshare {name}: FairShare/LevelFS {fs[name]:.4f}, gpufair effective {t['effective_fairshare']:.4f}")
    if abs(fs[name] - t["effective_fairshare"]) > 0.03:
        bad.append(f"sshare FairShare {fs[name]} != gpufair {t['effective_fairshare']} for {name}")
if bad:
    print("\n".join(bad)); sys.exit(1)
PYEOF
ok "sprio -l and sshare -l show gpufair's fair-share numbers"
clear_queue
# sprio with PrivateData=jobs, as multifactor: another user's job is hidden,
# except from a coordinator of the job's account.
"$CLUSTER" reconfigure --extra-conf PrivateData=jobs >/dev/null || fail "reconfigure with PrivateData=jobs failed"
sacctmgr -i add coordinator account=teamb names=gfc1 >/dev/null || fail "sacctmgr add coordinator failed"
sleep 3
fill=()
for n in 1 2 3 4; do fill+=("$(sub gfc1 teamc normal 8 30)"); done
for j in "${fill[@]}"; do wait_state "$j" RUNNING 20 || fail "job $j of teamc did not start"; done
jb=$(sub gfb1 teamb normal 4 5)
sleep 5
seen() { runuser -u "$1" -- sprio -h -o %i 2>/dev/null | tr -d ' ' | grep -qx "$2"; }
seen gfb1 "$jb" || fail "sprio as the job's owner gfb1 does not list job $jb"
seen gfc1 "$jb" || fail "sprio as gfc1, a coordinator of teamb, does not list teamb's job $jb"
seen gfa1 "$jb" && fail "sprio as gfa1 lists teamb's job $jb although PrivateData=jobs"
ok "PrivateData=jobs: sprio shows job $jb to its owner and to teamb's coordinator, not to gfa1"
sacctmgr -i remove coordinator account=teamb names=gfc1 >/dev/null || true
"$CLUSTER" reconfigure --drop-conf PrivateData >/dev/null || fail "reconfigure without PrivateData failed"
clear_queue
