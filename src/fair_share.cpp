#include "gpufair/fair_share.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

double job_fair_share(double team_effective, double band, double in_team) {
  if (!(in_team > 0)) in_team = 0;  // NaN too
  if (in_team > 1) in_team = 1;
  if (!(band > 0)) band = 0;
  return std::max(0.0, team_effective - band * (1.0 - in_team));
}

std::vector<double> team_bands(std::span<const double> effective) {
  auto value = [&](std::size_t i) { return std::isfinite(effective[i]) && effective[i] > 0 ? effective[i] : 0.0; };
  std::vector<std::size_t> order(effective.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return value(a) > value(b); });
  std::vector<double> band(effective.size(), 0);
  for (std::size_t k = 0; k < order.size();) {
    std::size_t end = k;  // teams [k, end) share one factor
    while (end < order.size() && value(order[end]) == value(order[k])) ++end;
    const double next_lower = end < order.size() ? value(order[end]) : 0.0;
    for (std::size_t j = k; j < end; ++j) band[order[j]] = 0.5 * (value(order[k]) - next_lower);
    k = end;
  }
  return band;
}

}  // namespace gpufair
