// PriorityUsageResetPeriod: usage is zeroed whenever a UTC calendar boundary
// of the configured period is crossed (day; week starting Sunday 00:00; month;
// quarter; year). Calendar math is done on civil dates, never via the C
// library's time zone state, so results do not depend on TZ.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "gpufair/config.h"
#include "gpufair/time.h"

namespace gpufair {

// Start (UTC) of the reset period that contains t. For kNone/kNow: INT64_MIN.
TimePoint reset_period_start(ResetPeriod period, TimePoint t);

// True when a boundary of `period` lies in (from, to]. kNone/kNow: never.
bool reset_boundary_crossed(ResetPeriod period, TimePoint from, TimePoint to);

std::string_view reset_period_name(ResetPeriod period);
std::optional<ResetPeriod> parse_reset_period(std::string_view text);  // case-insensitive

}  // namespace gpufair
