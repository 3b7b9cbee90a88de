#include "gpufair/reset_period.h"

#include <cctype>
#include <limits>
#include <string>

namespace gpufair {
namespace {

constexpr std::int64_t kDay = 86400;

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

struct CivilDate {
  std::int64_t year;
  int month;  // 1..12
  int day;    // 1..31
};

// Days since 1970-01-01 <-> proleptic Gregorian date (H. Hinnant's algorithms,
// re-derived here): era-based, exact for the whole int64 day range we use.
CivilDate civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = floor_div(z, 146097);
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (m <= 2 ? 1 : 0), m, d};
}

std::int64_t days_from_civil(std::int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = floor_div(y, 400);
  const std::int64_t yoe = y - era * 400;
  const std::int64_t mp = m > 2 ? m - 3 : m + 9;
  const std::int64_t doy = (153 * mp + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

TimePoint reset_period_start(ResetPeriod period, TimePoint t) {
  const std::int64_t days = floor_div(t, kDay);
  switch (period) {
    case ResetPeriod::kNone:
    case ResetPeriod::kNow:
      return std::numeric_limits<TimePoint>::min();
    case ResetPeriod::kDaily:
      return days * kDay;
    case ResetPeriod::kWeekly: {
      // 1970-01-01 was a Thursday; 1970-01-04 (day 3) the first Sunday.
      const std::int64_t week = floor_div(days - 3, 7);
      return (week * 7 + 3) * kDay;
    }
    case ResetPeriod::kMonthly: {
      const CivilDate c = civil_from_days(days);
      return days_from_civil(c.year, c.month, 1) * kDay;
    }
    case ResetPeriod::kQuarterly: {
      const CivilDate c = civil_from_days(days);
      const int first_month = ((c.month - 1) / 3) * 3 + 1;
      return days_from_civil(c.year, first_month, 1) * kDay;
    }
    case ResetPeriod::kYearly: {
      const CivilDate c = civil_from_days(days);
      return days_from_civil(c.year, 1, 1) * kDay;
    }
  }
  return std::numeric_limits<TimePoint>::min();
}

bool reset_boundary_crossed(ResetPeriod period, TimePoint from, TimePoint to) {
  if (period == ResetPeriod::kNone || period == ResetPeriod::kNow) return false;
  if (to <= from) return false;
  return reset_period_start(period, to) > from;
}

std::string_view reset_period_name(ResetPeriod period) {
  switch (period) {
    case ResetPeriod::kNone: return "none";
    case ResetPeriod::kNow: return "now";
    case ResetPeriod::kDaily: return "daily";
    case ResetPeriod::kWeekly: return "weekly";
    case ResetPeriod::kMonthly: return "monthly";
    case ResetPeriod::kQuarterly: return "quarterly";
    case ResetPeriod::kYearly: return "yearly";
  }
  return "none";
}

std::optional<ResetPeriod> parse_reset_period(std::string_view text) {
  std::string lower;
  for (char c : text) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (ResetPeriod p : {ResetPeriod::kNone, ResetPeriod::kNow, ResetPeriod::kDaily,
                        ResetPeriod::kWeekly, ResetPeriod::kMonthly,
                        ResetPeriod::kQuarterly, ResetPeriod::kYearly}) {
    if (lower == reset_period_name(p)) return p;
  }
  return std::nullopt;
}

}  // namespace gpufair
