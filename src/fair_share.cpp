#include "gpufair/fair_share.h"

#include <cmath>

namespace gpufair {

double fair_share_factor(double usage, double usage_total, double shares,
                         double shares_total) {
  if (!(shares > 0) || !(shares_total > 0)) return 0.0;
  if (!(usage_total > 0) || !(usage > 0)) return 1.0;
  const double usage_norm = usage / usage_total;
  const double shares_norm = shares / shares_total;
  const double f = std::exp2(-usage_norm / shares_norm);
  return std::isfinite(f) ? f : 0.0;
}

double effective_fair_share(double fair_share, double penalty) {
  if (!(penalty > 0)) return fair_share;
  return fair_share * std::exp2(-penalty);
}

}  // namespace gpufair
