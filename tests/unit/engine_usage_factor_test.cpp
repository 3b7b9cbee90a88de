// Engine: a job's QOS UsageFactor scales what its GPU-seconds cost its team
// in the usage ledger (design.md, "Usage ledger"), and nothing else: not
// the GPUs the team holds, not the bait detector's evidence, not the price
// of a queue jump. The factor survives a save and load; older state files
// load with every job at 1. Time is a ManualClock; nothing sleeps.
#include "gpufair/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gpufair/decay.h"
#include "gpufair/state.h"
#include "engine_test_util.h"

namespace gpufair {
namespace {

constexpr TimePoint kT0 = 1'700'000'000;
constexpr Seconds kHour = 3600;

using testing::config_from;
using testing::make_job;

JobRef with_factor(JobRef j, double f) {
  j.usage_factor = f;
  return j;
}

// One team, one 4-GPU job charged every `step` for `total` seconds.
struct OneJob {
  OneJob(std::string_view params, double factor) : engine(config_from(params)) {
    team = engine.team_for_account("a");
    job = with_factor(make_job(1, team, 0, 4, kT0, kT0), factor);
  }
  void run_for(Seconds total, Seconds step) {
    for (Seconds t = 0; t < total; t += step) {
      clock.advance(step);
      engine.begin_cycle(clock.now());
      engine.observe_running(job, clock.now());
      engine.end_cycle(clock.now());
    }
  }
  TeamReport report() const { return engine.team_report(team, clock.now()); }
  ManualClock clock{kT0};
  Engine engine;
  TeamId team = -1;
  JobRef job;
};

TEST(EngineUsageFactor, ScalesDecayedAndRawUsage) {
  struct Case {
    double factor;
    const char* why;
  };
  const Case cases[] = {
      {0.0, "a free QOS charges nothing"},
      {0.5, "half price"},
      {1.0, "the default"},
      {2.0, "double price"},
  };
  for (const Case& c : cases) {
    for (const char* params : {"half_life=0", "half_life=1h"}) {
      OneJob run(params, c.factor);
      OneJob full(params, 1.0);
      run.run_for(2 * kHour, 300);
      full.run_for(2 * kHour, 300);
      const TeamReport r = run.report(), f = full.report();
      ASSERT_GT(f.usage_gpu_s, 0) << params;
      EXPECT_NEAR(r.raw_usage_gpu_s, c.factor * 4 * 2 * kHour, 1e-9) << c.why << ", " << params;
      EXPECT_NEAR(r.usage_gpu_s, c.factor * f.usage_gpu_s, 1e-9 * f.usage_gpu_s) << c.why << ", " << params;
      // Holding GPUs is holding GPUs: entitlements and reclaim see them all.
      EXPECT_DOUBLE_EQ(r.held_gpus, 4) << c.why;
    }
  }
}

TEST(EngineUsageFactor, EndOfAJobIsChargedAtItsFactor) {
  OneJob run("half_life=0", 0.5);
  run.run_for(600, 300);
  run.engine.job_ended(run.job.id, run.clock.now() + 100);
  EXPECT_NEAR(run.engine.team_report(run.team, run.clock.now() + 100).raw_usage_gpu_s,
              0.5 * 4 * 700, 1e-9);
}

TEST(EngineUsageFactor, AChangedFactorAppliesFromTheNextCharge) {
  // As multifactor: the factor in force when a period is charged.
  OneJob run("half_life=0", 1.0);
  run.run_for(300, 300);
  run.job.usage_factor = 0;
  run.run_for(600, 300);
  run.job.usage_factor = 2;
  run.run_for(300, 300);
  EXPECT_NEAR(run.report().raw_usage_gpu_s, 4 * 300 + 0 + 2 * 4 * 300, 1e-9);
}

TEST(EngineUsageFactor, BadFactorsAreRefusedByName) {
  OneJob run("", 1.0);
  run.engine.begin_cycle(kT0 + 1);
  for (double bad : {-0.5, std::nan(""), double(INFINITY)}) {
    try {
      run.engine.observe_running(with_factor(run.job, bad), kT0 + 1);
      ADD_FAILURE() << "accepted usage_factor " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("usage_factor"), std::string::npos) << e.what();
    }
  }
}

// The same gaming history twice, the placeholders in a free QOS or not: the
// detector's verdict, its evidence and the jump's price are the same (a free
// QOS must not make placeholders invisible); only the usage differs.
TEST(EngineUsageFactor, DetectorEvidenceAndJumpPriceAreNotScaled) {
  std::vector<BaitDecision> decisions[2];
  double usage[2] = {0, 0};
  const double factors[2] = {1.0, 0.0};
  for (int k = 0; k < 2; ++k) {
    Engine e(config_from("bait_profile=fast,half_life=0"));
    const TeamId gamer = e.team_for_account("gamer"), other = e.team_for_account("other");
    ManualClock clock(kT0);
    std::vector<JobRef> running;
    JobId next = 100;
    for (int i = 0; i < 4; ++i)
      running.push_back(with_factor(make_job(next++, gamer, 0, 8, kT0 - 600, kT0 - 600), factors[k]));
    const JobRef waiting = make_job(1, other, 0, 8, kT0 - 2 * kHour);
    auto cycle = [&] {
      e.begin_cycle(clock.now());
      for (const auto& j : running) e.observe_running(j, clock.now());
      e.observe_pending(waiting);
      e.end_cycle(clock.now());
    };
    cycle();
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 3; ++i) {
        clock.advance(300);
        cycle();
      }
      const JobRef victim = running.front();
      running.erase(running.begin());
      const JobRef preemptor = make_job(next++, gamer, 10, 8, clock.now() - 60);
      decisions[k].push_back(e.record_preemption(preemptor, victim, clock.now()));
      e.job_ended(victim.id, clock.now());
      running.push_back(with_factor(make_job(next++, gamer, 0, 8, clock.now(), clock.now()), factors[k]));
    }
    usage[k] = e.team_report(gamer, clock.now()).raw_usage_gpu_s;
  }
  ASSERT_EQ(decisions[0].size(), decisions[1].size());
  for (std::size_t i = 0; i < decisions[0].size(); ++i) {
    EXPECT_EQ(decisions[1][i].bait, decisions[0][i].bait) << i;
    EXPECT_DOUBLE_EQ(decisions[1][i].score, decisions[0][i].score) << i;
    EXPECT_DOUBLE_EQ(decisions[1][i].charged_gpu_s, decisions[0][i].charged_gpu_s) << i;
    EXPECT_EQ(decisions[1][i].reason, decisions[0][i].reason) << i;
  }
  EXPECT_TRUE(decisions[0].back().bait) << decisions[0].back().reason;
  double prices = 0;
  for (const auto& d : decisions[1]) prices += d.charged_gpu_s;
  EXPECT_GT(prices, 0);
  // With free placeholders the team's usage is only the prices it paid.
  EXPECT_NEAR(usage[1], prices, 1e-6);
  EXPECT_GT(usage[0], usage[1] + 4 * 8 * 900);
}

TEST(EngineUsageFactor, SurvivesSaveAndLoad) {
  OneJob run("half_life=0", 0.25);
  run.run_for(600, 300);
  Engine copy(config_from("half_life=0"));
  ASSERT_TRUE(copy.load_state(run.engine.save_state()).ok());
  // The loaded engine ends the job: the rest of its run is charged at the
  // factor saved with it.
  ManualClock clock(run.clock.now());
  clock.advance(300);
  copy.begin_cycle(clock.now());
  copy.job_ended(run.job.id, clock.now());  // charged at its saved 0.25
  EXPECT_NEAR(copy.team_report(copy.team_for_account("a"), clock.now()).raw_usage_gpu_s,
              0.25 * 4 * 900, 1e-9);
}

TEST(EngineUsageFactor, FormatFiveStateLoadsWithEveryJobAtOne) {
  // A version-5 file is a version-6 one without each running job's factor
  // (the last field of its record; the jobs come last), and a version-6 one
  // a version-8 one without the open-price count and the two job lists'
  // counts (0 here) after the jobs.
  OneJob run("half_life=0", 0.25);
  run.run_for(300, 300);
  const auto v8 = run.engine.save_state();
  ASSERT_TRUE(std::all_of(v8.end() - 24, v8.end(), [](std::uint8_t x) { return x == 0; }));
  std::vector<std::uint8_t> payload(v8.begin() + kStateHeaderSize, v8.end() - 32);
  auto v5 = frame_state(payload);
  v5[8] = 5;  // the checksum covers the payload only
  Engine old(config_from("half_life=0"));
  auto r = old.load_state(v5);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const TimePoint end = run.clock.now() + 100;
  old.job_ended(run.job.id, end);
  EXPECT_NEAR(old.team_report(0, end).raw_usage_gpu_s, 0.25 * 4 * 300 + 1.0 * 4 * 100, 1e-9);
  // The same bytes called version 6 are short by one field: corrupt.
  auto short6 = frame_state(payload);
  short6[8] = 6;
  EXPECT_FALSE(Engine(config_from("")).load_state(short6).ok());
}

}  // namespace
}  // namespace gpufair
