#!/usr/bin/env bash
# Replay speed: generate JOBS jobs for a GPUS-GPU cluster (deterministic, load
# 0.9, 50 teams, 5% high-QOS) and replay them through gpufair on one core.
# Prints the wall time and jobs/s; the target is <= 10 s for 1,000,000 jobs
# on 10,000 GPUs. Fails only if the run fails, not on the figure.
# usage: bench_replay.sh GPUFAIR_SIM JOBS GPUS
set -eu
sim=$1; jobs=${2:-1000000}; gpus=${3:-10000}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$sim" generate --jobs "$jobs" --gpus "$gpus" --teams 50 --load 0.9 --seed 7 -o "$tmp/trace.csv"
for policy in gpufair multifactor fifo; do
  "$sim" --trace "$tmp/trace.csv" --gpus "$gpus" --gpus-per-node 8 --policy "$policy" --quiet --json "$tmp/$policy.json"
  wall=$(sed -n 's/.*"wall_seconds": \([0-9.]*\).*/\1/p' "$tmp/$policy.json")
  cpu=$(sed -n 's/.*"cpu_seconds": \([0-9.]*\).*/\1/p' "$tmp/$policy.json")
  sim_s=$(sed -n 's/.*"sim_seconds": \([0-9.]*\).*/\1/p' "$tmp/$policy.json")
  util=$(sed -n 's/.*"utilization": \([0-9.]*\).*/\1/p' "$tmp/$policy.json")
  awk -v p="$policy" -v j="$jobs" -v g="$gpus" -v w="$wall" -v c="$cpu" -v s="$sim_s" -v u="$util" 'BEGIN {
    printf "sim replay %-11s %d jobs on %d GPUs: wall %.2f s, CPU %.2f s, %.0f jobs/s of CPU, simulated %.1f days, utilisation %.3f (target <= 10 s on one core)\n",
      p, j, g, w, c, j / c, s / 86400, u }'
done
