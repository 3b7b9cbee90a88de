#!/usr/bin/env bash
# Check 13: priority/multifactor's site factor and per-partition priorities
# work under gpufair as under multifactor, side by side on the same cluster,
# and a refused multifactor key stops slurmctld, naming it.
#
# On its own cluster (run dir $GPUFAIR_RUN_DIR, default
# /var/tmp/gpufair-mfkeys, ports shifted by 600) with a second partition
# gpu2 on the same nodes (PriorityJobFactor 10 against gpu's 1,
# PriorityWeightPartition=1000), under multifactor and then gpufair:
#   a. `scontrol update job=J2 SiteFactor=5000` on a pending job shows in
#      `sprio` (SITE 5000) and puts J2 5000 above J1, an otherwise identical
#      job submitted just before it;
#   b. a job M submitted to gpu,gpu2 gets one priority per partition: two
#      `sprio` rows, gpu2's 900 above gpu's (the partition term), and
#      `squeue --priority` lists it in both partitions;
#   then the four GPUs nodes, held by blockers, free one at a time: J2 starts
#   first, then M (queued in gpu2 with gpu2's priority), then S (a job in
#   gpu2 only with SiteFactor -500), while J1 still waits. The same order and
#   the same numbers under both policies.
#   c. (gpufair) FairShareDampeningFactor=10: `scontrol reconfigure` logs the
#      refusal and keeps running; a restart refuses to start, naming the key,
#      its value and what to use.
export GPUFAIR_RUN_DIR=${GPUFAIR_MFKEYS_RUN_DIR:-/var/tmp/gpufair-mfkeys}
export GPUFAIR_PORT_OFFSET=${GPUFAIR_MFKEYS_PORT_OFFSET:-600}
source "$(dirname "$0")/lib.sh"
trap '"$CLUSTER" down >>"$E2E_OUT/t13-down.log" 2>&1 || true' EXIT
log=$RUN/log/slurmctld.log

# sprio's weighted priority, SITE and PARTITION columns of job $1 in
# partition $2: "Y S P".
sprio_row() {
  sprio -h -j "$1" -o '%.15i %.12r %.14Y %.12S %.12P' 2>/dev/null |
    awk -v p="$2" '$2 == p {print $3, $4, $5; exit}'
}

# The jobs given that are RUNNING and not yet in the array order.
new_running() {
  local j
  for j in "$@"; do
    [[ $(state_of "$j") == RUNNING && " ${order[*]} " != *" $j "* ]] && echo "$j"
  done
  return 0
}

run_policy() {  # run_policy multifactor|gpufair -> $E2E_OUT/t13-<policy>.txt
  local pol=$1 n i j j1 j2 m s row started
  local out=$E2E_OUT/t13-$pol.txt
  order=()
  local -a args=(--policy "$pol" --extra-conf PriorityWeightPartition=1000
    --extra-conf "PartitionName=gpu2 Nodes=gpu1,gpu2,gpu3,gpu4 PriorityJobFactor=10 MaxTime=INFINITE State=UP")
  [[ $pol == gpufair ]] && args+=(--priority-params "$E2E_GPUFAIR_PARAMS")
  say "cluster up ($pol, partitions gpu and gpu2 on the same nodes)"
  "$CLUSTER" up "${args[@]}" >"$E2E_OUT/t13-up-$pol.log" 2>&1 \
    || { tail -20 "$E2E_OUT/t13-up-$pol.log" >&2; fail "scripts/cluster up --policy $pol failed"; }
  local -a blk=()
  for n in gpu1 gpu2 gpu3 gpu4; do blk+=("$(sub gfb1 teamb normal 8 600 -w "$n")"); done
  for j in "${blk[@]}"; do wait_state "$j" RUNNING 30 || fail "$pol: blocker $j did not start"; done
  j1=$(sub gfa1 teama normal 8 600)
  sleep 1
  j2=$(sub gfa1 teama normal 8 600)
  m=$(sub gfa1 teama normal 8 600 -p gpu,gpu2)
  s=$(sub gfa1 teama normal 8 600 -p gpu2)
  scontrol update job="$j2" SiteFactor=5000 || fail "$pol: scontrol update SiteFactor failed"
  scontrol update job="$s" SiteFactor=-500 || fail "$pol: scontrol update SiteFactor failed"
  sleep 3
  sprio -l >"$E2E_OUT/t13-sprio-$pol.txt" 2>&1 || true
  squeue --priority -o '%.8i %.9P %.12Q %.8T' >"$E2E_OUT/t13-squeue-$pol.txt" 2>&1 || true
  {
    # (a) the site factor
    row=$(sprio_row "$j1" gpu); echo "j1 $row"
    row=$(sprio_row "$j2" gpu); echo "j2 $row"
    # (b) one priority per partition
    echo "m_rows $(sprio -h -j "$m" -o '%.15i %.12r' | wc -l)"
    row=$(sprio_row "$m" gpu); echo "m_gpu $row"
    row=$(sprio_row "$m" gpu2); echo "m_gpu2 $row"
    echo "m_squeue $(squeue --priority -h -j "$m" -o '%P' | sort | tr '\n' ' ')"
    row=$(sprio_row "$s" gpu2); echo "s $row"
  } >"$out"
  # The nodes free one at a time: who starts.
  for i in 0 1 2; do
    scancel "${blk[i]}"
    started=""
    for ((n = 0; n < 150; n++)); do
      started=$(new_running "$j1" "$j2" "$m" "$s")
      [[ -n $started ]] && break
      sleep 0.2
    done
    [[ -n $started ]] || fail "$pol: nothing started within 30 s after blocker ${blk[i]} ended"
    mapfile -t -O "${#order[@]}" order <<<"$started"
  done
  local names=""
  for j in "${order[@]}"; do
    case $j in "$j1") names+="J1 " ;; "$j2") names+="J2 " ;; "$m") names+="M " ;; "$s") names+="S " ;; esac
  done
  echo "order ${names% }" >>"$out"
  echo "j1_state $(state_of "$j1")" >>"$out"
  scancel -u gfa1 2>/dev/null || true; scancel -u gfb1 2>/dev/null || true
  say "$pol: $(tr '\n' ';' <"$out")"
}

check_policy() {  # check_policy POLICY: the numbers of (a) and (b)
  local pol=$1 f=$E2E_OUT/t13-$1.txt
  local -a j1 j2 mg mg2
  read -r -a j1 < <(awk '$1=="j1" {print $2, $3, $4}' "$f")
  read -r -a j2 < <(awk '$1=="j2" {print $2, $3, $4}' "$f")
  read -r -a mg < <(awk '$1=="m_gpu" {print $2, $3, $4}' "$f")
  read -r -a mg2 < <(awk '$1=="m_gpu2" {print $2, $3, $4}' "$f")
  [[ ${#j1[@]} == 3 && ${#j2[@]} == 3 ]] || fail "$pol: sprio shows no row for J1 or J2 (see $E2E_OUT/t13-sprio-$pol.txt)"
  [[ ${j2[1]} == 5000 ]] || fail "$pol: sprio SITE of J2 is '${j2[1]}', expected 5000"
  [[ ${j1[1]} == 0 ]] || fail "$pol: sprio SITE of J1 is '${j1[1]}', expected 0"
  local d=$((j2[0] - j1[0]))
  ((d >= 4700 && d <= 5300)) || fail "$pol: J2's priority is $d above J1's, expected ~5000 (the site factor)"
  ok "$pol: SiteFactor=5000 shows in sprio (SITE ${j2[1]}) and puts J2 $d above J1"
  [[ $(awk '$1=="m_rows" {print $2}' "$f") == 2 ]] || fail "$pol: sprio does not list M once per partition (see $E2E_OUT/t13-sprio-$pol.txt)"
  [[ ${#mg[@]} == 3 && ${#mg2[@]} == 3 ]] || fail "$pol: sprio has no gpu or gpu2 row for M"
  [[ ${mg[2]} == 100 && ${mg2[2]} == 1000 ]] || fail "$pol: M's PARTITION terms are ${mg[2]} (gpu) and ${mg2[2]} (gpu2), expected 100 and 1000"
  d=$((mg2[0] - mg[0]))
  ((d >= 899 && d <= 901)) || fail "$pol: M's priority in gpu2 is $d above gpu, expected 900"
  [[ $(awk '$1=="m_squeue" {print $2, $3}' "$f") == "gpu gpu2" ]] || fail "$pol: squeue --priority does not list M in gpu and gpu2"
  ok "$pol: M has a priority per partition: gpu ${mg[0]}, gpu2 ${mg2[0]} (sprio), listed in both by squeue --priority"
  [[ $(awk '$1=="order" {$1=""; print substr($0, 2)}' "$f") == "J2 M S" ]] \
    || fail "$pol: start order $(awk '$1=="order"' "$f"), expected J2 M S (J2 by its site factor, M by its gpu2 priority)"
  [[ $(awk '$1=="j1_state" {print $2}' "$f") == PENDING ]] || fail "$pol: J1 is not still pending"
  ok "$pol: nodes freed one by one start J2, then M (its gpu2 priority), then S; J1 waits"
}

t0=$SECONDS
run_policy multifactor
run_policy gpufair
check_policy multifactor
check_policy gpufair

# (c) a refused key: on reconfigure the error names it and slurmctld runs on
# with the previous settings; at start slurmctld refuses. (22.05 logs
# "reconfigure rejected"; from 23.11 reconfigure re-executes slurmctld, whose
# init refuses the key, and the old process resumes: see t8_reconfigure.sh.)
refused='(reconfigure rejected|invalid configuration).*FairShareDampeningFactor=10'
e0=$(grep -cE "$refused" "$log" || true)
"$CLUSTER" reconfigure --extra-conf FairShareDampeningFactor=10 >/dev/null 2>&1 || true
sleep 3
e1=$(grep -cE "$refused" "$log" || true)
((e1 > e0)) || fail "no 'reconfigure rejected' / 'invalid configuration' naming FairShareDampeningFactor=10 in $log"
[[ $(scontrol ping) == *UP* ]] || fail "slurmctld is not up after the refused reconfigure"
say "slurmctld: $(grep -E "$refused" "$log" | tail -1 | cut -c1-300)"
ok "refused key on reconfigure: logged, slurmctld keeps running"
"$CLUSTER" restart-ctld >"$E2E_OUT/t13-bad-start.txt" 2>&1 && fail "slurmctld started with FairShareDampeningFactor=10"
line=$(grep 'error: priority/gpufair: invalid configuration' "$log" | tail -1)
say "slurmctld: ${line:0:400}"
[[ $line == *"FairShareDampeningFactor=10 is not supported by priority/gpufair"* ]] \
  || fail "slurmctld's refusal does not name FairShareDampeningFactor=10: $line"
[[ $line == *"set FairShareDampeningFactor=1"* ]] || fail "the refusal does not say what to use instead: $line"
grep -q 'refusing to start' <(tail -20 "$log") || fail "no 'refusing to start' in $log"
ok "refused key at start: slurmctld refuses to start, naming FairShareDampeningFactor=10 and what to use"
say "check 13 took $((SECONDS - t0)) s"
