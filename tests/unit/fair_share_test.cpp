#include "gpufair/fair_share.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpufair {
namespace {

TEST(FairShare, ClassicFormula) {
  // Used exactly its share: 2^-1.
  EXPECT_DOUBLE_EQ(fair_share_factor(50, 100, 1, 2), 0.5);
  // Used twice its share: 2^-2.
  EXPECT_DOUBLE_EQ(fair_share_factor(100, 100, 1, 2), 0.25);
  EXPECT_DOUBLE_EQ(fair_share_factor(25, 100, 1, 2), std::exp2(-0.5));
}

TEST(FairShare, MoreUsageRanksLower) {
  double previous = 2.0;
  for (double usage : {0.0, 1.0, 10.0, 50.0, 99.0, 100.0}) {
    const double f = fair_share_factor(usage, 100, 1, 4);
    EXPECT_LT(f, previous) << usage;
    EXPECT_GE(f, 0.0);
    EXPECT_LE(f, 1.0);
    previous = f;
  }
}

TEST(FairShare, MoreSharesRankHigherAtEqualUsage) {
  EXPECT_GT(fair_share_factor(30, 100, 3, 4), fair_share_factor(30, 100, 1, 4));
}

struct EdgeCase {
  double usage, usage_total, shares, shares_total, expected;
};

TEST(FairShare, EdgeCasesAreExplicitNeverNaN) {
  const EdgeCase cases[] = {
      {0, 0, 1, 3, 1.0},     // no usage anywhere
      {0, 100, 1, 3, 1.0},   // this team used nothing
      {50, 100, 0, 3, 0.0},  // zero shares
      {0, 0, 0, 3, 0.0},     // zero shares, no usage: still 0
      {0, 0, 0, 0, 0.0},     // no shares anywhere
      {50, 100, 1, 0, 0.0},
      {1e300, 1e300, 1e-300, 1, 0.0},  // underflows to 0, not NaN
  };
  for (const auto& c : cases) {
    const double f = fair_share_factor(c.usage, c.usage_total, c.shares, c.shares_total);
    EXPECT_FALSE(std::isnan(f));
    EXPECT_DOUBLE_EQ(f, c.expected) << c.usage << "/" << c.usage_total << " " << c.shares << "/"
                                    << c.shares_total;
  }
}

TEST(FairShare, PenaltyHalvesPerUnit) {
  EXPECT_DOUBLE_EQ(effective_fair_share(0.8, 0), 0.8);
  EXPECT_DOUBLE_EQ(effective_fair_share(0.8, 1), 0.4);
  EXPECT_DOUBLE_EQ(effective_fair_share(0.8, 3), 0.1);
  EXPECT_DOUBLE_EQ(effective_fair_share(0.8, -1), 0.8);  // never boosts
}

}  // namespace
}  // namespace gpufair
