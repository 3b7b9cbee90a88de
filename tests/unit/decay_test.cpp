// Decay must be exact for any tick size (design.md, "Usage ledger").
#include "gpufair/decay.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace gpufair {
namespace {

constexpr Seconds kDay = 86400;

TEST(Decay, OneSecondTicksOverThirtyDaysEqualOneStep) {
  for (Seconds half_life : {Seconds{3600}, kDay, 7 * kDay, 30 * kDay}) {
    const Seconds span = 30 * kDay;
    double ticked = 12345.678;
    for (Seconds t = 0; t < span; ++t) ticked = decayed(ticked, 1, half_life);
    const double stepped = decayed(12345.678, span, half_life);
    if (stepped > 1e-300) {
      EXPECT_NEAR(ticked / stepped, 1.0, 1e-9) << "half_life=" << half_life;
    } else {
      EXPECT_LT(ticked, 1e-280);  // both underflow towards zero
    }
  }
}

TEST(Decay, NHalfLivesMoveOneMinusHalfToTheN) {
  const Seconds half_life = 7 * kDay;
  for (int n = 0; n <= 12; ++n) {
    const double v = decayed(1.0, n * half_life, half_life);
    EXPECT_NEAR(1.0 - v, 1.0 - std::pow(0.5, n), 1e-15) << n;
    EXPECT_GE(v, 0.0);  // never overshoots past zero
  }
}

TEST(Decay, TwoStepsEqualOneDoubleStep) {
  for (Seconds half_life : {Seconds{1}, Seconds{97}, kDay, 14 * kDay}) {
    for (Seconds delta : {Seconds{1}, Seconds{300}, Seconds{3601}, 5 * kDay}) {
      const double once = decayed(1000.0, 2 * delta, half_life);
      const double twice = decayed(decayed(1000.0, delta, half_life), delta, half_life);
      EXPECT_NEAR(once, twice, 1e-12 * 1000) << half_life << " " << delta;
    }
  }
}

TEST(Decay, HalfLifeZeroMeansNoDecay) {
  EXPECT_EQ(decay_factor(30 * kDay, 0), 1.0);
  EXPECT_EQ(decay_factor(30 * kDay, -5), 1.0);
  EXPECT_EQ(decayed(42.0, 1'000'000'000, 0), 42.0);
}

TEST(Decay, NegativeElapsedClampsToZero) {
  EXPECT_EQ(decay_factor(-100, kDay), 1.0);
  EXPECT_EQ(decayed(7.0, -1, 1), 7.0);
}

TEST(Decay, FactorIsInUnitInterval) {
  for (Seconds dt : {Seconds{0}, Seconds{1}, kDay, 3650 * kDay}) {
    const double f = decay_factor(dt, 1);
    EXPECT_GE(f, 0.0);
    EXPECT_LE(f, 1.0);
  }
}

TEST(DecayedValue, LazyDecayAndAdd) {
  DecayedValue v;
  v.add(8, 1000, 100);
  EXPECT_DOUBLE_EQ(v.at(1100, 100), 4.0);
  EXPECT_DOUBLE_EQ(v.at(1300, 100), 1.0);
  EXPECT_DOUBLE_EQ(v.at(900, 100), 8.0);  // reading the past never grows it back
  v.add(1, 1100, 100);
  EXPECT_DOUBLE_EQ(v.value, 5.0);
  EXPECT_EQ(v.as_of, 1100);
  v.advance_to(1000, 100);  // backwards: no-op
  EXPECT_EQ(v.as_of, 1100);
  EXPECT_DOUBLE_EQ(v.value, 5.0);
}

}  // namespace
}  // namespace gpufair

namespace gpufair {
namespace {

// decayed_integral against a fine Riemann sum of 1-second ticks decayed to
// the end, and its closed-form limits.
TEST(DecayedIntegral, MatchesTickSumAndLimits) {
  const Seconds h = 3600;
  for (Seconds e : {Seconds{1}, Seconds{60}, Seconds{3600}, Seconds{86400}}) {
    double sum = 0;
    for (Seconds s = 0; s < e; ++s) sum += decayed(1.0, e - s - 1, h) * 0.5 + decayed(1.0, e - s, h) * 0.5;
    EXPECT_NEAR(decayed_integral(e, h), sum, 1e-6 * static_cast<double>(e)) << e;
  }
  EXPECT_DOUBLE_EQ(decayed_integral(0, h), 0);
  EXPECT_DOUBLE_EQ(decayed_integral(-5, h), 0);
  EXPECT_DOUBLE_EQ(decayed_integral(500, 0), 500);
  // One half-life: h/ln2 * (1/2).
  EXPECT_NEAR(decayed_integral(h, h), 0.5 * 3600 / std::numbers::ln2, 1e-9);
  // Splitting is exact: [0,a] decayed by b, plus [0,b].
  EXPECT_NEAR(decayed_integral(5000, h), decayed(decayed_integral(3000, h), 2000, h) + decayed_integral(2000, h),
              1e-9);
}

}  // namespace
}  // namespace gpufair
