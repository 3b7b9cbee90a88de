#include "gpufair/priority.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace gpufair {
namespace {

PriorityParams params() {
  PriorityParams p;
  p.weights = {1000, 10000, 500, 200, 300};
  p.max_age = 1000;
  p.cluster_gpus = 32;
  return p;
}

// The fair-share term of a job inside its team (design.md, "Fair share
// inside a team"): the team's effective factor lowered inside its band.
TEST(Priority, FairShareOfAJobInsideItsTeam) {
  PriorityInput in;
  in.team = 0;
  const TeamFactors team{0.8, 0.4, 1.0, 0.1};
  const auto best = compute_priority(in, team, 1.0, params(), 0);
  EXPECT_DOUBLE_EQ(best.fairshare, 0.4);
  EXPECT_DOUBLE_EQ(best.team_fairshare, 0.4);
  const auto half = compute_priority(in, team, 0.5, params(), 0);
  EXPECT_DOUBLE_EQ(half.fairshare, 0.35);
  EXPECT_DOUBLE_EQ(half.in_team, 0.5);
  EXPECT_DOUBLE_EQ(half.team_fairshare, 0.4);
  EXPECT_DOUBLE_EQ(half.w_fairshare, 3500);
  EXPECT_EQ(best.priority - half.priority, 500u);
}

TEST(Priority, WeightedSumOfFactors) {
  PriorityInput in;
  in.team = 0;
  in.gpus = 8;
  in.eligible = 500;
  in.qos_norm = 0.5;
  in.partition_norm = 1.0;
  const TeamFactors team{0.8, 0.4, 1.0};
  const auto f = compute_priority(in, team, 1.0, params(), 750);
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
  EXPECT_DOUBLE_EQ(compute_priority(in, team, 1.0, params(), 100 + 1000).age, 1.0);
  EXPECT_DOUBLE_EQ(compute_priority(in, team, 1.0, params(), 100 + 50000).age, 1.0);
  EXPECT_DOUBLE_EQ(compute_priority(in, team, 1.0, params(), 50).age, 0.0);  // not yet eligible
  in.eligible = 0;  // unknown: no age
  EXPECT_DOUBLE_EQ(compute_priority(in, team, 1.0, params(), 5000).age, 0.0);
}

TEST(Priority, NiceLowersAndNegativeNiceRaises) {
  PriorityInput in;
  const TeamFactors team{1, 1, 0};
  const auto base = compute_priority(in, team, 1.0, params(), 0).priority;
  in.nice = 100;
  EXPECT_EQ(compute_priority(in, team, 1.0, params(), 0).priority, base - 100);
  in.nice = -100;
  EXPECT_EQ(compute_priority(in, team, 1.0, params(), 0).priority, base + 100);
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
    EXPECT_EQ(compute_priority(in, TeamFactors{1, 1, 0}, 1.0, p, 0).priority, c.expected)
        << c.fairshare_weight << " nice " << c.nice;
  }
}

TEST(Priority, FavorSmallInvertsJobSize) {
  PriorityParams p = params();
  PriorityInput in;
  in.gpus = 8;
  const TeamFactors team{1, 1, 0};
  EXPECT_DOUBLE_EQ(compute_priority(in, team, 1.0, p, 0).job_size, 0.25);
  p.favor_small = true;
  EXPECT_DOUBLE_EQ(compute_priority(in, team, 1.0, p, 0).job_size, 0.75);
  in.gpus = 64;  // more than the cluster: capped
  p.favor_small = false;
  EXPECT_DOUBLE_EQ(compute_priority(in, team, 1.0, p, 0).job_size, 1.0);
  p.cluster_gpus = 0;  // unknown cluster size: no size factor
  EXPECT_DOUBLE_EQ(compute_priority(in, team, 1.0, p, 0).job_size, 0.0);
}

TEST(Priority, OutOfRangeNormsAreClamped) {
  PriorityInput in;
  in.qos_norm = 7;
  in.partition_norm = -3;
  const auto f = compute_priority(in, TeamFactors{}, 1.0, params(), 0);
  EXPECT_DOUBLE_EQ(f.qos, 1.0);
  EXPECT_DOUBLE_EQ(f.partition, 0.0);
}

// Each term of multifactor's sum on its own, and then all at once: the
// priority is the truncated sum of w_age*age + w_assoc*assoc + w_fs*F +
// w_js*size + w_part*part + w_qos*qos + tres + site - nice
// (_get_priority_internal).
struct TermCase {
  const char* name;
  PriorityInput in;
  RawFactors raw;
  std::uint32_t expected;
};

TEST(Priority, EachMultifactorTermAsInMultifactor) {
  PriorityParams p;
  p.weights = {0, 0, 0, 200, 300, 400};  // partition, qos, assoc
  auto with = [](auto set) {
    PriorityInput in;
    set(in);
    return in;
  };
  const TermCase cases[] = {
      {"nothing", {}, {}, 1},
      {"assoc normalised", with([](auto& in) { in.assoc_norm = 0.5, in.assoc_raw = 7; }), {}, 200},
      {"assoc raw (NO_NORMAL_ASSOC)",
       with([](auto& in) { in.assoc_norm = 0.5, in.assoc_raw = 7; }), {.assoc = true}, 2800},
      {"qos raw (NO_NORMAL_QOS)",
       with([](auto& in) { in.qos_norm = 0.1, in.qos_raw = 100; }), {.qos = true}, 30000},
      {"qos normalised", with([](auto& in) { in.qos_norm = 0.1, in.qos_raw = 100; }), {}, 30},
      {"partition raw (NO_NORMAL_PART)",
       with([](auto& in) { in.partition_norm = 0.25, in.partition_raw = 3; }), {.partition = true},
       600},
      {"partition normalised",
       with([](auto& in) { in.partition_norm = 0.25, in.partition_raw = 3; }), {}, 50},
      {"tres term as given", with([](auto& in) { in.tres = 1234.9; }), {}, 1234},
      {"site factor adds", with([](auto& in) { in.site = 5000; }), {}, 5000},
      {"negative site subtracts",
       with([](auto& in) { in.site = -100, in.tres = 1000; }), {}, 900},
      {"nice subtracts", with([](auto& in) { in.tres = 1000, in.nice = 250; }), {}, 750},
      {"negative nice adds", with([](auto& in) { in.nice = -250; }), {}, 250},
      {"site and nice cancel", with([](auto& in) { in.site = 300, in.nice = 300; }), {}, 1},
      {"everything",
       with([](auto& in) {
         in.assoc_norm = 1, in.qos_norm = 0.5, in.partition_norm = 1, in.tres = 10.5;
         in.site = 20, in.nice = 5;
       }),
       {}, 400 + 150 + 200 + 10 + 20 - 5},
  };
  for (const auto& c : cases) {
    p.raw = c.raw;
    const auto f = compute_priority(c.in, TeamFactors{1, 1, 0}, 1.0, p, 0);
    EXPECT_EQ(f.priority, c.expected) << c.name;
    EXPECT_DOUBLE_EQ(f.w_tres, c.in.tres) << c.name;
    EXPECT_EQ(f.site, c.in.site) << c.name;
    EXPECT_DOUBLE_EQ(f.w_assoc, 400 * f.assoc) << c.name;
  }
}

TEST(Priority, RawFactorsAreNeverNegativeOrNaN) {
  PriorityParams p;
  p.weights = {0, 0, 0, 1, 1, 1};
  p.raw = {.assoc = true, .partition = true, .qos = true, .tres = true};
  PriorityInput in;
  in.assoc_raw = -5;
  in.qos_raw = std::numeric_limits<double>::quiet_NaN();
  in.partition_raw = 1e6;  // raw values are not capped at 1
  const auto f = compute_priority(in, TeamFactors{}, 1.0, p, 0);
  EXPECT_DOUBLE_EQ(f.assoc, 0.0);
  EXPECT_DOUBLE_EQ(f.qos, 0.0);
  EXPECT_DOUBLE_EQ(f.partition, 1e6);
}

struct TresCase {
  const char* name;
  std::vector<double> weights, count, total;
  bool raw;
  double sum;
  std::vector<double> each;
};

TEST(Priority, TresTermAsInMultifactor) {
  const TresCase cases[] = {
      {"count over the partition's total, times the weight",
       {1000, 0, 3000}, {4, 100, 2}, {16, 400, 8}, false, 250 + 750, {250, 0, 750}},
      {"raw counts (NO_NORMAL_TRES)", {1000, 0, 3000}, {4, 100, 2}, {16, 400, 8}, true,
       4000 + 6000, {4000, 0, 6000}},
      {"a TRES the partition does not have counts 0", {1000, 1000}, {4, 2}, {16, 0}, false, 250,
       {250, 0}},
      {"a TRES the job does not use counts 0", {1000, 1000}, {0, 2}, {16, 8}, false, 250,
       {0, 250}},
      {"negative weights lower it", {-1000}, {8}, {8}, false, -1000, {-1000}},
      {"TRES beyond the weights weigh 0", {1000}, {4, 4}, {16, 16}, false, 250, {250, 0}},
      {"no weights: no term", {}, {4}, {16}, false, 0, {0}},
  };
  for (const auto& c : cases) {
    std::vector<double> each(c.count.size(), -1);
    const double sum =
        tres_term(c.weights, c.count.data(), c.total.data(), c.count.size(), c.raw, each.data());
    EXPECT_DOUBLE_EQ(sum, c.sum) << c.name;
    for (std::size_t i = 0; i < each.size(); ++i) EXPECT_DOUBLE_EQ(each[i], c.each[i]) << c.name;
    EXPECT_DOUBLE_EQ(tres_term(c.weights, c.count.data(), c.total.data(), c.count.size(), c.raw,
                               nullptr),
                     c.sum)
        << c.name;
  }
}

struct SizeCase {
  const char* name;
  double gpus, time_limit_min;
  bool relative, favor_small;
  double expected;
};

TEST(Priority, JobSizeRelativeToTimeAsInMultifactor) {
  // multifactor's SMALL_RELATIVE_TO_TIME: size / time limit (minutes) / cluster
  // size, 1 - that with PriorityFavorSmall; here in GPUs (cluster: 32).
  const SizeCase cases[] = {
      {"plain size", 8, 60, false, false, 0.25},
      {"per minute of limit", 8, 2, true, false, 0.125},
      {"per minute, favor small", 8, 2, true, true, 0.875},
      {"one-minute limit is the plain size", 8, 1, true, false, 0.25},
      {"unknown limit counts as one minute", 8, 0, true, false, 0.25},
      {"long limit: nearly 0", 32, 1e6, true, false, 32.0 / 32 / 1e6},
      {"capped at 1", 64, 1, true, false, 1.0},
      {"capped, favor small: 0", 64, 1, true, true, 0.0},
  };
  for (const auto& c : cases) {
    PriorityParams p = params();
    p.size_relative = c.relative;
    p.favor_small = c.favor_small;
    PriorityInput in;
    in.gpus = c.gpus;
    in.time_limit_min = c.time_limit_min;
    EXPECT_DOUBLE_EQ(compute_priority(in, TeamFactors{}, 1.0, p, 0).job_size, c.expected) << c.name;
  }
}

}  // namespace
}  // namespace gpufair
