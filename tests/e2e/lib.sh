# Sourced by the end-to-end tests: helpers around the cluster of scripts/cluster.
# Every test prints what it checks, and on failure where to look.
set -euo pipefail

E2E_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN=${GPUFAIR_RUN_DIR:-/var/tmp/gpufair-cluster}
export GPUFAIR_RUN_DIR=$RUN
export SLURM_CONF=$RUN/etc/slurm.conf
E2E_OUT=${GPUFAIR_E2E_OUT:-$RUN.e2e-output}
mkdir -p "$E2E_OUT"
PY=/usr/bin/python3
CLUSTER=$E2E_ROOT/scripts/cluster
SCENARIO=$E2E_ROOT/scripts/lib/scenario.py

# gpufair's settings for the e2e cluster: the default rule at story scale
# (1 story hour = 6 s), the same as scripts/demo's (scripts/lib/story.sh).
# shellcheck source=../../scripts/lib/story.sh
source "$E2E_ROOT/scripts/lib/story.sh"
E2E_GPUFAIR_PARAMS=$GPUFAIR_STORY_PARAMS

say() { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() {
  printf '[e2e] FAIL: %s\n' "$*" >&2
  printf '[e2e] logs: %s/log/ (slurmctld.log, slurmd.gpu*.log, slurmdbd.log); outputs: %s\n' "$RUN" "$E2E_OUT" >&2
  exit 1
}
ok() { printf '[e2e] ok: %s\n' "$*"; }

need_cluster() {  # need_cluster gpufair|multifactor
  [[ -f $RUN/cluster.state ]] || fail "no cluster in $RUN (the fixture test e2e.*_cluster_up must run first)"
  local pol
  pol=$(scontrol show config 2>/dev/null | sed -n 's/^PriorityType *= *priority\///p') \
    || fail "slurmctld does not answer"
  [[ $pol == "$1" ]] || fail "cluster runs priority/$pol, this test needs priority/$1"
}

# sub USER ACCOUNT QOS GPUS SECONDS [sbatch args...] -> job id
sub() {
  local user=$1 acct=$2 qos=$3 gpus=$4 secs=$5; shift 5
  local out
  out=$(cd /tmp && runuser -u "$user" -- sbatch --parsable -A "$acct" --qos "$qos" -J "e2e-$acct-$qos" \
        --gres="gpu:$gpus" -n1 -c1 --mem=100 -t 30 -o /dev/null -D /tmp "$@" --wrap="sleep $secs") \
    || fail "sbatch as $user ($acct, $qos) failed: $out"
  echo "${out%%;*}"
}

state_of() { squeue -h -j "$1" -o %T 2>/dev/null || true; }

wait_state() {  # wait_state JOBID STATE TIMEOUT_S
  local i s
  for ((i = 0; i < $3 * 5; i++)); do
    s=$(state_of "$1")
    [[ $s == "$2" ]] && return 0
    sleep 0.2
  done
  return 1
}

wait_empty_queue() {  # wait_empty_queue TIMEOUT_S
  local i
  for ((i = 0; i < $1 * 5; i++)); do
    [[ -z $(squeue -h -o %i) ]] && return 0
    sleep 0.2
  done
  return 1
}

clear_queue() { scancel --partition=gpu 2>/dev/null || true; wait_empty_queue 30 || fail "queue did not empty"; }

GSHOW=gpufair-show
[[ -n ${GPUFAIR_BUILD_DIR:-} && -x $GPUFAIR_BUILD_DIR/tools/gpufair-show ]] && GSHOW=$GPUFAIR_BUILD_DIR/tools/gpufair-show
gshow_json() { "$GSHOW" --json --conf "$SLURM_CONF" "$@"; }

# wait_no_scavenger_episode TIMEOUT_S [TEAM...]: until no team (or none of
# these) is in a scavenger episode (design.md, "Scavengers"). An earlier
# test's in-team preemption starts one (scavenger_window, 144 s at story
# scale), and while it lasts that team's new lower-rank jobs may be
# reclaimed by any other team, and may not reclaim themselves: a test of the
# plain fair-share order must not start inside one.
wait_no_scavenger_episode() {
  local i until timeout=$1
  shift
  for ((i = 0; i < timeout; i++)); do
    until=$(gshow_json | "$PY" -c '
import json, sys
teams = set(sys.argv[1:])
print(max([t.get("scavenger_until", 0) for t in json.load(sys.stdin)["teams"]
           if not teams or t["name"] in teams] + [0]))' "$@")
    ((until <= $(date +%s))) && return 0
    sleep 1
  done
  return 1
}

# wait_not_jumper TIMEOUT_S TEAM: until TEAM no longer counts as having
# jumped the queue lately (gpufair-show's jumped_lately: its jump prices,
# half-life bait_window, under 1 GPU-second and its penalty under
# bait_block_penalty); under reclaim=jumpers only such a team is reclaimed
# from while it holds more than its entitlement.
wait_not_jumper() {
  local i v timeout=$1 team=$2
  for ((i = 0; i < timeout; i++)); do
    v=$(team_field "$team" jumped_lately)
    [[ $v == False || $v == 0 ]] && return 0
    sleep 1
  done
  return 1
}

# team_field TEAM FIELD  (from gpufair-show --json)
team_field() {
  gshow_json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
t = [t for t in d["teams"] if t["name"] == sys.argv[1]]
print(t[0][sys.argv[2]] if t else 0)' "$1" "$2"
}
