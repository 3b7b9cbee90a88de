// PriorityUsageResetPeriod boundaries on the UTC calendar. libc's timegm is
// the independent oracle for the expected instants.
#include "gpufair/reset_period.h"

#include <gtest/gtest.h>

#include <ctime>

namespace gpufair {
namespace {

TimePoint utc(int y, int mo, int d, int h = 0, int mi = 0, int s = 0) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  return static_cast<TimePoint>(timegm(&tm));
}

struct StartCase {
  ResetPeriod period;
  TimePoint t, expected_start;
};

TEST(ResetPeriod, PeriodStartOnCalendarBoundaries) {
  const StartCase cases[] = {
      {ResetPeriod::kDaily, utc(2024, 3, 10, 13, 5, 7), utc(2024, 3, 10)},
      {ResetPeriod::kDaily, utc(2024, 3, 10), utc(2024, 3, 10)},
      {ResetPeriod::kDaily, utc(1969, 12, 31, 12), utc(1969, 12, 31)},
      {ResetPeriod::kWeekly, utc(2024, 3, 13, 8), utc(2024, 3, 10)},  // Wed -> Sun
      {ResetPeriod::kWeekly, utc(2024, 3, 10), utc(2024, 3, 10)},     // Sunday 00:00
      {ResetPeriod::kWeekly, utc(2024, 3, 9, 23, 59, 59), utc(2024, 3, 3)},
      {ResetPeriod::kWeekly, utc(1970, 1, 1), utc(1969, 12, 28)},
      {ResetPeriod::kMonthly, utc(2024, 2, 29, 12), utc(2024, 2, 1)},
      {ResetPeriod::kMonthly, utc(2023, 12, 31, 23, 59, 59), utc(2023, 12, 1)},
      {ResetPeriod::kQuarterly, utc(2024, 5, 15), utc(2024, 4, 1)},
      {ResetPeriod::kQuarterly, utc(2024, 12, 31, 23, 59, 59), utc(2024, 10, 1)},
      {ResetPeriod::kQuarterly, utc(2024, 3, 31, 23, 59, 59), utc(2024, 1, 1)},
      {ResetPeriod::kYearly, utc(2024, 7, 1), utc(2024, 1, 1)},
      {ResetPeriod::kYearly, utc(2100, 3, 1), utc(2100, 1, 1)},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(reset_period_start(c.period, c.t), c.expected_start)
        << reset_period_name(c.period) << " t=" << c.t;
  }
}

struct CrossCase {
  ResetPeriod period;
  TimePoint from, to;
  bool crossed;
};

TEST(ResetPeriod, BoundaryCrossing) {
  const CrossCase cases[] = {
      {ResetPeriod::kDaily, utc(2024, 1, 1, 23, 59, 59), utc(2024, 1, 2), true},
      {ResetPeriod::kDaily, utc(2024, 1, 2), utc(2024, 1, 2, 23, 59, 59), false},
      {ResetPeriod::kDaily, utc(2024, 1, 2, 1), utc(2024, 1, 2, 2), false},
      {ResetPeriod::kWeekly, utc(2024, 3, 9, 12), utc(2024, 3, 10, 0, 0, 1), true},
      {ResetPeriod::kWeekly, utc(2024, 3, 10, 12), utc(2024, 3, 16, 23), false},
      {ResetPeriod::kMonthly, utc(2024, 1, 31), utc(2024, 2, 1, 1), true},
      {ResetPeriod::kMonthly, utc(2024, 2, 1, 1), utc(2024, 2, 29), false},
      {ResetPeriod::kQuarterly, utc(2024, 3, 1), utc(2024, 3, 31), false},
      {ResetPeriod::kQuarterly, utc(2024, 3, 31), utc(2024, 4, 1), true},
      {ResetPeriod::kYearly, utc(2024, 12, 31, 23), utc(2025, 1, 1, 1), true},
      {ResetPeriod::kYearly, utc(2024, 1, 1, 1), utc(2024, 12, 31), false},
      {ResetPeriod::kNone, utc(2000, 1, 1), utc(2030, 1, 1), false},
      {ResetPeriod::kNow, utc(2000, 1, 1), utc(2030, 1, 1), false},
      {ResetPeriod::kDaily, utc(2024, 1, 3), utc(2024, 1, 1), false},  // backwards
  };
  for (const auto& c : cases) {
    EXPECT_EQ(reset_boundary_crossed(c.period, c.from, c.to), c.crossed)
        << reset_period_name(c.period) << " " << c.from << " -> " << c.to;
  }
}

TEST(ResetPeriod, NamesRoundTrip) {
  for (ResetPeriod p : {ResetPeriod::kNone, ResetPeriod::kNow, ResetPeriod::kDaily,
                        ResetPeriod::kWeekly, ResetPeriod::kMonthly, ResetPeriod::kQuarterly,
                        ResetPeriod::kYearly}) {
    auto parsed = parse_reset_period(reset_period_name(p));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, p);
  }
  EXPECT_EQ(parse_reset_period("MONTHLY"), ResetPeriod::kMonthly);
  EXPECT_FALSE(parse_reset_period("fortnightly").has_value());
}

}  // namespace
}  // namespace gpufair
