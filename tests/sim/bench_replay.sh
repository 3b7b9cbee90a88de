#!/usr/bin/env bash
# Replay speed: generate JOBS jobs for a GPUS-GPU cluster (deterministic,
# offered load LOAD, 50 teams, 5% high-QOS; 8 GPUs per node) and replay them
# through gpufair, multifactor and fifo on one core. At load 0.9 the queue
# stays short; at 1.0 it keeps growing (node fragmentation leaves GPUs idle),
# which is what makes a simulator slow. Prints wall and CPU time, jobs/s and,
# when /usr/bin/time is there, the peak RSS; the target is <= 10 s for
# 1,000,000 jobs on 10,000 GPUs at both loads. Fails only if a run fails,
# not on the figures.
# usage: bench_replay.sh GPUFAIR_SIM [JOBS [GPUS [LOAD]]]
set -eu
sim=$1; jobs=${2:-1000000}; gpus=${3:-10000}; load=${4:-0.9}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$sim" generate --jobs "$jobs" --gpus "$gpus" --teams 50 --load "$load" --seed 7 -o "$tmp/trace.csv"
timer=()
if /usr/bin/time -v true >/dev/null 2>&1; then timer=(/usr/bin/time -v -o "$tmp/time.txt"); fi
for policy in gpufair multifactor fifo; do
  "${timer[@]}" "$sim" --trace "$tmp/trace.csv" --gpus "$gpus" --gpus-per-node 8 --policy "$policy" --quiet \
    --json "$tmp/$policy.json"
  wall=$(sed -n 's/.*"wall_seconds": \([0-9.]*\).*/\1/p' "$tmp/$policy.json")
  cpu=$(sed -n 's/.*"cpu_seconds": \([0-9.]*\).*/\1/p' "$tmp/$policy.json")
  sim_s=$(sed -n 's/.*"sim_seconds": \([0-9.]*\).*/\1/p' "$tmp/$policy.json")
  util=$(sed -n 's/.*"utilization": \([0-9.]*\).*/\1/p' "$tmp/$policy.json")
  rss_kb=0
  if [ ${#timer[@]} -gt 0 ]; then
    rss_kb=$(sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p' "$tmp/time.txt")
  fi
  awk -v p="$policy" -v j="$jobs" -v g="$gpus" -v l="$load" -v w="$wall" -v c="$cpu" -v s="$sim_s" -v u="$util" -v r="$rss_kb" 'BEGIN {
    printf "sim replay %-11s %d jobs on %d GPUs, load %.2f: wall %.2f s, CPU %.2f s, %.0f jobs/s of CPU, simulated %.1f days, utilisation %.3f, ",
      p, j, g, l, w, c, j / c, s / 86400, u
    if (r > 0) printf "max RSS %.1f MB ", r / 1024; else printf "max RSS n/a "
    printf "(target <= 10 s on one core)\n" }'
done
