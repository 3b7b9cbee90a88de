// Priority composition (design.md, "Priority"), like priority/multifactor:
//   prio = w_age*age + w_fs*F_eff + w_js*size + w_part*part + w_qos*qos - nice
// clamped to [1, 0xFFFFFFFE]. Inline: it is the per-job hot path.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpufair/config.h"
#include "gpufair/job.h"
#include "gpufair/time.h"

namespace gpufair {

// What every job's priority reads: computed once per cycle.
struct TeamFactors {
  double fairshare = 1;  // classic factor
  double effective = 1;  // after the bait penalty
  double penalty = 0;
};

struct PriorityParams {
  Weights weights;
  Seconds max_age = 7 * 86400;
  double cluster_gpus = 0;
  bool favor_small = false;
};

inline constexpr std::uint32_t kMinPriority = 1;            // 0 means "held"
inline constexpr std::uint32_t kMaxPriority = 0xFFFFFFFEu;  // Slurm's top

inline PriorityFactors compute_priority(const PriorityInput& in,
                                        const TeamFactors& team,
                                        const PriorityParams& p, TimePoint now) {
  PriorityFactors f;
  const Seconds waited = in.eligible > 0 ? elapsed_between(in.eligible, now) : 0;
  f.age = (p.max_age > 0 && waited > 0)
              ? std::min(1.0, static_cast<double>(waited) / static_cast<double>(p.max_age))
              : 0.0;
  f.fairshare = team.effective;
  double size = (p.cluster_gpus > 0 && in.gpus > 0) ? std::min(1.0, in.gpus / p.cluster_gpus) : 0.0;
  f.job_size = p.favor_small ? 1.0 - size : size;
  f.partition = std::clamp(in.partition_norm, 0.0, 1.0);
  f.qos = std::clamp(in.qos_norm, 0.0, 1.0);
  f.w_age = p.weights.age * f.age;
  f.w_fairshare = p.weights.fairshare * f.fairshare;
  f.w_job_size = p.weights.job_size * f.job_size;
  f.w_partition = p.weights.partition * f.partition;
  f.w_qos = p.weights.qos * f.qos;
  f.penalty = team.penalty;
  f.nice = in.nice;
  double sum = f.w_age + f.w_fairshare + f.w_job_size + f.w_partition + f.w_qos -
               static_cast<double>(in.nice);
  // NaN (from a NaN input) compares false everywhere: it ends up at the minimum.
  if (!(sum >= kMinPriority)) sum = kMinPriority;
  if (sum > kMaxPriority) sum = kMaxPriority;
  f.priority = static_cast<std::uint32_t>(sum);
  return f;
}

}  // namespace gpufair
