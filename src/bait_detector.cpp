#include "gpufair/bait_detector.h"

#include <algorithm>
#include <climits>
#include <cstdio>

namespace gpufair {
namespace {

double unit(double x) { return std::clamp(x, 0.0, 1.0); }

BaitEvidence judge(const BaitConfig& c, const JobRef& preemptor,
                   const JobRef& victim, TimePoint when,
                   const JumpCost& cost,
                   const RecentCounts& counts) {
  BaitEvidence e;
  e.same_team = preemptor.team >= 0 && preemptor.team == victim.team;
  e.rank_gap = static_cast<int>(std::clamp<long long>(
      static_cast<long long>(preemptor.rank) - victim.rank, INT_MIN, INT_MAX));
  if (!e.same_team) return e;  // cross-team is never in-team bait

  const TimePoint victim_start = victim.start > 0 ? victim.start : when;
  e.victim_run = std::max<Seconds>(0, elapsed_between(victim_start, when));
  e.young = c.young > 0 ? 1.0 - std::min(1.0, static_cast<double>(e.victim_run) /
                                                  static_cast<double>(c.young))
                        : 0.0;
  e.repeat = c.repeat > 0 ? unit(counts.in_team_preemptions / c.repeat) : 0.0;
  e.supply = counts.low_rank_gpu_s > 0
                 ? unit(counts.low_rank_preempted_gpu_s / counts.low_rank_gpu_s)
                 : 0.0;

  e.jump = counts.started_gpus > 0 ? unit(counts.preemptor_gpus / counts.started_gpus) : 0.0;

  e.anyone_waiting = cost.jobs_ahead > 0;
  e.skipped = cost.skipped;
  e.skip = c.skip_norm > 0 ? unit(static_cast<double>(e.skipped) /
                                  static_cast<double>(c.skip_norm))
                           : (e.skipped > 0 ? 1.0 : 0.0);

  e.score = c.w_young * e.young + c.w_repeat * e.repeat + c.w_supply * e.supply +
            c.w_skip * e.skip + c.w_jump * e.jump;
  // Nobody harmed (nothing skipped) or no rank jump: not bait, whatever the score.
  e.bait = e.rank_gap > 0 && e.skipped > 0 && e.score >= c.threshold;
  return e;
}

}  // namespace

BaitEvidence judge_preemption_quiet(const BaitConfig& config,
                                    const JobRef& preemptor, const JobRef& victim,
                                    TimePoint when,
                                    const JumpCost& cost,
                                    const RecentCounts& counts) {
  return judge(config, preemptor, victim, when, cost, counts);
}

BaitEvidence judge_preemption(const BaitConfig& c, const JobRef& preemptor,
                              const JobRef& victim, TimePoint when,
                              const JumpCost& cost,
                              const RecentCounts& counts) {
  BaitEvidence e = judge(c, preemptor, victim, when, cost, counts);
  char buf[1024];
  if (!e.same_team) {
    std::snprintf(buf, sizeof buf,
                  "honest: cross-team preemption (team %d preempts team %d), never in-team bait",
                  preemptor.team, victim.team);
    e.reason = buf;
    return e;
  }
  const char* verdict = e.bait ? "bait" : "honest";
  const char* why = "";
  if (!e.bait) {
    if (e.rank_gap <= 0) why = " (no rank gap)";
    else if (!e.anyone_waiting) why = " (no runnable job ahead of a team below its entitlement: nobody harmed)";
    else if (e.skipped <= 0) why = " (no queue time skipped)";
    else why = " (score below threshold)";
  }
  std::snprintf(
      buf, sizeof buf,
      "%s%s: in-team, rank_gap=%d; young=%.2f (victim ran %llds, bait_young=%llds); "
      "repeat=%.2f (%.2f recent in-team jumps, bait_repeat=%.2f); "
      "supply=%.2f (%.0f of %.0f recent low-rank GPU-s were displaced in-team); "
      "skipped=%.2f (%llds GPU-weighted queue time of %u jobs ahead, bait_skip_norm=%llds); "
      "jump=%.2f (%.1f of %.1f recent GPU starts by in-team preemption); "
      "score=%.3f %s threshold %.3f",
      verdict, why, e.rank_gap, e.young, static_cast<long long>(e.victim_run),
      static_cast<long long>(c.young), e.repeat, counts.in_team_preemptions,
      c.repeat, e.supply, counts.low_rank_preempted_gpu_s, counts.low_rank_gpu_s,
      e.skip, static_cast<long long>(e.skipped), cost.jobs_ahead,
      static_cast<long long>(c.skip_norm), e.jump, counts.preemptor_gpus,
      counts.started_gpus, e.score,
      e.score >= c.threshold ? ">=" : "<", c.threshold);
  e.reason = buf;
  return e;
}

}  // namespace gpufair
