// YAML scenarios: a cluster, policy parameters and synthetic team workloads,
// generated deterministically from a seed. The format (every key):
//
//   name: exploit                     # shown in reports
//   description: text
//   seed: 42                          # same seed -> same jobs, byte for byte
//   duration: 10d                     # arrivals stop and the run ends here
//   measure_from: 2d                  # GPU-hours/shares/Jain count from here (default 0)
//   gaming_team: teama                # whose high jobs the gaming advantage is about
//   cluster:
//     gpus: 64
//     gpus_per_node: 8                # optional; 0 or missing = one pool
//     backfill: true                  # EASY backfill (default true)
//     backfill_interval: 30s          # Slurm's bf_interval (default 30s)
//     backfill_depth: 500             # bf_max_job_test: jobs a backfill pass looks at (default 500)
//     backfill_window: 1d             # bf_window: no reservation for a start later than this (default 1d)
//     preempt_mode: requeue           # or cancel
//   policy:                           # PriorityParameters keys (gpufair::parse_config)
//     calc_period: 5m
//   teams:
//     - name: teama
//       shares: 1                     # default: the policy's default_shares
//       workloads:
//         - type: poisson             # Poisson arrivals
//           per_hour: 2               # mean arrivals per hour
//           gpus: [1, 2, 4, 8]        # one value, a list (uniform), or {8: 3, 1: 1} (weights)
//           runtime: {dist: exponential, mean: 4h, min: 10m, max: 2d}
//                                     # dist: fixed (value), exponential (mean),
//                                     # uniform (min, max), lognormal (median, sigma)
//           qos: low                  # low | high
//           label: honest             # honest | bait | none (default honest)
//           start: 0                  # window of arrivals inside [0, duration)
//           end: 10d
//           accounts: [teama, teama/nlp]   # rotated per job (default: the team name)
//           users: [alice, bob]            # rotated per job (default: <team>-user)
//         - type: placeholder         # the problem statement's slot holders
//           interval: 1h              # one round per interval; 0 = a single round at start
//           jitter: 10m               # each round moves by up to +-jitter
//           count: 1                  # placeholders per round
//           array: false              # true: a round is one job array (same submit second);
//                                     # false: a round's jobs are spread over the interval
//           gpus: 8
//           runtime: 2d
//           qos: low
//           label: bait               # default for placeholders
#pragma once

#include <string>

#include "job_spec.h"
#include "simulator.h"

namespace gpufair::sim {

struct Scenario {
  std::string name;
  std::string description;
  std::uint64_t seed = 1;
  SimOptions options;               // cluster, horizon (= duration), measure_from, gaming team
  std::vector<std::pair<std::string, std::string>> policy_params;  // key, value in file order
  Workload workload;                // generated jobs, shares, gaming team
  std::size_t job_count = 0;
};

// Loads and generates; throws SourceError("file:line: reason") on any problem.
// seed_override != 0 replaces the file's seed.
Scenario load_scenario(const std::string& path, std::uint64_t seed_override = 0);

// A JobSource over jobs already in memory (scenarios, tests).
std::unique_ptr<JobSource> make_vector_source(std::vector<JobSpec> jobs);

}  // namespace gpufair::sim
