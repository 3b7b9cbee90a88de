#include "gpufair/penalty.h"

#include <gtest/gtest.h>

namespace gpufair {
namespace {

TEST(Penalty, SkipChargeIsGpusTimesSkippedTimesFactor) {
  PenaltyConfig c;
  c.skip_charge = 0.5;
  EXPECT_DOUBLE_EQ(skip_charge_gpu_s(c, 8, 3600), 0.5 * 8 * 3600);
  EXPECT_DOUBLE_EQ(skip_charge_gpu_s(c, 8, 0), 0);
  EXPECT_DOUBLE_EQ(skip_charge_gpu_s(c, 8, -5), 0);
  EXPECT_DOUBLE_EQ(skip_charge_gpu_s(c, 0, 3600), 0);
}

TEST(Penalty, GrowsByScoreAndIsCapped) {
  PenaltyConfig c;
  c.per_bait = 2;
  c.max = 5;
  double p = 0;
  p = penalty_after_bait(c, p, 0.75);
  EXPECT_DOUBLE_EQ(p, 1.5);
  p = penalty_after_bait(c, p, 1.0);
  EXPECT_DOUBLE_EQ(p, 3.5);
  p = penalty_after_bait(c, p, 1.0);
  EXPECT_DOUBLE_EQ(p, 5.0);
  p = penalty_after_bait(c, p, 1.0);
  EXPECT_DOUBLE_EQ(p, 5.0);
  EXPECT_DOUBLE_EQ(penalty_after_bait(c, 1.0, -3), 1.0);  // a negative score never lowers it
}

}  // namespace
}  // namespace gpufair
