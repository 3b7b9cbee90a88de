// What a usage ledger keeps (design.md, "Usage ledger"): a team's, and each
// association's inside a team. The engine charges and decays every ledger
// with the same rules (Engine::Impl::charge, advance_ledger and the clock
// steps); these are the operations they apply, the same for both.
#pragma once

#include <algorithm>

namespace gpufair {

// One interval a job ran, as the ledgers count it (worked out once by
// Engine::Impl::charge, added to the team's and to each association's).
struct UsageCharge {
  double worth = 0, raw = 0;            // decayed worth as of the ledger's time; GPU-seconds
  double far_worth = 0, far_raw = 0;    // the part more than one calc_period past the last cycle
  double leap_worth = 0, leap_raw = 0;  // the part the latest leap put there
};

struct UsageLedger {
  double usage = 0;      // decayed, weighted GPU-seconds, worth as of the last cycle
  double raw_usage = 0;  // undecayed since the last reset
  // The part of usage and raw_usage the latest leap put there (undo_leap
  // takes it back)...
  double leap_usage = 0, leap_raw = 0;
  // ...and what was charged since the last cycle for time more than one
  // calc_period after it: inside the next cycle's gap, and so the leap's,
  // if that gap is one.
  double far_usage = 0, far_raw = 0;

  void add(const UsageCharge& c) {
    usage += c.worth;
    raw_usage += c.raw;
    far_usage += c.far_worth;
    far_raw += c.far_raw;
    leap_usage += c.leap_worth;
    leap_raw += c.leap_raw;
  }
  // A cycle `dt` after the last: decay by f = 2^(-dt / half_life). When dt
  // is a leap, first its part: the worth now less the worth had the gap
  // lasted `assumed` (decay f_assumed), in which the far part would not
  // have run at all.
  void begin_leap(double f, double f_assumed) {
    leap_usage = usage * f - (usage - far_usage) * f_assumed;
    leap_raw = far_raw;
  }
  void decay(double f, bool decay_leap_part) {
    if (decay_leap_part) leap_usage *= f;
    usage *= f;
    forget_far();
  }
  // The clock came back to before the leap's end.
  void undo_leap() {
    usage = std::max(0.0, usage - leap_usage);
    raw_usage = std::max(0.0, raw_usage - leap_raw);
    forget_leap();
  }
  void forget_leap() { leap_usage = leap_raw = 0; }
  void forget_far() { far_usage = far_raw = 0; }
  void reset() { *this = UsageLedger{}; }
};

}  // namespace gpufair
