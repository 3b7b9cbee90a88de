// Priority composition (design.md, "Priority"), as priority/multifactor's
// _get_priority_internal:
//   prio = w_age*age + w_assoc*assoc + w_fs*F + w_js*size + w_part*part
//          + w_qos*qos + tres + site - nice
// clamped to [1, 0xFFFFFFFE]. Inline: it is the per-job hot path.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "gpufair/config.h"
#include "gpufair/fair_share.h"
#include "gpufair/job.h"
#include "gpufair/time.h"

namespace gpufair {

// What every job's priority reads: computed once per cycle.
struct TeamFactors {
  double fairshare = 1;  // classic factor
  double effective = 1;  // after the bait penalty
  double penalty = 0;
  double band = 0;       // how far inside the team a job's factor may fall (team_bands)
};

struct PriorityParams {
  Weights weights;
  Seconds max_age = 7 * 86400;
  double cluster_gpus = 0;
  bool favor_small = false;
  bool size_relative = false;  // SMALL_RELATIVE_TO_TIME
  RawFactors raw;              // NO_NORMAL_*
};

inline constexpr std::uint32_t kMinPriority = 1;            // 0 means "held"
inline constexpr std::uint32_t kMaxPriority = 0xFFFFFFFEu;  // Slurm's top

// A normalised factor (value / largest) lies in [0,1]; with NO_NORMAL_* the
// raw value is used as it is (never below 0). NaN gives 0.
inline double pick_factor(double norm, double raw, bool use_raw) {
  const double v = use_raw ? raw : norm;
  if (!(v > 0)) return 0.0;
  return use_raw ? v : std::min(1.0, v);
}

// Job size in GPUs (multifactor counts nodes and CPUs): the share of the
// cluster's GPUs the job asks for, or with size_relative that share per
// minute of its time limit (multifactor's SMALL_RELATIVE_TO_TIME: a limit
// <= 0 counts as one minute); 1 - that with favor_small; in [0,1]. Unknown
// cluster size: no size (favor_small: 1).
inline double job_size_factor(const PriorityInput& in, const PriorityParams& p) {
  double size = 0;
  if (p.cluster_gpus > 0 && in.gpus > 0) {
    size = in.gpus / p.cluster_gpus;
    if (p.size_relative) size /= in.time_limit_min > 0 ? in.time_limit_min : 1.0;
    size = std::min(1.0, size);
  }
  return p.favor_small ? 1.0 - size : size;
}

// PriorityWeightTRES (multifactor's _get_tres_factors and
// _get_tres_prio_weighted): for each TRES i, the job's count (allocated,
// else requested) over the partition's total of it -- 0 when either is 0 --
// or, with raw (NO_NORMAL_TRES), the count itself; times weights[i]. Returns
// the sum; each (may be null) receives the n weighted values. Entries past
// the end of weights weigh 0.
inline double tres_term(std::span<const double> weights, const double* count,
                        const double* total, std::size_t n, bool raw, double* each) {
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    double f = 0;
    if (i < weights.size() && count && count[i] > 0) {
      if (raw) f = count[i];
      else if (total && total[i] > 0) f = count[i] / total[i];
    }
    const double w = (i < weights.size() && f != 0) ? f * weights[i] : 0.0;
    if (each) each[i] = w;
    sum += w;
  }
  return sum;
}

// in_team: the factor of the job's association inside its team (1 = the
// team's best, or none); F = job_fair_share(team, band, in_team).
inline PriorityFactors compute_priority(const PriorityInput& in, const TeamFactors& team,
                                        double in_team, const PriorityParams& p, TimePoint now) {
  PriorityFactors f;
  const Seconds waited = in.eligible > 0 ? elapsed_between(in.eligible, now) : 0;
  f.age = (p.max_age > 0 && waited > 0)
              ? std::min(1.0, static_cast<double>(waited) / static_cast<double>(p.max_age))
              : 0.0;
  f.team_fairshare = team.effective;
  f.in_team = in_team;
  f.fairshare = job_fair_share(team.effective, team.band, in_team);
  f.job_size = job_size_factor(in, p);
  f.partition = pick_factor(in.partition_norm, in.partition_raw, p.raw.partition);
  f.qos = pick_factor(in.qos_norm, in.qos_raw, p.raw.qos);
  f.assoc = pick_factor(in.assoc_norm, in.assoc_raw, p.raw.assoc);
  f.w_age = p.weights.age * f.age;
  f.w_fairshare = p.weights.fairshare * f.fairshare;
  f.w_job_size = p.weights.job_size * f.job_size;
  f.w_partition = p.weights.partition * f.partition;
  f.w_qos = p.weights.qos * f.qos;
  f.w_assoc = p.weights.assoc * f.assoc;
  f.w_tres = in.tres;
  f.penalty = team.penalty;
  f.site = in.site;
  f.nice = in.nice;
  double sum = f.w_age + f.w_assoc + f.w_fairshare + f.w_job_size + f.w_partition + f.w_qos +
               f.w_tres + static_cast<double>(in.site) - static_cast<double>(in.nice);
  // NaN (from a NaN input) compares false everywhere: it ends up at the minimum.
  if (!(sum >= kMinPriority)) sum = kMinPriority;
  if (sum > kMaxPriority) sum = kMaxPriority;
  f.priority = static_cast<std::uint32_t>(sum);
  return f;
}

}  // namespace gpufair
