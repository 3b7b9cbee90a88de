#include "gpufair/decay.h"

#include <cmath>
#include <numbers>

namespace gpufair {

double decay_factor(Seconds elapsed, Seconds half_life) {
  if (half_life <= 0 || elapsed <= 0) return 1.0;
  return std::exp2(-static_cast<double>(elapsed) / static_cast<double>(half_life));
}

double decayed_integral(Seconds elapsed, Seconds half_life) {
  if (elapsed <= 0) return 0;
  const double e = static_cast<double>(elapsed);
  if (half_life <= 0) return e;
  const double h = static_cast<double>(half_life);
  // h/ln2 * (1 - 2^(-e/h)); expm1 keeps precision when e << h.
  return -h / std::numbers::ln2 * std::expm1(-e / h * std::numbers::ln2);
}

}  // namespace gpufair
