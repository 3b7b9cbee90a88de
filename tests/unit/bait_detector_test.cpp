// The detector's rule on single events (engine_test drives whole sequences).
#include "gpufair/bait_detector.h"

#include <gtest/gtest.h>

namespace gpufair {
namespace {

constexpr TimePoint kNow = 1'000'000;

JobRef job(JobId id, TeamId team, int rank, TimePoint submit, TimePoint start = 0) {
  JobRef j;
  j.id = id;
  j.team = team;
  j.rank = rank;
  j.gpus = 8;
  j.submit = submit;
  j.start = start;
  return j;
}

// Other teams' runnable jobs ahead of the preemptor, covering its 8 GPUs,
// waited `s` seconds on average (what QueueView::cost_of_jump returns).
JumpCost ahead(Seconds s) { return JumpCost{8.0 * static_cast<double>(s), s, 1, static_cast<double>(s)}; }
const JumpCost kNobodyAhead{};

struct DetectorCase {
  const char* name;
  JobRef preemptor, victim;
  JumpCost cost;
  RecentCounts counts;
  bool bait;
};

TEST(BaitDetector, Decisions) {
  const BaitConfig c;  // defaults (config.h): the recommended profile
  const DetectorCase cases[] = {
      {"young placeholder displaced while another team waited 2h",
       job(1, 0, 10, kNow - 60), job(2, 0, 0, kNow - 3000, kNow - 300), ahead(7140),
       {1, 2400, 2400}, true},
      {"same, but nobody else waits", job(1, 0, 10, kNow - 60),
       job(2, 0, 0, kNow - 3000, kNow - 300), kNobodyAhead, {1, 2400, 2400}, false},
      {"other team's jobs are behind the preemptor: nothing skipped",
       job(1, 0, 10, kNow - 7200), job(2, 0, 0, kNow - 9000, kNow - 300), kNobodyAhead,
       {1, 2400, 2400}, false},
      {"dilution: many cheap low jobs barely move GPU-second supply",
       job(1, 0, 10, kNow - 60), job(2, 0, 0, kNow - 3000, kNow - 300), ahead(7140),
       // 20 one-GPU 5-minute jobs an hour add 6000 GPU-s an hour, against
       // placeholders holding 8 GPUs all day (230400 GPU-s of 236400)
       {1, 236400, 230400}, true},
      {"long-running victim, first preemption, low supply", job(1, 0, 10, kNow - 60),
       job(2, 0, 0, kNow - 90000, kNow - 86400), ahead(7140), {1, 10 * 691200.0, 691200}, false},
      {"cross-team is never in-team bait", job(1, 0, 10, kNow - 60),
       job(2, 1, 0, kNow - 3000, kNow - 300), ahead(7140), {3, 3, 3}, false},
      {"no rank gap", job(1, 0, 5, kNow - 60), job(2, 0, 5, kNow - 3000, kNow - 300),
       ahead(7140), {3, 3, 3}, false},
  };
  for (const auto& k : cases) {
    const auto e = judge_preemption(c, k.preemptor, k.victim, kNow, k.cost, k.counts);
    EXPECT_EQ(e.bait, k.bait) << k.name << ": " << e.reason;
    EXPECT_FALSE(e.reason.empty()) << k.name;
    EXPECT_EQ(e.bait, judge_preemption_quiet(c, k.preemptor, k.victim, kNow,
                                             k.cost, k.counts).bait)
        << k.name;
  }
}

TEST(BaitDetector, EvidenceValues) {
  BaitConfig c;
  c.young = 1000;
  c.repeat = 4;
  c.skip_norm = 1000;
  c.w_young = 0.4;
  c.w_repeat = c.w_supply = c.w_skip = 0.2;
  c.w_jump = 0.1;
  const JobRef p = job(1, 0, 10, kNow - 100);
  const JobRef v = job(2, 0, 0, kNow - 5000, kNow - 250);
  const auto e = judge_preemption(c, p, v, kNow, ahead(500), {2, 4000, 1000, 40, 10});
  EXPECT_TRUE(e.same_team);
  EXPECT_EQ(e.rank_gap, 10);
  EXPECT_EQ(e.victim_run, 250);
  EXPECT_DOUBLE_EQ(e.young, 0.75);
  EXPECT_DOUBLE_EQ(e.repeat, 0.5);
  EXPECT_DOUBLE_EQ(e.supply, 0.25);
  EXPECT_EQ(e.skipped, 500);  // the jobs ahead waited 500 s on average
  EXPECT_DOUBLE_EQ(e.skip, 0.5);
  EXPECT_DOUBLE_EQ(e.jump, 0.25);  // 10 of 40 started GPUs jumped
  EXPECT_NEAR(e.score, 0.4 * 0.75 + 0.2 * 0.5 + 0.2 * 0.25 + 0.2 * 0.5 + 0.1 * 0.25, 1e-12);
  EXPECT_NE(e.reason.find("young=0.75"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("skipped=0.50 (500s"), std::string::npos) << e.reason;
}

TEST(BaitDetector, EvidenceIsClampedToUnitInterval) {
  BaitConfig c;
  const JobRef p = job(1, 0, 10, kNow);
  const JobRef v = job(2, 0, 0, kNow, kNow + 500);  // "started in the future"
  const auto e = judge_preemption(c, p, v, kNow, ahead(100000), {100, 1, 50});
  for (double x : {e.young, e.repeat, e.supply, e.skip}) {
    EXPECT_GE(x, 0.0);
    EXPECT_LE(x, 1.0);
  }
}

TEST(BaitDetector, JumpIsRelativeToTheTeamsVolume) {
  BaitConfig c;
  c.w_young = c.w_repeat = c.w_supply = c.w_skip = 0;
  c.w_jump = 1;
  const JobRef p = job(1, 0, 10, kNow - 60);
  const JobRef v = job(2, 0, 0, kNow - 3000, kNow - 300);
  RecentCounts big_honest_team{1, 20, 1, 160, 8};  // 8 of 160 started GPUs jumped
  RecentCounts gamer{1, 4, 4, 16, 12};             // 12 of 16
  const auto honest = judge_preemption(c, p, v, kNow, ahead(7140), big_honest_team);
  const auto gaming = judge_preemption(c, p, v, kNow, ahead(7140), gamer);
  EXPECT_DOUBLE_EQ(honest.jump, 0.05);
  EXPECT_DOUBLE_EQ(gaming.jump, 0.75);
  EXPECT_FALSE(honest.bait) << honest.reason;
  EXPECT_TRUE(gaming.bait) << gaming.reason;
  EXPECT_NE(gaming.reason.find("jump=0.75 (12.0 of 16.0"), std::string::npos) << gaming.reason;
  // Part of the default rule (sim/tuning.md measured it helps every figure).
  EXPECT_GT(BaitConfig{}.w_jump, 0.0);
}

TEST(BaitDetector, ThresholdAndWeightsAreConfigDriven) {
  const JobRef p = job(1, 0, 10, kNow - 60);
  const JobRef v = job(2, 0, 0, kNow - 3000, kNow - 300);
  BaitConfig c;
  c.threshold = 0.99;
  EXPECT_FALSE(judge_preemption(c, p, v, kNow, ahead(7140), {1, 1, 1}).bait);
  c.threshold = 0.1;
  c.w_young = c.w_repeat = c.w_supply = 0;
  c.w_skip = 1;
  EXPECT_TRUE(judge_preemption(c, p, v, kNow, ahead(7140), {0, 0, 0}).bait);
}

}  // namespace
}  // namespace gpufair
