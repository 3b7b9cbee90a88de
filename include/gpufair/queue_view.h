// Who is waiting, as of the last cycle: the runnable pending jobs with their
// priority, team, GPUs and waiting-since time. A queue jump's price is
// measured against it (design.md, "Jump price"): the jobs of *other* teams
// that were ahead of the jumper in priority order and could have run.
//
// Filled once per cycle by Engine::observe_pending, then frozen (sorted
// best first) at the end of the cycle, so a query walks only the jobs ahead
// of the jumper and never writes: concurrent readers are safe.
#pragma once

#include <cstdint>
#include <vector>

#include "gpufair/job.h"
#include "gpufair/mapped_allocator.h"
#include "gpufair/time.h"

namespace gpufair {

// What one jump took from others.
struct JumpCost {
  double gpu_s = 0;       // sum over the displaced jobs of gpus x min(wait, cap)
  Seconds skipped = 0;    // gpu_s / jumper's GPUs: the GPU-weighted mean wait skipped
  std::uint32_t jobs_ahead = 0;  // displaced jobs (other teams, ahead, runnable)
  double oldest_wait = 0;        // longest (uncapped) wait among them, seconds
};

// One job a jump passed, as its price counts it: the GPUs it took from that
// job and that job's wait, capped. The engine keeps these until the jumper
// stops, to settle the price on how long it really held the GPUs.
struct PassedJob {
  double gpus = 0;
  Seconds wait = 0;  // min(wait, cap)
};

class QueueView {
 public:
  void clear() { jobs_.clear(); frozen_ = true; }
  bool empty() const { return jobs_.empty(); }
  std::size_t size() const { return jobs_.size(); }

  // A pending job; jobs that are not runnable, have no team or no GPUs are
  // ignored (a GPU-less job waits for no GPU a jumper could take).
  void add(const JobRef& job);
  // Sort best first (priority, then waiting longer); queries need it.
  // Linear when the jobs came in priority order already. Among jobs equal
  // in both, the order is unspecified: a query's figures do not depend on
  // it, only the count of jobs ahead can (which of them cover the GPUs).
  void freeze();

  // The queue time a jump by `jumper` (its team, priority, GPUs) at `now`
  // takes from others: walk the other teams' runnable jobs with a higher
  // priority than the jumper's (ties: waiting longer), best first, until
  // they cover the jumper's GPUs; each contributes min(its GPUs, GPUs still
  // to cover) x min(its wait, cap). A GPU-less jumper takes nothing.
  // `entitled`, when given, is indexed by team: only jobs of teams flagged
  // there count (the engine flags the teams below their entitlement: a team
  // already holding its share or more lost nothing it was entitled to).
  // `passed`, when given, receives each counted job's part (gpus x wait sums
  // to gpu_s).
  JumpCost cost_of_jump(const JobRef& jumper, TimePoint now, Seconds cap,
                        const std::vector<char>* entitled = nullptr,
                        std::vector<PassedJob>* passed = nullptr) const;

  // Whether any runnable job of a team other than `team` waits.
  bool anyone_else_waiting(TeamId team) const;

 private:
  struct Entry {
    std::uint32_t priority;
    TeamId team;
    float gpus;
    TimePoint since;
  };
  std::vector<Entry, MappedAllocator<Entry>> jobs_;  // one per waiting job
  bool frozen_ = true;
};

}  // namespace gpufair
