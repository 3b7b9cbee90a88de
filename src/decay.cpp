#include "gpufair/decay.h"

#include <cmath>

namespace gpufair {

double decay_factor(Seconds elapsed, Seconds half_life) {
  if (half_life <= 0 || elapsed <= 0) return 1.0;
  return std::exp2(-static_cast<double>(elapsed) / static_cast<double>(half_life));
}

}  // namespace gpufair
