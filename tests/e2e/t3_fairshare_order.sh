#!/usr/bin/env bash
# Check 3: with the cluster full, the pending job of the team that used fewer
# GPU-hours starts first — even though the other team's job was submitted first.
source "$(dirname "$0")/lib.sh"
need_cluster gpufair
clear_queue
# Outside any scavenger episode an earlier test began (t6's in-team
# preemption): inside one, teamb's job below would be fair game for teama.
wait_no_scavenger_episode 200 || fail "a scavenger episode is still on after 200 s"
# teama uses the whole cluster; one node frees after 12 s, the rest after 40 s.
f1=$(sub gfa1 teama normal 8 12)
fill=("$f1" "$(sub gfa1 teama normal 8 40)" "$(sub gfa1 teama normal 8 40)" "$(sub gfa1 teama normal 8 40)")
for j in "${fill[@]}"; do wait_state "$j" RUNNING 20 || fail "fill job $j did not start"; done
ja=$(sub gfa1 teama normal 8 5)   # submitted first
sleep 1
jb=$(sub gfb1 teamb normal 8 5)   # submitted second, by the team with less usage
sleep 5
# One -j per job: Slurm 24.11's sprio parses a comma-separated -j list as one
# job id ("Invalid job id"), a bug of its own (src/sprio/opts.c).
{ sprio -l -j "$ja"; sprio -h -l -j "$jb"; } | tee "$E2E_OUT/t3-sprio.txt" ||
  fail "sprio -l -j failed for job $ja or $jb"
ua=$(team_field teama raw_gpu_hours); ub=$(team_field teamb raw_gpu_hours)
say "GPU-hours so far: teama $ua, teamb $ub"
pa=$(squeue -h -j "$ja" -o %Q); pb=$(squeue -h -j "$jb" -o %Q)
say "priorities: teama job $ja = $pa, teamb job $jb = $pb"
((pb > pa)) || fail "teamb's job ($pb) does not outrank teama's ($pa) although teama used more GPU-hours"
wait_state "$jb" RUNNING 30 || fail "teamb's job $jb did not start when the first node freed"
sa=$(state_of "$ja")
[[ $sa == PENDING ]] || fail "teama's job $ja is $sa when teamb's job started; expected PENDING"
ok "teamb's job started first ($(squeue -h -j "$jb" -o %S)); teama's job, submitted earlier, still waits"
clear_queue
