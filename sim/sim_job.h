// A job inside the simulator while it is pending or running.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu_pool.h"
#include "gpufair/job.h"
#include "job_spec.h"

namespace gpufair::sim {

enum class JobState : std::uint8_t { kPending, kRunning };

struct SimJob {
  JobId id = 0;
  std::int32_t account = -1, user = -1, team = -1;
  std::int32_t gpus = 0;       // held GPUs (whole nodes above a node's size)
  Seconds runtime = 0;         // full run length; a requeued job starts over
  std::int32_t rank = kRankLow;
  Label label = Label::kNone;
  TimePoint submit = 0, eligible = 0;
  TimePoint first_start = -1, start = -1;
  std::uint64_t priority = 0;  // from the policy, refreshed once per calc period
  JobState state = JobState::kPending;
  std::uint32_t queue_epoch = 0;  // the PendingQueue key's epoch while pending
  std::uint32_t generation = 0;  // bumped when a run ends early: its end event goes stale
  std::uint64_t preempt_try = 0; // (cycle, team change) stamp of a try the policy refused
  TimePoint preempted_at = -1;   // its last preemption that left it pending (Handoff::kPriority)
  bool judged_bait = false;      // a detector decision or refusal called it bait
  bool involved = false;         // it was ever a preemption candidate the policy judged
  bool refused = false;          // the policy refused to let it be preempted at least once
  std::vector<NodeShare> placement;
};

}  // namespace gpufair::sim
