// Helpers shared by the engine's tests: a configuration from a
// PriorityParameters string, and a job reference.
#pragma once

#include <string_view>

#include <gtest/gtest.h>

#include "gpufair/config.h"
#include "gpufair/job.h"

namespace gpufair::testing {

inline Config config_from(std::string_view params) {
  auto c = parse_config(params);
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? *c : Config{};
}

// start = 0: pending.
inline JobRef make_job(JobId id, TeamId team, int rank, double gpus, TimePoint submit, TimePoint start = 0) {
  JobRef j;
  j.id = id;
  j.team = team;
  j.rank = rank;
  j.gpus = gpus;
  j.submit = submit;
  j.start = start;
  return j;
}

}  // namespace gpufair::testing
