// Time for the policy core: plain integer seconds, and a clock that is
// injected, never read inside the math (tests and the simulator drive it).
#pragma once

#include <cstdint>

namespace gpufair {

using Seconds = std::int64_t;    // a duration
using TimePoint = std::int64_t;  // seconds since the epoch (or trace start)

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

// to - from, saturated at the int64 limits: times can come from a corrupt
// state file or a confused host, and signed overflow is undefined behaviour.
inline Seconds elapsed_between(TimePoint from, TimePoint to) {
  Seconds d;
  if (__builtin_sub_overflow(to, from, &d)) {
    return to > from ? INT64_MAX : INT64_MIN;
  }
  return d;
}

// Wall clock, for the plugins' cycle thread only.
class SystemClock final : public Clock {
 public:
  TimePoint now() const override;
};

// A clock that moves only when told to: unit tests and the simulator.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimePoint start = 0) : now_(start) {}
  TimePoint now() const override { return now_; }
  void advance(Seconds dt) { now_ += dt; }
  void set(TimePoint t) { now_ = t; }

 private:
  TimePoint now_;
};

}  // namespace gpufair
