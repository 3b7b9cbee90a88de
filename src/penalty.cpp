#include "gpufair/penalty.h"

#include <algorithm>

namespace gpufair {

double skip_charge_gpu_s(const PenaltyConfig& config, double preemptor_gpus,
                         Seconds skipped) {
  if (skipped <= 0 || !(preemptor_gpus > 0)) return 0.0;
  return config.skip_charge * preemptor_gpus * static_cast<double>(skipped);
}

double penalty_after_bait(const PenaltyConfig& config, double current,
                          double score) {
  const double added = config.per_bait * std::max(0.0, score);
  return std::min(config.max, std::max(0.0, current) + added);
}

}  // namespace gpufair
