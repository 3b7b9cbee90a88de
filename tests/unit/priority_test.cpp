#include "gpufair/priority.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gpufair {
namespace {

PriorityParams params() {
  PriorityParams p;
  p.weights = {1000, 10000, 500, 200, 300};
  p.max_age = 1000;
  p.cluster_gpus = 32;
  return p;
}

TEST(Priority, WeightedSumOfFactors) {
  PriorityInput in;
  in.team = 0;
  in.gpus = 8;
  in.eligible = 500;
  in.qos_norm = 0.5;
  in.partition_norm = 1.0;
  const TeamFactors team{0.8, 0.4, 1.0};
  const auto f = compute_priority(in, team, params(), 750);
  EXPECT_DOUBLE_EQ(f.age, 0.25);
  EXPECT_DOUBLE_EQ(f.fairshare, 0.4);  // the effective factor, penalty included
  EXPECT_DOUBLE_EQ(f.job_size, 0.25);
  EXPECT_DOUBLE_EQ(f.w_age, 250);
  EXPECT_DOUBLE_EQ(f.w_fairshare, 4000);
  EXPECT_DOUBLE_EQ(f.w_job_size, 125);
  EXPECT_DOUBLE_EQ(f.w_partition, 200);
  EXPECT_DOUBLE_EQ(f.w_qos, 150);
  EXPECT_DOUBLE_EQ(f.penalty, 1.0);
  EXPECT_EQ(f.priority, 250u + 4000 + 125 + 200 + 150);
}

TEST(Priority, AgeIsCappedAtMaxAge) {
  PriorityInput in;
  in.eligible = 100;
  const TeamFactors team{1, 1, 0};
  EXPECT_DOUBLE_EQ(compute_priority(in, team, params(), 100 + 1000).age, 1.0);
  EXPECT_DOUBLE_EQ(compute_priority(in, team, params(), 100 + 50000).age, 1.0);
  EXPECT_DOUBLE_EQ(compute_priority(in, team, params(), 50).age, 0.0);  // not yet eligible
  in.eligible = 0;  // unknown: no age
  EXPECT_DOUBLE_EQ(compute_priority(in, team, params(), 5000).age, 0.0);
}

TEST(Priority, NiceLowersAndNegativeNiceRaises) {
  PriorityInput in;
  const TeamFactors team{1, 1, 0};
  const auto base = compute_priority(in, team, params(), 0).priority;
  in.nice = 100;
  EXPECT_EQ(compute_priority(in, team, params(), 0).priority, base - 100);
  in.nice = -100;
  EXPECT_EQ(compute_priority(in, team, params(), 0).priority, base + 100);
}

struct ClampCase {
  double fairshare_weight;
  std::int32_t nice;
  std::uint32_t expected;
};

TEST(Priority, ClampedToOneAndSlurmMaximum) {
  const ClampCase cases[] = {
      {0, 0, 1},                                // all zero: 1, never 0 (held)
      {1000, 5000, 1},                          // nice below zero
      {1e12, 0, 0xFFFFFFFEu},                   // above Slurm's top
      {std::numeric_limits<double>::quiet_NaN(), 0, 1},
  };
  for (const auto& c : cases) {
    PriorityParams p;
    p.weights = {0, c.fairshare_weight, 0, 0, 0};
    PriorityInput in;
    in.nice = c.nice;
    EXPECT_EQ(compute_priority(in, TeamFactors{1, 1, 0}, p, 0).priority, c.expected)
        << c.fairshare_weight << " nice " << c.nice;
  }
}

TEST(Priority, FavorSmallInvertsJobSize) {
  PriorityParams p = params();
  PriorityInput in;
  in.gpus = 8;
  const TeamFactors team{1, 1, 0};
  EXPECT_DOUBLE_EQ(compute_priority(in, team, p, 0).job_size, 0.25);
  p.favor_small = true;
  EXPECT_DOUBLE_EQ(compute_priority(in, team, p, 0).job_size, 0.75);
  in.gpus = 64;  // more than the cluster: capped
  p.favor_small = false;
  EXPECT_DOUBLE_EQ(compute_priority(in, team, p, 0).job_size, 1.0);
  p.cluster_gpus = 0;  // unknown cluster size: no size factor
  EXPECT_DOUBLE_EQ(compute_priority(in, team, p, 0).job_size, 0.0);
}

TEST(Priority, OutOfRangeNormsAreClamped) {
  PriorityInput in;
  in.qos_norm = 7;
  in.partition_norm = -3;
  const auto f = compute_priority(in, TeamFactors{}, params(), 0);
  EXPECT_DOUBLE_EQ(f.qos, 1.0);
  EXPECT_DOUBLE_EQ(f.partition, 0.0);
}

}  // namespace
}  // namespace gpufair
