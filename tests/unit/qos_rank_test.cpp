// qos_ranks: the Preempt= relation orders QOS, Priority breaks the rest.
#include "gpufair/qos_rank.h"

#include <gtest/gtest.h>

namespace gpufair {
namespace {

struct Case {
  const char* name;
  std::vector<std::uint32_t> priority;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> preempts;
  // (a, b): rank[a] > rank[b]; (a, a) pairs are unused
  std::vector<std::pair<std::uint32_t, std::uint32_t>> above;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> equal;
};

class QosRank : public ::testing::TestWithParam<Case> {};

TEST_P(QosRank, Orders) {
  const Case& c = GetParam();
  const auto r = qos_ranks(c.priority, c.preempts);
  ASSERT_EQ(r.size(), c.priority.size());
  for (const auto& [a, b] : c.above) EXPECT_GT(r[a], r[b]) << c.name << ": " << a << " above " << b;
  for (const auto& [a, b] : c.equal) EXPECT_EQ(r[a], r[b]) << c.name << ": " << a << " equal " << b;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, QosRank,
    ::testing::Values(
        // Every Priority 0, high preempts low: the relation alone ranks them.
        Case{"priorities all 0", {0, 0}, {{1, 0}}, {{1, 0}}, {}},
        // The relation beats a Priority that says the opposite.
        Case{"relation over priority", {100, 0}, {{1, 0}}, {{1, 0}}, {}},
        // A chain: urgent > normal > scavenger, transitively.
        Case{"chain", {0, 0, 0}, {{2, 1}, {1, 0}}, {{2, 1}, {1, 0}, {2, 0}}, {}},
        // No relation: Priority decides, equal Priority is equal rank.
        Case{"priority only", {10, 20, 20}, {}, {{1, 0}, {2, 0}}, {{1, 2}}},
        // Two QOS that preempt each other are one level, above what both preempt.
        Case{"cycle is one level", {0, 0, 0}, {{1, 2}, {2, 1}, {1, 0}}, {{1, 0}, {2, 0}}, {{1, 2}}},
        // Bad indices are ignored, not a crash.
        Case{"out of range", {0, 5}, {{7, 0}, {1, 9}}, {{1, 0}}, {}}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (auto& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return n;
    });

TEST(QosRank, EmptyAndHugePriorities) {
  EXPECT_TRUE(qos_ranks({}, {}).empty());
  const auto r = qos_ranks({0xFFFFFFFFu, 0}, {{1, 0}});
  EXPECT_GT(r[1], r[0]);  // the relation still wins over a saturated Priority
  EXPECT_GE(r[0], 0);
}

// The rank source: the QOS's rank under preempt_by=qos, the partition's
// PriorityTier under partition, whatever the other says.
TEST(InTeamRank, FollowsPreemptBy) {
  struct Case {
    PreemptBy by;
    std::int32_t qos_rank;
    std::uint32_t tier;
    std::int32_t want;
  };
  const Case cases[] = {
      {PreemptBy::kQos, 0x10005, 1, 0x10005},
      {PreemptBy::kQos, 0, 100, 0},
      {PreemptBy::kPartition, 0x10005, 1, 1},
      {PreemptBy::kPartition, 0, 100, 100},
      {PreemptBy::kPartition, 7, 0, 0},
      {PreemptBy::kPartition, 0, 0xFFFFFFFFu, 0x7FFFFFFF},  // clamped, never negative
  };
  for (const auto& c : cases)
    EXPECT_EQ(in_team_rank(c.by, c.qos_rank, c.tier), c.want)
        << (c.by == PreemptBy::kQos ? "qos" : "partition") << " " << c.qos_rank << " " << c.tier;
  // A higher tier outranks a lower one; the same tier is the same rank.
  EXPECT_GT(in_team_rank(PreemptBy::kPartition, 0, 10), in_team_rank(PreemptBy::kPartition, 99, 1));
  EXPECT_EQ(in_team_rank(PreemptBy::kPartition, 0, 10), in_team_rank(PreemptBy::kPartition, 99, 10));
}

}  // namespace
}  // namespace gpufair
