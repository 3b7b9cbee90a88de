// The discrete-event simulator: one GPU cluster, one global queue ordered by
// the policy's priority, in-team preemption by QOS rank, and the metrics the
// report needs.
//
// Scheduling model (what Slurm does, simplified where the comments say so):
//   * main pass after every event time: start pending jobs in priority order
//     while they fit; stop at the first that does not (Slurm's main scheduler
//     with one partition). That job, the head, may try to start by
//     preemption: in-team victims of a lower rank (preempt/qos with the team
//     rule: the queue jump the bait exploit rides on), else other teams' jobs
//     the policy lets it reclaim. Slurm's schedule() lets only that job try:
//     it marks the partition failed, no job behind it is tried in the pass;
//   * EASY backfill every backfill_interval when anything changed, over at
//     most backfill_depth jobs, with each job's real runtime as its time limit;
//     the blocked head gets a reservation only if it can start within
//     backfill_window (Slurm's bf_interval, bf_max_job_test and bf_window,
//     with their defaults; bf_continue needs no model: a pass is never
//     interrupted here, as simulated time stands still during it). A job on
//     the way that does not fit may preempt as the head may (Slurm's backfill
//     plans preemption in its will-run test and starts the job when that says
//     "now"), and so may a job that fits but would hold GPUs the head's
//     reservation counts on (Slurm tests it on the nodes the reservation
//     leaves, preemptable jobs counted free); what a preemptor that runs past
//     the shadow holds of the GPUs the reservation counts on then (free now,
//     or freed by then by ending jobs, its victims' included) comes off the
//     GPUs the head can spare, like a backfilled start's;
//   * the victims are requeued (keeping their submit time; eligible again
//     requeue_hold later, as Slurm gives a requeued batch job a begin time) or
//     cancelled;
//   * every calc_period the policy's cycle runs (begin, observe every running
//     and pending job, end) and the pending queue is re-sorted once.
// Events are kept in a binary heap and the queue in a sorted vector plus an
// ordered set of arrivals (pending_queue.h), so an event costs O(log n); only
// the per-cycle pass (observe, re-prioritise, one sort) touches every pending
// job. The head's failed preemption try is not repeated until a job starts
// or stops, a cycle passes or the head changes; in a backfill pass a blocked
// job is not tried when one of its team and rank that needs no more GPUs
// already failed in the same pass under no looser limit on the head's GPUs.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "gpufair/config.h"
#include "job_spec.h"
#include "run_result.h"

namespace gpufair::sim {

enum class PreemptMode { kRequeue, kCancel };

// Who gets the GPUs a backfill preemption frees. Slurm requeues the victims
// and leaves the preemptor pending (select_nodes returns ESLURM_NODES_BUSY,
// node_scheduler.c); nothing holds the freed GPUs for it, so the next
// scheduling pass gives them in priority order, to a job ahead of the
// preemptor when one fits there (kPriority, Slurm's, the default).
// kPreemptor: the preemptor starts on them at once (the atomic model of the
// figures before 2026-12-06; docs/design.md, "Who gets the GPUs a
// preemption frees").
enum class Handoff { kPriority, kPreemptor };

// "priority" or "preemptor" (the --handoff flag and the cluster key).
inline std::optional<Handoff> handoff_named(std::string_view name) {
  if (name == "priority") return Handoff::kPriority;
  if (name == "preemptor") return Handoff::kPreemptor;
  return std::nullopt;
}

struct SimOptions {
  std::int32_t gpus = 0;            // cluster size (required)
  std::int32_t gpus_per_node = 0;   // 0 = one flat pool
  bool backfill = true;
  Seconds backfill_interval = 30;   // Slurm's bf_interval default
  std::int32_t backfill_depth = 500;    // Slurm's bf_max_job_test default
  Seconds backfill_window = 86400;      // Slurm's bf_window default (1440 minutes)
  PreemptMode preempt_mode = PreemptMode::kRequeue;
  // A requeued victim may start again this long after it was preempted:
  // Slurm sets its begin time to now + the credential expiry window + 1.
  Seconds requeue_hold = 1201;
  Handoff handoff = Handoff::kPriority;
  TimePoint horizon = 0;            // stop here; 0 = run until every job is done
  TimePoint measure_from = 0;       // GPU-hours, shares and Jain count from here
  std::string gaming_team;          // overrides the workload's
  std::FILE* decisions = nullptr;   // one line per judged preemption, if set
  bool drop_bait = false;           // skip jobs labelled bait: the honest counterfactual
  // Submit the jobs labelled bait as 1-GPU (or GPU-less), 1-second jobs: a
  // "gamer" whose placeholders do nothing, against whose counterfactual the
  // noise of gain and harm is measured (design.md, "Judged by the
  // counterfactual").
  bool null_bait = false;
};

// Runs `workload` (from its first job) under `policy` with `config`.
// Throws SourceError for bad input rows and std::invalid_argument for a bad
// policy or cluster.
RunResult simulate(Workload& workload, const std::string& policy, const Config& config,
                   const SimOptions& options);

}  // namespace gpufair::sim
