// Engine and time (design.md, "Usage ledger"): charging running jobs is
// exact for any cycle period. Time is a fake clock: every test drives the
// engine with explicit times and nothing sleeps.
#include "gpufair/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "gpufair/decay.h"

namespace gpufair {
namespace {

constexpr TimePoint kT0 = 1'700'000'000;
constexpr Seconds kMinute = 60;
constexpr Seconds kHour = 3600;
constexpr Seconds kDay = 86400;
constexpr Seconds kPeriod = 300;  // the default calc_period

Config config_from(std::string_view params) {
  auto c = parse_config(params);
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? *c : Config{};
}

JobRef running_job(JobId id, TeamId team, double gpus, TimePoint start, int rank = 0) {
  JobRef j;
  j.id = id;
  j.team = team;
  j.rank = rank;
  j.gpus = gpus;
  j.submit = start;
  j.start = start;
  return j;
}

// One cycle as the plugin runs it: every running job observed at the cycle's time.
void cycle(Engine& e, TimePoint now, const std::vector<JobRef>& running) {
  e.begin_cycle(now);
  for (const auto& j : running) e.observe_running(j, now);
  e.end_cycle(now);
}

double usage(const Engine& e, TeamId t, TimePoint now) { return e.team_report(t, now).usage_gpu_s; }
double raw(const Engine& e, TeamId t, TimePoint now) { return e.team_report(t, now).raw_usage_gpu_s; }

// ---- Exact for any period ----------------------------------------------------------

struct PeriodCase {
  const char* name;
  Seconds period;
  Seconds half_life;
};

void PrintTo(const PeriodCase& c, std::ostream* os) { *os << c.name; }

class ChargingIsExact : public ::testing::TestWithParam<PeriodCase> {};

// The host runs a cycle every calc_period (at most a day: the longest allowed).
Config config_for(const PeriodCase& c) {
  return config_from("half_life=" + std::to_string(c.half_life) +
                     ",calc_period=" + std::to_string(std::min(c.period, kDay)));
}

// An 8-GPU job running for 30 days, observed every `period`: its decayed
// usage is the continuous integral, whatever the period.
TEST_P(ChargingIsExact, RunningJobEqualsTheContinuousIntegral) {
  const PeriodCase& c = GetParam();
  Engine e(config_for(c));
  const TeamId a = e.team_for_account("a");
  const std::vector<JobRef> run = {running_job(1, a, 8, kT0)};
  const TimePoint end = kT0 + 30 * kDay;
  for (TimePoint t = kT0; t <= end; t += c.period) cycle(e, t, run);
  const double exact = 8 * decayed_integral(30 * kDay, c.half_life);
  EXPECT_NEAR(usage(e, a, end) / exact, 1.0, 1e-9) << "usage " << usage(e, a, end) << " exact " << exact;
  EXPECT_DOUBLE_EQ(raw(e, a, end), 8.0 * 30 * kDay);  // raw usage is never decayed
  // Read between cycles, the view decays it exactly too.
  EXPECT_NEAR(usage(e, a, end + kHour) / decayed(exact, kHour, c.half_life), 1.0, 1e-9);
}

// The job ends between two cycles (job_ended at its own time): charged up to
// its end, then decayed with everything else; exact too.
TEST_P(ChargingIsExact, JobEndedBetweenCyclesEqualsTheContinuousIntegral) {
  const PeriodCase& c = GetParam();
  Engine e(config_for(c));
  const TeamId a = e.team_for_account("a");
  const std::vector<JobRef> run = {running_job(1, a, 8, kT0)};
  const TimePoint job_end = kT0 + 10 * kDay + 1234;
  const TimePoint end = kT0 + 30 * kDay;
  bool ended = false;
  for (TimePoint t = kT0; t <= end; t += c.period) {
    if (!ended && t > job_end) {
      e.job_ended(1, job_end);  // reported between the cycles
      ended = true;
    }
    cycle(e, t, ended ? std::vector<JobRef>{} : run);
  }
  const double exact = 8 * decayed_integral(job_end - kT0, c.half_life) *
                       decay_factor(end - job_end, c.half_life);
  EXPECT_NEAR(usage(e, a, end) / exact, 1.0, 1e-9) << "usage " << usage(e, a, end) << " exact " << exact;
  EXPECT_DOUBLE_EQ(raw(e, a, end), 8.0 * static_cast<double>(job_end - kT0));
}

INSTANTIATE_TEST_SUITE_P(Periods, ChargingIsExact,
                         ::testing::Values(PeriodCase{"minute_7d", kMinute, 7 * kDay},
                                           PeriodCase{"hour_7d", kHour, 7 * kDay},
                                           PeriodCase{"day_7d", kDay, 7 * kDay},
                                           PeriodCase{"minute_1d", kMinute, kDay},
                                           PeriodCase{"hour_1d", kHour, kDay},
                                           PeriodCase{"day_1d", kDay, kDay},
                                           PeriodCase{"five_days_1d", 5 * kDay, kDay}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ChargingIsExactAcrossPeriods, OneMinuteAndOneDayAgree) {
  double got[2];
  const Seconds periods[2] = {kMinute, kDay};
  for (int i = 0; i < 2; ++i) {
    Engine e(config_from("half_life=1d"));
    const TeamId a = e.team_for_account("a");
    const std::vector<JobRef> run = {running_job(1, a, 8, kT0)};
    for (TimePoint t = kT0; t <= kT0 + 30 * kDay; t += periods[i]) cycle(e, t, run);
    got[i] = usage(e, a, kT0 + 30 * kDay);
  }
  EXPECT_NEAR(got[0] / got[1], 1.0, 1e-9);
}

// The detector's memory of low-rank GPU-seconds (half-life bait_window) is
// charged the same way: what a preemption judgement sees does not depend on
// the period. Read from the judgement's reason ("... of N recent low-rank GPU-s").
double low_rank_gpu_s_seen(Seconds period) {
  Engine e(config_from("half_life=7d,bait_window=1d"));
  const TeamId a = e.team_for_account("a");
  const std::vector<JobRef> run = {running_job(1, a, 8, kT0, /*rank=*/0)};
  const TimePoint when = kT0 + 3 * kDay + kHour;  // a cycle of the fine host, between two of the coarse one
  for (TimePoint t = kT0; t <= when; t += period) cycle(e, t, run);
  JobRef preemptor = running_job(2, a, 8, 0, /*rank=*/1);
  preemptor.start = 0;
  preemptor.submit = when - 10;
  const BaitDecision d = e.record_preemption(preemptor, run[0], when);
  const auto pos2 = d.reason.find(" recent low-rank GPU-s");
  const auto pos = pos2 == std::string::npos ? pos2 : d.reason.rfind(" of ", pos2);
  EXPECT_NE(pos, std::string::npos) << d.reason;
  if (pos == std::string::npos) return -1;
  return std::stod(d.reason.substr(pos + 4, pos2 - pos - 4));
}

TEST(ChargingIsExactAcrossPeriods, DetectorMemoryDoesNotDependOnThePeriod) {
  const double exact = 8 * decayed_integral(3 * kDay + kHour, kDay);
  for (Seconds p : {kMinute, kHour, kDay}) {
    // The reason prints whole GPU-seconds.
    EXPECT_NEAR(low_rank_gpu_s_seen(p), exact, 1.0) << "period " << p;
  }
}

}  // namespace
}  // namespace gpufair
