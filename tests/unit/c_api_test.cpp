// The C API as the Slurm plugins use it: error codes, messages, NULLs, and
// the process-wide engine.
#include "gpufair/c_api.h"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(CApiSmoke, EngineLifecycleAndGlobal) {
  char err[512] = "";
  gpufair_engine_t* e = gpufair_engine_new("bait_threshold=0.6", nullptr, err, sizeof err);
  ASSERT_NE(e, nullptr) << err;
  gpufair_global_set(e);
  EXPECT_EQ(gpufair_global_get(), e);
  const int32_t team = gpufair_team_id(e, "teama");
  EXPECT_GE(team, 0);
  EXPECT_EQ(gpufair_cycle_begin(e, 1000), GPUFAIR_OK);
  EXPECT_EQ(gpufair_cycle_end(e, 1000), GPUFAIR_OK);
  gpufair_prio_input_t in{};
  in.team = team;
  in.eligible_time = 500;
  EXPECT_GT(gpufair_priority(e, &in, 1000, nullptr), 1u);
  gpufair_engine_free(e);
  EXPECT_EQ(gpufair_global_get(), nullptr);
}

TEST(CApiSmoke, BadConfigIsReported) {
  char err[512] = "";
  EXPECT_EQ(gpufair_engine_new("half_lfe=7d", nullptr, err, sizeof err), nullptr);
  EXPECT_NE(std::string(err).find("half_life"), std::string::npos) << err;
}

}  // namespace
