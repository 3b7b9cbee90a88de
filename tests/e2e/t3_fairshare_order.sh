#!/usr/bin/env bash
# Check 3: with the cluster full, the pending job of the team with the higher
# fair-share factor (fewer decayed GPU-hours, penalty counted) starts first —
# even though the other team's job was submitted first.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
clear_queue
# Outside any scavenger episode an earlier test began (t6's in-team
# preemption): inside one, the light team's job below would be fair game for
# the heavy one.
wait_no_scavenger_episode 200 || fail "a scavenger episode is still on after 200 s"
# Which team is "heavy" comes from what earlier tests left (usage, prices,
# penalties): the team whose factor is lower now fills the cluster, which only
# lowers it further, so the premise holds by construction. Fixed roles
# (teama heavy) failed once in the 24.11 root, where teamb had used more.
fa=$(team_field teama effective_fairshare); fb=$(team_field teamb effective_fairshare)
if "$PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$fa" "$fb"; then
  heavy=(gfb1 teamb) light=(gfa1 teama)
else
  heavy=(gfa1 teama) light=(gfb1 teamb)
fi
say "fair-share factors before the fill: teama $fa, teamb $fb; ${heavy[1]} fills the cluster"
# The heavy team uses the whole cluster; one node frees after 12 s, the rest
# after 40 s.
f1=$(sub "${heavy[@]}" normal 8 12)
fill=("$f1" "$(sub "${heavy[@]}" normal 8 40)" "$(sub "${heavy[@]}" normal 8 40)" "$(sub "${heavy[@]}" normal 8 40)")
for j in "${fill[@]}"; do wait_state "$j" RUNNING 20 || fail "fill job $j did not start"; done
ja=$(sub "${heavy[@]}" normal 8 5)   # submitted first
sleep 1
jb=$(sub "${light[@]}" normal 8 5)   # submitted second, by the team with the higher factor
sleep 5
# One -j per job: Slurm 24.11's sprio parses a comma-separated -j list as one
# job id ("Invalid job id"), a bug of its own (src/sprio/opts.c).
{ sprio -l -j "$ja"; sprio -h -l -j "$jb"; } | tee "$E2E_OUT/t3-sprio.txt" ||
  fail "sprio -l -j failed for job $ja or $jb"
for t in teama teamb; do
  say "$t: $(team_field $t gpu_hours) GPU-hours (decayed, prices included), penalty $(team_field $t penalty), factor $(team_field $t effective_fairshare)"
done
pa=$(squeue -h -j "$ja" -o %Q); pb=$(squeue -h -j "$jb" -o %Q)
say "priorities: ${heavy[1]} job $ja = $pa, ${light[1]} job $jb = $pb"
((pb > pa)) || fail "${light[1]}'s job ($pb) does not outrank ${heavy[1]}'s ($pa) although ${heavy[1]} has the lower fair-share factor"
wait_state "$jb" RUNNING 30 || fail "${light[1]}'s job $jb did not start when the first node freed"
sa=$(state_of "$ja")
[[ $sa == PENDING ]] || fail "${heavy[1]}'s job $ja is $sa when ${light[1]}'s job started; expected PENDING"
ok "${light[1]}'s job started first ($(squeue -h -j "$jb" -o %S)); ${heavy[1]}'s job, submitted earlier, still waits"
clear_queue
