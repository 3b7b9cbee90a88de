// What the core knows about a job: a few numbers, never a Slurm record.
#pragma once

#include <cstdint>

#include "gpufair/time.h"

namespace gpufair {

using TeamId = std::int32_t;  // dense index handed out by Engine::team_for_account
// An association inside a team (a user or a sub-account, or the team's own
// account): dense index handed out by Engine::assoc_for; -1 = none.
using AssocId = std::int32_t;
using JobId = std::uint64_t;

struct JobRef {
  JobId id = 0;
  TeamId team = -1;
  AssocId assoc = -1;      // its association (running jobs: charged to it and its parents)
  std::uint32_t user = 0;
  int rank = 0;            // in-team rank: QOS priority; higher outranks
  double gpus = 0;         // weighted GPUs (allocated if running, requested if pending)
  TimePoint submit = 0;
  TimePoint eligible = 0;  // 0 = submit
  TimePoint start = 0;     // 0 = not started
  // Running jobs only: what one of its GPU-seconds costs its team in the
  // usage ledger, the QOS UsageFactor as multifactor applies it (0 = free,
  // 2 = double). The detector's evidence and the GPUs a team holds are not
  // scaled (design.md, "Usage ledger").
  double usage_factor = 1.0;
  // Pending jobs only: the job's current priority, and whether it could run
  // now if GPUs were free (not held, no unmet dependency, begin time or
  // limit). Jump prices are measured against runnable jobs only.
  std::uint32_t priority = 0;
  bool runnable = true;
};

// Inputs of one pending job's priority in one partition (and QOS): a job
// submitted to several partitions has one priority per partition.
struct PriorityInput {
  JobId job = 0;               // 0 = unknown (then it holds no claim: preemptor_claim)
  TeamId team = -1;
  AssocId assoc = -1;          // its place inside the team; -1: the team's factor
  double gpus = 0;             // requested, weighted
  TimePoint eligible = 0;      // age accrues from here (Slurm: the accrue time)
  double qos_norm = 0;         // QOS priority / largest, [0,1]
  double qos_raw = 0;          // QOS priority (NO_NORMAL_QOS)
  double partition_norm = 0;   // partition PriorityJobFactor / largest, [0,1]
  double partition_raw = 0;    // PriorityJobFactor (NO_NORMAL_PART)
  double assoc_norm = 0;       // association priority / largest, [0,1]
  double assoc_raw = 0;        // association priority (NO_NORMAL_ASSOC)
  double tres = 0;             // PriorityWeightTRES term, weighted (tres_term)
  double time_limit_min = 0;   // minutes (size_relative); <= 0: one minute
  std::int64_t site = 0;       // site factor (SiteFactor, site_factor plugins)
  std::int32_t nice = 0;       // positive lowers priority
  std::int32_t rank = -1;      // in-team rank (JobRef::rank); -1 = unknown, never sorted last
};

// Per-factor breakdown (what sprio shows).
struct PriorityFactors {
  double age = 0, fairshare = 0, job_size = 0, partition = 0, qos = 0;  // [0,1] (raw: >= 0)
  double assoc = 0;
  // fairshare is the job's: its team's effective factor (team_fairshare)
  // combined with its association's factor inside the team (in_team).
  double team_fairshare = 0, in_team = 1;
  double w_age = 0, w_fairshare = 0, w_job_size = 0, w_partition = 0, w_qos = 0;
  double w_assoc = 0, w_tres = 0;
  double penalty = 0;
  std::int64_t site = 0;
  std::int32_t nice = 0;
  std::uint32_t priority = 1;
  // scavenger_order=last put it after every other job: priority 1, every
  // weighted term 0 (sprio sums them).
  bool scavenger_last = false;
  // preemptor_claim: it preempted and has not started yet, so it sorts
  // first: priority kMaxPriority, every weighted term 0 but the site
  // factor, which carries the priority (sprio sums the terms).
  bool claimed = false;
};

}  // namespace gpufair
