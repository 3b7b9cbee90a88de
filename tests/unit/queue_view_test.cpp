// QueueView::cost_of_jump: what a queue jump takes from other teams'
// runnable jobs ahead of the jumper (design.md, "Jump price").
#include "gpufair/queue_view.h"

#include <gtest/gtest.h>

namespace gpufair {
namespace {

JobRef pending(TeamId team, std::uint32_t prio, double gpus, TimePoint since, bool runnable = true) {
  JobRef j;
  j.team = team;
  j.priority = prio;
  j.gpus = gpus;
  j.submit = since;
  j.runnable = runnable;
  return j;
}

constexpr Seconds kCap = 4 * 3600;
constexpr TimePoint kNow = 100000;

struct Case {
  const char* name;
  std::vector<JobRef> queue;
  JobRef jumper;
  double gpu_s;
  std::uint32_t jobs_ahead;
};

class CostOfJump : public ::testing::TestWithParam<Case> {};

TEST_P(CostOfJump, PricesOnlyRunnableOtherTeamJobsAhead) {
  const Case& c = GetParam();
  QueueView q;
  for (const auto& j : c.queue) q.add(j);
  q.freeze();
  const JumpCost cost = q.cost_of_jump(c.jumper, kNow, kCap);
  EXPECT_DOUBLE_EQ(cost.gpu_s, c.gpu_s) << c.name;
  EXPECT_EQ(cost.jobs_ahead, c.jobs_ahead) << c.name;
  if (c.jumper.gpus > 0) {
    EXPECT_EQ(cost.skipped, static_cast<Seconds>(c.gpu_s / c.jumper.gpus)) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rules, CostOfJump,
    ::testing::Values(
        Case{"nobody waiting", {}, pending(0, 10, 4, kNow), 0, 0},
        Case{"only own team ahead", {pending(0, 50, 8, kNow - 3600)}, pending(0, 10, 4, kNow), 0, 0},
        Case{"other team behind", {pending(1, 5, 8, kNow - 3600)}, pending(0, 10, 4, kNow), 0, 0},
        Case{"other team ahead, covers the jumper", {pending(1, 50, 8, kNow - 600)}, pending(0, 10, 4, kNow),
             4 * 600.0, 1},
        Case{"several ahead: best first until covered",
             {pending(1, 40, 2, kNow - 100), pending(2, 60, 2, kNow - 1000), pending(1, 30, 8, kNow - 50)},
             pending(0, 10, 4, kNow), 2 * 1000.0 + 2 * 100.0, 2},
        Case{"held or dependent jobs do not count", {pending(1, 50, 8, kNow - 600, false)},
             pending(0, 10, 4, kNow), 0, 0},
        Case{"one stale job is capped", {pending(1, 50, 8, kNow - 30 * 86400)}, pending(0, 10, 4, kNow),
             4.0 * kCap, 1},
        Case{"GPU-less jobs ahead take nothing", {pending(1, 50, 0, kNow - 600)}, pending(0, 10, 4, kNow), 0, 0},
        Case{"GPU-less jumper pays nothing", {pending(1, 50, 8, kNow - 600)}, pending(0, 10, 0, kNow), 0, 0},
        Case{"equal priority: longer wait is ahead", {pending(1, 10, 4, kNow - 60)}, pending(0, 10, 4, kNow - 30),
             4 * 60.0, 1}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (auto& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

TEST(QueueView, AnyoneElseWaiting) {
  QueueView q;
  EXPECT_FALSE(q.anyone_else_waiting(0));
  q.add(pending(0, 1, 1, 0));
  EXPECT_FALSE(q.anyone_else_waiting(0));
  EXPECT_TRUE(q.anyone_else_waiting(1));
  q.add(pending(2, 1, 1, 0, false));
  EXPECT_FALSE(q.anyone_else_waiting(0));
}

}  // namespace
}  // namespace gpufair
