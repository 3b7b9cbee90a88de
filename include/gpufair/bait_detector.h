// The bait detector (design.md, "Bait detector"): decides whether the victim
// of an in-team preemption was a placeholder holding a slot for its own team.
// A pure function of the event, the queue view and the team's recent counts;
// the Engine owns the memory and the consequences.
#pragma once

#include <optional>
#include <string>

#include "gpufair/config.h"
#include "gpufair/decay.h"
#include "gpufair/job.h"
#include "gpufair/queue_view.h"
#include "gpufair/time.h"

namespace gpufair {

// Per-team memory: decayed counts with half-life bait_window.
struct DetectorMemory {
  // In-team jumps by this team: preemptors, not victims (a preemptor that
  // takes several victims, or preempts again, counts once).
  DecayedValue in_team_preemptions;
  // GPU-seconds, never job counts: a stream of cheap or GPU-less low jobs
  // cannot dilute the evidence without spending as many GPU-seconds.
  DecayedValue low_rank_gpu_s;            // GPU-seconds run by low-rank jobs
  DecayedValue low_rank_preempted_gpu_s;  // ...by low-rank jobs later displaced in-team
  DecayedValue started_gpus;         // GPUs of every job of this team that started
  DecayedValue preemptor_gpus;       // ...of which started by in-team preemption
};

// The team's recent counts *including* the event being judged.
struct RecentCounts {
  double in_team_preemptions = 0;
  double low_rank_gpu_s = 0;
  double low_rank_preempted_gpu_s = 0;
  double started_gpus = 0;
  double preemptor_gpus = 0;
};

struct BaitEvidence {
  bool same_team = false;
  int rank_gap = 0;           // preemptor rank - victim rank
  Seconds victim_run = 0;     // how long the victim ran before displaced
  Seconds skipped = 0;        // queue time the preemptor skipped
  bool anyone_waiting = false;
  double young = 0, repeat = 0, supply = 0, skip = 0, jump = 0;  // each in [0,1]
  double score = 0;
  bool bait = false;
  std::string reason;         // every piece of evidence, human-readable
};

// Judge one preemption at `when`. `cost`: what the jump takes from other
// teams' runnable jobs ahead of the preemptor (QueueView::cost_of_jump);
// nobody ahead means nobody harmed, and never bait.
BaitEvidence judge_preemption(const BaitConfig& config, const JobRef& preemptor,
                              const JobRef& victim, TimePoint when,
                              const JumpCost& cost,
                              const RecentCounts& counts);

// Cheaper variant for allow_preemption's hot path: same decision, no reason.
BaitEvidence judge_preemption_quiet(const BaitConfig& config,
                                    const JobRef& preemptor, const JobRef& victim,
                                    TimePoint when,
                                    const JumpCost& cost,
                                    const RecentCounts& counts);

}  // namespace gpufair
