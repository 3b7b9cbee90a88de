#include "gpufair/fair_share.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

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

// ---- A job's factor: the team's, then its place inside the team -------------

TEST(JobFairShare, TheTeamsBestAssociationGetsTheTeamsFactor) {
  EXPECT_DOUBLE_EQ(job_fair_share(0.6, 0.1, 1.0), 0.6);
  EXPECT_DOUBLE_EQ(job_fair_share(0.6, 0.1, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(job_fair_share(0.6, 0.1, 0.5), 0.55);
  EXPECT_DOUBLE_EQ(job_fair_share(0.6, 0.1, std::nan("")), 0.5);  // unknown place: the band's floor
  EXPECT_DOUBLE_EQ(job_fair_share(0.6, 0.1, 7.0), 0.6);           // clamped
  EXPECT_DOUBLE_EQ(job_fair_share(0.05, 0.1, 0.0), 0.0);          // never below 0
}

struct BandCase {
  const char* name;
  std::vector<double> effective, band;
};

TEST(JobFairShare, BandsAreHalfTheGapToTheNextLowerTeam) {
  const BandCase cases[] = {
      {"one team: half its factor", {0.8}, {0.4}},
      {"three teams", {0.5, 0.9, 0.1}, {0.2, 0.2, 0.05}},
      {"equal factors share a band", {0.5, 0.5, 0.3}, {0.1, 0.1, 0.15}},
      {"a team at 0 has no band", {0.0, 0.4}, {0.0, 0.2}},
      {"NaN counts as 0", {std::nan(""), 0.4}, {0.0, 0.2}},
      {"no teams", {}, {}},
  };
  for (const auto& c : cases) {
    const std::vector<double> got = team_bands(c.effective);
    ASSERT_EQ(got.size(), c.band.size()) << c.name;
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_DOUBLE_EQ(got[i], c.band[i]) << c.name << " team " << i;
  }
}

// (a) every job of a team with a higher factor outranks every job of a team
// with a lower one, whatever their places inside; (b) inside a team, the
// higher place has the higher job factor.
TEST(JobFairShare, OrderBetweenTeamsFirstThenInsideTheTeam) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int round = 0; round < 500; ++round) {
    std::vector<double> eff(2 + rng() % 6);
    for (double& e : eff) e = rng() % 4 == 0 ? eff[0] : u(rng);  // some ties
    const std::vector<double> band = team_bands(eff);
    for (std::size_t a = 0; a < eff.size(); ++a)
      for (std::size_t b = 0; b < eff.size(); ++b) {
        const double fa = u(rng), fb = u(rng);
        const double ja = job_fair_share(eff[a], band[a], fa), jb = job_fair_share(eff[b], band[b], fb);
        if (eff[a] > eff[b]) {
          EXPECT_GT(ja, jb) << "teams " << eff[a] << " > " << eff[b];
        }
        if (a == b && fa > fb && band[a] > 0) {
          EXPECT_GT(ja, jb) << "inside team " << eff[a];
        }
      }
  }
}

}  // namespace
}  // namespace gpufair
