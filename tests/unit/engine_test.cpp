// Engine: the cycle, charging of running jobs, priorities and state as a whole.
#include "gpufair/engine.h"

#include <gtest/gtest.h>

namespace gpufair {
namespace {

constexpr TimePoint kT0 = 1'700'000'000;

Config test_config() {
  auto c = parse_config("half_life=0");
  EXPECT_TRUE(c.ok()) << c.error().message;
  return *c;
}

JobRef running_job(JobId id, TeamId team, double gpus, TimePoint start, int rank = 1) {
  JobRef j;
  j.id = id;
  j.team = team;
  j.gpus = gpus;
  j.submit = start;
  j.start = start;
  j.rank = rank;
  return j;
}

TEST(EngineSmoke, UsageLowersPriorityOfTheUsingTeam) {
  Engine e(test_config());
  const TeamId a = e.team_for_account("teama/nlp");
  const TeamId b = e.team_for_account("teamb");
  EXPECT_EQ(a, e.team_for_account("teama/vision"));
  EXPECT_NE(a, b);
  e.begin_cycle(kT0);
  e.observe_running(running_job(1, a, 8, kT0), kT0);
  e.end_cycle(kT0);
  e.begin_cycle(kT0 + 300);
  e.observe_running(running_job(1, a, 8, kT0), kT0 + 300);
  e.end_cycle(kT0 + 300);
  EXPECT_DOUBLE_EQ(e.team_report(a, kT0 + 300).usage_gpu_s, 8.0 * 300);
  PriorityInput in;
  in.team = a;
  in.eligible = kT0;
  const auto pa = e.priority(in, kT0 + 300);
  in.team = b;
  const auto pb = e.priority(in, kT0 + 300);
  EXPECT_LT(pa.priority, pb.priority);
  EXPECT_LT(pa.fairshare, 1.0);
  EXPECT_DOUBLE_EQ(pb.fairshare, 1.0);
}

}  // namespace
}  // namespace gpufair
