// Speed of the policy core's hot paths, measured on the same Engine the
// plugins and the simulator drive.
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpufair/engine.h"
#include "gpufair/priority.h"

namespace gpufair {
namespace {

constexpr TimePoint kT0 = 1'700'000'000;

// An engine with `teams` teams, each with one running job and some usage.
std::unique_ptr<Engine> make_engine(int teams) {
  auto config = parse_config("half_life=7d");
  auto e = std::make_unique<Engine>(*config);
  e->set_cluster_gpus(4.0 * teams);
  for (int t = 0; t < teams; ++t) e->team_for_account("team" + std::to_string(t));
  for (TimePoint now : {kT0, kT0 + 300}) {
    e->begin_cycle(now);
    for (int t = 0; t < teams; ++t) {
      JobRef j;
      j.id = static_cast<JobId>(t + 1);
      j.team = t;
      j.gpus = 1 + t % 8;
      j.start = kT0 - 60;
      e->observe_running(j, now);
    }
    e->end_cycle(now);
  }
  return e;
}

std::vector<PriorityInput> make_pending(std::size_t n, int teams) {
  std::mt19937_64 rng(42);
  std::vector<PriorityInput> jobs(n);
  for (auto& j : jobs) {
    j.team = static_cast<TeamId>(rng() % static_cast<unsigned>(teams));
    j.gpus = 1 + static_cast<double>(rng() % 8);
    j.eligible = kT0 - static_cast<TimePoint>(rng() % 86400);
    j.qos_norm = static_cast<double>(rng() % 3) / 2.0;
    j.nice = 0;
  }
  return jobs;
}

// Engine::priority: shared lock + one table load + the arithmetic.
void BM_PriorityOneJob(benchmark::State& state) {
  auto e = make_engine(100);
  const auto jobs = make_pending(1024, 100);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(e->priority(jobs[i++ & 1023], kT0 + 600).priority);
  }
}
BENCHMARK(BM_PriorityOneJob);

// The arithmetic alone, for comparison with the locked call.
void BM_ComputePriorityNoLock(benchmark::State& state) {
  const auto jobs = make_pending(1024, 100);
  std::vector<TeamFactors> table(100, TeamFactors{0.7, 0.5, 1.0});
  PriorityParams p;
  p.cluster_gpus = 400;
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& in = jobs[i++ & 1023];
    benchmark::DoNotOptimize(compute_priority(in, table[static_cast<std::size_t>(in.team)], 1.0, p, kT0 + 600).priority);
  }
}
BENCHMARK(BM_ComputePriorityNoLock);

// A full pass over 1,000,000 pending jobs: one lock, then the table reads.
void BM_PriorityPass1M(benchmark::State& state) {
  auto e = make_engine(1000);
  const auto jobs = make_pending(1'000'000, 1000);
  std::vector<std::uint32_t> out(jobs.size());
  for (auto _ : state) {
    e->priorities(jobs, kT0 + 600, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(jobs.size()));
}
BENCHMARK(BM_PriorityPass1M)->Unit(benchmark::kMillisecond);

// The same pass job by job (what a plugin calling priority() per job pays).
void BM_PriorityPass1MOneByOne(benchmark::State& state) {
  auto e = make_engine(1000);
  const auto jobs = make_pending(1'000'000, 1000);
  for (auto _ : state) {
    std::uint64_t sum = 0;
    for (const auto& j : jobs) sum += e->priority(j, kT0 + 600).priority;
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(jobs.size()));
}
BENCHMARK(BM_PriorityPass1MOneByOne)->Unit(benchmark::kMillisecond);

// One recalculation cycle over 10,000 teams, one running job each: decay,
// charge, recompute the factor table.
void BM_CycleOver10kTeams(benchmark::State& state) {
  constexpr int kTeams = 10'000;
  auto e = make_engine(kTeams);
  TimePoint now = kT0 + 300;
  for (auto _ : state) {
    now += 300;
    e->begin_cycle(now);
    for (int t = 0; t < kTeams; ++t) {
      JobRef j;
      j.id = static_cast<JobId>(t + 1);
      j.team = t;
      j.gpus = 1 + t % 8;
      j.start = kT0 - 60;
      e->observe_running(j, now);
    }
    e->end_cycle(now);
  }
}
BENCHMARK(BM_CycleOver10kTeams)->Unit(benchmark::kMicrosecond);

// One detector event: judge, update memory, maybe penalise, keep the decision.
void BM_RecordPreemption(benchmark::State& state) {
  auto e = make_engine(100);
  e->begin_cycle(kT0 + 600);
  JobRef waiting;
  waiting.team = 1;
  waiting.submit = kT0 - 7200;
  e->observe_pending(waiting);
  e->end_cycle(kT0 + 600);
  JobRef p, v;
  p.team = v.team = 0;
  p.rank = 10;
  p.gpus = 8;
  p.submit = kT0 + 500;
  v.start = kT0 + 300;
  JobId id = 1'000'000;
  for (auto _ : state) {
    p.id = ++id;
    v.id = ++id;
    benchmark::DoNotOptimize(e->record_preemption(p, v, kT0 + 600).bait);
  }
}
BENCHMARK(BM_RecordPreemption);

// The preempt plugin's predicate: cross-team pairs (the common case) and an
// in-team pair of a penalised team (full judgement, no reason string).
void BM_AllowPreemptionCrossTeam(benchmark::State& state) {
  auto e = make_engine(100);
  JobRef p, v;
  p.team = 1;
  v.team = 2;
  for (auto _ : state) benchmark::DoNotOptimize(e->check_preemption(p, v, kT0 + 600, false).allowed);
}
BENCHMARK(BM_AllowPreemptionCrossTeam);

void BM_AllowPreemptionInTeamJudged(benchmark::State& state) {
  auto e = make_engine(100);
  e->reconfigure(*parse_config("bait_block=always"));
  JobRef p, v;
  p.team = v.team = 3;
  p.rank = 10;
  p.submit = kT0 + 500;
  v.id = 4;
  v.start = kT0 + 300;
  for (auto _ : state) benchmark::DoNotOptimize(e->check_preemption(p, v, kT0 + 600, false).allowed);
}
BENCHMARK(BM_AllowPreemptionInTeamJudged);

// The big-team benches' engine: reclaim=all, 10,000 GPUs, teams 0 and 1.
std::unique_ptr<Engine> big_team_engine() {
  auto e = std::make_unique<Engine>(*parse_config("reclaim=all"));
  e->set_cluster_gpus(10'000);
  e->team_for_account("team0");
  e->team_for_account("team1");
  return e;
}

// The reclaim rule's check on a big team far over its entitlement: 10,000
// GPUs, team 0 runs 8,000 one-GPU jobs (3,000 over its 5,000), team 1 waits.
// Each iteration asks about one of team 0's jobs, all positions in turn, as
// Slurm asks about every running job for one preemptor.
void BM_ReclaimCheckBigTeam(benchmark::State& state) {
  const auto engine = big_team_engine();
  Engine& e = *engine;
  constexpr int kJobs = 8'000;
  std::vector<JobRef> running(kJobs);
  e.begin_cycle(kT0);
  for (int i = 0; i < kJobs; ++i) {
    JobRef& j = running[static_cast<std::size_t>(i)];
    j.id = static_cast<JobId>(i + 1);
    j.team = 0;
    j.gpus = 1;
    j.start = kT0 - 86'400 + i;
    e.observe_running(j, kT0);
  }
  JobRef waiting;
  waiting.id = 100'000;
  waiting.team = 1;
  waiting.gpus = 8;
  waiting.runnable = true;
  waiting.submit = kT0 - 3600;
  e.observe_pending(waiting);
  e.end_cycle(kT0);
  std::size_t i = 0, allowed = 0;
  for (auto _ : state) {
    allowed += e.check_preemption(waiting, running[i], kT0 + 60, false).allowed;
    if (++i == running.size()) i = 0;
  }
  state.counters["allowed_share"] = static_cast<double>(allowed) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_ReclaimCheckBigTeam);

// One cycle over a big team: 8,000 running jobs of one team reported, 80 of
// them new each cycle (as jobs start and end). What keeping the team's
// reclaim order costs the cycle (design.md, "Reclaim").
void BM_CycleBigTeam(benchmark::State& state) {
  const auto engine = big_team_engine();
  Engine& e = *engine;
  TimePoint now = kT0;
  JobId fresh = 1'000'000;
  for (auto _ : state) {
    now += 60;
    e.begin_cycle(now);
    for (int i = 0; i < 8'000; ++i) {
      JobRef j;
      j.id = i % 100 == 0 ? ++fresh : static_cast<JobId>(i + 1);
      j.team = 0;
      j.gpus = 1;
      j.start = kT0 - 86'400 + i;
      e.observe_running(j, now);
    }
    e.end_cycle(now);
  }
}
BENCHMARK(BM_CycleBigTeam)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpufair

BENCHMARK_MAIN();
