// Exponential decay by half-life, the one formula behind usage, penalties and
// the detector's memory. Pure functions of (value, elapsed, half-life): the
// caller owns the clock. Because the factor depends only on elapsed time,
// decaying once by the whole interval equals decaying in many small ticks.
#pragma once

#include "gpufair/time.h"

namespace gpufair {

// 2^(-elapsed / half_life). Half-life <= 0 means "no decay" (factor 1);
// negative elapsed time (a clock that stepped back) clamps to 0 (factor 1).
double decay_factor(Seconds elapsed, Seconds half_life);

inline double decayed(double value, Seconds elapsed, Seconds half_life) {
  return value * decay_factor(elapsed, half_life);
}

// The integral of 2^(-s / half_life) over s in [0, elapsed]: what a rate of 1
// held over the last `elapsed` seconds is worth now, decayed. Equals
// `elapsed` when half_life <= 0 (no decay); 0 for elapsed <= 0.
double decayed_integral(Seconds elapsed, Seconds half_life);

// A quantity that decays lazily: it remembers when it was last brought up to
// date, so it can be read or added to at any time point without a tick.
struct DecayedValue {
  double value = 0;
  TimePoint as_of = 0;

  // The value at time t (t before as_of reads as as_of: never grows back).
  double at(TimePoint t, Seconds half_life) const {
    return decayed(value, elapsed_between(as_of, t), half_life);
  }
  // Bring the value forward to t (no-op when t <= as_of).
  void advance_to(TimePoint t, Seconds half_life) {
    if (t > as_of) {
      value = at(t, half_life);
      as_of = t;
    }
  }
  void add(double amount, TimePoint t, Seconds half_life) {
    advance_to(t, half_life);
    value += amount;
  }
};

}  // namespace gpufair
