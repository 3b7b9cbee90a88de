// slurmctld calls the engine from several threads at once: RPC threads ask
// priority() and allow_preemption() while our cycle thread mutates. This test
// hammers it for a bounded number of iterations; under -DGPUFAIR_SANITIZE=thread
// TSan checks the locking. The writer starts only once every reader and the
// observer has made its first call, so they overlap whatever the scheduler
// does (in a Release build the writer's 150 cycles take about 2 ms, and on a
// loaded machine the readers once had not run at all by then).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "gpufair/engine.h"

namespace gpufair {
namespace {

TEST(EngineConcurrency, ReadersAndWritersTogether) {
  auto config = parse_config("half_life=1d,calc_period=60,reclaim=all");
  ASSERT_TRUE(config.ok());
  Engine engine(*config);
  constexpr int kTeams = 8;
  for (int t = 0; t < kTeams; ++t) engine.team_for_account("team" + std::to_string(t));
  engine.set_cluster_gpus(32);
  constexpr TimePoint kT0 = 1'700'000'000;
  std::atomic<TimePoint> now{kT0};
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0};
  std::atomic<int> started{0};  // readers and observer past their first call

  auto reader = [&](int seed) {
    long local = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      PriorityInput in;
      in.team = static_cast<TeamId>((seed + local) % kTeams);
      in.gpus = 1 + local % 8;
      in.eligible = kT0;
      const auto f = engine.priority(in, now.load());
      EXPECT_GE(f.priority, 1u);
      JobRef p, v;
      p.team = v.team = in.team;
      p.rank = 10;
      p.submit = now.load() - 30;
      v.start = now.load() - 100;
      v.id = 1000 + static_cast<JobId>(local % 50);
      (void)engine.check_preemption(p, v, now.load(), local % 2 == 0);
      // A cross-team pair: team 0 runs far over its entitlement, so the
      // reclaim rule reaches its victim's place in team 0's reclaim order
      // (rebuilt by readers after the writer's changes).
      JobRef r, sq;
      r.id = 9000;
      r.team = 1;
      r.gpus = 1;
      r.runnable = true;
      r.submit = now.load() - 600;
      sq.id = 2000 + static_cast<JobId>(local % 12);
      sq.team = 0;
      sq.gpus = 1;
      sq.start = now.load() - 300;
      (void)engine.check_preemption(r, sq, now.load(), local % 2 == 1);
      if (++local == 1) ++started;
    }
    reads += local;
  };

  auto writer = [&] {
    while (started.load() < 3) std::this_thread::yield();
    JobId next = 1;
    for (int cycle = 0; cycle < 150; ++cycle) {
      const TimePoint t = now.fetch_add(60) + 60;
      engine.begin_cycle(t);
      for (int j = 0; j < 20; ++j) {
        JobRef r;
        r.id = 1000 + static_cast<JobId>(j + cycle % 5);
        r.team = j % kTeams;
        r.gpus = 1;
        r.start = t - 600;
        engine.observe_running(r, t);
        JobRef q;
        q.id = 5000 + static_cast<JobId>(j);
        q.team = (j + 3) % kTeams;
        q.submit = t - 3600;
        engine.observe_pending(q);
      }
      for (int j = 0; j < 12; ++j) {  // team 0 far over its entitlement, some jobs new each cycle
        JobRef r;
        r.id = 2000 + static_cast<JobId>(j + cycle % 3);
        r.team = 0;
        r.gpus = 1;
        r.start = t - 60 * j;
        engine.observe_running(r, t);
      }
      engine.end_cycle(t);
      JobRef p, v;
      p.id = next++;
      p.team = v.team = cycle % kTeams;
      p.rank = 10;
      p.gpus = 2;
      p.submit = t - 10;
      v.id = 1000 + static_cast<JobId>(cycle % 20);
      v.start = t - 120;
      engine.record_preemption(p, v, t);
      engine.job_ended(v.id, t);
    }
  };

  auto observer = [&] {
    bool first = true;
    while (!stop.load(std::memory_order_relaxed)) {
      const auto bytes = engine.save_state();
      EXPECT_GT(bytes.size(), 28u);
      const auto all = engine.report(now.load());
      EXPECT_EQ(all.size(), static_cast<std::size_t>(kTeams));
      (void)engine.config();
      if (first) ++started;
      first = false;
    }
  };

  std::vector<std::thread> threads;
  threads.emplace_back(reader, 0);
  threads.emplace_back(reader, 3);
  threads.emplace_back(observer);
  std::thread w(writer);
  w.join();
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_GT(reads.load(), 0);
  // The state is still whole: it saves and loads.
  Engine copy(*config);
  EXPECT_TRUE(copy.load_state(engine.save_state()).ok());
  EXPECT_EQ(copy.team_count(), kTeams);
}

}  // namespace
}  // namespace gpufair
