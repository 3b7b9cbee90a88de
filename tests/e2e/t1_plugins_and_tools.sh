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
# sprio's FAIRSHARE column must be the fair share of the job's association
# (its team's effective fair share, lowered inside the team's band by the
# user's place in the team) x PriorityWeightFairshare (10000); sshare's
# FairShare of each team (classic) must be gpufair's effective fair share,
# and under Fair Tree (the default flags) its LevelFS -1/log2 of it (S/U
# among the teams, the penalty included).
"$PY" - "$E2E_OUT/t1-sprio.txt" "$E2E_OUT/t1-sshare.txt" "$E2E_OUT/t1-gpufair-show.json" "$ja" "$jb" <<'PYEOF' || fail "sprio/sshare do not show gpufair's numbers (see $E2E_OUT/t1-*)"
import json, math, sys
sprio, sshare, show, ja, jb = sys.argv[1:6]
shown = json.load(open(show))
teams = {t["name"]: t for t in shown["teams"]}
assocs = {(a["account"], a["user"]): a for a in shown["assocs"]}
hdr, rows = None, {}
for line in open(sprio):
    f = line.split()
    if f and f[0] == "JOBID":
        hdr = f
    elif hdr and f and f[0].isdigit():
        rows[f[0]] = dict(zip(hdr, f))
bad = []
for jid, team, user in ((ja, "teama", "gfa1"), (jb, "teamb", "gfb1")):
    if jid not in rows:
        bad.append(f"job {jid} not in sprio -l"); continue
    got = float(rows[jid]["FAIRSHARE"]); want = 10000 * assocs[(team, user)]["fairshare"]
    print(f"sprio job {jid} ({team}, {user}): FAIRSHARE {got:.0f}, its association's fair share x 10000 = {want:.0f}"
          f" (team's effective fair share {teams[team]['effective_fairshare']:.4f})")
    if abs(got - want) > max(60, 0.03 * want):
        bad.append(f"sprio FAIRSHARE {got} != {want:.0f} for {user} of {team}")
fs = {}
lines = [l.rstrip("\n").split("|") for l in open(sshare) if "|" in l]
head = lines[0]
for f in lines[1:]:
    r = dict(zip(head, f))
    acct = r.get("Account", "").strip()
    # Account rows: Fair Tree's sshare leaves FairShare empty there and
    # prints the account's LevelFS.
    if acct in teams and not r.get("User"):
        if r.get("FairShare"):
            fs[acct] = ("FairShare", float(r["FairShare"]))
        elif r.get("LevelFS"):
            fs[acct] = ("LevelFS", float(r["LevelFS"]))
for name, t in teams.items():
    if name not in fs:
        bad.append(f"sshare -l has no FairShare or LevelFS for {name}"); continue
    col, got = fs[name]
    eff = t["effective_fairshare"]
    want = eff if col == "FairShare" else (math.inf if eff >= 1 else -1 / math.log2(eff) if eff > 0 else 0)
    print(f"sshare {name}: {col} {got:.4f}, from gpufair's effective fair share {eff:.4f}: {want:.4f}")
    if not (got == want or abs(got - want) <= 0.03 * max(1.0, abs(want))):
        bad.append(f"sshare {col} {got} != {want} for {name}")
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
