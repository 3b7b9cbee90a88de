// Engine: the cycle, charging of running jobs, the detector on whole
// sequences, penalties, preemption rules, priorities and state as a whole.
// Time is a ManualClock; nothing sleeps.
#include "gpufair/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <utility>

#include "gpufair/decay.h"
#include "gpufair/priority.h"
#include "gpufair/state.h"
#include "engine_test_util.h"

namespace gpufair {
namespace {

constexpr TimePoint kT0 = 1'700'000'000;
constexpr Seconds kHour = 3600;
constexpr Seconds kDay = 86400;

using testing::config_from;
using testing::make_job;

// A tiny host: the jobs it reports each cycle, and a clock.
struct Host {
  explicit Host(std::string_view params = "") : engine(config_from(params)) {}
  ManualClock clock{kT0};
  Engine engine;
  std::vector<JobRef> running, pending;

  TimePoint now() const { return clock.now(); }
  void cycle() {
    engine.begin_cycle(now());
    for (const auto& j : running) engine.observe_running(j, now());
    for (const auto& j : pending) engine.observe_pending(j);
    engine.end_cycle(now());
  }
  void run_for(Seconds total, Seconds step) {
    for (Seconds t = 0; t < total; t += step) {
      clock.advance(step);
      cycle();
    }
  }
  double usage(TeamId t) { return engine.team_report(t, now()).usage_gpu_s; }
  double penalty(TeamId t) { return engine.team_report(t, now()).penalty; }
};

// ---- Teams -------------------------------------------------------------------

TEST(EngineTeams, RollUpUsesTeamLevel) {
  Host h("team_level=2");
  const TeamId nlp = h.engine.team_for_account("teama/nlp/interns");
  EXPECT_EQ(nlp, h.engine.team_for_account("teama/nlp"));
  EXPECT_NE(nlp, h.engine.team_for_account("teama/vision"));
  EXPECT_EQ(h.engine.team_name(nlp), "teama/nlp");
  EXPECT_EQ(h.engine.team_for_account(""), -1);
  EXPECT_EQ(h.engine.team_count(), 2);
  EXPECT_EQ(h.engine.team_name(99), "");
}

TEST(EngineTeams, BadTeamIdsAreErrorsNotCrashes) {
  Host h;
  EXPECT_THROW(h.engine.set_shares(5, 1), std::invalid_argument);
  EXPECT_THROW(h.engine.observe_running(make_job(1, 7, 0, 1, kT0, kT0), kT0), std::invalid_argument);
  EXPECT_THROW(h.engine.observe_pending(make_job(1, -1, 0, 1, kT0)), std::invalid_argument);
  EXPECT_THROW(h.engine.team_report(3, kT0), std::invalid_argument);
  const TeamId a = h.engine.team_for_account("a");
  EXPECT_THROW(h.engine.set_shares(a, std::nan("")), std::invalid_argument);
  EXPECT_THROW(h.engine.set_shares(a, -1), std::invalid_argument);
  EXPECT_THROW(h.engine.set_cluster_gpus(-1), std::invalid_argument);
}

// ---- Charging running jobs -----------------------------------------------------

TEST(EngineCharging, RunningJobsAreChargedEachCycleFromTheirStart) {
  Host h("half_life=0");
  const TeamId a = h.engine.team_for_account("a");
  h.running = {make_job(1, a, 0, 4, kT0 - 200, kT0 - 100)};
  h.cycle();
  EXPECT_DOUBLE_EQ(h.usage(a), 4 * 100.0);  // first sight: from its start
  h.run_for(600, 300);
  EXPECT_DOUBLE_EQ(h.usage(a), 4 * 700.0);
  h.engine.job_ended(1, h.now() + 50);  // ends between cycles: charged up to its end
  EXPECT_DOUBLE_EQ(h.usage(a), 4 * 750.0);
  h.running.clear();
  h.run_for(600, 300);
  EXPECT_DOUBLE_EQ(h.usage(a), 4 * 750.0);
  h.engine.job_ended(1, h.now());  // unknown by now: ignored
  EXPECT_DOUBLE_EQ(h.usage(a), 4 * 750.0);
  EXPECT_DOUBLE_EQ(h.engine.team_report(a, h.now()).raw_usage_gpu_s, 4 * 750.0);
}

// A job that starts after a cycle and stops before the next is never seen
// running: its end, reported with its record, charges its whole run, once
// (the host may report an end twice: its end hook, then its cycle walk).
TEST(EngineCharging, AJobThatRanBetweenTwoCyclesIsChargedOnce) {
  enum class Report {
    kBetweenCycles,
    kInTheNextWalk,
    kTwice,
    kByIdThenRecord,
    kSeenRunningThenRecord,
    kEnteredBetweenCyclesThenRecord,
    kTwiceWithARestartBetween
  };
  struct Case {
    const char* name;
    Report report;
    Seconds start_after_cycle;  // its start, from the last cycle (negative: before it)
    double gpus;
    double expected;  // GPU-seconds charged for it
  };
  const Case cases[] = {
      {"ended between cycles, reported at once", Report::kBetweenCycles, 60, 4, 4 * 120.0},
      {"reported by the next cycle's walk", Report::kInTheNextWalk, 60, 4, 4 * 120.0},
      {"reported twice: charged once", Report::kTwice, 60, 4, 4 * 120.0},
      {"its id first (unknown), then its record", Report::kByIdThenRecord, 60, 4, 4 * 120.0},
      {"seen running by a cycle: charged there, not again", Report::kSeenRunningThenRecord, 60, 4, 4 * 300.0},
      {"entered the running table between cycles (as a reclaimer does), ended by id, then its record",
       Report::kEnteredBetweenCyclesThenRecord, 60, 4, 4 * 120.0},
      {"its end hook, a restart (save, load), the next walk: charged once", Report::kTwiceWithARestartBetween, 60,
       4, 4 * 120.0},
      {"started before the last cycle: a cycle would have seen it", Report::kBetweenCycles, -60, 4, 0},
      {"GPU-less: nothing", Report::kBetweenCycles, 60, 0, 0},
  };
  for (const auto& c : cases) {
    Host h("half_life=0");
    const TeamId a = h.engine.team_for_account("a");
    h.cycle();
    const TimePoint start = h.now() + c.start_after_cycle;
    JobRef job = make_job(1, a, 0, c.gpus, start - 10, start);
    TimePoint end = start + 120;
    switch (c.report) {
      case Report::kBetweenCycles:
        h.engine.job_ended(job, end);
        break;
      case Report::kInTheNextWalk:
        h.clock.advance(300);
        h.engine.begin_cycle(h.now());
        h.engine.job_ended(job, end);
        h.engine.end_cycle(h.now());
        break;
      case Report::kTwice:  // its end hook, then the next cycle's walk
        h.engine.job_ended(job, end);
        h.clock.advance(300);
        h.engine.begin_cycle(h.now());
        h.engine.job_ended(job, end);
        h.engine.end_cycle(h.now());
        break;
      case Report::kByIdThenRecord:
        h.engine.job_ended(job.id, end);
        h.engine.job_ended(job, end);
        break;
      case Report::kSeenRunningThenRecord:
        h.clock.advance(240);  // a cycle 180 s after its start sees it
        h.running = {job};
        h.cycle();
        end = start + 300;
        h.engine.job_ended(job.id, end);
        h.running.clear();
        h.engine.job_ended(job, end);
        break;
      case Report::kEnteredBetweenCyclesThenRecord:
        h.engine.observe_running(job, start);
        h.engine.job_ended(job.id, end);
        h.engine.job_ended(job, end);
        break;
      case Report::kTwiceWithARestartBetween:
        h.engine.job_ended(job, end);
        ASSERT_TRUE(h.engine.load_state(h.engine.save_state()).ok()) << c.name;
        h.clock.advance(300);
        h.engine.begin_cycle(h.now());
        h.engine.job_ended(job, end);
        h.engine.end_cycle(h.now());
        break;
    }
    h.run_for(600, 300);
    EXPECT_DOUBLE_EQ(h.engine.team_report(a, h.now()).raw_usage_gpu_s, c.expected) << c.name;
    EXPECT_DOUBLE_EQ(h.usage(a), c.expected) << c.name;
  }
}

// A running job a cycle did not report (the walk missed it, or it was
// suspended) leaves the running table; seen running again, it is charged
// on from where its charge stopped, never from its start again, and not
// for the time it was suspended (its start is then its resume).
TEST(EngineCharging, AJobBackAfterACycleMissedItIsChargedOnce) {
  struct Case {
    const char* name;
    Seconds resumed_after;  // its reported start when back, from kT0 (0: unchanged)
    double expected;        // GPU-seconds over [kT0 - 100, kT0 + 1200]
  };
  const Case cases[] = {
      {"missed by one cycle: every second once", 0, 4 * 1300.0},
      {"suspended from kT0 + 300, resumed at kT0 + 800: not the suspended time", 800, 4 * (400.0 + 400.0)},
  };
  for (const auto& c : cases) {
    Host h("half_life=0");
    const TeamId a = h.engine.team_for_account("a");
    JobRef job = make_job(1, a, 0, 4, kT0 - 200, kT0 - 100);
    h.running = {job};
    h.cycle();
    h.run_for(300, 300);  // kT0 + 300
    h.running.clear();
    h.run_for(600, 300);  // kT0 + 900: two cycles without it
    if (c.resumed_after > 0) job.start = kT0 + c.resumed_after;
    h.running = {job};
    h.run_for(300, 300);  // kT0 + 1200
    EXPECT_DOUBLE_EQ(h.engine.team_report(a, h.now()).raw_usage_gpu_s, c.expected) << c.name;
  }
}

TEST(EngineCharging, VanishedJobIsChargedToTheLastCycleThatSawIt) {
  Host h("half_life=0");
  const TeamId a = h.engine.team_for_account("a");
  h.running = {make_job(1, a, 0, 2, kT0, kT0)};
  h.cycle();
  h.run_for(300, 300);
  EXPECT_DOUBLE_EQ(h.usage(a), 600);
  h.running.clear();  // gone without job_ended
  h.run_for(900, 300);
  EXPECT_DOUBLE_EQ(h.usage(a), 600);
  h.engine.job_ended(1, h.now());  // a late end must not charge the gap again
  EXPECT_DOUBLE_EQ(h.usage(a), 600);
}

TEST(EngineCharging, VanishedJobIsDroppedWhenAnotherEndedInTheSameCycle) {
  // end_cycle looks for vanished jobs only when the cycle saw fewer than it
  // holds: a job that ended after being seen must not make an unseen one
  // look seen.
  Host h("half_life=0");
  const TeamId a = h.engine.team_for_account("a");
  const TeamId b = h.engine.team_for_account("b");
  h.running = {make_job(1, a, 0, 2, kT0, kT0), make_job(2, b, 0, 4, kT0, kT0)};
  h.cycle();
  h.run_for(300, 300);
  h.clock.advance(300);
  h.engine.begin_cycle(h.now());
  h.engine.observe_running(h.running[0], h.now());  // job 2 is not reported
  h.engine.job_ended(1, h.now());
  h.engine.observe_running(make_job(3, a, 0, 1, h.now(), h.now()), h.now());
  h.engine.end_cycle(h.now());
  EXPECT_DOUBLE_EQ(h.engine.team_report(b, h.now()).held_gpus, 0);
  EXPECT_DOUBLE_EQ(h.engine.team_report(a, h.now()).held_gpus, 1);
  EXPECT_DOUBLE_EQ(h.usage(b), 4 * 300.0);  // charged to the last cycle that saw it
}

TEST(EngineCharging, RunningJobsInOneCallAreChargedAsOneByOne) {
  // Jobs started at different times, one of them new, through cycles of
  // different lengths (the per-cycle worth is shared by every job).
  Host one("half_life=1d"), batch("half_life=1d");
  const TeamId a = one.engine.team_for_account("a");
  ASSERT_EQ(batch.engine.team_for_account("a"), a);
  std::vector<JobRef> jobs = {make_job(1, a, 0, 2, kT0 - 500, kT0 - 500), make_job(2, a, 1, 8, kT0, kT0)};
  for (Seconds step : {300, 300, 7, 3600, 300}) {
    for (Host* h : {&one, &batch}) {
      h->clock.advance(step);
      h->engine.begin_cycle(h->now());
    }
    for (const auto& j : jobs) one.engine.observe_running(j, one.now());
    batch.engine.observe_running(std::span<const JobRef>(jobs), batch.now());
    for (Host* h : {&one, &batch}) h->engine.end_cycle(h->now());
    EXPECT_DOUBLE_EQ(batch.usage(a), one.usage(a));
    double gpus = 0;
    for (const auto& j : jobs) gpus += j.gpus;
    EXPECT_DOUBLE_EQ(batch.engine.team_report(a, batch.now()).held_gpus, gpus);
    jobs.push_back(make_job(3 + jobs.size(), a, 0, 1, one.now() - 5, one.now() - 5));
  }
  jobs.pop_back();  // added after the last cycle: never reported
  // And both hold the continuous decayed integral of every job since its start.
  double expected = 0;
  for (const auto& j : jobs)
    if (j.start < one.now()) expected += j.gpus * decayed_integral(one.now() - j.start, kDay);
  EXPECT_NEAR(one.usage(a) / expected, 1.0, 1e-9);
}

TEST(EngineCharging, EndBeforeLastChargeChargesNothingMore) {
  Host h("half_life=0");
  const TeamId a = h.engine.team_for_account("a");
  h.running = {make_job(1, a, 0, 1, kT0, kT0)};
  h.cycle();
  h.run_for(300, 300);
  h.engine.job_ended(1, kT0 + 100);
  EXPECT_DOUBLE_EQ(h.usage(a), 300);
}

TEST(EngineCharging, DecayThroughCyclesIsExactForAnyTickSize) {
  // A job that started a day before the first cycle keeps running through
  // 30 days of one-minute cycles, or through one 30-day cycle: both hold
  // the continuous decayed integral of its 8 GPUs over the 31 days.
  Host fine("half_life=7d");
  Host coarse("half_life=7d");
  for (Host* h : {&fine, &coarse}) {
    const TeamId a = h->engine.team_for_account("a");
    h->running = {make_job(1, a, 0, 8, kT0 - 86400, kT0 - 86400)};
    h->cycle();
  }
  fine.run_for(30 * kDay, 60);
  coarse.run_for(30 * kDay, 30 * kDay);
  ASSERT_EQ(fine.now(), coarse.now());
  const double expected = 8.0 * decayed_integral(31 * kDay, 7 * kDay);
  EXPECT_NEAR(fine.usage(0) / expected, 1.0, 1e-9);
  EXPECT_NEAR(coarse.usage(0) / expected, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(fine.engine.team_report(0, fine.now()).raw_usage_gpu_s, 8.0 * 31 * kDay);
  EXPECT_DOUBLE_EQ(coarse.engine.team_report(0, coarse.now()).raw_usage_gpu_s, 8.0 * 31 * kDay);
}

TEST(EngineCharging, ClockSteppingBackDoesNotUndecayOrCharge) {
  Host h("half_life=1d");
  const TeamId a = h.engine.team_for_account("a");
  h.running = {make_job(1, a, 0, 1, kT0, kT0)};
  h.cycle();
  h.run_for(600, 600);
  const double before = h.usage(a);
  h.clock.advance(-300);
  h.cycle();
  EXPECT_DOUBLE_EQ(h.usage(a), before);
}

TimePoint utc(int y, int mo, int d, int hh = 0) {
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = hh;
  return static_cast<TimePoint>(timegm(&tm));
}

TEST(EngineCharging, MonthlyResetZeroesUsageAtTheBoundary) {
  Host h("half_life=0,usage_reset=monthly");
  h.clock.set(utc(2024, 1, 31, 22));
  const TeamId a = h.engine.team_for_account("a");
  h.running = {make_job(1, a, 0, 1, h.now(), h.now())};
  h.cycle();
  h.run_for(kHour, kHour);  // 23:00, still January
  EXPECT_DOUBLE_EQ(h.usage(a), 3600);
  h.run_for(3 * kHour, 3 * kHour);  // 02:00 on February 1st
  // Only the time since midnight counts in the new period.
  EXPECT_DOUBLE_EQ(h.usage(a), 2 * 3600);
  EXPECT_DOUBLE_EQ(h.engine.team_report(a, h.now()).raw_usage_gpu_s, 2 * 3600);
  h.run_for(kDay, kHour);
  EXPECT_DOUBLE_EQ(h.usage(a), 26 * 3600);
}

TEST(EngineCharging, ResetNowClearsOnceOnReconfigure) {
  Host h("half_life=0");
  const TeamId a = h.engine.team_for_account("a");
  h.running = {make_job(1, a, 0, 1, kT0, kT0)};
  h.cycle();
  h.run_for(600, 300);
  EXPECT_DOUBLE_EQ(h.usage(a), 600);
  h.engine.reconfigure(config_from("half_life=0,usage_reset=now"));
  h.run_for(300, 300);
  EXPECT_DOUBLE_EQ(h.usage(a), 0);  // cleared at the cycle's time, nothing since
  h.run_for(300, 300);
  EXPECT_DOUBLE_EQ(h.usage(a), 300);  // only once
}

// ---- Fair share through the engine ---------------------------------------------

TEST(EngineFairShare, OrderingFollowsUsageOverShares) {
  Host h("half_life=0,weight_age=0,weight_fairshare=100000");
  const TeamId light = h.engine.team_for_account("light");
  const TeamId heavy = h.engine.team_for_account("heavy");
  const TeamId idle = h.engine.team_for_account("idle");
  const TeamId big = h.engine.team_for_account("big");
  const TeamId none = h.engine.team_for_account("none");
  h.engine.set_shares(big, 3);
  h.engine.set_shares(none, 0);
  h.running = {make_job(1, light, 0, 1, kT0, kT0), make_job(2, heavy, 0, 4, kT0, kT0),
               make_job(3, big, 0, 4, kT0, kT0)};
  h.cycle();
  h.run_for(kHour, 300);
  auto prio = [&](TeamId t) {
    PriorityInput in;
    in.team = t;
    return h.engine.priority(in, h.now());
  };
  EXPECT_DOUBLE_EQ(prio(idle).fairshare, 1.0);
  EXPECT_DOUBLE_EQ(prio(none).fairshare, 0.0);
  EXPECT_GT(prio(light).priority, prio(heavy).priority);
  EXPECT_GT(prio(big).priority, prio(heavy).priority);  // same usage, 3x the shares
  EXPECT_GT(prio(idle).priority, prio(light).priority);
  EXPECT_EQ(prio(none).priority, 1u);
  PriorityInput unknown;
  unknown.team = 42;
  EXPECT_DOUBLE_EQ(h.engine.priority(unknown, h.now()).fairshare, 0.0);
}

TEST(EngineFairShare, NoUsageAnywhereGivesEveryTeamOne) {
  Host h;
  const TeamId a = h.engine.team_for_account("a");
  const TeamId b = h.engine.team_for_account("b");
  h.engine.set_shares(b, 10);
  h.cycle();
  for (TeamId t : {a, b}) {
    PriorityInput in;
    in.team = t;
    EXPECT_DOUBLE_EQ(h.engine.priority(in, h.now()).fairshare, 1.0);
  }
}

TEST(EnginePriority, BatchEqualsOneByOne) {
  Host h("half_life=0,weight_job_size=1000,weight_qos=500");
  const TeamId a = h.engine.team_for_account("a");
  const TeamId b = h.engine.team_for_account("b");
  h.engine.set_cluster_gpus(32);
  h.running = {make_job(1, a, 0, 8, kT0, kT0)};
  h.cycle();
  h.run_for(kHour, 600);
  std::vector<PriorityInput> in;
  for (int i = 0; i < 50; ++i) {
    PriorityInput p;
    p.team = i % 3 == 0 ? a : (i % 3 == 1 ? b : 17);
    p.gpus = i % 9;
    p.eligible = kT0 + i * 100;
    p.qos_norm = (i % 5) / 4.0;
    p.nice = i % 7;
    in.push_back(p);
  }
  std::vector<std::uint32_t> out(in.size());
  h.engine.priorities(in, h.now(), out);
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i], h.engine.priority(in[i], h.now()).priority) << i;
  }
  std::vector<std::uint32_t> too_small(3);
  EXPECT_THROW(h.engine.priorities(in, h.now(), too_small), std::invalid_argument);
}

// ---- The detector on whole sequences ---------------------------------------------

// Team "gamer" keeps low-rank placeholders running and preempts them with its
// own high-rank jobs while team "other" has been waiting. The engine's
// mechanics (charge, penalty, blocking, state) are tested with the "fast" bait
// profile, where one such event is bait; the default rule's detection speed
// has its own test. Scavengers are off here: with them, the placeholders the
// gamer starts after its first jump are scavengers, and jumps onto those are
// free and never bait (EngineScavenger, below, tests that).
std::string with_fast_profile(std::string_view params) {
  return "bait_profile=fast" + (params.empty() ? std::string() : "," + std::string(params));
}
std::string without_scavengers(std::string_view params) {
  return "scavenger_window=0" + (params.empty() ? std::string() : "," + std::string(params));
}

struct GamingScenario {
  Host h;
  TeamId gamer, other;
  JobId next_id = 100;

  struct DefaultRule {};
  explicit GamingScenario(std::string_view params = "") : GamingScenario(DefaultRule{}, with_fast_profile(params)) {}
  GamingScenario(DefaultRule, std::string_view params) : h(without_scavengers(params)) {
    gamer = h.engine.team_for_account("gamer");
    other = h.engine.team_for_account("other");
    h.pending = {make_job(1, other, 0, 8, kT0 - 2 * kHour)};
    for (int i = 0; i < 4; ++i) h.running.push_back(make_job(next_id++, gamer, 0, 8, kT0 - 600, kT0 - 600));
    h.cycle();
  }
  // An urgent 8-GPU job (id 700) preempts the first placeholder, which
  // ends; the jumper has not started.
  std::pair<JobRef, BaitDecision> urgent_jump() {
    const JobRef victim = h.running.front();
    h.running.erase(h.running.begin());
    const JobRef jumper = make_job(700, gamer, 10, 8, h.now() - 60);
    const BaitDecision d = h.engine.record_preemption(jumper, victim, h.now());
    h.engine.job_ended(victim.id, h.now());
    return {jumper, d};
  }
  // One bait event: a fresh high-rank job preempts a young placeholder.
  BaitDecision bait_event() {
    const JobRef victim = h.running.front();
    h.running.erase(h.running.begin());
    const JobRef preemptor = make_job(next_id++, gamer, 10, 8, h.now() - 60);
    const BaitDecision d = h.engine.record_preemption(preemptor, victim, h.now());
    h.engine.job_ended(victim.id, h.now());
    // The gamer queues a fresh placeholder, which starts in the freed slot.
    h.running.push_back(make_job(next_id++, gamer, 0, 8, h.now(), h.now()));
    return d;
  }
};

TEST(EngineDetector, FastProfileDetectsRoutineBaitWithinTwoEvents) {
  GamingScenario s;
  int events = 0;
  bool caught = false;
  while (!caught && events < 2) {
    s.h.run_for(900, 300);
    const BaitDecision d = s.bait_event();
    ++events;
    EXPECT_TRUE(d.in_team);
    caught = d.bait;
    if (caught) {
      EXPECT_GT(d.skipped, 0);
      EXPECT_GT(d.charged_gpu_s, 0);
      EXPECT_GT(d.penalty_added, 0);
      EXPECT_NE(d.reason.find("bait"), std::string::npos) << d.reason;
    }
  }
  EXPECT_TRUE(caught) << "not detected after " << events << " events";
  const auto r = s.h.engine.team_report(s.gamer, s.h.now());
  EXPECT_GT(r.penalty, 0);
  EXPECT_EQ(r.bait_detections, 1u);
  EXPECT_EQ(r.in_team_preemptions, static_cast<std::uint32_t>(events));
  ASSERT_EQ(r.recent.size(), static_cast<std::size_t>(events));
  EXPECT_TRUE(r.recent.back().bait);
  EXPECT_LT(r.effective_fairshare, r.fairshare);
}

TEST(EngineDetector, DefaultRuleDetectsRoutineBaitWithinAFewEvents) {
  // The recommended rule waits for repetition and a rolling supply of
  // victims: the first young victim alone is not enough, a routine of them is.
  GamingScenario s(GamingScenario::DefaultRule{}, "");
  std::vector<BaitDecision> decisions;
  while (decisions.size() < 6 && (decisions.empty() || !decisions.back().bait)) {
    s.h.run_for(900, 300);
    decisions.push_back(s.bait_event());
  }
  ASSERT_FALSE(decisions.empty());
  EXPECT_FALSE(decisions.front().bait) << decisions.front().reason;
  ASSERT_TRUE(decisions.back().bait) << "not detected after " << decisions.size()
                                     << " events: " << decisions.back().reason;
  EXPECT_LE(decisions.size(), 4u);
  const auto r = s.h.engine.team_report(s.gamer, s.h.now());
  EXPECT_EQ(r.bait_detections, 1u);
  EXPECT_GT(r.penalty, 0);
  EXPECT_LT(r.effective_fairshare, r.fairshare);
}

TEST(EngineJumpPrice, EveryJumpPaysForTheQueueItTookBaitOrNot) {
  // The other team's 8-GPU job waits since kT0-2h and is ahead of the
  // preemptor (same priority, waiting longer): the jump took 8 GPUs x 2 h.
  for (const char* params : {"half_life=0,skip_charge=0.5", "half_life=0,skip_charge=0.5,bait_threshold=2"}) {
    GamingScenario s(params);
    const double before = s.h.usage(s.gamer);
    const BaitDecision d = s.bait_event();
    EXPECT_EQ(d.bait, std::string_view(params).find("threshold") == std::string_view::npos) << d.reason;
    EXPECT_EQ(d.skipped, 2 * kHour) << params;
    EXPECT_DOUBLE_EQ(d.charged_gpu_s, 0.5 * 8 * 2 * kHour) << params;
    EXPECT_DOUBLE_EQ(s.h.usage(s.gamer), before + d.charged_gpu_s) << params;
    const auto r = s.h.engine.team_report(s.gamer, s.h.now());
    EXPECT_DOUBLE_EQ(r.price_total_gpu_s, d.charged_gpu_s);
    EXPECT_EQ(r.priced_jumps, 1u);
    EXPECT_NE(d.reason.find("price 28800 GPU-s for 1 runnable jobs ahead"), std::string::npos) << d.reason;
  }
}

TEST(EngineJumpPrice, CappedPerJobAndPaidOncePerPreemptor) {
  GamingScenario s("half_life=0,jump_price_cap=1h");
  const double before = s.h.usage(s.gamer);
  // One preemptor displacing two victims is one jump: priced once.
  const JobRef preemptor = make_job(700, s.gamer, 10, 8, s.h.now() - 60);
  const BaitDecision d1 = s.h.engine.record_preemption(preemptor, s.h.running[0], s.h.now());
  const BaitDecision d2 = s.h.engine.record_preemption(preemptor, s.h.running[1], s.h.now());
  EXPECT_DOUBLE_EQ(d1.charged_gpu_s, 8.0 * kHour);  // 2 h waited, counted 1 h
  EXPECT_DOUBLE_EQ(d2.charged_gpu_s, 0);
  EXPECT_DOUBLE_EQ(s.h.usage(s.gamer), before + 8.0 * kHour);
}

// The price is settled when the jumper stops: a passed job's start can be
// pushed back by at most the time the jumper held the GPUs, so each passed
// job is charged min(its capped wait, the jumper's run) and the rest goes
// back to the team's usage (design.md, "Jump price").
TEST(EngineJumpPrice, SettledOnHowLongTheJumperHeldTheGpus) {
  enum class Stop { kEnds, kVanishes, kNeverStarts, kEndsAfterARestart };
  struct Case {
    const char* name;
    Stop stop;
    Seconds runs;        // from its start (one minute after the jump) to its stop
    double final_price;  // GPU-seconds; the passed job waited 2 h, 8 GPUs
  };
  const Case cases[] = {
      {"ends after 30 min: pays 8 GPUs x 30 min", Stop::kEnds, 1800, 8.0 * 1800},
      {"ends after 3 h: pays the full 8 GPUs x 2 h", Stop::kEnds, 3 * kHour, 8.0 * 2 * kHour},
      {"stops unreported: settled at the last cycle that saw it", Stop::kVanishes, 1800, 8.0 * 1800},
      {"never starts: all back once jump_price_cap has passed", Stop::kNeverStarts, 0, 0},
      {"ends after a save and load: the open price survives", Stop::kEndsAfterARestart, 1800, 8.0 * 1800},
  };
  for (const auto& c : cases) {
    GamingScenario s("half_life=0");
    auto [jumper, d] = s.urgent_jump();
    ASSERT_DOUBLE_EQ(d.charged_gpu_s, 8.0 * 2 * kHour) << c.name;  // in full at the jump
    s.h.clock.advance(60);
    if (c.stop != Stop::kNeverStarts) {
      jumper.start = s.h.now();
      s.h.running.push_back(jumper);
    }
    s.h.cycle();
    if (c.stop == Stop::kNeverStarts) {
      // Its placeholders end too, so that only the refund moves its usage.
      for (const auto& j : s.h.running) s.h.engine.job_ended(j.id, s.h.now());
      s.h.running.clear();
      s.h.cycle();
    }
    const double usage_at_start = s.h.usage(s.gamer);
    s.h.run_for(c.stop == Stop::kNeverStarts ? 5 * kHour : c.runs, 300);
    if (c.stop == Stop::kEndsAfterARestart) {
      Engine copy(config_from(without_scavengers(with_fast_profile("half_life=0"))));
      ASSERT_TRUE(copy.load_state(s.h.engine.save_state()).ok()) << c.name;
      EXPECT_DOUBLE_EQ(copy.team_report(s.gamer, s.h.now()).price_total_gpu_s, d.charged_gpu_s) << c.name;
      copy.begin_cycle(s.h.now());  // the host's first cycle after the restart reports its start
      for (const auto& j : s.h.running) copy.observe_running(j, s.h.now());
      copy.end_cycle(s.h.now());
      const TeamReport pre = copy.team_report(s.gamer, s.h.now());
      copy.job_ended(jumper.id, s.h.now());
      const TeamReport post = copy.team_report(s.gamer, s.h.now());
      EXPECT_NEAR(post.price_total_gpu_s, c.final_price, 1e-6) << c.name;
      // The refund comes off the undecayed total and the prices alike: what
      // the jobs ran (the total less prices) never goes back (tests/e2e/faults.sh).
      EXPECT_NEAR(pre.raw_usage_gpu_s - post.raw_usage_gpu_s, pre.price_total_gpu_s - post.price_total_gpu_s,
                  1e-6) << c.name;
      continue;
    }
    const double before = c.stop == Stop::kNeverStarts ? usage_at_start : s.h.usage(s.gamer);
    const TeamReport pre = s.h.engine.team_report(s.gamer, s.h.now());
    if (c.stop == Stop::kEnds) {
      s.h.engine.job_ended(jumper.id, s.h.now());
    } else if (c.stop == Stop::kVanishes) {
      s.h.running.pop_back();
      s.h.clock.advance(300);
      s.h.cycle();
    }
    const auto r = s.h.engine.team_report(s.gamer, s.h.now());
    EXPECT_NEAR(r.price_total_gpu_s, c.final_price, 1e-6) << c.name;
    EXPECT_EQ(r.priced_jumps, 1u) << c.name;
    EXPECT_GE(r.raw_usage_gpu_s - r.price_total_gpu_s, pre.raw_usage_gpu_s - pre.price_total_gpu_s - 1e-6)
        << c.name << ": what the jobs ran went back";
    if (c.stop == Stop::kEnds) {
      EXPECT_NEAR(pre.raw_usage_gpu_s - r.raw_usage_gpu_s, d.charged_gpu_s - c.final_price, 1e-6) << c.name;
    }
    if (c.stop != Stop::kVanishes) {  // (a vanished job's last cycle charges nothing new either)
      EXPECT_NEAR(before - s.h.usage(s.gamer), d.charged_gpu_s - c.final_price, 1e-6) << c.name;
    }
    // (by value: clang before 16 cannot capture a structured binding)
    const auto jump = std::find_if(r.recent.begin(), r.recent.end(),
                                   [id = jumper.id](const BaitDecision& x) { return x.preemptor == id; });
    ASSERT_NE(jump, r.recent.end()) << c.name;
    EXPECT_NEAR(jump->charged_gpu_s, c.final_price, 1e-6) << c.name;
    EXPECT_NE(jump->reason.find("settled"), std::string::npos) << c.name << ": " << jump->reason;
  }
}

TEST(EngineJumpPrice, SettlementRefundsTheDecayedWorth) {
  // With decay, the refund is taken back at what it is worth now: the
  // usage falls by refund x 2^(-elapsed / half_life) since the jump's cycle.
  GamingScenario s("half_life=1h");
  auto [jumper, d] = s.urgent_jump();
  jumper.start = s.h.now();
  s.h.running.push_back(jumper);
  s.h.run_for(kHour, 300);
  const double before = s.h.usage(s.gamer);
  s.h.engine.job_ended(jumper.id, s.h.now());
  const double refund = d.charged_gpu_s - 8.0 * kHour;
  EXPECT_NEAR(before - s.h.usage(s.gamer), refund * 0.5, 1e-6 * refund);
}

TEST(EngineJumpPrice, AUsageResetClosesTheOpenPrices) {
  // The reset emptied the ledger the price was charged to: nothing to give back.
  GamingScenario s("half_life=0,usage_reset=daily");
  JobRef jumper = s.urgent_jump().first;
  jumper.start = s.h.now();
  s.h.running.push_back(jumper);
  // kT0 is 22:13:20 UTC: the daily reset comes 6400 s in. The jumper stops
  // 7000 s in, 200 s short of the passed job's 2 h: 8 x 200 GPU-s would go back.
  ASSERT_EQ(kT0 % kDay, 80000);
  s.h.run_for(7000, 100);
  const double usage = s.h.usage(s.gamer);
  ASSERT_GT(usage, 8.0 * 200);
  s.h.engine.job_ended(jumper.id, s.h.now());
  EXPECT_DOUBLE_EQ(s.h.usage(s.gamer), usage);
  EXPECT_DOUBLE_EQ(s.h.engine.team_report(s.gamer, s.h.now()).price_total_gpu_s, 0);
}

TEST(EngineJumpPrice, FreeWhenNobodyRunnableIsAhead) {
  struct Case {
    const char* name;
    JobRef waiting;  // the other team's pending job
  };
  JobRef held = make_job(1, 1, 0, 8, kT0 - 2 * kHour);
  held.runnable = false;
  JobRef behind = make_job(1, 1, 0, 8, kT0 - 2 * kHour);
  behind.priority = 0;
  JobRef gpuless = make_job(1, 1, 0, 0, kT0 - 2 * kHour);
  const Case cases[] = {{"held or waiting on a dependency", held}, {"GPU-less", gpuless}};
  for (const auto& c : cases) {
    GamingScenario s("half_life=0");
    s.h.pending = {c.waiting};
    s.h.cycle();
    const double before = s.h.usage(s.gamer);
    const BaitDecision d = s.bait_event();
    EXPECT_DOUBLE_EQ(d.charged_gpu_s, 0) << c.name << ": " << d.reason;
    EXPECT_FALSE(d.bait) << c.name;
    EXPECT_DOUBLE_EQ(s.h.usage(s.gamer), before) << c.name;
  }
  // A job of another team at a lower priority than the preemptor is behind it.
  GamingScenario s("half_life=0");
  behind.team = s.other;
  s.h.pending = {behind};
  s.h.cycle();
  JobRef preemptor = make_job(800, s.gamer, 10, 8, s.h.now() - 60);
  preemptor.priority = 5;
  EXPECT_DOUBLE_EQ(s.h.engine.record_preemption(preemptor, s.h.running.front(), s.h.now()).charged_gpu_s, 0);
}

TEST(EngineDetector, RarePreemptionOfALongRunningJobIsHonest) {
  Host h;
  const TeamId team = h.engine.team_for_account("honest");
  const TeamId other = h.engine.team_for_account("other");
  h.pending = {make_job(1, other, 0, 8, kT0 - 2 * kHour)};
  for (int i = 0; i < 10; ++i) h.running.push_back(make_job(10 + i, team, 0, 1, kT0 - 3 * kHour, kT0 - 3 * kHour));
  h.clock.set(kT0 - 3 * kHour);
  h.cycle();
  h.clock.set(kT0);
  h.cycle();
  const JobRef victim = h.running.front();
  const BaitDecision d = h.engine.record_preemption(make_job(99, team, 10, 1, kT0 - 60), victim, kT0);
  EXPECT_TRUE(d.in_team);
  EXPECT_FALSE(d.bait) << d.reason;
  EXPECT_NE(d.reason.find("honest"), std::string::npos);
  EXPECT_DOUBLE_EQ(h.penalty(team), 0);
  // And again two days later: still rare, still honest.
  h.run_for(2 * kDay, kHour);
  const BaitDecision d2 = h.engine.record_preemption(make_job(100, team, 10, 1, h.now() - 60), h.running.back(), h.now());
  EXPECT_FALSE(d2.bait) << d2.reason;
  EXPECT_DOUBLE_EQ(h.penalty(team), 0);
}

TEST(EngineDetector, NobodyWaitingIsNeverBait) {
  GamingScenario s;
  s.h.pending.clear();
  for (int i = 0; i < 5; ++i) {
    s.h.run_for(600, 300);
    const BaitDecision d = s.bait_event();
    EXPECT_FALSE(d.bait) << d.reason;
    EXPECT_EQ(d.skipped, 0);
  }
  EXPECT_DOUBLE_EQ(s.h.penalty(s.gamer), 0);
}

TEST(EngineDetector, CrossTeamIsARecordedReclaimNotAJump) {
  GamingScenario s;
  const JobRef victim = s.h.running.front();
  const BaitDecision d = s.h.engine.record_preemption(make_job(500, s.other, 10, 8, s.h.now()), victim, s.h.now());
  EXPECT_FALSE(d.in_team);
  EXPECT_FALSE(d.bait);
  EXPECT_TRUE(d.reclaim);
  EXPECT_DOUBLE_EQ(d.charged_gpu_s, 0);
  EXPECT_NE(d.reason.find("reclaim"), std::string::npos) << d.reason;
  const auto o = s.h.engine.team_report(s.other, s.h.now());
  const auto g = s.h.engine.team_report(s.gamer, s.h.now());
  EXPECT_EQ(o.in_team_preemptions, 0u);
  EXPECT_EQ(g.in_team_preemptions, 0u);
  EXPECT_EQ(o.reclaims_made, 1u);
  EXPECT_EQ(g.reclaimed_from, 1u);
  ASSERT_FALSE(g.recent.empty());
  EXPECT_TRUE(g.recent.back().reclaim);
}

// A MaxStartDelay reservation's job taking its nodes back from a job on
// borrowed time: Slurm preempts whatever the rules, so it is listed but
// never priced, judged or counted as a jump or a reclaim.
TEST(EngineDetector, ReservationTakeBackIsListedNeverPricedOrJudged) {
  GamingScenario s;
  s.h.run_for(900, 300);
  const TimePoint t = s.h.now();
  const auto before = s.h.engine.team_report(s.gamer, t);
  const JobRef urgent = make_job(900, s.gamer, 10, 8, t - 60);
  const BaitDecision d = s.h.engine.record_resv_preemption(urgent, s.h.running[0], t);
  EXPECT_TRUE(d.reservation && d.in_team);
  EXPECT_FALSE(d.bait || d.reclaim);
  EXPECT_DOUBLE_EQ(d.charged_gpu_s, 0);
  EXPECT_NE(d.reason.find("borrowed time"), std::string::npos) << d.reason;
  const auto after = s.h.engine.team_report(s.gamer, t);
  EXPECT_EQ(after.in_team_preemptions, before.in_team_preemptions);
  EXPECT_DOUBLE_EQ(after.price_total_gpu_s, before.price_total_gpu_s);
  EXPECT_DOUBLE_EQ(after.usage_gpu_s, before.usage_gpu_s);
  EXPECT_DOUBLE_EQ(after.penalty, 0);
  ASSERT_FALSE(after.recent.empty());
  EXPECT_TRUE(after.recent.back().reservation);
  // The same pair as an ordinary in-team preemption pays for the queue it
  // skipped (the other team's job has waited 2 h): the difference is real.
  EXPECT_GT(s.h.engine.record_preemption(make_job(901, s.gamer, 10, 8, t - 60), s.h.running[1], t).charged_gpu_s, 0);

  // Across teams: listed for both, no reclaim counted, held GPUs untouched.
  const auto o0 = s.h.engine.team_report(s.other, t), g0 = s.h.engine.team_report(s.gamer, t);
  const BaitDecision x = s.h.engine.record_resv_preemption(make_job(902, s.other, 0, 8, t - 60), s.h.running[2], t);
  EXPECT_TRUE(x.reservation && !x.in_team && !x.reclaim);
  const auto o1 = s.h.engine.team_report(s.other, t), g1 = s.h.engine.team_report(s.gamer, t);
  EXPECT_EQ(o1.reclaims_made, o0.reclaims_made);
  EXPECT_EQ(g1.reclaimed_from, g0.reclaimed_from);
  EXPECT_DOUBLE_EQ(g1.held_gpus, g0.held_gpus);
  EXPECT_DOUBLE_EQ(o1.held_gpus, o0.held_gpus);
  ASSERT_EQ(o1.recent.size(), o0.recent.size() + 1);
  ASSERT_EQ(g1.recent.size(), g0.recent.size() + 1);
  EXPECT_TRUE(o1.recent.back().reservation && g1.recent.back().reservation);
  EXPECT_EQ(g1.recent.back().team, s.gamer);
  // A victim of no known team: the preemptor's team only; an unknown
  // preemptor team is an error, as for record_preemption.
  s.h.engine.record_resv_preemption(make_job(903, s.other, 0, 8, t), make_job(904, -1, 0, 8, t, t), t);
  EXPECT_EQ(s.h.engine.team_report(s.other, t).recent.size(), o1.recent.size() + 1);
  EXPECT_THROW(s.h.engine.record_resv_preemption(make_job(905, 77, 0, 8, t), s.h.running[3], t), std::exception);

  // The flag survives the state file.
  Engine copy(config_from(""));
  ASSERT_TRUE(copy.load_state(s.h.engine.save_state()).ok());
  const auto c = copy.team_report(s.gamer, t);
  ASSERT_EQ(c.recent.size(), g1.recent.size());
  EXPECT_TRUE(c.recent.back().reservation);
  EXPECT_FALSE(c.recent[c.recent.size() - 2].reservation);  // the ordinary jump
}

TEST(EngineDetector, JumpCountsStartedGpusAndEachPreemptorOnce) {
  Host h("bait_w_jump=1");
  const TeamId big = h.engine.team_for_account("big");
  const TeamId gamer = h.engine.team_for_account("gamer");
  const TeamId other = h.engine.team_for_account("other");
  h.pending = {make_job(1, other, 0, 8, kT0 - 2 * kHour)};
  for (int i = 0; i < 20; ++i) h.running.push_back(make_job(100 + i, big, 0, 8, kT0 - 60, kT0 - 60));
  for (int i = 0; i < 4; ++i) h.running.push_back(make_job(200 + i, gamer, 0, 1, kT0 - 60, kT0 - 60));
  h.cycle();
  // big: an urgent 4-GPU job displaces one 8-GPU job: 4 of 164 started GPUs jumped.
  const auto honest = h.engine.record_preemption(make_job(300, big, 10, 4, kT0 - 10), h.running[0], kT0);
  EXPECT_NE(honest.reason.find("jump=0.02 (4.0 of 164.0"), std::string::npos) << honest.reason;
  // gamer: one 4-GPU job displaces all four 1-GPU placeholders; it jumped once.
  for (int i = 0; i < 4; ++i) {
    const auto d = h.engine.record_preemption(make_job(301, gamer, 10, 4, kT0 - 10), h.running[20 + i], kT0);
    EXPECT_NE(d.reason.find("jump=0.50 (4.0 of 8.0"), std::string::npos) << i << ": " << d.reason;
  }
  // The preemptor's own start, seen next cycle, is not counted a second time.
  h.running.push_back(make_job(301, gamer, 10, 4, kT0 - 10, kT0));
  h.clock.advance(1);
  h.cycle();
  const auto again = h.engine.record_preemption(make_job(302, gamer, 10, 4, kT0 - 5), h.running[21], h.now());
  EXPECT_NE(again.reason.find("of 12.0 recent GPU starts"), std::string::npos) << again.reason;
}

// repeat counts jumps, not victims: one preemptor that takes four victims,
// or that preempts again because Slurm handed the GPUs it freed to a job
// ahead of it (design.md, "Bait detector"), is one jump; a second preemptor
// is a second.
TEST(EngineDetector, RepeatCountsEachPreemptorOnce) {
  Host h;
  const TeamId team = h.engine.team_for_account("team");
  const TeamId other = h.engine.team_for_account("other");
  h.pending = {make_job(1, other, 0, 8, kT0 - 2 * kHour)};
  for (int i = 0; i < 6; ++i) h.running.push_back(make_job(100 + i, team, 0, 2, kT0 - 600, kT0 - 600));
  h.cycle();
  const auto repeat_of = [](const BaitDecision& d) {
    const auto at = d.reason.find("repeat=");
    return at == std::string::npos ? std::string() : d.reason.substr(at, d.reason.find(' ', at) - at);
  };
  // The first jump, four victims at once and one more after a hand-off:
  // one recent jump each time (8 = bait_repeat: 1/8).
  for (int i = 0; i < 5; ++i) {
    const auto d = h.engine.record_preemption(make_job(300, team, 10, 8, kT0 - 10), h.running[i], kT0 + (i < 4 ? 0 : 40));
    EXPECT_EQ(repeat_of(d), "repeat=0.12") << i << ": " << d.reason;
    EXPECT_NE(d.reason.find("(1.00 recent in-team jumps"), std::string::npos) << i << ": " << d.reason;
  }
  // Another preemptor is a second jump.
  const auto d = h.engine.record_preemption(make_job(301, team, 10, 2, kT0 + 50), h.running[5], kT0 + 60);
  EXPECT_EQ(repeat_of(d), "repeat=0.25") << d.reason;
}

TEST(EngineDetector, RecentDecisionsAreBounded) {
  GamingScenario s("bait_block=never");
  for (int i = 0; i < 40; ++i) {
    s.h.run_for(300, 300);
    s.bait_event();
  }
  const auto r = s.h.engine.team_report(s.gamer, s.h.now());
  EXPECT_EQ(r.recent.size(), 16u);
  EXPECT_EQ(r.in_team_preemptions, 40u);
}

// ---- Penalty ---------------------------------------------------------------------

TEST(EnginePenalty, GrowsIsCappedDecaysAndTheTeamRecovers) {
  GamingScenario s("penalty_max=3,penalty_half_life=1d,half_life=1d");
  double last = 0;
  for (int i = 0; i < 12; ++i) {
    s.h.run_for(300, 300);
    s.bait_event();
    const double p = s.h.penalty(s.gamer);
    EXPECT_GE(p, last - 0.01);  // grows (minus a sliver of decay between events)
    EXPECT_LE(p, 3.0 + 1e-12);
    last = p;
  }
  EXPECT_NEAR(last, 3.0, 0.05);
  PriorityInput in;
  in.team = s.gamer;
  const std::uint32_t penalised = s.h.engine.priority(in, s.h.now()).priority;

  // The team stops gaming: one penalty half-life later the penalty halved.
  s.h.pending.clear();
  s.h.running.clear();
  const double at_stop = s.h.penalty(s.gamer);
  s.h.run_for(kDay, kHour);
  EXPECT_NEAR(s.h.penalty(s.gamer), at_stop / 2, 1e-9);
  s.h.run_for(13 * kDay, kHour);
  EXPECT_LT(s.h.penalty(s.gamer), 0.01);
  const auto r = s.h.engine.team_report(s.gamer, s.h.now());
  EXPECT_NEAR(r.effective_fairshare, r.fairshare, 0.01);
  EXPECT_GT(s.h.engine.priority(in, s.h.now()).priority, penalised);
}

// ---- allow_preemption ----------------------------------------------------------------

struct AllowCase {
  const char* params;
  bool cross_team;
  bool penalise_first;  // one confirmed bait before asking
  bool victim_young;    // a young placeholder (looks like bait) or a long runner
  bool allowed;
};

TEST(EngineAllowPreemption, Rules) {
  const AllowCase cases[] = {
      {"preempt_scope=team", true, false, true, false},
      {"preempt_scope=any", true, false, true, true},
      {"preempt_scope=any,bait_block=always", true, true, true, true},
      {"bait_block=never", false, true, true, true},
      {"bait_block=penalized", false, false, true, true},   // not penalised yet
      {"bait_block=penalized", false, true, true, false},   // penalised + bait
      {"bait_block=penalized", false, true, false, true},   // penalised, honest victim
      {"bait_block=always", false, false, true, false},
      {"bait_block=always", false, false, false, true},
      {"bait_block=penalized,bait_block_penalty=64", false, true, true, true},
  };
  for (const auto& c : cases) {
    GamingScenario s(c.params);
    if (c.penalise_first) {
      s.h.run_for(300, 300);
      ASSERT_TRUE(s.bait_event().bait) << c.params;
    }
    s.h.run_for(300, 300);
    JobRef victim = s.h.running.front();
    if (!c.victim_young) victim.start = s.h.now() - 2 * kDay;
    const JobRef preemptor = make_job(900, c.cross_team ? s.other : s.gamer, 10, 8, s.h.now() - 60);
    const auto before = s.h.engine.team_report(s.gamer, s.h.now());
    const PreemptCheck check = s.h.engine.allow_preemption(preemptor, victim, s.h.now());
    EXPECT_EQ(check.allowed, c.allowed) << c.params << " cross=" << c.cross_team
                                        << " penalised=" << c.penalise_first
                                        << " young=" << c.victim_young << ": " << check.reason;
    if (!check.allowed) {
      EXPECT_FALSE(check.reason.empty());
    }
    EXPECT_EQ(s.h.engine.check_preemption(preemptor, victim, s.h.now(), false).allowed, c.allowed);
    // Pure: asking records nothing.
    const auto after = s.h.engine.team_report(s.gamer, s.h.now());
    EXPECT_EQ(after.in_team_preemptions, before.in_team_preemptions);
    EXPECT_EQ(after.recent.size(), before.recent.size());
    EXPECT_DOUBLE_EQ(after.usage_gpu_s, before.usage_gpu_s);
  }
}

// ---- State -------------------------------------------------------------------------

TEST(EngineState, SaveLoadContinuesWithoutLossOrDoubleCharge) {
  // One engine runs straight through; another is "restarted" mid-way.
  Host straight("half_life=1d");
  Host restarted("half_life=1d");
  for (Host* h : {&straight, &restarted}) {
    const TeamId a = h->engine.team_for_account("a");
    h->engine.team_for_account("b");
    h->running = {make_job(1, a, 0, 4, kT0 - 50, kT0 - 50), make_job(2, 1, 0, 2, kT0, kT0)};
    h->cycle();
    h->run_for(kHour, 300);
  }
  const auto bytes = restarted.engine.save_state();
  Engine fresh(config_from("half_life=1d"));
  // The new process interns teams in another order: ids must be remapped by name.
  const TeamId fresh_b = fresh.team_for_account("b");
  ASSERT_TRUE(fresh.load_state(bytes).ok());
  const TeamId fresh_a = fresh.team_for_account("a");
  EXPECT_EQ(fresh_b, 0);
  EXPECT_EQ(fresh_a, 1);
  EXPECT_DOUBLE_EQ(fresh.team_report(fresh_a, restarted.now()).usage_gpu_s, restarted.usage(0));
  // Continue both for another hour.
  straight.run_for(kHour, 300);
  ManualClock clock(restarted.now());
  for (int i = 0; i < 12; ++i) {
    clock.advance(300);
    fresh.begin_cycle(clock.now());
    fresh.observe_running(make_job(1, fresh_a, 0, 4, kT0 - 50, kT0 - 50), clock.now());
    fresh.observe_running(make_job(2, fresh_b, 0, 2, kT0, kT0), clock.now());
    fresh.end_cycle(clock.now());
  }
  ASSERT_EQ(clock.now(), straight.now());
  EXPECT_NEAR(fresh.team_report(fresh_a, clock.now()).usage_gpu_s, straight.usage(0), 1e-6);
  EXPECT_NEAR(fresh.team_report(fresh_b, clock.now()).usage_gpu_s, straight.usage(1), 1e-6);
}

TEST(EngineState, ReportDecaysUsageToNowWhateverCycleItCameFrom) {
  // Two snapshots of the same history, one a cycle older than the other
  // (nothing ran in between), must report the same usage for the same `now`
  // (gpufair-show --now reads whichever state file is there).
  Host h("half_life=1h");
  const TeamId a = h.engine.team_for_account("a");
  h.running = {make_job(1, a, 0, 4, kT0, kT0)};
  h.run_for(kHour, 300);
  const TimePoint t = h.now();
  const double at_t = h.usage(a);
  ASSERT_GT(at_t, 0);
  const auto older = h.engine.save_state();
  h.running.clear();
  h.clock.advance(9);
  h.cycle();
  const auto newer = h.engine.save_state();
  Engine e_older(config_from("half_life=1h")), e_newer(config_from("half_life=1h"));
  ASSERT_TRUE(e_older.load_state(older).ok());
  ASSERT_TRUE(e_newer.load_state(newer).ok());
  for (const TimePoint when : {t + 9, t + 600, t + 2 * kHour}) {
    const double u_older = e_older.team_report(0, when).usage_gpu_s;
    EXPECT_NEAR(u_older, e_newer.team_report(0, when).usage_gpu_s, 1e-9 * at_t) << when - t;
    EXPECT_NEAR(u_older, at_t * std::exp2(-static_cast<double>(when - t) / kHour), 1e-9 * at_t) << when - t;
  }
  // Fair share is a ratio of usages as of the same instant: decaying the view
  // does not change it.
  EXPECT_DOUBLE_EQ(e_older.team_report(0, t + 600).fairshare, e_older.team_report(0, t).fairshare);
}

TEST(EngineState, RoundTripKeepsPenaltyMemoryAndDecisions) {
  GamingScenario s;
  s.h.run_for(300, 300);
  ASSERT_TRUE(s.bait_event().bait);
  const auto bytes = s.h.engine.save_state();
  Engine copy(config_from(""));
  ASSERT_TRUE(copy.load_state(bytes).ok());
  const auto a = s.h.engine.team_report(s.gamer, s.h.now());
  const auto b = copy.team_report(s.gamer, s.h.now());
  EXPECT_EQ(b.name, a.name);
  EXPECT_DOUBLE_EQ(b.penalty, a.penalty);
  EXPECT_DOUBLE_EQ(b.usage_gpu_s, a.usage_gpu_s);
  EXPECT_EQ(b.bait_detections, a.bait_detections);
  EXPECT_DOUBLE_EQ(b.price_total_gpu_s, a.price_total_gpu_s);
  EXPECT_GT(b.price_total_gpu_s, 0);
  EXPECT_EQ(b.priced_jumps, a.priced_jumps);
  EXPECT_DOUBLE_EQ(b.held_gpus, a.held_gpus);  // rebuilt from the running table
  EXPECT_GT(b.held_gpus, 0);
  ASSERT_EQ(b.recent.size(), a.recent.size());
  EXPECT_EQ(b.recent.back().reason, a.recent.back().reason);
  EXPECT_EQ(copy.save_state(), bytes);  // bit-identical second save
}

TEST(EngineState, EveryCorruptionIsAnErrorAndLeavesTheEngineAlone) {
  GamingScenario s;
  s.h.run_for(300, 300);
  s.bait_event();
  const auto good = s.h.engine.save_state();

  Engine target(config_from(""));
  const TeamId x = target.team_for_account("x");
  target.begin_cycle(kT0);
  target.observe_running(make_job(7, x, 0, 1, kT0 - 10, kT0 - 10), kT0);
  target.end_cycle(kT0);
  const auto untouched = target.save_state();

  auto expect_error = [&](std::span<const std::uint8_t> bytes, const char* what) {
    auto r = target.load_state(bytes);
    EXPECT_FALSE(r.ok()) << what;
    if (!r.ok()) {
      EXPECT_FALSE(r.error().message.empty());
    }
    EXPECT_EQ(target.save_state(), untouched) << what;
  };
  expect_error({}, "empty");
  for (std::size_t n = 1; n < good.size(); ++n) expect_error(std::span(good).first(n), "truncated");
  for (std::size_t i = 0; i < good.size(); ++i) {
    auto bad = good;
    bad[i] ^= 0x01;
    expect_error(bad, "flipped byte");
  }
  auto future = good;
  future[8] = kStateFormatVersion + 1;
  expect_error(future, "future version");

  // Well-framed (valid checksum) but nonsense payloads.
  ByteWriter w;
  w.u8(1);
  w.i64(kT0);
  w.f64(0);
  w.u64(1'000'000'000);  // a billion teams in a few bytes
  expect_error(frame_state(w.bytes()), "absurd count");
  ByteWriter nan;
  nan.u8(1);
  nan.i64(kT0);
  nan.f64(std::nan(""));
  nan.u64(0);
  nan.u64(0);
  expect_error(frame_state(nan.bytes()), "NaN");
}

TEST(EngineState, FormatVersionOneStillLoads) {
  // A version-1 payload, written field by field as gpufair 0.1 wrote it.
  ByteWriter w;
  w.u8(1);        // have_cycle
  w.i64(kT0);     // last cycle
  w.f64(32);      // cluster GPUs
  w.u64(1);       // teams
  w.str("teama");
  w.f64(1234.5);  // usage
  w.f64(2000);    // raw usage
  w.f64(2);       // shares
  w.u8(1);        // shares_set
  for (int i = 0; i < 4; ++i) {  // penalty + three detector counts
    w.f64(i == 0 ? 1.5 : 0.0);
    w.i64(kT0);
  }
  w.u8(1);   // rank_seen
  w.i64(10); // max rank
  w.u32(3);  // bait detections
  w.u32(4);  // in-team preemptions
  w.u64(0);  // recent decisions
  w.u64(0);  // running jobs
  auto bytes = frame_state(w.bytes());
  bytes[8] = 1;  // format version 1 (the checksum covers the payload only)
  Engine e(config_from("penalty_half_life=0"));
  auto r = e.load_state(bytes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto rep = e.team_report(e.team_for_account("teama"), kT0);
  EXPECT_DOUBLE_EQ(rep.usage_gpu_s, 1234.5);
  EXPECT_DOUBLE_EQ(rep.shares, 2);
  EXPECT_DOUBLE_EQ(rep.penalty, 1.5);
  EXPECT_EQ(rep.bait_detections, 3u);
  // Re-saved in the current format, it loads again.
  Engine again(config_from("penalty_half_life=0"));
  ASSERT_TRUE(again.load_state(e.save_state()).ok());
  EXPECT_DOUBLE_EQ(again.team_report(0, kT0).usage_gpu_s, 1234.5);
}

TEST(EngineState, FormatVersionFourStillLoads) {
  // Format 4 as its last writer wrote it: a rank-seen byte of 2 (partition
  // tiers) and a reservation decision (flags bit 2); no association section
  // and no association per job. With no running jobs, no open price, no job
  // charged between cycles and none taken out while it may run, a format-8
  // payload ends in the association count, the job count, the open-price
  // count and the two lists' counts (all 0; format 6 adds only a field per
  // running job), so dropping the first and the last three gives the
  // format-4 payload of the same state.
  Engine e(config_from("preempt_by=partition"));
  const TeamId a = e.team_for_account("teama"), b = e.team_for_account("teamb");
  e.begin_cycle(kT0);
  e.observe_running(make_job(1, a, 5, 8, kT0 - 60, kT0 - 60), kT0);
  e.end_cycle(kT0);
  e.job_ended(1, kT0 + kHour);
  e.record_resv_preemption(make_job(2, b, 3, 8, kT0), make_job(3, a, 5, 8, kT0, kT0), kT0 + kHour);
  const auto v8 = e.save_state();
  ASSERT_EQ(v8[8], 8);
  std::vector<std::uint8_t> payload(v8.begin() + kStateHeaderSize, v8.end());
  ASSERT_GE(payload.size(), 40u);
  ASSERT_TRUE(std::all_of(payload.end() - 40, payload.end(), [](std::uint8_t x) { return x == 0; }));
  payload.erase(payload.end() - 24, payload.end());
  payload.erase(payload.end() - 16, payload.end() - 8);
  auto v4 = frame_state(payload);
  v4[8] = 4;
  Engine loaded(config_from("preempt_by=partition"));
  const auto r = loaded.load_state(v4);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(loaded.assoc_count(), 0);
  ASSERT_FALSE(loaded.team_report(a, kT0 + kHour).recent.empty());
  EXPECT_TRUE(loaded.team_report(a, kT0 + kHour).recent.back().reservation);
  // Everything format 4 holds comes back, the partition-tier rank included.
  EXPECT_EQ(loaded.save_state(), v8);
}

TEST(EngineState, FormatVersionSevenStillLoads) {
  // Format 7 is format 8 without its two job lists, which come last: with
  // none to save (the counts 0), dropping them gives the format-7 file.
  GamingScenario s("half_life=0");
  JobRef jumper = s.urgent_jump().first;  // an open price, which format 7 holds
  jumper.start = s.h.now();
  s.h.running.push_back(jumper);
  s.h.run_for(600, 300);
  const auto v8 = s.h.engine.save_state();
  ASSERT_TRUE(std::all_of(v8.end() - 16, v8.end(), [](std::uint8_t x) { return x == 0; }));
  std::vector<std::uint8_t> payload(v8.begin() + kStateHeaderSize, v8.end() - 16);
  auto v7 = frame_state(payload);
  v7[8] = 7;
  Engine loaded(config_from(without_scavengers(with_fast_profile("half_life=0"))));
  const auto r = loaded.load_state(v7);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(loaded.save_state(), v8);
  // Called version 8, the same bytes lack the lists' counts: corrupt.
  auto short8 = frame_state(payload);
  short8[8] = 8;
  Engine corrupt(config_from(without_scavengers(with_fast_profile("half_life=0"))));
  EXPECT_FALSE(corrupt.load_state(short8).ok());
}

TEST(EngineState, RandomWellFramedPayloadsNeverCrash) {
  // Valid frame and checksum around random bytes, and around mutations of a
  // real payload: each load either succeeds or reports an error.
  GamingScenario s;
  s.h.run_for(300, 300);
  s.bait_event();
  const auto good = s.h.engine.save_state();
  const std::vector<std::uint8_t> payload(good.begin() + kStateHeaderSize, good.end());
  std::uint64_t x = 88172645463325252ull;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  int loaded = 0, rejected = 0;
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::uint8_t> p;
    if (round % 2 == 0) {
      p.resize(next() % 200);
      for (auto& b : p) b = static_cast<std::uint8_t>(next());
    } else {
      p = payload;
      for (int k = 0; k < 3; ++k) p[next() % p.size()] = static_cast<std::uint8_t>(next());
    }
    Engine e(config_from(""));
    auto r = e.load_state(frame_state(p));
    if (r.ok()) {
      ++loaded;
      (void)e.report(kT0);  // whatever loaded must be usable
      (void)e.save_state();
    } else {
      ++rejected;
      EXPECT_FALSE(r.error().message.empty());
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_EQ(loaded + rejected, 2000);
}

}  // namespace
}  // namespace gpufair

// ---- Reclaim ---------------------------------------------------------------------

namespace gpufair {
namespace {

// Two teams with equal shares on a 32-GPU cluster.
void two_equal_teams(Host& h, TeamId& a, const char* a_name, TeamId& b, const char* b_name) {
  a = h.engine.team_for_account(a_name);
  b = h.engine.team_for_account(b_name);
  h.engine.set_cluster_gpus(32);
  h.engine.set_shares(a, 1);
  h.engine.set_shares(b, 1);
}

// A 32-GPU cluster, two teams with equal shares: the squatter holds all 32
// GPUs (four 8-GPU low-rank jobs), the other team waits with an 8-GPU job.
struct SquatScenario {
  Host h;
  TeamId squatter, waiter;
  JobRef waiting;
  explicit SquatScenario(std::string_view params) : h(params) {
    two_equal_teams(h, squatter, "squatter", waiter, "waiter");
    for (int i = 0; i < 4; ++i) h.running.push_back(make_job(10 + i, squatter, 0, 8, kT0 - 600, kT0 - 600));
    waiting = make_job(1, waiter, 0, 8, kT0 - kHour);
    h.pending = {waiting};
    h.cycle();
  }
  // The squatter's youngest job but `older` (the host's pick of a reclaim
  // victim, youngest first; its four jobs started together, so by job id).
  std::vector<JobRef>::iterator victim(int older = 0) {
    for (auto it = h.running.end(); it != h.running.begin();)
      if ((--it)->team == squatter && older-- == 0) return it;
    return h.running.end();
  }
  PreemptCheck ask(int older = 0) { return h.engine.check_reclaim(waiting, *victim(older), h.now()); }
  // The squatter's urgent job displaces its oldest job now: an in-team
  // jump, priced while the waiter waits (so the squatter "jumped lately").
  BaitDecision jump() {
    return h.engine.record_preemption(make_job(99, squatter, 10, 8, h.now() - 60), h.running.front(), h.now());
  }
};

TEST(EngineReclaim, Rules) {
  struct Case {
    const char* name;
    const char* params;
    bool squatter_jumped;  // paid a jump price before the ask
    int older;             // the victim: the squatter's youngest job but this many
    bool allowed;
    const char* reason;    // part of the refusal
  };
  const Case cases[] = {
      {"reclaim=all: a team over its share gives back", "reclaim=all", false, 0, true, ""},
      {"...its youngest jobs while it is over (16 of 32 GPUs)", "reclaim=all", false, 1, true, ""},
      {"...down to its entitlement", "reclaim=all", false, 2, false, "without the jobs a reclaim takes first"},
      {"default (jumpers): an honest squatter keeps its GPUs", "", false, 0, false, "has not jumped"},
      {"reclaim=jumpers: an honest squatter keeps its GPUs", "reclaim=jumpers", false, 0, false, "has not jumped"},
      {"reclaim=jumpers: a team that jumped the queue gives back", "reclaim=jumpers", true, 0, true, ""},
      {"reclaim=off", "reclaim=off", true, 0, false, "reclaim=off"},
  };
  for (const auto& c : cases) {
    SquatScenario s(c.params);
    if (c.squatter_jumped) {
      const BaitDecision d = s.jump();
      ASSERT_GT(d.charged_gpu_s, 0) << c.name << ": " << d.reason;
    }
    const PreemptCheck r = s.ask(c.older);
    EXPECT_EQ(r.allowed, c.allowed) << c.name << ": " << r.reason;
    EXPECT_EQ(r.reclaim, c.allowed) << c.name;
    EXPECT_NE(r.reason.find(c.reason), std::string::npos) << c.name << ": " << r.reason;
    // check_preemption applies the same rule to cross-team pairs.
    const PreemptCheck p = s.h.engine.check_preemption(s.waiting, *s.victim(c.older), s.h.now(), true);
    EXPECT_EQ(p.allowed, c.allowed) << c.name << ": " << p.reason;
  }
}

TEST(EngineReclaim, PossibleFlagFollowsTheRule) {
  EXPECT_TRUE(SquatScenario("reclaim=all").h.engine.reclaim_possible());
  EXPECT_FALSE(SquatScenario("reclaim=off").h.engine.reclaim_possible());
  SquatScenario honest("reclaim=jumpers");  // nobody jumped yet
  EXPECT_FALSE(honest.h.engine.reclaim_possible());
  honest.jump();
  honest.h.cycle();
  EXPECT_TRUE(honest.h.engine.reclaim_possible());
  SquatScenario nobody_waits("reclaim=all");
  nobody_waits.h.pending.clear();
  nobody_waits.h.cycle();
  EXPECT_FALSE(nobody_waits.h.engine.reclaim_possible());
}

TEST(EngineReclaim, StopsAtEntitlementsSoNoPingPong) {
  SquatScenario s("reclaim=all");
  // Reclaim one job at a time, as the host would, until the rule refuses.
  int reclaimed = 0;
  while (s.ask().allowed && reclaimed < 10) {
    const auto it = s.victim();
    const JobRef victim = *it;
    s.h.engine.record_preemption(s.waiting, victim, s.h.now());
    s.h.running.erase(it);
    s.h.engine.job_ended(victim.id, s.h.now());
    JobRef started = s.waiting;
    started.start = s.h.now();
    s.h.running.push_back(started);
    s.waiting.id += 100;
    s.h.pending = {s.waiting};
    s.h.clock.advance(60);
    s.h.cycle();
    ++reclaimed;
  }
  EXPECT_EQ(reclaimed, 2);  // 32/0 -> 24/8 -> 16/16, then both at their share
  const auto sq = s.h.engine.team_report(s.squatter, s.h.now());
  const auto wt = s.h.engine.team_report(s.waiter, s.h.now());
  EXPECT_DOUBLE_EQ(sq.held_gpus, 16);
  EXPECT_DOUBLE_EQ(wt.held_gpus, 16);
  EXPECT_DOUBLE_EQ(sq.entitled_gpus, 16);
  EXPECT_EQ(sq.reclaimed_from, 2u);
  EXPECT_EQ(wt.reclaims_made, 2u);
  // And the other way round: the squatter, now at its share, cannot take back.
  JobRef back = make_job(500, s.squatter, 0, 8, s.h.now() - kHour);
  EXPECT_EQ(s.h.running.back().team, s.waiter);
  EXPECT_FALSE(s.h.engine.check_reclaim(back, s.h.running.back(), s.h.now()).allowed);
}

// Slurm asks the preempt plugin about each (preemptor, victim) pair with
// nothing chosen yet, then takes allowed victims in its own order until the
// job fits. Whatever set of allowed victims it takes, the victim's team must
// end less than one victim's GPUs below its entitlement (the bound of taking
// its jobs one by one while it is over, in reclaim order: the lowest rank
// first, the youngest first within a rank).
TEST(EngineReclaim, AnySetOfAllowedVictimsEndsAsTakingThemInOrderWhileOver) {
  struct Case {
    const char* name;
    std::vector<std::pair<double, int>> squatter_jobs;  // (GPUs, rank), oldest first
    std::vector<bool> allowed;                           // per job, oldest first
  };
  const Case cases[] = {
      // Entitled to 16 on 32 GPUs; 28 held: 12 to give back, youngest first.
      {"the youngest jobs while the team is over", {{8, 0}, {8, 0}, {4, 0}, {4, 0}, {4, 0}},
       {false, false, true, true, true}},
      // 17 held: one GPU over. The youngest goes even if it takes the team
      // below (as one by one), and no older one with it.
      {"one GPU over: the youngest job only", {{8, 0}, {1, 0}, {8, 0}}, {false, false, true}},
      // Lower ranks go first: an older low job before a younger middle one.
      {"lower ranks first, then the youngest", {{4, 0}, {8, 5}, {4, 0}, {8, 5}, {4, 5}},
       {true, false, true, false, true}},
      // A job of a rank the reclaimer may not take comes after every one it may.
      {"jobs it cannot take do not count", {{8, 0}, {4, 0}, {4, 0}, {8, 10}}, {false, true, true, false}},
      {"at its entitlement: none", {{8, 0}, {8, 0}}, {false, false}},
  };
  for (const auto& c : cases) {
    Host h("reclaim=all");
    TeamId squatter, waiter;
    two_equal_teams(h, squatter, "squatter", waiter, "waiter");
    double held = 0;
    for (std::size_t i = 0; i < c.squatter_jobs.size(); ++i) {
      const auto [gpus, rank] = c.squatter_jobs[i];
      const TimePoint start = kT0 - 3600 + 60 * static_cast<TimePoint>(i);
      h.running.push_back(make_job(10 + i, squatter, rank, gpus, start - 60, start));
      held += gpus;
    }
    const JobRef waiting = make_job(1, waiter, 5, 8, kT0 - kHour);  // rank 5: outranked by 10 only
    h.pending = {waiting};
    h.cycle();
    double taken = 0, biggest_taken = 0;
    for (std::size_t i = 0; i < h.running.size(); ++i) {
      const PreemptCheck p = h.engine.check_preemption(waiting, h.running[i], h.now(), true);
      EXPECT_EQ(p.allowed, c.allowed[i]) << c.name << ", job " << i << ": " << p.reason;
      if (!p.allowed) continue;
      biggest_taken = std::max(biggest_taken, h.running[i].gpus);
      taken += h.running[i].gpus;
    }
    if (taken > 0) {
      EXPECT_GT(held - taken + biggest_taken, 16) << c.name << ": every allowed victim together";
    }
  }
}

TEST(EngineReclaim, AnIdleTeamLeavesItsShareToTheOthers) {
  // A third team with shares but nothing to do does not count: the squatter
  // and the waiter are each entitled to half the cluster, not a third.
  SquatScenario s("reclaim=all");
  const TeamId idle = s.h.engine.team_for_account("idle");
  s.h.engine.set_shares(idle, 1);
  s.h.cycle();
  EXPECT_DOUBLE_EQ(s.h.engine.team_report(s.waiter, s.h.now()).entitled_gpus, 16);
  EXPECT_NEAR(s.h.engine.team_report(idle, s.h.now()).entitled_gpus, 32.0 / 3, 1e-9);
}

TEST(EngineReclaim, HeldOrGpuLessReclaimersCannot) {
  SquatScenario s("reclaim=all");
  JobRef held = s.waiting;
  held.runnable = false;
  EXPECT_FALSE(s.h.engine.check_reclaim(held, s.h.running.back(), s.h.now()).allowed);
  JobRef cpu = s.waiting;
  cpu.gpus = 0;
  EXPECT_FALSE(s.h.engine.check_reclaim(cpu, s.h.running.back(), s.h.now()).allowed);
}

// A recorded reclaim moves the GPUs at once: Slurm asks the predicates on
// many scheduler passes between two cycles, each with taken = 0, so the
// held GPUs of both teams must follow each reclaim, not wait for the cycle.
TEST(EngineReclaim, RecordedReclaimsMoveHeldGpusBeforeTheNextCycle) {
  SquatScenario s("reclaim=all");
  int allowed = 0;
  for (int i = 0; i < 4; ++i) {
    JobRef reclaimer = s.waiting;
    reclaimer.id = 1 + static_cast<JobId>(i);
    const JobRef victim = s.h.running[3 - static_cast<std::size_t>(i)];  // youngest first, no cycle between
    if (!s.h.engine.check_reclaim(reclaimer, victim, s.h.now()).allowed) break;
    ++allowed;
    const BaitDecision d = s.h.engine.record_preemption(reclaimer, victim, s.h.now());
    EXPECT_TRUE(d.reclaim) << d.reason;
    s.h.clock.advance(30);
  }
  EXPECT_EQ(allowed, 2);  // 32/0 -> 24/8 -> 16/16: both at their entitlement
  EXPECT_DOUBLE_EQ(s.h.engine.team_report(s.squatter, s.h.now()).held_gpus, 16);
  EXPECT_DOUBLE_EQ(s.h.engine.team_report(s.waiter, s.h.now()).held_gpus, 16);
  // The next cycle sees the same jobs and counts nothing twice.
  s.h.running = {s.h.running[0], s.h.running[1], make_job(1, s.waiter, 0, 8, kT0 - kHour, kT0),
                 make_job(2, s.waiter, 0, 8, kT0 - kHour, kT0 + 30)};
  s.h.pending.clear();
  s.h.cycle();
  EXPECT_DOUBLE_EQ(s.h.engine.team_report(s.squatter, s.h.now()).held_gpus, 16);
  EXPECT_DOUBLE_EQ(s.h.engine.team_report(s.waiter, s.h.now()).held_gpus, 16);
}

// A reclaim's victim may run on for its QOS's GraceTime (Slurm signals it
// and requeues it when that runs out), and the cycles meanwhile see it
// running; its reclaimer waits, pending, possibly with an end backfill
// planned for it. Each team is charged each GPU-second its jobs ran, once.
TEST(EngineReclaim, EachGpuSecondIsChargedOnceThroughAGraceTime) {
  struct Case {
    const char* name;
    bool restart_in_grace;  // a save and load while the victim runs out its grace
  };
  for (const Case c : {Case{"no restart", false}, Case{"a restart in the grace time", true}}) {
    SquatScenario s("reclaim=all,half_life=0");
    s.h.run_for(300, 300);  // kT0 + 300: the squatter's jobs have run 900 s
    const double squatter_before = s.h.engine.team_report(s.squatter, s.h.now()).raw_usage_gpu_s;
    ASSERT_DOUBLE_EQ(squatter_before, 4 * 8 * 900.0) << c.name;
    const auto v = s.victim();
    const JobRef victim = *v;
    ASSERT_TRUE(s.ask().allowed) << c.name;
    const TimePoint reclaim = s.h.now();
    ASSERT_TRUE(s.h.engine.record_preemption(s.waiting, victim, reclaim).reclaim) << c.name;
    if (c.restart_in_grace) {
      ASSERT_TRUE(s.h.engine.load_state(s.h.engine.save_state()).ok()) << c.name;
    }
    // The grace time: 600 s, two cycles see the victim running, and their
    // walks report the reclaimer, pending, with the end backfill planned.
    for (int i = 0; i < 2; ++i) {
      s.h.clock.advance(300);
      s.h.engine.begin_cycle(s.h.now());
      for (const auto& j : s.h.running) s.h.engine.observe_running(j, s.h.now());
      s.h.engine.observe_pending(s.waiting);
      s.h.engine.job_ended(s.waiting.id, reclaim + 900 + 3600);
      s.h.engine.end_cycle(s.h.now());
    }
    // Slurm requeues the victim as its grace runs out; the reclaimer starts.
    s.h.engine.job_ended(victim.id, reclaim + 600);
    s.h.running.erase(s.victim());
    JobRef started = s.waiting;
    started.start = reclaim + 600;
    s.h.running.push_back(started);
    s.h.pending.clear();
    s.h.run_for(600, 300);  // until reclaim + 1200
    const auto squatter = s.h.engine.team_report(s.squatter, s.h.now());
    const auto waiter = s.h.engine.team_report(s.waiter, s.h.now());
    // The victim: 8 GPUs from its start to the end of its grace, once; the
    // other three to now.
    EXPECT_DOUBLE_EQ(squatter.raw_usage_gpu_s, squatter_before + 3 * 8 * 1200.0 + 8 * 600.0) << c.name;
    // The reclaimer: from its start, not from the reclaim; nothing while pending.
    EXPECT_DOUBLE_EQ(waiter.raw_usage_gpu_s, 8 * 600.0) << c.name;
    EXPECT_DOUBLE_EQ(squatter.held_gpus, 24) << c.name;
    EXPECT_DOUBLE_EQ(waiter.held_gpus, 8) << c.name;
  }
}

// A reclaimer enters the running table at the reclaim, while still pending
// (provisional: charged nothing until a cycle sees it run). One that starts
// and stops before any cycle sees it is charged from the start its record
// gives, at the first report with the record: the simulator's one report,
// or Slurm's end report (priority_p_job_end) for a run a requeue ended, which
// the walk then reports only by id. Once: a finished job's walk reports it
// again with its record. An end with no start charges nothing. (Until
// 2026-12-07 only that second report charged it when no cycle came between
// the reclaim and the end; a cycle that sees it still pending drops it, and
// its end is then charged as that of a job no cycle saw, as it still is.)
TEST(EngineReclaim, AReclaimerThatRunsBetweenTwoCyclesIsChargedFromItsStart) {
  struct Case {
    const char* name;
    bool cycle_saw_it_pending;  // a cycle between the reclaim and its start
    TimePoint start_after;      // its start, after the reclaim (0: the record has none)
    int reports;                // of its end with its record
    double charged;             // the waiter's GPU-seconds at the end
  };
  const Case cases[] = {
      {"starts 10 s after the reclaim, runs 90 s: one report", false, 10, 1, 8 * 90.0},
      {"...reported twice (it finished: the walk's report too)", false, 10, 2, 8 * 90.0},
      {"a cycle saw it pending first (its grace time)", true, 310, 1, 8 * 90.0},
      {"...reported twice", true, 310, 2, 8 * 90.0},
      {"an end with no start: nothing ran", false, 0, 1, 0},
  };
  for (const Case& c : cases) {
    SquatScenario s("reclaim=all,half_life=0");
    const auto v = s.victim();
    const JobRef victim = *v;
    const TimePoint reclaim = s.h.now();
    ASSERT_TRUE(s.h.engine.record_preemption(s.waiting, victim, reclaim).reclaim) << c.name;
    s.h.engine.job_ended(victim.id, reclaim);
    s.h.running.erase(s.victim());
    if (c.cycle_saw_it_pending) {
      s.h.clock.advance(300);
      s.h.cycle();  // the waiting job is still pending in s.h.pending
    }
    s.h.pending.clear();
    JobRef ran = s.waiting;
    ran.start = c.start_after > 0 ? reclaim + c.start_after : 0;
    const TimePoint end = reclaim + (c.start_after > 0 ? c.start_after : 10) + 90;
    for (int i = 0; i < c.reports; ++i) s.h.engine.job_ended(ran, end);
    EXPECT_DOUBLE_EQ(s.h.engine.team_report(s.waiter, end).held_gpus, 0) << c.name;
    s.h.clock.advance(600);
    s.h.cycle();
    const auto waiter = s.h.engine.team_report(s.waiter, s.h.now());
    EXPECT_DOUBLE_EQ(waiter.raw_usage_gpu_s, c.charged) << c.name;
    EXPECT_DOUBLE_EQ(waiter.held_gpus, 0) << c.name;
  }
}

// ---- Scavengers (scavenger_window) -----------------------------------------------

// A 32-GPU cluster, two equal teams. The jumper holds 8 GPUs (below its 16),
// the other team 24 (over its 16) and waits with an 8-GPU job, so the
// entitlement rule alone would never let the other team take the jumper's
// GPUs. At kT0 the jumper's urgent job (rank 10) displaces its own job that
// started two hours earlier: its scavenger episode begins.
struct ScavScenario {
  Host h;
  TeamId jumper, other;
  JobRef waiting;
  explicit ScavScenario(std::string_view params) : h(params) {
    two_equal_teams(h, jumper, "jumper", other, "other");
    h.running = {make_job(10, jumper, 0, 8, kT0 - 3 * kHour, kT0 - 2 * kHour)};
    for (int i = 0; i < 3; ++i) h.running.push_back(make_job(20 + i, other, 0, 8, kT0 - 3 * kHour, kT0 - 2 * kHour));
    waiting = make_job(1, other, 0, 8, kT0 - kHour);
    // The jumper's urgent job waits too: the team's ranks are 0 and 10.
    h.pending = {waiting, make_job(2, jumper, 10, 8, kT0 - 60)};
    h.cycle();
  }
  BaitDecision jump(JobId id, TimePoint when, int victim_rank = 0, int preemptor_rank = 10) {
    return h.engine.record_preemption(make_job(id, jumper, preemptor_rank, 8, when - 60),
                                      make_job(900 + id, jumper, victim_rank, 8, when - 3 * kHour, when - 2 * kHour), when);
  }
};

TEST(EngineScavenger, Rules) {
  struct Case {
    const char* name;
    const char* params;
    int jump_preemptor_rank;  // the jump at kT0 (10 = urgent; 0 = a jump at equal rank)
    bool second_jump;         // another jump at kT0 + 20 h
    Seconds victim_start;     // relative to kT0
    int victim_rank;
    int reclaimer_rank;
    Seconds ask_at;           // relative to kT0
    bool allowed;
    const char* reason;       // part of the reason
  };
  const Case cases[] = {
      {"started after the first jump: a scavenger, whatever the entitlements", "", 10, false, 60, 0, 0, 120, true,
       "scavenger"},
      {"started before the first jump: not one (the entitlement rule refuses)", "", 10, false, -60, 0, 0, 120, false,
       "would exceed its entitlement"},
      {"started in the same second as the first jump: not one", "", 10, false, 0, 0, 0, 120, false, "exceed"},
      {"one that has run bait_young is protected again", "", 10, false, 60, 0, 0, 60 + 2 * kHour, false, "exceed"},
      {"...a second less, it is not", "", 10, false, 60, 0, 0, 60 + 2 * kHour - 1, true, "scavenger"},
      {"a day after the jump the episode is over", "", 10, false, kDay - 60, 0, 0, kDay + 1, false, "exceed"},
      {"...unless the team jumped again", "", 10, true, kDay - 60, 0, 0, kDay + 1, true, "scavenger"},
      {"a top-rank job of the team is never a scavenger", "", 10, false, 60, 10, 10, 120, false, "exceed"},
      {"a middle-rank job is, for a reclaimer of its rank", "", 10, false, 60, 5, 5, 120, true, "scavenger"},
      {"...and for a lower-rank one (ranks order a team's own jobs)", "", 10, false, 60, 5, 0, 120, true,
       "scavenger"},
      {"a protected job of a higher rank: not for a lower-rank reclaimer", "", 10, false, -60, 5, 0, 120, false,
       "outranks"},
      {"a jump at equal rank starts no episode", "", 0, false, 60, 0, 0, 120, false, "exceed"},
      {"scavenger_window=0: off", "scavenger_window=0", 10, false, 60, 0, 0, 120, false, "exceed"},
      {"a shorter window", "scavenger_window=1h", 10, false, 60, 0, 0, kHour + 1, false, "exceed"},
      {"reclaim=off: no cross-team preemption at all", "reclaim=off", 10, false, 60, 0, 0, 120, false,
       "reclaim=off"},
  };
  for (const auto& c : cases) {
    ScavScenario s(c.params);
    s.jump(2, kT0, 0, c.jump_preemptor_rank);
    if (c.second_jump) s.jump(3, kT0 + 20 * kHour);
    const JobRef victim = make_job(11, s.jumper, c.victim_rank, 8, kT0 - kHour, kT0 + c.victim_start);
    JobRef reclaimer = s.waiting;
    reclaimer.rank = c.reclaimer_rank;
    const PreemptCheck r = s.h.engine.check_reclaim(reclaimer, victim, kT0 + c.ask_at);
    EXPECT_EQ(r.allowed, c.allowed) << c.name << ": " << r.reason;
    EXPECT_NE(r.reason.find(c.reason), std::string::npos) << c.name << ": " << r.reason;
    // The preempt plugin's predicate decides the same, quietly too.
    const PreemptCheck p = s.h.engine.check_preemption(reclaimer, victim, kT0 + c.ask_at, true);
    EXPECT_EQ(p.allowed, c.allowed) << c.name << ": " << p.reason;
    EXPECT_EQ(p.reclaim, c.allowed) << c.name;
    if (c.allowed) {
      EXPECT_NE(p.reason.find("scavenger"), std::string::npos) << c.name << ": " << p.reason;
    }
    EXPECT_EQ(s.h.engine.check_preemption(reclaimer, victim, kT0 + c.ask_at, false).allowed, c.allowed) << c.name;
  }
}

// A job's priority as sprio sees it (priority()) and as the cycle's pass
// does (priorities()): they must agree.
PriorityFactors priority_both_ways(const Engine& e, const PriorityInput& in, TimePoint at, const char* name) {
  const PriorityFactors f = e.priority(in, at);
  std::uint32_t batch = 0;
  e.priorities(std::span<const PriorityInput>(&in, 1), at, std::span<std::uint32_t>(&batch, 1));
  EXPECT_EQ(batch, f.priority) << name;
  return f;
}
double weighted_terms(const PriorityFactors& f) {
  return f.w_age + f.w_fairshare + f.w_job_size + f.w_partition + f.w_qos + f.w_assoc + f.w_tres;
}

// scavenger_order=last: a pending job that would start as a scavenger (a
// lower-rank job of a team in an episode) gets priority 1 with every
// weighted term 0, so sprio's sum agrees; the team's top-rank jobs, other
// teams' jobs and every job once the episode is over keep their priority.
TEST(EngineScavenger, WouldBeScavengersSortLastWhenAsked) {
  struct Case {
    const char* name;
    const char* params;
    bool jumper;     // the job's team: the jumper (in an episode from kT0) or the other
    int rank;
    Seconds ask_at;  // relative to kT0
    bool last;
  };
  const Case cases[] = {
      {"a lower-rank job of the jumper", "scavenger_order=last", true, 0, 60, true},
      {"its top-rank job", "scavenger_order=last", true, 10, 60, false},
      {"the other team's job", "scavenger_order=last", false, 0, 60, false},
      {"after the episode", "scavenger_order=last", true, 0, kDay + 1, false},
      {"the default, queue", "", true, 0, 60, false},
      {"scavenger_window=0: no episode", "scavenger_order=last,scavenger_window=0", true, 0, 60, false},
  };
  for (const auto& c : cases) {
    ScavScenario s(c.params);
    s.jump(2, kT0);
    PriorityInput in;
    in.team = c.jumper ? s.jumper : s.other;
    in.gpus = 8;
    in.eligible = kT0 - kHour;
    in.rank = c.rank;
    const TimePoint at = kT0 + c.ask_at;
    const PriorityFactors f = priority_both_ways(s.h.engine, in, at, c.name);
    EXPECT_EQ(f.scavenger_last, c.last) << c.name;
    if (c.last) {
      EXPECT_EQ(f.priority, 1u) << c.name;
      EXPECT_EQ(weighted_terms(f), 0) << c.name;
    } else {
      EXPECT_GT(f.priority, 1u) << c.name;
    }
    // A job whose rank the host does not know is never sorted last.
    in.rank = -1;
    EXPECT_FALSE(s.h.engine.priority(in, at).scavenger_last) << c.name;
  }
}

// preemptor_claim=all: a job that preempted (here the jumper's urgent job 2,
// an in-team jump) sorts first with kMaxPriority until it is seen running
// or kClaimFor has passed since its first preemption; sprio's terms sum to
// it (the site term carries it). Off, jumpers (the default) or reclaims
// (an in-team jump keeps nothing), or for another job, nothing changes.
TEST(EngineClaim, APreemptorSortsFirstUntilItStarts) {
  struct Case {
    const char* name;
    const char* params;
    JobId asked;        // whose priority is asked
    Seconds again_at;   // it preempts again at kT0 + this (-1: never)
    const char* then;   // "", "running", "ended", "ran, ended": what the host says after the jump
    Seconds ask_at;     // relative to kT0
    bool claimed;
  };
  const Case cases[] = {
      {"off", "preemptor_claim=off", 2, -1, "", 60, false},
      {"jumpers (the default): an in-team jump", "", 2, -1, "", 60, false},
      {"reclaims", "preemptor_claim=reclaims", 2, -1, "", 60, false},
      {"all: the preemptor", "preemptor_claim=all", 2, -1, "", 60, true},
      {"all: another pending job", "preemptor_claim=all", 1, -1, "", 60, false},
      {"all: a job the host does not name", "preemptor_claim=all", 0, -1, "", 60, false},
      {"seen running", "preemptor_claim=all", 2, -1, "running", 60, false},
      {"ran and ended", "preemptor_claim=all", 2, -1, "ran, ended", 60, false},
      // slurmctld's pending jobs carry backfill's planned end, and the
      // plugin reports every job with an end: not an end of a pending one.
      {"an end reported while pending", "preemptor_claim=all", 2, -1, "ended", 60, true},
      {"kClaimFor after the jump", "preemptor_claim=all", 2, -1, "", kClaimFor, true},
      {"...a second later", "preemptor_claim=all", 2, -1, "", kClaimFor + 1, false},
      {"preempting again does not extend it", "preemptor_claim=all", 2, 300, "", kClaimFor + 1, false},
      {"a preemption after it lapsed claims anew", "preemptor_claim=all", 2, kClaimFor + 5, "", kClaimFor + 60,
       true},
  };
  for (const auto& c : cases) {
    ScavScenario s(c.params);
    s.jump(2, kT0);
    if (c.again_at >= 0) s.jump(2, kT0 + c.again_at);
    const std::string_view then = c.then;
    if (then == "running" || then == "ran, ended")
      s.h.engine.observe_running(make_job(2, s.jumper, 10, 8, kT0 - 60, kT0 + 1), kT0 + 1);
    if (then == "ended" || then == "ran, ended") s.h.engine.job_ended(2, kT0 + 2);
    PriorityInput in;
    in.job = c.asked;
    in.team = c.asked == 1 ? s.other : s.jumper;
    in.gpus = 8;
    in.eligible = kT0 - kHour;
    in.rank = c.asked == 1 ? 0 : 10;
    const TimePoint at = kT0 + c.ask_at;
    const PriorityFactors f = priority_both_ways(s.h.engine, in, at, c.name);
    EXPECT_EQ(f.claimed, c.claimed) << c.name;
    EXPECT_EQ(s.h.engine.claimed(c.asked, at), c.claimed) << c.name;
    if (c.claimed) {
      EXPECT_EQ(f.priority, kMaxPriority) << c.name;
      EXPECT_EQ(weighted_terms(f), 0) << c.name;
      EXPECT_EQ(f.site, static_cast<std::int64_t>(kMaxPriority)) << c.name;
    } else {
      EXPECT_LT(f.priority, kMaxPriority) << c.name;
    }
  }
}

// A reclaimer of a scavenger claims under jumpers (the default), reclaims
// and all, not off; the claim is not in the state (a restart forgets it; it would last kClaimFor
// at most anyway).
TEST(EngineClaim, AReclaimerClaimsAndARestartForgets) {
  for (const char* params : {"", "preemptor_claim=reclaims", "preemptor_claim=all", "preemptor_claim=off"}) {
    SCOPED_TRACE(params);
    const bool on = std::string_view(params) != "preemptor_claim=off";
    ScavScenario s(params);
    s.jump(2, kT0);
    const JobRef scavenger = make_job(30, s.jumper, 0, 8, kT0 - 60, kT0 + 60);
    const BaitDecision d = s.h.engine.record_preemption(s.waiting, scavenger, kT0 + 120);
    ASSERT_TRUE(d.reclaim) << d.reason;
    EXPECT_EQ(s.h.engine.claimed(s.waiting.id, kT0 + 130), on);
    Engine restarted(config_from(params));
    ASSERT_TRUE(restarted.load_state(s.h.engine.save_state()).ok());
    EXPECT_FALSE(restarted.claimed(s.waiting.id, kT0 + 130));
    // The cycle drops a lapsed claim (and keeps a live one).
    s.h.clock.advance(130);
    s.h.cycle();
    EXPECT_EQ(s.h.engine.claimed(s.waiting.id, s.h.now()), on);
    s.h.clock.advance(kClaimFor);
    s.h.cycle();
    EXPECT_FALSE(s.h.engine.claimed(s.waiting.id, s.h.now()));
  }
}

// Which reclaims claim (table; reclaim=all, so that a team merely over its
// entitlement may be reclaimed from): from a team that jumped the queue
// lately (it paid a price), as from a scavenger above, under jumpers (the
// default); from a team merely over its entitlement only under reclaims
// and all: that rebalancing is left to fair-share order.
TEST(EngineClaim, AReclaimClaimsWhenItsVictimJumped) {
  struct Case {
    const char* name;
    const char* params;
    bool squatter_jumped;
    bool claimed;
  };
  const Case cases[] = {
      {"jumpers (default): from a team over its entitlement", "reclaim=all", false, false},
      {"jumpers (default): from a team that jumped", "reclaim=all", true, true},
      {"reclaims: from a team over its entitlement", "reclaim=all,preemptor_claim=reclaims", false, true},
      {"all: from a team over its entitlement", "reclaim=all,preemptor_claim=all", false, true},
      {"off: from a team that jumped", "reclaim=all,preemptor_claim=off", true, false},
  };
  for (const auto& c : cases) {
    SquatScenario s(c.params);
    if (c.squatter_jumped) {
      const BaitDecision d = s.jump();
      ASSERT_GT(d.charged_gpu_s, 0) << c.name << ": " << d.reason;
    }
    ASSERT_TRUE(s.ask().allowed) << c.name;
    const BaitDecision d = s.h.engine.record_preemption(s.waiting, *s.victim(), s.h.now());
    ASSERT_TRUE(d.reclaim) << c.name << ": " << d.reason;
    EXPECT_EQ(s.h.engine.claimed(s.waiting.id, s.h.now() + 10), c.claimed) << c.name;
  }
}

// A team's top rank is on the scale of preempt_by: after a switch from QOS
// ranks (>= 2^16 for a QOS that preempts another) to partition tiers, the
// old top rank must not make every job of the team "lower rank" (here: a
// scavenger any other team may requeue). Forgotten on reconfigure, and on
// loading a state saved under the other scale.
TEST(EngineScavenger, TopRankIsForgottenWhenPreemptByChanges) {
  for (const bool via_state : {false, true}) {
    ScavScenario s("");
    s.h.pending.push_back(make_job(3, s.jumper, 0x10064, 8, kT0 - 60));  // a QOS rank
    s.h.cycle();
    s.jump(2, kT0);
    const JobRef tier5 = make_job(11, s.jumper, 5, 8, kT0 - kHour, kT0 + 60);
    JobRef reclaimer = s.waiting;
    reclaimer.rank = 5;
    const PreemptCheck before = s.h.engine.check_reclaim(reclaimer, tier5, kT0 + 120);
    EXPECT_TRUE(before.allowed) << "under QOS ranks a rank-5 job is below the team's top: a scavenger: "
                                << before.reason;
    Engine switched(config_from("preempt_by=partition"));
    Engine& e = via_state ? switched : s.h.engine;
    if (via_state) {
      ASSERT_TRUE(switched.load_state(s.h.engine.save_state()).ok());
    } else {
      s.h.engine.reconfigure(config_from("preempt_by=partition"));
    }
    // The next cycle sees the team's jobs by tier: 5 is its top.
    e.begin_cycle(kT0 + 90);
    e.observe_running(tier5, kT0 + 90);
    for (const auto& j : s.h.running) e.observe_running(j, kT0 + 90);
    e.observe_pending(s.waiting);
    e.end_cycle(kT0 + 90);
    const PreemptCheck r = e.check_reclaim(reclaimer, tier5, kT0 + 120);
    EXPECT_FALSE(r.allowed) << (via_state ? "state: " : "reconfigure: ") << r.reason;
    EXPECT_NE(r.reason.find("exceed its entitlement"), std::string::npos) << r.reason;
    // Saved again, the new scale stays.
    Engine again(config_from("preempt_by=partition"));
    ASSERT_TRUE(again.load_state(e.save_state()).ok());
    EXPECT_EQ(again.save_state(), e.save_state());
  }
}

TEST(EngineScavenger, ATeamInAnEpisodeMayNotReclaimWithJobsThatWouldBeScavengers) {
  // Both teams jumped: the other team's low-rank job would itself start as
  // a scavenger, so it may not take the jumper's (no ping-pong); its urgent
  // job, never a scavenger, may.
  ScavScenario s("");
  s.jump(2, kT0);
  s.h.engine.record_preemption(make_job(3, s.other, 10, 8, kT0 - 60), s.h.running[1], kT0 + 30);
  const JobRef victim = make_job(11, s.jumper, 0, 8, kT0 - kHour, kT0 + 60);
  const PreemptCheck low = s.h.engine.check_reclaim(s.waiting, victim, kT0 + 120);
  EXPECT_FALSE(low.allowed);
  EXPECT_NE(low.reason.find("would run as a scavenger"), std::string::npos) << low.reason;
  JobRef urgent = s.waiting;
  urgent.rank = 10;
  EXPECT_TRUE(s.h.engine.check_reclaim(urgent, victim, kT0 + 120).allowed);
  // The reclaimer's side alone says the same.
  EXPECT_FALSE(s.h.engine.may_reclaim(s.waiting, kT0 + 120));
  EXPECT_TRUE(s.h.engine.may_reclaim(urgent, kT0 + 120));
  ScavScenario off("reclaim=off");
  EXPECT_FALSE(off.h.engine.may_reclaim(urgent, kT0 + 120));
}

TEST(EngineScavenger, AReclaimerIsNeverAScavengerSoNoPingPong) {
  // The other team (no episode) takes a scavenger. Its reclaimer starts
  // before any later episode of its own team begins, so it is never a
  // scavenger: when the other team jumps later, only its jobs started after
  // that jump are (the reclaimer may still go back by the entitlement rule,
  // which stops at entitlements).
  ScavScenario s("scavenger_window=2h");
  s.jump(2, kT0);
  const JobRef scav = make_job(11, s.jumper, 0, 8, kT0 - kHour, kT0 + 60);
  ASSERT_TRUE(s.h.engine.check_reclaim(s.waiting, scav, kT0 + 120).allowed);
  s.h.engine.record_preemption(s.waiting, scav, kT0 + 120);
  const JobRef reclaimer = make_job(s.waiting.id, s.other, 0, 8, kT0 - kHour, kT0 + 120);
  s.h.engine.record_preemption(make_job(3, s.other, 10, 8, kT0 + 3 * kHour), s.h.running[1], kT0 + 3 * kHour);
  const JobRef back = make_job(12, s.jumper, 0, 8, kT0);
  const PreemptCheck r = s.h.engine.check_reclaim(back, reclaimer, kT0 + 3 * kHour + 60);
  EXPECT_EQ(r.reason.find("scavenger"), std::string::npos) << r.reason;
  const JobRef later = make_job(30, s.other, 0, 8, kT0, kT0 + 3 * kHour + 30);
  const PreemptCheck l = s.h.engine.check_reclaim(back, later, kT0 + 3 * kHour + 60);
  EXPECT_TRUE(l.allowed) << l.reason;
  EXPECT_NE(l.reason.find("scavenger"), std::string::npos) << l.reason;
}

TEST(EngineScavenger, AJumpOntoItsOwnScavengerIsFreeAndNeverBait) {
  // The fast profile with bait_block=always would refuse a young victim of
  // a team that keeps jumping while another waits; as a scavenger, its GPUs
  // were anyone's.
  ScavScenario s("bait_profile=fast,bait_block=always");
  const BaitDecision first = s.jump(2, kT0);
  EXPECT_EQ(first.reason.find("onto its own scavenger"), std::string::npos) << first.reason;
  const JobRef scav = make_job(11, s.jumper, 0, 8, kT0 - kHour, kT0 + 60);
  JobRef urgent = make_job(4, s.jumper, 10, 8, kT0 - 30);
  const PreemptCheck c = s.h.engine.check_preemption(urgent, scav, kT0 + 120, true);
  EXPECT_TRUE(c.allowed) << c.reason;
  EXPECT_NE(c.reason.find("scavenger"), std::string::npos) << c.reason;
  EXPECT_TRUE(s.h.engine.check_preemption(urgent, scav, kT0 + 120, false).allowed);
  const BaitDecision d = s.h.engine.record_preemption(urgent, scav, kT0 + 120);
  EXPECT_EQ(d.charged_gpu_s, 0) << d.reason;
  EXPECT_FALSE(d.bait) << d.reason;
  EXPECT_EQ(d.skipped, 0);
  EXPECT_NE(d.reason.find("onto its own scavenger"), std::string::npos) << d.reason;
}

TEST(EngineScavenger, BankedJumpStillRefusesAScavengerHeldBeforeThePreemptorWaited) {
  // banked_jump=refuse is about gain: a reserve held before the urgent job
  // became eligible is not to be jumped on, scavenger or not.
  ScavScenario s("banked_jump=refuse");
  s.jump(2, kT0);
  const JobRef scav = make_job(11, s.jumper, 0, 8, kT0 - kHour, kT0 + 60);
  const PreemptCheck b = s.h.engine.check_preemption(make_job(4, s.jumper, 10, 8, kT0 + 100), scav, kT0 + 130, true);
  EXPECT_FALSE(b.allowed) << b.reason;
  EXPECT_TRUE(b.banked) << b.reason;
  // One that started while the urgent job already waited is fair game.
  EXPECT_TRUE(s.h.engine.check_preemption(make_job(4, s.jumper, 10, 8, kT0 + 30), scav, kT0 + 130, true).allowed);
}

TEST(EngineScavenger, ReportsTheEpisodeAndTheFlagLetsThePluginAsk) {
  ScavScenario s("reclaim=jumpers");
  EXPECT_FALSE(s.h.engine.reclaim_possible());  // nobody over its share jumped, no episode
  EXPECT_EQ(s.h.engine.team_report(s.jumper, kT0).scavenger_until, 0);
  s.jump(2, kT0);
  EXPECT_TRUE(s.h.engine.reclaim_possible()) << "at once, not at the next cycle";
  const auto r = s.h.engine.team_report(s.jumper, kT0 + 60);
  EXPECT_EQ(r.scavenger_since, kT0);
  EXPECT_EQ(r.scavenger_until, kT0 + kDay);
  s.h.clock.advance(300);
  s.h.cycle();
  EXPECT_TRUE(s.h.engine.reclaim_possible());
  // Saved and loaded: the episode survives a restart.
  Engine again(config_from(""));
  ASSERT_TRUE(again.load_state(s.h.engine.save_state()).ok());
  const auto r2 = again.team_report(again.team_for_account("jumper"), kT0 + 60);
  EXPECT_EQ(r2.scavenger_since, kT0);
  EXPECT_EQ(r2.scavenger_until, kT0 + kDay);
  // Once it is over the report says none.
  EXPECT_EQ(s.h.engine.team_report(s.jumper, kT0 + kDay).scavenger_until, 0);
}

// ---- Banked GPUs (banked_jump) ---------------------------------------------------

// A 32-GPU cluster, two equal teams, both active. The jumper holds `held`
// GPUs in 8-GPU low jobs that started at kT0 - 2 h; the other team holds
// the rest and waits. The jumper's urgent job became eligible at kT0 - 1 h.
struct BankScenario {
  Host h;
  TeamId jumper, other;
  JobRef urgent;
  BankScenario(std::string_view params, int held_jobs, bool cluster_known = true) : h(params) {
    jumper = h.engine.team_for_account("jumper");
    other = h.engine.team_for_account("other");
    if (cluster_known) h.engine.set_cluster_gpus(32);
    h.engine.set_shares(jumper, 1);
    h.engine.set_shares(other, 1);
    for (int i = 0; i < held_jobs; ++i) h.running.push_back(make_job(10 + i, jumper, 0, 8, kT0 - 3 * kHour, kT0 - 2 * kHour));
    for (int i = held_jobs; i < 4; ++i) h.running.push_back(make_job(10 + i, other, 0, 8, kT0 - 3 * kHour, kT0 - 2 * kHour));
    h.pending = {make_job(1, other, 0, 8, kT0 - kHour)};
    urgent = make_job(2, jumper, 1, 8, kT0 - 2 * kHour);
    urgent.eligible = kT0 - kHour;
    h.cycle();
  }
  PreemptCheck ask(TimePoint victim_start) {
    JobRef v = make_job(10, jumper, 0, 8, kT0 - 3 * kHour, victim_start);
    return h.engine.check_preemption(urgent, v, h.now(), true);
  }
};

TEST(EngineBankedJump, Rules) {
  struct Case {
    const char* name;
    const char* params;
    int held_jobs;           // 8-GPU jobs of the jumper's team (entitled to 16)
    bool cluster_known;
    Seconds victim_start;    // relative to kT0; 0 = the host gives no start time
    bool allowed;
  };
  const Case cases[] = {
      {"default (allow): any in-team victim", "", 1, true, -2 * kHour, true},
      {"below entitlement, victim banked before the preemptor was eligible", "banked_jump=refuse", 1, true, -2 * kHour, false},
      {"...one second before", "banked_jump=refuse", 1, true, -kHour - 1, false},
      {"below entitlement, victim started when the preemptor became eligible", "banked_jump=refuse", 1, true, -kHour, true},
      {"below entitlement, victim started while the preemptor waited", "banked_jump=refuse", 1, true, -600, true},
      {"at its entitlement: the price and reclaim apply instead", "banked_jump=refuse", 2, true, -2 * kHour, true},
      {"over its entitlement", "banked_jump=refuse", 3, true, -2 * kHour, true},
      {"cluster size unknown: entitlement unknown, not refused", "banked_jump=refuse", 1, false, -2 * kHour, true},
      {"victim with no start time is not refused", "banked_jump=refuse", 1, true, 0, true},
      {"explicit allow", "banked_jump=allow", 1, true, -2 * kHour, true},
  };
  for (const auto& c : cases) {
    BankScenario s(c.params, c.held_jobs, c.cluster_known);
    const PreemptCheck r = s.ask(c.victim_start == 0 ? 0 : kT0 + c.victim_start);
    EXPECT_EQ(r.allowed, c.allowed) << c.name << ": " << r.reason;
    EXPECT_EQ(r.banked, !c.allowed) << c.name;
    if (!c.allowed) {
      EXPECT_NE(r.reason.find("banked_jump=refuse"), std::string::npos) << c.name << ": " << r.reason;
    }
    // The quiet path (the preempt plugin's predicate) decides the same.
    JobRef v = make_job(10, s.jumper, 0, 8, kT0 - 3 * kHour, c.victim_start == 0 ? 0 : kT0 + c.victim_start);
    EXPECT_EQ(s.h.engine.check_preemption(s.urgent, v, s.h.now(), false).allowed, c.allowed) << c.name;
  }
}

TEST(EngineBankedJump, SubmitTimeStandsInForAMissingEligibleTime) {
  BankScenario s("banked_jump=refuse", 1);
  s.urgent.eligible = 0;  // submit kT0 - 2 h is the reference then
  EXPECT_TRUE(s.ask(kT0 - 2 * kHour).allowed);
  EXPECT_FALSE(s.ask(kT0 - 2 * kHour - 1).allowed);
}

TEST(EngineBankedJump, EntitlementIsAsOfTheLastCycle) {
  // Below its entitlement at the cycle: refused. After a cycle that sees the
  // team holding its share, the same pair is allowed.
  BankScenario s("banked_jump=refuse", 1);
  EXPECT_FALSE(s.ask(kT0 - 2 * kHour).allowed);
  s.h.running[1].team = s.jumper;  // the team now holds 16 of 32
  s.h.clock.advance(300);
  s.h.cycle();
  EXPECT_TRUE(s.ask(kT0 - 2 * kHour).allowed);
}

}  // namespace
}  // namespace gpufair
