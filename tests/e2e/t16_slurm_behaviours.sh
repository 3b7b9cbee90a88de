#!/usr/bin/env bash
# Check 16: Slurm's own behaviours hold under gpufair as under multifactor.
#  1. sprio and its options: plain, -l, -n, -w, --format, -u, -j each exit 0
#     and list what they should (-u only that user's jobs, -j only that job,
#     -l multifactor's columns, -w the weights, -n factors in [0,1]); the
#     format specifiers are ones both 22.05 and 24.11 accept; -j takes one id
#     per call (24.11's sprio mis-parses comma lists).
#  2. Two identical pending jobs (same user, account, QOS, GPUs, time limit,
#     submitted back to back) have equal factors (SITE, FAIRSHARE, JOBSIZE,
#     PARTITION, QOS, NICE) and totals apart by at most their AGE difference
#     (+1 for sprio's rounding), in sprio and in squeue's %Q; a job submitted
#     held has priority 0 and is not in sprio (multifactor's filter), and
#     gets a nonzero priority once released.
#  3. sshare and its options (plain, -a, -l, -a -l, -A, -u, -p, -P, -n, -o,
#     -U, -m; all in both releases) exit 0 and print the expected rows.
#  4. QOS preemption within a team (high Preempt=low): under the cluster's
#     PreemptMode=REQUEUE, teama's high job requeues teama's low job, plain
#     and heterogeneous (two components on two nodes); with QOS low's
#     PreemptMode=cancel, the plain and the heterogeneous low job are killed:
#     Slurm marks them PREEMPTED (job_signal with preempt set; CANCELLED is
#     for scancel), in scontrol and sacct, and they do not come back. QOS
#     low's PreemptMode is restored at the end, on failure too.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
log=$RUN/log/slurmctld.log
out=$E2E_OUT/t16
mkdir -p "$out"
clear_queue

low_mode0=$(sacctmgr -n -P show qos low format=PreemptMode) || fail "sacctmgr show qos low failed"
[[ -n $low_mode0 ]] || fail "sacctmgr shows no PreemptMode for QOS low"
# ctld_low_mode: QOS low's PreemptMode as slurmctld has it (assoc_mgr).
ctld_low_mode() {
  local s
  s=$(scontrol -o show assoc_mgr flags=qos qos=low 2>/dev/null) || true
  [[ $s =~ PreemptMode=([A-Z,]+) ]] && echo "${BASH_REMATCH[1]}"
  return 0
}
wait_low_mode() {  # wait_low_mode MODE: until slurmctld has it (10 s)
  local i
  for ((i = 0; i < 50; i++)); do
    [[ $(ctld_low_mode) == "$1" ]] && return 0
    sleep 0.2
  done
  return 1
}
low_ctld0=$(ctld_low_mode)
[[ -n $low_ctld0 ]] || fail "scontrol show assoc_mgr flags=qos qos=low prints no PreemptMode"
restore() {
  scancel --partition=gpu 2>/dev/null || true
  if [[ $(ctld_low_mode) != "$low_ctld0" ]]; then
    sacctmgr -i modify qos low set PreemptMode="$low_mode0" >/dev/null 2>&1 || true
    wait_low_mode "$low_ctld0" || echo "[e2e] WARNING: QOS low's PreemptMode not back to $low_ctld0 in slurmctld" >&2
  fi
}
trap restore EXIT

# --- 1 and 2: sprio, equal priorities, a held job --------------------------
fill=()
for _ in 1 2 3 4; do fill+=("$(sub gfc1 teamc normal 8 40)"); done
for j in "${fill[@]}"; do wait_state "$j" RUNNING 20 || fail "teamc's job $j did not start (filling the cluster)"; done
a1=$(sub gfa1 teama normal 4 5)
a2=$(sub gfa1 teama normal 4 5)
b1=$(sub gfb1 teamb normal 4 5)
ah=$(sub gfa1 teama normal 4 5 -H)
sleep 5  # two gpufair cycles (calc_period=2s)
for j in "$a1" "$a2" "$b1" "$ah"; do
  [[ $(state_of "$j") == PENDING ]] || fail "job $j is $(state_of "$j"), expected PENDING (the cluster was to be full)"
done

# runs NAME CMD...: the command must exit 0; its output in $out/NAME.txt
runs() {
  local name=$1; shift
  "$@" >"$out/$name.txt" 2>"$out/$name.err" || fail "'$*' exited $? ($(head -c 300 "$out/$name.err"))"
  [[ ! -s $out/$name.err ]] || fail "'$*' wrote to stderr: $(head -c 300 "$out/$name.err")"
}
fmt='%.15i %.8u %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.6N'
runs sprio sprio
runs sprio-l sprio -l
runs sprio-n sprio -n
runs sprio-w sprio -w
runs sprio-format sprio --format "$fmt"
runs sprio-o sprio -o '%.8i %.10Y %.10F %.10A'
runs sprio-u sprio -u gfa1
for j in "$a1" "$a2" "$b1" "$ah"; do runs "sprio-j$j" sprio -j "$j"; done
squeue -h -j "$a1,$a2,$b1,$ah" -o '%i %Q' >"$out/squeue-Q.txt" || fail "squeue -o '%i %Q' failed"
say "sprio -l:"; cat "$out/sprio-l.txt"
"$PY" - "$out" "$a1" "$a2" "$b1" "$ah" <<'PYEOF' || fail "sprio's output is not what multifactor's would be (see $out/sprio*.txt)"
import os, sys
out, a1, a2, b1, ah = sys.argv[1:6]
bad = []

def table(name):
    """(header, {jobid: row dict}) of a sprio output; rows keyed by header
    position (a trailing empty column, e.g. TRES, is just missing)."""
    hdr, rows, other = None, {}, []
    for line in open(os.path.join(out, name + ".txt")):
        f = line.split()
        if not f:
            continue
        if f[0] == "JOBID":
            hdr = f
        elif f[0].isdigit() and hdr:
            rows[f[0]] = dict(zip(hdr, f))
        else:
            other.append(f)
    return hdr, rows, other

def num(x):
    try:
        return float(x)
    except ValueError:
        return None

# plain sprio: the factors with a nonzero weight (age, fair share here)
hdr, rows, _ = table("sprio")
want = ["JOBID", "PARTITION", "PRIORITY", "SITE", "AGE", "FAIRSHARE"]
if hdr != want:
    bad.append(f"sprio header {hdr}, expected {want} (weights: age and fair share)")
if set(rows) != {a1, a2, b1}:
    bad.append(f"sprio lists jobs {sorted(rows)}, expected {sorted([a1, a2, b1])} (the held job {ah} not)")

# -l: multifactor's long columns (24.11 adds ACCOUNT and QOSNAME)
hdr, rows, _ = table("sprio-l")
need = ["JOBID", "PARTITION", "USER", "PRIORITY", "SITE", "AGE", "ASSOC", "FAIRSHARE",
        "JOBSIZE", "QOS", "NICE", "TRES"]
if not hdr or [h for h in need if h not in hdr] or hdr.count("PARTITION") != 2:
    bad.append(f"sprio -l header {hdr}: expected the columns {need}, PARTITION twice")
elif set(rows) != {a1, a2, b1}:
    bad.append(f"sprio -l lists jobs {sorted(rows)}, expected {sorted([a1, a2, b1])}")
else:
    for j, u in ((a1, "gfa1"), (a2, "gfa1"), (b1, "gfb1")):
        r = rows[j]
        if r.get("USER") != u:
            bad.append(f"sprio -l: job {j}'s USER {r.get('USER')}, expected {u}")
        for c in ("PRIORITY", "SITE", "AGE", "ASSOC", "FAIRSHARE", "JOBSIZE", "QOS", "NICE"):
            if num(r.get(c, "")) is None:
                bad.append(f"sprio -l: job {j}'s {c} is {r.get(c)!r}, not a number")
        if (num(r.get("FAIRSHARE", "")) or 0) <= 0 or (num(r.get("PRIORITY", "")) or 0) <= 0:
            bad.append(f"sprio -l: job {j} has FAIRSHARE {r.get('FAIRSHARE')} PRIORITY {r.get('PRIORITY')}, expected > 0")

# -n: normalized factors, each in [0, 1]
hdr, rows, _ = table("sprio-n")
if set(rows) != {a1, a2, b1}:
    bad.append(f"sprio -n lists jobs {sorted(rows)}, expected {sorted([a1, a2, b1])}")
for j, r in rows.items():
    for c in ("PRIORITY", "AGE", "FAIRSHARE"):
        v = num(r.get(c, ""))
        if v is None or not 0 <= v <= 1 or "." not in r.get(c, ""):
            bad.append(f"sprio -n: job {j}'s {c} is {r.get(c)!r}, expected a normalized factor in [0,1]")

# -w: the weights row, no job rows
hdr, rows, other = table("sprio-w")
wrow = [f for f in other if f[0] == "Weights"]
if rows or not wrow:
    bad.append(f"sprio -w: job rows {sorted(rows)}, Weights row {wrow}: expected the weights only")
elif not {"1000", "10000"} <= set(wrow[0]):
    bad.append(f"sprio -w: Weights row {wrow[0]}, expected PriorityWeightAge 1000 and PriorityWeightFairshare 10000")

# --format / -o
hdr, rows, _ = table("sprio-format")
want = ["JOBID", "USER", "PRIORITY", "SITE", "AGE", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS", "NICE"]
if hdr != want:
    bad.append(f"sprio --format header {hdr}, expected {want}")
elif set(rows) != {a1, a2, b1}:
    bad.append(f"sprio --format lists jobs {sorted(rows)}, expected {sorted([a1, a2, b1])}")
fmt_rows = rows
hdr, rows, _ = table("sprio-o")
if hdr != ["JOBID", "PRIORITY", "FAIRSHARE", "AGE"] or set(rows) != {a1, a2, b1}:
    bad.append(f"sprio -o '%.8i %.10Y %.10F %.10A': header {hdr}, jobs {sorted(rows)}")

# -u gfa1: gfa1's jobs only; -j ID: that job only (the held one: none)
hdr, rows, _ = table("sprio-u")
if set(rows) != {a1, a2}:
    bad.append(f"sprio -u gfa1 lists jobs {sorted(rows)}, expected gfa1's {sorted([a1, a2])}")
for j in (a1, a2, b1, ah):
    hdr, rows, _ = table("sprio-j" + j)
    expect = set() if j == ah else {j}
    if set(rows) != expect:
        bad.append(f"sprio -j {j} lists jobs {sorted(rows)}, expected {sorted(expect)}")

# 2: the identical jobs a1 and a2
if {a1, a2} <= set(fmt_rows):
    r1, r2 = fmt_rows[a1], fmt_rows[a2]
    for c in ("SITE", "FAIRSHARE", "JOBSIZE", "PARTITION", "QOS", "NICE"):
        if r1[c] != r2[c]:
            bad.append(f"identical jobs {a1} and {a2}: {c} {r1[c]} != {r2[c]}")
    dage = abs(float(r1["AGE"]) - float(r2["AGE"]))
    dprio = abs(float(r1["PRIORITY"]) - float(r2["PRIORITY"]))
    print(f"identical jobs {a1}/{a2}: sprio PRIORITY {r1['PRIORITY']}/{r2['PRIORITY']}, "
          f"AGE {r1['AGE']}/{r2['AGE']}, FAIRSHARE {r1['FAIRSHARE']}/{r2['FAIRSHARE']}")
    if dprio > dage + 1:
        bad.append(f"identical jobs {a1} and {a2}: sprio PRIORITY differs by {dprio}, more than AGE's {dage} + 1")
    q = dict(l.split() for l in open(os.path.join(out, "squeue-Q.txt")) if l.strip())
    dq = abs(int(q.get(a1, -1)) - int(q.get(a2, -1)))
    print(f"squeue %Q: {a1} {q.get(a1)}, {a2} {q.get(a2)}, held {ah} {q.get(ah)}")
    if dq > dage + 1:
        bad.append(f"identical jobs {a1} and {a2}: squeue %Q {q.get(a1)} and {q.get(a2)} differ by {dq}, more than AGE's {dage} + 1")
    if q.get(ah) != "0":
        bad.append(f"held job {ah}: squeue %Q {q.get(ah)}, expected 0")
if bad:
    print("\n".join(bad))
    sys.exit(1)
PYEOF
ok "sprio, -l, -n, -w, --format, -o, -u gfa1 and -j (one id per call) exit 0 and list the expected jobs and columns"
ok "identical jobs $a1 and $a2: equal factors, priorities apart by at most their age difference; held job $ah: priority 0, not in sprio"
scontrol release "$ah" || fail "scontrol release $ah failed"
for ((i = 0; i < 40; i++)); do
  q=$(squeue -h -j "$ah" -o %Q)
  [[ $q =~ ^[0-9]+$ ]] && ((q > 0)) && break
  sleep 0.2
done
{ [[ $q =~ ^[0-9]+$ ]] && ((q > 0)); } || fail "released job $ah: squeue %Q is '$q' 8 s after scontrol release, expected > 0"
for ((i = 0; i < 25; i++)); do
  sprio -h -j "$ah" -o %i | tr -d ' ' | grep -qx "$ah" && break
  sleep 0.2
done
sprio -h -j "$ah" -o %i | tr -d ' ' | grep -qx "$ah" || fail "released job $ah is not in sprio -j $ah"
ok "released job $ah: priority $q, listed by sprio"

# --- 3: sshare ---------------------------------------------------------------
# rows FILE: "account|user" per data row of a parsable (-P) output
rows() { awk -F'|' 'NR > 1 { gsub(/ /, "", $1); print $1 "|" $2 }' "$1"; }
has_row() { rows "$1" | grep -qx "$2"; }
runs sshare sshare -P
runs sshare-plain sshare
runs sshare-a sshare -a -P
runs sshare-l sshare -l -P
runs sshare-al sshare -a -l -P
runs sshare-A sshare -A teama -P
runs sshare-u sshare -u gfa1 -P
runs sshare-p sshare -a -p
runs sshare-n sshare -a -n -P
runs sshare-o sshare -a -P -o Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare
runs sshare-U sshare -a -U -P
runs sshare-m sshare -m -P
cat "$out/sshare-al.txt"
for t in teama teamb teamc; do
  for f in sshare sshare-a sshare-l sshare-al sshare-u sshare-m; do
    has_row "$out/$f.txt" "$t|" || fail "$f: no row for account $t ($out/$f.txt)"
  done
  grep -q "$t" "$out/sshare-plain.txt" || fail "sshare (not parsable) does not list account $t"
done
for u in teama\|gfa1 teamb\|gfb1 teamc\|gfc1; do
  for f in sshare-a sshare-al sshare-o sshare-U; do
    has_row "$out/$f.txt" "$u" || fail "$f: no row for user ${u#*|} of ${u%|*} ($out/$f.txt)"
  done
  grep -q "^ *${u}|" "$out/sshare-p.txt" || fail "sshare -a -p: no row '${u}|' ($out/sshare-p.txt)"
done
has_row "$out/sshare.txt" "teama|gfa1" && fail "sshare (root) lists gfa1's association without -a"
has_row "$out/sshare-u.txt" "teama|gfa1" || fail "sshare -u gfa1: no row for gfa1"
rows "$out/sshare-u.txt" | grep -q 'gfb1\|gfc1' && fail "sshare -u gfa1 lists other users"
has_row "$out/sshare-A.txt" "teama|" || fail "sshare -A teama: no row for teama"
rows "$out/sshare-A.txt" | grep -q '^team[bc]|' && fail "sshare -A teama lists teamb or teamc"
rows "$out/sshare-U.txt" | grep -q '|$' && fail "sshare -U lists an account row"
grep -q '^Account|User|.*|LevelFS|' "$out/sshare-l.txt" || fail "sshare -l: no LevelFS column (Fair Tree's long format)"
[[ $(head -1 "$out/sshare-o.txt") == 'Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare' ]] ||
  fail "sshare -o: header $(head -1 "$out/sshare-o.txt")"
[[ $(head -1 "$out/sshare-m.txt") == Account\|User\|Partition\|* ]] || fail "sshare -m: no Partition column ($(head -1 "$out/sshare-m.txt"))"
[[ $(head -1 "$out/sshare-p.txt") == *\| ]] || fail "sshare -p: the header does not end with '|'"
grep -q '^Account' "$out/sshare-n.txt" && fail "sshare -n printed a header"
[[ $(wc -l <"$out/sshare-n.txt") -eq $(($(wc -l <"$out/sshare-a.txt") - 1)) ]] ||
  fail "sshare -n: $(wc -l <"$out/sshare-n.txt") rows, sshare -a has $(($(wc -l <"$out/sshare-a.txt") - 1))"
ok "sshare, -a, -l, -a -l, -A teama, -u gfa1, -p, -P, -n, -o, -U, -m exit 0 and print the expected rows"
clear_queue

# --- 4: QOS preemption: requeue and cancel, plain and heterogeneous ---------
# subhet USER ACCOUNT QOS SECONDS NODE0 NODE1 -> the het job's id (8 GPUs per
# component, one component per node)
subhet() {
  local c=(-A "$2" --qos "$3" --gres=gpu:8 -n1 -c1 --mem=100 -t 30) o
  o=$(cd /tmp && printf '#!/bin/bash\nsleep %s\n' "$4" |
      runuser -u "$1" -- sbatch --parsable -J "e2e-het-$2-$3" -o /dev/null -D /tmp "${c[@]}" -w "$5" : "${c[@]}" -w "$6") ||
    fail "heterogeneous sbatch as $1 ($2, $3) failed: $o"
  echo "${o%%;*}"
}
# states ID: the job's states, every component of a het job, sorted, unique
states() { scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 | sort -u | paste -sd,; }
wait_states() {  # wait_states ID STATES TIMEOUT_S
  local i
  for ((i = 0; i < $3 * 5; i++)); do
    [[ $(states "$1") == "$2" ]] && return 0
    sleep 0.2
  done
  return 1
}
restarts() { scontrol -o show job "$1" | grep -o 'Restarts=[0-9]*' | cut -d= -f2 | sort -u | paste -sd,; }
ncomp() { scontrol -o show job "$1" | grep -c 'JobState='; }

# preempt KIND VICTIM: teama's high job on gpu1 must preempt VICTIM
# (running there); echoes the high job's id.
preempt() {
  local h
  h=$(sub gfa1 teama high 8 30 -w gpu1)
  wait_state "$h" RUNNING 30 || fail "teama's high job $h did not start on gpu1 ($1: it should preempt teama's low job $2, now $(states "$2"))"
  echo "$h"
}

# 4a. REQUEUE (the cluster's PreemptMode; QOS low has none of its own)
[[ $low_ctld0 == OFF ]] || fail "QOS low has PreemptMode $low_ctld0 of its own; the test expects the cluster's (REQUEUE)"
pm=$(scontrol show config | sed -n 's/^PreemptMode *= *//p')
[[ $pm == REQUEUE ]] || fail "the cluster's PreemptMode is '$pm', the test expects REQUEUE (scripts/cluster's)"
l=$(sub gfa1 teama low 8 60 -w gpu1)
wait_state "$l" RUNNING 20 || fail "teama's low job $l did not start"
h=$(preempt plain-requeue "$l")
wait_states "$l" PENDING 10 || fail "teama's low job $l is $(states "$l") after $h started, expected PENDING (requeued)"
[[ $(restarts "$l") == 1 ]] || fail "low job $l: Restarts=$(restarts "$l"), expected 1"
grep -qF "preempted JobId=$l has been requeued to reclaim resources for JobId=$h" "$log" ||
  fail "no 'preempted JobId=$l has been requeued ... for JobId=$h' in $log"
ok "plain: teama's high job $h requeued teama's low job $l (PENDING, Restarts=1)"
clear_queue

hl=$(subhet gfa1 teama low 60 gpu1 gpu2)
wait_states "$hl" RUNNING 20 || fail "teama's heterogeneous low job $hl did not start ($(states "$hl"))"
(($(ncomp "$hl") == 2)) || fail "het job $hl has $(ncomp "$hl") components, expected 2"
h=$(preempt het-requeue "$hl")
wait_states "$hl" PENDING 10 || fail "het job $hl's components are $(states "$hl") after $h started, expected all PENDING (requeued)"
[[ $(restarts "$hl") == 1 ]] || fail "het job $hl: Restarts=$(restarts "$hl") over its components, expected 1"
grep -qF "preempted JobId=${hl}+0(${hl}) has been requeued to reclaim resources for JobId=$h" "$log" ||
  fail "no 'preempted JobId=${hl}+0(${hl}) has been requeued ... for JobId=$h' in $log"
ok "heterogeneous: teama's high job $h requeued both components of teama's low het job $hl"
clear_queue

# 4b. CANCEL (QOS low's own PreemptMode)
sacctmgr -i modify qos low set PreemptMode=cancel >/dev/null || fail "sacctmgr modify qos low set PreemptMode=cancel failed"
wait_low_mode CANCEL || fail "slurmctld does not show QOS low's PreemptMode=CANCEL (it shows $(ctld_low_mode))"
l=$(sub gfa1 teama low 8 60 -w gpu1)
wait_state "$l" RUNNING 20 || fail "teama's low job $l did not start"
h=$(preempt plain-cancel "$l")
hl=$(subhet gfa1 teama low 60 gpu2 gpu3)
wait_states "$hl" RUNNING 20 || fail "teama's heterogeneous low job $hl did not start ($(states "$hl"))"
h2=$(sub gfa1 teama high 8 30 -w gpu2)
wait_state "$h2" RUNNING 30 || fail "teama's high job $h2 did not start on gpu2 (it should preempt teama's low het job $hl, now $(states "$hl"))"
for j in "$l" "$hl"; do
  wait_states "$j" PREEMPTED 10 ||
    fail "low job $j is $(states "$j") after being preempted under PreemptMode=cancel, expected PREEMPTED"
done
sleep 3  # a requeue would show by now
for j in "$l" "$hl"; do
  [[ $(states "$j") == PREEMPTED ]] || fail "low job $j is $(states "$j") 3 s after it was preempted, expected still PREEMPTED"
  [[ $(restarts "$j") == 0 ]] || fail "low job $j: Restarts=$(restarts "$j"), expected 0 (cancelled, not requeued)"
done
grep -qF "preempted JobId=$l has been killed to reclaim resources for JobId=$h" "$log" ||
  fail "no 'preempted JobId=$l has been killed ... for JobId=$h' in $log"
grep -qF "preempted JobId=${hl}+0(${hl}) has been killed to reclaim resources for JobId=$h2" "$log" ||
  fail "no 'preempted JobId=${hl}+0(${hl}) has been killed ... for JobId=$h2' in $log"
for ((i = 0; i < 50; i++)); do
  s=$(sacct -n -X -P -j "$l,$hl" -o State | sort -u | paste -sd,)
  [[ $s == PREEMPTED ]] && break
  sleep 0.2
done
[[ $s == PREEMPTED ]] || fail "sacct shows the cancelled low jobs $l and $hl as '$s', expected PREEMPTED"
ok "with QOS low's PreemptMode=cancel: teama's high jobs $h and $h2 killed teama's low job $l and het job $hl (PREEMPTED in scontrol and sacct, not requeued)"
clear_queue
sacctmgr -i modify qos low set PreemptMode="$low_mode0" >/dev/null || fail "restoring QOS low's PreemptMode=$low_mode0 failed"
wait_low_mode "$low_ctld0" || fail "slurmctld shows QOS low's PreemptMode $(ctld_low_mode), expected $low_ctld0 again"
ok "QOS low's PreemptMode back to $low_mode0"
