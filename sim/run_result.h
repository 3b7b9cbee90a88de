// What one simulated run measured: the figures behind the table, the JSON
// and the charts. Everything here is deterministic for a given input and
// seed except wall_seconds.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufair/time.h"

namespace gpufair::sim {

// The done criterion's tolerance: a team may hold up to 1.05x its
// entitlement while a team below its own waits.
inline constexpr double kOverEntitlement = 1.05;

struct TeamResult {
  std::string name;
  double shares = 0;
  double share = 0;             // configured: shares / total shares
  std::uint64_t jobs = 0;       // submitted
  std::uint64_t started = 0, completed = 0, never_started = 0;
  double gpu_hours = 0;         // delivered inside the measurement window
  double gpu_hour_share = 0;    // of all teams' GPU-hours in the window
  std::vector<Seconds> waits;       // every job, sorted; unstarted jobs count to the end
  std::vector<Seconds> high_waits;  // qos=high only, sorted
  std::vector<Seconds> real_waits;  // every job not labelled bait (the team's real work), sorted
  std::uint64_t preemptions_caused = 0, preemptions_suffered = 0;
  std::uint64_t preemptions_refused = 0;  // attempts the policy refused as bait
  std::uint64_t bait_detections = 0;
  std::uint64_t priced_jumps = 0;     // in-team jumps that paid a price
  double price_gpu_s = 0;             // the prices paid, GPU-seconds
  std::uint64_t reclaims_made = 0, reclaimed_from = 0;  // cross-team reclaims
  double lost_gpu_hours = 0;          // work its preempted jobs lost (requeued or cancelled), in the window
  double reclaim_lost_gpu_hours = 0;  // ...of which to other teams' reclaims
  // Held above kOverEntitlement x its entitlement while another team below
  // its entitlement had a job waiting that would keep it within it (the
  // moment a reclaim could act; design.md, "Reclaim"): GPU-seconds held
  // above that line, and for how long. Integrated exactly between events.
  double over_entitlement_gpu_s = 0;
  double over_entitlement_s = 0;
  double penalty = 0;
  double fairshare = 0;         // effective factor at the end (multifactor, gpufair)
  std::vector<double> usage_series;  // GPU-seconds per series bucket
};

struct DetectorScore {
  std::uint64_t true_positive = 0, false_positive = 0, false_negative = 0, true_negative = 0;
  double precision() const {
    const auto d = true_positive + false_positive;
    return d ? static_cast<double>(true_positive) / static_cast<double>(d) : 1.0;
  }
  double recall() const {
    const auto d = true_positive + false_negative;
    return d ? static_cast<double>(true_positive) / static_cast<double>(d) : 1.0;
  }
};

struct RunResult {
  std::string policy;
  std::vector<TeamResult> teams;  // sorted by name
  double jain_index = 0;
  double utilization = 0;
  std::string gaming_team;                  // "" = none
  std::optional<double> gaming_advantage;   // needs a gaming team with high jobs
  double gaming_high_wait_p50 = 0, others_wait_p50 = 0;
  std::optional<DetectorScore> detector;    // only when labelled jobs were judged
  TimePoint measure_from = 0, end = 0;
  double sim_seconds = 0;     // simulated time span of the run
  double wall_seconds = 0;    // host time the run took (not deterministic)
  double cpu_seconds = 0;     // CPU time of this process during the run (not deterministic)
  std::uint64_t jobs = 0, events = 0, preemptions = 0, rejected_jobs = 0, skipped_rows = 0;
  std::uint64_t cycles = 0;
  // Backfill preemptions that left their preemptor pending (Handoff::kPriority).
  std::uint64_t preemptors_left_pending = 0;
  // Time some team held above kOverEntitlement x its entitlement while a
  // team below its own had a fitting job waiting (TeamResult above).
  double over_entitlement_s = 0;
  Seconds series_bucket = 0;  // width of a usage_series bucket
  std::int32_t cluster_gpus = 0;
};

// Nearest-rank percentile of a sorted vector; -1 when empty.
inline double percentile(const std::vector<Seconds>& sorted, double p) {
  if (sorted.empty()) return -1;
  // ceil(p% of n), computed so that exact products (50% of 4 = 2) stay exact.
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size()) - 1e-9));
  if (rank < 1) rank = 1;
  if (rank > sorted.size()) rank = sorted.size();
  return static_cast<double>(sorted[rank - 1]);
}

}  // namespace gpufair::sim
