// Engine and the clock (design.md, "Usage ledger"): charging running jobs is
// exact for any cycle period, and a clock that steps forward or back neither
// charges time that did not pass nor freezes decay. Time is a fake clock:
// every test drives the engine with explicit times and nothing sleeps.
#include "gpufair/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "gpufair/decay.h"
#include "engine_test_util.h"

namespace gpufair {
namespace {

constexpr TimePoint kT0 = 1'700'000'000;
constexpr Seconds kMinute = 60;
constexpr Seconds kHour = 3600;
constexpr Seconds kDay = 86400;
constexpr Seconds kPeriod = 300;  // the default calc_period

using testing::config_from;

JobRef running_job(JobId id, TeamId team, double gpus, TimePoint start, int rank = 0) {
  return testing::make_job(id, team, rank, gpus, start, start);
}

// Every job runs as user "u" of the sub-account "<team>/lab".
JobRef as_user(Engine& e, JobRef j) {
  j.assoc = e.assoc_for(e.team_name(j.team) + "/lab", "u");
  return j;
}

// One cycle as the plugin runs it: every running job observed at the cycle's time.
void cycle(Engine& e, TimePoint now, const std::vector<JobRef>& running) {
  e.begin_cycle(now);
  for (const JobRef& j : running) e.observe_running(as_user(e, j), now);
  e.end_cycle(now);
}

// The associations on a job's way (the user's, the sub-account's) keep
// their ledgers by the same code as the team's: through every rule below
// (decay, exact charging, leaps, steps back, resets) they stay equal to it
// (no jump price is paid in this file).
void expect_assocs_follow_team(const Engine& e, TeamId t, TimePoint now) {
  const TeamReport team = e.team_report(t, now);
  for (const AssocReport& r : e.assoc_reports(now)) {
    if (r.team != t || r.parent < 0) continue;
    EXPECT_EQ(r.usage_gpu_s, team.usage_gpu_s) << r.account << " user '" << r.user << "' at " << now;
    EXPECT_EQ(r.raw_usage_gpu_s, team.raw_usage_gpu_s) << r.account << " user '" << r.user << "' at " << now;
  }
}

double usage(const Engine& e, TeamId t, TimePoint now) {
  expect_assocs_follow_team(e, t, now);
  return e.team_report(t, now).usage_gpu_s;
}
double raw(const Engine& e, TeamId t, TimePoint now) {
  expect_assocs_follow_team(e, t, now);
  return e.team_report(t, now).raw_usage_gpu_s;
}

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

// ---- A clock that steps forward and comes back ---------------------------------------

// The host's wall clock is real time plus an offset; jobs' start times are
// stamped with the wall clock (as slurmctld does). The reference engine sees
// the same cycles with a correct clock.
enum class Start { kBeforeStep, kDuringStep, kAfterReturn };

struct StepCase {
  const char* name;
  Start start;
  int stepped_cycles;  // cycles run while the clock is ahead
  Seconds offset;      // how far ahead
};

void PrintTo(const StepCase& c, std::ostream* os) { *os << c.name; }

class ForwardStepAndReturn : public ::testing::TestWithParam<StepCase> {};

TEST_P(ForwardStepAndReturn, LeavesUsageAsIfTheStepHadNotHappened) {
  const StepCase& c = GetParam();
  Engine stepped(config_from("half_life=7d"));
  Engine ref(config_from("half_life=7d"));
  TeamId a = -1, b = -1;
  for (Engine* e : {&stepped, &ref}) {
    a = e->team_for_account("a");
    b = e->team_for_account("b");
  }
  const TimePoint step = kT0 + 2 * kDay - 10;  // the clock jumps ahead 10 s before a cycle
  const TimePoint back = step + c.stepped_cycles * kPeriod;  // and comes back 10 s before another
  const TimePoint finish = back + kDay + 10;
  auto wall = [&](TimePoint real, bool with_step) {
    return with_step && real >= step && real < back ? real + c.offset : real;
  };
  // Team a's 8-GPU job (the case's start); team b ran 4 GPUs on day 0 only,
  // so its usage just decays: the step must not have decayed it for 30 days.
  const TimePoint a_start = c.start == Start::kBeforeStep  ? kT0
                            : c.start == Start::kDuringStep ? step + c.stepped_cycles / 2 * kPeriod + 5
                                                            : back + 100;
  auto running = [&](TimePoint real, bool with_step) {
    std::vector<JobRef> out;
    if (real < kT0 + kDay) out.push_back(running_job(2, b, 4, kT0));
    if (real >= a_start) out.push_back(running_job(1, a, 8, wall(a_start, with_step)));
    return out;
  };
  for (TimePoint real = kT0; real <= finish; real += kPeriod) {
    if (real == kT0 + kDay) {
      stepped.job_ended(2, real);
      ref.job_ended(2, real);
    }
    cycle(stepped, wall(real, true), running(real, true));
    cycle(ref, wall(real, false), running(real, false));
    if (real == step + 10 && c.start == Start::kBeforeStep) {  // the first stepped cycle: the damage is there
      EXPECT_GT(raw(stepped, a, wall(real, true)), raw(ref, a, real)) << "the step is charged at first";
    }
  }
  const TimePoint end = finish;
  std::printf("[ figure   ] %s: team a %.2f GPU-days (reference %.2f), raw %.2f (%.2f); team b %.4f (%.4f)\n",
              c.name, usage(stepped, a, end) / kDay, usage(ref, a, end) / kDay, raw(stepped, a, end) / kDay,
              raw(ref, a, end) / kDay, usage(stepped, b, end) / kDay, usage(ref, b, end) / kDay);
  // Within one calc period's worth of the job's charge...
  const double one_period = 8.0 * kPeriod;
  EXPECT_NEAR(usage(stepped, a, end), usage(ref, a, end), one_period);
  EXPECT_NEAR(raw(stepped, a, end), raw(ref, a, end), one_period);
  // ...and a team that ran nothing through the step decays as if it had not happened.
  EXPECT_NEAR(usage(stepped, b, end) / usage(ref, b, end), 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(raw(stepped, b, end), raw(ref, b, end));
  // Decay runs again: a day later both have decayed alike.
  cycle(stepped, end + kDay, {});
  cycle(ref, end + kDay, {});
  EXPECT_NEAR(usage(stepped, a, end + kDay), usage(ref, a, end + kDay), one_period);
  EXPECT_NEAR(usage(stepped, b, end + kDay) / usage(ref, b, end + kDay), 1.0, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ForwardStepAndReturn,
    ::testing::Values(StepCase{"started_before_one_cycle", Start::kBeforeStep, 1, 30 * kDay},
                      StepCase{"started_during_one_cycle", Start::kDuringStep, 1, 30 * kDay},
                      StepCase{"started_after_return_one_cycle", Start::kAfterReturn, 1, 30 * kDay},
                      StepCase{"started_before_twelve_cycles", Start::kBeforeStep, 12, 30 * kDay},
                      StepCase{"started_during_twelve_cycles", Start::kDuringStep, 12, 30 * kDay},
                      StepCase{"started_after_return_twelve_cycles", Start::kAfterReturn, 12, 30 * kDay},
                      StepCase{"started_before_two_hours_ahead", Start::kBeforeStep, 1, 2 * kHour},
                      // Shorter than the leap bound: the return pauses the ledger instead.
                      StepCase{"started_before_thirty_minutes_ahead", Start::kBeforeStep, 1, 30 * kMinute}),
    [](const auto& info) { return std::string(info.param.name); });

// A job that ends while the clock is ahead, reported with its (stepped) end
// time before the first stepped cycle: the stepped part is taken back too.
TEST(ForwardStepAndReturnEdges, JobEndedWithASteppedEndTime) {
  Engine stepped(config_from("half_life=7d"));
  const TeamId a = stepped.team_for_account("a");
  const std::vector<JobRef> run = {running_job(1, a, 8, kT0)};
  for (TimePoint t = kT0; t <= kT0 + kDay; t += kPeriod) cycle(stepped, t, run);
  const double before = raw(stepped, a, kT0 + kDay);
  // The clock jumps 30 days ahead 100 s after the cycle; the job ends 50 s later.
  stepped.job_ended(1, kT0 + kDay + 150 + 30 * kDay);
  cycle(stepped, kT0 + kDay + kPeriod + 30 * kDay, {});
  cycle(stepped, kT0 + kDay + 2 * kPeriod, {});  // back
  // Charged at most one period (really 150 s) after the last good cycle.
  EXPECT_LE(raw(stepped, a, kT0 + kDay + 2 * kPeriod) - before, 8.0 * kPeriod);
  EXPECT_GE(raw(stepped, a, kT0 + kDay + 2 * kPeriod) - before, 0.0);
}

// A forward step that is never taken back is real time (a slurmctld
// suspended for hours, a restart after a day down): charged at once.
TEST(ForwardStepAndReturnEdges, ALongGapWithoutAReturnIsCharged) {
  Engine e(config_from("half_life=0"));
  const TeamId a = e.team_for_account("a");
  const std::vector<JobRef> run = {running_job(1, a, 2, kT0)};
  cycle(e, kT0, run);
  cycle(e, kT0 + 6 * kHour, run);  // suspended for six hours
  EXPECT_DOUBLE_EQ(raw(e, a, kT0 + 6 * kHour), 2.0 * 6 * kHour);
  for (TimePoint t = kT0 + 6 * kHour + kPeriod; t <= kT0 + 7 * kHour; t += kPeriod) cycle(e, t, run);
  EXPECT_DOUBLE_EQ(raw(e, a, kT0 + 7 * kHour), 2.0 * 7 * kHour);
  EXPECT_DOUBLE_EQ(usage(e, a, kT0 + 7 * kHour), 2.0 * 7 * kHour);
}

// ---- A clock that steps back ---------------------------------------------------------

struct BackCase {
  const char* name;
  Seconds back;        // how far the clock steps back
  bool pauses;         // the ledger waits for the clock to catch up (else: resumes at once)
};

void PrintTo(const BackCase& c, std::ostream* os) { *os << c.name; }

class BackwardStep : public ::testing::TestWithParam<BackCase> {};

TEST_P(BackwardStep, NeverChargesNegativeTimeNorGrowsUsageBack) {
  const BackCase& c = GetParam();
  Engine e(config_from("half_life=1d"));
  const TeamId a = e.team_for_account("a");
  const TeamId idle = e.team_for_account("idle");
  const TeamId other = e.team_for_account("other");
  const std::vector<JobRef> run = {running_job(1, a, 2, kT0)};
  const std::vector<JobRef> both = {running_job(1, a, 2, kT0), running_job(2, idle, 1, kT0)};
  TimePoint t = kT0;
  for (; t <= kT0 + kDay; t += kPeriod) cycle(e, t, t < kT0 + kHour ? both : run);
  const TimePoint last = t - kPeriod;  // the last cycle before the step
  const double u_before = usage(e, a, last), raw_before = raw(e, a, last), idle_before = usage(e, idle, last);

  // The clock steps back: the next cycle comes at last + period - back.
  TimePoint now = last + kPeriod - c.back;
  cycle(e, now, run);
  EXPECT_LE(usage(e, a, now), u_before) << "usage grew back";
  EXPECT_DOUBLE_EQ(raw(e, a, now), raw_before) << "charged across a backward step";
  EXPECT_LE(usage(e, idle, now), idle_before) << "decay undone";
  // A job first seen now, with a start stamped before the step (in the
  // future of the clock now), is not charged negative time.
  JobRef future = running_job(3, other, 1, last);
  e.begin_cycle(now + 1);
  e.observe_running(as_user(e, future), now + 1);
  e.observe_running(as_user(e, run[0]), now + 1);
  e.end_cycle(now + 1);
  EXPECT_DOUBLE_EQ(raw(e, other, now + 1), 0.0);  // nothing: its start is after the clock
  e.job_ended(3, now + 1);
  EXPECT_DOUBLE_EQ(raw(e, other, now + 1), 0.0);

  // The clock runs on, one cycle per period, for six hours.
  double prev_raw = raw(e, a, now + 1), prev_idle = usage(e, idle, now + 1);
  for (int k = 0; k < 72; ++k) {
    now += kPeriod;
    cycle(e, now, run);
    EXPECT_GE(raw(e, a, now), prev_raw);
    EXPECT_LE(usage(e, idle, now), prev_idle);
    prev_raw = raw(e, a, now);
    prev_idle = usage(e, idle, now);
  }
  if (c.pauses) {
    // The time the clock counted early is not counted again: once the clock
    // has caught up, the job has been charged exactly its run.
    EXPECT_DOUBLE_EQ(raw(e, a, now), 2.0 * static_cast<double>(now - kT0));
    EXPECT_NEAR(usage(e, idle, now) / decayed(idle_before, now - last, kDay), 1.0, 1e-9);
  } else {
    // Charging and decay resumed at the step: nothing is frozen.
    EXPECT_DOUBLE_EQ(raw(e, a, now), raw_before + 2.0 * static_cast<double>(now - (last + kPeriod - c.back)));
    EXPECT_NEAR(usage(e, idle, now) / decayed(idle_before, now - (last + kPeriod - c.back), kDay), 1.0, 1e-9);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BackwardStep,
                         ::testing::Values(BackCase{"ten_minutes_pauses", 10 * kMinute + kPeriod, true},
                                           BackCase{"one_hour_pauses", kHour + kPeriod, true},
                                           BackCase{"two_hours_resumes", 2 * kHour + kPeriod, false},
                                           BackCase{"two_days_resumes", 2 * kDay + kPeriod, false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace gpufair
