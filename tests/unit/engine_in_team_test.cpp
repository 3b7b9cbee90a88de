// The engine and fair share inside a team (design.md, "Fair share inside a
// team"): the teams are ranked as before, their users and sub-accounts
// inside them by Fair Tree or classic fair share, from their own usage.
#include "gpufair/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpufair/decay.h"
#include "gpufair/state.h"
#include "engine_test_util.h"

namespace gpufair {
namespace {

constexpr TimePoint kT0 = 1'700'000'000;
constexpr Seconds kHour = 3600;

using testing::config_from;

Config with_algo(InTeamAlgo algo) {
  Config c = config_from("half_life=1d,calc_period=60");
  c.in_team = algo;
  return c;
}

// Team a: users heavy and light (account teama), and sub-account teama/nlp
// with user nlp1; team b: user b1. heavy runs 8 GPUs and nlp1 2 GPUs for 6
// hours, b1 4 GPUs (so a is the heavier team); light runs nothing.
struct Cluster {
  Engine e;
  TeamId a, b;
  AssocId heavy, light, nlp1, b1, nlp;
  explicit Cluster(Config c) : e(std::move(c)) {
    a = e.team_for_account("teama");
    b = e.team_for_account("teamb");
    heavy = e.assoc_for("teama", "heavy");
    light = e.assoc_for("teama", "light");
    nlp1 = e.assoc_for("teama/nlp", "nlp1");
    nlp = e.assoc_for("teama/nlp", "");
    b1 = e.assoc_for("teamb", "b1");
  }
  JobRef running(JobId id, TeamId team, AssocId assoc, double gpus) {
    JobRef j = testing::make_job(id, team, 0, gpus, kT0, kT0);
    j.assoc = assoc;
    return j;
  }
  void run(Seconds how_long, bool with_assocs = true) {
    const std::vector<JobRef> jobs = {running(1, a, with_assocs ? heavy : -1, 8),
                                      running(2, a, with_assocs ? nlp1 : -1, 2),
                                      running(3, b, with_assocs ? b1 : -1, 4)};
    for (TimePoint t = kT0; t <= kT0 + how_long; t += 60) {
      e.begin_cycle(t);
      for (const auto& j : jobs) e.observe_running(j, t);
      e.end_cycle(t);
    }
  }
  PriorityFactors pending(TeamId team, AssocId assoc, TimePoint now) const {
    PriorityInput in;
    in.team = team;
    in.assoc = assoc;
    return e.priority(in, now);
  }
};

constexpr TimePoint kEnd = kT0 + 6 * kHour;

TEST(EngineInTeam, UsageIsChargedToTheUserAndItsAccountsUpToTheTeam) {
  Cluster c(with_algo(InTeamAlgo::kFairTree));
  c.run(6 * kHour);
  const double eight = 8 * decayed_integral(6 * kHour, 86400);
  const double two = 2 * decayed_integral(6 * kHour, 86400);
  EXPECT_NEAR(c.e.assoc_report(c.heavy, kEnd).usage_gpu_s, eight, 1e-6 * eight);
  EXPECT_NEAR(c.e.assoc_report(c.nlp1, kEnd).usage_gpu_s, two, 1e-6 * two);
  EXPECT_NEAR(c.e.assoc_report(c.nlp, kEnd).usage_gpu_s, two, 1e-6 * two);  // its sub-account: its users'
  EXPECT_EQ(c.e.assoc_report(c.light, kEnd).usage_gpu_s, 0.0);
  EXPECT_DOUBLE_EQ(c.e.assoc_report(c.heavy, kEnd).raw_usage_gpu_s, 8.0 * 6 * kHour);
  // The team's own account reports the team's ledger.
  const AssocId root = c.e.assoc_for("teama", "");
  EXPECT_EQ(c.e.assoc_report(root, kEnd).parent, -1);
  EXPECT_DOUBLE_EQ(c.e.assoc_report(root, kEnd).usage_gpu_s, c.e.team_report(c.a, kEnd).usage_gpu_s);
}

// (a) The order between teams is today's: the same run without any
// association gives the same team factors, and every job of the lighter
// team b outranks every job of team a. (b) Inside team a, Fair Tree: the
// user who used nothing ranks first and gets the team's own factor.
TEST(EngineInTeam, FairTreeInsideTheTeamTeamOrderUnchanged) {
  Cluster with(with_algo(InTeamAlgo::kFairTree));
  Cluster without(with_algo(InTeamAlgo::kFairTree));
  with.run(6 * kHour);
  without.run(6 * kHour, false);
  for (TeamId t : {with.a, with.b})
    EXPECT_DOUBLE_EQ(with.e.team_report(t, kEnd).effective_fairshare,
                     without.e.team_report(t, kEnd).effective_fairshare);
  const double team_a = with.e.team_report(with.a, kEnd).effective_fairshare;
  const double team_b = with.e.team_report(with.b, kEnd).effective_fairshare;
  ASSERT_GT(team_b, team_a);

  const PriorityFactors light = with.pending(with.a, with.light, kEnd);
  const PriorityFactors heavy = with.pending(with.a, with.heavy, kEnd);
  const PriorityFactors nlp1 = with.pending(with.a, with.nlp1, kEnd);
  const PriorityFactors b1 = with.pending(with.b, with.b1, kEnd);
  // Fair Tree in team a: users light (no usage, LF inf), heavy; account
  // nlp (S 1/3 each; LF (1/3) / (2/10) > heavy's (1/3) / (8/10)): light
  // 3/3, nlp1 2/3, heavy 1/3.
  EXPECT_DOUBLE_EQ(light.in_team, 1.0);
  EXPECT_NEAR(nlp1.in_team, 2.0 / 3, 1e-12);
  EXPECT_NEAR(heavy.in_team, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(light.fairshare, team_a);
  EXPECT_GT(light.fairshare, nlp1.fairshare);
  EXPECT_GT(nlp1.fairshare, heavy.fairshare);
  // Team b's only user is its best: the team's factor. Every job of b above every job of a.
  EXPECT_DOUBLE_EQ(b1.fairshare, team_b);
  EXPECT_GT(heavy.fairshare, 0.0);
  EXPECT_GT(b1.fairshare, light.fairshare);
  // A job without an association, or of an association of another team,
  // gets its team's factor.
  EXPECT_DOUBLE_EQ(with.pending(with.a, -1, kEnd).fairshare, team_a);
  EXPECT_DOUBLE_EQ(with.pending(with.a, with.b1, kEnd).fairshare, team_a);
  // The reports say what the jobs get.
  EXPECT_DOUBLE_EQ(with.e.assoc_report(with.heavy, kEnd).fairshare, heavy.fairshare);
  EXPECT_NEAR(with.e.assoc_report(with.heavy, kEnd).level_fs, (1.0 / 3) / (8.0 / 10), 1e-9);
  // Without associations nothing changes inside a team either.
  EXPECT_DOUBLE_EQ(without.pending(without.a, -1, kEnd).fairshare, team_a);
}

TEST(EngineInTeam, ClassicInsideTheTeam) {
  Cluster c(with_algo(InTeamAlgo::kClassic));
  c.run(6 * kHour);
  // Team a's tree: heavy (S 1/3, U .8), light (S 1/3, U 0), nlp (S 1/3,
  // U .2) with nlp1 (S 1/3 x 1, UE .2 + (.2 - .2) x 1 = .2).
  const double heavy = c.pending(c.a, c.heavy, kEnd).in_team;
  const double light = c.pending(c.a, c.light, kEnd).in_team;
  const double nlp1 = c.pending(c.a, c.nlp1, kEnd).in_team;
  EXPECT_NEAR(heavy, std::exp2(-0.8 / (1.0 / 3)), 1e-9);
  EXPECT_DOUBLE_EQ(light, 1.0);
  EXPECT_NEAR(nlp1, std::exp2(-0.2 / (1.0 / 3)), 1e-9);
  const double team_a = c.e.team_report(c.a, kEnd).effective_fairshare;
  EXPECT_DOUBLE_EQ(c.pending(c.a, c.light, kEnd).fairshare, team_a);
  EXPECT_LT(c.pending(c.a, c.heavy, kEnd).fairshare, c.pending(c.a, c.nlp1, kEnd).fairshare);
  // Still below the lightest job of team b.
  EXPECT_GT(c.pending(c.b, c.b1, kEnd).fairshare, c.pending(c.a, c.light, kEnd).fairshare);
}

TEST(EngineInTeam, SharesWeighUsersInsideTheTeam) {
  // heavy with 8 times the shares of nlp: S .8 vs .1 (light .1) -> LF 1 > nlp's .5.
  Cluster c(with_algo(InTeamAlgo::kFairTree));
  c.e.set_assoc_shares(c.heavy, 8);
  c.run(6 * kHour);
  EXPECT_GT(c.pending(c.a, c.heavy, kEnd).in_team, c.pending(c.a, c.nlp1, kEnd).in_team);
  EXPECT_THROW(c.e.set_assoc_shares(c.heavy, std::nan("")), std::invalid_argument);
  EXPECT_THROW(c.e.set_assoc_shares(99, 1), std::invalid_argument);
}

TEST(EngineInTeam, AssociationsTheHostNoLongerNamesAreNotRanked) {
  Cluster c(with_algo(InTeamAlgo::kFairTree));
  c.e.assocs_refreshed();  // the host named them all (the constructor)
  c.run(6 * kHour);
  EXPECT_NEAR(c.pending(c.a, c.heavy, kEnd).in_team, 1.0 / 3, 1e-12);
  // light is deleted: the host names every other association and refreshes.
  for (const char* u : {"heavy"}) c.e.assoc_for("teama", u);
  c.e.assoc_for("teama", "");
  c.e.assoc_for("teama/nlp", "nlp1");
  c.e.assoc_for("teama/nlp", "");
  c.e.assoc_for("teamb", "b1");
  c.e.assocs_refreshed();
  c.e.begin_cycle(kEnd + 60);
  c.e.end_cycle(kEnd + 60);
  EXPECT_FALSE(c.e.assoc_report(c.light, kEnd + 60).live);
  EXPECT_TRUE(c.e.assoc_report(c.heavy, kEnd + 60).live);
  // Two users left in team a: nlp1 2/2, heavy 1/2.
  EXPECT_DOUBLE_EQ(c.pending(c.a, c.heavy, kEnd + 60).in_team, 0.5);
  EXPECT_DOUBLE_EQ(c.pending(c.a, c.nlp1, kEnd + 60).in_team, 1.0);
}

TEST(EngineInTeam, ATeamLevelChangeRelinksTheAssociations) {
  Cluster c(with_algo(InTeamAlgo::kFairTree));
  c.run(kHour);
  Config two = with_algo(InTeamAlgo::kFairTree);
  two.team_level = 2;
  c.e.reconfigure(two);
  // teama/nlp is a team of its own now, nlp1 its only user; heavy stays in teama.
  const TeamId nlp_team = c.e.team_for_account("teama/nlp");
  EXPECT_EQ(c.e.assoc_report(c.nlp1, kEnd).team, nlp_team);
  EXPECT_EQ(c.e.assoc_report(c.nlp, kEnd).parent, -1);
  EXPECT_EQ(c.e.assoc_report(c.heavy, kEnd).team, c.a);
}

TEST(EngineInTeam, ResetsAndStateKeepTheAssociations) {
  Cluster c(with_algo(InTeamAlgo::kFairTree));
  c.run(kHour);
  const double heavy = c.e.assoc_report(c.heavy, kT0 + kHour).usage_gpu_s;
  ASSERT_GT(heavy, 0);
  // Saved and loaded into a fresh engine: usage, shares and the running
  // jobs' associations come back (the ids may differ).
  c.e.set_assoc_shares(c.light, 3);
  Engine fresh(with_algo(InTeamAlgo::kFairTree));
  ASSERT_TRUE(fresh.load_state(c.e.save_state()).ok());
  const AssocId h = fresh.assoc_for("teama", "heavy");
  EXPECT_DOUBLE_EQ(fresh.assoc_report(h, kT0 + kHour).usage_gpu_s, heavy);
  EXPECT_DOUBLE_EQ(fresh.assoc_report(fresh.assoc_for("teama", "light"), kT0 + kHour).shares, 3);
  EXPECT_EQ(fresh.save_state(), c.e.save_state());
  // The running job 1 goes on being charged to heavy.
  fresh.job_ended(1, kT0 + 2 * kHour);
  EXPECT_DOUBLE_EQ(fresh.assoc_report(h, kT0 + 2 * kHour).raw_usage_gpu_s, 8.0 * 2 * kHour);
  // A reset zeroes every association with the teams.
  Config now = with_algo(InTeamAlgo::kFairTree);
  now.usage_reset = ResetPeriod::kNow;
  fresh.reconfigure(now);
  fresh.begin_cycle(kT0 + 3 * kHour);
  fresh.end_cycle(kT0 + 3 * kHour);
  EXPECT_EQ(fresh.assoc_report(h, kT0 + 3 * kHour).usage_gpu_s, 0.0);
  EXPECT_EQ(fresh.assoc_report(h, kT0 + 3 * kHour).raw_usage_gpu_s, 0.0);
}

TEST(EngineInTeam, CorruptAssociationsInAStateAreRejected) {
  Cluster c(with_algo(InTeamAlgo::kFairTree));
  c.run(kHour);
  std::vector<std::uint8_t> good = c.e.save_state();
  ASSERT_EQ(good[8], kStateFormatVersion);
  // An account path written in upper case is not what the engine writes.
  std::vector<std::uint8_t> bad = good;
  const std::string needle = "teama/nlp";
  auto it = std::search(bad.begin() + kStateHeaderSize, bad.end(), needle.begin(), needle.end());
  ASSERT_NE(it, bad.end());
  *it = 'T';
  const std::vector<std::uint8_t> payload(bad.begin() + kStateHeaderSize, bad.end());
  const std::vector<std::uint8_t> reframed = frame_state(payload);
  Engine fresh(with_algo(InTeamAlgo::kFairTree));
  const auto r = fresh.load_state(reframed);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not normalised"), std::string::npos) << r.error().message;
  EXPECT_EQ(fresh.assoc_count(), 0);
}

TEST(EngineInTeam, PathsAreNormalisedAndBounded) {
  Engine e(with_algo(InTeamAlgo::kFairTree));
  EXPECT_EQ(e.assoc_for("root/TeamA//nlp", "u"), e.assoc_for("teama/nlp", "u"));
  EXPECT_EQ(e.assoc_for("", "u"), -1);
  std::string deep = "a";
  for (int i = 0; i < 100; ++i) deep += "/a";
  EXPECT_EQ(e.assoc_for(deep, "u"), -1);
}

}  // namespace
}  // namespace gpufair
