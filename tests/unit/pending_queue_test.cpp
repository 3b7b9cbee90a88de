#include "gpufair/pending_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace gpufair {
namespace {

TEST(OldestPendingByTeam, EmptyMeansNobodyWaits) {
  OldestPendingByTeam q;
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.oldest_other_than(0).has_value());
}

TEST(OldestPendingByTeam, OnlyOwnTeamWaitingIsNobody) {
  OldestPendingByTeam q;
  q.add(3, 100);
  q.add(3, 50);
  EXPECT_FALSE(q.oldest_other_than(3).has_value());
  EXPECT_EQ(q.oldest_other_than(1), 50);
}

TEST(OldestPendingByTeam, MatchesBruteForceOnRandomQueues) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    OldestPendingByTeam q;
    std::map<TeamId, TimePoint> oldest;
    const int jobs = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < jobs; ++i) {
      const TeamId team = static_cast<TeamId>(rng() % 4);
      const TimePoint since = static_cast<TimePoint>(rng() % 1000);
      q.add(team, since);
      auto [it, fresh] = oldest.try_emplace(team, since);
      if (!fresh && since < it->second) it->second = since;
    }
    for (TeamId team = 0; team < 5; ++team) {
      std::optional<TimePoint> expected;
      for (auto [t, since] : oldest)
        if (t != team && (!expected || since < *expected)) expected = since;
      EXPECT_EQ(q.oldest_other_than(team), expected) << "round " << round << " team " << team;
    }
  }
}

}  // namespace
}  // namespace gpufair
