// The scheduling model on tiny hand-checked traces: queue order, in-team
// preemption and its limits, requeue vs cancel, backfill, censoring, and that
// the gpufair policy really is the engine's bait rule at work.
#include <gtest/gtest.h>

#include "sim_test_util.h"

namespace gpufair::sim {
namespace {

using testing::run_trace;
using testing::team;

SimOptions flat(std::int32_t gpus, bool backfill = false) {
  SimOptions o;
  o.gpus = gpus;
  o.backfill = backfill;
  return o;
}

constexpr const char* kHeader = "submit,account,user,gpus,runtime,qos\n";

TEST(Mechanics, HighJobPreemptsOwnTeamAndVictimKeepsFifoPlace) {
  const std::string csv = std::string(kHeader) +
                          "0,a,ua,8,100,low\n"
                          "1,b,ub,8,100,low\n"
                          "2,a,ua,8,50,high\n";
  auto o = flat(8);
  o.gaming_team = "a";
  const auto r = run_trace(csv, "fifo", o);
  const auto& a = team(r, "a");
  const auto& b = team(r, "b");
  EXPECT_EQ(a.preemptions_caused, 1u);
  EXPECT_EQ(r.preemptions, 1u);
  ASSERT_EQ(a.high_waits.size(), 1u);
  EXPECT_EQ(a.high_waits[0], 0);  // jumped the queue at once
  // The requeued victim keeps its submit time, so under FIFO it runs again
  // (52..152) before b's job, which starts at 152.
  ASSERT_EQ(b.waits.size(), 1u);
  EXPECT_EQ(b.waits[0], 151);
  EXPECT_EQ(r.end, 252);
  ASSERT_TRUE(r.gaming_advantage.has_value());
  EXPECT_NEAR(*r.gaming_advantage, 1.0 / 151.0, 1e-12);
}

TEST(Mechanics, CancelModeDropsTheVictim) {
  const std::string csv = std::string(kHeader) +
                          "0,a,ua,8,100,low\n"
                          "1,b,ub,8,100,low\n"
                          "2,a,ua,8,50,high\n";
  auto o = flat(8);
  o.preempt_mode = PreemptMode::kCancel;
  const auto r = run_trace(csv, "fifo", o);
  EXPECT_EQ(team(r, "b").waits[0], 51);  // starts when the high job ends at 52
  EXPECT_EQ(team(r, "a").completed, 1u);
  EXPECT_EQ(r.end, 152);
}

TEST(Mechanics, NeverPreemptsAnotherTeam) {
  const std::string csv = std::string(kHeader) +
                          "0,a,ua,8,100,low\n"
                          "1,b,ub,8,50,high\n";
  for (const char* policy : {"fifo", "multifactor", "gpufair"}) {
    const auto r = run_trace(csv, policy, flat(8));
    EXPECT_EQ(r.preemptions, 0u) << policy;
    EXPECT_EQ(team(r, "b").high_waits[0], 99) << policy;
  }
}

TEST(Mechanics, EasyBackfillStartsShortJobsWithoutDelayingTheHead) {
  const std::string csv = std::string(kHeader) +
                          "0,a,ua,6,100,low\n"    // running until 100
                          "1,b,ub,8,100,low\n"    // blocked head, reservation at 100
                          "2,c,uc,2,50,low\n"     // fits before 100: backfilled
                          "3,d,ud,2,500,low\n";   // would delay the head: waits
  const auto with = run_trace(csv, "fifo", flat(8, true));
  EXPECT_LT(team(with, "c").waits[0], 60);         // at the next backfill pass
  EXPECT_EQ(team(with, "b").waits[0], 99);         // the head is not delayed
  EXPECT_GE(team(with, "d").waits[0], 197);        // after the head
  const auto without = run_trace(csv, "fifo", flat(8, false));
  EXPECT_EQ(team(without, "c").waits[0], 198);     // strict order: after b (100..200)
}

TEST(Mechanics, JobsStillWaitingAtTheHorizonCountWithTheirWaitSoFar) {
  const std::string csv = std::string(kHeader) +
                          "0,a,ua,8,1000,low\n"
                          "10,b,ub,8,10,low\n";
  auto o = flat(8);
  o.horizon = 500;
  const auto r = run_trace(csv, "fifo", o);
  EXPECT_EQ(team(r, "b").never_started, 1u);
  EXPECT_EQ(team(r, "b").waits[0], 490);
  EXPECT_NEAR(team(r, "a").gpu_hours, 8 * 500 / 3600.0, 1e-9);
  EXPECT_NEAR(r.utilization, 1.0, 1e-9);
}

TEST(Mechanics, JobsLargerThanTheClusterAreRejected) {
  const std::string csv = std::string(kHeader) + "0,a,ua,9,10,low\n0,a,ua,8,10,low\n";
  const auto r = run_trace(csv, "fifo", flat(8));
  EXPECT_EQ(r.rejected_jobs, 1u);
  EXPECT_EQ(team(r, "a").jobs, 1u);
}

TEST(Mechanics, SubAccountsRollUpToOneTeam) {
  const std::string csv = std::string(kHeader) +
                          "0,teama/nlp,u1,4,100,low\n"
                          "0,teama/vision/x,u2,4,100,low\n"
                          "5,teama/speech,u3,4,10,high\n";
  const auto r = run_trace(csv, "gpufair", flat(8));
  ASSERT_EQ(r.teams.size(), 1u);
  EXPECT_EQ(r.teams[0].name, "teama");
  EXPECT_EQ(r.teams[0].jobs, 3u);
  EXPECT_EQ(r.preemptions, 1u);  // the high job displaced a sub-account's job
}

TEST(Mechanics, NodesKeepSmallJobsOnOneNode) {
  // Two 4-GPU nodes; two 3-GPU jobs leave 1 GPU free on each: a 2-GPU job
  // must wait although 2 GPUs are free in total.
  const std::string csv = std::string(kHeader) +
                          "0,a,ua,3,100,low\n"
                          "0,b,ub,3,100,low\n"
                          "1,c,uc,2,10,low\n";
  SimOptions o = flat(8);
  o.gpus_per_node = 4;
  const auto r = run_trace(csv, "fifo", o);
  EXPECT_EQ(team(r, "c").waits[0], 99);
  const auto pooled = run_trace(csv, "fifo", flat(8));
  EXPECT_EQ(team(pooled, "c").waits[0], 0);
}

TEST(Mechanics, MultifactorOrdersByFairShare) {
  // Team a used the cluster first; when both wait, b's job starts first
  // although it was submitted later.
  const std::string csv = std::string(kHeader) +
                          "0,a,ua,8,3600,low\n"
                          "100,a,ua,8,100,low\n"
                          "200,b,ub,8,100,low\n";
  const auto r = run_trace(csv, "multifactor", flat(8), "calc_period=60,half_life=1d");
  EXPECT_EQ(team(r, "b").waits[0], 3400);
  EXPECT_EQ(team(r, "a").waits[1], 3600 + 100 - 100);
  const auto f = run_trace(csv, "fifo", flat(8));
  EXPECT_EQ(team(f, "a").waits[1], 3500);  // FIFO: a's second job first
}

TEST(Mechanics, GpufairWithoutTheBaitRuleIsPlainFairShare) {
  // Switching the bait rule off (never block, no penalty, no skip charge)
  // brings the exploit back: proof that the engine's rule, not the
  // simulator, is what closes it.
  auto sc = load_scenario(testing::scenario_path("exploit"));
  auto params = sc.policy_params;
  params.emplace_back("bait_block", "never");
  params.emplace_back("penalty_per_bait", "0");
  params.emplace_back("skip_charge", "0");
  const auto r = simulate(sc.workload, "gpufair", testing::config_from(params), sc.options);
  ASSERT_TRUE(r.gaming_advantage.has_value());
  EXPECT_LT(*r.gaming_advantage, 0.5);
}

}  // namespace
}  // namespace gpufair::sim
